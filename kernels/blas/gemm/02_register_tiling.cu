// blas/gemm/02_register_tiling.cu — column-major GEMM steps 2 and 3: a TT x TT
// register tile per thread.
//
// What changed since 01_shared_tiling: the block keeps 16 x 16 = 256 threads but
// each thread owns TT x TT outputs, so the block computes a BT x BT tile of C with
// BT = 16*TT (64 for TT = 4, 128 for TT = 8). Per phase of KT = 16 along K, the 256
// threads load the KT x BT slab of op(A) and the BT x KT slab of op(B), TT elements
// of each per thread. Per step k, a thread reads TT values of As and TT of Bs into
// registers and does TT*TT multiply-adds: 2/TT shared loads per multiply-add (1/2
// for TT = 4, 1/4 for TT = 8). Thread (x, y) owns rows x, x+16, ..., and columns y,
// y+16, ..., so a warp's shared reads and global stores stay on consecutive
// addresses.
// Expected bottleneck: instruction issue and, for TT = 8, registers (one block per
// SM on the article's GPU).
// Sizes: any M, N, K >= 0.

#include "common/blas.cuh"

// [kernel]
template <int TT, int TA, int TB>
__global__ void __launch_bounds__(256)
gemm_register_tiling(const float* __restrict__ A, int aoff, int lda,
                     const float* __restrict__ B, int boff, int ldb,
                     float* __restrict__ C, int coff, int ldc, int M, int N,
                     int K, float alpha, float beta)
{
    constexpr int BT = 16 * TT, KT = 16, LOADS = KT * BT / 256;
    __shared__ float As[KT][BT];     // As[k][i]
    __shared__ float Bs[BT][KT];     // Bs[j][k]
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const long long ib = blockIdx.x * (long long)BT,
                    jb = blockIdx.y * (long long)BT;

    float acc[TT][TT] = {};
    for (long long t = 0; t < K; t += KT) {
        #pragma unroll
        for (int q = 0; q < LOADS; ++q) {
            const int e = tid + q * 256;
            // A: consecutive threads take consecutive rows
            const int ar = e % BT, ak = e / BT;
            As[ak][ar] = (ib + ar < M && t + ak < K)
                             ? A[gl_op<TA>(aoff, lda, ib + ar, t + ak)]
                             : 0.0f;
            // B: consecutive threads take consecutive k
            const int bk = e % KT, bc = e / KT;
            Bs[bc][bk] = (t + bk < K && jb + bc < N)
                             ? B[gl_op<TB>(boff, ldb, t + bk, jb + bc)]
                             : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int l = 0; l < KT; ++l) {
            float ra[TT], rb[TT];
            #pragma unroll
            for (int u = 0; u < TT; ++u) ra[u] = As[l][tx + 16 * u];
            #pragma unroll
            for (int v = 0; v < TT; ++v) rb[v] = Bs[ty + 16 * v][l];
            #pragma unroll
            for (int u = 0; u < TT; ++u)
                #pragma unroll
                for (int v = 0; v < TT; ++v)
                    acc[u][v] += ra[u] * rb[v];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int u = 0; u < TT; ++u)
        #pragma unroll
        for (int v = 0; v < TT; ++v) {
            const long long i = ib + tx + 16 * u, j = jb + ty + 16 * v;
            if (i < M && j < N) {
                float* c = C + gl_mat(coff, ldc, i, j);
                *c = alpha * acc[u][v] + (beta == 0.0f ? 0.0f : beta * *c);
            }
        }
}
// [kernel]
