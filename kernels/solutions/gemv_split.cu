// solutions/gemv_split.cu — a solution of exercises/gemv_split.cu: a row's 32
// partial sums are the 32 lanes of one warp, so five shuffles add them, with no
// shared memory and no barrier.

__global__ void gemv_split(const float* A, const float* x, float* y, int M, int N)
{
    const int row = blockIdx.x * 8 + threadIdx.y, lane = threadIdx.x;
    float sum = 0.0f;
    if (row < M)
        for (int j = lane; j < N; j += 32) sum += A[(size_t)row * N + j] * x[j];
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (row < M && lane == 0) y[row] = sum;
}
