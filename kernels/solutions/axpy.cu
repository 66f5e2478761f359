// solutions/axpy.cu — a solution of exercises/axpy.cu: one element per thread,
// guarded at the end.

__global__ void axpy(const float* x, const float* y, float* z, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
}
