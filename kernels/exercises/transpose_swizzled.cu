// exercises/transpose_swizzled.cu — B (N x M) = A^T through an unpadded shared
// tile, its columns swizzled (chapter 15).
//
// Chapter 4's transpose pads each row of its 32 x 32 tile to 33 floats so that
// reading a column does not hit one bank 32 times. Hopper's TMA copies cannot pad:
// they place each row's 16-byte pieces at positions XOR-ed with the row number
// instead (the 128-byte swizzle). Do the same with single floats: store element (r,
// c) of the tile at tile[r][c ^ r]. A row still fills 32 different banks (c ^ r
// takes every value once as c does), and so does a column (r ^ c takes every value
// once as r does).
// Any M, N >= 1: elements outside the matrices are neither read nor written.
// Complete the two TODOs; gl.exercises.check("transpose_swizzled", code) runs it at
// awkward sizes.

__global__ void transpose_swizzled(const float* A, float* B, int M, int N)
{
    __shared__ float tile[32][32];                                // no padding
    const int c = blockIdx.x * 32 + threadIdx.x;                  // a column of A
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int row = blockIdx.y * 32 + r;
        // TODO: store A's element at tile row r, column threadIdx.x, swizzled
        if (row < M && c < N) tile[r][0] = A[(size_t)row * N + c];
    }
    __syncthreads();
    // a row of A: a column of B
    const int out_col = blockIdx.y * 32 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        // a column of A: a row of B
        const int out_row = blockIdx.x * 32 + r;
        // TODO: read the tile's element at row threadIdx.x, column r, where the
        // swizzle put it
        if (out_row < N && out_col < M)
            B[(size_t)out_row * M + out_col] = tile[0][r];
    }
}
