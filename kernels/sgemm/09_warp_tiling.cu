// sgemm/09_warp_tiling.cu — block, warp and lane tiles: the hierarchy CUTLASS
// names.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 07_vectorized: the threads of a block are no longer one flat
// grid of 8 x 8 micro-tiles. The BM x BN block tile is cut into WM x WN warp tiles,
// one per warp, and inside a warp the 32 lanes sit as 8 rows by 4 columns of 4 x 4
// sub-tiles, repeated (WM/32) x (WN/16) times (gl_warp_tiling, gl_warp_tile_fma in
// common/sgemm_tiles.cuh). A warp's shared-memory reads at one k are then WM values
// of A and WN of B, read once by 8 lanes and broadcast to the others, and every
// LDS.128 of a warp covers consecutive 16-byte groups: one wavefront per
// instruction, whatever the block tile. The A tile is transposed and padded by 4
// floats (07's PAD), B is stored as it lies. One stage, two barriers per tile
// (10_double_buffer adds the second stage).
// Expected bottleneck: instruction issue (FMAs, shared loads) and the barriers'
// stalls.
// Sizes: any M, N, K >= 1.

#include "common/sgemm_tiles.cuh"

// [kernel]
template <int BM, int BN, int BK, int WM, int WN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_warp_tiling(const float* __restrict__ A, const float* __restrict__ B,
                  float* __restrict__ C, int M, int N, int K)
{
    using W = gl_warp_tiling<BM, BN, BK, WM, WN>;
    constexpr int THREADS = W::THREADS, LR = W::LR, LC = W::LC, MI = W::MI,
                  NI = W::NI;
    constexpr int AP = BM + 4;
    __shared__ __align__(16) float As[BK][AP];
    __shared__ __align__(16) float Bs[BK][BN];

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    // the warp's corner
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    // the lane's, in a sub-tile
    const int lm = (lane / LC) * 4, ln = (lane % LC) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool avec = (K % 4) == 0, bvec = (N % 4) == 0;

    float4 ra[W::A_LOADS], rb[W::B_LOADS];
    float acc[MI * 4][NI * 4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        gl_fetch_tiles<BM, BN, BK, THREADS>(A, B, M, N, K, K, row0, col0, k0, avec,
                                            bvec, tid, ra, rb);
        gl_stash_tiles<BN, BK, THREADS, AP, BN>(&As[0][0], &Bs[0][0], tid, ra, rb);
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k)
            gl_warp_tile_fma<MI, NI, LR, LC>(As[k], Bs[k], wm, wn, lm, ln, acc);
        __syncthreads();
    }
    // (common/sgemm_tiles.cuh)
    gl_store_warp_tile<MI, NI, LR, LC>(C, M, N, row0, col0, wm, wn, lm, ln, acc);
}
// [kernel]
