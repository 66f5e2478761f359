// blas/gemv/01_shared_x.cu — GEMV steps 1 and 2: chunks of x staged in shared
// memory.
//
// What changed since 00_row_per_thread: the block loads BLOCK entries of x at a
// time into shared memory (one per thread), waits, lets every thread use them for
// its row, and waits again before the next chunk. Every thread of a block runs the
// same number of chunks and reaches every barrier; threads past the last row load
// their x entry and skip only the multiply-adds (the article's first version put
// the barriers inside the row guard, which is only safe when BLOCK divides M).
// Step 1 keeps the eight-block launch; step 2 sweeps the launch geometry (grid and
// block sizes).
// Expected bottleneck: the launch (too few blocks) in step 1; DRAM bandwidth for A
// once the grid fills the GPU. x was already served well by the caches, so staging
// it buys little.
// Sizes: any M, N >= 0.

#include "common/blas.cuh"

// [kernel]
template <int BLOCK, int TRANS>
__global__ void gemv_shared_x(const float* __restrict__ A, int aoff, int lda,
                              const float* __restrict__ x, int xoff, int incx,
                              float* __restrict__ y, int yoff, int incy,
                              int M, int N, float alpha, float beta)
{
    __shared__ float xs[BLOCK];
    const long long stride = (long long)gridDim.x * BLOCK;
    for (long long base = blockIdx.x * (long long)BLOCK; base < M; base += stride) {
        const long long i = base + threadIdx.x;
        float sum = 0.0f;
        for (long long chunk = 0; chunk < N; chunk += BLOCK) {
            const long long j = chunk + threadIdx.x;
            xs[threadIdx.x] = j < N ? x[gl_vec(xoff, incx, j)] : 0.0f;
            __syncthreads();
            const long long len = N - chunk < BLOCK ? N - chunk : BLOCK;
            if (i < M)
                for (long long k = 0; k < len; ++k)
                    sum += A[gl_op<TRANS>(aoff, lda, i, chunk + k)] * xs[k];
            __syncthreads();
        }
        if (i < M) {
            float* out = y + gl_vec(yoff, incy, i);
            *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
        }
    }
}
// [kernel]
