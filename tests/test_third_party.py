"""Kernels as people write them, in the styles of the well-known tutorials and samples, run unchanged.

Each source below is written the way public GEMM tutorials, NVIDIA's samples and blog posts and the
usual reduction, scan, histogram, transpose, softmax and layer-norm kernels write it (macros, device
helpers, structs, templates, volatile warp code made safe with __syncwarp, cooperative groups, half
precision), with no host code. Every test runs on the backend in use and checks against NumPy: on the
H200 the suite checks the kernels, on the emulator it checks the emulator, and both must pass.
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


# --- a GEMM tutorial's kernels (global-memory coalescing, shared-memory blocking) -------------------

GEMM_TUTORIAL = r'''
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

template <const unsigned BLOCKSIZE>
__global__ void sgemm_global_mem_coalesce(int M, int N, int K, float alpha, const float *A, const float *B,
                                          float beta, float *C)
{
    const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
    const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);
    if (cRow < M && cCol < N) {
        float tmp = 0.0;
        for (int i = 0; i < K; ++i) tmp += A[cRow * K + i] * B[i * N + cCol];
        C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
    }
}

template <const int BLOCKSIZE>
__global__ void sgemm_shared_mem_block(int M, int N, int K, float alpha, const float *A, const float *B,
                                       float beta, float *C)
{
    const unsigned cRow = blockIdx.x;
    const unsigned cCol = blockIdx.y;
    __shared__ float As[BLOCKSIZE * BLOCKSIZE];
    __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];
    const unsigned threadCol = threadIdx.x % BLOCKSIZE;
    const unsigned threadRow = threadIdx.x / BLOCKSIZE;
    A += cRow * BLOCKSIZE * K;
    B += cCol * BLOCKSIZE;
    C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;
    float tmp = 0.0;
    for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
        As[threadRow * BLOCKSIZE + threadCol] = A[threadRow * K + threadCol];
        Bs[threadRow * BLOCKSIZE + threadCol] = B[threadRow * N + threadCol];
        __syncthreads();
        A += BLOCKSIZE;
        B += BLOCKSIZE * N;
        for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx)
            tmp += As[threadRow * BLOCKSIZE + dotIdx] * Bs[dotIdx * BLOCKSIZE + threadCol];
        __syncthreads();
    }
    C[threadRow * N + threadCol] = alpha * tmp + beta * C[threadRow * N + threadCol];
}
'''


def test_gemm_tutorial_kernels():
    m = gl.load(code=GEMM_TUTORIAL)
    M, N, K = 64, 96, 128                                  # the shared-memory kernel needs multiples of 32
    A, B = rng.standard_normal((M, K), dtype=numpy.float32), rng.standard_normal((K, N), dtype=numpy.float32)
    C0 = rng.standard_normal((M, N), dtype=numpy.float32)
    ref = 1.5 * A.astype(numpy.float64) @ B + 0.5 * C0
    for name in ("sgemm_global_mem_coalesce<32>", "sgemm_shared_mem_block<32>"):
        C = dev(C0)
        m.get(name)((M // 32, N // 32), 32 * 32, (M, N, K, 1.5, dev(A), dev(B), 0.5, C))
        assert numpy.abs(host(C) - ref).max() < 1e-3 * numpy.abs(ref).max(), name


# --- the CUDA C++ Programming Guide's shared-memory matrix multiply (structs and device helpers) ----

PROGRAMMING_GUIDE = r'''
#define BLOCK_SIZE 16
typedef struct {
    int width;
    int height;
    int stride;
    float* elements;
} Matrix;

__device__ float GetElement(const Matrix A, int row, int col) { return A.elements[row * A.stride + col]; }
__device__ void SetElement(Matrix A, int row, int col, float value) { A.elements[row * A.stride + col] = value; }
__device__ Matrix GetSubMatrix(Matrix A, int row, int col)
{
    Matrix Asub;
    Asub.width = BLOCK_SIZE;
    Asub.height = BLOCK_SIZE;
    Asub.stride = A.stride;
    Asub.elements = &A.elements[A.stride * BLOCK_SIZE * row + BLOCK_SIZE * col];
    return Asub;
}

__global__ void MatMulKernel(float* a, float* b, float* c, int n)
{
    Matrix A = {n, n, n, a}, B = {n, n, n, b}, C = {n, n, n, c};
    int blockRow = blockIdx.y, blockCol = blockIdx.x;
    Matrix Csub = GetSubMatrix(C, blockRow, blockCol);
    float Cvalue = 0;
    int row = threadIdx.y, col = threadIdx.x;
    for (int m = 0; m < (A.width / BLOCK_SIZE); ++m) {
        Matrix Asub = GetSubMatrix(A, blockRow, m);
        Matrix Bsub = GetSubMatrix(B, m, blockCol);
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[row][col] = GetElement(Asub, row, col);
        Bs[row][col] = GetElement(Bsub, row, col);
        __syncthreads();
        for (int e = 0; e < BLOCK_SIZE; ++e) Cvalue += As[row][e] * Bs[e][col];
        __syncthreads();
    }
    SetElement(Csub, row, col, Cvalue);
}
'''


def test_programming_guide_matmul():
    n = 48
    A, B = rng.standard_normal((n, n), dtype=numpy.float32), rng.standard_normal((n, n), dtype=numpy.float32)
    C = xp.zeros((n, n), dtype=numpy.float32)
    gl.load(code=PROGRAMMING_GUIDE).get("MatMulKernel")((3, 3), (16, 16), (dev(A), dev(B), C, n))
    assert numpy.allclose(host(C), A.astype(numpy.float64) @ B, rtol=1e-4, atol=1e-4)


# --- reductions: interleaved shared memory, warp shuffles, and the classic unrolled last warp -------

REDUCTIONS = r'''
template <unsigned int blockSize>
__device__ void warpReduce(volatile float* sdata, unsigned int tid)
{
    // the classic unrolled last warp with a __syncwarp after each step, as it is often written (a
    // step still reads a word another lane writes: racecheck reports it; the result is the GPU's)
    if (blockSize >= 64) { sdata[tid] += sdata[tid + 32]; __syncwarp(); }
    if (blockSize >= 32) { sdata[tid] += sdata[tid + 16]; __syncwarp(); }
    if (blockSize >= 16) { sdata[tid] += sdata[tid + 8]; __syncwarp(); }
    if (blockSize >= 8) { sdata[tid] += sdata[tid + 4]; __syncwarp(); }
    if (blockSize >= 4) { sdata[tid] += sdata[tid + 2]; __syncwarp(); }
    if (blockSize >= 2) { sdata[tid] += sdata[tid + 1]; __syncwarp(); }
}

template <unsigned int blockSize>
__global__ void reduce6(const float* g_idata, float* g_odata, unsigned int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    sdata[tid] = 0;
    while (i < n) {
        sdata[tid] += g_idata[i];
        if (i + blockSize < n) sdata[tid] += g_idata[i + blockSize];
        i += gridSize;
    }
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) { sdata[tid] += sdata[tid + 256]; } __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) { sdata[tid] += sdata[tid + 128]; } __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) { sdata[tid] += sdata[tid + 64]; } __syncthreads(); }
    if (tid < 32) warpReduce<blockSize>(sdata, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

__inline__ __device__ float warpReduceSum(float val)
{
    for (int offset = warpSize / 2; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffff, val, offset);
    return val;
}

__inline__ __device__ float blockReduceSum(float val)
{
    static __shared__ float shared[32];
    int lane = threadIdx.x % warpSize;
    int wid = threadIdx.x / warpSize;
    val = warpReduceSum(val);
    if (lane == 0) shared[wid] = val;
    __syncthreads();
    val = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0;
    if (wid == 0) val = warpReduceSum(val);
    return val;
}

__global__ void deviceReduceKernel(const float* in, float* out, int N)
{
    float sum = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x) sum += in[i];
    sum = blockReduceSum(sum);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}
'''


def test_reductions():
    m = gl.load(code=REDUCTIONS)
    n = 100_003
    x = rng.standard_normal(n).astype(numpy.float32)
    ref = x.astype(numpy.float64).sum()
    partial = xp.zeros(64, dtype=numpy.float32)
    m.get("reduce6<256>")(64, 256, (dev(x), partial, n), shared_mem=256 * 4)
    assert abs(host(partial).astype(numpy.float64).sum() - ref) < 1e-4 * numpy.abs(x).sum()
    out = xp.zeros(1, dtype=numpy.float32)
    m.get("deviceReduceKernel")(40, 256, (dev(x), out, n))
    assert abs(float(host(out)[0]) - ref) < 1e-4 * numpy.abs(x).sum()


# --- scans: Hillis-Steele (double buffer) and Blelloch's work-efficient scan with padding --------------

SCANS = r'''
__global__ void scan_hillis_steele(const int* g_idata, int* g_odata, int n)
{
    extern __shared__ int temp[];
    int thid = threadIdx.x;
    int pout = 0, pin = 1;
    temp[pout * n + thid] = thid > 0 ? g_idata[thid - 1] : 0;      // exclusive
    __syncthreads();
    for (int offset = 1; offset < n; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (thid >= offset) temp[pout * n + thid] = temp[pin * n + thid] + temp[pin * n + thid - offset];
        else temp[pout * n + thid] = temp[pin * n + thid];
        __syncthreads();
    }
    g_odata[thid] = temp[pout * n + thid];
}

#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)

__global__ void prescan(const int* g_idata, int* g_odata, int n)
{
    extern __shared__ int temp[];
    int thid = threadIdx.x;
    int offset = 1;
    int ai = thid, bi = thid + (n / 2);
    int bankOffsetA = CONFLICT_FREE_OFFSET(ai), bankOffsetB = CONFLICT_FREE_OFFSET(bi);
    temp[ai + bankOffsetA] = g_idata[ai];
    temp[bi + bankOffsetB] = g_idata[bi];
    for (int d = n >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            temp[b] += temp[a];
        }
        offset *= 2;
    }
    if (thid == 0) temp[n - 1 + CONFLICT_FREE_OFFSET(n - 1)] = 0;
    for (int d = 1; d < n; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            a += CONFLICT_FREE_OFFSET(a);
            b += CONFLICT_FREE_OFFSET(b);
            int t = temp[a];
            temp[a] = temp[b];
            temp[b] += t;
        }
    }
    __syncthreads();
    g_odata[ai] = temp[ai + bankOffsetA];
    g_odata[bi] = temp[bi + bankOffsetB];
}
'''


def test_scans():
    m = gl.load(code=SCANS)
    x = rng.integers(-50, 50, 512).astype(numpy.int32)
    exclusive = numpy.concatenate([[0], numpy.cumsum(x)[:-1]]).astype(numpy.int32)
    out = xp.zeros(256, dtype=numpy.int32)
    m.get("scan_hillis_steele")(1, 256, (dev(x[:256]), out, 256), shared_mem=2 * 256 * 4)
    assert (host(out) == exclusive[:256]).all()
    out = xp.zeros(512, dtype=numpy.int32)
    m.get("prescan")(1, 256, (dev(x), out, 512), shared_mem=(512 + 512 // 32) * 4)
    assert (host(out) == exclusive).all()


# --- histogram with shared-memory privatisation ---------------------------------------------------

HISTOGRAM = r'''
#define NUM_BINS 256
__global__ void histogram_smem(const unsigned char* data, unsigned int* histo, size_t size)
{
    __shared__ unsigned int private_histo[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) private_histo[b] = 0;
    __syncthreads();
    size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&private_histo[data[i]], 1);
        i += stride;
    }
    __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) atomicAdd(&histo[b], private_histo[b]);
}
'''


def test_histogram():
    data = rng.integers(0, 256, 200_001).astype(numpy.uint8)
    histo = xp.zeros(256, dtype=numpy.uint32)
    gl.load(code=HISTOGRAM).get("histogram_smem")(30, 128, (dev(data), histo, numpy.uint64(data.size)))
    assert (host(histo) == numpy.bincount(data, minlength=256)).all()


# --- the transpose sample: tiles with padding against bank conflicts --------------------------------

TRANSPOSE = r'''
const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;
__global__ void transposeNoBankConflicts(float* odata, const float* idata, int width, int height)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
'''


def test_transpose():
    h, w = 70, 45
    a = rng.standard_normal((h, w), dtype=numpy.float32)
    out = xp.zeros((w, h), dtype=numpy.float32)
    gl.load(code=TRANSPOSE).get("transposeNoBankConflicts")((2, 3), (32, 8), (out, dev(a), w, h))
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
    alpha = numpy.array([1.5, 1.5], dtype=numpy.float16).view(numpy.uint32)[0]    # a __half2 by value
    k = m.get("half2_axpy")
    k._arg_types[2] = "?"                              # passed as its 4 bytes
    k(8, 256, (dev(hx), hyd, alpha, 2048))
    ref = (1.5 * hx.astype(numpy.float64) + hy).astype(numpy.float16)
    assert (host(hyd) == ref).all()


# --- bitonic sort in shared memory ------------------------------------------------------------------

BITONIC = r'''
__global__ void bitonic_sort_shared(int* values)
{
    extern __shared__ int shared[];
    const unsigned tid = threadIdx.x;
    shared[tid] = values[tid];
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k *= 2) {
        for (unsigned j = k / 2; j > 0; j /= 2) {
            unsigned ixj = tid ^ j;
            if (ixj > tid) {
                if ((tid & k) == 0) {
                    if (shared[tid] > shared[ixj]) { int t = shared[tid]; shared[tid] = shared[ixj]; shared[ixj] = t; }
                } else {
                    if (shared[tid] < shared[ixj]) { int t = shared[tid]; shared[tid] = shared[ixj]; shared[ixj] = t; }
                }
            }
            __syncthreads();
        }
    }
    values[tid] = shared[tid];
}
'''


def test_bitonic_sort():
    v = rng.integers(-1000, 1000, 512).astype(numpy.int32)
    d = dev(v)
    gl.load(code=BITONIC).get("bitonic_sort_shared")(1, 512, (d,), shared_mem=512 * 4)
    assert (host(d) == numpy.sort(v)).all()


# --- a 1-D convolution with its filter in __constant__ memory and a halo in shared memory ------------

CONVOLUTION = r'''
#define MASK_WIDTH 5
#define TILE 128
__constant__ float M[MASK_WIDTH] = {0.1f, 0.2f, 0.4f, 0.2f, 0.1f};
__global__ void convolution_1d_tiled(const float* N, float* P, int width)
{
    __shared__ float N_ds[TILE + MASK_WIDTH - 1];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = MASK_WIDTH / 2;
    int halo_left = (blockIdx.x - 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x >= blockDim.x - n) N_ds[threadIdx.x - (blockDim.x - n)] = (halo_left < 0) ? 0 : N[halo_left];
    N_ds[n + threadIdx.x] = i < width ? N[i] : 0;
    int halo_right = (blockIdx.x + 1) * blockDim.x + threadIdx.x;
    if (threadIdx.x < n) N_ds[n + blockDim.x + threadIdx.x] = (halo_right >= width) ? 0 : N[halo_right];
    __syncthreads();
    float Pvalue = 0;
    for (int j = 0; j < MASK_WIDTH; j++) Pvalue += N_ds[threadIdx.x + j] * M[j];
    if (i < width) P[i] = Pvalue;
}
'''


def test_constant_memory_convolution():
    width = 1000
    x = rng.standard_normal(width).astype(numpy.float32)
    out = xp.zeros(width, dtype=numpy.float32)
    gl.load(code=CONVOLUTION).get("convolution_1d_tiled")(8, 128, (dev(x), out, width))
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
    report = gl.racecheck(m.get("reduce6<256>"), 2, 256, (dev(x), xp.zeros(2, dtype=numpy.float32), 4096),
                          shared_mem=256 * 4)
    assert not report.clean and {h.array for h in report.hazards} == {"dynamic shared memory"}
