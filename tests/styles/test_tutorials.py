"""Kernels written here, in our own words, in the styles of the well-known GPU tutorials and textbooks.

GEMM tutorials, the CUDA programming guide's examples, the classic reduction, scan, histogram, transpose,
convolution and sorting kernels of courses and books: each source below uses the forms those write (macros,
file-scope constants, structs passed by value to device helpers, `__shared__` arrays declared in a loop,
pointers walked through a matrix, templates on block sizes, volatile warp code made safe with `__syncwarp`,
grid-stride loops, half precision), with no host code. None of it is copied: the code is ours, the forms are
theirs. Every test runs on the backend in use and checks against NumPy: on a GPU the tests check the kernels,
on the emulator they check the emulator, and both must pass. The samples' and training code's styles are in
test_samples.py and test_training_code.py beside this file.
"""
from __future__ import annotations

import numpy
import pytest

import gemmlab as gl

xp = gl.xp
rng = numpy.random.default_rng(2024)


def dev(a):
    return xp.array(a)                 # a copy on either backend: a kernel's writes must not reach the inputs


def host(a):
    return gl.to_host(a)


# --- a GEMM tutorial's first steps: one thread per element of C, then tiles staged in shared memory ----------

GEMM_TUTORIAL = r'''
#include <cstdlib>                     // tutorials include the host's headers; with glibc's comes `uint`
#define DIV_UP(x, y) (((x) + (y) - 1) / (y))

// C = alpha A B + beta C, all row-major. A flat block of S * S threads covers an S x S tile of C; consecutive
// threads take consecutive columns, so the B loads of a warp fall on consecutive words
template <const uint S>
__global__ void gemm_flat_block(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                                float* C)
{
    const uint row = blockIdx.y * S + threadIdx.x / S;
    const uint col = blockIdx.x * S + threadIdx.x % S;
    if (row >= (uint)M || col >= (uint)N) return;
    float dot = 0.0f;
    for (int k = 0; k < K; ++k) dot += A[row * K + k] * B[k * N + col];
    C[row * N + col] = alpha * dot + beta * C[row * N + col];
}

// the same tile, its operands staged S columns of A and S rows of B at a time. A and B are walked in place:
// first to the block's rows and columns, then S to the right (A) and S down (B) after each stage
template <const int S>
__global__ void gemm_smem_walk(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                               float* C)
{
    __shared__ float tileA[S * S];
    __shared__ float tileB[S * S];
    const int ty = threadIdx.x / S, tx = threadIdx.x % S;
    const int row = blockIdx.y * S + ty, col = blockIdx.x * S + tx;
    A += blockIdx.y * S * K;
    B += blockIdx.x * S;
    float dot = 0.0f;
    for (int k0 = 0; k0 < K; k0 += S) {
        tileA[ty * S + tx] = (row < M && k0 + tx < K) ? A[ty * K + tx] : 0.0f;     // zeros past the edges
        tileB[ty * S + tx] = (k0 + ty < K && col < N) ? B[ty * N + tx] : 0.0f;
        __syncthreads();
        A += S;
        B += S * N;
        for (int k = 0; k < S; ++k) dot += tileA[ty * S + k] * tileB[k * S + tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = alpha * dot + beta * C[row * N + col];
}
'''


@pytest.mark.parametrize("name", ["gemm_flat_block<32>", "gemm_smem_walk<32>", "gemm_smem_walk<8>"])
def test_gemm_tutorial_kernels(name):
    m = gl.load(code=GEMM_TUTORIAL)
    M, N, K = 77, 45, 53                                   # no multiple of either tile
    A, B = rng.standard_normal((M, K), dtype=numpy.float32), rng.standard_normal((K, N), dtype=numpy.float32)
    C0 = rng.standard_normal((M, N), dtype=numpy.float32)
    ref = 1.5 * A.astype(numpy.float64) @ B - 0.5 * C0
    S = int(name.split("<")[1].rstrip(">"))
    C = dev(C0)
    m.get(name)((-(-N // S), -(-M // S)), S * S, (M, N, K, 1.5, dev(A), dev(B), -0.5, C))
    assert numpy.abs(host(C) - ref).max() < 1e-4 * numpy.abs(ref).max(), name


# --- the programming guide's way: a matrix as a struct passed by value, device helpers, views of blocks ---

MATRIX_STRUCTS = r'''
#define TILE 16
typedef struct {
    int rows, cols, ld;                // ld: elements from one row to the next
    float* p;
} Mat;

__device__ float get(const Mat m, int r, int c) { return m.p[r * m.ld + c]; }
__device__ void put(Mat m, int r, int c, float v) { m.p[r * m.ld + c] = v; }

// the TILE x TILE block of m at block coordinates (br, bc): a view that shares m's storage
__device__ Mat block_of(Mat m, int br, int bc)
{
    Mat b;
    b.rows = TILE;
    b.cols = TILE;
    b.ld = m.ld;
    b.p = m.p + (br * m.ld + bc) * TILE;
    return b;
}

__global__ void matmul_views(float* a, float* b, float* c, int n)          // n: a multiple of TILE
{
    const Mat A = {n, n, n, a}, B = {n, n, n, b};
    Mat out = block_of(Mat{n, n, n, c}, blockIdx.y, blockIdx.x);
    const int r = threadIdx.y, col = threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < A.cols / TILE; ++t) {
        const Mat at = block_of(A, blockIdx.y, t), bt = block_of(B, t, blockIdx.x);
        __shared__ float sa[TILE][TILE];        // declared inside the loop: still one array per block
        __shared__ float sb[TILE][TILE];
        sa[r][col] = get(at, r, col);
        sb[r][col] = get(bt, r, col);
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += sa[r][k] * sb[k][col];
        __syncthreads();
    }
    put(out, r, col, acc);
}
'''


def test_matrix_structs_passed_by_value_and_shared_arrays_declared_in_a_loop():
    n = 48
    A, B = rng.standard_normal((n, n), dtype=numpy.float32), rng.standard_normal((n, n), dtype=numpy.float32)
    C = xp.zeros((n, n), dtype=numpy.float32)
    gl.load(code=MATRIX_STRUCTS).get("matmul_views")((3, 3), (16, 16), (dev(A), dev(B), C, n))
    assert numpy.allclose(host(C), A.astype(numpy.float64) @ B, rtol=1e-4, atol=1e-4)


# --- reductions: two loads per thread, a tree in shared memory, the unrolled last warp; warp shuffles ------

REDUCTIONS = r'''
// the last 64 partial sums of a block, folded by its first warp. volatile, so that each step reads shared
// memory again; __syncwarp between steps, so that the lanes agree on when they read. A step still reads a word
// that another lane writes in that step: racecheck reports it, and the sum is the GPU's
template <unsigned int B>
__device__ void fold_last_warp(volatile float* part, unsigned int t)
{
    if (B >= 64) { part[t] += part[t + 32]; __syncwarp(); }
    if (B >= 32) { part[t] += part[t + 16]; __syncwarp(); }
    if (B >= 16) { part[t] += part[t + 8]; __syncwarp(); }
    if (B >= 8) { part[t] += part[t + 4]; __syncwarp(); }
    if (B >= 4) { part[t] += part[t + 2]; __syncwarp(); }
    if (B >= 2) { part[t] += part[t + 1]; __syncwarp(); }
}

// one partial sum per block. A pass of the grid covers 2 B gridDim.x elements: each thread adds a pair B apart,
// then jumps a grid ahead
template <unsigned int B>
__global__ void sum_pairs(const float* x, float* block_sums, unsigned int n)
{
    extern __shared__ float part[];
    const unsigned int t = threadIdx.x;
    float s = 0.0f;
    for (unsigned int i = blockIdx.x * 2 * B + t; i < n; i += 2 * B * gridDim.x) {
        s += x[i];
        if (i + B < n) s += x[i + B];
    }
    part[t] = s;
    __syncthreads();
#pragma unroll
    for (unsigned int half = B / 2; half >= 64; half /= 2) {
        if (t < half) part[t] += part[t + half];
        __syncthreads();
    }
    if (t < 32) fold_last_warp<B>(part, t);
    if (t == 0) block_sums[blockIdx.x] = part[0];
}

__inline__ __device__ float warp_total(float v)        // lane 0 ends with the warp's total
{
    for (int d = warpSize / 2; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    return v;
}

__inline__ __device__ float block_total(float v)       // thread 0 ends with the block's total
{
    static __shared__ float per_warp[32];
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    v = warp_total(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + warpSize - 1) / warpSize;
    v = (warp == 0 && lane < warps) ? per_warp[lane] : 0.0f;
    if (warp == 0) v = warp_total(v);
    return v;
}

__global__ void sum_into(const float* x, float* total, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
    s = block_total(s);
    if (threadIdx.x == 0) atomicAdd(total, s);
}
'''


def test_reductions():
    m = gl.load(code=REDUCTIONS)
    n = 100_003
    x = rng.standard_normal(n).astype(numpy.float32)
    ref = x.astype(numpy.float64).sum()
    partial = xp.zeros(64, dtype=numpy.float32)
    m.get("sum_pairs<256>")(64, 256, (dev(x), partial, n), shared_mem=256 * 4)
    assert abs(host(partial).astype(numpy.float64).sum() - ref) < 1e-4 * numpy.abs(x).sum()
    for block in (256, 96):                              # 96: a last warp the block's thread count does not fill
        out = xp.zeros(1, dtype=numpy.float32)
        m.get("sum_into")(40, block, (dev(x), out, n))
        assert abs(float(host(out)[0]) - ref) < 1e-4 * numpy.abs(x).sum(), block


# --- scans: double-buffered (Hillis-Steele) and work-efficient (up-sweep, down-sweep) with padded indices ----

SCANS = r'''
// exclusive scan of one block's n values (n == blockDim.x) in log2(n) steps; each step reads one half of a
// double buffer and writes the other, so no step reads a word written in the same step
__global__ void scan_double_buffer(const int* in, int* out, int n)
{
    extern __shared__ int buf[];                // 2 n ints
    const int t = threadIdx.x;
    int* src = buf;
    int* dst = buf + n;
    src[t] = t == 0 ? 0 : in[t - 1];            // shifted by one: the scan comes out exclusive
    __syncthreads();
    for (int d = 1; d < n; d <<= 1) {
        dst[t] = t >= d ? src[t] + src[t - d] : src[t];
        __syncthreads();
        int* swap = src;
        src = dst;
        dst = swap;
    }
    out[t] = src[t];
}

// exclusive scan of n = 2 blockDim.x values (a power of two): partial sums up a tree, then prefixes pushed
// down it. Every shared index is padded by one word per 32, so that a step's strided accesses spread over banks
#define BANKS 32
#define PAD(i) ((i) + ((i) / BANKS))
__global__ void scan_up_down(const int* in, int* out, int n)
{
    extern __shared__ int s[];
    const int t = threadIdx.x, h = n / 2;
    s[PAD(t)] = in[t];
    s[PAD(t + h)] = in[t + h];
    int stride = 1;
    for (int active = h; active > 0; active /= 2, stride *= 2) {
        __syncthreads();
        if (t < active) {
            const int left = stride * (2 * t + 1) - 1, right = left + stride;
            s[PAD(right)] += s[PAD(left)];
        }
    }
    if (t == 0) s[PAD(n - 1)] = 0;
    for (int active = 1; active < n; active *= 2) {
        stride /= 2;
        __syncthreads();
        if (t < active) {
            const int left = stride * (2 * t + 1) - 1, right = left + stride;
            const int l = s[PAD(left)];
            s[PAD(left)] = s[PAD(right)];
            s[PAD(right)] += l;
        }
    }
    __syncthreads();
    out[t] = s[PAD(t)];
    out[t + h] = s[PAD(t + h)];
}
'''


def test_scans():
    m = gl.load(code=SCANS)
    x = rng.integers(-50, 50, 512).astype(numpy.int32)
    exclusive = numpy.concatenate([[0], numpy.cumsum(x)[:-1]]).astype(numpy.int32)
    out = xp.zeros(256, dtype=numpy.int32)
    m.get("scan_double_buffer")(1, 256, (dev(x[:256]), out, 256), shared_mem=2 * 256 * 4)
    assert (host(out) == exclusive[:256]).all()
    out = xp.zeros(512, dtype=numpy.int32)
    m.get("scan_up_down")(1, 256, (dev(x), out, 512), shared_mem=(512 + 512 // 32) * 4)
    assert (host(out) == exclusive).all()


# --- a histogram with a private copy per block ------------------------------------------------------------

HISTOGRAM = r'''
#define BINS 256
__global__ void byte_histogram(const unsigned char* bytes, unsigned int* counts, size_t n)
{
    __shared__ unsigned int local[BINS];        // atomics on the block's own copy, then one merge per bin
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x)
        atomicAdd(&local[bytes[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&counts[b], local[b]);
}
'''


def test_histogram():
    data = rng.integers(0, 256, 200_001).astype(numpy.uint8)
    counts = xp.zeros(256, dtype=numpy.uint32)
    gl.load(code=HISTOGRAM).get("byte_histogram")(30, 128, (dev(data), counts, numpy.uint64(data.size)))
    assert (host(counts) == numpy.bincount(data, minlength=256)).all()


# --- a transpose through a padded tile ----------------------------------------------------------------------

TRANSPOSE = r'''
const int T = 32;                      // a T x T tile, moved by T x ROWS threads that take T / ROWS rows each
const int ROWS = 8;
__global__ void transpose_padded(float* out, const float* in, int cols, int rows)
{
    __shared__ float tile[T][T + 1];   // the extra column: the words of a tile's column fall in 32 banks
    const int bx = blockIdx.x * T, by = blockIdx.y * T;
    for (int r = threadIdx.y; r < T; r += ROWS) {
        const int y = by + r, x = bx + threadIdx.x;
        if (y < rows && x < cols) tile[r][threadIdx.x] = in[y * cols + x];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < T; r += ROWS) {       // out is cols x rows
        const int y = bx + r, x = by + threadIdx.x;
        if (y < cols && x < rows) out[y * rows + x] = tile[threadIdx.x][r];
    }
}
'''


def test_transpose():
    h, w = 70, 45
    a = rng.standard_normal((h, w), dtype=numpy.float32)
    out = xp.zeros((w, h), dtype=numpy.float32)
    gl.load(code=TRANSPOSE).get("transpose_padded")((2, 3), (32, 8), (out, dev(a), w, h))
    assert (host(out) == a.T).all()


# --- softmax and layer norm: one block per row, block reductions ------------------------------------

ROWWISE = r'''
#define NEG_FLT_MAX (-3.402823466e+38f)     // NVRTC has no <cfloat>
template <int BLOCK>
__device__ float block_reduce(float v, bool is_max)
{
    __shared__ float buf[BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    if (threadIdx.x % 32 == 0) buf[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < BLOCK / 32 ? buf[threadIdx.x] : (is_max ? NEG_FLT_MAX : 0.0f);
    if (threadIdx.x < 32)
        for (int o = 16; o > 0; o >>= 1) {
            float other = __shfl_xor_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, other) : v + other;
        }
    __shared__ float result;
    if (threadIdx.x == 0) result = v;
    __syncthreads();
    v = result;
    __syncthreads();
    return v;
}

template <int BLOCK>
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols)
{
    const float* row = x + (size_t)blockIdx.x * cols;
    float m = NEG_FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
    m = block_reduce<BLOCK>(m, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) s += __expf(row[c] - m);
    s = block_reduce<BLOCK>(s, false);
    for (int c = threadIdx.x; c < cols; c += BLOCK) y[(size_t)blockIdx.x * cols + c] = __expf(row[c] - m) / s;
}

template <int BLOCK>
__global__ void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y, int cols, float eps)
{
    const float* row = x + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) s += row[c];
    const float mean = block_reduce<BLOCK>(s, false) / cols;
    float v = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) { float d = row[c] - mean; v += d * d; }
    const float rstd = rsqrtf(block_reduce<BLOCK>(v, false) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        y[(size_t)blockIdx.x * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
}
'''


def test_softmax_and_layernorm():
    m = gl.load(code=ROWWISE)
    rows, cols = 13, 1000
    x = (rng.standard_normal((rows, cols)) * 3).astype(numpy.float32)
    y = xp.zeros((rows, cols), dtype=numpy.float32)
    m.get("softmax_rows<256>")(rows, 256, (dev(x), y, cols))
    e = numpy.exp(x.astype(numpy.float64) - x.max(axis=1, keepdims=True))
    assert numpy.allclose(host(y), e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7)
    g, b = rng.standard_normal(cols).astype(numpy.float32), rng.standard_normal(cols).astype(numpy.float32)
    m.get("layernorm_rows<128>")(rows, 128, (dev(x), dev(g), dev(b), y, cols, 1e-5))
    x64 = x.astype(numpy.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / numpy.sqrt(x64.var(1, keepdims=True) + 1e-5) * g + b
    assert numpy.allclose(host(y), ref, rtol=1e-4, atol=1e-4)


# --- grid-stride loops, vectorised loads, __ldg, half2 ---------------------------------------------

ELEMENTWISE = r'''
#include <cuda_fp16.h>
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * __ldg(&x[i]) + y[i];
}
__global__ void vec_add_float4(const float4* a, const float4* b, float4* c, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
__global__ void half2_axpy(const __half2* x, __half2* y, __half2 alpha, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) y[i] = __hfma2(alpha, x[i], y[i]);
}
'''


def test_elementwise_kernels():
    m = gl.load(code=ELEMENTWISE)
    n = 10_001
    x, y = rng.standard_normal(n).astype(numpy.float32), rng.standard_normal(n).astype(numpy.float32)
    yd = dev(y)
    m.get("saxpy")(8, 256, (n, 2.0, dev(x), yd))
    assert numpy.allclose(host(yd), 2 * x + y, rtol=1e-6, atol=1e-6)
    a, b = x[:8000], y[:8000]
    c = xp.zeros(8000, dtype=numpy.float32)
    m.get("vec_add_float4")(8, 256, (dev(a), dev(b), c, 2000))
    assert (host(c) == a + b).all()
    hx, hy = x[:4096].astype(numpy.float16), y[:4096].astype(numpy.float16)
    hyd = dev(hy)
    alpha = numpy.array([(1.5, 1.5)], dtype=[("x", numpy.float16), ("y", numpy.float16)])   # a __half2 by value
    m.get("half2_axpy")(8, 256, (dev(hx), hyd, alpha, 2048))
    ref = (1.5 * hx.astype(numpy.float64) + hy).astype(numpy.float16)
    assert (host(hyd) == ref).all()


# --- a bitonic sort of one block's values in shared memory ----------------------------------------------------

BITONIC = r'''
// sorts blockDim.x values (a power of two). In the pass of run length k and distance j, the pair (t, t ^ j) is
// put in ascending order where bit k of t is clear and in descending order where it is set: each pass merges
// bitonic runs into runs of twice their length
__global__ void bitonic_block(int* v)
{
    extern __shared__ int key[];
    const unsigned t = threadIdx.x;
    key[t] = v[t];
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k <<= 1)
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            const unsigned partner = t ^ j;
            if (partner > t) {
                const bool up = (t & k) == 0;
                const int a = key[t], b = key[partner];
                if ((a > b) == up) {
                    key[t] = b;
                    key[partner] = a;
                }
            }
            __syncthreads();
        }
    v[t] = key[t];
}
'''


def test_bitonic_sort():
    v = rng.integers(-1000, 1000, 512).astype(numpy.int32)
    d = dev(v)
    gl.load(code=BITONIC).get("bitonic_block")(1, 512, (d,), shared_mem=512 * 4)
    assert (host(d) == numpy.sort(v)).all()


# --- a 1-D convolution: its taps in __constant__ memory, the block's inputs and halo in shared memory ---------

CONVOLUTION = r'''
#define RADIUS 2
#define BLOCK 128
__constant__ float taps[2 * RADIUS + 1] = {0.1f, 0.2f, 0.4f, 0.2f, 0.1f};

__global__ void conv1d_halo(const float* x, float* y, int n)
{
    __shared__ float win[BLOCK + 2 * RADIUS];          // the block's inputs with RADIUS neighbours on each side
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    win[RADIUS + threadIdx.x] = i < n ? x[i] : 0.0f;
    if (threadIdx.x < RADIUS) {                        // the first RADIUS threads also fetch both halos
        const int left = i - RADIUS, right = i + BLOCK;
        win[threadIdx.x] = left >= 0 ? x[left] : 0.0f;
        win[RADIUS + BLOCK + threadIdx.x] = right < n ? x[right] : 0.0f;
    }
    __syncthreads();
    float acc = 0.0f;
    for (int j = -RADIUS; j <= RADIUS; ++j) acc += taps[RADIUS + j] * win[RADIUS + threadIdx.x + j];
    if (i < n) y[i] = acc;
}
'''


def test_constant_memory_convolution():
    width = 1000
    x = rng.standard_normal(width).astype(numpy.float32)
    out = xp.zeros(width, dtype=numpy.float32)
    gl.load(code=CONVOLUTION).get("conv1d_halo")(8, 128, (dev(x), out, width))
    ref = numpy.convolve(x.astype(numpy.float64), [0.1, 0.2, 0.4, 0.2, 0.1], mode="same")
    assert numpy.allclose(host(out), ref, rtol=1e-5, atol=1e-6)


# --- integer hashing and bit tricks (a random-number kernel) ------------------------------------------

HASHING = r'''
__device__ __forceinline__ unsigned int xorshift32(unsigned int x)
{
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return x;
}
__global__ void hash_bits(unsigned int* out, int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int h = xorshift32(i * 2654435761u + 1u);
    out[4 * i + 0] = h;
    out[4 * i + 1] = __umulhi(h, 0x9e3779b9u) ^ __brev(h);
    out[4 * i + 2] = (unsigned)__popc(h) | ((unsigned)__clz(h | 1u) << 8) | ((unsigned)__ffs(h) << 16);
    out[4 * i + 3] = __byte_perm(h, ~h, 0x7531) + __funnelshift_l(h, i, 7);
}
'''


def _xorshift(x):
    x = x ^ ((x << 13) & 0xFFFFFFFF)
    x = x ^ (x >> 17)
    return x ^ ((x << 5) & 0xFFFFFFFF)


def test_integer_hashing_bit_for_bit():
    n = 3000
    out = xp.zeros(4 * n, dtype=numpy.uint32)
    gl.load(code=HASHING).get("hash_bits")(12, 256, (out, n))
    out = host(out).reshape(n, 4).astype(numpy.uint64)
    i = numpy.arange(n, dtype=numpy.uint64)
    h = _xorshift((i * 2654435761 + 1) & 0xFFFFFFFF)
    assert (out[:, 0] == h).all()
    brev = numpy.array([int(f"{int(v):032b}"[::-1], 2) for v in h], dtype=numpy.uint64)
    assert (out[:, 1] == (((h * 0x9E3779B9) >> 32) ^ brev)).all()
    popc = numpy.array([bin(int(v)).count("1") for v in h], dtype=numpy.uint64)
    clz = numpy.array([32 - int(v | 1).bit_length() for v in h], dtype=numpy.uint64)
    ffs = numpy.array([(int(v) & -int(v)).bit_length() for v in h], dtype=numpy.uint64)
    assert (out[:, 2] == popc | (clz << 8) | (ffs << 16)).all()


def test_the_racy_last_warp_is_reported_by_racecheck():
    if gl.backend == "emulator":
        from gemmlab import _emulator
        if not _emulator._memcheck_flags(_emulator._compiler()):
            pytest.skip("racecheck needs g++ on x86-64 Linux")
    m = gl.load(code=REDUCTIONS)
    x = rng.standard_normal(4096).astype(numpy.float32)
    report = gl.racecheck(m.get("sum_pairs<256>"), 2, 256, (dev(x), xp.zeros(2, dtype=numpy.float32), 4096),
                          shared_mem=256 * 4)
    assert not report.clean and {h.array for h in report.hazards} == {"dynamic shared memory"}
