// sgemm/01_naive.cu — one thread per element of C, everything read from global
// memory.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What it is: the starting point of the ladder. The grid is 2-D; thread (tx, ty) of
// block (bx, by) owns C[row][col] with col = bx*blockDim.x + tx and row =
// by*blockDim.y + ty.
// Expected bottleneck: memory traffic. Each output reads a full row of A and a full
// column of B, 2K loads for 2K FLOPs, so the source-level intensity is 1 FLOP per 4
// bytes whatever N is; the caches catch much of it, which is why it still runs at a
// few TFLOP/s on a modern GPU.
// Coalescing: threadIdx.x walks col. With BLOCK = 32 a warp is one row of the
// block: it reads one A element (a broadcast) and 32 neighbouring B elements, and
// writes 32 neighbouring C elements. With BLOCK = 16 (the default) a warp is two
// half rows: two A elements, the same 16 neighbouring B elements for both halves,
// and two runs of 16 neighbouring C elements.
// Leaves out: any reuse through shared memory or registers (the next steps).
// Sizes: any M, N, K >= 1; threads past the edge of C return before touching
// memory.

// [kernel]
__global__ void sgemm_naive(const float* __restrict__ A,
                            const float* __restrict__ B, float* __restrict__ C,
                            int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
// [kernel]
