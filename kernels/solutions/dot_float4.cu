// solutions/dot_float4.cu — a solution of exercises/dot_float4.cu: the first n % 4
// threads of the grid each add one of the last elements.

__global__ void dot_float4(const float* x, const float* y, int n, float* result)
{
    __shared__ float partial[256];
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    const int threads = gridDim.x * blockDim.x,
              t = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int i = t; i < n / 4; i += threads) {
        const float4 a = x4[i], b = y4[i];
        sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    if (t < n % 4) sum += x[n / 4 * 4 + t] * y[n / 4 * 4 + t];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}
