// tc/02_3xtf32.cu — FP32 accuracy from TF32 tensor cores: each operand split into a
// head and a tail.
//
// C (M x N) = A (M x K) * B (K x N), all FP32, row-major: the SGEMM of Parts I-IV,
// on the tensor cores.
// What changed since 01_wmma: TF32 keeps 10 of FP32's 23 mantissa bits, so one TF32
// product has errors near 2^-11. Split each value x into a head h = tf32(x) and a
// tail t = tf32(x - h): h + t holds x to about 2^-22. Then a * b = (ha + ta)(hb +
// tb) ~ ha hb + ha tb + ta hb, three TF32 products per step (the tail-times-tail
// term, near 2^-22 of the product, is dropped). Where those products are summed
// matters: the tensor cores add a few products at a time into their FP32
// accumulator and cut the sum toward zero (on the H200: 4 TF32 products a step, 26
// bits kept; the emulator does the same), so an accumulator kept in the tensor
// cores over all of K drifts, its error growing like K (on the H200, 3.5 times an
// FP32 SGEMM's at K = 256). So each step's large product goes into a fresh
// accumulator, added into the FP32 result on the CUDA cores, rounding to nearest as
// an SGEMM's FMAs do; the two small products, 2^-11 of it, stay in an accumulator
// of their own over all of K (what its cuts cost is 2^-11 smaller) and join at the
// end. Each warp stages its 16 x 8 piece of A and 8 x 16 piece of B through shared
// memory, zero-filled past the matrix's edges, and writes its 16 x 16 tile of C
// back through shared memory with guarded stores: any M, N, K >= 1. (Staging is per
// warp, with __syncwarp: no block-wide barrier.)
// Expected bottleneck: global loads (no reuse between warps yet) and three MMAs per
// step.

#include <mma.h>

// [kernel]
template <int WARPS_M, int WARPS_N>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
gemm_3xtf32(const float* __restrict__ A, const float* __restrict__ B,
            float* __restrict__ C, int M, int N, int K)
{
    using namespace nvcuda;
    __shared__ __align__(32) float sa[WARPS_M * WARPS_N][16 * 8];
    __shared__ __align__(32) float sb[WARPS_M * WARPS_N][8 * 16];
    __shared__ __align__(32) float sc[WARPS_M * WARPS_N][16 * 16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // this warp's 16 x 16 tile of C
    const int row0 = (blockIdx.y * WARPS_M + warp / WARPS_N) * 16;
    const int col0 = (blockIdx.x * WARPS_N + warp % WARPS_N) * 16;
    // a whole warp leaves together
    if (row0 >= M || col0 >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32,
                   wmma::row_major> ah, at;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32,
                   wmma::row_major> bh, bt;
    // result; a step's large product; small ones
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c, part, small;
    wmma::fill_fragment(c, 0.0f);
    wmma::fill_fragment(small, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 8) {
        // A's 16 x 8 piece, 0 outside
        for (int i = lane; i < 16 * 8; i += 32) {
            const int r = row0 + i / 8, k = k0 + i % 8;
            sa[warp][i] = r < M && k < K ? A[(size_t)r * K + k] : 0.0f;
        }
        // B's 8 x 16 piece, 0 outside
        for (int i = lane; i < 8 * 16; i += 32) {
            const int k = k0 + i / 16, col = col0 + i % 16;
            sb[warp][i] = k < K && col < N ? B[(size_t)k * N + col] : 0.0f;
        }
        __syncwarp();
        wmma::load_matrix_sync(ah, sa[warp], 8);
        wmma::load_matrix_sync(bh, sb[warp], 16);
        // head and tail of each value
        for (int i = 0; i < ah.num_elements; ++i) {
            const float x = ah.x[i], h = wmma::__float_to_tf32(x);
            ah.x[i] = h;
            at.x[i] = wmma::__float_to_tf32(x - h);
        }
        for (int i = 0; i < bh.num_elements; ++i) {
            const float x = bh.x[i], h = wmma::__float_to_tf32(x);
            bh.x[i] = h;
            bt.x[i] = wmma::__float_to_tf32(x - h);
        }
        wmma::mma_sync(small, at, bh, small);
        wmma::mma_sync(small, ah, bt, small);
        wmma::fill_fragment(part, 0.0f);
        wmma::mma_sync(part, ah, bh, part);
        // accumulator fragments share a layout
        for (int i = 0; i < c.num_elements; ++i) c.x[i] += part.x[i];
        // the pieces are read: refill them
        __syncwarp();
    }
    for (int i = 0; i < c.num_elements; ++i) c.x[i] += small.x[i];
    wmma::store_matrix_sync(sc[warp], c, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 16 * 16; i += 32) {
        const int r = row0 + i / 16, col = col0 + i % 16;
        if (r < M && col < N) C[(size_t)r * N + col] = sc[warp][i];
    }
}
// [kernel]
