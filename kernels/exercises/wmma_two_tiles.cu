// exercises/wmma_two_tiles.cu — one fragment of B for two tiles of C (chapter 14).
//
// C (M x N, FP32) = A (M x K) B (K x N), row-major, A and B in FP16; M a multiple
// of 32, N and K of 16.
// Each warp computes a 32 x 16 piece of C: two 16 x 16 tiles stacked vertically,
// which need the same fragment of B at every step of k. Loading it once and using
// it for both products halves B's loads, the first step towards the warp tiles of
// Part IV. The code below computes only the upper tile.
// Complete the TODOs: the lower tile's fragments, products and store.
// gl.exercises.check("wmma_two_tiles", code) runs it on the GPU or on the CPU
// emulator (which adds as the tensor cores do) at several sizes.
#include <cuda_fp16.h>
#include <mma.h>

__global__ void wmma_two_tiles(const __half* A, const __half* B, float* C, int M,
                               int N, int K)
{
    using namespace nvcuda;
    // one warp per 32 x 16 piece of C
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int piece_m = warp / (N / 16), piece_n = warp % (N / 16);
    // the whole warp leaves together
    if (piece_m * 32 >= M) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a0;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0;
    wmma::fill_fragment(c0, 0.0f);
    // TODO: fragments a1 and c1 for the lower tile (rows 16-31 of the piece)
    const __half* a = A + (size_t)piece_m * 32 * K;
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(b, B + (size_t)k * N + piece_n * 16, N);
        wmma::load_matrix_sync(a0, a + k, K);
        wmma::mma_sync(c0, a0, b, c0);
        // TODO: the lower tile's fragment of A, and its product with the same b
    }
    float* c = C + (size_t)piece_m * 32 * N + piece_n * 16;
    wmma::store_matrix_sync(c, c0, N, wmma::mem_row_major);
    // TODO: store the lower tile, 16 rows further down
}
