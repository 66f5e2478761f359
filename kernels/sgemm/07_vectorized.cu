// sgemm/07_vectorized.cu — 128 x 128 block tiles, 16-byte loads, a transposed A
// tile, 8 x 8 per thread.
//
// C (M x N) = A (M x K) * B (K x N), all row-major FP32.
// What changed since 06_register_tiling: everything gets wider. A block computes a
// BM x BN tile of C (128 x 128) with (BM/TM) x (BN/TN) threads (256), each owning a
// TM x TN micro-tile (8 x 8: 64 multiply-adds per 16 shared loads). Global loads
// are 16 bytes (LDG.128, gl_load4 in common/sgemm_tiles.cuh), four consecutive k of
// A and four consecutive columns of B. The A tile is stored transposed, As[k][m],
// so that a thread's TM values of A at one k are consecutive in shared memory, as
// its TN values of B are: both are read 16 bytes at a time (LDS.128).
// Three switches, all off in the first version (chapter 13's Step 07 measures each
// of them):
//   PAD = 1   As rows padded by 4 floats (BM + 4): the transposing stores of a
//             warp, which otherwise hit the same bank 2 (BK = 8) or 4 (BK = 16)
//             times (rows BM floats apart), spread over all 32 banks with BK = 8,
//             and still meet 2 to a bank with BK = 16;
//   SWZ = 1   instead of padding, the column of As[k][m] is XOR-ed with (k / 4) *
//             (128 / BK): one store per bank for either BK, with no extra shared
//             memory; the reads apply the same XOR (a multiple of 4, so 16-byte
//             groups stay whole);
//   SPLIT = 1 a thread's TM x TN tile is four (TM/2) x (TN/2) quarters BM/2 and
//             BN/2 apart, so that the lanes of a warp read consecutive 16-byte
//             groups of a row (one wavefront per 8 lanes) instead of groups TN
//             floats apart (half the bandwidth lost to conflicts).
// One stage: two barriers per tile (chapter 13's Step 10 removes one of them).
// Expected bottleneck: shared-memory bandwidth and bank conflicts, then instruction
// issue.
// Sizes: any M, N, K >= 1.

#include "common/sgemm_tiles.cuh"

// [kernel]
template <int BM, int BN, int BK, int TM, int TN, int PAD, int SWZ, int SPLIT>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K)
{
    constexpr int THREADS = (BM / TM) * (BN / TN);
    constexpr int A_LOADS = BM * BK / 4 / THREADS, B_LOADS = BK * BN / 4 / THREADS;
    constexpr int AP = BM + (PAD ? 4 : 0);                // As row pitch in floats
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0,
                  "16-byte groups along m, n and k");
    static_assert(A_LOADS * THREADS * 4 == BM * BK
                      && B_LOADS * THREADS * 4 == BK * BN,
                  "whole float4s per thread");
    static_assert(!(PAD && SWZ), "padding or swizzling, not both");
    static_assert(!SPLIT || (TM % 8 == 0 && TN % 8 == 0),
                  "split tiles are halves of whole 16-byte groups");
    __shared__ __align__(16) float As[BK * AP];
    __shared__ __align__(16) float Bs[BK * BN];
    // column of As[k][m] where m is stored: m itself, or m XOR-ed per group of 4 k
    // (16-byte groups stay whole)
    auto col = [](int k, int m) {
        return SWZ ? m ^ ((k / 4) * (128 / BK) % BM) : m;
    };

    const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool avec = (K % 4) == 0, bvec = (N % 4) == 0;
    // the thread's rows and columns: TM (TN) consecutive, or two runs of TM/2
    // (TN/2) half a tile apart
    auto my_row = [&](int i) {
        return SPLIT ? (i / (TM / 2)) * (BM / 2) + ty * (TM / 2) + i % (TM / 2)
                     : ty * TM + i;
    };
    auto my_col = [&](int j) {
        return SPLIT ? (j / (TN / 2)) * (BN / 2) + tx * (TN / 2) + j % (TN / 2)
                     : tx * TN + j;
    };

    float4 ra[A_LOADS], rb[B_LOADS];
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        gl_fetch_tiles<BM, BN, BK, THREADS>(A, B, M, N, K, K, row0, col0, k0, avec,
                                            bvec, tid, ra, rb);
        // A transposed: 4 stores of 4 bytes
        #pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BK / 4),
                      c = (i % (BK / 4)) * 4;
            As[(c + 0) * AP + col(c + 0, r)] = ra[l].x;
            As[(c + 1) * AP + col(c + 1, r)] = ra[l].y;
            As[(c + 2) * AP + col(c + 2, r)] = ra[l].z;
            As[(c + 3) * AP + col(c + 3, r)] = ra[l].w;
        }
        // B as it lies: one 16-byte store
        #pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int i = tid + l * THREADS, r = i / (BN / 4),
                      c = (i % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[r * BN + c]) = rb[l];
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(
                    &As[k * AP + col(k, my_row(i))]);
                a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            }
            #pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v =
                    *reinterpret_cast<const float4*>(&Bs[k * BN + my_col(j)]);
                b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            }
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    const bool cvec = (N % 4) == 0;
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; j += 4)
            gl_store4(C, M, N, row0 + my_row(i), col0 + my_col(j),
                      make_float4(acc[i][j], acc[i][j + 1],
                                  acc[i][j + 2], acc[i][j + 3]), cvec);
}
// [kernel]
