// solutions/register_tile.cu — a solution of exercises/register_tile.cu: 8 shared
// loads, 16 FMAs per k.

__global__ void register_tile(const float* A, const float* B, float* C, int M,
                              int N, int K)
{
    __shared__ float As[64][16];
    __shared__ float Bs[16][64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int p = 0; p < K; p += 16) {
        for (int e = tid; e < 64 * 16; e += 256) {
            const int ar = e / 16, ak = e % 16, bk = e / 64, bc = e % 64;
            As[ar][ak] = (row0 + ar < M && p + ak < K)
                             ? A[(size_t)(row0 + ar) * K + p + ak]
                             : 0.0f;
            Bs[bk][bc] = (p + bk < K && col0 + bc < N)
                             ? B[(size_t)(p + bk) * N + col0 + bc]
                             : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < 16; ++k) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = As[ty + 16 * i][k];
            for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16 * j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const int r = row0 + ty + 16 * i, c = col0 + tx + 16 * j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
}
