// exercises/tiled_sgemm.cu — the shared-memory tiled SGEMM of chapter 2.
//
// C (M x N) = A (M x K) * B (K x N), row-major. A block of 16 x 16 threads computes
// a 16 x 16 tile of C. In each phase p the block copies a 16 x 16 tile of A and one
// of B into shared memory (each thread one element of each), waits until all are
// there, multiplies the tiles, and waits again before the next phase overwrites
// them. Tile slots outside the matrices hold 0; outputs outside C are not written.
// Complete the TODOs; gl.exercises.check("tiled_sgemm", code) runs it at awkward
// sizes. (On the emulator, gl.racecheck finds a missing barrier even when the
// result happens to come out right.)

__global__ void tiled_sgemm(const float* A, const float* B, float* C, int M, int N,
                            int K)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int p = 0; p < K; p += 16) {
        As[ty][tx] = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx] : 0.0f;
        // TODO 1: this thread's element of the phase's B tile into Bs[ty][tx] (0
        // outside B)
        // TODO 2: wait until the whole block has written its tiles
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        // TODO 3: wait until the whole block has finished reading them
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
