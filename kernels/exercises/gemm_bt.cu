// exercises/gemm_bt.cu — write a tiled SGEMM for C = A * B^T (chapters 2 and 9).
//
// A is M x K, B is N x K (so B^T is K x N), C is M x N, all row-major. A block of
// 16 x 16 threads computes a 16 x 16 tile of C through 16 x 16 tiles of A and of
// B^T in shared memory, as in chapter 2. Any M, N, K >= 1: tile slots outside the
// matrices hold 0, outputs outside C are not written. Complete the TODO;
// gl.exercises.check("gemm_bt", code) runs it at sizes that are multiples of
// nothing.

__global__ void gemm_bt(const float* A, const float* B, float* C, int M, int N,
                        int K)
{
    __shared__ float As[16][16];
    // Bs[k][j] = B^T[p + k][col0 + j] = B[col0 + j][p + k]
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int p = 0; p < K; p += 16) {
        As[ty][tx] = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx] : 0.0f;
        // TODO: load this phase's tile of B^T into Bs (mind which element of B each
        // slot holds)
        Bs[ty][tx] = 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
