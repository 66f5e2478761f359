// tc/08_persistent.cu — tc/06 as a persistent kernel: one block per SM walks the
// tiles (sm_90a).
//
// C (M x N, FP32, row-major) = A (M x K) B (K x N), row-major, A and B in FP16
// (PREC 0) or BF16 (1).
// What changed since tc/06: there the grid had one block per 128 x 256 tile of C,
// and each block filled its pipeline, multiplied, stored and exited; the next block
// on that SM started from an empty pipeline, and the last wave of blocks ran on
// part of the GPU. Here the grid has one block per SM (at most one per tile) and
// each block walks the tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... in bands
// of 8 rows of tiles (gl_wgmma::grouped_tile), so the tiles that run at once share
// rows of A and columns of B in L2. The producer counts k-slices across the block's
// tiles, not per tile: while the consumers finish one tile and store it, it already
// loads the next tile's first slices, and the block is launched once.
// What it should buy: the pipeline fill and the block launch of every tile after a
// block's first, and the loads of a tile behind the previous tile's stores. The
// last wave stays: 512 tiles on 132 SMs are still 3.88 tiles a block, and the
// stores still stop the tensor cores (tc/09 moves them).
// Sizes as tc/06: K and N multiples of 8, M free.
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/wgmma.cuh"

namespace persistent {
// the tiles: gl_wgmma's 128 x 256 in 64-wide slices, as tc/06
constexpr int STAGES = 4, GROUP = 8;
}  // namespace persistent

template <int PREC>
__global__ void __launch_bounds__(384, 1)
wgmma_persistent_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                      const __grid_constant__ gl_hopper::TensorMap mapB,
                      float* __restrict__ C, int M, int N, int K)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using namespace persistent;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int MT = (M + BM - 1) / BM, NT = (N + BN - 1) / BN,
              KT = (K + BK - 1) / BK;
    bar_init_stages(full, empty, 2);

    // the producer
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0)
            gl_wgmma::load_tiles<STAGES>(&mapA, &mapB, tiles, full, empty, MT, NT,
                                         KT, GROUP);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1, warp = tid / 32, lane = tid % 32;
    // k-slices consumed so far
    int it = 0;
    for (int t = blockIdx.x; t < MT * NT; t += gridDim.x) {
        int mt, nt;
        gl_wgmma::grouped_tile(t, MT, NT, GROUP, mt, nt);
        float d[128];
        gl_wgmma::multiply_tile<PREC, STAGES, 1>(d, it, KT, tiles, full, empty, c,
                                                 tid);
        // the stores of tc/06: rows 16 w + lane / 4 and 8 below, columns 8 j + 2
        // (lane % 4) + {0, 1}
        const int r = mt * BM + 64 * c + 16 * warp + lane / 4;
        #pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = nt * BN + 8 * j + 2 * (lane % 4);
            if (col < N) {
                if (r < M)
                    *reinterpret_cast<float2*>(&C[(size_t)r * N + col]) =
                        make_float2(d[4 * j], d[4 * j + 1]);
                if (r + 8 < M)
                    *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + col]) =
                        make_float2(d[4 * j + 2], d[4 * j + 3]);
            }
        }
    }
}
// [kernel]
