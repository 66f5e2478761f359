// solutions/dot_strided.cu — a solution of exercises/dot_strided.cu (chapter 7):
// BLAS increments, negative ones counted from the high end of the storage, and a
// shared-memory tree per block.

__device__ __forceinline__ long long blas_index(long long i, int inc, int n)
{
    return inc >= 0 ? i * inc : (long long)(n - 1 - i) * -inc;
}

__global__ void dot_strided(const float* x, int incx, const float* y, int incy,
                            int n, float* result)
{
    __shared__ float partial[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = x[blas_index(i, incx, n)] * y[blas_index(i, incy, n)];
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}
