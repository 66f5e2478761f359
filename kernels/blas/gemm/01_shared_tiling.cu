// blas/gemm/01_shared_tiling.cu — column-major GEMM step 1: TILE x TILE shared
// tiles, one output per thread.
//
// What changed since 00_naive: a block of TILE x TILE threads computes a
// TILE x TILE tile of C in phases of TILE along K; in each phase the threads load
// one element of op(A)'s tile and one of op(B)'s into shared memory (zero past the
// edges), wait, accumulate TILE products, and wait again. As is stored As[k][i] so
// that the inner loop reads it along i (consecutive lanes, consecutive words); Bs
// is Bs[j][k], read along k (one word per row of lanes: a broadcast).
// Expected bottleneck: shared-memory loads (two per multiply-add) and barriers.
// Sizes: any M, N, K >= 0; every thread reaches every barrier.

#include "common/blas.cuh"

// [kernel]
template <int TILE, int TA, int TB>
__global__ void gemm_shared_tiling(const float* __restrict__ A, int aoff, int lda,
                                   const float* __restrict__ B, int boff, int ldb,
                                   float* __restrict__ C, int coff, int ldc, int M,
                                   int N, int K, float alpha, float beta)
{
    __shared__ float As[TILE][TILE];   // As[k][i]
    __shared__ float Bs[TILE][TILE];   // Bs[j][k]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long i = blockIdx.x * (long long)TILE + tx;
    const long long j = blockIdx.y * (long long)TILE + ty;
    float sum = 0.0f;
    for (long long t = 0; t < K; t += TILE) {
        As[ty][tx] = (i < M && t + ty < K) ? A[gl_op<TA>(aoff, lda, i, t + ty)]
                                           : 0.0f;
        Bs[ty][tx] = (t + tx < K && j < N) ? B[gl_op<TB>(boff, ldb, t + tx, j)]
                                           : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int l = 0; l < TILE; ++l)
            sum += As[l][tx] * Bs[ty][l];
        __syncthreads();
    }
    if (i < M && j < N) {
        float* c = C + gl_mat(coff, ldc, i, j);
        *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
    }
}
// [kernel]
