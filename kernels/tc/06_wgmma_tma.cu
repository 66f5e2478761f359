// tc/06_wgmma_tma.cu — Hopper's own pipeline: TMA copies, mbarriers and warpgroup MMA (sm_90a; GPU only).
//
// C (M x N, FP32, row-major) = A (M x K) B (K x N), row-major, A and B in FP16 (PREC 0) or BF16 (1).
// What changed since tc/05: there every thread copied its part of each tile (cp.async) and every warp
// multiplied its own 16 x 8 pieces (mma.sync). Here a block of three warpgroups (384 threads) computes a
// 128 x 256 tile of C and the work is split by role:
//   - warpgroup 0 produces: one of its threads asks the Tensor Memory Accelerator (TMA) to copy each
//     64-wide k-slice of A (128 x 64) and B (64 x 256) into shared memory, STAGES slices ahead. A copy is
//     described by a tensor map (built on the host, gemmlab.tma) and lands 128-byte swizzled; it
//     announces its bytes to the stage's "full" mbarrier, and fills zeros outside the matrices;
//   - warpgroups 1 and 2 consume: each waits on the stage's barrier, then multiplies its 64 rows by the
//     256 columns with four wgmma.m64n256k16, straight from shared memory (no ldmatrix, no registers
//     for the operands), and tells the stage's "empty" mbarrier when the slice may be overwritten.
// The producer gives up registers (setmaxnreg) so that the consumers can hold 128 FP32 accumulators each.
// wgmma reads A K-major (rows of A) and B MN-major (rows of B), as they lie in memory: no transposes.
// Sizes: K and N multiples of 8 (TMA needs 16-byte row strides; the registry refuses others); M, N, K
// otherwise free (TMA zero-fills, the stores are guarded).
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/hopper.cuh"

namespace hopper {
using namespace gl_hopper;
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;

// a shared-memory matrix descriptor: start address, leading and stride byte offsets (in 16-byte units),
// layout 1 in bits 62-63: the 128-byte swizzle that the TMA copies wrote
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
// d (64 x 256, FP32, 128 per thread) += A (64 x 16, desc a, K-major) B (16 x 256, desc b, MN-major)
#define GL_WGMMA_64x256x16(TYPE)                                                                            \
    asm volatile("{\n"                                                                                     \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"                         \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                   \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "         \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "         \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "         \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "         \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "         \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, " \
                 "%128, %129, 1, 1, 1, 0, 1;\n}\n"                                                         \
                 :                                                                                         \
                 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
                 "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
                 "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
                 "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
                 "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
                 "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
                 "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
                 "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
                 "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
                 : "l"(a), "l"(b))
template <int PREC>
__device__ __forceinline__ void mma_64x256x16(float (&d)[128], unsigned long long a, unsigned long long b)
{
    if (PREC == 0) GL_WGMMA_64x256x16("f16");
    else GL_WGMMA_64x256x16("bf16");
}
#undef GL_WGMMA_64x256x16
}  // namespace hopper

template <int PREC>
__global__ void __launch_bounds__(384, 1) wgmma_tma_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                                                        const __grid_constant__ gl_hopper::TensorMap mapB,
                                                        float* __restrict__ C, int M, int N, int K)
{
    using namespace hopper;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;         // the swizzle repeats every 1024 bytes
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, KT = (K + BK - 1) / BK;
    bar_init_stages(full, empty, 2);                                    // two consumer warpgroups

    if (wg == 0) {                                                       // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                bar_wait(smem(&empty[s]), ((kt / STAGES) & 1) ^ 1);      // the first round passes at once
                bar_expect_bytes(smem(&full[s]), STAGE_BYTES);
                const unsigned a = tiles + s * STAGE_BYTES, b = a + A_BYTES;
                tma_load(a, &mapA, kt * BK, m0, smem(&full[s]));          // A: 128 rows x 64 k
                #pragma unroll
                for (int j = 0; j < BN / 64; ++j)                       // B: 64 k x 256 columns, in four boxes
                    tma_load(b + j * (BK * 128), &mapB, n0 + 64 * j, kt * BK, smem(&full[s]));
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;                                                // rows 64 c .. 64 c + 63 of the tile
    float d[128];
    #pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        bar_wait(smem(&full[s]), (kt / STAGES) & 1);
        const unsigned a = tiles + s * STAGE_BYTES + c * (64 * 128), b = tiles + s * STAGE_BYTES + A_BYTES;
        fence_registers(d);                       // nothing of d moves into the asynchronous section
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        #pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)     // A: 16 k further is 32 bytes along a row; B: 16 rows of 128 bytes
            mma_64x256x16<PREC>(d, desc(a + 32 * kk, 16, 1024), desc(b + 2048 * kk, BK * 128, 1024));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        fence_registers(d);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // the previous slice's are done:
        if (kt > 0 && tid == 0) bar_arrive(smem(&empty[(kt - 1) % STAGES]));   // its stage may be refilled
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_registers(d);                           // every read of d below comes after the wait
    // the accumulators of m64nNk16: warp w of the warpgroup holds rows 16 w + lane / 4 (d[4 j], d[4 j + 1])
    // and 8 rows below (d[4 j + 2], d[4 j + 3]), columns 8 j + 2 (lane % 4) + {0, 1}
    const int warp = tid / 32, lane = tid % 32;
    const int r = m0 + 64 * c + 16 * warp + lane / 4;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        if (col < N) {                                                   // N is even: col + 1 < N too
            if (r < M) *reinterpret_cast<float2*>(&C[(size_t)r * N + col]) = make_float2(d[4 * j], d[4 * j + 1]);
            if (r + 8 < M)
                *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + col]) = make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}
// [kernel]
