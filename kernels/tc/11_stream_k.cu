// tc/11_stream_k.cu — tc/09 with its last round of tiles split along K over every
// SM (stream-K; sm_90a).
//
// C (M x N, FP32, row-major) = A (M x K) B (K x N), row-major, A and B in FP16
// (PREC 0) or BF16 (1).
// What changed since tc/09: there 512 tiles of 4096^3 on 132 blocks are 3 rounds of
// 132 and a last round of 116, during which 16 SMs wait: 3% of the GPU's time there
// (and at each of chapter 16's shapes), some share of it at every shape whose tiles
// are not a multiple of the SMs. Here the host splits the tiles in two: the first
// `dp_tiles` (whole rounds) are walked as in tc/09, a whole tile a turn; the rest,
// the tail, are cut into their k-slices, laid end to end (tile by tile), and shared
// out evenly among the first `sk_blocks` blocks, each taking one contiguous run of
// slices, which can begin inside one tile and end inside another. A block walks its
// run backwards, so that the piece holding a tile's first slice comes first in its
// block: that piece is stored through the TMA epilogue as tc/09 stores a tile, and
// a flag per consumer says when the copy engine has written it; every other piece
// of the tile (a block's last) waits for that flag and is added to C by the copy
// engine itself (a TMA store with .add: FP32 additions in L2), asynchronously, as
// the plain stores are. No partial sums cross through a workspace. The flag goes up
// once the copy engine has written the first piece, which its block checks only
// after its next piece's main loop (or at its end), so that its tensor cores do not
// wait for the copy; a block whose last piece must wait for a flag waits at most
// until the owner's block has finished its next piece's main loop.
// The last consumer of the grid to finish clears the flags for the next launch. The
// order in which the pieces of a tile are added varies from run to run, so the last
// bits of C can too (cuBLAS's default kernels give the same bits every run).
// What it should buy: the last round's idle SMs (at 8192^3 each block's share of
// the 68 tiles of the tail is 68 / 132 of a tile, where 64 SMs would wait a whole
// one), for one more epilogue a block and the additions in L2. The host splits only
// where the idle time is worth that (gemmlab.registry.stream_k_split): at 4096^3
// the 16 idle SMs are 8 slices' time a block, too little, and tc/11 runs there as
// tc/09.
// Sizes as tc/06: K and N multiples of 8, M free.
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/wgmma.cuh"

namespace stream_k {
constexpr int STAGES = 4, GROUP = 8;              // as tc/09

// the block's work: whole tiles t = blockIdx.x, + gridDim.x, ... below dp_tiles,
// then its run of the tail's slices, last piece first; f(t, k0, k1) for each piece
// (tile t, slices k0 <= kt < k1)
__device__ __forceinline__ int run_start(int b, int slices, int blocks)
{
    return (int)((long long)b * slices / blocks);
}
template <class F>
__device__ __forceinline__ void walk(int tiles, int KT, int dp_tiles, int sk_blocks,
                                     F&& f)
{
    for (int t = blockIdx.x; t < dp_tiles; t += gridDim.x) f(t, 0, KT);
    if ((int)blockIdx.x >= sk_blocks) return;
    const int slices = (tiles - dp_tiles) * KT,
              lo = run_start(blockIdx.x, slices, sk_blocks);
    for (int i = run_start(blockIdx.x + 1, slices, sk_blocks); i > lo;) {
        const int u = (i - 1) / KT, k0 = max(lo, u * KT) - u * KT, k1 = i - u * KT;
        f(dp_tiles + u, k0, k1);
        i = u * KT + k0;
    }
}
__device__ __forceinline__ void fence_proxy_async_global()
{
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ unsigned load_acquire(const unsigned* p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n"
                 : "=r"(v) : "l"(p) : "memory");
    return v;
}
}  // namespace stream_k

template <int PREC>
__global__ void __launch_bounds__(384, 1)
wgmma_stream_k_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                    const __grid_constant__ gl_hopper::TensorMap mapB,
                    const __grid_constant__ gl_hopper::TensorMap mapC, int M,
                    int N, int K, int dp_tiles, int sk_blocks,
                    unsigned* __restrict__ flags)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using namespace stream_k;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int MT = (M + BM - 1) / BM, NT = (N + BN - 1) / BN,
              KT = (K + BK - 1) / BK, T = MT * NT;
    bar_init_stages(full, empty, 2);

    // the producer: every slice of every piece
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            int it = 0;
            walk(T, KT, dp_tiles, sk_blocks, [&](int t, int k0, int k1) {
                int mt, nt;
                grouped_tile(t, MT, NT, GROUP, mt, nt);
                load_slices<STAGES>(&mapA, &mapB, tiles, full, empty, mt, nt, k0,
                                    k1, it);
            });
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;
    const unsigned out = tiles + STAGES * STAGE_BYTES + c * (2 * BOX_BYTES);
    // the flag that says this consumer's part of a tile is in C
    unsigned* pending = nullptr;
    // raised once the copy engine has written it
    auto settle = [&]() {
        if (pending && tid == 0) {
            bulk_wait<0>();
            fence_proxy_async_global();
            __threadfence();
            asm volatile("st.release.gpu.global.u32 [%0], 1;\n"
                         ::"l"(pending) : "memory");
        }
        pending = nullptr;
    };
    int it = 0;
    walk(T, KT, dp_tiles, sk_blocks, [&](int t, int k0, int k1) {
        int mt, nt;
        grouped_tile(t, MT, NT, GROUP, mt, nt);
        float d[128];
        multiply_tile<PREC, STAGES, 1>(d, it, k1 - k0, tiles, full, empty, c, tid);
        settle();
        // the tile's first slices: stored
        if (k0 == 0) {
            store_tile<0>(d, out, &mapC, mt * BM + 64 * c, nt * BN, 1 + c, tid);
            // others add theirs once it is in C
            if (k1 < KT) pending = flags + 2 * (t - dp_tiles) + c;
        } else {
            // the rest: added to it
            if (tid == 0) {
                while (!load_acquire(flags + 2 * (t - dp_tiles) + c)) {}
                fence_proxy_async_global();
            }
            store_tile<1>(d, out, &mapC, mt * BM + 64 * c, nt * BN, 1 + c, tid);
        }
    });
    settle();
    // every store done before the block ends
    if (tid == 0) bulk_wait<0>();
    if (tid == 0 && sk_blocks > 0) {
        // the last consumer of the grid to finish sets the tail's flags back to
        // zero for the next launch
        unsigned* finished = flags + 2 * (T - dp_tiles);
        __threadfence();
        if (atomicAdd(finished, 1u) == 2 * gridDim.x - 1) {
            // the clearing after every flag's use
            __threadfence();
            for (int i = 0; i < 2 * (T - dp_tiles); ++i) flags[i] = 0;
            *finished = 0;
            __threadfence();
        }
    }
}
// [kernel]
