// blas/gemv/03_row_col_split.cu — GEMV step 3: a 2-D block, ROWS rows by SPLITS
// column chunks.
//
// What changed since 01_shared_x: no shared x. A block of ROWS x SPLITS threads
// (32 x 16 in the article) covers ROWS rows of op(A); thread (r, s) sums row r over
// the s-th of SPLITS column chunks, writes its partial sum to shared memory, and
// after a barrier the SPLITS partials of each row are added by the threads with s
// = 0. One block per ROWS rows: ceil(M / ROWS) blocks, 128 for M = 4096, enough to
// reach every SM; and each thread's serial chain is N / SPLITS long instead of N.
// Coalescing: lanes are consecutive rows, so with 'N' a warp reads 32 neighbouring
// floats of a column of A; with 'T' those rows are columns of A, lda apart (cuBLAS
// uses a different kernel for 'T').
// Expected bottleneck: DRAM bandwidth for A ('N').
// Sizes: any M, N >= 0.

#include "common/blas.cuh"

// [kernel]
template <int ROWS, int SPLITS, int TRANS>
__global__ void gemv_row_col_split(const float* __restrict__ A, int aoff, int lda,
                                   const float* __restrict__ x, int xoff, int incx,
                                   float* __restrict__ y, int yoff, int incy,
                                   int M, int N, float alpha, float beta)
{
    __shared__ float partial[SPLITS][ROWS];
    const long long chunk = (N + SPLITS - 1) / SPLITS;
    const long long c0 = threadIdx.y * chunk;
    const long long c1 = c0 + chunk < N ? c0 + chunk : N;
    for (long long base = blockIdx.x * (long long)ROWS; base < M;
         base += (long long)gridDim.x * ROWS) {
        const long long i = base + threadIdx.x;
        float sum = 0.0f;
        if (i < M)
            for (long long j = c0; j < c1; ++j)
                sum += A[gl_op<TRANS>(aoff, lda, i, j)] * x[gl_vec(xoff, incx, j)];
        partial[threadIdx.y][threadIdx.x] = sum;
        __syncthreads();
        if (threadIdx.y == 0 && i < M) {
            float total = 0.0f;
            for (int s = 0; s < SPLITS; ++s) total += partial[s][threadIdx.x];
            float* out = y + gl_vec(yoff, incy, i);
            *out = alpha * total + (beta == 0.0f ? 0.0f : beta * *out);
        }
        __syncthreads();
    }
}
// [kernel]
