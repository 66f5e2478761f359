// solutions/micro_tile.cu — a solution of exercises/micro_tile.cu: 2 + 2 loads feed
// 4 multiply-adds.

__global__ void micro_tile(const float* A, const float* B, float* C, int M, int N,
                           int K)
{
    const int row0 = (blockIdx.y * 16 + threadIdx.y) * 2,
              col0 = (blockIdx.x * 16 + threadIdx.x) * 2;
    float acc[2][2] = {};
    for (int k = 0; k < K; ++k) {
        float a[2], b[2];
        for (int i = 0; i < 2; ++i)
            a[i] = row0 + i < M ? A[(size_t)(row0 + i) * K + k] : 0.0f;
        for (int j = 0; j < 2; ++j)
            b[j] = col0 + j < N ? B[(size_t)k * N + col0 + j] : 0.0f;
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) acc[i][j] += a[i] * b[j];
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            if (row0 + i < M && col0 + j < N)
                C[(size_t)(row0 + i) * N + col0 + j] = acc[i][j];
}
