// blas/gemm/00_naive.cu — column-major GEMM step 0: one thread per element of C.
//
// C = alpha * op(A) op(B) + beta * C, column-major (common/blas.cuh); op(A) is
// M x K, op(B) K x N. Thread (x, y) computes C(i, j) with i = blockIdx.x*blockDim.x
// + x (rows: in column-major storage, neighbouring rows are neighbouring addresses,
// so a warp's stores of C and loads of A ('N') coalesce) and j from the y
// coordinate. Two loads per multiply-add, no reuse.
// beta = 0: C is never read. Sizes: any M, N, K >= 0.

#include "common/blas.cuh"

// [kernel]
template <int TA, int TB>
__global__ void gemm_naive(const float* __restrict__ A, int aoff, int lda,
                           const float* __restrict__ B, int boff, int ldb,
                           float* __restrict__ C, int coff, int ldc, int M, int N,
                           int K, float alpha, float beta)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long j = blockIdx.y * (long long)blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float sum = 0.0f;
    for (long long l = 0; l < K; ++l)
        sum += A[gl_op<TA>(aoff, lda, i, l)] * B[gl_op<TB>(boff, ldb, l, j)];
    float* c = C + gl_mat(coff, ldc, i, j);
    *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}
// [kernel]
