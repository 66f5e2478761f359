// solutions/tiled_sgemm.cu — a solution of exercises/tiled_sgemm.cu: consecutive tx
// read consecutive columns of B's row p + ty (coalesced), and a barrier on each
// side of the multiply.

__global__ void tiled_sgemm(const float* A, const float* B, float* C, int M, int N,
                            int K)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int p = 0; p < K; p += 16) {
        As[ty][tx] = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx] : 0.0f;
        Bs[ty][tx] = (p + ty < K && col < N) ? B[(size_t)(p + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
