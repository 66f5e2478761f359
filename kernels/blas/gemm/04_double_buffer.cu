// blas/gemm/04_double_buffer.cu — column-major GEMM step 4: two shared buffers, one
// barrier per phase.
//
// What changed since 02_register_tiling (TT = 8): As and Bs are doubled. While the
// block multiplies out of buffer `buf`, each thread loads the next phase's elements
// of op(A) and op(B) into registers; after the multiply-adds it stores them into
// buffer buf^1 and the block crosses one barrier, instead of two per phase: nobody
// can still be reading buf^1, because everyone passed the previous barrier after
// finishing with it. Ordinary loads into registers, no asynchronous copies.
// Expected bottleneck: instruction issue; the prefetch lets global-load latency
// overlap the multiply-adds.
// Sizes: any M, N, K >= 0.

#include "common/blas.cuh"

// [kernel]
template <int TT, int TA, int TB>
__global__ void __launch_bounds__(256)
gemm_double_buffer(const float* __restrict__ A, int aoff, int lda,
                   const float* __restrict__ B, int boff, int ldb,
                   float* __restrict__ C, int coff, int ldc, int M, int N,
                   int K, float alpha, float beta)
{
    constexpr int BT = 16 * TT, KT = 16, LOADS = KT * BT / 256;
    __shared__ float As[2][KT][BT];
    __shared__ float Bs[2][BT][KT];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const long long ib = blockIdx.x * (long long)BT,
                    jb = blockIdx.y * (long long)BT;

    float pa[LOADS], pb[LOADS];
    // this thread's elements of the phase starting at t
    auto fetch = [&](long long t) {
        #pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            const int e = tid + q * 256;
            const int ar = e % BT, ak = e / BT, bk = e % KT, bc = e / KT;
            pa[q] = (ib + ar < M && t + ak < K)
                        ? A[gl_op<TA>(aoff, lda, ib + ar, t + ak)]
                        : 0.0f;
            pb[q] = (t + bk < K && jb + bc < N)
                        ? B[gl_op<TB>(boff, ldb, t + bk, jb + bc)]
                        : 0.0f;
        }
    };
    auto store = [&](int buf) {
        #pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            const int e = tid + q * 256;
            As[buf][e / BT][e % BT] = pa[q];
            Bs[buf][e / KT][e % KT] = pb[q];
        }
    };

    float acc[TT][TT] = {};
    fetch(0);
    store(0);
    __syncthreads();
    int buf = 0;
    for (long long t = 0; t < K; t += KT) {
        const bool more = t + KT < K;
        if (more) fetch(t + KT);
        #pragma unroll
        for (int l = 0; l < KT; ++l) {
            float ra[TT], rb[TT];
            #pragma unroll
            for (int u = 0; u < TT; ++u) ra[u] = As[buf][l][tx + 16 * u];
            #pragma unroll
            for (int v = 0; v < TT; ++v) rb[v] = Bs[buf][ty + 16 * v][l];
            #pragma unroll
            for (int u = 0; u < TT; ++u)
                #pragma unroll
                for (int v = 0; v < TT; ++v)
                    acc[u][v] += ra[u] * rb[v];
        }
        if (more) store(buf ^ 1);
        buf ^= 1;
        __syncthreads();
    }
    #pragma unroll
    for (int u = 0; u < TT; ++u)
        #pragma unroll
        for (int v = 0; v < TT; ++v) {
            const long long i = ib + tx + 16 * u, j = jb + ty + 16 * v;
            if (i < M && j < N) {
                float* c = C + gl_mat(coff, ldc, i, j);
                *c = alpha * acc[u][v] + (beta == 0.0f ? 0.0f : beta * *c);
            }
        }
}
// [kernel]
