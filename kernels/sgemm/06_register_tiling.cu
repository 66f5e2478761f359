// sgemm/06_register_tiling.cu — shared-memory tiles (02) and a register micro-tile
// per thread (05) together.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 04_padded_tiling: a block still computes a T x T tile of C
// through T x T shared tiles of A and B (padded by one float), but with
// (T/RN) x (T/RM) threads, each owning an RM x RN micro-tile of C in registers. Per
// k, a thread reads RM values of As and RN of Bs into registers and does RM*RN
// FMAs: shared-memory loads per FMA drop from 2 to (RM+RN)/(RM*RN), 1 for 2 x 2,
// 1/2 for 4 x 4. Each thread also loads RM*RN elements of each tile per phase.
// MINB sets __launch_bounds__(threads, MINB): ptxas keeps registers low enough for
// MINB blocks per SM, spilling to local memory if it must. MINB = 1 asks for
// nothing beyond one block.
// Expected bottleneck: instruction issue (FMAs plus shared loads and address
// arithmetic) and, for large micro-tiles or large MINB, register spills.
// Sizes: any M, N, K >= 1 (zero-filled tile slots, guarded stores).

// [kernel]
template <int T, int RM, int RN, int MINB>
__global__ void __launch_bounds__((T / RM) * (T / RN), MINB)
sgemm_register_tiling(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K)
{
    static_assert(T % RM == 0 && T % RN == 0,
                  "the micro-tile must divide the tile");
    __shared__ float As[T][T + 1];
    __shared__ float Bs[T][T + 1];

    const int tx = threadIdx.x, ty = threadIdx.y;     // tx < T/RN, ty < T/RM
    const int tile_row = blockIdx.y * T, tile_col = blockIdx.x * T;

    float acc[RM][RN] = {};
    for (int p = 0; p < K; p += T) {
        // The T x T tiles, RM x RN elements per thread: thread tx covers columns
        // tx*RN .. tx*RN + RN-1, so consecutive tx are RN columns apart (and lanes
        // of a warp read RN-strided addresses).
        #pragma unroll
        for (int i = 0; i < RM; ++i)
            #pragma unroll
            for (int j = 0; j < RN; ++j) {
                const int r = ty * RM + i, c = tx * RN + j;
                As[r][c] = (tile_row + r < M && p + c < K)
                               ? A[(size_t)(tile_row + r) * K + p + c]
                               : 0.0f;
                Bs[r][c] = (p + r < K && tile_col + c < N)
                               ? B[(size_t)(p + r) * N + tile_col + c]
                               : 0.0f;
            }
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < T; ++k) {
            float a[RM], b[RN];
            #pragma unroll
            for (int i = 0; i < RM; ++i) a[i] = As[ty * RM + i][k];
            #pragma unroll
            for (int j = 0; j < RN; ++j) b[j] = Bs[k][tx * RN + j];
            #pragma unroll
            for (int i = 0; i < RM; ++i)
                #pragma unroll
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        #pragma unroll
        for (int j = 0; j < RN; ++j) {
            const int r = tile_row + ty * RM + i, c = tile_col + tx * RN + j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
}
// [kernel]
