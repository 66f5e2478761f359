// exercises/gemv_split.cu — write a GEMV that splits each row among several threads
// (chapter 8).
//
// y = A x with A M x N row-major. A block of 32 x 8 threads covers 8 rows:
// threadIdx.y (0..7) picks the row and threadIdx.x (0..31) the slice, so the 32
// threads of a row each sum every 32nd element of it (coalesced: lanes read
// neighbouring elements); then the row's 32 partial sums must be added. ceil(M / 8)
// blocks; any M, N >= 1.
// Complete the TODO; gl.exercises.check("gemv_split", code) runs it at awkward
// sizes.

__global__ void gemv_split(const float* A, const float* x, float* y, int M, int N)
{
    const int row = blockIdx.x * 8 + threadIdx.y, lane = threadIdx.x;
    float sum = 0.0f;
    if (row < M)
        for (int j = lane; j < N; j += 32) sum += A[(size_t)row * N + j] * x[j];
    // TODO: add the 32 partial sums of this row (they are the 32 lanes of one warp)
    // and let one lane write y[row]
    if (row < M && lane == 0) y[row] = sum;
}
