// tc/01_wmma.cu — a first tensor-core GEMM: one warp per 16 x 16 tile of C,
// straight from global memory.
//
// C (M x N, FP32) = A (M x K) * B (K x N), row-major; A and B in FP16 (PREC 0),
// BF16 (1, passed as its bits) or FP32 rounded to TF32 in the kernel (2). What
// changed since Part IV: no thread computes an element of C any more; a warp does,
// together, with nvcuda::wmma. A fragment is a 16 x 16 (TF32: 16 x 8) tile spread
// over the warp's registers; load_matrix_sync fills it from memory (all 32 lanes
// take part), mma_sync multiplies two fragments into an FP32 accumulator fragment
// on the tensor cores (exact products, FP32 sums), store_matrix_sync writes the
// accumulator back. A block holds WARPS_M x WARPS_N warps, one 16 x 16 tile of C
// each; each warp walks K in steps of 16 (TF32: 8), loading its tiles of A and B
// from global memory (no shared-memory staging yet: Part V's next chapter).
// Sizes: M, N and K multiples of 16 (the registry refuses others with a clear
// message); any number of tiles.

#include "common/tc.cuh"

// [kernel]
template <int PREC, int WARPS_M, int WARPS_N>
__global__ void __launch_bounds__(WARPS_M * WARPS_N * 32)
wmma_gemm(const typename gl_tc<PREC>::in* __restrict__ A,
          const typename gl_tc<PREC>::in* __restrict__ B, float* __restrict__ C,
          int M, int N, int K)
{
    using namespace nvcuda;
    constexpr int KS = gl_tc<PREC>::KS;
    using F = typename gl_tc<PREC>::frag;
    const int warp = threadIdx.x / 32;
    // this warp's 16 x 16 tile of C
    const int tile_m = blockIdx.y * WARPS_M + warp / WARPS_N;
    const int tile_n = blockIdx.x * WARPS_N + warp % WARPS_N;
    // a whole warp leaves together
    if (tile_m * 16 >= M || tile_n * 16 >= N) return;

    wmma::fragment<wmma::matrix_a, 16, 16, KS, F, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, KS, F, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, KS, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < K; k += KS) {
        wmma::load_matrix_sync(a, A + (size_t)tile_m * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tile_n * 16, N);
        // FP32 -> TF32, rounded to nearest
        gl_tc_round<PREC>(a);
        // (common/tc.cuh)
        gl_tc_round<PREC>(b);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + (size_t)tile_m * 16 * N + tile_n * 16, c, N,
                            wmma::mem_row_major);
}
// [kernel]
