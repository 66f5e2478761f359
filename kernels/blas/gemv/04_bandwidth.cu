// blas/gemv/04_bandwidth.cu — GEMV step 4: every read of A coalesced, and enough of
// them in flight.
//
// What changed since 03_row_col_split: GEMV reads each element of A once (4 bytes
// per 2 FLOPs), so its speed is the bandwidth at which A streams in; what step 3
// lacked was loads in flight (each thread ran one dependent chain, one load at a
// time) and, for 'T', coalescing. Here each TRANS has its own mapping of threads to
// A, the one in which a warp's loads are contiguous:
//   'N' (y = A x, A column-major): a column is contiguous, so a lane takes VEC
//       consecutive rows (1, or 4 with one 16-byte load when aoff and lda are
//       multiples of 4) and a warp 32 * VEC rows: 128 or 512 contiguous bytes of a
//       column per warp load. The WARPS warps of a block share those rows and take
//       every WARPS-th column each; each thread keeps UNROLL columns' loads in
//       flight before it adds. The warps' partial sums meet in shared memory.
//       ceil(M / (32 VEC)) blocks: for M = 4096, 128 or 32, too few to keep the
//       whole HBM busy. SPLIT > 1 cuts the columns into SPLIT slices, one block
//       each (gridDim.y): each block writes its 32 * VEC partial sums to
//       partials[slice][row]; the last of a row group's SPLIT blocks to finish (its
//       counter in counters[blockIdx.x], advanced with atomicAdd after a
//       __threadfence, and reset by that block) adds the SPLIT partials, its warps
//       taking every WARPS-th slice and then warp 0 their sums, and writes y: one
//       launch, the same bits every run. counters is zeroed once when allocated;
//       partials holds SPLIT * M floats. ('T' ignores SPLIT.)
//   'T' (y = A^T x): output i is column i of A dotted with x, so a warp takes a
//       column: lanes read 16 bytes each (LDG.128, 512 contiguous bytes per warp
//       load) when the column starts 16-byte aligned (aoff and lda multiples of 4,
//       unit incx, xoff a multiple of 4), else 4 bytes; UNROLL loads in flight per
//       lane; a warp shuffle sums the lanes. A block holds WARPS columns: ceil(M /
//       WARPS) blocks.
// M and N are op(A)'s rows and columns (y has M elements, x has N), as in the other
// GEMV steps.
// CS = 1 loads A with __ldcs (streaming: evict-first lines in L2; A is read once;
// see DOT 7).
// Each output is written once: y_i = alpha * sum + beta * y_i (beta = 0: y is not
// read).
// Expected bottleneck: DRAM bandwidth for A.
// Sizes: any M, N >= 0.

#include "common/blas.cuh"

// [kernel]
template <int WARPS, int UNROLL, int SPLIT, int VEC, int CS, int TRANS>
__global__ void __launch_bounds__(WARPS * 32)
gemv_bandwidth(const float* __restrict__ A, int aoff, int lda,
               const float* __restrict__ x, int xoff, int incx,
               float* __restrict__ y, int yoff, int incy, int M, int N,
               float alpha, float beta, unsigned int* counters, float* partials)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (TRANS == 0) {
        // M rows of y; a lane: VEC consecutive rows from r0, columns warp, warp +
        // WARPS, ... of its slice
        constexpr int R = 32 * VEC;                    // rows per block
        __shared__ float partial[WARPS][R];
        const long long r0 = blockIdx.x * (long long)R + lane * VEC;
        const long long slice = (N + SPLIT - 1) / SPLIT;
        const long long j0 = SPLIT == 1 ? 0 : blockIdx.y * slice;
        const long long j1 = SPLIT == 1 ? N : (j0 + slice < N ? j0 + slice : N);
        // 16-byte loads of VEC = 4 rows when they lie inside A and 16-byte aligned
        const bool vec = VEC == 4 && aoff % 4 == 0 && lda % 4 == 0 && r0 + 3 < M;
        const float* a = A + aoff + r0;
        auto rows_at = [&](long long j) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (vec)
                return CS ? __ldcs(reinterpret_cast<const float4*>(a + j * lda))
                          : *reinterpret_cast<const float4*>(a + j * lda);
            const float* c = a + j * lda;
            if (r0 < M) v.x = CS ? __ldcs(c) : c[0];
            if (VEC > 1 && r0 + 1 < M) v.y = CS ? __ldcs(c + 1) : c[1];
            if (VEC > 2 && r0 + 2 < M) v.z = CS ? __ldcs(c + 2) : c[2];
            if (VEC > 3 && r0 + 3 < M) v.w = CS ? __ldcs(c + 3) : c[3];
            return v;
        };
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r0 < M) {
            long long j = j0 + warp;
            for (; j + (UNROLL - 1) * WARPS < j1; j += UNROLL * WARPS) {
                float4 av[UNROLL];
                float xv[UNROLL];
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    av[u] = rows_at(j + u * WARPS);
                    xv[u] = x[gl_vec(xoff, incx, j + u * WARPS)];
                }
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    sum.x += av[u].x * xv[u]; sum.y += av[u].y * xv[u];
                    sum.z += av[u].z * xv[u]; sum.w += av[u].w * xv[u];
                }
            }
            for (; j < j1; j += WARPS) {
                const float4 av = rows_at(j);
                const float xv = x[gl_vec(xoff, incx, j)];
                sum.x += av.x * xv; sum.y += av.y * xv;
                sum.z += av.z * xv; sum.w += av.w * xv;
            }
        }
        const float mine[4] = {sum.x, sum.y, sum.z, sum.w};
        #pragma unroll
        for (int v = 0; v < VEC; ++v) partial[warp][lane * VEC + v] = mine[v];
        __syncthreads();
        // warp 0: lane l totals rows l, l + 32, ... of the block (consecutive
        // lanes, consecutive rows)
        float total[VEC];
        const long long base = blockIdx.x * (long long)R + lane;
        if (warp == 0) {
            #pragma unroll
            for (int v = 0; v < VEC; ++v) {
                total[v] = 0.0f;
                #pragma unroll
                for (int w = 0; w < WARPS; ++w)
                    total[v] += partial[w][lane + 32 * v];
            }
        }
        if (SPLIT > 1) {
            __shared__ bool last;
            if (warp == 0) {
                #pragma unroll
                for (int v = 0; v < VEC; ++v)
                    if (base + 32 * v < M)
                        partials[blockIdx.y * (long long)M + base + 32 * v] =
                            total[v];
                // the partials are visible before the count says so
                __threadfence();
            }
            __syncthreads();
            if (threadIdx.x == 0)
                last = atomicAdd(counters + blockIdx.x, 1u) == SPLIT - 1;
            __syncthreads();
            if (!last) return;
            __threadfence();
            // the last block: warp w adds slices w, w + WARPS, ... of the rows,
            // then warp 0 the WARPS sums, in that order (the same bits every run);
            // SPLIT / WARPS loads per lane instead of SPLIT
            float part[VEC];
            #pragma unroll
            for (int v = 0; v < VEC; ++v) {
                part[v] = 0.0f;
                if (base + 32 * v < M) {
                    #pragma unroll 8
                    for (int s = warp; s < SPLIT; s += WARPS)
                        part[v] += __ldcg(partials + s * (long long)M
                                          + base + 32 * v);
                }
                // (warp 0 read partial before the barriers above)
                partial[warp][lane + 32 * v] = part[v];
            }
            __syncthreads();
            if (warp != 0) return;
            #pragma unroll
            for (int v = 0; v < VEC; ++v) {
                total[v] = 0.0f;
                #pragma unroll
                for (int w = 0; w < WARPS; ++w)
                    total[v] += partial[w][lane + 32 * v];
            }
            if (lane == 0) counters[blockIdx.x] = 0u;  // ready for the next launch
        }
        if (warp != 0) return;
        #pragma unroll
        for (int v = 0; v < VEC; ++v) {
            const long long i = base + 32 * v;
            if (i < M) {
                float* out = y + gl_vec(yoff, incy, i);
                *out = alpha * total[v] + (beta == 0.0f ? 0.0f : beta * *out);
            }
        }
    } else {
        // M outputs (the columns of A); warp: column c = blockIdx.x * WARPS + warp,
        // dotted with x (N long)
        const long long c = blockIdx.x * (long long)WARPS + warp;
        if (c >= M) return;
        const float* col = A + aoff + c * lda;
        float sum = 0.0f;
        if (incx == 1 && xoff % 4 == 0 && aoff % 4 == 0 && lda % 4 == 0) {
            const float4* a4 = reinterpret_cast<const float4*>(col);
            const float4* x4 = reinterpret_cast<const float4*>(x + xoff);
            const long long m4 = N / 4;
            long long r = lane;
            for (; r + (UNROLL - 1) * 32 < m4; r += UNROLL * 32) {
                float4 av[UNROLL], xv[UNROLL];
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    av[u] = CS ? __ldcs(a4 + r + u * 32) : a4[r + u * 32];
                    xv[u] = x4[r + u * 32];
                }
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    sum += av[u].x * xv[u].x + av[u].y * xv[u].y + av[u].z * xv[u].z
                           + av[u].w * xv[u].w;
            }
            for (; r < m4; r += 32) {
                const float4 a = CS ? __ldcs(a4 + r) : a4[r], b = x4[r];
                sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
            }
            if (lane < N % 4) sum += col[m4 * 4 + lane] * x[xoff + m4 * 4 + lane];
        } else {
            for (long long r = lane; r < N; r += 32)
                sum += col[r] * x[gl_vec(xoff, incx, r)];
        }
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (lane == 0) {
            float* out = y + gl_vec(yoff, incy, c);
            *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
        }
    }
}
// [kernel]
