// common/sgemm_tiles.cuh — moving tiles of row-major FP32 matrices, for Part IV's
// SGEMM kernels.
//
// Every kernel of Part IV reads A (M x K) and B (K x N) four floats at a time (one
// 16-byte load, LDG.128) when a row's length is a multiple of 4 (then every 4-float
// group starting at a multiple of 4 is 16-byte aligned, CuPy's allocations being
// 256-byte aligned) and the group lies inside the matrix; otherwise, at the right
// and bottom edges and for any other row length, float by float, with zeros outside
// the matrix. So every size works, and the sizes that are multiples of the tiles
// take the fast path.
#pragma once

// Four consecutive floats of row r of a row-major matrix with rows of ld floats (ld
// = cols unless given), from column c; 0 outside rows x cols (a split-K slice
// bounds the columns short of the row's end).
__device__ __forceinline__ float4 gl_load4(const float* __restrict__ m, int rows,
                                           int cols, int r, int c, bool vec,
                                           int ld = -1)
{
    const size_t stride = ld < 0 ? (size_t)cols : (size_t)ld;
    if (vec && r < rows && c + 3 < cols)
        return *reinterpret_cast<const float4*>(m + (size_t)r * stride + c);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows) {
        const float* row = m + (size_t)r * stride;
        if (c < cols) v.x = row[c];
        if (c + 1 < cols) v.y = row[c + 1];
        if (c + 2 < cols) v.z = row[c + 2];
        if (c + 3 < cols) v.w = row[c + 3];
    }
    return v;
}

// Store four consecutive floats into row r of C (rows x cols) from column c; what
// lies outside is dropped.
__device__ __forceinline__ void gl_store4(float* __restrict__ m, int rows, int cols,
                                          int r, int c, float4 v, bool vec)
{
    if (r >= rows) return;
    float* row = m + (size_t)r * cols;
    if (vec && c + 3 < cols) {
        *reinterpret_cast<float4*>(row + c) = v;
        return;
    }
    if (c < cols) row[c] = v.x;
    if (c + 1 < cols) row[c + 1] = v.y;
    if (c + 2 < cols) row[c + 2] = v.z;
    if (c + 3 < cols) row[c + 3] = v.w;
}

// The shape of a warp-tiled block (Part IV): a BM x BN block tile of
// (BM/WM) x (BN/WN) warps, each warp's lanes as LR rows by LC = 32 / LR columns of
// 4 x 4 sub-tiles (8 x 4 unless asked), MI x NI of them per lane; A_LOADS and
// B_LOADS float4s of the BM x BK and BK x BN tiles per thread per tile.
template <int BM, int BN, int BK, int WM, int WN, int LANE_ROWS = 8>
struct gl_warp_tiling {
    static constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr int LR = LANE_ROWS, LC = 32 / LANE_ROWS;
    static constexpr int MI = WM / (4 * LR), NI = WN / (4 * LC);
    static constexpr int A_LOADS = BM * BK / 4 / THREADS,
                         B_LOADS = BK * BN / 4 / THREADS;
    static_assert(WM % (4 * LR) == 0 && WN % (4 * LC) == 0,
                  "a warp tile is a whole number of sub-tiles");
    static_assert(BM % WM == 0 && BN % WN == 0,
                  "the warp tiles fill the block tile");
    static_assert(A_LOADS * THREADS * 4 == BM * BK
                      && B_LOADS * THREADS * 4 == BK * BN,
                  "every thread moves whole float4s of both tiles");
};

// One k of a warp tile: the lane's MI sub-tile columns of the transposed A tile
// (row k of As[k][m]) and NI sub-tile rows of B (row k of Bs[k][n]), one LDS.128
// each, then their outer product into acc. wm, wn: the warp's corner in the block
// tile; lm, ln: the lane's corner in a sub-tile.
// SNAKE orders the FMAs row by row, every other row backwards (a boustrophedon):
// each FFMA then shares an operand register with the one before it, at the turns
// too, and the hardware's operand reuse cache serves it instead of the register
// file (measured on the H200: 87% -> 90% of cuBLAS for sgemm/10 at 4096; fewer
// dispatch stalls in Nsight Compute). SNAKE = false is the plain row-by-row order.
template <int MI, int NI, int LR, int LC, bool SNAKE = true>
__device__ __forceinline__ void gl_warp_tile_fma(const float* as_k,
                                                 const float* bs_k, int wm, int wn,
                                                 int lm, int ln,
                                                 float (&acc)[MI * 4][NI * 4])
{
    float a[MI * 4], b[NI * 4];
    #pragma unroll
    for (int i = 0; i < MI; ++i) {
        const float4 v =
            *reinterpret_cast<const float4*>(as_k + wm + i * 4 * LR + lm);
        a[4 * i + 0] = v.x; a[4 * i + 1] = v.y;
        a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
    }
    #pragma unroll
    for (int j = 0; j < NI; ++j) {
        const float4 v =
            *reinterpret_cast<const float4*>(bs_k + wn + j * 4 * LC + ln);
        b[4 * j + 0] = v.x; b[4 * j + 1] = v.y;
        b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
    }
    #pragma unroll
    for (int i = 0; i < MI * 4; ++i)
        #pragma unroll
        for (int jj = 0; jj < NI * 4; ++jj) {
            const int j = SNAKE && (i & 1) ? NI * 4 - 1 - jj : jj;
            acc[i][j] += a[i] * b[j];
        }
}

// Registers <- global memory: thread tid's AL float4s of the BM x BK tile of A at
// (row0, k0), four consecutive k at a time; columns at or past kend read as zeros
// (K, or the end of a split-K slice).
template <int BK, int THREADS, int AL>
__device__ __forceinline__ void gl_fetch_a(const float* __restrict__ A, int M,
                                           int K, int kend, int row0, int k0,
                                           bool avec, int tid, float4 (&ra)[AL])
{
    #pragma unroll
    for (int l = 0; l < AL; ++l) {
        const int i = tid + l * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        ra[l] = gl_load4(A, M, kend, row0 + r, k0 + c, avec, K);
    }
}

// The same for A, and BL float4s of the BK x BN tile of B at (k0, col0), four
// consecutive columns at a time; rows of B at or past kend read as zeros.
template <int BM, int BN, int BK, int THREADS, int AL, int BL>
__device__ __forceinline__ void gl_fetch_tiles(const float* __restrict__ A,
                                               const float* __restrict__ B, int M,
                                               int N, int K, int kend, int row0,
                                               int col0, int k0, bool avec,
                                               bool bvec, int tid, float4 (&ra)[AL],
                                               float4 (&rb)[BL])
{
    gl_fetch_a<BK, THREADS>(A, M, K, kend, row0, k0, avec, tid, ra);
    #pragma unroll
    for (int l = 0; l < BL; ++l) {
        const int i = tid + l * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        rb[l] = gl_load4(B, kend, N, k0 + r, col0 + c, bvec);
    }
}

// Shared memory <- registers, what gl_fetch_a loaded: A transposed into as[k][m]
// (rows of AP floats).
template <int BK, int THREADS, int AP, int AL>
__device__ __forceinline__ void gl_stash_a(float* as, int tid,
                                           const float4 (&ra)[AL])
{
    #pragma unroll
    for (int l = 0; l < AL; ++l) {
        const int i = tid + l * THREADS, r = i / (BK / 4), c = (i % (BK / 4)) * 4;
        as[(c + 0) * AP + r] = ra[l].x;
        as[(c + 1) * AP + r] = ra[l].y;
        as[(c + 2) * AP + r] = ra[l].z;
        as[(c + 3) * AP + r] = ra[l].w;
    }
}

// What gl_fetch_tiles loaded: A as gl_stash_a stores it, B as it lies into bs[k][n]
// (rows of BP floats, a multiple of 4).
template <int BN, int BK, int THREADS, int AP, int BP, int AL, int BL>
__device__ __forceinline__ void gl_stash_tiles(float* as, float* bs, int tid,
                                               const float4 (&ra)[AL],
                                               const float4 (&rb)[BL])
{
    gl_stash_a<BK, THREADS, AP>(as, tid, ra);
    #pragma unroll
    for (int l = 0; l < BL; ++l) {
        const int i = tid + l * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
        *reinterpret_cast<float4*>(bs + r * BP + c) = rb[l];
    }
}

// A warp tile's accumulators into C (rows x cols), four columns at a time: each
// lane's MI x NI sub-tiles of 4 x 4 at (wm, wn) + (lm, ln) of the block's tile at
// (row0, col0). SPLITK > 1 adds them into C with atomicAdd (C zeroed first); what
// lies outside C is dropped.
template <int MI, int NI, int LR, int LC, int SPLITK = 1>
__device__ __forceinline__ void gl_store_warp_tile(
    float* __restrict__ C, int M, int N, int row0, int col0, int wm, int wn, int lm,
    int ln, const float (&acc)[MI * 4][NI * 4])
{
    const bool cvec = (N % 4) == 0;
    #pragma unroll
    for (int i = 0; i < MI * 4; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int r = row0 + wm + (i / 4) * 4 * LR + lm + i % 4;
            const int c = col0 + wn + j * 4 * LC + ln;
            const float4 v = make_float4(acc[i][4 * j], acc[i][4 * j + 1],
                                         acc[i][4 * j + 2], acc[i][4 * j + 3]);
            if (SPLITK == 1) {
                gl_store4(C, M, N, r, c, v, cvec);
            } else if (r < M) {
                float* row = C + (size_t)r * N;
                if (c < N) atomicAdd(row + c, v.x);
                if (c + 1 < N) atomicAdd(row + c + 1, v.y);
                if (c + 2 < N) atomicAdd(row + c + 2, v.z);
                if (c + 3 < N) atomicAdd(row + c + 3, v.w);
            }
        }
}

// The first row and column (x, y) of this block's BM x BN tile of C when a
// one-dimensional grid's blocks go in bands of GROUP block-rows, column by column
// within a band: consecutive blocks share tiles of A and walk B together, so more
// of both is still in L2 when the next blocks want them. GROUP = 1 is the plain
// row-by-row order.
template <int BM, int BN, int GROUP>
__device__ __forceinline__ int2 gl_band_tile(int M, int N)
{
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int band = GROUP * tiles_n, first = (int)(blockIdx.x / band) * GROUP;
    const int rows_here = tiles_m - first < GROUP ? tiles_m - first : GROUP;
    return make_int2((first + (int)(blockIdx.x % band) % rows_here) * BM,
                     ((int)(blockIdx.x % band) / rows_here) * BN);
}
