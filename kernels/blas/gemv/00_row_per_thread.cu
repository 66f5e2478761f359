// blas/gemv/00_row_per_thread.cu — GEMV step 0: one thread per output element, few
// blocks.
//
// y = alpha * op(A) x + beta * y, A column-major (common/blas.cuh), op(A) = A ('N')
// or A^T ('T'), op(A) is M x N. Thread i computes the dot product of row i of op(A)
// with x; a grid-stride loop covers the rows when there are more rows than threads.
// The article launched BLOCK = 256 threads in ceil(M / 512) blocks: 8 blocks for M
// = 4096, on a GPU with 24 multiprocessors. On an H200 (132 SMs) that leaves 124
// SMs idle.
// Coalescing: with 'N', lanes i and i+1 read A[i + j*lda] and A[i+1 + j*lda],
// neighbours; with 'T' they read A[j + i*lda] and A[j + (i+1)*lda], lda floats
// apart.
// beta = 0 means y is never read (a NaN there must not leak into the result).
// Sizes: any M, N >= 0.

#include "common/blas.cuh"

// [kernel]
template <int TRANS>
__global__ void gemv_row_per_thread(const float* __restrict__ A, int aoff, int lda,
                                    const float* __restrict__ x, int xoff, int incx,
                                    float* __restrict__ y, int yoff, int incy,
                                    int M, int N, float alpha, float beta)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M;
         i += stride) {
        float sum = 0.0f;
        for (long long j = 0; j < N; ++j)
            sum += A[gl_op<TRANS>(aoff, lda, i, j)] * x[gl_vec(xoff, incx, j)];
        float* out = y + gl_vec(yoff, incy, i);
        *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
    }
}
// [kernel]
