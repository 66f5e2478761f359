// exercises/micro_tile.cu — give each thread a 2 x 2 micro-tile of C (chapter 5).
//
// C (M x N) = A (M x K) * B (K x N), row-major. Blocks of 16 x 16 threads; thread
// (tx, ty) of block (bx, by) owns rows row0, row0 + 1 and columns col0, col0 + 1 of
// C, with row0 = (by * 16 + ty) * 2 and col0 = (bx * 16 + tx) * 2. For each k it
// should load 2 values of A and 2 of B and do 4 multiply-adds. Any M, N, K >= 1:
// rows or columns past the edge are read as 0 and never written.
// Complete the TODOs; gl.exercises.check("micro_tile", code) runs it at awkward
// sizes.

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
        // TODO 1: load b[0], b[1] from row k of B (columns col0, col0 + 1), 0 past
        // the edge
        b[0] = b[1] = 0.0f;
        // TODO 2: the four multiply-adds into acc
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            if (row0 + i < M && col0 + j < N)
                C[(size_t)(row0 + i) * N + col0 + j] = acc[i][j];
}
