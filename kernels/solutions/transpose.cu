// solutions/transpose.cu — a solution of exercises/transpose.cu: thread (x, y)
// writes B[bc + r][br + x], which is A[br + x][bc + r] = tile[x][r];
// consecutive x write consecutive addresses of B.

__global__ void transpose(const float* A, float* B, int M, int N)
{
    __shared__ float tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int row = blockIdx.y * 32 + r;
        if (row < M && c < N) tile[r][threadIdx.x] = A[(size_t)row * N + c];
    }
    __syncthreads();
    // a row of A: a column of B
    const int out_col = blockIdx.y * 32 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        // a column of A: a row of B
        const int out_row = blockIdx.x * 32 + r;
        if (out_row < N && out_col < M)
            B[(size_t)out_row * M + out_col] = tile[threadIdx.x][r];
    }
}
