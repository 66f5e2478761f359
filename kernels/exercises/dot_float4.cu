// exercises/dot_float4.cu — a DOT that reads 16 bytes at a time (chapter 12).
//
// result = sum_i x[i] * y[i], i < n, with x and y 16-byte aligned (CuPy's arrays
// are). A grid of blocks of 256 threads strides through the vectors four floats at
// a time (float4: one LDG.128); n need not be a multiple of 4. Each block adds its
// sum into *result with one atomicAdd (result starts at 0). Complete the TODO;
// gl.exercises.check("dot_float4", code) runs it at awkward sizes.

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
    // TODO: the last n % 4 elements, which no float4 covers
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(result, partial[0]);
}
