// solutions/col_sums.cu — a solution of exercises/col_sums.cu: row i's element of
// column j is A[i * N + j].

__global__ void col_sums(const float* A, float* s, int M, int N)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N) return;
    float sum = 0.0f;
    for (int i = 0; i < M; ++i) sum += A[(size_t)i * N + j];
    s[j] = sum;
}
