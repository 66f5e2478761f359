// tc/05_mma_sync.cu — the tensor cores below wmma: mma.sync and ldmatrix in inline PTX (GPU only).
//
// C (M x N, FP32) = A (M x K) * B (K x N), row-major; A and B in FP16 (PREC 0) or BF16 (1, passed as its
// bits). What changed since 03_wmma_pipelined: wmma hides where each element of a fragment lives, so a
// fragment can only be loaded whole with load_matrix_sync. PTX's mma.sync.m16n8k16 fixes the layout
// (lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of its 16 x 8 accumulator tile), and
// ldmatrix loads four 8 x 8 tiles of 16-bit values from shared memory in one instruction, each lane
// giving the address of one row, straight into those registers (.trans transposes B's tiles on the
// way). The block pipeline is 03's: BM x BK and BK x BN tiles in shared memory (BK = 32 as in 03, or 64:
// half the barriers and pipeline waits per k), rows padded by 16 bytes (the 8 rows an ldmatrix reads then
// fall in 8 different bank groups), cp.async STAGES tiles ahead; a warp computes a WM x WN tile as
// (WM/16) x (WN/8) mma tiles.
// The CPU emulator cannot run inline PTX: the registry refuses this kernel there with that reason.
// Sizes: M, N and K multiples of 16 (the registry refuses others).

#include "common/tc.cuh"

// D = A B + D on one 16 x 8 x 16 tile: a[4], b[2] hold pairs of 16-bit values, d[4] FP32
template <int PREC>
__device__ __forceinline__ void gl_mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    if (PREC == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// four 8 x 8 tiles of 16-bit values from shared memory; lane l gives the address of row l % 8 of tile l / 8
__device__ __forceinline__ void gl_ldmatrix_x4(unsigned (&r)[4], const void* row, bool trans)
{
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// [kernel]
template <int PREC, int BM, int BN, int WM, int WN, int BK, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
mma_sync_gemm(const typename gl_tc<PREC>::in* __restrict__ A, const typename gl_tc<PREC>::in* __restrict__ B,
              float* __restrict__ C, int M, int N, int K)
{
    using T = typename gl_tc<PREC>::in;                     // (common/tc.cuh; PREC 0 or 1 here)
    constexpr int V = 8;                                     // 16-bit values per 16-byte copy
    constexpr int AS = BK + V, BS = BN + V;                  // padded row strides (elements)
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int MT = WM / 16, NT = WN / 8;                 // mma tiles per warp
    static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "whole mma tiles");
    static_assert(PREC == 0 || PREC == 1, "mma.sync here takes FP16 (PREC 0) or BF16 (1)");
    static_assert(BK % 16 == 0, "whole k16 steps per stage");
    extern __shared__ __align__(128) unsigned char smem[];
    T* As = reinterpret_cast<T*>(smem);                      // [STAGES][BM][AS]
    T* Bs = As + STAGES * BM * AS;                           // [STAGES][BK][BS]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = K / BK + (K % BK != 0);

    float acc[MT][NT][4] = {};
    // blocks whose tiles lie inside A and B run the loop instantiated with copies that test nothing
    const bool interior = row0 + BM <= M && col0 + BN <= N && K % BK == 0;
    auto mainloop = [&](auto whole) {
    constexpr bool WHOLE = decltype(whole)::value;
    auto issue = [&](int t, int s) {                          // tile t into stage s, zeros outside (common/tc.cuh)
        if (t < tiles) {
            if constexpr (WHOLE) {
                gl_tc_stage_whole<BM, BK, AS, THREADS>(As + s * BM * AS, A, K, row0, t * BK, tid);
                gl_tc_stage_whole<BK, BN, BS, THREADS>(Bs + s * BK * BS, B, N, t * BK, col0, tid);
            } else {
                gl_tc_stage<BM, BK, AS, THREADS>(As + s * BM * AS, A, M, K, row0, t * BK, true, tid);
                gl_tc_stage<BK, BN, BS, THREADS>(Bs + s * BK * BS, B, K, N, t * BK, col0, true, tid);
            }
        }
        __pipeline_commit();
    };
    #pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) issue(t, t);
    for (int t = 0; t < tiles; ++t) {
        const int s = t % STAGES;
        __pipeline_wait_prior(STAGES - 2);
        __syncthreads();
        issue(t + STAGES - 1, (t + STAGES - 1) % STAGES);
        const T* as = As + s * BM * AS;
        const T* bs = Bs + s * BK * BS;
        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MT][4], b[NT][2];
            #pragma unroll
            for (int i = 0; i < MT; ++i)                     // rows 0-15 of the tile; lanes 16-31 columns 8-15
                gl_ldmatrix_x4(a[i], as + (wm + 16 * i + lane % 16) * AS + kk + (lane / 16) * 8, false);
            #pragma unroll
            for (int j = 0; j < NT; j += 2) {                // two 8-column tiles of B per ldmatrix.x4.trans
                unsigned r[4];
                gl_ldmatrix_x4(r, bs + (kk + lane % 16) * BS + wn + 8 * j + (lane / 16) * 8, true);
                b[j][0] = r[0]; b[j][1] = r[1]; b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
            }
            #pragma unroll
            for (int i = 0; i < MT; ++i)
                #pragma unroll
                for (int j = 0; j < NT; ++j) gl_mma_16816<PREC>(acc[i][j], a[i], b[j]);
        }
    }
    };
    if (interior) mainloop(gl_bool<true>{});
    else mainloop(gl_bool<false>{});
    __pipeline_wait_prior(0);

    // lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of each 16 x 8 tile
    #pragma unroll
    for (int i = 0; i < MT; ++i)
        #pragma unroll
        for (int j = 0; j < NT; ++j)
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = row0 + wm + 16 * i + lane / 4 + 8 * h, c = col0 + wn + 8 * j + 2 * (lane % 4);
                if (r < M && c < N)                           // N a multiple of 16: both columns inside
                    *reinterpret_cast<float2*>(C + (size_t)r * N + c) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
            }
}
// [kernel]
