// exercises/col_sums.cu — the sum of each column of a row-major M x N matrix
// (chapter 3).
//
// s[j] = A[0][j] + A[1][j] + ... + A[M-1][j]. One thread per column, blocks of 128,
// enough blocks to cover N (any M, N >= 1). Thread j walks down its column: at each
// step the 32 threads of a warp read 32 neighbouring elements of one row
// (consecutive addresses, one or two 128-byte lines: coalesced). Had each thread
// summed a row instead, a warp would touch 32 rows N floats apart at every step.
// Complete the TODO; gl.exercises.check("col_sums", code) runs it at awkward sizes.

__global__ void col_sums(const float* A, float* s, int M, int N)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N) return;
    float sum = 0.0f;
    // TODO: add up column j, row by row
    s[j] = sum;
}
