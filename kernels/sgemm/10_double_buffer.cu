// sgemm/10_double_buffer.cu — warp tiles (09) with two shared-memory stages, fed
// through registers.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 09_warp_tiling: the block keeps two stages of its A and B
// tiles in shared memory. While its warps compute on one stage, each thread has
// already issued the global loads of the next tile into registers (LDG.128); after
// the FMAs of this tile it writes them into the other stage. The loads' latency
// hides behind a whole tile of FMAs, and one __syncthreads() per tile is enough (a
// stage is written only after every thread has left it, at the previous barrier).
// The hierarchy (as 09): a BM x BN block tile; (BM/WM) x (BN/WN) warps, each a
// WM x WN warp tile; in a warp, lanes as 8 rows x 4 columns, each lane a 4 x 4
// sub-tile, repeated (WM/32) x (WN/16) times, so a lane owns TM x TN =
// (WM/8) x (WN/4) values of C. The A tile is stored transposed (As[k][m], rows
// padded by 4 floats: its column-wise stores are conflict-free), so a lane reads
// its 4 rows of A at one k with one LDS.128, as it reads 4 columns of B.
// MINB sets __launch_bounds__(threads, MINB): registers capped for MINB blocks per
// SM. SNAKE = 1 orders each k's FMAs as a boustrophedon (gl_warp_tile_fma), 0 row
// by row: the same arithmetic in another order. Two switches for the shape of the
// problem (chapter 13, its last sections): GROUP > 1 orders the blocks in bands of
// GROUP block-rows (the grid is one-dimensional; consecutive blocks share tiles of
// A and walk B together, so more of both is still in L2 when the next blocks want
// it); SPLITK > 1 cuts K into SPLITK slices, one per blockIdx.y, each adding its
// partial tile into C with atomicAdd (C zeroed first; the order of those additions
// varies, so the last bits of C may vary from run to run).
// Shared memory is dynamic: 4 * 2 * (BK * (BM + 4) + BK * BN) bytes (over 48 KiB
// after the opt-in).
// Expected bottleneck: FMA issue (a warp's shared loads are 1 wavefront each, 4 or
// fewer per 64 FMAs).
// Sizes: any M, N, K >= 1 (gl_load4/gl_store4 fall back to guarded scalar accesses
// at the edges).

#include "common/sgemm_tiles.cuh"

// [kernel]
template <int BM, int BN, int BK, int WM, int WN, int GROUP, int SPLITK, int MINB,
          int SNAKE>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
sgemm_double_buffer(const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C, int M, int N, int K)
{
    // (common/sgemm_tiles.cuh)
    using W = gl_warp_tiling<BM, BN, BK, WM, WN>;
    constexpr int THREADS = W::THREADS, LR = W::LR, LC = W::LC, MI = W::MI,
                  NI = W::NI;
    constexpr int A_LOADS = W::A_LOADS, B_LOADS = W::B_LOADS;
    constexpr int APAD = 4;
    extern __shared__ __align__(16) float smem[];
    // [2][BK][BM + APAD]
    auto As = reinterpret_cast<float (*)[BK][BM + APAD]>(smem);
    // [2][BK][BN]
    auto Bs = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * (BM + APAD));

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LC) * 4, ln = (lane % LC) * 4;
    // this block's tile of C: blocks in bands of GROUP block-rows, column by column
    // within a band
    // (common/sgemm_tiles.cuh)
    const int2 corner = gl_band_tile<BM, BN, GROUP>(M, N);
    const int row0 = corner.x, col0 = corner.y;
    // this block's slice of K (whole BK tiles)
    const int slice = ((K + SPLITK - 1) / SPLITK + BK - 1) / BK * BK;
    const int kbegin = (int)blockIdx.y * slice,
              kend = kbegin + slice < K ? kbegin + slice : K;
    const bool avec = (K % 4) == 0, bvec = (N % 4) == 0;

    float4 ra[A_LOADS], rb[B_LOADS];
    // The next tile, global memory -> registers (issued early; used after this
    // tile's FMAs), and registers -> stage s of shared memory, A transposed
    // (common/sgemm_tiles.cuh)
    auto fetch = [&](int k0) {
        gl_fetch_tiles<BM, BN, BK, THREADS>(A, B, M, N, K, kend, row0, col0, k0,
                                            avec, bvec, tid, ra, rb);
    };
    auto stash = [&](int s) {
        gl_stash_tiles<BN, BK, THREADS, BM + APAD, BN>(&As[s][0][0], &Bs[s][0][0],
                                                       tid, ra, rb);
    };

    float acc[MI * 4][NI * 4] = {};
    const int tiles = kend > kbegin ? (kend - kbegin + BK - 1) / BK : 0;
    if (tiles > 0) {
        fetch(kbegin);
        stash(0);
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) fetch(kbegin + (t + 1) * BK);
        #pragma unroll
        for (int k = 0; k < BK; ++k)
            gl_warp_tile_fma<MI, NI, LR, LC, SNAKE != 0>(As[s][k], Bs[s][k], wm, wn,
                                                         lm, ln, acc);
        if (t + 1 < tiles) stash(s ^ 1);
        __syncthreads();
    }

    // (common/sgemm_tiles.cuh)
    gl_store_warp_tile<MI, NI, LR, LC, SPLITK>(C, M, N, row0, col0, wm, wn, lm, ln,
                                               acc);
}
// [kernel]
