// sgemm/12_interior.cu — sgemm/10 with a main loop free of bounds checks for the
// tiles inside C, and a choice of how a warp's lanes cover its tile.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 10_double_buffer: two things, measured together on the H200
// (chapter 13).
// 1. A block whose BM x BN tile of C and whose K slice lie wholly inside the
//    matrices (every block when the sizes are multiples of the tiles; all but the
//    last row and column of blocks otherwise), with rows that are whole float4s,
//    runs a copy of the main loop with plain LDG.128 loads: no bounds checks, no
//    scalar fall-back code between the FMAs, and the next tile's loads issued on
//    every iteration (the last one reloads its own tile, which nobody reads). Its
//    loop is straight-line code apart from the branch back, which the instruction
//    fetch streams; sgemm/10's holds 39 branches around fall-back loads. Blocks at
//    the edges run sgemm/10's loop.
// 2. LANES: a warp's 32 lanes as 8 rows x 4 columns of 4 x 4 sub-tiles (LANES = 8,
//    as 09 and 10) or as 4 rows x 8 columns (LANES = 4): the same loads and FMAs
//    per lane, the A fragment read as WM/16 LDS.128 and B's as WN/32 instead of
//    WM/32 and WN/16; what changes is how the compiler allocates the 255 registers
//    around them. Chapter 13 measures each change and both together.
// Otherwise as 10: two shared stages fed through registers, A stored transposed,
// the FMAs in boustrophedon order, GROUP (block order in bands) and SPLITK (K in
// slices, atomicAdd into a zeroed C).
// Shared memory is dynamic: 4 * 2 * (BK * (BM + 4) + BK * BN) bytes.
// Expected bottleneck: FMA issue.
// Sizes: any M, N, K >= 1 (edge blocks take the checked loop).

#include "common/sgemm_tiles.cuh"

// [kernel]
// The main loop over this block's K slice; INSIDE = true: the tiles lie inside the
// matrices (no checks).
template <int BM, int BN, int BK, int WM, int WN, int LANES, bool INSIDE, int MI,
          int NI>
__device__ __forceinline__ void interior_main_loop(
    const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K,
    int kbegin, int kend, int row0, int col0, bool avec, bool bvec, float* smem,
    int tid, int wm, int wn, int lm, int ln, float (&acc)[MI * 4][NI * 4])
{
    using W = gl_warp_tiling<BM, BN, BK, WM, WN, LANES>;
    constexpr int THREADS = W::THREADS;
    constexpr int A_LOADS = W::A_LOADS, B_LOADS = W::B_LOADS;
    constexpr int APAD = 4;
    // [2][BK][BM + APAD]
    auto As = reinterpret_cast<float (*)[BK][BM + APAD]>(smem);
    // [2][BK][BN]
    auto Bs = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * (BM + APAD));

    float4 ra[A_LOADS], rb[B_LOADS];
    // The next tile, global memory -> registers (issued early; used after this
    // tile's FMAs), and registers -> stage s of shared memory, A transposed
    // (common/sgemm_tiles.cuh)
    // this block's rows of A, columns of B
    const float* a0 = A + (size_t)row0 * K;
    const float* b0 = B + col0;
    auto fetch = [&](int k0) {
        // whole float4s inside the matrices
        if (INSIDE) {
            #pragma unroll
            for (int l = 0; l < A_LOADS; ++l) {
                const int i = tid + l * THREADS, r = i / (BK / 4),
                          c = (i % (BK / 4)) * 4;
                ra[l] =
                    *reinterpret_cast<const float4*>(a0 + (size_t)r * K + k0 + c);
            }
            #pragma unroll
            for (int l = 0; l < B_LOADS; ++l) {
                const int i = tid + l * THREADS, r = i / (BN / 4),
                          c = (i % (BN / 4)) * 4;
                rb[l] =
                    *reinterpret_cast<const float4*>(b0 + (size_t)(k0 + r) * N + c);
            }
        } else {
            gl_fetch_tiles<BM, BN, BK, THREADS>(A, B, M, N, K, kend, row0, col0, k0,
                                                avec, bvec, tid, ra, rb);
        }
    };
    auto stash = [&](int s) {
        gl_stash_tiles<BN, BK, THREADS, BM + APAD, BN>(&As[s][0][0], &Bs[s][0][0],
                                                       tid, ra, rb);
    };

    const int tiles = kend > kbegin ? (kend - kbegin + BK - 1) / BK : 0;
    if (tiles > 0) {
        fetch(kbegin);
        stash(0);
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        // no branch: the last reloads itself
        if (INSIDE) fetch(kbegin + (t + 1 < tiles ? t + 1 : t) * BK);
        else if (t + 1 < tiles) fetch(kbegin + (t + 1) * BK);
        #pragma unroll
        for (int k = 0; k < BK; ++k)
            gl_warp_tile_fma<MI, NI, W::LR, W::LC>(As[s][k], Bs[s][k], wm, wn, lm,
                                                   ln, acc);
        // stage s ^ 1 was left at the last barrier
        if (INSIDE || t + 1 < tiles) stash(s ^ 1);
        __syncthreads();
    }
}

template <int BM, int BN, int BK, int WM, int WN, int LANES, int GROUP, int SPLITK,
          int MINB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
sgemm_interior(const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, int M, int N, int K)
{
    // (common/sgemm_tiles.cuh)
    using W = gl_warp_tiling<BM, BN, BK, WM, WN, LANES>;
    constexpr int LR = W::LR, LC = W::LC, MI = W::MI, NI = W::NI;
    extern __shared__ __align__(16) float smem[];

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
    const bool inside = avec && bvec && row0 + BM <= M && col0 + BN <= N
                        && (kend - kbegin) % BK == 0;

    float acc[MI * 4][NI * 4] = {};
    if (inside)
        interior_main_loop<BM, BN, BK, WM, WN, LANES, true, MI, NI>(
            A, B, M, N, K, kbegin, kend, row0, col0, avec, bvec, smem, tid, wm, wn,
            lm, ln, acc);
    else
        interior_main_loop<BM, BN, BK, WM, WN, LANES, false, MI, NI>(
            A, B, M, N, K, kbegin, kend, row0, col0, avec, bvec, smem, tid, wm, wn,
            lm, ln, acc);

    // (common/sgemm_tiles.cuh)
    gl_store_warp_tile<MI, NI, LR, LC, SPLITK>(C, M, N, row0, col0, wm, wn, lm, ln,
                                               acc);
}
// [kernel]
