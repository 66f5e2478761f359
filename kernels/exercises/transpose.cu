// exercises/transpose.cu — B (N x M) = A^T for a row-major M x N matrix A, through
// shared memory (chapter 4).
//
// Reading A row by row and writing B column by column (or the reverse) makes one of
// the two sides uncoalesced. Instead a block of 32 x 8 threads copies a 32 x 32
// tile of A into shared memory with coalesced reads (each thread 4 elements, 8 rows
// apart), waits, then writes the transposed tile to B, again along B's rows. The
// tile is 33 floats wide: reading a column of a 32-wide tile would hit one bank 32
// times. Any M, N >= 1: elements outside the matrices are neither read nor written.
// Complete the TODO; gl.exercises.check("transpose", code) runs it at awkward
// sizes.

__global__ void transpose(const float* A, float* B, int M, int N)
{
    __shared__ float tile[32][33];
    const int c = blockIdx.x * 32 + threadIdx.x;                  // a column of A
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int row = blockIdx.y * 32 + r;
        if (row < M && c < N) tile[r][threadIdx.x] = A[(size_t)row * N + c];
    }
    __syncthreads();
    // TODO: write the tile to B: B's row is a column of A (blockIdx.x * 32 + ...),
    // and consecutive threadIdx.x should write consecutive elements of that row of
    // B
}
