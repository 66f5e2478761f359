// solutions/gemm_bt.cu — a solution of exercises/gemm_bt.cu: C = A * B^T with
// 16 x 16 shared tiles. Thread (tx, ty) loads B^T[p + ty][col0 + tx] = B[col0 +
// tx][p + ty]: consecutive tx read elements K apart (B's rows), so these loads are
// not coalesced; loading B[col0 + ty][p + tx] into Bs[tx][ty] is.

__global__ void gemm_bt(const float* A, const float* B, float* C, int M, int N,
                        int K)
{
    __shared__ float As[16][16];
    // padded: the transposing store below is conflict-free
    __shared__ float Bs[16][17];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    const int col0 = blockIdx.x * 16;
    float acc = 0.0f;
    for (int p = 0; p < K; p += 16) {
        As[ty][tx] = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx] : 0.0f;
        Bs[tx][ty] = (col0 + ty < N && p + tx < K)
                         ? B[(size_t)(col0 + ty) * K + p + tx]
                         : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
