// exercises/register_tile.cu — a 4 x 4 register tile per thread, fed from
// shared-memory tiles (chapter 6).
//
// C (M x N) = A (M x K) * B (K x N), row-major. A block of 16 x 16 threads computes
// a 64 x 64 tile of C; thread (tx, ty) owns rows ty + 16 i and columns tx + 16 j of
// it (i, j = 0..3: a warp's 16 lanes then read 16 neighbouring elements). In each
// phase the block stages a 64 x 16 tile of A and a 16 x 64 tile of B in shared
// memory (written for you). Per k a thread should load its 4 values of A and 4 of B
// into registers and do 16 multiply-adds: half a shared load per multiply-add,
// against 2 in chapter 2. Any M, N, K >= 1. Complete the TODO;
// gl.exercises.check("register_tile", code) runs it.

__global__ void register_tile(const float* A, const float* B, float* C, int M,
                              int N, int K)
{
    __shared__ float As[64][16];
    __shared__ float Bs[16][64];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int p = 0; p < K; p += 16) {
        // 4 elements of each tile per thread
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
            // TODO: a[i] = this thread's row ty + 16 i of As at k; b[j] = its
            // column tx + 16 j of Bs at k; then acc[i][j] += a[i] * b[j]
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            const int r = row0 + ty + 16 * i, c = col0 + tx + 16 * j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
}
