// solutions/wmma_two_tiles.cu — a warp computes two 16 x 16 tiles of C with one
// fragment of B (chapter 14).
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
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a0, a1;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1;
    wmma::fill_fragment(c0, 0.0f);
    wmma::fill_fragment(c1, 0.0f);
    const __half* a = A + (size_t)piece_m * 32 * K;
    for (int k = 0; k < K; k += 16) {
        // loaded once, used twice
        wmma::load_matrix_sync(b, B + (size_t)k * N + piece_n * 16, N);
        wmma::load_matrix_sync(a0, a + k, K);
        wmma::load_matrix_sync(a1, a + (size_t)16 * K + k, K);
        wmma::mma_sync(c0, a0, b, c0);
        wmma::mma_sync(c1, a1, b, c1);
    }
    float* c = C + (size_t)piece_m * 32 * N + piece_n * 16;
    wmma::store_matrix_sync(c, c0, N, wmma::mem_row_major);
    wmma::store_matrix_sync(c + (size_t)16 * N, c1, N, wmma::mem_row_major);
}
