// sgemm/03_uncoalesced.cu — 01_naive with the thread mapping turned around:
// threadIdx.x walks rows.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 01_naive: only the two index lines. Here row =
// blockIdx.x*blockDim.x + threadIdx.x and col = blockIdx.y*blockDim.y +
// threadIdx.y, the mapping of the SGEMM chapter's stage 0.
// Expected bottleneck: memory transactions. The 32 lanes of a warp now hold 32
// different rows and (mostly) one column: each load of A touches 32 addresses N
// floats apart (32 separate 32-byte sectors instead of one or two), the load of B
// is one address for the whole warp, and each store of C is again 32 scattered
// sectors. Same FLOPs, same source-level loads, many more transactions.
// Leaves out: everything; it exists to be measured against 01_naive.
// Sizes: any M, N, K >= 1.

// [kernel]
__global__ void sgemm_uncoalesced(const float* __restrict__ A,
                                  const float* __restrict__ B,
                                  float* __restrict__ C, int M, int N, int K)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
// [kernel]
