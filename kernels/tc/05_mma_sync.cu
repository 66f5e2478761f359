// tc/05_mma_sync.cu — the tensor cores below wmma: mma.sync and ldmatrix in inline
// PTX.
//
// C (M x N, FP32) = A (M x K) * B (K x N), row-major; A and B in FP16 (PREC 0),
// BF16 (1, passed as its bits) or FP32 multiplied as TF32 (2). What changed since
// 03_wmma_pipelined: wmma hides where each element of a fragment lives, so a
// fragment can only be loaded whole with load_matrix_sync. PTX's mma.sync fixes the
// layout (lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of its
// 16 x 8 accumulator tile), and ldmatrix loads four 8 x 8 tiles of 16-bit values
// from shared memory in one instruction, each lane giving the address of one row,
// straight into those registers (.trans transposes B's tiles on the way). FP16/BF16
// use m16n8k16. TF32 uses m16n8k8: ldmatrix reads A's fragment too (a 16-byte row
// of four FP32 values is the same 16 bytes as eight 16-bit ones), but B's 32-bit
// values cannot be transposed by it, so each lane reads them itself: the two
// 8-column tiles of a 16-column band take its even and its odd columns (a
// relabelling of C's columns, undone at the store), so that one 8-byte load gives a
// lane its values for both. Each FP32 value is rounded to TF32 by adding half a
// TF32 unit in the last place to its bits (the tensor cores ignore the 13 bits
// below TF32's mantissa): round to nearest, ties away from zero, in one integer
// add. That is right for finite values only (an infinity becomes a NaN, and a NaN
// whose mantissa is all ones, CUDA's default NaN, a zero): this kernel takes finite
// inputs.
//
// The block pipeline: BM x BK and BK x BN tiles in shared memory (BK elements of a
// row: 32 or 64), rows padded (A by 16 bytes, B by 8 elements) so that the rows one
// ldmatrix or one 8-byte load reads fall in different banks, filled by cp.async
// STAGES tiles ahead; a warp computes a WM x WN tile as (WM/16) x (WN/8) mma tiles.
// Three things keep the tensor cores fed between tiles:
// - the copies of tile t + STAGES - 1 are spread over tile t's k steps, a few per
//   step, from pointers that only move by one tile per tile, instead of all at the
//   top of the tile;
// - fragments are double-buffered: step s + 1's are read from shared memory while
//   step s's products run;
// - the one barrier per tile sits in the tile's last k step, before the next tile's
//   first fragments are read, so that the products of that last step run while the
//   barrier's latency passes.
// Interior blocks (tiles wholly inside A, B and C, K a multiple of BK) run the loop
// without edge tests. The CPU emulator runs these asm statements as written
// (lib/gemmlab/emulator/gemmlab_ptx.h).
// Sizes: M, N and K multiples of 16 (the registry refuses others).

#include "common/tc.cuh"

// D = A B + D on one 16 x 8 tile: FP16 or BF16 (k = 16: a[4], b[2] hold pairs of
// 16-bit values) or TF32 (k = 8: one value per register); d[4] FP32
template <int PREC>
__device__ __forceinline__ void gl_mma(float (&d)[4], const unsigned (&a)[4],
                                       const unsigned (&b)[2])
{
    if (PREC == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                       "r"(b[0]), "r"(b[1]));
    else if (PREC == 1)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                       "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                       "r"(b[0]), "r"(b[1]));
}

// four 8 x 8 tiles of 16-bit values from shared memory; lane l gives the address of
// row l % 8 of tile l / 8
__device__ __forceinline__ void gl_ldmatrix_x4(unsigned (&r)[4], const void* row,
                                               bool trans)
{
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
                     " {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16"
                     " {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// FP32 bits -> TF32 as the tensor cores read them: half a unit in TF32's last place
// added, the rest ignored (finite values only: see the header)
__device__ __forceinline__ unsigned gl_tf32_bits(unsigned x) { return x + 0x1000u; }

// [kernel]
template <int PREC, int BM, int BN, int WM, int WN, int BK, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
mma_sync_gemm(const typename gl_tc<PREC>::in* __restrict__ A,
              const typename gl_tc<PREC>::in* __restrict__ B,
              float* __restrict__ C, int M, int N, int K)
{
    // (common/tc.cuh: __half, __nv_bfloat16, float)
    using T = typename gl_tc<PREC>::in;
    constexpr bool TF = PREC == 2;
    constexpr int KS = TF ? 8 : 16;                          // one mma's k
    // elements per 16-byte copy
    constexpr int V = 16 / (int)sizeof(T);
    // padded row strides (elements)
    constexpr int AS = BK + V, BS = BN + 8;
    constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    constexpr int MT = WM / 16, NT = WN / 8, STEPS = BK / KS;
    static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0,
                  "whole mma tiles, pairs of them in n");
    static_assert(PREC >= 0 && PREC <= 2, "FP16, BF16 or TF32");
    static_assert(BK % 16 == 0, "whole k steps per tile");
    // the copies of one tile: 16 bytes each, ACOL per row of A's tile and BCOL per
    // row of B's; a thread's copies lie the same number of rows apart (THREADS is a
    // multiple of ACOL and BCOL)
    constexpr int ACOL = BK / V, BCOL = BN / V;
    constexpr int ACH = (BM * ACOL + THREADS - 1) / THREADS,
                  BCH = (BK * BCOL + THREADS - 1) / THREADS;
    constexpr int QT = ACH + BCH;
    static_assert(THREADS % ACOL == 0 && THREADS % BCOL == 0,
                  "a thread's copies in one column of 16-byte groups");
    extern __shared__ __align__(128) unsigned char smem[];
    T* As = reinterpret_cast<T*>(smem);                      // [STAGES][BM][AS]
    T* Bs = As + STAGES * BM * AS;                           // [STAGES][BK][BS]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tiles = K / BK + (K % BK != 0);
    // where this thread's first copy of tile 0 comes from and goes to; copy q is
    // q * THREADS / ACOL rows on
    const T* ga = A + (size_t)(row0 + tid / ACOL) * K + (tid % ACOL) * V;
    const T* gb = B + (size_t)(tid / BCOL) * N + col0 + (tid % BCOL) * V;
    const size_t sa = (size_t)(THREADS / ACOL) * K,
                 sb = (size_t)(THREADS / BCOL) * N;
    const int da = (tid / ACOL) * AS + (tid % ACOL) * V,
              db = (tid / BCOL) * BS + (tid % BCOL) * V;

    float acc[MT][NT][4] = {};
    // blocks whose tiles lie inside A and B run the loop instantiated with copies
    // that test nothing
    const bool interior = row0 + BM <= M && col0 + BN <= N && K % BK == 0;
    auto mainloop = [&](auto whole) {
    constexpr bool WHOLE = decltype(whole)::value;
    // copies q0 .. q1-1 of tile t into stage s; at an edge all of them at q0 = 0,
    // zeros outside (common/tc.cuh)
    auto copies = [&](int t, int s, int q0, int q1) {
        if (t >= tiles) return;
        if constexpr (WHOLE) {
            #pragma unroll
            for (int q = q0; q < q1; ++q) {
                if (q < ACH) {
                    if ((BM * ACOL) % THREADS == 0 || tid + q * THREADS < BM * ACOL)
                        __pipeline_memcpy_async(As + s * BM * AS + da
                                                    + q * (THREADS / ACOL) * AS,
                                                ga + (size_t)t * BK + q * sa, 16);
                } else if ((BK * BCOL) % THREADS == 0
                           || tid + (q - ACH) * THREADS < BK * BCOL) {
                    __pipeline_memcpy_async(
                        Bs + s * BK * BS + db + (q - ACH) * (THREADS / BCOL) * BS,
                        gb + (size_t)t * BK * N + (q - ACH) * sb, 16);
                }
            }
        } else if (q0 == 0) {
            gl_tc_stage<BM, BK, AS, THREADS>(As + s * BM * AS, A, M, K, row0,
                                             t * BK, true, tid);
            gl_tc_stage<BK, BN, BS, THREADS>(Bs + s * BK * BS, B, K, N, t * BK,
                                             col0, true, tid);
        }
    };
    // the fragments of k step kk of stage s
    auto load = [&](unsigned (&a)[MT][4], unsigned (&b)[NT][2], int s, int kk) {
        const T* as = As + s * BM * AS;
        const T* bs = Bs + s * BK * BS;
        // rows 0-15; lanes 16-31 the second 16 bytes of k
        #pragma unroll
        for (int i = 0; i < MT; ++i) {
            gl_ldmatrix_x4(a[i],
                           as + (wm + 16 * i + lane % 16) * AS + kk
                               + (lane / 16) * V,
                           false);
            if (TF)
                #pragma unroll
                for (int r = 0; r < 4; ++r) a[i][r] = gl_tf32_bits(a[i][r]);
        }
        if constexpr (!TF) {
            // two 8-column tiles of B per ldmatrix.x4.trans
            #pragma unroll
            for (int j = 0; j < NT; j += 2) {
                unsigned r[4];
                gl_ldmatrix_x4(r,
                               bs + (kk + lane % 16) * BS + wn + 8 * j
                                   + (lane / 16) * 8,
                               true);
                b[j][0] = r[0]; b[j][1] = r[1];
                b[j + 1][0] = r[2]; b[j + 1][1] = r[3];
            }
        } else {
            // tiles j, j+1: even, odd columns of a 16-column band
            #pragma unroll
            for (int j = 0; j < NT; j += 2)
                #pragma unroll
                for (int h = 0; h < 2; ++h) {                // k = l%4 and l%4 + 4
                    const float2 v = *reinterpret_cast<const float2*>(
                        bs + (kk + lane % 4 + 4 * h) * BS + wn + 8 * j
                        + 2 * (lane / 4));
                    b[j][h] = gl_tf32_bits(__float_as_uint(v.x));
                    b[j + 1][h] = gl_tf32_bits(__float_as_uint(v.y));
                }
        }
    };
    #pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        copies(t, t, 0, QT);
        __pipeline_commit();
    }
    __pipeline_wait_prior(STAGES - 2);
    __syncthreads();
    unsigned a[2][MT][4], b[2][NT][2];
    load(a[0], b[0], 0, 0);
    // the stage read, the stage written
    int s = 0, w = STAGES - 1;
    for (int t = 0; t < tiles; ++t) {
        #pragma unroll
        for (int st = 0; st < STEPS; ++st) {
            copies(t + STAGES - 1, w, st * QT / STEPS, (st + 1) * QT / STEPS);
            if (st == STEPS - 1) {
                // tile t+1 has landed (this thread's copies, then everyone's), and
                // once every warp is here none reads stage s again: its step's
                // fragments are in registers
                __pipeline_commit();
                __pipeline_wait_prior(STAGES - 2);
                __syncthreads();
                s = s + 1 == STAGES ? 0 : s + 1;
                w = w + 1 == STAGES ? 0 : w + 1;
                if (t + 1 < tiles) load(a[(st + 1) % 2], b[(st + 1) % 2], s, 0);
            } else {
                load(a[(st + 1) % 2], b[(st + 1) % 2], s, (st + 1) * KS);
            }
            #pragma unroll
            for (int i = 0; i < MT; ++i)
                #pragma unroll
                for (int j = 0; j < NT; ++j)
                    gl_mma<PREC>(acc[i][j], a[st % 2][i], b[st % 2][j]);
        }
    }
    };
    if (interior) mainloop(gl_bool<true>{});
    else mainloop(gl_bool<false>{});
    __pipeline_wait_prior(0);

    // lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1 of each
    // 16 x 8 tile; for TF32 those are columns 4(l%4) + {0, 2} (tile j) and + {1, 3}
    // (tile j+1) of the band: four neighbours
    #pragma unroll
    for (int i = 0; i < MT; ++i)
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = row0 + wm + 16 * i + lane / 4 + 8 * h;
            if (r >= M) continue;
            #pragma unroll
            for (int j = 0; j < NT; j += (TF ? 2 : 1)) {
                if constexpr (TF) {
                    const int c = col0 + wn + 8 * j + 4 * (lane % 4);
                    // N a multiple of 16: all four inside
                    if (c < N)
                        *reinterpret_cast<float4*>(C + (size_t)r * N + c) =
                            make_float4(acc[i][j][2 * h], acc[i][j + 1][2 * h],
                                        acc[i][j][2 * h + 1],
                                        acc[i][j + 1][2 * h + 1]);
                } else {
                    const int c = col0 + wn + 8 * j + 2 * (lane % 4);
                    if (c < N)                               // both columns inside
                        *reinterpret_cast<float2*>(C + (size_t)r * N + c) =
                            make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                }
            }
        }
}
// [kernel]
