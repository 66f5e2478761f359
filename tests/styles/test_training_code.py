"""Kernels written here in the styles of deep-learning training code, run unchanged on the backend in use.

Training code writes CUDA in its own idioms: 16-byte structs of float or bf16 moved as one int4 with
cache hints, implicit float <-> bf16/half conversions, bf16 gradients accumulated by atomics on 32-bit
pairs, block reductions that take the warp reduction as a template argument, online softmax with a
running maximum, a layer norm that carves its dynamic shared memory by hand, a last-block ticket, and
flash-attention tiles. Each kernel below uses those forms and is checked against NumPy (float64
references, or bit for bit where the arithmetic allows it). On a GPU the tests check the kernels; on
the emulator they check the emulator.
"""
from __future__ import annotations

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops

xp = gl.xp
rng = numpy.random.default_rng(1207)
U32 = 2.0 ** -24          # unit roundoff of float32 (24 significant bits, round to nearest)
U16 = 2.0 ** -8           # unit roundoff of bf16 (8 significant bits)


def dev(a):
    return xp.array(a)    # a fresh copy per launch: a kernel's writes never reach what a reference reads


def host(a):
    return gl.to_host(a)


def cdiv(a, b):
    return -(-a // b)


def bf16(x):
    """float32 values rounded to bf16 (nearest even), as (bits for the kernel, their float64 values)."""
    bits = ops.to_bf16_bits(numpy.asarray(x, dtype=numpy.float32))
    return bits, ops.from_bf16_bits(bits).astype(numpy.float64)


def bf16_values(bits):
    """float64 values of a device array of bf16 bits."""
    return ops.from_bf16_bits(host(bits)).astype(numpy.float64)


# --- 16-byte slabs: a struct of 4 floats or 8 bf16 moved as one int4 -----------------------------------------------

SLAB = r'''
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// 16 bytes of E, loaded and stored as one int4 so that the GPU moves them with one 128-bit instruction
template <typename E>
struct alignas(16) Slab {
    static constexpr int count = sizeof(int4) / sizeof(E);     // 4 floats, 8 bf16
    E item[count];

    Slab() = default;
    __device__ explicit Slab(int4 raw) {
        static_assert(sizeof(raw) == sizeof(item), "a slab is 16 bytes");
        memcpy(item, &raw, sizeof(raw));
    }
    __device__ int4 raw() const {
        int4 r;
        memcpy(&r, item, sizeof(r));
        return r;
    }
    __device__ static Slab filled(E e) {
        Slab s;
        for (int k = 0; k < count; ++k) s.item[k] = e;
        return s;
    }
    __device__ static Slab zeros() { return filled(E(0.0f)); }
    __device__ E& operator[](int k) { return item[k]; }
    __device__ const E& operator[](int k) const { return item[k]; }
};

// p must be 16-byte aligned. The _once forms are for data read or written once (streamed, evicted first); _l2
// stores keep the line in L2 only.
template <typename E>
__device__ Slab<E> read_slab(const E* p) { return Slab<E>{*reinterpret_cast<const int4*>(p)}; }
template <typename E>
__device__ Slab<E> read_slab_once(const E* p) { return Slab<E>{__ldcs(reinterpret_cast<const int4*>(p))}; }
template <typename E>
__device__ void write_slab(E* p, const Slab<E>& s) { *reinterpret_cast<int4*>(p) = s.raw(); }
template <typename E>
__device__ void write_slab_once(E* p, const Slab<E>& s) { __stcs(reinterpret_cast<int4*>(p), s.raw()); }
template <typename E>
__device__ void write_slab_l2(E* p, const Slab<E>& s) { __stcg(reinterpret_cast<int4*>(p), s.raw()); }
'''

ELEMENTWISE = SLAB + r'''
// y = a * x + bias, one slab per thread; n is a whole number of slabs (a slab cannot be split)
template <typename E, bool L2_ONLY>
__global__ void scale_shift(E* y, const E* x, const E* bias, float a, int n)
{
    const int at = (blockIdx.x * blockDim.x + threadIdx.x) * Slab<E>::count;
    if (at >= n) return;
    const Slab<E> in = read_slab_once(x + at);
    const Slab<E> b = read_slab(bias + at);
    Slab<E> out = Slab<E>::zeros();
    for (int k = 0; k < Slab<E>::count; ++k) {
        float shift = b[k];                     // bf16 -> float by initialisation
        out[k] = a * (float)in[k] + shift;      // float -> bf16 by assignment: rounded to nearest even
    }
    if (L2_ONLY) write_slab_l2(y + at, out);
    else write_slab_once(y + at, out);
}

// the implicit conversions alone: float into __half and __nv_bfloat16 elements, and both back into floats
__global__ void narrow(__half* h, __nv_bfloat16* b, const float* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        h[i] = x[i];
        b[i] = x[i];
    }
}

__global__ void widen(float* out, const __half* h, const __nv_bfloat16* b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float from_half = h[i];
        float from_bf16 = b[i];
        out[2 * i] = from_half;
        out[2 * i + 1] = from_bf16;
    }
}

// GELU with the tanh approximation, x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), and its derivative
// 1/2 (1 + tanh(u)) + x/2 sech(u)^2 du/dx, with sech through coshf
constexpr float kSqrt2OverPi = 0.7978845608028654f;
__device__ __forceinline__ float gelu_arg(float x) { return kSqrt2OverPi * (x + 0.044715f * x * x * x); }

template <typename E>
__global__ void gelu_slabs(E* y, const E* x, int n)
{
    const int at = (blockIdx.x * blockDim.x + threadIdx.x) * Slab<E>::count;
    if (at >= n) return;
    const Slab<E> in = read_slab_once(x + at);
    Slab<E> out;
    for (int k = 0; k < Slab<E>::count; ++k) {
        float v = in[k];
        out[k] = 0.5f * v * (1.0f + tanhf(gelu_arg(v)));
    }
    write_slab(y + at, out);
}

template <typename E>
__global__ void gelu_grad(E* dx, const E* x, const E* dy, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        const float u = gelu_arg(v);
        const float c = coshf(u);
        const float slope = 0.5f * (1.0f + tanhf(u))
                          + 0.5f * v * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * v * v) / (c * c);
        dx[i] = slope * (float)dy[i];
    }
}
'''


@pytest.fixture(scope="module")
def elementwise():
    return gl.load(code=ELEMENTWISE)


def test_sixteen_byte_slabs_scale_and_shift_with_streaming_and_l2_stores(elementwise):
    """A struct of 16 bytes built from an int4 by memcpy, loaded with __ldcs and stored with __stcs (float) or
    __stcg (bf16), bf16 read into floats and floats written into bf16 without casts: bit for bit."""
    # a has 3 significant bits and x 8 (bf16 values in both instances): a * x is exact in float32, so a fused
    # multiply-add and a multiply then an add give the same float
    a = 1.375
    blocks = cdiv(1003, 128)
    for ctype, l2 in (("float", "false"), ("__nv_bfloat16", "true")):
        width = 4 if ctype == "float" else 8
        n = 1003 * width             # whole slabs (each thread takes one), but not whole blocks of them
        xb, x = bf16(rng.standard_normal(n) * 4)                 # 8-bit inputs in both instances
        if ctype == "float":
            b32 = rng.standard_normal(n).astype(numpy.float32)
            args, bias = (dev(x.astype(numpy.float32)), dev(b32)), b32
        else:
            bb, b64 = bf16(rng.standard_normal(n))
            args, bias = (dev(xb), dev(bb)), b64.astype(numpy.float32)
        ref = numpy.float32(a) * x.astype(numpy.float32) + bias      # float32: the product exact, one rounding
        y = xp.zeros(n, dtype=numpy.float32 if ctype == "float" else numpy.uint16)
        elementwise.get(f"scale_shift<{ctype}, {l2}>")(blocks, 128, (y, *args, a, n))
        if ctype == "float":
            assert numpy.array_equal(host(y).view(numpy.uint32), ref.view(numpy.uint32))
        else:
            assert numpy.array_equal(host(y), ops.to_bf16_bits(ref))


def test_implicit_conversions_between_float_and_half_or_bfloat16_round_to_nearest_even(elementwise):
    """`h[i] = x[i]` and `float v = b[i]`: the conversion operators of __half and __nv_bfloat16 round to nearest
    even and widen exactly, including ties, subnormals and overflow to infinity."""
    special = numpy.array([0.0, -0.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,    # half ties: to even, both ways
                           1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,                  # bf16 ties
                           2.0 ** -20, -3 * 2.0 ** -25, 65504.0, 65519.0, 65520.0, -1e6, 3e38, numpy.inf,
                           -numpy.inf, 2.0 ** -130], dtype=numpy.float32)
    x = numpy.concatenate([special, (rng.standard_normal(1000) * 10.0 ** rng.integers(-6, 6, 1000))
                           .astype(numpy.float32)])
    n = x.size                       # 1016: not a whole number of 256-thread blocks
    h, b = xp.zeros(n, dtype=numpy.float16), xp.zeros(n, dtype=numpy.uint16)
    elementwise.get("narrow")(cdiv(n, 256), 256, (h, b, dev(x), n))
    with numpy.errstate(over="ignore"):                          # 65520 and up: inf in half, as intended
        want_h = x.astype(numpy.float16)
    assert numpy.array_equal(host(h).view(numpy.uint16), want_h.view(numpy.uint16))
    assert numpy.array_equal(host(b), ops.to_bf16_bits(x))
    back = xp.zeros(2 * n, dtype=numpy.float32)
    elementwise.get("widen")(cdiv(n, 256), 256, (back, dev(want_h), dev(host(b)), n))
    back = host(back)
    assert numpy.array_equal(back[0::2], want_h.astype(numpy.float32))
    assert numpy.array_equal(back[1::2].view(numpy.uint32), ops.from_bf16_bits(host(b)).view(numpy.uint32))


def _gelu_reference(x, dy):
    """float64 GELU (tanh form), its gradient times dy, and per element the float32 error bound of each.

    tanhf and coshf are within 2 ulp on the GPU. u carries ~5 roundings (its float constants included), which
    move tanh(u) by at most sech^2(u) |u| 5 U32 < 2.3 U32; with tanhf's 2 ulp (<= 2 U32 below 1) and the add,
    1 + tanh(u) is off by at most ~5.3 U32 absolutely (not relatively: it cancels for negative x), and the
    product adds one rounding of y. The sech^2 term is off by ~19 U32 of itself (coshf, the square, the
    constants, the products) plus 10 |u| U32 (u's error through cosh^2). The bounds below take about twice these."""
    k = numpy.sqrt(2 / numpy.pi)
    u = k * (x + 0.044715 * x ** 3)
    t = numpy.tanh(u)
    y = 0.5 * x * (1 + t)
    sech2 = 1 / numpy.cosh(u) ** 2
    tail = 0.5 * x * sech2 * k * (1 + 3 * 0.044715 * x * x)
    slope = 0.5 * (1 + t) + tail
    y_tol = 0.5 * numpy.abs(x) * 10 * U32 + numpy.abs(y) * 6 * U32
    dx_tol = numpy.abs(dy) * (0.5 * 10 * U32 + numpy.abs(tail) * (24 + 16 * numpy.abs(u)) * U32
                              + numpy.abs(slope) * 4 * U32)
    return y, slope * dy, y_tol, dx_tol


def test_gelu_and_its_gradient_through_tanhf_and_coshf(elementwise):
    """GELU forward over slabs and its gradient in a grid-stride loop, in float and in bf16 (float inside)."""
    n = 8 * 377                      # whole slabs of 8 bf16 (and of 4 floats); 377 slabs: not whole blocks
    x32 = (rng.uniform(-5, 5, n)).astype(numpy.float32)
    dy32 = rng.standard_normal(n).astype(numpy.float32)
    x32[:4] = [0.0, -0.0, 12.0, -12.0]                   # flat tails: tanh(u) = +-1, cosh(u)^2 huge
    for ctype in ("float", "__nv_bfloat16"):
        if ctype == "float":
            xin, dyin = x32, dy32
            x, dy = x32.astype(numpy.float64), dy32.astype(numpy.float64)
            y, dx = xp.zeros(n, dtype=numpy.float32), xp.zeros(n, dtype=numpy.float32)
        else:
            (xin, x), (dyin, dy) = bf16(x32), bf16(dy32)
            y, dx = xp.zeros(n, dtype=numpy.uint16), xp.zeros(n, dtype=numpy.uint16)
        elementwise.get(f"gelu_slabs<{ctype}>")(cdiv(n // (16 // xin.itemsize), 64), 64, (y, dev(xin), n))
        elementwise.get(f"gelu_grad<{ctype}>")(5, 128, (dx, dev(xin), dev(dyin), n))   # 640 threads: 5 laps
        ry, rdx, ty, tdx = _gelu_reference(x, dy)
        if ctype == "float":
            got_y, got_dx = host(y).astype(numpy.float64), host(dx).astype(numpy.float64)
        else:                        # the float result, then one rounding to bf16
            got_y, got_dx = bf16_values(y), bf16_values(dx)
            ty, tdx = ty * 1.01 + U16 * numpy.abs(ry), tdx * 1.01 + U16 * numpy.abs(rdx)
        assert (numpy.abs(got_y - ry) <= ty).all(), ctype
        assert (numpy.abs(got_dx - rdx) <= tdx).all(), ctype


# --- layer norm: one warp per row, parameters and rows staged in a char buffer read as slabs ------------------------

LAYER_NORM = SLAB + r'''
// The warp's sum of squares goes through its 32 floats of shared memory (a tree over halves), not shuffles.
__device__ float fold_in_shared(float* lanes, float v, int lane)
{
    lanes[lane] = v;
    __syncwarp();
    for (int half = 16; half > 0; half >>= 1) {
        if (lane < half) lanes[lane] += lanes[lane + half];
        __syncwarp();
    }
    const float total = lanes[0];
    __syncwarp();                   // every lane has read lanes[0] before a next call writes it
    return total;
}

// y = (x - mean) * rstd * w + b per row of x (N, C); C a whole number of slabs. A block is (32, ROWS): warp
// threadIdx.y takes row blockIdx.x * ROWS + threadIdx.y. The dynamic shared memory, in 16-byte slabs then floats:
//   [w: C][b: C][row of warp 0: C] ... [row of warp ROWS-1: C] | [32 floats per warp]
__global__ void layer_norm_f32(float* y, float* mean, float* rstd, const float* x, const float* w, const float* b,
                               int N, int C)
{
    extern __shared__ char staged[];
    constexpr int W = Slab<float>::count;
    Slab<float>* sw = reinterpret_cast<Slab<float>*>(staged);
    Slab<float>* sb = sw + C / W;
    Slab<float>* srow = sw + (2 + threadIdx.y) * C / W;
    float* lanes = reinterpret_cast<float*>(staged + (2 + blockDim.y) * C * sizeof(float)) + threadIdx.y * 32;
    const int lane = threadIdx.x;

    // the whole block stages w and b before any warp leaves for want of a row
    for (int c = (threadIdx.y * 32 + lane) * W; c < C; c += blockDim.y * 32 * W) {
        sw[c / W] = read_slab(w + c);
        sb[c / W] = read_slab(b + c);
    }
    __syncthreads();
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= N) return;

    const float* xr = x + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane * W; c < C; c += 32 * W) {
        const Slab<float> v = read_slab_once(xr + c);
        srow[c / W] = v;
        for (int k = 0; k < W; ++k) s += v[k];
    }
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    const float mu = s / C;
    float q = 0.0f;
    for (int c = lane * W; c < C; c += 32 * W) {
        const Slab<float> v = srow[c / W];
        for (int k = 0; k < W; ++k) q += (v[k] - mu) * (v[k] - mu);
    }
    const float r = rsqrtf(fold_in_shared(lanes, q, lane) / C + 1e-5f);
    for (int c = lane * W; c < C; c += 32 * W) {
        const Slab<float> v = srow[c / W], g = sw[c / W], h = sb[c / W];
        Slab<float> o;
        for (int k = 0; k < W; ++k) o[k] = (v[k] - mu) * r * g[k] + h[k];
        write_slab_once(y + (size_t)row * C + c, o);
    }
    if (lane == 0) {
        __stcs(mean + row, mu);
        __stcs(rstd + row, r);
    }
}

// The same for bf16 tensors (float arithmetic), with a (32, 1, ROWS) block: the warp is threadIdx.z, the regions
// are placed by byte offsets, and a grid smaller than N / ROWS makes each warp take several rows in turn.
__global__ void layer_norm_bf16(__nv_bfloat16* y, const __nv_bfloat16* x, const __nv_bfloat16* w,
                                const __nv_bfloat16* b, int N, int C)
{
    using S = Slab<__nv_bfloat16>;
    constexpr int W = S::count;
    extern __shared__ char staged[];
    S* sw = reinterpret_cast<S*>(staged);
    S* sb = reinterpret_cast<S*>(staged + C * sizeof(__nv_bfloat16));
    S* srow = reinterpret_cast<S*>(staged + (2 + threadIdx.z) * C * sizeof(__nv_bfloat16));
    float* lanes = reinterpret_cast<float*>(staged + (2 + blockDim.z) * C * sizeof(__nv_bfloat16)
                                            + threadIdx.z * 32 * sizeof(float));
    const int lane = threadIdx.x;

    for (int c = (threadIdx.z * 32 + lane) * W; c < C; c += blockDim.z * 32 * W) {
        sw[c / W] = read_slab(w + c);
        sb[c / W] = read_slab(b + c);
    }
    __syncthreads();

    for (int row = blockIdx.x * blockDim.z + threadIdx.z; row < N; row += gridDim.x * blockDim.z) {
        float s = 0.0f;
        for (int c = lane * W; c < C; c += 32 * W) {
            const S v = read_slab_once(x + (size_t)row * C + c);
            srow[c / W] = v;
            for (int k = 0; k < W; ++k) s += (float)v[k];
        }
        for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
        const float mu = s / C;
        float q = 0.0f;
        for (int c = lane * W; c < C; c += 32 * W) {
            const S v = srow[c / W];
            for (int k = 0; k < W; ++k) {
                const float d = (float)v[k] - mu;
                q += d * d;
            }
        }
        const float r = rsqrtf(fold_in_shared(lanes, q, lane) / C + 1e-5f);
        for (int c = lane * W; c < C; c += 32 * W) {
            const S v = srow[c / W], g = sw[c / W], h = sb[c / W];
            S o;
            for (int k = 0; k < W; ++k) {
                float gain = g[k], shift = h[k];
                o[k] = ((float)v[k] - mu) * r * gain + shift;
            }
            write_slab_once(y + (size_t)row * C + c, o);
        }
    }
}

// Layer norm backward (float), given the forward's mean and rstd per row:
//   x_hat = (x - mean) rstd,  g = dy w,  dx = rstd (g - mean_c(g) - x_hat mean_c(g x_hat)),
//   dw += sum over rows of dy x_hat,  db += sum over rows of dy.
// A (32, ROWS) block; warps take rows in a grid-stride loop, so that every thread reaches the last barrier. Each
// block gathers its rows' dw and db in shared memory ([dw: C][db: C] floats) and adds them to dw, db once.
__global__ void layer_norm_backward(float* dx, float* dw, float* db, const float* dy, const float* x,
                                    const float* w, const float* mean, const float* rstd, int N, int C)
{
    extern __shared__ float block_grads[];
    float* bdw = block_grads;
    float* bdb = block_grads + C;
    const int tid = threadIdx.y * 32 + threadIdx.x, threads = blockDim.y * 32;
    for (int c = tid; c < 2 * C; c += threads) block_grads[c] = 0.0f;
    __syncthreads();
    for (int row = blockIdx.x * blockDim.y + threadIdx.y; row < N; row += gridDim.x * blockDim.y) {
        const float* xr = x + (size_t)row * C;
        const float* dyr = dy + (size_t)row * C;
        const float mu = mean[row], r = rstd[row];
        float g_mean = 0.0f, gx_mean = 0.0f;
        for (int c = threadIdx.x; c < C; c += 32) {
            const float g = dyr[c] * w[c];
            g_mean += g;
            gx_mean += g * ((xr[c] - mu) * r);
        }
        for (int m = 16; m > 0; m >>= 1) {
            g_mean += __shfl_xor_sync(0xffffffffu, g_mean, m);
            gx_mean += __shfl_xor_sync(0xffffffffu, gx_mean, m);
        }
        g_mean /= C;
        gx_mean /= C;
        for (int c = threadIdx.x; c < C; c += 32) {
            const float xh = (xr[c] - mu) * r;
            dx[(size_t)row * C + c] = r * (dyr[c] * w[c] - g_mean - xh * gx_mean);
            atomicAdd(&bdw[c], dyr[c] * xh);
            atomicAdd(&bdb[c], dyr[c]);
        }
    }
    __syncthreads();
    for (int c = tid; c < C; c += threads) {
        atomicAdd(&dw[c], bdw[c]);
        atomicAdd(&db[c], bdb[c]);
    }
}
'''


@pytest.fixture(scope="module")
def layer_norm():
    return gl.load(code=LAYER_NORM)


def _layer_norm_reference(x, w, b, C):
    """float64 layer norm, and an error bound per output for float32 arithmetic. The mean is a sum of C/32 + 5
    roundings (a lane's share, then the xor tree) of terms up to |x|, so it is off by (C/32 + 6) U32 mean|x|, which
    rstd turns into that much times mean|x| rstd on x_hat. The variance is as many roundings of positive terms,
    plus 2 per term; rstd adds rsqrtf's 2 ulp; each output adds ~4 roundings of its own size. Twice those counts."""
    mu = x.mean(axis=1, keepdims=True)
    r = 1 / numpy.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    xhat = (x - mu) * r
    y = xhat * w + b
    shift = numpy.abs(x).mean(axis=1, keepdims=True) * r          # the mean's error, in units of x_hat
    tol = 2 * (C // 32 + 12) * U32 * (numpy.abs(xhat * w) + shift * numpy.abs(w) + numpy.abs(b))
    return y, mu[:, 0], r[:, 0], tol


@pytest.mark.parametrize("C", [96, 320])
def test_layer_norm_rows_staged_in_a_char_buffer_read_as_slabs(layer_norm, C):
    """extern __shared__ char, reinterpreted as 16-byte slabs at per-warp offsets (threadIdx.y) and as floats
    after them; warps whose row is past N return after the staging barrier."""
    N, rows = 37, 4                  # 10 blocks of 4 warps: the last block has one row and three idle warps
    x = (rng.standard_normal((N, C)) * 3 + 1).astype(numpy.float32)
    w = rng.standard_normal(C).astype(numpy.float32)
    b = rng.standard_normal(C).astype(numpy.float32)
    y = xp.zeros((N, C), dtype=numpy.float32)
    mean, rstd = xp.zeros(N, dtype=numpy.float32), xp.zeros(N, dtype=numpy.float32)
    layer_norm.get("layer_norm_f32")(cdiv(N, rows), (32, rows), (y, mean, rstd, dev(x), dev(w), dev(b), N, C),
                                     shared_mem=((2 + rows) * C + rows * 32) * 4)
    ry, rmu, rr, tol = _layer_norm_reference(x.astype(numpy.float64), w.astype(numpy.float64),
                                             b.astype(numpy.float64), C)
    assert (numpy.abs(host(y) - ry) <= tol).all()
    assert (numpy.abs(host(mean) - rmu) <= 2 * (C // 32 + 6) * U32 * numpy.abs(x).mean(axis=1)).all()
    # the variance's C/32 + 7 roundings of positive terms halve under the square root; rsqrtf adds 2 ulp (4 U32)
    assert numpy.allclose(host(rstd), rr, rtol=(C // 32 + 16) * U32, atol=0)


@pytest.mark.parametrize("C", [96, 320])
def test_bf16_layer_norm_with_warps_along_z_and_byte_offsets(layer_norm, C):
    """The bf16 form: regions of the char buffer at byte offsets, warps along threadIdx.z, rows in a grid-stride
    loop (3 blocks x 4 warps for 37 rows), bf16 read into floats and written from floats implicitly."""
    N, rows, blocks = 37, 4, 3
    (xb, x), (wb, w), (bb, b) = (bf16(rng.standard_normal(s) * a + o)
                                 for s, a, o in (((N, C), 3, 1), (C, 1, 0), (C, 1, 0)))
    y = xp.zeros((N, C), dtype=numpy.uint16)
    layer_norm.get("layer_norm_bf16")(blocks, (32, 1, rows), (y, dev(xb), dev(wb), dev(bb), N, C),
                                      shared_mem=(2 + rows) * C * 2 + rows * 32 * 4)
    ry, _, _, tol = _layer_norm_reference(x, w, b, C)
    assert (numpy.abs(bf16_values(y) - ry) <= 1.01 * tol + U16 * numpy.abs(ry)).all()    # float, then one bf16 rounding


def test_layer_norm_backward_gathers_weight_and_bias_gradients_per_block(layer_norm):
    """dx per row from two warp sums, dw and db gathered in a block's shared memory by atomicAdd and added to
    global memory once per block; warps take rows in a grid-stride loop (3 blocks x 4 warps for 37 rows)."""
    N, C, rows, blocks = 37, 100, 4, 3            # C = 100: not a multiple of the 32 lanes
    x = (rng.standard_normal((N, C)) * 3 + 1).astype(numpy.float32)
    dy = rng.standard_normal((N, C)).astype(numpy.float32)
    w = rng.standard_normal(C).astype(numpy.float32)
    x64 = x.astype(numpy.float64)
    mean = x64.mean(axis=1).astype(numpy.float32)                 # the forward's float32 outputs, as inputs
    rstd = (1 / numpy.sqrt(x64.var(axis=1) + 1e-5)).astype(numpy.float32)
    dx = xp.zeros((N, C), dtype=numpy.float32)
    dw, db = xp.zeros(C, dtype=numpy.float32), xp.zeros(C, dtype=numpy.float32)
    layer_norm.get("layer_norm_backward")(blocks, (32, rows), (dx, dw, db, dev(dy), dev(x), dev(w), dev(mean),
                                                               dev(rstd), N, C), shared_mem=2 * C * 4)
    r = rstd.astype(numpy.float64)[:, None]
    xh = (x64 - mean.astype(numpy.float64)[:, None]) * r
    dy64 = dy.astype(numpy.float64)
    g = dy64 * w
    g_mean, gx_mean = g.mean(axis=1, keepdims=True), (g * xh).mean(axis=1, keepdims=True)
    ref_dx = r * (g - g_mean - xh * gx_mean)
    # x_hat and g carry 2 and 1 roundings, each row's two sums C/32 + 5 more of terms up to mean|g| and
    # mean|g x_hat| (times C), and dx 4 of its own: twice (C/32 + 12) roundings of those magnitudes, times rstd
    scale = numpy.abs(g) + numpy.abs(g).mean(axis=1, keepdims=True) \
        + numpy.abs(xh) * numpy.abs(g * xh).mean(axis=1, keepdims=True)
    assert (numpy.abs(host(dx) - ref_dx) <= 2 * (C // 32 + 12) * U32 * r * scale).all()
    # over the rows: at most N additions in shared and global memory together, of terms with 3 roundings each
    assert (numpy.abs(host(dw) - (dy64 * xh).sum(axis=0)) <= (N + 3) * U32 * numpy.abs(dy64 * xh).sum(axis=0)).all()
    assert (numpy.abs(host(db) - dy64.sum(axis=0)) <= N * U32 * numpy.abs(dy64).sum(axis=0)).all()


# --- parameter gradients: column sums added into bf16 by atomics, and a last block found by ticket ----------------

GRADIENTS = r'''
#include <cuda_bf16.h>
#include <stdint.h>

// Block b folds rows b, b + gridDim.x, ... of g (N, C) per column into part[C] (shared), reading each bf16 once
// (streamed) into float.
__device__ void fold_rows(float* part, const __nv_bfloat16* g, int N, int C)
{
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = 0.0f;
        for (int r = blockIdx.x; r < N; r += gridDim.x) acc += (float)__ldcs(&g[(size_t)r * C + c]);
        part[c] = acc;
    }
    __syncthreads();
}

// grad[c] += column sums, channels in pairs (C even): each pair's two bf16 are one 32-bit word, updated by a
// compare-and-swap that retries on the value another block left there
__global__ void grad_by_pairs(__nv_bfloat16* grad, const __nv_bfloat16* g, int N, int C)
{
    extern __shared__ float part[];
    fold_rows(part, g, N, C);
    __nv_bfloat162* grad2 = reinterpret_cast<__nv_bfloat162*>(grad);
    for (int i = threadIdx.x; i < C / 2; i += blockDim.x) {
        const __nv_bfloat162 mine = __halves2bfloat162((__nv_bfloat16)part[2 * i], (__nv_bfloat16)part[2 * i + 1]);
        unsigned* word = reinterpret_cast<unsigned*>(&grad2[i]);
        __nv_bfloat162 seen = __ldcg(&grad2[i]);          // from L2, where the other blocks' swaps land
        while (true) {
            __nv_bfloat162 sum = seen + mine;
            const unsigned expect = *reinterpret_cast<unsigned*>(&seen);
            const unsigned found = atomicCAS(word, expect, *reinterpret_cast<unsigned*>(&sum));
            if (found == expect) break;
            seen = *reinterpret_cast<const __nv_bfloat162*>(&found);
        }
    }
}

// one bf16 channel added through the pair atomic on the aligned 32-bit word that holds it, with a zero for the
// neighbour: a channel at the word's address is its low half, one 2 bytes further its high half
__device__ void add_bf16_via_pair(__nv_bfloat16* at, __nv_bfloat16 v)
{
    const uintptr_t addr = reinterpret_cast<uintptr_t>(at);
    __nv_bfloat162* word = reinterpret_cast<__nv_bfloat162*>(addr & ~uintptr_t(3));
    const __nv_bfloat16 nothing = __float2bfloat16(0.0f);
    atomicAdd(word, (addr & 2) ? __halves2bfloat162(nothing, v) : __halves2bfloat162(v, nothing));
}

__global__ void grad_by_singles(__nv_bfloat16* grad, const __nv_bfloat16* g, int N, int C)
{
    extern __shared__ float part[];
    fold_rows(part, g, N, C);
    for (int c = threadIdx.x; c < C; c += blockDim.x) add_bf16_via_pair(grad + c, (__nv_bfloat16)part[c]);
}

// Column sums of x (N, C) in one launch. Each block leaves its partial sums in scratch, then takes a ticket;
// the block with the last ticket adds all partials in block order. scratch = [counter][gridDim.x * C partials].
// The counter wraps to 0 on the last ticket (atomicInc's limit is gridDim.x - 1), ready for the next launch.
__global__ void column_sums_by_ticket(float* sums, float* scratch, const float* x, int N, int C)
{
    extern __shared__ float acc[];                                   // C floats, then a word: this block's ticket
    unsigned* ticket = reinterpret_cast<unsigned*>(acc + C);
    for (int c = threadIdx.x; c < C; c += blockDim.x) acc[c] = 0.0f;
    __syncthreads();
    const int mine = (N - 1 - (int)blockIdx.x) / (int)gridDim.x + 1;  // rows blockIdx.x + k * gridDim.x
    for (int e = threadIdx.x; e < mine * C; e += blockDim.x) {
        const int r = blockIdx.x + (e / C) * gridDim.x, c = e % C;
        atomicAdd(&acc[c], x[(size_t)r * C + c]);
    }
    __syncthreads();
    float* partial = scratch + 1 + (size_t)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) partial[c] = acc[c];
    __threadfence();                 // this thread's partials reach every block before the ticket is taken
    __syncthreads();
    if (threadIdx.x == 0) *ticket = atomicInc(reinterpret_cast<unsigned*>(scratch), gridDim.x - 1);
    __syncthreads();
    if (*ticket != gridDim.x - 1) return;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0.0f;
        for (int blk = 0; blk < (int)gridDim.x; ++blk) s += __ldcg(&scratch[1 + (size_t)blk * C + c]);
        sums[c] = s;
    }
}
'''


@pytest.fixture(scope="module")
def gradients():
    return gl.load(code=GRADIENTS)


def _bf16_accumulation_bound(start, parts):
    """How far a bf16 sum of `start` and the blocks' partials (in any order) may be from the exact one: each
    partial is rounded to bf16 once (U16 of itself) and each addition rounds once (U16 of a running sum, which is
    at most |start| + sum|parts| grown by those roundings). The float partials themselves are off by far less."""
    blocks = parts.shape[0]
    total = numpy.abs(start) + numpy.abs(parts).sum(axis=0)
    return U16 * (numpy.abs(parts).sum(axis=0) + blocks * (1 + U16) ** (2 * blocks) * total) \
        + blocks * 64 * U32 * total


def _grad_inputs(N, C, blocks):
    gb, g = bf16(rng.standard_normal((N, C)))
    sb, start = bf16(rng.standard_normal(C) * 4)
    sb[sb == 0x8000] = 0                          # no -0: adding +0 to it gives +0, a legal but different start
    start = ops.from_bf16_bits(sb).astype(numpy.float64)
    parts = numpy.stack([g[b::blocks].sum(axis=0) for b in range(blocks)])
    return gb, sb, start, parts


def test_bfloat16_pairs_accumulate_by_compare_and_swap_on_their_32_bits(gradients):
    """__ldcs on bf16, __halves2bfloat162 of cast floats, __ldcg on a bf162, bf162 operator+, and atomicCAS on the
    pair's 32-bit view: 4 blocks x 64 threads add their column sums into one bf16 gradient."""
    N, C, blocks = 45, 150, 4         # 75 pairs: more than a block's 64 threads, not a multiple of it
    gb, sb, start, parts = _grad_inputs(N, C, blocks)
    grad = dev(sb)
    gradients.get("grad_by_pairs")(blocks, 64, (grad, dev(gb), N, C), shared_mem=C * 4)
    exact = start + parts.sum(axis=0)
    assert (numpy.abs(bf16_values(grad) - exact) <= _bf16_accumulation_bound(start, parts)).all()


def test_single_bfloat16_channels_accumulate_through_their_aligned_pair(gradients):
    """atomicAdd(__nv_bfloat162*) on the address rounded down by uintptr_t masking, the channel in the low or the
    high half: even and odd channels both land, and the neighbour of the last (odd-numbered) channel keeps +0."""
    N, C, blocks = 45, 151, 4         # C odd: the last channel's word reaches one element past it, which the
    gb, sb, start, parts = _grad_inputs(N, C, blocks)                # array holds as padding
    grad = dev(numpy.append(sb, numpy.uint16(0)))
    gradients.get("grad_by_singles")(blocks, 64, (grad, dev(gb), N, C), shared_mem=C * 4)
    got = host(grad)
    exact = start + parts.sum(axis=0)
    assert (numpy.abs(bf16_values(got[:C]) - exact) <= _bf16_accumulation_bound(start, parts)).all()
    assert got[C] == 0


def test_the_last_block_by_atomic_inc_ticket_sums_the_partials_and_leaves_the_counter_at_zero(gradients):
    """__threadfence, then a ticket from atomicInc kept in a word of dynamic shared memory after C floats; the
    block with the last ticket sums every block's partials. Twice in a row on one scratch: the counter wraps."""
    N, C, blocks = 37, 100, 8        # 4 or 5 rows per block; C not a multiple of the 256 threads
    scratch = xp.zeros(1 + blocks * C, dtype=numpy.float32)
    for launch in range(2):
        x = (rng.standard_normal((N, C)) + launch).astype(numpy.float32)
        sums = xp.zeros(C, dtype=numpy.float32)
        gradients.get("column_sums_by_ticket")(blocks, 256, (sums, scratch, dev(x), N, C), shared_mem=C * 4 + 4)
        x64 = x.astype(numpy.float64)
        parts = numpy.stack([x64[b::blocks].sum(axis=0) for b in range(blocks)])
        part_abs = numpy.stack([numpy.abs(x64[b::blocks]).sum(axis=0) for b in range(blocks)])
        got = host(scratch)
        assert got[:1].view(numpy.uint32)[0] == 0, launch
        # a partial is 5 rows added in some order (5 roundings); the final sum adds 8 of them (8 more)
        assert (numpy.abs(got[1:].reshape(blocks, C) - parts) <= 5 * U32 * part_abs).all(), launch
        assert (numpy.abs(host(sums) - x64.sum(axis=0)) <= 13 * U32 * numpy.abs(x64).sum(axis=0)).all(), launch


# --- block reductions that take the warp reduction as a template argument; online softmax ------------------------

ROWS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <float.h>
#include <math.h>
namespace cg = cooperative_groups;

using warp_fold = float (*)(float);

__device__ float lanes_sum(float v)
{
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

__device__ float lanes_max(float v)
{
    for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

// The whole block's FOLD of v, in every thread: each warp folds its lanes, warp leaders leave one value each in
// shared memory, and every warp folds those (`pad` for the warps the block lacks). The shared array is one per
// instantiation: `reuse` adds the barrier that a later call of the same FOLD needs before it writes again.
template <warp_fold FOLD>
__device__ float whole_block(float v, float pad, bool reuse)
{
    __shared__ float leaders[32];
    const int lane = threadIdx.x % 32;
    v = FOLD(v);
    if (lane == 0) leaders[threadIdx.x / 32] = v;
    __syncthreads();
    v = FOLD(lane < blockDim.x / 32 ? leaders[lane] : pad);
    if (reuse) __syncthreads();
    return v;
}

template <warp_fold FOLD>
__device__ float whole_block(float v) { return whole_block<FOLD>(v, 0.0f, false); }

// an sm_80 or sm_90 SM holds 2048 threads: ask for two 1024-thread blocks per SM there (sm_86 and sm_89 hold 1536)
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ >= 900)
#define ROW_STATS_MIN_BLOCKS 2
#else
#define ROW_STATS_MIN_BLOCKS 1
#endif

// per row of x (rows, C), one block each: the maximum and/or the sum and the sum of squares
template <bool WantMax = true, bool WantMoments = false>
__global__ void __launch_bounds__(1024, ROW_STATS_MIN_BLOCKS)
row_stats(float* mx, float* s1, float* s2, const float* x, int C)
{
    const float* row = x + (size_t)blockIdx.x * C;
    float m = -FLT_MAX, a = 0.0f, q = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float v = row[c];
        m = fmaxf(m, v);
        a += v;
        q += v * v;
    }
    if (WantMax) {
        const float top = whole_block<lanes_max>(m, -FLT_MAX, false);
        if (threadIdx.x == 0) mx[blockIdx.x] = top;
    }
    if (WantMoments) {
        const float total = whole_block<lanes_sum>(a, 0.0f, true);     // lanes_sum's array is written again next
        const float squares = whole_block<lanes_sum>(q);
        if (threadIdx.x == 0) {
            s1[blockIdx.x] = total;
            s2[blockIdx.x] = squares;
        }
    }
}

// Online softmax: a run of a row's elements is kept as its maximum and the sum of exp(x - maximum) over it.
struct __align__(8) Run { float top; float mass; };

// two runs of one row as one: the smaller maximum's sum is rescaled to the larger. A run that has only seen
// -inf adds nothing (its exp(-inf - -inf) would be NaN).
__device__ __forceinline__ Run combine(Run p, Run q)
{
    const Run hi = p.top >= q.top ? p : q;
    const Run lo = p.top >= q.top ? q : p;
    const float scale = lo.top == -INFINITY ? 0.0f : expf(lo.top - hi.top);
    return Run{hi.top, hi.mass + lo.mass * scale};
}

struct RowScale { float shift; float inv_mass; };

// one warp reads its row once: each lane folds every 32nd element into a run, then cg::reduce combines the lanes
__device__ RowScale scale_of_row(cg::thread_block_tile<32>& warp, const float* row, int C)
{
    Run acc{-INFINITY, 0.0f};
    for (int c = warp.thread_rank(); c < C; c += warp.size()) acc = combine(acc, {row[c], 1.0f});
    const Run all = cg::reduce(warp, acc, combine);
    return RowScale{all.top, 1.0f / all.mass};
}

__global__ void softmax_warp_rows(float* y, const float* x, int N, int C)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= N) return;
    const float* xr = x + (size_t)row * C;
    const RowScale s = scale_of_row(warp, xr, C);
    for (int c = warp.thread_rank(); c < C; c += warp.size())
        __stcs(y + (size_t)row * C + c, expf(xr[c] - s.shift) * s.inv_mass);
}

// The same with the lanes combined by hand: a __shfl_down_sync tree over (top, mass) pairs, a __syncwarp before
// each step as training code often writes it (the shuffles synchronise anyway), lane 0's run broadcast.
__global__ void softmax_shuffled_rows(float* y, const float* x, int N, int C)
{
    const int lane = threadIdx.x % 32;
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (row >= N) return;
    const float* xr = x + (size_t)row * C;
    float top = -INFINITY, mass = 0.0f;
    for (int c = lane; c < C; c += 32) {
        const float v = xr[c];
        if (v > top) {              // a new maximum: what was summed so far shrinks by exp(top - v)
            mass = (top == -INFINITY ? 0.0f : mass * expf(top - v)) + 1.0f;
            top = v;
        } else if (v != -INFINITY) {
            mass += expf(v - top);
        }
    }
    for (int d = 16; d > 0; d >>= 1) {
        __syncwarp();
        const float other_top = __shfl_down_sync(0xffffffffu, top, d);
        const float other_mass = __shfl_down_sync(0xffffffffu, mass, d);
        const float t = fmaxf(top, other_top);
        mass = (top == -INFINITY ? 0.0f : mass * expf(top - t))
             + (other_top == -INFINITY ? 0.0f : other_mass * expf(other_top - t));
        top = t;
    }
    top = __shfl_sync(0xffffffffu, top, 0);
    mass = __shfl_sync(0xffffffffu, mass, 0);
    for (int c = lane; c < C; c += 32) y[(size_t)row * C + c] = expf(xr[c] - top) / mass;
}
'''


@pytest.fixture(scope="module")
def rows():
    return gl.load(code=ROWS)


def test_block_reductions_take_the_warp_fold_as_a_function_pointer_template_argument(rows):
    """A function pointer as a non-type template parameter (and an overload with defaults), static shared memory
    per instantiation reused with a barrier, and default bool template arguments on a kernel with
    __launch_bounds__(1024, MACRO): row_stats<> writes only maxima, row_stats<false, true> only moments."""
    R, C = 13, 1000                   # 1000: blocks of 96 and 256 go round several times; 1024 leaves 24 idle
    x = (rng.standard_normal((R, C)) * 3 + 0.5).astype(numpy.float32)
    x64 = x.astype(numpy.float64)
    for name, threads in (("row_stats<true, true>", 1024), ("row_stats<>", 256), ("row_stats<false, true>", 96)):
        mx, s1, s2 = (dev(numpy.full(R, -7.0, dtype=numpy.float32)) for _ in range(3))     # -7: not written
        rows.get(name)(R, threads, (mx, s1, s2, dev(x), C))
        want_max, want_moments = name != "row_stats<false, true>", name != "row_stats<>"
        assert (host(mx) == (x.max(axis=1) if want_max else -7.0)).all(), name
        if want_moments:
            # per thread ceil(C / threads) additions, then 5 + 5 in the two xor trees
            roundings = cdiv(C, threads) + 10
            bound = roundings * U32 * numpy.abs(x64).sum(axis=1)
            assert (numpy.abs(host(s1) - x64.sum(axis=1)) <= bound).all(), name
            squares = (x64 ** 2).sum(axis=1)
            assert (numpy.abs(host(s2) - squares) <= (roundings + 1) * U32 * squares).all(), name
        else:
            assert (host(s1) == -7.0).all() and (host(s2) == -7.0).all(), name


def _softmax_rows(N, C):
    """Rows for the online softmax: normal values spread over +-20, with -inf entries, a row whose lane 5 sees
    only -inf, a row whose maximum is its last element, and a row with one finite value."""
    x = (rng.standard_normal((N, C)) * 6).clip(-20, 20).astype(numpy.float32)
    x[1, ::7] = -numpy.inf
    x[3, 5::32] = -numpy.inf
    x[4, -1] = 30.0
    x[6, :] = -numpy.inf
    x[6, 123] = 2.5
    x64 = x.astype(numpy.float64)
    e = numpy.exp(x64 - x64.max(axis=1, keepdims=True))
    return x, e / e.sum(axis=1, keepdims=True)


# exp(x - max) carries expf's 2 ulp (4 U32) and the subtraction's rounding (|x - max| <= 50 here: up to 50 U32
# relative); the row's sum goes through up to C/32 + 5 merges of a few U32 each (the rescaled share is small where
# the exponent's own error is large); the division one more: a relative 1e-5 (~170 U32). No absolute part: an
# element of -inf must come out exactly 0
SOFTMAX_RTOL = 1e-5


@pytest.mark.parametrize("kernel", ["softmax_warp_rows", "softmax_shuffled_rows"])
def test_online_softmax_merges_running_maxima_across_a_warp(rows, kernel):
    """One warp per row, one pass over the row: cg::reduce with a plain __device__ function on an __align__(8)
    struct, a thread_block_tile<32>& passed to a helper that returns a brace-initialised struct, __stcs and
    INFINITY (softmax_warp_rows); or __shfl_down_sync pairs with __syncwarp and a __shfl_sync broadcast."""
    N, C = 21, 300                    # 300: not a multiple of 32; 21 rows: the last 128-thread block has 1 row
    x, ref = _softmax_rows(N, C)
    y = xp.zeros((N, C), dtype=numpy.float32)
    rows.get(kernel)(cdiv(N * 32, 128), 128, (y, dev(x), N, C))
    got = host(y)
    assert numpy.allclose(got, ref, rtol=SOFTMAX_RTOL, atol=0)
    assert (got[numpy.isneginf(x)] == 0).all()


# --- flash-attention-style forward: tiles carved from one shared float array, an online softmax per query ----------

ATTENTION = r'''
#include <math.h>

// O = softmax(Q K^T * scale) V per (batch, head); Q, K, V, O are (B, H, T, D) row-major. One block per (batch,
// head): blockIdx.x the batch, blockIdx.y the head. Each of the block's QR = blockDim.x threads owns one query of
// the current query tile and keeps its running maximum, running sum and D output accumulators in registers;
// key/value tiles of KC rows pass through shared memory. The dynamic shared memory is one float array:
//   q: QR x D | k: KC x D | v: KC x D | p: QR x KC (this tile's scores, then their exponentials)
template <int D>
__global__ void attention_by_tiles(float* o, const float* q, const float* k, const float* v, int T, float scale,
                                   int KC)
{
    extern __shared__ float tiles[];
    const int QR = blockDim.x, t = threadIdx.x;
    float* qs = tiles;
    float* ks = qs + QR * D;
    float* vs = ks + KC * D;
    float* ps = vs + KC * D;
    const size_t base = ((size_t)blockIdx.x * gridDim.y + blockIdx.y) * T * D;
    float* my_q = qs + t * D;
    float* my_p = ps + t * KC;

    for (int q0 = 0; q0 < T; q0 += QR) {
        const int qi = q0 + t;      // past T: the thread computes on zeros and writes nothing, but keeps the barriers
        for (int d = 0; d < D; ++d) my_q[d] = qi < T ? q[base + (size_t)qi * D + d] : 0.0f;
        float run_max = -INFINITY, run_sum = 0.0f, acc[D];
        for (int d = 0; d < D; ++d) acc[d] = 0.0f;

        for (int k0 = 0; k0 < T; k0 += KC) {
            __syncthreads();        // nobody still reads the previous key/value tile
            for (int e = t; e < KC * D; e += QR) {
                const int kj = k0 + e / D;
                ks[e] = kj < T ? k[base + (size_t)kj * D + e % D] : 0.0f;
                vs[e] = kj < T ? v[base + (size_t)kj * D + e % D] : 0.0f;
            }
            __syncthreads();
            const int width = min(KC, T - k0);
            float tile_max = -INFINITY;
            for (int j = 0; j < width; ++j) {
                float dot = 0.0f;
                for (int d = 0; d < D; ++d) dot += my_q[d] * ks[j * D + d];
                my_p[j] = dot * scale;
                tile_max = fmaxf(tile_max, my_p[j]);
            }
            // the tile may raise the maximum: what was summed so far shrinks by exp(old - new) (0 the first time)
            const float new_max = fmaxf(run_max, tile_max);
            const float shrink = __expf(run_max - new_max);
            float tile_sum = 0.0f;
            for (int j = 0; j < width; ++j) {
                my_p[j] = __expf(my_p[j] - new_max);
                tile_sum += my_p[j];
            }
            run_sum = run_sum * shrink + tile_sum;
            for (int d = 0; d < D; ++d) {
                float pv = 0.0f;
                for (int j = 0; j < width; ++j) pv += my_p[j] * vs[j * D + d];
                acc[d] = acc[d] * shrink + pv;
            }
            run_max = new_max;
        }
        if (qi < T)
            for (int d = 0; d < D; ++d) o[base + (size_t)qi * D + d] = acc[d] / run_sum;
    }
}
'''


def test_flash_style_attention_carves_one_shared_array_and_rescales_a_running_sum():
    """One block per (batch, head); Q, K, V and score tiles at pointer offsets into one extern __shared__ float
    array; per query an online softmax over key tiles (running maximum, sum and output rescaled by __expf).
    T = 50 is a multiple of neither the 16-query nor the 12-key tile."""
    B, H, T, D, QR, KC = 2, 3, 50, 24, 16, 12
    q = (rng.standard_normal((B, H, T, D)) * 2).astype(numpy.float32)   # scores of standard deviation 2: later
    # key tiles often raise a query's maximum, so the running sum and outputs are rescaled
    k = rng.standard_normal((B, H, T, D)).astype(numpy.float32)
    v = rng.standard_normal((B, H, T, D)).astype(numpy.float32)
    scale = 1 / numpy.sqrt(D)
    o = xp.zeros((B, H, T, D), dtype=numpy.float32)
    m = gl.load(code=ATTENTION)
    m.get(f"attention_by_tiles<{D}>")((B, H), QR, (o, dev(q), dev(k), dev(v), T, float(scale), KC),
                                      shared_mem=(QR * D + 2 * KC * D + QR * KC) * 4)
    q64, k64, v64 = (a.astype(numpy.float64) for a in (q, k, v))
    s = numpy.einsum("bhtd,bhsd->bhts", q64, k64) * numpy.float32(scale)
    p = numpy.exp(s - s.max(axis=-1, keepdims=True))
    ref = numpy.einsum("bhts,bhsd->bhtd", p, v64) / p.sum(axis=-1, keepdims=True)
    # A score carries up to D + 1 roundings of terms no larger than |q_d k_d| scale, and s - max one more of
    # |s - max| <= spread; exp turns those absolute errors into relative ones on each weight, as does __expf's
    # own (2 + 1.173 |s - max|) ulp (an ulp up to 2 U32). The running sums add T roundings, each tile's rescaling
    # two (its __expf error is common to the sum and the outputs, so it cancels), the division one. A relative
    # error e on every weight moves the output by at most 2 e times the weighted mean of |v|.
    score_err = (D + 1) * U32 * numpy.einsum("bhtd,bhsd->bhts", numpy.abs(q64), numpy.abs(k64)).max(-1) * scale
    spread = s.max(axis=-1) - s.min(axis=-1)
    tiles = cdiv(T, KC)
    weight_err = score_err + spread * U32 + 2 * (2 + 1.2 * spread) * U32 + (T + 2 * tiles + 1) * U32
    mean_abs_v = numpy.einsum("bhts,bhsd->bhtd", p, numpy.abs(v64)) / p.sum(axis=-1, keepdims=True)
    tol = 2 * weight_err[..., None] * mean_abs_v
    assert (numpy.abs(host(o) - ref) <= tol).all()
