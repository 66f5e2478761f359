// solutions/transpose_swizzled.cu — a solution of exercises/transpose_swizzled.cu:
// element (r, c) lives at tile[r][c ^ r]. Writing, a warp (fixed r, c = 0..31)
// covers the 32 columns c ^ r: 32 banks. Reading, a warp (fixed column r of the
// tile, rows x = 0..31) reads tile[x][r ^ x]: bank r ^ x, again all 32.

__global__ void transpose_swizzled(const float* A, float* B, int M, int N)
{
    __shared__ float tile[32][32];
    const int c = blockIdx.x * 32 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int row = blockIdx.y * 32 + r;
        if (row < M && c < N) tile[r][threadIdx.x ^ r] = A[(size_t)row * N + c];
    }
    __syncthreads();
    const int out_col = blockIdx.y * 32 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int out_row = blockIdx.x * 32 + r;
        if (out_row < N && out_col < M)
            B[(size_t)out_row * M + out_col] = tile[threadIdx.x][r ^ threadIdx.x];
    }
}
