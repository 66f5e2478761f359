// exercises/axpy_grid_stride.cu — z = a * x + y with however many blocks the launch
// gives (chapter 10).
//
// Chapter 1's kernel gave each element its own thread, so its grid had to grow with
// n. Here the grid is fixed (sized to the GPU: a whole number of waves on its SMs,
// say) and each thread walks the vector with a stride of the whole grid's thread
// count: thread t takes elements t, t + T, t + 2T, ... Launched with 4 blocks of
// 256 threads at every n; any n >= 1.
// Complete the TODO; gl.exercises.check("axpy_grid_stride", code) runs it at
// awkward sizes.

__global__ void axpy_grid_stride(const float* x, const float* y, float* z, float a,
                                 int n)
{
    const int first = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    // TODO: a loop over this thread's elements, first, first + stride, ..., below n
    if (first < n) z[first] = a * x[first] + y[first];
}
