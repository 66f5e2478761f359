"""Kernels written here in the styles of deep-learning training code, run unchanged on the backend in use.

Training code writes CUDA in its own idioms: 16-byte structs of float or bf16 moved as one int4 with
cache hints, implicit float <-> bf16/half conversions, bf16 gradients accumulated by atomics on 32-bit
pairs, block reductions that take their combining function as a template argument, online softmax with a
running maximum, a norm that carves its dynamic shared memory by hand, a last-block ticket, and
flash-attention-style tiles. The computations are this file's own (a x + b, SiLU and its gradient, RMS norm
forward and backward, a scatter-add into a bf16 table, a squared norm, per-row quantisation scales,
log-softmax and softmax, causal attention), written in those forms. Each kernel is checked against NumPy
(float64 references with error bounds worked out from the arithmetic, or bit for bit where the arithmetic
allows it). On a GPU the tests check the kernels; on the emulator they check the emulator.
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


# --- Wide<E>: 16 bytes of float or bf16 that travel as one int4 ---------------------------------------------------

WIDE = r'''
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The way a Wide goes to or from global memory: the ordinary way, streamed (used once, so the caches may drop it
// first), or, for stores only, cached in L2 and not in L1.
enum Route { ROUTE_PLAIN = 0, ROUTE_STREAM = 1, ROUTE_L2 = 2 };

// Sixteen bytes of E (4 floats, or 8 bf16 or halves). It is read and written as a single int4, which a GPU moves
// with one 128-bit instruction; the bytes go between the int4 and the elements by memcpy, not through a pointer
// of the other type.
template <typename E>
struct alignas(16) Wide {
    static constexpr int n = sizeof(int4) / sizeof(E);
    E v[n];

    Wide() = default;
    __device__ explicit Wide(int4 bits) { memcpy(v, &bits, sizeof bits); }
    __device__ explicit operator int4() const
    {
        int4 bits;
        memcpy(&bits, v, sizeof bits);
        return bits;
    }
    // every element e
    __device__ static Wide all(E e)
    {
        Wide w;
        for (E& slot : w.v) slot = e;
        return w;
    }
    __device__ E& operator[](int k) { return v[k]; }
    __device__ const E& operator[](int k) const { return v[k]; }

    // the Wide that starts at p (16-byte aligned)
    __device__ static Wide from(const E* p, Route how = ROUTE_PLAIN)
    {
        const int4* src = reinterpret_cast<const int4*>(p);
        return Wide(how == ROUTE_STREAM ? __ldcs(src) : *src);
    }
    __device__ void to(E* p, Route how = ROUTE_PLAIN) const
    {
        int4* dst = reinterpret_cast<int4*>(p);
        const int4 bits = static_cast<int4>(*this);
        if (how == ROUTE_STREAM) __stcs(dst, bits);
        else if (how == ROUTE_L2) __stcg(dst, bits);
        else *dst = bits;
    }
};
static_assert(sizeof(Wide<float>) == 16 && sizeof(Wide<__nv_bfloat16>) == 16, "a Wide is 16 bytes");
'''

ROUTE_PLAIN, ROUTE_STREAM, ROUTE_L2 = 0, 1, 2

ELEMENTWISE = WIDE + r'''
// y = a x + b, elementwise over whole Wides (n a multiple of Wide<E>::n), in a grid-stride loop. x is streamed
// in; with has_b = 0, b is not read and a Wide of zeros stands in for it; y goes out by the route asked for.
template <typename E>
__global__ void axpb(E* y, const E* x, const E* b, float a, int n, int has_b, int route)
{
    using W = Wide<E>;
    const int step = gridDim.x * blockDim.x * W::n;
    for (int at = (blockIdx.x * blockDim.x + threadIdx.x) * W::n; at < n; at += step) {
        const W xs = W::from(x + at, ROUTE_STREAM);
        const W bs = has_b ? W::from(b + at) : W::all(E(0.0f));
        W ys;
        for (int k = 0; k < W::n; ++k) {
            const float shift = bs[k];              // E widened to float by initialisation
            ys[k] = a * (float)xs[k] + shift;       // float narrowed to E by assignment (nearest even for bf16)
        }
        ys.to(y + at, static_cast<Route>(route));
    }
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

// SiLU (also called swish): silu(x) = x sigmoid(x), with the sigmoid through tanh, sigmoid(x) = (1 + tanh(x/2)) / 2.
// Its derivative, sigmoid(x) + x sigmoid(x) (1 - sigmoid(x)), is sigmoid(x) + x / (4 cosh(x/2)^2), since
// sigmoid(x) (1 - sigmoid(x)) = 1 / (4 cosh(x/2)^2).
__device__ __forceinline__ float sigmoid_via_tanh(float x) { return fmaf(0.5f, tanhf(0.5f * x), 0.5f); }

// forward: Wides in a grid-stride loop; each Wide is read streamed and overwritten with its result in registers
template <typename E>
__global__ void silu_wide(E* y, const E* x, int n)
{
    using W = Wide<E>;
    const int step = gridDim.x * blockDim.x * W::n;
    for (int at = (blockIdx.x * blockDim.x + threadIdx.x) * W::n; at < n; at += step) {
        W w = W::from(x + at, ROUTE_STREAM);
        for (int k = 0; k < W::n; ++k) {
            const float t = w[k];
            w[k] = t * sigmoid_via_tanh(t);
        }
        w.to(y + at);
    }
}

// backward: one element per thread, the result written over the gradient that came in (g <- g silu'(x))
template <typename E>
__global__ void silu_backward_in_place(E* g, const E* x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float t = x[i];
    const float c = coshf(0.5f * t);          // past |t| ~ 89, c * c is inf and the second term 0, as it should be
    const float slope = sigmoid_via_tanh(t) + t / (4.0f * c * c);
    const float upstream = g[i];
    g[i] = upstream * slope;
}
'''


@pytest.fixture(scope="module")
def elementwise():
    return gl.load(code=ELEMENTWISE)


def test_sixteen_byte_wides_compute_a_x_plus_b_by_every_route(elementwise):
    """A struct of 16 bytes built from an int4 by memcpy and turned back into one by an explicit conversion;
    loaded plainly and with __ldcs; stored with __stcs (float), __stcg (bf16) and plainly (float, with the static
    Wide::all standing in for a missing bias); bf16 read into floats and floats written into bf16 without casts.
    A grid-stride loop of 3 blocks x 128 threads over 1003 Wides. Bit for bit."""
    # a has 3 significant bits and x 8 (bf16 values in both instances): a * x is exact in float32, so a fused
    # multiply-add and a multiply then an add give the same float
    a = 1.375
    wides = 1003
    for ctype, route, has_b in (("float", ROUTE_STREAM, 1), ("__nv_bfloat16", ROUTE_L2, 1),
                                ("float", ROUTE_PLAIN, 0)):
        n = wides * (4 if ctype == "float" else 8)
        xb, x = bf16(rng.standard_normal(n) * 4)                 # 8-bit inputs in both instances
        if ctype == "float":
            b32 = rng.standard_normal(n).astype(numpy.float32)
            args = (dev(x.astype(numpy.float32)), dev(b32))
            bias = b32 if has_b else numpy.zeros(n, dtype=numpy.float32)
        else:
            bb, b64 = bf16(rng.standard_normal(n))
            args, bias = (dev(xb), dev(bb)), b64.astype(numpy.float32)
        ref = numpy.float32(a) * x.astype(numpy.float32) + bias      # float32: the product exact, one rounding
        y = xp.zeros(n, dtype=numpy.float32 if ctype == "float" else numpy.uint16)
        elementwise.get(f"axpb<{ctype}>")(3, 128, (y, *args, a, n, has_b, route))
        if ctype == "float":
            assert numpy.array_equal(host(y).view(numpy.uint32), ref.view(numpy.uint32)), (route, has_b)
        else:
            assert numpy.array_equal(host(y), ops.to_bf16_bits(ref)), route


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


def _silu_reference(x, g):
    """float64 SiLU and its gradient times g, and per element the float32 error bound of each.

    tanhf and coshf are within 2 ulp on a GPU (2 ulp <= 4 U32 of the value); x/2 is exact. The sigmoid,
    fmaf(1/2, tanhf(x/2), 1/2), is then off by at most 2 U32 + U32 sigmoid absolutely (not relatively: it cancels
    towards 0 for negative x), and y = x sigmoid adds one rounding of y. The second term of the slope,
    x / (4 c c), carries coshf's error twice, the square's rounding and the division's: 10 U32 of itself. The
    slope's sum and the product with g add one rounding each. The bounds below are twice these."""
    s = 0.5 * (1 + numpy.tanh(x / 2))
    y = x * s
    second = x / (4 * numpy.cosh(x / 2) ** 2)
    slope = s + second
    y_tol = 2 * U32 * (numpy.abs(x) * (2 + s) + numpy.abs(y))
    g_tol = 2 * U32 * numpy.abs(g) * (2 + s + 10 * numpy.abs(second) + 2 * numpy.abs(slope))
    return y, slope * g, y_tol, g_tol


def test_silu_and_its_gradient_through_tanhf_and_coshf(elementwise):
    """SiLU forward over Wides in a grid-stride loop, its gradient one element per thread written over the incoming
    gradient, in float and in bf16 (float inside)."""
    n = 8 * 377                      # whole Wides of 8 bf16 (and of 4 floats); 377 of them: not whole blocks
    x32 = (rng.uniform(-9, 9, n)).astype(numpy.float32)
    g32 = rng.standard_normal(n).astype(numpy.float32)
    x32[:6] = [0.0, -0.0, 30.0, -30.0, 200.0, -200.0]      # flat tails; at +-200, coshf(100) is already inf
    for ctype in ("float", "__nv_bfloat16"):
        if ctype == "float":
            xin, gin = x32, g32
            x, g = x32.astype(numpy.float64), g32.astype(numpy.float64)
            y = xp.zeros(n, dtype=numpy.float32)
        else:
            (xin, x), (gin, g) = bf16(x32), bf16(g32)
            y = xp.zeros(n, dtype=numpy.uint16)
        elementwise.get(f"silu_wide<{ctype}>")(2, 64, (y, dev(xin), n))      # 128 threads: several laps
        dx = dev(gin)
        elementwise.get(f"silu_backward_in_place<{ctype}>")(cdiv(n, 256), 256, (dx, dev(xin), n))
        ry, rdx, ty, tdx = _silu_reference(x, g)
        if ctype == "float":
            got_y, got_dx = host(y).astype(numpy.float64), host(dx).astype(numpy.float64)
        else:                        # the float result, then one rounding to bf16
            got_y, got_dx = bf16_values(y), bf16_values(dx)
            ty, tdx = ty * 1.01 + U16 * numpy.abs(ry), tdx * 1.01 + U16 * numpy.abs(rdx)
        assert (numpy.abs(got_y - ry) <= ty).all(), ctype
        assert (numpy.abs(got_dx - rdx) <= tdx).all(), ctype


# --- RMS norm: rows staged in a char buffer read as Wides, per-warp regions, a float scratch after them ------------

RMS_NORM = WIDE + r'''
// The sum of v over one warp, the same float in every lane: each lane leaves v in the warp's 32 floats of scratch,
// then every lane adds the 32 in lane order (the same additions everywhere, so the same sum).
__device__ float warp_sum_in_order(float* scratch, float v)
{
    const int lane = threadIdx.x % 32;
    scratch[lane] = v;
    __syncwarp();
    float total = 0.0f;
    for (int k = 0; k < 32; ++k) total += scratch[k];
    __syncwarp();                   // every lane has read the scratch before a next call writes it
    return total;
}

// RMS norm of each row of x (N, C), C a multiple of 4: y = x g r with r = 1 / sqrt(mean(x^2) + eps); inv_rms[row]
// = r. The block is `warps` warps along x, one row each: rows blockIdx.x * warps + warp. Its rows lie one after
// the other in x, so the whole block copies them in as one run of Wides, g after them. Dynamic shared memory:
//   [rows: warps x C floats][g: C floats] as Wides | [scratch: 32 floats per warp]
__global__ void rms_norm_f32(float* y, float* inv_rms, const float* x, const float* g, int N, int C, float eps)
{
    using W = Wide<float>;
    extern __shared__ char smem[];
    const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int per_row = C / W::n;
    const int first = blockIdx.x * warps;
    const int here = min(warps, N - first);                // rows this block has
    W* rows = reinterpret_cast<W*>(smem);
    W* gain = rows + warps * per_row;
    float* scratch = reinterpret_cast<float*>(gain + per_row) + warp * 32;

    const float* src = x + (size_t)first * C;
    for (int k = threadIdx.x; k < (here + 1) * per_row; k += blockDim.x) {
        if (k < here * per_row) rows[k] = W::from(src + (size_t)k * W::n, ROUTE_STREAM);
        else gain[k - here * per_row] = W::from(g + (size_t)(k - here * per_row) * W::n);
    }
    __syncthreads();
    if (warp >= here) return;       // a warp without a row leaves after the barrier

    const W* mine = rows + warp * per_row;
    float squares = 0.0f;
    for (int k = lane; k < per_row; k += 32)
        for (int e = 0; e < W::n; ++e) squares = fmaf(mine[k][e], mine[k][e], squares);
    const float r = rsqrtf(warp_sum_in_order(scratch, squares) / C + eps);
    const size_t row = first + warp;
    for (int k = lane; k < per_row; k += 32) {
        W out;
        for (int e = 0; e < W::n; ++e) out[e] = mine[k][e] * r * gain[k][e];
        out.to(y + row * C + (size_t)k * W::n, ROUTE_STREAM);
    }
    if (lane == 0) inv_rms[row] = r;
}

// The bf16 form, with a residual added first as a transformer block does before its norm: h = x + res (stored,
// rounded to bf16), y = h g / sqrt(mean(h^2) + eps) over h as stored. The block is (32, 1, warps): the warp is
// threadIdx.z. The block stages g, then each warp takes rows threadIdx.z + blockIdx.x * warps, stepping by
// gridDim.x * warps, and keeps its current row of h in its own region. Regions by byte offsets:
//   [g: C bf16][row of warp 0: C bf16]...[row of warp warps-1: C bf16] | [scratch: 32 floats per warp]
__global__ void residual_rms_norm_bf16(__nv_bfloat16* y, __nv_bfloat16* h, const __nv_bfloat16* x,
                                       const __nv_bfloat16* res, const __nv_bfloat16* g, int N, int C, float eps)
{
    using W = Wide<__nv_bfloat16>;
    extern __shared__ char smem[];
    const size_t row_bytes = (size_t)C * sizeof(__nv_bfloat16);
    W* gain = reinterpret_cast<W*>(smem);
    W* mine = reinterpret_cast<W*>(smem + (1 + threadIdx.z) * row_bytes);
    float* scratch = reinterpret_cast<float*>(smem + (1 + blockDim.z) * row_bytes) + threadIdx.z * 32;
    const int lane = threadIdx.x, per_row = C / W::n;

    for (int k = threadIdx.z * 32 + lane; k < per_row; k += blockDim.z * 32) gain[k] = W::from(g + k * W::n);
    __syncthreads();

    for (int row = blockIdx.x * blockDim.z + threadIdx.z; row < N; row += gridDim.x * blockDim.z) {
        const size_t base = (size_t)row * C;
        float squares = 0.0f;
        for (int k = lane; k < per_row; k += 32) {
            const W a = W::from(x + base + k * W::n, ROUTE_STREAM), b = W::from(res + base + k * W::n, ROUTE_STREAM);
            W sum;
            for (int e = 0; e < W::n; ++e) {
                sum[e] = (float)a[e] + (float)b[e];         // rounded to bf16 here
                const float kept = sum[e];                  // the value as stored
                squares += kept * kept;
            }
            mine[k] = sum;
            sum.to(h + base + k * W::n, ROUTE_L2);          // a backward pass reads h again soon: L2 keeps it
        }
        const float r = rsqrtf(warp_sum_in_order(scratch, squares) / C + eps);
        for (int k = lane; k < per_row; k += 32) {
            W out;
            for (int e = 0; e < W::n; ++e) {
                const float kept = mine[k][e], weight = gain[k][e];
                out[e] = kept * r * weight;
            }
            out.to(y + base + k * W::n);
        }
    }
}

// RMS norm backward (float), given the forward's r = inv_rms per row. With u = dy g and x_hat = x r:
//   dx = r (u - x_hat mean(u x_hat)),   dg = sum over rows of dy x_hat.
// Block b takes the band of rows [b band, b band + band). First each warp finds mean(u x_hat) for its rows of the
// band (a __shfl_down_sync tree; lane 0 keeps it in shared memory); then the threads sweep the band column by
// column, writing dx and summing their column's dg in a register, which goes into dg once per block.
__global__ void rms_norm_backward(float* dx, float* dg, const float* dy, const float* x, const float* g,
                                  const float* inv_rms, int N, int C, int band)
{
    extern __shared__ float coef[];                          // band floats
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    const int first = blockIdx.x * band, rows = min(band, N - first);
    for (int j = warp; j < rows; j += warps) {
        const size_t base = (size_t)(first + j) * C;
        const float r = inv_rms[first + j];
        float dot = 0.0f;
        for (int c = lane; c < C; c += 32) dot += dy[base + c] * g[c] * (x[base + c] * r);
        for (int d = 16; d > 0; d >>= 1) dot += __shfl_down_sync(0xffffffffu, dot, d);
        if (lane == 0) coef[j] = dot / C;
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float gc = g[c];
        float column = 0.0f;
        for (int j = 0; j < rows; ++j) {
            const size_t at = (size_t)(first + j) * C + c;
            const float r = inv_rms[first + j], up = dy[at], xh = x[at] * r;
            dx[at] = r * (up * gc - xh * coef[j]);
            column += up * xh;
        }
        atomicAdd(&dg[c], column);
    }
}
'''


@pytest.fixture(scope="module")
def rms_norm():
    return gl.load(code=RMS_NORM)


EPS = numpy.float32(1e-5)


def _rms_reference(x, g, lane_roundings):
    """float64 RMS norm, 1/rms per row, and bounds for float32 arithmetic: an error bound per output and a relative
    one for 1/rms. The sum of squares (positive terms) carries the `lane_roundings` of a lane's share and 31 for
    the 32 lanes in order, the mean and + eps one each, all relative; the square root halves that, and rsqrtf adds
    its 2 ulp (4 U32). Each output adds 2 roundings of its own. The bounds are twice these."""
    r = 1 / numpy.sqrt((x ** 2).mean(axis=1, keepdims=True) + float(EPS))
    y = x * r * g
    r_rel = (lane_roundings + 33) / 2 + 4
    return y, r[:, 0], 2 * (r_rel + 2) * U32 * numpy.abs(y), 2 * r_rel * U32


@pytest.mark.parametrize("C", [96, 320])
def test_rms_norm_rows_staged_in_a_char_buffer_read_as_wides(rms_norm, C):
    """extern __shared__ char, reinterpreted as 16-byte Wides at per-warp offsets (warp = threadIdx.x / 32) with a
    float scratch after them; the block stages its rows as one run; warps with no row return after the barrier."""
    N, warps = 37, 4                 # 10 blocks of 4 warps: the last block has one row and three idle warps
    x = (rng.standard_normal((N, C)) * 3 + 1).astype(numpy.float32)
    g = rng.standard_normal(C).astype(numpy.float32)
    y = xp.zeros((N, C), dtype=numpy.float32)
    inv = xp.zeros(N, dtype=numpy.float32)
    rms_norm.get("rms_norm_f32")(cdiv(N, warps), 32 * warps, (y, inv, dev(x), dev(g), N, C, float(EPS)),
                                 shared_mem=((warps + 1) * C + warps * 32) * 4)
    per_lane = 4 * cdiv(C // 4, 32)                              # one fmaf per element of a lane's Wides
    ry, rr, tol, r_rtol = _rms_reference(x.astype(numpy.float64), g.astype(numpy.float64), per_lane)
    assert (numpy.abs(host(y) - ry) <= tol).all()
    assert numpy.allclose(host(inv), rr, rtol=r_rtol, atol=0)


@pytest.mark.parametrize("C", [96, 320])
def test_bf16_residual_rms_norm_with_warps_along_z_and_byte_offsets(rms_norm, C):
    """The bf16 form: regions of the char buffer at byte offsets, warps along threadIdx.z, rows in a grid-stride
    loop (3 blocks x 4 warps for 37 rows), bf16 read into floats and written from floats implicitly; the residual
    sum is stored with __stcg and checked bit for bit."""
    N, warps, blocks = 37, 4, 3
    (xb, x), (rb, res), (gb, g) = (bf16(rng.standard_normal(s) * a + o)
                                   for s, a, o in (((N, C), 3, 1), ((N, C), 1, 0), (C, 1, 0)))
    y, h = xp.zeros((N, C), dtype=numpy.uint16), xp.zeros((N, C), dtype=numpy.uint16)
    rms_norm.get("residual_rms_norm_bf16")(blocks, (32, 1, warps),
                                           (y, h, dev(xb), dev(rb), dev(gb), N, C, float(EPS)),
                                           shared_mem=(1 + warps) * C * 2 + warps * 32 * 4)
    h_bits = ops.to_bf16_bits(x.astype(numpy.float32) + res.astype(numpy.float32))   # one float add, one rounding
    assert numpy.array_equal(host(h), h_bits)
    per_lane = 2 * 8 * cdiv(C // 8, 32)                          # a product and an addition per element
    ry, _, tol, _ = _rms_reference(ops.from_bf16_bits(h_bits).astype(numpy.float64), g, per_lane)
    assert (numpy.abs(bf16_values(y) - ry) <= 1.01 * tol + U16 * numpy.abs(ry)).all()  # float, then a bf16 rounding


def test_rms_norm_backward_finds_row_coefficients_then_sweeps_columns(rms_norm):
    """dx from one warp sum per row kept in dynamic shared memory; dg summed per column in a register over a band
    of rows and added to global memory by one atomicAdd per column and block (37 rows: 5 bands of 8, the last
    of 5; 4 warps take a band's rows in turn)."""
    N, C, band, threads = 37, 300, 8, 128          # C = 300: not a multiple of 32 lanes or 128 threads
    x = (rng.standard_normal((N, C)) * 3 + 1).astype(numpy.float32)
    dy = rng.standard_normal((N, C)).astype(numpy.float32)
    g = rng.standard_normal(C).astype(numpy.float32)
    x64, dy64, g64 = (a.astype(numpy.float64) for a in (x, dy, g))
    inv = (1 / numpy.sqrt((x64 ** 2).mean(axis=1) + float(EPS))).astype(numpy.float32)   # the forward's, as input
    dx = xp.zeros((N, C), dtype=numpy.float32)
    dg = xp.zeros(C, dtype=numpy.float32)
    blocks = cdiv(N, band)
    rms_norm.get("rms_norm_backward")(blocks, threads, (dx, dg, dev(dy), dev(x), dev(g), dev(inv), N, C, band),
                                      shared_mem=band * 4)
    r = inv.astype(numpy.float64)[:, None]
    xh, u = x64 * r, dy64 * g64
    t = u * xh
    ref_dx = r * (u - xh * t.mean(axis=1, keepdims=True))
    # u and x_hat carry one rounding each, u x_hat a third; a row's sum adds ceil(C/32) + 5 (a lane's share, the
    # tree) and the mean one, of terms up to mean|u x_hat| (times C); dx adds 4 of its own: twice
    # (ceil(C/32) + 13) roundings of those magnitudes, times r
    scale = numpy.abs(u) + numpy.abs(xh) * numpy.abs(t).mean(axis=1, keepdims=True)
    assert (numpy.abs(host(dx) - ref_dx) <= 2 * (cdiv(C, 32) + 13) * U32 * r * scale).all()
    # dy x_hat: 2 roundings; a block's register sum over its band and the atomic sum over blocks: band + blocks
    dg_terms = dy64 * xh
    assert (numpy.abs(host(dg) - dg_terms.sum(axis=0))
            <= (band + blocks + 1) * U32 * numpy.abs(dg_terms).sum(axis=0)).all()


# --- bf16 tables updated by atomics on 32-bit pairs; a norm finished by the block with the last ticket ------------

GRADIENTS = r'''
#include <cuda_bf16.h>
#include <stdint.h>

// table[idx[r], :] += g[r, :] for every row r of g (N, C): the gradient of a table lookup (an embedding).
// Rows with the same index update the same table row from different threads, so every update is atomic.

// v added to the pair at p by compare-and-swap on its 32 bits: the sum of what was read and v is swapped in
// only if the word still holds what was read; if another thread changed it, the add is redone on what it left.
__device__ void add_by_cas(__nv_bfloat162* p, __nv_bfloat162 v)
{
    unsigned* word = reinterpret_cast<unsigned*>(p);
    __nv_bfloat162 was = __ldcg(p);              // from L2, where the other threads' swaps land
    unsigned expect;
    memcpy(&expect, &was, sizeof expect);
    for (;;) {
        const __nv_bfloat162 now = was + v;
        unsigned desired;
        memcpy(&desired, &now, sizeof desired);
        const unsigned found = atomicCAS(word, expect, desired);
        if (found == expect) return;
        expect = found;
        memcpy(&was, &found, sizeof was);
    }
}

// one thread per pair of channels (C even, so every table row starts on a 4-byte boundary)
__global__ void scatter_pairs(__nv_bfloat16* table, const int* idx, const __nv_bfloat16* g, int N, int C)
{
    const int pairs = C / 2;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= N * pairs) return;
    const int r = t / pairs, p = t % pairs;
    const __nv_bfloat16* src = g + (size_t)r * C + 2 * p;
    const __nv_bfloat162 inc = __halves2bfloat162(__ldcs(src), __ldcs(src + 1));
    add_by_cas(reinterpret_cast<__nv_bfloat162*>(table + (size_t)idx[r] * C) + p, inc);
}

// One bf16 added through the pair atomic, on the aligned 32-bit word that holds it: clearing bit 1 of its address
// gives the word; the value goes into the high half if that bit was set, the low half otherwise, and the other
// half gets +0. v is rounded to bf16 on the way in.
__device__ void add_in_pair(__nv_bfloat16* at, float v)
{
    const uintptr_t address = reinterpret_cast<uintptr_t>(at);
    const bool high = (address & 2) != 0;
    __nv_bfloat162* word = reinterpret_cast<__nv_bfloat162*>(address & ~uintptr_t(2));
    atomicAdd(word, __floats2bfloat162_rn(high ? 0.0f : v, high ? v : 0.0f));
}

// one element per step of a grid-stride loop, C odd: table rows start at odd and even elements in turn.
// table[idx[r], c] += scale g[r, c]
__global__ void scatter_singles(__nv_bfloat16* table, const int* idx, const __nv_bfloat16* g, float scale,
                                int N, int C)
{
    for (int t = blockIdx.x * blockDim.x + threadIdx.x; t < N * C; t += gridDim.x * blockDim.x) {
        const float gv = g[t];
        add_in_pair(table + (size_t)idx[t / C] * C + t % C, scale * gv);
    }
}

// out[0] = sum of g^2 over a float vector, out[1] its square root, in one launch. Each block adds the squares of its
// grid-stride share (shuffles within warps, then thread 0 over the warps) and leaves the sum in part[blockIdx.x];
// then it draws a ticket from counter. The block that draws the last one adds all the parts, in block order.
// atomicInc with the limit gridDim.x - 1 turns the counter back to 0 on the last ticket, ready for the next launch.
__global__ void squared_norm_by_ticket(float* out, unsigned* counter, float* part, const float* g, int n)
{
    extern __shared__ float warp_sums[];        // one float per warp, then the block's ticket as one unsigned word
    unsigned* ticket = reinterpret_cast<unsigned*>(warp_sums + blockDim.x / 32);
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += g[i] * g[i];
    for (int d = 16; d > 0; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float mine = 0.0f;
        for (int w = 0; w < (int)blockDim.x / 32; ++w) mine += warp_sums[w];
        part[blockIdx.x] = mine;
        __threadfence();            // the part reaches every block before the ticket that announces it
        *ticket = atomicInc(counter, gridDim.x - 1);
    }
    __syncthreads();
    if (*ticket != gridDim.x - 1) return;
    __threadfence();                // acquire: the parts are read only after the tickets that announced them
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int b = 0; b < (int)gridDim.x; ++b) total += __ldcg(&part[b]);
        out[0] = total;
        out[1] = sqrtf(total);
    }
}
'''


@pytest.fixture(scope="module")
def gradients():
    return gl.load(code=GRADIENTS)


def _scatter_inputs(V, N, C):
    """A bf16 table (V, C) without -0 (adding +0 to it gives +0, a legal but different start), bf16 rows g (N, C)
    and their indices: never V - 1, so that the last table row must come back bit for bit."""
    sb, _ = bf16(rng.standard_normal((V, C)) * 4)
    sb[sb == 0x8000] = 0
    gb, g = bf16(rng.standard_normal((N, C)))
    idx = rng.integers(0, V - 1, N).astype(numpy.int32)
    return sb, ops.from_bf16_bits(sb).astype(numpy.float64), gb, g, idx


def _scatter_bound(start, incs, idx, V, inc_rounded):
    """How far a bf16 entry of the table may be from start + the sum of its increments, added in any order: each
    addition rounds once to bf16 (U16 of a running sum, at most |start| + sum|incs| grown by those roundings),
    and where the increments are themselves rounded to bf16 on the way in, U16 of each."""
    bound = numpy.zeros_like(start)
    for k in range(V):
        mine = incs[idx == k]
        m, total_abs = mine.shape[0], numpy.abs(mine).sum(axis=0)
        bound[k] = U16 * (inc_rounded * total_abs + m * (1 + U16) ** (2 * m) * (numpy.abs(start[k]) + total_abs))
    return bound


def _scatter_exact(start, incs, idx, V):
    return start + numpy.stack([incs[idx == k].sum(axis=0) for k in range(V)])


def test_bfloat16_pairs_scatter_by_compare_and_swap_on_their_32_bits(gradients):
    """__ldcs on bf16, __halves2bfloat162, __ldcg on a bf162, bf162 operator+, and an atomicCAS loop on the pair's
    32-bit view (memcpy between the two): 45 rows added into 6 of a 7-row table by 3375 threads, rows sharing an
    index racing for the same words."""
    V, N, C = 7, 45, 150              # 75 pairs per row
    sb, start, gb, g, idx = _scatter_inputs(V, N, C)
    table = dev(sb)
    gradients.get("scatter_pairs")(cdiv(N * C // 2, 128), 128, (table, dev(idx), dev(gb), N, C))
    got = host(table)
    assert (numpy.abs(bf16_values(got) - _scatter_exact(start, g, idx, V))
            <= _scatter_bound(start, g, idx, V, 0)).all()
    assert numpy.array_equal(got[V - 1], sb[V - 1])


def test_single_bfloat16_channels_scatter_through_their_aligned_pair(gradients):
    """atomicAdd(__nv_bfloat162*) on the address with bit 1 cleared by uintptr_t masking, the value in the low or
    the high half: with C odd, table rows start at even and odd elements, so both halves land; the element past
    the table, in the last element's word, keeps +0."""
    V, N, C = 7, 45, 151              # V * C odd: the last element is a low half, its word reaching one past it
    sb, start, gb, g, idx = _scatter_inputs(V, N, C)
    scale = -0.75                     # 2 significant bits: scale * g is exact in float, then rounded to bf16
    table = dev(numpy.append(sb.ravel(), numpy.uint16(0)))
    gradients.get("scatter_singles")(4, 256, (table, dev(idx), dev(gb), scale, N, C))
    got = host(table)
    incs = scale * g
    assert (numpy.abs(ops.from_bf16_bits(got[:V * C]).reshape(V, C) - _scatter_exact(start, incs, idx, V))
            <= _scatter_bound(start, incs, idx, V, 1)).all()
    assert numpy.array_equal(got[(V - 1) * C:V * C], sb[V - 1])
    assert got[V * C] == 0


def test_the_block_with_the_last_atomic_inc_ticket_finishes_the_norm_and_leaves_the_counter_at_zero(gradients):
    """__threadfence, then a ticket from atomicInc kept in a word of dynamic shared memory after the warps' floats;
    the block with the last ticket fences again and adds every block's part (read with __ldcg). Twice in a row on
    one counter: it wraps to 0 each time."""
    n, blocks, threads = 10007, 8, 256           # 2048 threads: 4 or 5 elements each
    counter = xp.zeros(1, dtype=numpy.uint32)
    for launch in range(2):
        g = (rng.standard_normal(n) + launch).astype(numpy.float32)
        out, part = xp.zeros(2, dtype=numpy.float32), xp.zeros(blocks, dtype=numpy.float32)
        gradients.get("squared_norm_by_ticket")(blocks, threads, (out, counter, part, dev(g), n),
                                                shared_mem=(threads // 32) * 4 + 4)
        sq = g.astype(numpy.float64) ** 2
        owner = (numpy.arange(n) // threads) % blocks           # the block whose grid-stride share holds i
        parts = numpy.array([sq[owner == b].sum() for b in range(blocks)])
        assert host(counter)[0] == 0, launch
        # a square, then up to 5 terms a thread, 5 in the xor tree and 8 warps in order: 2 * 5 + 5 + 8 roundings
        # of positive sums, relative; the total adds 8 blocks'
        assert numpy.allclose(host(part), parts, rtol=23 * U32, atol=0), launch
        got = host(out)
        assert abs(got[0] - sq.sum()) <= 31 * U32 * sq.sum(), launch
        assert abs(got[1] - numpy.sqrt(sq.sum())) <= (31 / 2 + 1) * U32 * numpy.sqrt(sq.sum()), launch


# --- block folds that take the combining function as a template argument; online softmax --------------------------

ROWS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <math.h>
namespace cg = cooperative_groups;

using pairwise = float (*)(float, float);

__device__ float add_two(float a, float b) { return a + b; }
__device__ float larger_magnitude(float a, float b) { return fmaxf(fabsf(a), fabsf(b)); }

// OP over the whole block, the result in every thread. Warps fold by xor shuffles; lane 0 of each puts its warp's
// value in slots[warp]; warp 0 folds those (`identity` for the warps the block lacks) and puts the result in
// slots[32], which every thread reads. `slots` is 33 floats of shared memory. One array serves call after call with
// no barrier at the end: a next call writes slots[warp] only after this call's last barrier, by which warp 0 has
// read them, and slots[32] only after its own first barrier, which no thread reaches before reading this result.
// The block is whole warps.
template <pairwise OP>
__device__ float block_fold(float v, float identity, float* slots)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int d = 1; d < 32; d <<= 1) v = OP(v, __shfl_xor_sync(0xffffffffu, v, d));
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < (int)blockDim.x / 32 ? slots[lane] : identity;
        for (int d = 16; d > 0; d >>= 1) w = OP(w, __shfl_down_sync(0xffffffffu, w, d));
        if (lane == 0) slots[32] = w;
    }
    __syncthreads();
    return slots[32];
}

// the same with slots of its own (one static array per OP) and identity 0 unless told otherwise
template <pairwise OP>
__device__ float block_fold(float v, float identity = 0.0f)
{
    __shared__ float own[33];
    return block_fold<OP>(v, identity, own);
}

// How many 512-thread blocks of row_scales an SM should hold at once: its thread capacity over 512. That is 1024
// threads on sm_75; 1536 on sm_86, sm_87, sm_89 and sm_120 on; 2048 on sm_70, sm_80, sm_90 and sm_100.
#if !defined(__CUDA_ARCH__)
#define SCALES_PER_SM 4
#elif __CUDA_ARCH__ == 750
#define SCALES_PER_SM 2
#elif __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200
#define SCALES_PER_SM 3
#else
#define SCALES_PER_SM 4
#endif

// Per row of x (rows, C), one block each: the largest magnitude (what an 8-bit quantiser divides by) and/or the
// row's L1 and L2 norms. The two norms share one slots array: the second fold reuses it.
template <bool AbsMax = true, bool Norms = false>
__global__ void __launch_bounds__(512, SCALES_PER_SM)
row_scales(float* amax, float* l1, float* l2, const float* x, int C)
{
    __shared__ float slots[33];
    const float* row = x + (size_t)blockIdx.x * C;
    float big = 0.0f, absolute = 0.0f, squares = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float v = row[c];
        big = larger_magnitude(big, v);
        absolute += fabsf(v);
        squares = fmaf(v, v, squares);
    }
    if (AbsMax) {
        const float m = block_fold<larger_magnitude>(big);
        if (threadIdx.x == 0) amax[blockIdx.x] = m;
    }
    if (Norms) {
        const float a = block_fold<add_two>(absolute, 0.0f, slots);
        const float q = block_fold<add_two>(squares, 0.0f, slots);
        if (threadIdx.x == 0) {
            l1[blockIdx.x] = a;
            l2[blockIdx.x] = sqrtf(q);
        }
    }
}

// Online softmax: what is known of some of a row's elements is their maximum and the sum of exp(x - maximum)
// over them.
struct __align__(8) Seen { float hi; float sum; };

// one more element into a state: a new maximum first shrinks the sum by exp(old - new), which is 0 for a state
// that has seen nothing (hi = -inf); an element of -inf adds nothing
__device__ __forceinline__ void see(Seen& s, float v)
{
    if (v > s.hi) {
        s.sum = s.sum * expf(s.hi - v) + 1.0f;
        s.hi = v;
    } else if (v != -INFINITY) {
        s.sum += expf(v - s.hi);
    }
}

// two states of one row as one: both sums brought to the larger maximum. If neither has seen anything, the
// result has not either (exp(-inf - -inf) would be NaN).
__device__ Seen join(Seen a, Seen b)
{
    const float hi = fmaxf(a.hi, b.hi);
    if (hi == -INFINITY) return a;
    return Seen{hi, a.sum * expf(a.hi - hi) + b.sum * expf(b.hi - hi)};
}

struct LogDenominator { float hi; float log_sum; };     // log(sum over the row of exp(x)) = hi + log_sum

// a warp reads its row once: each lane sees every 32nd element, then cg::reduce joins the lanes' states
__device__ LogDenominator log_denominator(cg::thread_block_tile<32>& warp, const float* row, int C)
{
    Seen mine{-INFINITY, 0.0f};
    for (int c = warp.thread_rank(); c < C; c += 32) see(mine, row[c]);
    const Seen all = cg::reduce(warp, mine, join);
    return LogDenominator{all.hi, logf(all.sum)};
}

// log-softmax by rows, a warp a row in a grid-stride loop over rows: y = (x - hi) - log_sum, streamed out, and
// lse[row] = hi + log_sum (the row's log-sum-exp, which a backward pass needs)
__global__ void log_softmax_rows(float* y, float* lse, const float* x, int N, int C)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int warps = gridDim.x * warp.meta_group_size();
    for (int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank(); row < N; row += warps) {
        const float* xr = x + (size_t)row * C;
        const LogDenominator d = log_denominator(warp, xr, C);
        for (int c = warp.thread_rank(); c < C; c += 32) __stcs(y + (size_t)row * C + c, (xr[c] - d.hi) - d.log_sum);
        if (warp.thread_rank() == 0) lse[row] = d.hi + d.log_sum;
    }
}

// Softmax with the lanes joined by hand: a __shfl_down_sync tree over (hi, sum) pairs, a __syncwarp before each
// step as training code often writes it (the shuffles synchronise anyway), lane 0's state broadcast by __shfl_sync.
__global__ void softmax_shuffled_rows(float* y, const float* x, int N, int C)
{
    const int lane = threadIdx.x % 32;
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (row >= N) return;
    const float* xr = x + (size_t)row * C;
    Seen s{-INFINITY, 0.0f};
    for (int c = lane; c < C; c += 32) see(s, xr[c]);
    for (int d = 16; d > 0; d >>= 1) {
        __syncwarp();
        const Seen other{__shfl_down_sync(0xffffffffu, s.hi, d), __shfl_down_sync(0xffffffffu, s.sum, d)};
        s = join(s, other);
    }
    const float hi = __shfl_sync(0xffffffffu, s.hi, 0), sum = __shfl_sync(0xffffffffu, s.sum, 0);
    for (int c = lane; c < C; c += 32) y[(size_t)row * C + c] = expf(xr[c] - hi) / sum;
}
'''


@pytest.fixture(scope="module")
def rows():
    return gl.load(code=ROWS)


def test_block_folds_take_the_combining_function_as_a_function_pointer_template_argument(rows):
    """A function pointer as a non-type template parameter, and an overload with default arguments that brings its
    own static shared array; one slots array reused by two folds; default bool template arguments on a kernel with
    __launch_bounds__(512, MACRO): row_scales<> writes only amax, row_scales<false, true> only the norms."""
    R, C = 13, 1000                   # 1000: blocks of 96 and 256 go round several times; 512 leaves 24 idle
    x = (rng.standard_normal((R, C)) * 3 + 0.5).astype(numpy.float32)
    x64 = numpy.abs(x.astype(numpy.float64))
    for name, threads in (("row_scales<true, true>", 512), ("row_scales<>", 256), ("row_scales<false, true>", 96)):
        amax, l1, l2 = (dev(numpy.full(R, -7.0, dtype=numpy.float32)) for _ in range(3))     # -7: not written
        rows.get(name)(R, threads, (amax, l1, l2, dev(x), C))
        want_max, want_norms = name != "row_scales<false, true>", name != "row_scales<>"
        assert (host(amax) == (numpy.abs(x).max(axis=1) if want_max else -7.0)).all(), name
        if want_norms:
            # per thread ceil(C / threads) additions (or fmaf), then 5 + 5 in the two shuffle trees, of positive
            # terms; the square root halves the relative error and rounds once
            roundings = cdiv(C, threads) + 10
            total = x64.sum(axis=1)
            assert (numpy.abs(host(l1) - total) <= roundings * U32 * total).all(), name
            norm = numpy.sqrt((x64 ** 2).sum(axis=1))
            assert (numpy.abs(host(l2) - norm) <= (roundings / 2 + 1) * U32 * norm).all(), name
        else:
            assert (host(l1) == -7.0).all() and (host(l2) == -7.0).all(), name


def _softmax_rows(N, C):
    """Rows for the online softmax: normal values spread over +-20, with -inf entries, a row whose lane 5 sees
    only -inf, a row whose maximum is its last element, and a row with one finite value; and the float64 softmax,
    log-softmax and log-sum-exp of each row."""
    x = (rng.standard_normal((N, C)) * 6).clip(-20, 20).astype(numpy.float32)
    x[1, ::7] = -numpy.inf
    x[3, 5::32] = -numpy.inf
    x[4, -1] = 30.0
    x[6, :] = -numpy.inf
    x[6, 123] = 2.5
    x64 = x.astype(numpy.float64)
    hi = x64.max(axis=1, keepdims=True)
    e = numpy.exp(x64 - hi)
    log_sum = numpy.log(e.sum(axis=1, keepdims=True))
    return x, x64, hi, e / e.sum(axis=1, keepdims=True), (x64 - hi) - log_sum, (hi + log_sum)[:, 0]


def _sum_error(x64, hi, C):
    """A relative bound on a row's sum of exp(x - hi) as the kernels form it. Each element's share goes through
    its own expf and at most ceil(C/32) + 5 rescalings (a lane's new maxima, then the 5 joins), each an expf
    (2 ulp: 4 U32), a product and an addition; the roundings of the exponents' arguments add up to at most
    |x - hi| U32 (the arguments telescope). Twice that, with the row's largest |x - hi|."""
    finite = numpy.where(numpy.isneginf(x64), hi, x64)
    spread = (hi - finite).max(axis=1, keepdims=True)
    return 2 * U32 * (spread + 6 * (cdiv(C, 32) + 6))


def test_log_softmax_joins_online_states_with_cg_reduce(rows):
    """One warp per row in a grid-stride loop over rows (2 blocks of 4 warps for 21 rows): cg::reduce with a plain
    __device__ function on an __align__(8) struct, a thread_block_tile<32>& passed to a helper that returns a
    brace-initialised struct, INFINITY, __stcs of floats; -inf elements come out -inf."""
    N, C = 21, 300                    # 300: not a multiple of 32
    x, x64, hi, _, ref, ref_lse = _softmax_rows(N, C)
    y, lse = xp.zeros((N, C), dtype=numpy.float32), xp.zeros(N, dtype=numpy.float32)
    rows.get("log_softmax_rows")(2, 128, (y, lse, dev(x), N, C))
    got = host(y)
    eps_sum = _sum_error(x64, hi, C)
    log_sum = ref_lse[:, None] - hi
    # y = (x - hi) - log_sum: the subtraction's rounding (U32 |x - hi|), log_sum's error (the sum's relative error,
    # plus logf's ulp: 2 U32 |log_sum|) and the last rounding (U32 |y|), twice
    finite = ~numpy.isneginf(x)
    diff = numpy.where(finite, x64 - hi, 0)
    tol = eps_sum + 2 * U32 * (numpy.abs(diff) + 2 * numpy.abs(log_sum) + numpy.abs(numpy.where(finite, ref, 0)))
    assert (numpy.abs(got[finite] - ref[finite]) <= numpy.broadcast_to(tol, got.shape)[finite]).all()
    assert (got[~finite] == -numpy.inf).all()
    lse_tol = eps_sum[:, 0] + 2 * U32 * (2 * numpy.abs(log_sum[:, 0]) + numpy.abs(ref_lse))
    assert (numpy.abs(host(lse) - ref_lse) <= lse_tol).all()


def test_softmax_joins_online_states_by_shuffles(rows):
    """One warp per row (21 rows: the last 128-thread block has one): __shfl_down_sync pairs joined after a
    __syncwarp, a __shfl_sync broadcast of lane 0's state; -inf elements come out exactly 0."""
    N, C = 21, 300
    x, x64, hi, ref, _, _ = _softmax_rows(N, C)
    y = xp.zeros((N, C), dtype=numpy.float32)
    rows.get("softmax_shuffled_rows")(cdiv(N * 32, 128), 128, (y, dev(x), N, C))
    got = host(y)
    # exp(x - hi): its argument's rounding and expf's 2 ulp; the sum's relative error; the division's rounding
    diff = numpy.where(numpy.isneginf(x), 0, x64 - hi)
    rtol = _sum_error(x64, hi, C) + 2 * U32 * (numpy.abs(diff) + 5)
    assert (numpy.abs(got - ref) <= rtol * ref).all()
    assert (got[numpy.isneginf(x)] == 0).all()


# --- flash-attention-style causal attention: key and value tiles in one shared float array, online per key ---------

ATTENTION = r'''
#include <math.h>

// Causal attention, O = softmax(mask(Q K^T scale)) V for each (batch, head); Q, K, V, O are (B, H, T, D) and query t
// sees keys 0..t. Also lse[b, h, t], the log of query t's softmax denominator, for a backward pass.
// Grid: blockIdx.x a tile of blockDim.x queries, blockIdx.y the (batch, head) pair. Each thread owns one query: its
// scaled row of Q, its running maximum and sum and its D outputs are registers. Keys and values pass through shared
// memory KC at a time, in one extern float array: [K transposed: D x KC][V: KC x D]. The block's last key tile is
// the one that holds its last query. The softmax is online per key: a key that raises the maximum first shrinks the
// sum and the outputs by exp(old - new).
template <int D>
__global__ void causal_attention(float* o, float* lse, const float* q, const float* k, const float* v, int T,
                                 float scale, int KC)
{
    extern __shared__ float staged[];
    float* kt = staged;                       // kt[d * KC + j]: component d of the tile's key j
    float* vs = staged + D * KC;              // vs[j * D + d]
    const size_t head = (size_t)blockIdx.y * T * D;
    const int first = blockIdx.x * blockDim.x, me = first + threadIdx.x;
    const int last = min(first + (int)blockDim.x, T) - 1;

    float qs[D], acc[D];
    for (int d = 0; d < D; ++d) {
        qs[d] = me < T ? q[head + (size_t)me * D + d] * scale : 0.0f;
        acc[d] = 0.0f;
    }
    float hi = -INFINITY, sum = 0.0f;
    for (int k0 = 0; k0 <= last; k0 += KC) {
        const int width = min(KC, last + 1 - k0);
        __syncthreads();                      // nobody reads the previous tile any more
        for (int e = threadIdx.x; e < width * D; e += blockDim.x) {
            const int j = e / D, d = e % D;
            kt[d * KC + j] = k[head + (size_t)(k0 + j) * D + d];
            vs[e] = v[head + (size_t)(k0 + j) * D + d];
        }
        __syncthreads();
        const int seen = min(width, me - k0 + 1);      // this tile's keys that the query sees (none if <= 0)
        for (int j = 0; j < seen; ++j) {
            float s = 0.0f;
            for (int d = 0; d < D; ++d) s += qs[d] * kt[d * KC + j];
            if (s > hi) {
                const float shrink = __expf(hi - s);    // 0 for the first key
                sum *= shrink;
                for (int d = 0; d < D; ++d) acc[d] *= shrink;
                hi = s;
            }
            const float p = __expf(s - hi);
            sum += p;
            for (int d = 0; d < D; ++d) acc[d] += p * vs[j * D + d];
        }
    }
    if (me < T) {
        for (int d = 0; d < D; ++d) o[head + (size_t)me * D + d] = acc[d] / sum;
        lse[(size_t)blockIdx.y * T + me] = hi + logf(sum);
    }
}
'''


def test_flash_style_causal_attention_stages_key_tiles_and_rescales_per_key():
    """A block per (query tile, batch and head); K (transposed) and V tiles at pointer offsets into one extern
    __shared__ float array; per query an online softmax over the keys it sees (running maximum, sum and outputs
    rescaled by __expf), stopping at the block's last query. T = 50 is a multiple of neither the 16-query nor
    the 12-key tile."""
    B, H, T, D, QR, KC = 2, 3, 50, 24, 16, 12
    q = (rng.standard_normal((B, H, T, D)) * 2).astype(numpy.float32)   # scores of standard deviation 2: later
    # keys often raise a query's maximum, so the running sum and outputs are rescaled
    k = rng.standard_normal((B, H, T, D)).astype(numpy.float32)
    v = rng.standard_normal((B, H, T, D)).astype(numpy.float32)
    scale = numpy.float32(1 / numpy.sqrt(D))
    o, lse = xp.zeros((B, H, T, D), dtype=numpy.float32), xp.zeros((B, H, T), dtype=numpy.float32)
    m = gl.load(code=ATTENTION)
    m.get(f"causal_attention<{D}>")((cdiv(T, QR), B * H), QR, (o, lse, dev(q), dev(k), dev(v), T, float(scale), KC),
                                    shared_mem=2 * KC * D * 4)
    q64, k64, v64 = (a.astype(numpy.float64) for a in (q, k, v))
    s = numpy.einsum("bhtd,bhsd->bhts", q64, k64) * float(scale)
    causal = numpy.tril(numpy.ones((T, T), dtype=bool))
    s = numpy.where(causal, s, -numpy.inf)
    hi = s.max(axis=-1, keepdims=True)
    p = numpy.exp(s - hi)
    denominator = p.sum(axis=-1, keepdims=True)
    ref = numpy.einsum("bhts,bhsd->bhtd", p, v64) / denominator
    ref_lse = (hi + numpy.log(denominator))[..., 0]
    # A score carries D + 2 roundings (the query's scaling, the products, the additions) of terms no larger than
    # |q_d k_d| scale, and exp turns that absolute error into a relative one on each weight (the maximum's error
    # too). A key's weight is its own __expf times the shrinks after it: at most n + 1 __expf for the n keys a
    # query sees, each (2 + 1.16 |argument|) ulp (an ulp up to 2 U32), with arguments that add up to the key's
    # distance from the maximum (at most the spread); their roundings add that distance in U32 once more, and each
    # shrink a product's rounding. The sums add n roundings and the division one. A relative error e on every
    # weight moves the output by at most 2 e times the weighted mean of |v|. The bound is twice all that.
    seen = numpy.arange(1, T + 1)[:, None]                              # keys each query sees
    abs_products = numpy.einsum("bhtd,bhsd->bhts", numpy.abs(q64), numpy.abs(k64)) * float(scale)
    score_err = (D + 2) * U32 * numpy.where(causal, abs_products, 0).max(-1)
    finite_s = numpy.where(causal, s, hi)
    spread = (hi - finite_s.min(axis=-1, keepdims=True))[..., 0]
    weight_err = 2 * score_err + (2 * (2 * (seen[:, 0] + 1) + 1.2 * spread) + spread + seen[:, 0]) * U32
    mean_abs_v = numpy.einsum("bhts,bhsd->bhtd", p, numpy.abs(v64)) / denominator
    tol = 2 * (2 * weight_err + (seen[:, 0] + 2) * U32)[..., None] * mean_abs_v
    assert (numpy.abs(host(o) - ref) <= tol).all()
    # lse = hi + logf(sum): the maximum's score error, the sum's relative error, logf's ulp, one rounding
    lse_tol = 2 * (weight_err + U32 * (2 * numpy.abs(numpy.log(denominator[..., 0])) + numpy.abs(ref_lse)))
    assert (numpy.abs(host(lse) - ref_lse) <= lse_tol).all()
