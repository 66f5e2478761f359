// blas/gemm/05_warp_tiled.cu — column-major GEMM step 5: Part IV's warp tiles, for
// every transpose, split over K when C is small.
//
// C = alpha * op(A) op(B) + beta * C, all column-major with leading dimensions and
// offsets (common/blas.cuh).
// What changed since 04_double_buffer: the block, warp and lane tiles of
// sgemm/10_double_buffer (common/sgemm_tiles.cuh: BM x BN block tiles of WM x WN
// warp tiles, 4 x 4 sub-tiles per lane, the A tile stored as As[k][m] and the B
// tile as Bs[k][n], two stages fed through registers, blocks in bands of GROUP
// block-rows), and sgemm/12_interior's two additions: LANES (a warp's lanes as
// LANES rows x 32/LANES columns of sub-tiles) and the main loop without bounds
// checks for the blocks whose tiles lie inside the matrices (gemm_main_loop below).
// Column-major storage read as row-major is the transpose, so each operand comes in
// one of two ways, and the transpose flags choose:
//   op(A) = A   ('N'): memory holds k rows of m (lda apart); a 16-byte load of 4
//                      consecutive m lands in As[k][m] as it is;
//   op(A) = A^T ('T'): memory holds m rows of k; 4 consecutive k are transposed
//                      into As on the way;
//   op(B) = B   ('N'): memory holds n rows of k; transposed into Bs[k][n] on the
//                      way;
//   op(B) = B^T ('T'): memory holds k rows of n; lands in Bs[k][n] as it is.
// 16-byte loads where a leading dimension and an offset are multiples of 4 (else
// float by float), and C written 4 rows (one column's 16 contiguous bytes) at a
// time on the same condition. beta = 0 never reads C (a NaN there cannot leak).
// SPLITK > 1 is for a C of too few tiles to fill the GPU (a skinny C, a small
// square one, a long K): K is cut into SPLITK slices of whole BK steps, one per
// blockIdx.y, so SPLITK blocks share each tile. Each writes its partial tile to
// partials[slice][tile] (SPLITK * tiles * BM * BN floats; thread by thread, so the
// stores are coalesced), and the last of a tile's SPLITK blocks to finish (its
// counter in counters[tile], advanced with atomicAdd after a __threadfence, and
// reset by that block) adds the SPLITK partials in slice order and writes C =
// alpha * sum + beta * C as SPLITK = 1 does: one launch, the same bits every run,
// beta honoured (no atomics into C, which would need C zeroed first). counters is
// zeroed once when allocated.
// A strided batch is one launch: blockIdx.z picks the product, sa, sb, sc elements
// apart (0: shared), SPLITK 1.
// Shared memory is dynamic: 4 * 2 * (BK * (BM + 4) + BK * (BN + 4)) bytes. Sizes:
// any M, N, K >= 0.

#include "common/blas.cuh"
#include "common/sgemm_tiles.cuh"

// [kernel]
// The main loop over `tiles` BK steps of K from kbase. INSIDE = true: the block's
// tiles of op(A) and op(B) lie inside the matrices in whole 16-byte groups, so the
// loads are plain LDG.128 with no checks and no scalar fall-back between the FMAs,
// and the next tile's loads are issued on every step (the last reloads its own
// tile, which nobody reads): straight-line code but for the branch back. Blocks at
// C's edges, operands of leading dimensions or offsets that are not multiples of 4,
// and a block whose K slice ends inside a step take the checked loop.
template <int BM, int BN, int BK, int WM, int WN, int LANES, int TA, int TB,
          bool INSIDE, int MI, int NI>
__device__ __forceinline__ void gemm_main_loop(const float* __restrict__ a, int lda,
                                               const float* __restrict__ b, int ldb,
                                               int M, int N, int K, int kbase,
                                               int tiles, int row0, int col0,
                                               bool avec, bool bvec, float* smem,
                                               int tid, int wm, int wn, int lm,
                                               int ln, float (&acc)[MI * 4][NI * 4])
{
    // (common/sgemm_tiles.cuh)
    using W = gl_warp_tiling<BM, BN, BK, WM, WN, LANES>;
    constexpr int THREADS = W::THREADS, A_LOADS = W::A_LOADS, B_LOADS = W::B_LOADS;
    // padded rows: the transposing stores are conflict-free
    constexpr int AP = BM + 4, BP = BN + 4;
    // [2][BK][AP]
    auto As = reinterpret_cast<float (*)[BK][AP]>(smem);
    // [2][BK][BP]
    auto Bs = reinterpret_cast<float (*)[BK][BP]>(smem + 2 * BK * AP);

    float4 ra[A_LOADS], rb[B_LOADS];
    // The next tile, global memory -> registers: op(A)'s BM x BK and op(B)'s
    // BK x BN, in their storage's rows.
    auto fetch = [&](int k0) {
        #pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS;
            if (TA == 0) {
                const int r = i / (BM / 4), c = (i % (BM / 4)) * 4;
                ra[l] = INSIDE ? *reinterpret_cast<const float4*>(
                                     a + (size_t)(k0 + r) * lda + row0 + c)
                               : gl_load4(a, K, M, k0 + r, row0 + c, avec, lda);
            } else {
                const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
                ra[l] = INSIDE ? *reinterpret_cast<const float4*>(
                                     a + (size_t)(row0 + r) * lda + k0 + c)
                               : gl_load4(a, M, K, row0 + r, k0 + c, avec, lda);
            }
        }
        #pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS;
            if (TB == 1) {
                const int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
                rb[l] = INSIDE ? *reinterpret_cast<const float4*>(
                                     b + (size_t)(k0 + r) * ldb + col0 + c)
                               : gl_load4(b, K, N, k0 + r, col0 + c, bvec, ldb);
            } else {
                const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
                rb[l] = INSIDE ? *reinterpret_cast<const float4*>(
                                     b + (size_t)(col0 + r) * ldb + k0 + c)
                               : gl_load4(b, N, K, col0 + r, k0 + c, bvec, ldb);
            }
        }
    };
    // registers -> stage s: as they are, or transposed
    auto stash = [&](int s) {
        #pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS;
            if (TA == 0) {
                const int r = i / (BM / 4), c = (i % (BM / 4)) * 4;
                *reinterpret_cast<float4*>(&As[s][r][c]) = ra[l];
            } else {
                const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
                As[s][c + 0][r] = ra[l].x; As[s][c + 1][r] = ra[l].y;
                As[s][c + 2][r] = ra[l].z; As[s][c + 3][r] = ra[l].w;
            }
        }
        #pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS;
            if (TB == 1) {
                const int r = i / (BN / 4), c = (i % (BN / 4)) * 4;
                *reinterpret_cast<float4*>(&Bs[s][r][c]) = rb[l];
            } else {
                const int r = i / (BK / 4), c = (i % (BK / 4)) * 4;
                Bs[s][c + 0][r] = rb[l].x; Bs[s][c + 1][r] = rb[l].y;
                Bs[s][c + 2][r] = rb[l].z; Bs[s][c + 3][r] = rb[l].w;
            }
        }
    };

    if (tiles > 0) {
        fetch(kbase);
        stash(0);
    }
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        // no branch: the last reloads itself
        if (INSIDE) fetch(kbase + (t + 1 < tiles ? t + 1 : t) * BK);
        else if (t + 1 < tiles) fetch(kbase + (t + 1) * BK);
        #pragma unroll
        for (int k = 0; k < BK; ++k)
            gl_warp_tile_fma<MI, NI, W::LR, W::LC>(As[s][k], Bs[s][k], wm, wn, lm,
                                                   ln, acc);
        // stage s ^ 1 was left at the last barrier
        if (INSIDE || t + 1 < tiles) stash(s ^ 1);
        __syncthreads();
    }
}

template <int BM, int BN, int BK, int WM, int WN, int LANES, int GROUP, int MINB,
          int SPLITK, int TA, int TB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
gemm_warp_tiled(const float* __restrict__ A, int aoff, int lda,
                const float* __restrict__ B, int boff, int ldb,
                float* __restrict__ C, int coff, int ldc, int M, int N, int K,
                float alpha, float beta, long long sa, long long sb,
                long long sc, unsigned int* counters, float* partials)
{
    // (common/sgemm_tiles.cuh)
    using W = gl_warp_tiling<BM, BN, BK, WM, WN, LANES>;
    constexpr int THREADS = W::THREADS, LR = W::LR, LC = W::LC, MI = W::MI,
                  NI = W::NI;
    extern __shared__ __align__(16) float smem[];

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LC) * 4, ln = (lane % LC) * 4;
    // (common/sgemm_tiles.cuh)
    const int2 corner = gl_band_tile<BM, BN, GROUP>(M, N);
    const int row0 = corner.x, col0 = corner.y;
    // product blockIdx.z of a batch
    const long long ea = aoff + sa * blockIdx.z, eb = boff + sb * blockIdx.z;
    const float* a = A + ea; const float* b = B + eb;
    const bool avec = ea % 4 == 0 && lda % 4 == 0,
               bvec = eb % 4 == 0 && ldb % 4 == 0;

    float acc[MI * 4][NI * 4] = {};
    // this block's BK steps of K: all of them, or slice blockIdx.y of SPLITK
    const int steps = (K + BK - 1) / BK, per = (steps + SPLITK - 1) / SPLITK;
    const int first = SPLITK == 1 ? 0 : min((int)blockIdx.y * per, steps);
    const int tiles = SPLITK == 1 ? steps : min(first + per, steps) - first,
              kbase = first * BK;
    const bool inside = avec && bvec && row0 + BM <= M && col0 + BN <= N
                        && kbase + tiles * BK <= K;
    if (inside)
        gemm_main_loop<BM, BN, BK, WM, WN, LANES, TA, TB, true, MI, NI>(
            a, lda, b, ldb, M, N, K, kbase, tiles, row0, col0, avec, bvec, smem,
            tid, wm, wn, lm, ln, acc);
    else
        gemm_main_loop<BM, BN, BK, WM, WN, LANES, TA, TB, false, MI, NI>(
            a, lda, b, ldb, M, N, K, kbase, tiles, row0, col0, avec, bvec, smem,
            tid, wm, wn, lm, ln, acc);

    if (SPLITK > 1) {
        // partial tiles meet: thread tid's accumulators are float4 e of the tile's
        // slot at [e][tid]
        // float4s of accumulators per thread
        constexpr int QUADS = MI * 4 * NI;
        __shared__ bool last;
        float4* slot = reinterpret_cast<float4*>(partials);
        const size_t tile = blockIdx.x, tile_quads = (size_t)QUADS * THREADS;
        float4* mine =
            slot + ((size_t)blockIdx.y * gridDim.x + tile) * tile_quads + tid;
        #pragma unroll
        for (int e = 0; e < QUADS; ++e) {
            const int r = e / NI, c4 = (e % NI) * 4;
            mine[(size_t)e * THREADS] = make_float4(acc[r][c4], acc[r][c4 + 1],
                                                    acc[r][c4 + 2], acc[r][c4 + 3]);
        }
        // the partials are visible before the count says so
        __threadfence();
        __syncthreads();
        if (tid == 0) last = atomicAdd(counters + tile, 1u) == SPLITK - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
        #pragma unroll
        for (int e = 0; e < QUADS; ++e) {
            float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            // slice order: the same bits every run
            for (int q = 0; q < SPLITK; ++q) {
                const float4 v =
                    __ldcg(slot + ((size_t)q * gridDim.x + tile) * tile_quads
                           + (size_t)e * THREADS + tid);
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }
            const int r = e / NI, c4 = (e % NI) * 4;
            acc[r][c4] = sum.x; acc[r][c4 + 1] = sum.y;
            acc[r][c4 + 2] = sum.z; acc[r][c4 + 3] = sum.w;
        }
        // ready for the next launch
        if (tid == 0) counters[tile] = 0u;
    }

    // C: column by column, the lane's 4 consecutive rows of each sub-tile in one
    // 16-byte access
    const long long ec = coff + sc * blockIdx.z;
    float* c = C + ec;
    const bool cvec = ec % 4 == 0 && ldc % 4 == 0;
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI * 4; ++j) {
            const int r = row0 + wm + i * 4 * LR + lm;
            const int col = col0 + wn + (j / 4) * 4 * LC + ln + j % 4;
            if (col >= N || r >= M) continue;
            float* out = c + (size_t)col * ldc + r;
            float4 v =
                make_float4(alpha * acc[4 * i][j], alpha * acc[4 * i + 1][j],
                            alpha * acc[4 * i + 2][j], alpha * acc[4 * i + 3][j]);
            if (cvec && r + 3 < M) {
                if (beta != 0.0f) {
                    const float4 old = *reinterpret_cast<const float4*>(out);
                    v.x += beta * old.x; v.y += beta * old.y;
                    v.z += beta * old.z; v.w += beta * old.w;
                }
                *reinterpret_cast<float4*>(out) = v;
            } else {
                const float vv[4] = {v.x, v.y, v.z, v.w};
                for (int q = 0; q < 4 && r + q < M; ++q)
                    out[q] = vv[q] + (beta == 0.0f ? 0.0f : beta * out[q]);
            }
        }
}
// [kernel]
