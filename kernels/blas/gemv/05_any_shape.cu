// blas/gemv/05_any_shape.cu — GEMV step 5: y = A^T x for every shape, the short
// columns and the long ones.
//
// What changed since 04_bandwidth: GEMV 4's 'T' gives each warp one whole column of
// A (one output), so the GPU holds as many warps as y has elements. That is right
// for a square A and wrong at both ends:
//   - short columns (A 64 x 100000, 'T': 100000 outputs of 64 terms): 16 float4 per
//     column keep 16 of a warp's 32 lanes busy, and each warp's handful of loads
//     are all it ever has in flight;
//   - few long columns (A 100000 x 64, 'T': 64 outputs of 100000 terms): 64 warps,
//     two blocks, on a GPU of a hundred SMs.
// Here LANES lanes (4, 8, 16 or 32) share a column, so a warp takes 32 / LANES
// columns, and SPLIT blocks (gridDim.y) share the column's length, each one a slice
// of whole float4s: one launch fills the GPU whichever way A is long. Each lane
// keeps UNROLL 16-byte loads in flight (when the column starts 16-byte aligned:
// aoff and lda multiples of 4, unit incx, xoff a multiple of 4; else 4-byte loads);
// a shuffle sums the LANES lanes of a column (butterfly, xor < LANES). With SPLIT >
// 1 each block writes its columns' partial sums to partials[slice][column] and the
// last of a column group's SPLIT blocks to finish (a counter per group, advanced
// with atomicAdd after a __threadfence, reset by that block) adds the slices in
// slice order and writes y: the same bits every run, as GEMV 4's split 'N'.
// counters is zeroed once when allocated; partials holds SPLIT * M floats.
// M and N are op(A)'s rows and columns (y has M elements: A's columns; x has N: A's
// rows), as in the other GEMV steps; this step computes 'T' only (TRANS is fixed),
// 'N' is GEMV 4's.
// CS = 1 loads A with __ldcs (streaming, as in GEMV 4). Each output is written
// once:
// y_i = alpha * sum + beta * y_i (beta = 0: y is not read).
// Expected bottleneck: DRAM bandwidth for A.
// Sizes: any M, N >= 0.

#include "common/blas.cuh"

// [kernel]
template <int WARPS, int LANES, int UNROLL, int SPLIT, int CS>
__global__ void __launch_bounds__(WARPS * 32)
gemv_any_shape(const float* __restrict__ A, int aoff, int lda,
               const float* __restrict__ x, int xoff, int incx,
               float* __restrict__ y, int yoff, int incy, int M, int N,
               float alpha, float beta, unsigned int* counters, float* partials)
{
    static_assert(LANES == 4 || LANES == 8 || LANES == 16 || LANES == 32,
                  "LANES divides a warp");
    // columns of a warp, of a block
    constexpr int PER_WARP = 32 / LANES, COLS = WARPS * PER_WARP;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    // the lane's place in its column's group
    const int sub = lane % LANES;
    const long long c =
        blockIdx.x * (long long)COLS + warp * PER_WARP + lane / LANES;
    // this block's slice of the column: whole float4s [r0, r1) of N
    const long long n4 = (N + 3) / 4, per = (n4 + SPLIT - 1) / SPLIT;
    // (past N in an empty last slice)
    const long long start = blockIdx.y * per * 4;
    const long long r0 = SPLIT == 1 ? 0 : (start < N ? start : N);
    const long long r1 = SPLIT == 1 ? N
                                    : (start + per * 4 < N ? start + per * 4 : N);
    float sum = 0.0f;
    if (c < M) {
        const float* col = A + aoff + c * lda;
        if (incx == 1 && xoff % 4 == 0 && aoff % 4 == 0 && lda % 4 == 0) {
            const float4* a4 = reinterpret_cast<const float4*>(col);
            const float4* x4 = reinterpret_cast<const float4*>(x + xoff);
            // whole float4s below r1
            const long long q1 = r1 / 4;
            long long q = r0 / 4 + sub;
            for (; q + (UNROLL - 1) * LANES < q1; q += UNROLL * LANES) {
                float4 av[UNROLL], xv[UNROLL];
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
                    av[u] = CS ? __ldcs(a4 + q + u * LANES) : a4[q + u * LANES];
                    xv[u] = x4[q + u * LANES];
                }
                #pragma unroll
                for (int u = 0; u < UNROLL; ++u)
                    sum += av[u].x * xv[u].x + av[u].y * xv[u].y + av[u].z * xv[u].z
                           + av[u].w * xv[u].w;
            }
            for (; q < q1; q += LANES) {
                const float4 a = CS ? __ldcs(a4 + q) : a4[q], b = x4[q];
                sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
            }
            // last 1-3 rows
            if (q1 * 4 >= r0 && q1 * 4 + sub < r1)
                sum += col[q1 * 4 + sub] * x[xoff + q1 * 4 + sub];
        } else {
            for (long long r = r0 + sub; r < r1; r += LANES)
                sum += col[r] * x[gl_vec(xoff, incx, r)];
        }
    }
    #pragma unroll
    for (int offset = LANES / 2; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (SPLIT > 1) {
        __shared__ bool last;
        if (sub == 0 && c < M) partials[blockIdx.y * (long long)M + c] = sum;
        // the partials are visible before the count says so
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
            last = atomicAdd(counters + blockIdx.x, 1u) == SPLIT - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
        if (sub == 0 && c < M) {
            sum = 0.0f;
            // slice order
            for (int s = 0; s < SPLIT; ++s)
                sum += __ldcg(partials + s * (long long)M + c);
        }
        // ready for the next launch
        if (threadIdx.x == 0) counters[blockIdx.x] = 0u;
    }
    if (sub == 0 && c < M) {
        float* out = y + gl_vec(yoff, incy, c);
        *out = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
    }
}
// [kernel]
