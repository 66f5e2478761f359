// common/wgmma.cuh — Hopper's warpgroup MMA as chapters 15 to 17 use it (sm_90a,
// inline PTX; the emulator's too): the shared-memory descriptor of a
// 128-byte-swizzled tile, wgmma.m64n256k16 (and m64n128k16) with FP32 accumulators,
// the order in which a persistent kernel walks the tiles of C, its producer and
// consumer loops and the TMA-store epilogue.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/hopper.cuh"

namespace gl_wgmma {
// [wgmma]
// the tiles of tc/06-tc/11: 128 x 256 of C per block in 64-wide steps of K; a stage
// holds A's 128 x 64 and B's 64 x 256 (four 64-column boxes), 16-bit values
constexpr int BM = 128, BN = 256, BK = 64;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2,
              STAGE_BYTES = A_BYTES + B_BYTES;
// a shared-memory matrix descriptor: start address, leading and stride byte offsets
// (in 16-byte units), layout 1 in bits 62-63: the 128-byte swizzle that the TMA
// copies wrote
__device__ __forceinline__ unsigned long long desc(unsigned addr, unsigned lbo,
                                                   unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4)
           | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16)
           | ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
// d (64 x 256, FP32, 128 per thread) += A (64 x 16, desc a, K-major) B (16 x 256,
// desc b, MN-major)
#define GL_WGMMA_64x256x16(TYPE)                                                   \
    asm volatile(                                                                  \
        "{\n"                                                                      \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " {"          \
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
        "%128, %129, 1, 1, 1, 0, 1;\n}\n"                                          \
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
template <int PREC>
__device__ __forceinline__ void mma_64x256x16(float (&d)[128], unsigned long long a,
                                              unsigned long long b)
{
    if (PREC == 0) GL_WGMMA_64x256x16("f16");
    else GL_WGMMA_64x256x16("bf16");
}
#undef GL_WGMMA_64x256x16

// one 64-wide k-slice of a consumer's 64 x 256 product: A's 64 rows at a (128-byte
// rows, swizzled), B's 64 rows of 256 columns at b (four 64-column boxes of 64
// rows x 128 bytes); 16 k further is 32 bytes along a row of A and 16 rows (2 KiB)
// of B
template <int PREC>
__device__ __forceinline__ void mma_slice(float (&d)[128], unsigned a, unsigned b)
{
    // nothing of d moves into the asynchronous section
    gl_hopper::fence_registers(d);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        mma_64x256x16<PREC>(d, desc(a + 32 * kk, 16, 1024),
                            desc(b + 2048 * kk, BK * 128, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    gl_hopper::fence_registers(d);
}
template <int N>
__device__ __forceinline__ void wait_slices()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// [wgmma]

// [tiles]
// tile t of an MT x NT grid of tiles of C, in bands of `group` rows of tiles, each
// band walked down its columns: the tiles that run at once share a few rows of A
// and a few columns of B, which stay in L2
__device__ __forceinline__ void grouped_tile(int t, int MT, int NT, int group,
                                             int& mt, int& nt)
{
    const int band = t / (group * NT), first = band * group,
              rows = min(group, MT - first);
    const int in = t - band * group * NT;
    mt = first + in % rows;
    nt = in / rows;
}
// [tiles]

// [walk]
// chapter 16's persistent pipeline (tc/08-tc/12). A block walks the tiles t =
// blockIdx.x, + gridDim.x, ... of an MT x NT grid in grouped_tile's order; its
// producer and its consumers each count the k-slices they have handled so far
// (`it`) across all of the block's tiles, so that stage it % STAGES and parity (it
// / STAGES) & 1 run on from one tile to the next and the producer loads a tile's
// first slices while the consumers still store the one before.

// the producer's loads of slices k0 <= kt < k1 of tile (mt, nt), from slice `it` of
// its running count on: each waits for its stage to be empty, then copies A's boxes
// and B's into it. The tile is MB boxes of A (128 x 64 each) tall and NB boxes of B
// (64 x 64) wide: 128 x 256 by default, tc/12's 128 x 128 and 256 x 128
template <int STAGES, int MB = 1, int NB = BN / 64>
__device__ __forceinline__ void load_slices(const gl_hopper::TensorMap* mapA,
                                            const gl_hopper::TensorMap* mapB,
                                            unsigned tiles,
                                            unsigned long long* full,
                                            unsigned long long* empty, int mt,
                                            int nt, int k0, int k1, int& it)
{
    using namespace gl_hopper;
    constexpr int A_BOX = BM * BK * 2, B_BOX = BK * 64 * 2,
                  STAGE = MB * A_BOX + NB * B_BOX;
    for (int kt = k0; kt < k1; ++kt, ++it) {
        const int s = it % STAGES;
        // the first round passes at once
        bar_wait(smem(&empty[s]), ((it / STAGES) & 1) ^ 1);
        bar_expect_bytes(smem(&full[s]), STAGE);
        const unsigned a = tiles + s * STAGE, b = a + MB * A_BOX;
        #pragma unroll
        for (int i = 0; i < MB; ++i)
            tma_load(a + i * A_BOX, mapA, kt * BK, (mt * MB + i) * BM,
                     smem(&full[s]));
        #pragma unroll
        for (int j = 0; j < NB; ++j)
            tma_load(b + j * B_BOX, mapB, (nt * NB + j) * 64, kt * BK,
                     smem(&full[s]));
    }
}
// the producer of tc/08, tc/09 and tc/12: every k-slice of every tile of the block
template <int STAGES, int MB = 1, int NB = BN / 64>
__device__ __forceinline__ void load_tiles(const gl_hopper::TensorMap* mapA,
                                           const gl_hopper::TensorMap* mapB,
                                           unsigned tiles, unsigned long long* full,
                                           unsigned long long* empty, int MT,
                                           int NT, int KT, int group)
{
    int it = 0;
    for (int t = blockIdx.x; t < MT * NT; t += gridDim.x) {
        int mt, nt;
        grouped_tile(t, MT, NT, group, mt, nt);
        load_slices<STAGES, MB, NB>(mapA, mapB, tiles, full, empty, mt, nt, 0, KT,
                                    it);
    }
}

// a consumer's main loop over one tile (consumer c's 64 rows), from slice `it` of
// its running count on; each stage is released once the slice after it is issued,
// the tile's last after the final wait. PEERS: how many blocks' "empty" barriers a
// release arrives on (1: its own; 2: both blocks of a cluster, tc/10)
template <int PREC, int STAGES, int PEERS>
__device__ __forceinline__ void multiply_tile(float (&d)[128], int& it, int KT,
                                              unsigned tiles,
                                              unsigned long long* full,
                                              unsigned long long* empty, int c,
                                              int tid)
{
    using namespace gl_hopper;
    auto release = [&](int slice) {
        const unsigned bar = smem(&empty[slice % STAGES]);
        if (PEERS == 1) bar_arrive(bar);
        else
            for (int r = 0; r < PEERS; ++r) bar_arrive_cluster(bar, r);
    };
    #pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % STAGES;
        bar_wait(smem(&full[s]), (it / STAGES) & 1);
        const unsigned a = tiles + s * STAGE_BYTES;
        mma_slice<PREC>(d, a + c * (64 * 128), a + A_BYTES);
        // the previous slice's are done:
        wait_slices<1>();
        // its stage may be refilled
        if (kt > 0 && tid == 0) release(it - 1);
    }
    wait_slices<0>();
    // every read of d after this comes after the wait
    fence_registers(d);
    // the tile's last stage too
    if (tid == 0) release(it - 1);
}
// [walk]

// [half]
// d (64 x 128, FP32, 64 per thread) += A (64 x 16) B (16 x 128): the half-width
// form of chapter 16's 128 x 128 consumers (tc/12)
#define GL_WGMMA_64x128x16(TYPE)                                                   \
    asm volatile(                                                                  \
        "{\n"                                                                      \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " {"          \
        "%0, %1, %2, %3, %4, %5, %6, %7, "                                         \
        "%8, %9, %10, %11, %12, %13, %14, %15, "                                   \
        "%16, %17, %18, %19, %20, %21, %22, %23, "                                 \
        "%24, %25, %26, %27, %28, %29, %30, %31, "                                 \
        "%32, %33, %34, %35, %36, %37, %38, %39, "                                 \
        "%40, %41, %42, %43, %44, %45, %46, %47, "                                 \
        "%48, %49, %50, %51, %52, %53, %54, %55, "                                 \
        "%56, %57, %58, %59, %60, %61, %62, %63}, "                                \
        "%64, %65, 1, 1, 1, 0, 1;\n}\n"                                            \
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
template <int PREC>
__device__ __forceinline__ void mma_64x128x16(float (&d)[64], unsigned long long a,
                                              unsigned long long b)
{
    if (PREC == 0) GL_WGMMA_64x128x16("f16");
    else GL_WGMMA_64x128x16("bf16");
}
#undef GL_WGMMA_64x128x16

// the same k-slice for a consumer of 128 x 128 (tc/12): rows 0-63 into d0, 64-127
// into d1, A's 128 rows at a, B's 128 columns at b (two 64-column boxes); two
// half-width wgmmas per 16 of k
template <int PREC>
__device__ __forceinline__ void mma_slice_128(float (&d0)[64], float (&d1)[64],
                                              unsigned a, unsigned b)
{
    gl_hopper::fence_registers(d0);
    gl_hopper::fence_registers(d1);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
        const unsigned long long bd = desc(b + 2048 * kk, BK * 128, 1024);
        mma_64x128x16<PREC>(d0, desc(a + 32 * kk, 16, 1024), bd);
        mma_64x128x16<PREC>(d1, desc(a + 64 * 128 + 32 * kk, 16, 1024), bd);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    gl_hopper::fence_registers(d0);
    gl_hopper::fence_registers(d1);
}
// the main loop of a 128 x 128 consumer (tc/12) over one tile, as multiply_tile's:
// stages of STAGE bytes, its A rows at a_off in a stage, B at b_off; `issued()`
// runs once the tile's last slice is issued, before the wait
template <int PREC, int STAGES, int STAGE, class F>
__device__ __forceinline__ void multiply_tile_128(float (&d0)[64], float (&d1)[64],
                                                  int& it, int KT, unsigned tiles,
                                                  unsigned long long* full,
                                                  unsigned long long* empty,
                                                  unsigned a_off, unsigned b_off,
                                                  int tid, F&& issued)
{
    using namespace gl_hopper;
    #pragma unroll
    for (int i = 0; i < 64; ++i) d0[i] = d1[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt, ++it) {
        const int s = it % STAGES;
        bar_wait(smem(&full[s]), (it / STAGES) & 1);
        const unsigned stage = tiles + s * STAGE;
        mma_slice_128<PREC>(d0, d1, stage + a_off, stage + b_off);
        // the previous slice's are done:
        wait_slices<1>();
        // its stage may be refilled
        if (kt > 0 && tid == 0) bar_arrive(smem(&empty[(it - 1) % STAGES]));
    }
    issued();
    wait_slices<0>();
    fence_registers(d0);
    fence_registers(d1);
    if (tid == 0) bar_arrive(smem(&empty[(it - 1) % STAGES]));
}
// [half]

// [epilogue]
// the TMA-store epilogue of chapter 16 (tc/09-tc/12): a consumer warpgroup's
// 64 x 256 FP32 accumulators out to C's rows row0.., columns col0.. as eight boxes
// of 64 x 32 (8 KiB; BOXES = 4: 64 x 128, tc/12's halves), through two boxes of
// shared memory at out (1024-aligned), alternating. Each box is written as TMA's
// 128-byte swizzle places it: the 16-byte chunk of a 128-byte row moves to chunk ^
// (row % 8). A half-warp's eight-byte stores cover rows r = 0-3 (or 4-7) of its
// warp's eight, 32 bytes a row; in the same order on every row, rows 2i and 2i + 1
// would land on the same eight banks (a two-way conflict: four wavefronts a store).
// So the odd rows store their column groups in the order q ^ 2: the four rows of a
// half-warp then fill all 32 banks, two wavefronts a store, the least 256 bytes can
// take. Each box is fenced for the copy engine and handed to it by one thread;
// before a box is rewritten, that thread waits until the copy two boxes back has
// read it. `bar`: the warpgroup's hardware barrier (1-15). ADD 1 (tc/11): the copy
// engine adds the box to what C holds (a TMA store with .add, FP32 additions in L2)
// instead of overwriting it.
__device__ __forceinline__ void tma_store_add(const gl_hopper::TensorMap* map,
                                              int c0, int c1, unsigned src)
{
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile"
                 ".bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
constexpr int BOX_BYTES = 64 * 32 * 4;
template <int ADD = 0, int BOXES = 8>
__device__ __forceinline__ void store_tile(const float (&d)[16 * BOXES],
                                           unsigned out,
                                           const gl_hopper::TensorMap* mapC,
                                           int row0, int col0, unsigned bar,
                                           int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    #pragma unroll
    for (int b = 0; b < BOXES; ++b) {
        const unsigned box = out + (b % 2) * BOX_BYTES;
        if (tid == 0) gl_hopper::bulk_wait_read<1>();
        gl_hopper::named_sync(bar, 128);
        // columns 8 q + 2 (lane % 4) of the box: d[4 (4 b + q) + ..]
        #pragma unroll
        for (int q = 0; q < 4; ++q) {
            // rows 16 w + lane / 4 and 8 below
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                // an odd row: column group q ^ 2 of the box now
                const bool odd = lane & 4;
                const int qq = odd ? q ^ 2 : q;
                const int row = 16 * warp + lane / 4 + 8 * h,
                          col = 8 * qq + 2 * (lane % 4);
                const int j = 4 * (4 * b + q) + 2 * h,
                          j2 = 4 * (4 * b + (q ^ 2)) + 2 * h;
                const float x = odd ? d[j2] : d[j], y = odd ? d[j2 + 1] : d[j + 1];
                const unsigned at = box + row * 128
                                    + ((((unsigned)col / 4) ^ (row & 7)) << 4)
                                    + (col % 4) * 4;
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n"
                             ::"r"(at), "f"(x), "f"(y) : "memory");
            }
        }
        // the copy engine sees these stores
        gl_hopper::fence_proxy_async();
        gl_hopper::named_sync(bar, 128);
        if (tid == 0) {
            if (ADD) tma_store_add(mapC, col0 + 32 * b, row0, box);
            else gl_hopper::tma_store(mapC, col0 + 32 * b, row0, box);
            gl_hopper::bulk_commit();
        }
    }
}
// [epilogue]

// [epilogue16]
// The same epilogue for C in the inputs' own 16-bit type, as torch and every
// training stack call a GEMM (chapter 16): each FP32 accumulator is rounded once,
// to nearest, where it leaves the registers, and two neighbours go out as one
// 32-bit word. A box is 64 rows x 64 columns (8 KiB: a 128-byte row holds 64
// values, one swizzle row): half as many boxes for the same tile, half the bytes
// to C. A warp's 32 four-byte stores cover rows 16 w + lane / 4 (eight rows), 16
// bytes of each in chunk q ^ (row % 8): eight different chunks, all 32 banks, one
// wavefront a store, with no reordering of the columns (FP32's 32-byte rows needed
// one).
constexpr int BOX16_BYTES = 64 * 64 * 2;
template <int PREC>
__device__ __forceinline__ unsigned pack_rn(float lo, float hi)
{
    if (PREC == 0)
        return __half_as_ushort(__float2half_rn(lo)) |
               (unsigned)__half_as_ushort(__float2half_rn(hi)) << 16;
    return __bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16;
}
template <int PREC, int BOXES = 4>
__device__ __forceinline__ void store_tile_16(const float (&d)[32 * BOXES],
                                              unsigned out,
                                              const gl_hopper::TensorMap* mapC,
                                              int row0, int col0, unsigned bar,
                                              int tid)
{
    const int warp = tid / 32, lane = tid % 32;
    #pragma unroll
    for (int b = 0; b < BOXES; ++b) {
        const unsigned box = out + (b % 2) * BOX16_BYTES;
        if (tid == 0) gl_hopper::bulk_wait_read<1>();
        gl_hopper::named_sync(bar, 128);
        // column group q of the box: columns 8 q + 2 (lane % 4), d[4 (8 b + q) ..]
        #pragma unroll
        for (int q = 0; q < 8; ++q) {
            // rows 16 w + lane / 4 and 8 below
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = 16 * warp + lane / 4 + 8 * h,
                          j = 4 * (8 * b + q) + 2 * h;
                const unsigned at = box + row * 128
                                    + (((unsigned)q ^ (row & 7)) << 4)
                                    + (lane % 4) * 4;
                const unsigned bits = pack_rn<PREC>(d[j], d[j + 1]);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(bits)
                             : "memory");
            }
        }
        gl_hopper::fence_proxy_async();
        gl_hopper::named_sync(bar, 128);
        if (tid == 0) {
            gl_hopper::tma_store(mapC, col0 + 64 * b, row0, box);
            gl_hopper::bulk_commit();
        }
    }
}
// [epilogue16]
}  // namespace gl_wgmma
