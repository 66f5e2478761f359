// common/fp8.cuh — Hopper's wgmma with 8-bit operands, as chapter 17 uses it
// (sm_90a, inline PTX; the emulator's too): m64nNk32 with E4M3 (KIND 0) or E5M2
// (1) from shared memory, both operands K-major (the only layout wgmma takes for
// 8-bit types), FP32 accumulators; the producer of tc/13's pipeline.
#pragma once

#include "common/hopper.cuh"
#include "common/wgmma.cuh"

namespace gl_fp8 {
// a stage holds A's 128 x 128 bytes (one 128-byte swizzle row a row of A: 128 k)
// and BN rows of B^T (B's columns, each 128 k), both K-major
constexpr int BM = 128, BK = 128, A_BYTES = BM * BK;
// d (64 x N, FP32) = (ACC "1": d +) A (64 x 32, desc a) B (32 x N, desc b); each
// operand written out, as the emulator reads an asm statement's operands as written
#define GL_WGMMA_FP8_N256(TYPE, ACC)                                               \
    asm volatile(                                                                  \
        "{\n"                                                                      \
        "wgmma.mma_async.sync.aligned.m64n256k32.f32." TYPE "." TYPE " {"          \
        "%0, %1, %2, %3, %4, %5, %6, %7, "                                         \
        "%8, %9, %10, %11, %12, %13, %14, %15, "                                   \
        "%16, %17, %18, %19, %20, %21, %22, %23, "                                 \
        "%24, %25, %26, %27, %28, %29, %30, %31, "                                 \
        "%32, %33, %34, %35, %36, %37, %38, %39, "                                 \
        "%40, %41, %42, %43, %44, %45, %46, %47, "                                 \
        "%48, %49, %50, %51, %52, %53, %54, %55, "                                 \
        "%56, %57, %58, %59, %60, %61, %62, %63, "                                 \
        "%64, %65, %66, %67, %68, %69, %70, %71, "                                 \
        "%72, %73, %74, %75, %76, %77, %78, %79, "                                 \
        "%80, %81, %82, %83, %84, %85, %86, %87, "                                 \
        "%88, %89, %90, %91, %92, %93, %94, %95, "                                 \
        "%96, %97, %98, %99, %100, %101, %102, %103, "                             \
        "%104, %105, %106, %107, %108, %109, %110, %111, "                         \
        "%112, %113, %114, %115, %116, %117, %118, %119, "                         \
        "%120, %121, %122, %123, %124, %125, %126, %127}, "                        \
        "%128, %129, " ACC ", 1, 1;\n}\n"                                          \
        :                                                                          \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),                            \
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                            \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                          \
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),                        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),                        \
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),                        \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),                        \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),                        \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),                        \
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),                        \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),                        \
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),                        \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),                        \
        "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),                        \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),                        \
        "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),                        \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]),                        \
        "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),                        \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]),                        \
        "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),                        \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),                        \
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),                        \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),                        \
        "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),                        \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),                        \
        "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),                    \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]),                    \
        "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),                    \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),                    \
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),                    \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),                    \
        "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])                     \
        : "l"(a), "l"(b))
#define GL_WGMMA_FP8_N128(TYPE, ACC)                                               \
    asm volatile(                                                                  \
        "{\n"                                                                      \
        "wgmma.mma_async.sync.aligned.m64n128k32.f32." TYPE "." TYPE " {"          \
        "%0, %1, %2, %3, %4, %5, %6, %7, "                                         \
        "%8, %9, %10, %11, %12, %13, %14, %15, "                                   \
        "%16, %17, %18, %19, %20, %21, %22, %23, "                                 \
        "%24, %25, %26, %27, %28, %29, %30, %31, "                                 \
        "%32, %33, %34, %35, %36, %37, %38, %39, "                                 \
        "%40, %41, %42, %43, %44, %45, %46, %47, "                                 \
        "%48, %49, %50, %51, %52, %53, %54, %55, "                                 \
        "%56, %57, %58, %59, %60, %61, %62, %63}, "                                \
        "%64, %65, " ACC ", 1, 1;\n}\n"                                            \
        :                                                                          \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),                            \
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                            \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),                          \
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),                        \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),                        \
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),                        \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),                        \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),                        \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),                        \
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),                        \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),                        \
        "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),                        \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),                        \
        "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),                        \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),                        \
        "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                         \
        : "l"(a), "l"(b))
// [fp8]
// the instruction, E4M3 or E5M2, adding to d or (ACC 0) overwriting it, for the
// two widths tc/13 uses: 64 x 256 (128 accumulators a thread) and 64 x 128 (64)
template <int KIND, int ACC>
__device__ __forceinline__ void mma_k32(float (&d)[128], unsigned long long a,
                                        unsigned long long b)
{
    if (KIND == 0 && ACC) GL_WGMMA_FP8_N256("e4m3", "1");
    else if (KIND == 0) GL_WGMMA_FP8_N256("e4m3", "0");
    else if (ACC) GL_WGMMA_FP8_N256("e5m2", "1");
    else GL_WGMMA_FP8_N256("e5m2", "0");
}
template <int KIND, int ACC>
__device__ __forceinline__ void mma_k32(float (&d)[64], unsigned long long a,
                                        unsigned long long b)
{
    if (KIND == 0 && ACC) GL_WGMMA_FP8_N128("e4m3", "1");
    else if (KIND == 0) GL_WGMMA_FP8_N128("e4m3", "0");
    else if (ACC) GL_WGMMA_FP8_N128("e5m2", "1");
    else GL_WGMMA_FP8_N128("e5m2", "0");
}
#undef GL_WGMMA_FP8_N256
#undef GL_WGMMA_FP8_N128

// one 128-wide k-slice of a consumer's 64 x N product, four wgmma of 32 k: A's 64
// rows at a, B's N rows at b, both 128-byte rows in the 128-byte swizzle; 32 k
// further is 32 bytes along a row of each, 2 in a descriptor's address field (in
// 16-byte units), so each descriptor is built once. FRESH 1: the slice's first
// wgmma overwrites d instead of adding to it (d then holds this slice's sum alone)
template <int KIND, int FRESH, int N>
__device__ __forceinline__ void mma_slice(float (&d)[N], unsigned a, unsigned b)
{
    const unsigned long long da = gl_wgmma::desc(a, 16, 1024),
                             db = gl_wgmma::desc(b, 16, 1024);
    gl_hopper::fence_registers(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    mma_k32<KIND, !FRESH>(d, da, db);
    #pragma unroll
    for (int kk = 1; kk < BK / 32; ++kk)
        mma_k32<KIND, 1>(d, da + 2 * kk, db + 2 * kk);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    gl_hopper::fence_registers(d);
}
// [fp8]

// [producer]
// the producer of tc/13: every k-slice of every tile of the block, in tc/08's
// order; a stage is A's 128 x 128 box and B^T's BN x 128 box
template <int STAGES, int BN>
__device__ __forceinline__ void load_tiles(const gl_hopper::TensorMap* mapA,
                                           const gl_hopper::TensorMap* mapB,
                                           unsigned tiles, unsigned long long* full,
                                           unsigned long long* empty, int MT,
                                           int NT, int KT, int group)
{
    using namespace gl_hopper;
    constexpr int STAGE = A_BYTES + BN * BK;
    int it = 0;
    for (int t = blockIdx.x; t < MT * NT; t += gridDim.x) {
        int mt, nt;
        gl_wgmma::grouped_tile(t, MT, NT, group, mt, nt);
        for (int kt = 0; kt < KT; ++kt, ++it) {
            const int s = it % STAGES;
            bar_wait(smem(&empty[s]), ((it / STAGES) & 1) ^ 1);
            bar_expect_bytes(smem(&full[s]), STAGE);
            const unsigned a = tiles + s * STAGE;
            tma_load(a, mapA, kt * BK, mt * BM, smem(&full[s]));
            tma_load(a + A_BYTES, mapB, kt * BK, nt * BN, smem(&full[s]));
        }
    }
}
// [producer]
}  // namespace gl_fp8
