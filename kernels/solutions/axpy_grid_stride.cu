// solutions/axpy_grid_stride.cu — a solution of exercises/axpy_grid_stride.cu: a
// grid-stride loop. A warp's 32 lanes still touch 32 consecutive elements at each
// step (coalesced), whatever the grid.

__global__ void axpy_grid_stride(const float* x, const float* y, float* z, float a,
                                 int n)
{
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    for (int i = first; i < n; i += stride) z[i] = a * x[i] + y[i];
}
