"""Kernels written here, in our own words, in the styles of the well-known GPU tutorials and textbooks.

GEMM tutorials, the CUDA programming guide's examples, the classic reduction, scan, histogram, transpose,
convolution and sorting kernels of courses and books: each source below uses the forms those write (macros,
file-scope constants, structs passed by value to device helpers, `__shared__` arrays declared in a loop,
pointers walked through a matrix, templates on block sizes, volatile warp code with `__syncwarp` between its
steps, grid-stride loops, half precision), with no host code. None of it is copied: the code is ours, the forms are
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
// a view of a matrix: where element (0, 0) is and how far apart rows and columns are, so that a transposed view is
// the same storage with the two strides swapped
typedef struct {
    float* origin;
    int row_step, col_step;
} View;

__device__ float read(const View v, int r, int c) { return v.origin[r * v.row_step + c * v.col_step]; }
__device__ void write(View v, int r, int c, float x) { v.origin[r * v.row_step + c * v.col_step] = x; }
__device__ View flipped(View v)
{
    View t = v;
    t.row_step = v.col_step;
    t.col_step = v.row_step;
    return t;
}
__device__ View shifted(View v, int r, int c)      // the view whose (0, 0) is v's (r, c)
{
    View s = v;
    s.origin = v.origin + r * v.row_step + c * v.col_step;
    return s;
}

// C = A^T B, A stored k x m, B k x n, C m x n, all row-major; m, n and k multiples of TILE
__global__ void at_times_b(float* a, float* b, float* c, int m, int n, int k)
{
    const View At = flipped(View{a, m, 1}), B = View{b, n, 1};
    const int tr = threadIdx.y, tc = threadIdx.x, r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += TILE) {
        __shared__ float left[TILE][TILE];          // declared inside the loop: still one array per block
        __shared__ float right[TILE][TILE];
        left[tr][tc] = read(shifted(At, r0, k0), tr, tc);
        right[tr][tc] = read(shifted(B, k0, c0), tr, tc);
        __syncthreads();
        for (int q = 0; q < TILE; ++q) acc += left[tr][q] * right[q][tc];
        __syncthreads();
    }
    write(shifted(View{c, n, 1}, r0, c0), tr, tc, acc);
}
'''


def test_matrix_views_passed_by_value_and_shared_arrays_declared_in_a_loop():
    m, n, k = 48, 32, 64
    A, B = rng.standard_normal((k, m), dtype=numpy.float32), rng.standard_normal((k, n), dtype=numpy.float32)
    C = xp.zeros((m, n), dtype=numpy.float32)
    gl.load(code=MATRIX_STRUCTS).get("at_times_b")((n // 16, m // 16), (16, 16), (dev(A), dev(B), C, m, n, k))
    assert numpy.allclose(host(C), A.T.astype(numpy.float64) @ B, rtol=1e-4, atol=1e-4)


# --- reductions: a tree in shared memory with the last warp unrolled, and sums shared by butterflies --------

REDUCTIONS = r'''
// the last 64 partial maxima of a block, folded by its first warp: volatile, so that each step reads shared memory
// again, and __syncwarp between steps. A step still reads a word that another lane writes in that step: a race
// that racecheck reports, though the GPU's converged warp gives the answer expected
template <unsigned int B>
__device__ void last_warp_max(volatile float* m, unsigned int lane)
{
#pragma unroll
    for (unsigned int d = (B >= 64 ? 32 : B / 2); d > 0; d >>= 1) {
        m[lane] = fmaxf(m[lane], m[lane + d]);
        __syncwarp();
    }
}

// one partial maximum per block of B threads: a grid-stride pass, then halves in shared memory down to 64
template <unsigned int B>
__global__ void block_maxima(const float* x, float* out, unsigned int n)
{
    extern __shared__ float m[];
    const unsigned int t = threadIdx.x;
    float v = -3.0e38f;
    for (unsigned int i = blockIdx.x * B + t; i < n; i += B * gridDim.x) v = fmaxf(v, x[i]);
    m[t] = v;
    __syncthreads();
    for (unsigned int h = B / 2; h >= 64; h >>= 1) {
        if (t < h) m[t] = fmaxf(m[t], m[t + h]);
        __syncthreads();
    }
    if (t < 32) last_warp_max<B>(m, t);
    if (t == 0) out[blockIdx.x] = m[0];
}

__device__ __forceinline__ float butterfly_sum(float v)     // every lane ends with its warp's sum
{
    for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}

// every thread gets the block's sum (blocks of whole warps): the warps' sums meet in a static __shared__ array of
// this helper, which each thread then reads whole
__device__ float block_sum_for_all(float v)
{
    static __shared__ float sums[32];
    const int warps = blockDim.x / 32;
    v = butterfly_sum(v);
    __syncthreads();                                 // the array may still be read from an earlier call
    if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < warps; ++w) total += sums[w];
    return total;
}

__global__ void total_into(const float* x, float* total, int n)
{
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
    s = block_sum_for_all(s);
    if (threadIdx.x == blockDim.x - 1) atomicAdd(total, s);
}
'''


def test_reductions():
    m = gl.load(code=REDUCTIONS)
    n = 100_003
    x = rng.standard_normal(n).astype(numpy.float32)
    partial = xp.zeros(64, dtype=numpy.float32)
    m.get("block_maxima<256>")(64, 256, (dev(x), partial, n), shared_mem=256 * 4)
    assert host(partial).max() == x.max() and (host(partial) <= x.max()).all()
    # small integers: every partial and total sum is exact in float32, so a lost or doubled element shows
    ints = rng.integers(-8, 9, n).astype(numpy.float32)
    for block in (256, 96):                              # 96: three warps, a count of warps that is no power of 2
        out = xp.zeros(1, dtype=numpy.float32)
        m.get("total_into")(40, block, (dev(ints), out, n))
        assert float(host(out)[0]) == ints.astype(numpy.float64).sum(), block


# --- scans: double-buffered (Hillis-Steele), and a work-efficient tree with padded indices -----------------

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

// inclusive scan of blockDim.x values (a power of two), each thread owning one element of a tree: going up, at
// distance d every element whose index ends in 2d - 1 (its low bits all ones) adds the one d before it; coming
// down, every element whose index ends in d - 1, past the first 2d, adds the one d before it. Every shared index is
// padded by a word per 32, so that a step's strided accesses spread over the banks
#define BANKS 32
#define PADDED(i) ((i) + ((i) / BANKS))
__global__ void scan_tree(const int* in, int* out)
{
    extern __shared__ int s[];
    const unsigned i = threadIdx.x, n = blockDim.x;
    s[PADDED(i)] = in[i];
    for (unsigned d = 1; d < n; d <<= 1) {
        __syncthreads();
        const int add = (i & (2 * d - 1)) == 2 * d - 1 ? s[PADDED(i - d)] : 0;
        __syncthreads();
        s[PADDED(i)] += add;
    }
    for (unsigned d = n / 4; d > 0; d >>= 1) {
        __syncthreads();
        const int add = (i & (2 * d - 1)) == d - 1 && i >= 2 * d ? s[PADDED(i - d)] : 0;
        __syncthreads();
        s[PADDED(i)] += add;
    }
    __syncthreads();
    out[i] = s[PADDED(i)];
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
    m.get("scan_tree")(1, 512, (dev(x), out), shared_mem=(512 + 512 // 32) * 4)
    assert (host(out) == numpy.cumsum(x)).all()


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


# --- a scaled transpose through a padded tile ---------------------------------------------------------------

TRANSPOSE = r'''
const int SIDE = 16;                   // a SIDE x SIDE tile, one element a thread
__global__ void scaled_transpose(float* out, const float* in, int cols, int rows, float scale)
{
    __shared__ float tile[SIDE][SIDE + 1];             // one word more a row: a column of the tile spans the banks
    const int c = blockIdx.x * SIDE + threadIdx.x, r = blockIdx.y * SIDE + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = scale * in[r * cols + c];
    __syncthreads();
    const int oc = blockIdx.y * SIDE + threadIdx.x, orow = blockIdx.x * SIDE + threadIdx.y;   // out: cols x rows
    if (orow < cols && oc < rows) out[orow * rows + oc] = tile[threadIdx.x][threadIdx.y];
}
'''


def test_transpose():
    h, w = 70, 45
    a = rng.standard_normal((h, w), dtype=numpy.float32)
    out = xp.zeros((w, h), dtype=numpy.float32)
    gl.load(code=TRANSPOSE).get("scaled_transpose")((3, 5), (16, 16), (out, dev(a), w, h, 2.0))
    assert (host(out) == 2 * a.T).all()


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
    # __byte_perm(h, ~h, 0x7531): bytes 1 and 3 of h, then bytes 1 and 3 of ~h; __funnelshift_l(h, i, 7): the high
    # word of (i:h) << 7
    nh = ~h & 0xFFFFFFFF
    perm = ((h >> 8) & 0xFF) | (((h >> 24) & 0xFF) << 8) | (((nh >> 8) & 0xFF) << 16) | (((nh >> 24) & 0xFF) << 24)
    funnel = ((i << 7) | (h >> 25)) & 0xFFFFFFFF
    assert (out[:, 3] == (perm + funnel) & 0xFFFFFFFF).all()


def test_the_racy_last_warp_is_reported_by_racecheck():
    if gl.backend == "emulator":
        from gemmlab import _emulator
        if not _emulator._memcheck_flags(_emulator._compiler()):
            pytest.skip("racecheck needs g++ on x86-64 Linux")
    m = gl.load(code=REDUCTIONS)
    x = rng.standard_normal(4096).astype(numpy.float32)
    report = gl.racecheck(m.get("block_maxima<256>"), 2, 256, (dev(x), xp.zeros(2, dtype=numpy.float32), 4096),
                          shared_mem=256 * 4)
    assert not report.clean and {h.array for h in report.hazards} == {"dynamic shared memory"}
