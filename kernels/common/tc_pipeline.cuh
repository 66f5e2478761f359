// common/tc_pipeline.cuh — the body of Part V's pipelined tensor-core kernels
// (tc/03 and tc/04).
//
// A block of (BM/WM) x (BN/WN) warps computes a BM x BN tile of C (M x N, FP32,
// row-major) = A (M x K) * B (K x N). It copies a BM x BK tile of A and a BK x BN
// tile of B (BK = 64 bytes of a row: 32 FP16/BF16 or 16 FP32 values) into shared
// memory with 16-byte cp.async copies, STAGES tiles ahead (as sgemm/11), and each
// warp multiplies its WM x WN part, (WM/16) x (WN/16) accumulator fragments,
// reading fragments of A and B from shared memory: each loaded fragment of A serves
// WN/16 products and each of B WM/16. The rows of both tiles are padded by 16
// bytes, so that the 16 rows of a fragment start in different banks. PREC 0, 1, 2:
// FP16, BF16, FP32 rounded to TF32 (common/tc.cuh); PREC 3: FP32 as 3xTF32, each
// fragment split into a TF32 head and tail (gl_tc_split) and three products per
// pair (tc/02): the large ones summed per tile in fresh accumulators and added into
// FP32 ones on the CUDA cores, the two small ones in accumulators of their own over
// all of K (tc/02 says why).
// Sizes: any M, N, K >= 1: the copies zero-fill what lies outside the matrices
// (cp.async's src-size form; element by element where a row is not whole 16-byte
// groups), and fragments at C's edges are stored through shared memory with guarded
// stores. (The registry still holds tc/03's FP16/BF16/TF32 to multiples of 16, the
// sizes its tests cover.)
#pragma once
#include "common/tc.cuh"

template <int PREC, int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void
gl_tc_pipelined(const typename gl_tc<PREC>::in* __restrict__ A,
                const typename gl_tc<PREC>::in* __restrict__ B,
                float* __restrict__ C, int M, int N, int K,
                unsigned char* smem_raw)     // the kernel's dynamic shared memory
{
    using namespace nvcuda;
    using T = typename gl_tc<PREC>::in;
    using F = typename gl_tc<PREC>::frag;
    // a fragment's K: 16, or 8 for TF32
    constexpr int KS = gl_tc<PREC>::KS;
    constexpr bool SPLIT = PREC == 3;                        // 3xTF32
    // elements per 16-byte copy
    constexpr int V = 16 / sizeof(T);
    // 64 bytes of a row of A per stage
    constexpr int BK = 4 * V;
    // padded row strides (elements)
    constexpr int AS = BK + V, BS = BN + V;
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    // fragments per warp tile
    constexpr int FM = WM / 16, FN = WN / 16;
    static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0,
                  "warp tiles of whole fragments");
    static_assert((BM * BK / V) % THREADS == 0 && (BK * BN / V) % THREADS == 0,
                  "whole copies per thread");
    T* As = reinterpret_cast<T*>(smem_raw);                  // [STAGES][BM][AS]
    T* Bs = As + STAGES * BM * AS;                           // [STAGES][BK][BS]

    const int tid = threadIdx.x, warp = tid / 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = (K + BK - 1) / BK;

    // the copies of tile t into stage s (common/tc.cuh), zero-filled outside the
    // matrices; an empty batch past the end. 16-byte copies where rows are whole
    // 16-byte groups (K, N multiples of V), else element by element.
    const bool avec = K % V == 0, bvec = N % V == 0;
    // a block whose tiles all lie inside A and B (every block when M, N and K are
    // multiples of the tiles) runs the loop instantiated with copies that test
    // nothing: the edge code stays out of its loop
    const bool interior = row0 + BM <= M && col0 + BN <= N && K % BK == 0;

    // 3xTF32 sums each tile's large products in fresh accumulators (part) and adds
    // them into acc on the CUDA cores, rounding to nearest (the tensor cores' own
    // additions cut toward zero, so their error would grow with K); the small
    // products, 2^-11 of the large ones, stay in the tensor cores (small) over all
    // of K
    constexpr int SF = SPLIT ? FM : 1, SN = SPLIT ? FN : 1;
    wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc[FM][FN], part[SF][SN],
                                                         small[SF][SN];
    #pragma unroll
    for (int i = 0; i < FM; ++i)
        #pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::fill_fragment(acc[i][j], 0.0f);
            if (SPLIT)
                wmma::fill_fragment(small[SPLIT ? i : 0][SPLIT ? j : 0], 0.0f);
        }

    auto mainloop = [&](auto whole) {
    constexpr bool WHOLE = decltype(whole)::value;
    auto issue = [&](int t, int s) {
        if (t < tiles) {
            if constexpr (WHOLE) {
                gl_tc_stage_whole<BM, BK, AS, THREADS>(As + s * BM * AS, A, K, row0,
                                                       t * BK, tid);
                gl_tc_stage_whole<BK, BN, BS, THREADS>(Bs + s * BK * BS, B, N,
                                                       t * BK, col0, tid);
            } else {
                gl_tc_stage<BM, BK, AS, THREADS>(As + s * BM * AS, A, M, K, row0,
                                                 t * BK, avec, tid);
                gl_tc_stage<BK, BN, BS, THREADS>(Bs + s * BK * BS, B, K, N, t * BK,
                                                 col0, bvec, tid);
            }
        }
        __pipeline_commit();
    };
    #pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) issue(t, t);
    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES;
        // tile t has landed (this thread's copies) ...
        __pipeline_wait_prior(STAGES - 2);
        // ... and everyone's; stage (t-1) % STAGES is free
        __syncthreads();
        issue(t + STAGES - 1, (t + STAGES - 1) % STAGES);
        const T* as = As + s * BM * AS;
        const T* bs = Bs + s * BK * BS;
        if (SPLIT)
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                #pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::fill_fragment(part[SPLIT ? i : 0][SPLIT ? j : 0], 0.0f);
        #pragma unroll
        for (int kk = 0; kk < BK; kk += KS) {
            wmma::fragment<wmma::matrix_a, 16, 16, KS, F, wmma::row_major>
                a[FM], at[SPLIT ? FM : 1];
            wmma::fragment<wmma::matrix_b, 16, 16, KS, F, wmma::row_major>
                b[FN], bt[SPLIT ? FN : 1];
            #pragma unroll
            for (int i = 0; i < FM; ++i) {
                wmma::load_matrix_sync(a[i], as + (wm + 16 * i) * AS + kk, AS);
                // 3xTF32: head and tail
                if constexpr (SPLIT) gl_tc_split(a[i], at[i]);
                else gl_tc_round<PREC>(a[i]);
            }
            #pragma unroll
            for (int j = 0; j < FN; ++j) {
                wmma::load_matrix_sync(b[j], bs + kk * BS + wn + 16 * j, BS);
                if constexpr (SPLIT) gl_tc_split(b[j], bt[j]);
                else gl_tc_round<PREC>(b[j]);
            }
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                #pragma unroll
                for (int j = 0; j < FN; ++j) {
                    // tail x head, head x tail; head x head
                    if (SPLIT) {
                        auto& sm = small[SPLIT ? i : 0][SPLIT ? j : 0];
                        auto& p = part[SPLIT ? i : 0][SPLIT ? j : 0];
                        wmma::mma_sync(sm, at[SPLIT ? i : 0], b[j], sm);
                        wmma::mma_sync(sm, a[i], bt[SPLIT ? j : 0], sm);
                        wmma::mma_sync(p, a[i], b[j], p);
                    } else {
                        wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
                    }
                }
        }
        // accumulator fragments share one layout
        if (SPLIT)
            #pragma unroll
            for (int i = 0; i < FM; ++i)
                #pragma unroll
                for (int j = 0; j < FN; ++j)
                    for (int e = 0; e < acc[i][j].num_elements; ++e)
                        acc[i][j].x[e] += part[SPLIT ? i : 0][SPLIT ? j : 0].x[e];
    }
    };
    if (interior) mainloop(gl_bool<true>{});
    else mainloop(gl_bool<false>{});
    __pipeline_wait_prior(0);
    // every stage is free: the epilogue's staging
    __syncthreads();
    if (SPLIT)
        #pragma unroll
        for (int i = 0; i < FM; ++i)
            #pragma unroll
            for (int j = 0; j < FN; ++j)
                for (int e = 0; e < acc[i][j].num_elements; ++e)
                    acc[i][j].x[e] += small[SPLIT ? i : 0][SPLIT ? j : 0].x[e];
    // A fragment wholly inside C, on 32-byte aligned rows (N a multiple of 8), goes
    // straight to C; one at the edge goes through this warp's 16 x 16 corner of
    // shared memory and guarded stores.
    float* stage = reinterpret_cast<float*>(smem_raw) + warp * 16 * 16;
    const int lane = tid % 32;
    #pragma unroll
    for (int i = 0; i < FM; ++i)
        #pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int r = row0 + wm + 16 * i, c = col0 + wn + 16 * j;
            // the whole warp skips together
            if (r >= M || c >= N) continue;
            if (r + 16 <= M && c + 16 <= N && N % 8 == 0) {
                wmma::store_matrix_sync(C + (size_t)r * N + c, acc[i][j], N,
                                        wmma::mem_row_major);
                continue;
            }
            wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 16 * 16; e += 32)
                if (r + e / 16 < M && c + e % 16 < N)
                    C[(size_t)(r + e / 16) * N + c + e % 16] = stage[e];
            __syncwarp();
        }
}
