// sgemm/11_cp_async.cu — warp tiles fed by a multi-stage pipeline of asynchronous
// copies (cp.async).
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 10_double_buffer: the copies from global to shared memory
// bypass the registers. __pipeline_memcpy_async (cp.async, 16 bytes, Ampere and
// later) starts a copy that lands in shared memory on its own; __pipeline_commit
// closes a batch, __pipeline_wait_prior(n) waits until at most n batches are still
// in flight. The block keeps STAGES tiles in flight: while its warps compute on
// tile t, tiles t+1 .. t+STAGES-1 are on their way, so more bytes are in flight per
// SM than two stages allow, and no register holds them. cp.async copies bytes as
// they lie, so 16-byte copies cannot transpose the A tile on the way. AT = 0 keeps
// it as it lies: As[m][k], rows padded to BK+4 floats (a row is then an odd number
// of 16-byte groups, so the 8 rows a warp reads at once fall in 8 different bank
// groups); a lane reads 4 k-values of a row of A with one LDS.128, and 4 columns of
// B at each of those k with one more each. AT = 1 transposes A with 4-byte copies
// (four times as many copy instructions for A) into As[k][m], rows padded by 4
// floats, and computes as 10 does. AT = 2 takes A the way 10 does (LDG.128 into
// registers one tile ahead, stored transposed after the tile's FMAs) and only B
// through the pipeline: 16-byte copies for both, and B's registers free for the
// FMAs.
// At the matrix's edges a 16-byte group that lies partly outside is copied in part
// and zero-filled (cp.async's src-size form); when K or N is not a multiple of 4
// the groups are not 16-byte aligned and the tile is written float by float instead
// (same results, slower).
// Expected bottleneck: FMA issue, with shared-memory loads and address arithmetic
// the overhead.
// Sizes: any M, N, K >= 1.

#include <cuda_pipeline.h>
#include "common/sgemm_tiles.cuh"

// [kernel]
template <int BM, int BN, int BK, int WM, int WN, int STAGES, int AT, int MINB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
sgemm_cp_async(const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, int M, int N, int K)
{
    // (common/sgemm_tiles.cuh)
    using W = gl_warp_tiling<BM, BN, BK, WM, WN>;
    constexpr int THREADS = W::THREADS, LR = W::LR, LC = W::LC, MI = W::MI,
                  NI = W::NI;
    constexpr int A_LOADS = W::A_LOADS, B_LOADS = W::B_LOADS;
    // As row stride (floats); AT = 0: an odd number of float4s
    constexpr int AS = AT ? BM + 4 : BK + 4;
    constexpr int A_TILE = AT ? BK * (BM + 4) : BM * (BK + 4);
    static_assert(BK % 4 == 0, "whole 16-byte groups of A along k");
    static_assert(STAGES >= 2, "a pipeline has at least two stages");
    extern __shared__ __align__(16) float smem[];
    // [STAGES][BM][AS], or [STAGES][BK][AS] when AT
    float* As = smem;
    float* Bs = smem + STAGES * A_TILE;                     // [STAGES][BK][BN]

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LC) * 4, ln = (lane % LC) * 4;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool avec = (K % 4) == 0, bvec = (N % 4) == 0;
    const int tiles = (K + BK - 1) / BK;

    // Start the copies of tile t into stage s (an empty batch past the last tile
    // keeps the count uniform).
    auto issue = [&](int t, int s) {
        if (t < tiles) {
            const int k0 = t * BK;
            #pragma unroll
            for (int l = 0; l < (AT == 2 ? 0 : A_LOADS); ++l) {
                const int i = tid + l * THREADS, r = i / (BK / 4),
                          c = (i % (BK / 4)) * 4;
                const int gr = row0 + r, gc = k0 + c;
                // four 4-byte copies, each to its place in As[k][m]
                if (AT) {
                    #pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const bool inside = gr < M && gc + q < K;
                        __pipeline_memcpy_async(As + s * A_TILE + (c + q) * AS + r,
                                                inside ? A + (size_t)gr * K + gc + q
                                                       : A,
                                                4, inside ? 0 : 4);
                    }
                    continue;
                }
                float* dst = As + s * A_TILE + r * AS + c;
                if (avec) {
                    const int inside = gr < M && gc < K ? (K - gc < 4 ? K - gc : 4)
                                                        : 0;
                    __pipeline_memcpy_async(dst,
                                            inside ? A + (size_t)gr * K + gc : A,
                                            16, 16 - 4 * inside);
                } else {
                    *reinterpret_cast<float4*>(dst) =
                        gl_load4(A, M, K, gr, gc, false);
                }
            }
            #pragma unroll
            for (int l = 0; l < B_LOADS; ++l) {
                const int i = tid + l * THREADS, r = i / (BN / 4),
                          c = (i % (BN / 4)) * 4;
                float* dst = Bs + (s * BK + r) * BN + c;
                const int gr = k0 + r, gc = col0 + c;
                if (bvec) {
                    const int inside = gr < K && gc < N ? (N - gc < 4 ? N - gc : 4)
                                                        : 0;
                    __pipeline_memcpy_async(dst,
                                            inside ? B + (size_t)gr * N + gc : B,
                                            16, 16 - 4 * inside);
                } else {
                    *reinterpret_cast<float4*>(dst) =
                        gl_load4(B, K, N, gr, gc, false);
                }
            }
        }
        __pipeline_commit();
    };

    float acc[MI * 4][NI * 4] = {};
    // AT = 2: the next tile of A, on its way through registers
    float4 ra[AT == 2 ? A_LOADS : 1];
    if (AT == 2 && tiles > 0) {
        gl_fetch_a<BK, THREADS>(A, M, K, K, row0, 0, avec, tid, ra);
        gl_stash_a<BK, THREADS, AS>(As, tid, ra);
    }
    #pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) issue(t, t);
    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES;
        // tile t has landed (this thread's copies) ...
        __pipeline_wait_prior(STAGES - 2);
        // ... and everyone's; and stage (t-1) % STAGES is free
        __syncthreads();
        issue(t + STAGES - 1, (t + STAGES - 1) % STAGES);
        if (AT == 2 && t + 1 < tiles)
            gl_fetch_a<BK, THREADS>(A, M, K, K, row0, (t + 1) * BK, avec, tid, ra);
        const float* as = As + s * A_TILE;
        const float* bs = Bs + s * BK * BN;
        if (AT) {
            #pragma unroll
            for (int k = 0; k < BK; ++k)
                gl_warp_tile_fma<MI, NI, LR, LC>(as + k * AS, bs + k * BN, wm, wn,
                                                 lm, ln, acc);
            // stage (t+1) % STAGES was last read in tile t+1-STAGES, before this
            // tile's barrier
            if (AT == 2 && t + 1 < tiles)
                gl_stash_a<BK, THREADS, AS>(As + (t + 1) % STAGES * A_TILE, tid,
                                            ra);
            continue;
        }
        #pragma unroll
        for (int kk = 0; kk < BK; kk += 4) {
            // 4 k-values of each of the lane's rows
            float4 a[MI * 4];
            #pragma unroll
            for (int i = 0; i < MI * 4; ++i)
                a[i] = *reinterpret_cast<const float4*>(
                    as + (wm + (i / 4) * 4 * LR + lm + i % 4) * AS + kk);
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
                float b[NI * 4];
                #pragma unroll
                for (int j = 0; j < NI; ++j) {
                    const float4 v = *reinterpret_cast<const float4*>(
                        bs + (kk + q) * BN + wn + j * 4 * LC + ln);
                    b[4 * j + 0] = v.x; b[4 * j + 1] = v.y;
                    b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
                }
                #pragma unroll
                for (int i = 0; i < MI * 4; ++i) {
                    const float ai = q == 0   ? a[i].x
                                     : q == 1 ? a[i].y
                                     : q == 2 ? a[i].z
                                              : a[i].w;
                    #pragma unroll
                    for (int j = 0; j < NI * 4; ++j) acc[i][j] += ai * b[j];
                }
            }
        }
    }
    __pipeline_wait_prior(0);

    // (common/sgemm_tiles.cuh)
    gl_store_warp_tile<MI, NI, LR, LC>(C, M, N, row0, col0, wm, wn, lm, ln, acc);
}
// [kernel]
