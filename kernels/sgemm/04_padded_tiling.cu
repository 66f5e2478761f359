// sgemm/04_padded_tiling.cu — 02_shared_tiling with three switches: padding,
// unrolling, a transposed A tile.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 02_shared_tiling: template switches for the SGEMM chapter's
// stage 2, so each can be measured on and off in one run:
//   PAD = 1    adds one float to each shared row (stride TILE+1 words instead of
//              TILE);
//   UNROLL = 0 forbids unrolling the inner k loop (#pragma unroll 1); 1 unrolls it
//              fully;
//   AT = 1     stores the A tile transposed, As[k][m], as later kernels do to read
//              A along m.
// Bank conflicts: shared memory has 32 banks of 4 bytes; word w sits in bank w %
// 32, and a warp's request that hits one bank at d different words takes d passes
// (gl.memory.tiled_shared_accesses counts them). With AT = 0 and no padding every
// access here is conflict-free: a warp's As reads are one word per row (broadcast),
// its Bs reads and all stores are consecutive words. With AT = 1 the store
// As[tx][ty] walks a column, TILE words apart: 8-way conflicts for TILE = 16,
// 32-way for 32. Padding to TILE+1 spreads a column over distinct banks, but for
// TILE = 16 it also makes a warp's two rows of row-major stores wrap around the
// banks (2-way), and it costs alignment (below).
// Alignment: unpadded, a row of As starts every 64 bytes, so the unrolled loop can
// read As[ty][k..k+3] with one 128-bit load (LDS.128); padded rows are 68 bytes
// apart and each read is a 32-bit LDS.
// Expected bottleneck: as 02, shared-memory load instructions and barriers;
// conflicts where noted.
// Sizes: any M, N, K >= 1 (zero-filled tile slots, guarded stores).

// [kernel]
template <int TILE, int PAD, int UNROLL, int AT>
__global__ void sgemm_padded_tiling(const float* __restrict__ A,
                                    const float* __restrict__ B,
                                    float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE + PAD];   // AT = 0: As[m][k]; AT = 1: As[k][m]
    __shared__ float Bs[TILE][TILE + PAD];   // Bs[k][n]

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row = blockIdx.y * TILE + ty;

    float acc = 0.0f;
    for (int p = 0; p < K; p += TILE) {
        const float a = (row < M && p + tx < K) ? A[(size_t)row * K + p + tx]
                                                : 0.0f;
        if (AT) As[tx][ty] = a; else As[ty][tx] = a;
        Bs[ty][tx] = (p + ty < K && col < N) ? B[(size_t)(p + ty) * N + col] : 0.0f;
        __syncthreads();

        if (UNROLL) {
            #pragma unroll
            for (int k = 0; k < TILE; ++k)
                acc += (AT ? As[k][ty] : As[ty][k]) * Bs[k][tx];
        } else {
            #pragma unroll 1
            for (int k = 0; k < TILE; ++k)
                acc += (AT ? As[k][ty] : As[ty][k]) * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}
// [kernel]
