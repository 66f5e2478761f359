// solutions/mma_ldmatrix.cu — one mma.sync tile fed by ldmatrix (chapter 15).
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
    const unsigned bs =
        static_cast<unsigned>(__cvta_generic_to_shared(&Bs[lane % 16][0]));
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = lane; i < 16 * 16; i += 32)
            As[i / 16][i % 16] = A[(size_t)(row0 + i / 16) * K + k0 + i % 16];
        for (int i = lane; i < 16 * 8; i += 32)
            Bs[i / 8][i % 8] = B[(size_t)(k0 + i / 8) * N + col0 + i % 8];
        __syncwarp();
        unsigned a[4], b[2];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16"
                     " {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(as));
        // B's two 8 x 8 matrices are rows k = 0-7 and 8-15, their addresses from
        // lanes 0-7 and 8-15; .trans gives lane l the pair (k = 2 (l % 4), 2 (l %
        // 4) + 1; n = l / 4) that mma.sync wants of each
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"
                     " {%0, %1}, [%2];\n"
                     : "=r"(b[0]), "=r"(b[1]) : "r"(bs));
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
    // the lower 8 rows of the tile
    C[(size_t)(r + 8) * N + c] = d[2];
    C[(size_t)(r + 8) * N + c + 1] = d[3];
}
