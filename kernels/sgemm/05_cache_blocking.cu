// sgemm/05_cache_blocking.cu — a TM x TN micro-tile of C per thread, in registers; no shared memory.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 01_naive (not 02-04: this step follows The CUDA Handbook, 17.3, which blocks for
// the hardware caches instead of staging through shared memory): each thread owns a TM x TN block of
// C, rows row0..row0+TM-1 and columns col0..col0+TN-1, kept in TM*TN accumulators. For every k it
// loads TM values of A's column k and TN values of B's row k into registers and does TM*TN
// multiply-adds with them: TM+TN loads for TM*TN FMAs, against 2 loads per FMA in 01_naive. Reuse
// between the threads of a block is left to the L1 and L2 caches.
// Expected bottleneck: load instructions and L1 traffic. Lanes of a warp read B TN floats apart and
// A TM rows apart, so larger tiles also spread each warp load over more cache sectors; registers
// limit TM*TN (8 x 8 = 64 accumulators).
// Sizes: any M, N, K >= 1; rows and columns past the edge are read as zeros and never written.

// [kernel]
template <int TM, int TN>
__global__ void sgemm_cache_blocking(const float* __restrict__ A, const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K)
{
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * TM;
    const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * TN;

    float acc[TM][TN] = {};
    for (int k = 0; k < K; ++k) {
        float a[TM], b[TN];
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            a[i] = (row0 + i < M) ? A[(size_t)(row0 + i) * K + k] : 0.0f;
        #pragma unroll
        for (int j = 0; j < TN; ++j)
            b[j] = (col0 + j < N) ? B[(size_t)k * N + col0 + j] : 0.0f;
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j)
                acc[i][j] += a[i] * b[j];
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j)
            if (row0 + i < M && col0 + j < N)
                C[(size_t)(row0 + i) * N + col0 + j] = acc[i][j];
}
// [kernel]
