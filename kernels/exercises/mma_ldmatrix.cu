// exercises/mma_ldmatrix.cu — one mma.sync tile fed by ldmatrix (chapter 15).
//
// C (M x N, FP32) = A (M x K) B (K x N), row-major, A and B in FP16; M and K
// multiples of 16, N of 8. One warp (a block of 32 threads) computes a 16 x 8 tile
// of C with mma.sync.m16n8k16, k-step by k-step: the warp copies A's 16 x 16 and
// B's 16 x 8 of the step into shared memory, ldmatrix hands each lane its registers
// of them in the layout mma.sync reads (lane l: rows l / 4 and l / 4 + 8 of A,
// columns 2 (l % 4) and 2 (l % 4) + 1; of B, rows 2 (l % 4) and 2 (l % 4) + 1 of
// column l / 4, and 8 rows below), and the accumulators d[0..3] hold C's (l / 4, 2
// (l % 4) .. + 1) and the same 8 rows below.
// A's fragment is loaded for you (ldmatrix .x4: each of 32 lanes gives the address
// of one 16-byte row of one of the four 8 x 8 matrices). Complete the TODOs: B's
// fragment (two 8 x 8 matrices, stored as rows of k, which mma.sync wants as
// columns: ldmatrix's .trans form), and the store of the tile's lower 8 rows.
// gl.exercises.check("mma_ldmatrix", code) runs it on the GPU (compute capability
// 8.0 or later) or on the CPU emulator, which runs the PTX as written.
#include <cuda_fp16.h>

__global__ void mma_ldmatrix(const __half* A, const __half* B, float* C, int M,
                             int N, int K)
{
    // A's 16 x 16 and B's 16 x 8 of this k-step
    __shared__ __align__(16) __half As[16][16];
    __shared__ __align__(16) __half Bs[16][8];
    const int lane = threadIdx.x, row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
    const unsigned as = static_cast<unsigned>(
        __cvta_generic_to_shared(&As[lane % 16][(lane / 16) * 8]));
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 16 * 16; i += 32)
            As[i / 16][i % 16] = A[(size_t)(row0 + i / 16) * K + k0 + i % 16];
        for (int i = lane; i < 16 * 8; i += 32)
            Bs[i / 8][i % 8] = B[(size_t)(k0 + i / 8) * N + col0 + i % 8];
        __syncwarp();
        unsigned a[4], b[2] = {0u, 0u};
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16"
                     " {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(as));
        // TODO: b[0] and b[1] from Bs with one ldmatrix (which lanes give which
        // rows' addresses?)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                       "r"(b[0]), "r"(b[1]));
        // every lane has read the tiles before they are refilled
        __syncwarp();
    }
    const int r = row0 + lane / 4, c = col0 + 2 * (lane % 4);
    C[(size_t)r * N + c] = d[0];
    C[(size_t)r * N + c + 1] = d[1];
    // TODO: d[2] and d[3], the same columns 8 rows below
}
