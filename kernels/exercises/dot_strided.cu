// exercises/dot_strided.cu — write a DOT that takes BLAS increments (chapter 7).
//
// result = sum_i x[i * incx] * y[i * incy] for i < n, where an increment may be
// negative: then, as in the reference BLAS, the vector's first element lies at the
// high end of its storage, at index (n - 1) * |inc|, and it is walked downwards.
// incx and incy are never 0.
// Launched with enough blocks of 256 threads to cover n (any n >= 1); result starts
// at 0.
// Complete the two TODOs; gl.exercises.check("dot_strided", code) runs it at
// awkward sizes and strides.

__global__ void dot_strided(const float* x, int incx, const float* y, int incy,
                            int n, float* result)
{
    __shared__ float partial[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (i < n) {
        // TODO 1: the index of element i in each vector (mind negative increments)
        v = x[i] * y[i];
    }
    partial[threadIdx.x] = v;
    __syncthreads();
    // TODO 2: add the block's 256 partial sums (a tree in shared memory) and add
    // the total to *result
}
