// sgemm/02_shared_tiling.cu — square TILE x TILE tiles of A and B staged through
// shared memory.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 01_naive: a block of TILE x TILE threads computes a
// TILE x TILE tile of C in phases. In phase p every thread loads one element of A's
// tile (rows of this block, columns p*TILE..) and one of B's tile into shared
// memory, the block waits (barrier 1), every thread accumulates TILE products out
// of shared memory, and the block waits again (barrier 2) before the next phase
// overwrites the tiles. Each element loaded from global memory is used TILE times,
// so global loads drop from 2K per output to 2K/TILE.
// Why both barriers: without barrier 1 a thread reads tile slots its neighbours
// have not written yet; without barrier 2 a fast thread overwrites a slot of the
// next phase while a slow one still reads the current phase from it.
// Expected bottleneck: shared-memory bandwidth and the barriers; one FMA per two
// shared loads.
// Leaves out: register reuse (each thread still computes one output) and
// bank-conflict padding.
// Sizes: any M, N, K >= 1; out-of-range tile slots are filled with zeros and
// out-of-range outputs are not written. Every thread stays to the end of the loop:
// it must reach every barrier.

// [kernel]
template <int TILE>
__global__ void sgemm_shared_tiling(const float* __restrict__ A,
                                    const float* __restrict__ B,
                                    float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row = blockIdx.y * TILE + ty;

    float acc = 0.0f;
    for (int p = 0; p < K; p += TILE) {
        As[ty][tx] = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx] : 0.0f;
        Bs[ty][tx] = (p + ty < K && col < N) ? B[(size_t)(p + ty) * N + col] : 0.0f;
        __syncthreads();  // [barrier 1] the tiles are complete

        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // [barrier 2] everyone is done reading before the next
                          // phase overwrites
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
// [kernel]
