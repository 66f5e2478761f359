// sgemm/05_cache_blocking.cu — a TM x TN micro-tile of C per thread, in registers;
// no shared memory.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 01_naive (not 02-04: this step follows The CUDA Handbook,
// 17.3, which blocks for the hardware caches instead of staging through shared
// memory): each thread owns a TM x TN block of C, rows row0..row0+TM-1 and columns
// col0..col0+TN-1, kept in TM*TN accumulators. For every k it loads TM values of
// A's column k and TN values of B's row k into registers and does TM*TN
// multiply-adds with them: TM+TN loads for TM*TN FMAs, against 2 loads per FMA in
// 01_naive. Reuse between the threads of a block is left to the L1 and L2 caches.
// Expected bottleneck: load instructions and L1 traffic. Lanes of a warp read B TN
// floats apart and A TM rows apart, so larger tiles also spread each warp load over
// more cache sectors; registers limit TM*TN (8 x 8 = 64 accumulators).
// Sizes: any M, N, K >= 1; rows and columns past the edge are read as zeros and
// never written.
// EDGE says how a thread meets the edges of C (chapter 5 times both): 0 (the
// default), a micro-tile that crosses an edge is shifted back inside C, so the k
// loop tests nothing; 1, the obvious way, a guard on every load inside the k loop.

// [kernel]
// The k loop for one micro-tile that lies inside C: TM + TN loads and TM * TN FMAs
// per k, no bound checks.
template <int TM, int TN>
__device__ __forceinline__ void cache_blocking_loop(const float* __restrict__ A,
                                                    const float* __restrict__ B,
                                                    int N, int K, int row0,
                                                    int col0, float (&acc)[TM][TN])
{
    for (int k = 0; k < K; ++k) {
        float a[TM], b[TN];
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            a[i] = A[(size_t)(row0 + i) * K + k];
        #pragma unroll
        for (int j = 0; j < TN; ++j)
            b[j] = B[(size_t)k * N + col0 + j];
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j)
                acc[i][j] += a[i] * b[j];
    }
}

template <int TM, int TN, int EDGE>
__global__ void sgemm_cache_blocking(const float* __restrict__ A,
                                     const float* __restrict__ B,
                                     float* __restrict__ C, int M, int N, int K)
{
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * TM;
    const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * TN;

    // a guard on every load: a compare and a select per load per k
    if constexpr (EDGE == 1) {
        float acc[TM][TN] = {};
        for (int k = 0; k < K; ++k) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = row0 + i < M ? A[(size_t)(row0 + i) * K + k] : 0.0f;
            #pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = col0 + j < N ? B[(size_t)k * N + col0 + j] : 0.0f;
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
        return;
    }
    // EDGE 0: a thread whose micro-tile crosses the right or bottom edge shifts it
    // back inside C, to (r0, c0), and stores only the rows and columns that are its
    // own: the k loop never checks a bound.
    const int r0 = min(row0, M - TM), c0 = min(col0, N - TN);
    // C smaller than one micro-tile: a dot product per element
    if (r0 < 0 || c0 < 0) {
        #pragma unroll 1
        for (int i = 0; i < TM && row0 + i < M; ++i)
            #pragma unroll 1
            for (int j = 0; j < TN && col0 + j < N; ++j) {
                float s = 0.0f;
                #pragma unroll 1
                for (int k = 0; k < K; ++k)
                    s += A[(size_t)(row0 + i) * K + k]
                         * B[(size_t)k * N + col0 + j];
                C[(size_t)(row0 + i) * N + col0 + j] = s;
            }
        return;
    }
    float acc[TM][TN] = {};
    cache_blocking_loop<TM, TN>(A, B, N, K, r0, c0, acc);
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j)
            // r0 + i < M and c0 + j < N by construction
            if (r0 + i >= row0 && c0 + j >= col0)
                C[(size_t)(r0 + i) * N + c0 + j] = acc[i][j];
}
// [kernel]
