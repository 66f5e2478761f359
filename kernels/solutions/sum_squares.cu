// solutions/sum_squares.cu — a solution of exercises/sum_squares.cu: a shuffle
// tree, then lane 0's atomic.

__global__ void sum_squares(const float* x, int n, float* result)
{
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x)
        sum += x[i] * x[i];
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x % 32 == 0) atomicAdd(result, sum);
}
