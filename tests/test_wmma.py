"""nvcuda::wmma on the backend in use: FP16, BF16 and TF32 tensor-core products against float64.

On a GPU these run on the tensor cores; on the emulator, on its model of them (include/mma.h). The same
expectations hold on both: FP16 and BF16 inputs multiply exactly and add in FP32, so against float64 on
the same (rounded) inputs the error is FP32's; TF32 keeps 10 mantissa bits of FP32 inputs, so its error
is some hundred times FP32's, with or without __float_to_tf32 (which rounds instead of truncating).
The tensor cores add into FP32 accumulators their own way (a group of products aligned to the largest
term and cut to 26 bits, the sum cut toward zero): the emulator adds the same way, and these tests hold
it to what the H200 does, exactly on small cases and in the errors recorded on the H200.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops

xp = gl.xp

WMMA = r'''
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// C (M x N, float, row-major) = A (M x K) B (K x N): one warp per 16 x 16 tile of C; M, N, K multiples of 16
template <class T>
__global__ void wmma_gemm(const T* A, const T* B, float* C, int M, int N, int K)
{
    const int tile = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int tr = tile / (N / 16), tc = tile % (N / 16);
    if (tr >= M / 16) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tr * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tc * 16, N);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + (size_t)tr * 16 * N + tc * 16, c, N, wmma::mem_row_major);
}

// TF32, B given transposed (N x K row-major = K x N column-major); C column-major this time
__global__ void wmma_tf32(const float* A, const float* BT, float* C, int M, int N, int K, int convert)
{
    const int tile = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int tr = tile / (N / 16), tc = tile % (N / 16);
    if (tr >= M / 16) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < K; k += 8) {
        wmma::load_matrix_sync(a, A + (size_t)tr * 16 * K + k, K);
        wmma::load_matrix_sync(b, BT + (size_t)tc * 16 * K + k, K);
        if (convert) {
            for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
            for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
        }
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + (size_t)tc * 16 * M + tr * 16, c, M, wmma::mem_col_major);
}

// D = A B + C on one 16 x 16 x 16 tile, FP16 inputs, C loaded from memory, D over C
__global__ void wmma_mad(const __half* A, const __half* B, float* C)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

// an accumulator loaded from memory (beta * C), scaled element by element, stored back
__global__ void wmma_axpby(const __half* A, const __half* B, float* C, float alpha, float beta)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
    wmma::fill_fragment(acc, 0.0f);
    wmma::mma_sync(acc, a, b, acc);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}
'''

rng = numpy.random.default_rng(14)


@pytest.fixture(scope="module")
def wmma():
    return gl.load(code=WMMA)


def _rel(out, ref):
    out = gl.to_host(out).astype(numpy.float64)
    return numpy.linalg.norm(out - ref) / numpy.linalg.norm(ref)


@pytest.mark.parametrize("kind", ["half", "bf16"])
def test_fp16_and_bf16_products_are_fp32_accurate_on_their_inputs(wmma, kind):
    M, N, K = 48, 32, 80
    A32, B32 = rng.standard_normal((M, K)).astype(numpy.float32), rng.standard_normal((K, N)).astype(numpy.float32)
    if kind == "half":
        A, B = A32.astype(numpy.float16), B32.astype(numpy.float16)
        Ah, Bh = A.astype(numpy.float64), B.astype(numpy.float64)
        name = "wmma_gemm<__half>"
    else:
        A, B = ops.to_bf16_bits(A32), ops.to_bf16_bits(B32)
        Ah, Bh = ops.from_bf16_bits(A).astype(numpy.float64), ops.from_bf16_bits(B).astype(numpy.float64)
        name = "wmma_gemm<__nv_bfloat16>"
    C = xp.full((M, N), numpy.nan, dtype=numpy.float32)
    wmma.get(name)((M // 16) * (N // 16) // 2, 64, (xp.asarray(A), xp.asarray(B), C, M, N, K))
    assert _rel(C, Ah @ Bh) < 5e-6
    assert _rel(C, A32.astype(numpy.float64) @ B32.astype(numpy.float64)) > 1e-4     # the inputs' own rounding


@pytest.mark.parametrize("convert", [0, 1])
def test_tf32_keeps_ten_mantissa_bits(wmma, convert):
    M, N, K = 32, 48, 64
    A, BT = rng.standard_normal((M, K)).astype(numpy.float32), rng.standard_normal((N, K)).astype(numpy.float32)
    C = xp.full(M * N, numpy.nan, dtype=numpy.float32)
    wmma.get("wmma_tf32")((M // 16) * (N // 16) // 2, 64, (xp.asarray(A), xp.asarray(BT), C, M, N, K, convert))
    got = gl.to_host(C).reshape(N, M).T                              # column-major C
    err = _rel(got, A.astype(numpy.float64) @ BT.T.astype(numpy.float64))
    assert 1e-5 < err < 2e-3, err


def test_accumulators_load_scale_and_store(wmma):
    A, B = (rng.standard_normal((16, 16)).astype(numpy.float16) for _ in range(2))
    C0 = rng.standard_normal((16, 16)).astype(numpy.float32)
    C = xp.asarray(C0.copy())
    wmma.get("wmma_axpby")(1, 32, (xp.asarray(A), xp.asarray(B), C, 2.0, -0.5))
    # col_major fragments read A and B as their transposes' storage
    ref = 2.0 * (A.T.astype(numpy.float64) @ B.T.astype(numpy.float64)) - 0.5 * C0
    assert _rel(C, ref) < 5e-6


def _mad(wmma, products: int, a: float, b: float, c: float) -> float:
    """Row 0 of A has `products` copies of a, column 0 of B copies of b, C[0][0] = c: D[0][0] = c + products a b."""
    A, B = numpy.zeros((16, 16), numpy.float16), numpy.zeros((16, 16), numpy.float16)
    A[0, :products], B[:products, 0] = a, b
    C = numpy.zeros((16, 16), numpy.float32)
    C[0, 0] = c
    C = xp.asarray(C)
    wmma.get("wmma_mad")(1, 32, (xp.asarray(A), xp.asarray(B), C))
    return float(gl.to_host(C)[0, 0])


def test_tensor_core_sums_are_cut_toward_zero(wmma):
    """1 + 0.75 ulp: IEEE addition rounds it up to 1 + ulp; the tensor cores cut it to 1 (and -1 - 0.75 ulp
    to -1). ulp = 2^-23 at 1; the product 1.5 2^-12 x 2^-12 is exact in FP16."""
    ulp = 2.0 ** -23
    assert numpy.float32(1.0) + numpy.float32(0.75 * ulp) == numpy.float32(1.0 + ulp)     # IEEE, to nearest
    assert _mad(wmma, 1, 1.5 * 2.0 ** -12, 2.0 ** -12, 1.0) == 1.0
    assert _mad(wmma, 1, -1.5 * 2.0 ** -12, 2.0 ** -12, -1.0) == -1.0
    assert _mad(wmma, 1, 2.0 ** -11, 2.0 ** -12, 1.0) == 1.0 + ulp                       # 1 ulp exactly: kept


def test_tensor_core_terms_are_cut_to_26_bits_below_the_largest(wmma):
    """Eight products of 1.5 2^-26 add up to 1.5 ulp of 1: to nearest, 1 + 2 ulp; summed exactly and cut,
    1 + ulp; each cut to 26 bits below 1's leading bit (multiples of 2^-25) before the sum, 1."""
    assert _mad(wmma, 8, 1.5 * 2.0 ** -13, 2.0 ** -13, 1.0) == 1.0
    assert _mad(wmma, 8, 2.0 ** -12, 2.0 ** -13, 1.0) == 1.0 + 2.0 ** -22                # 2^-25 each: kept


def _model_sum(acc: float, products: list) -> float:
    """The emulator's tensor-core sum, written out plainly: acc and the exact products aligned to the largest
    term, each cut toward zero to 26 bits below its leading bit, added exactly, the sum cut toward zero to FP32
    (past FLT_MAX: inf from 2^128 on, else FLT_MAX); a non-finite term gives the IEEE sum."""
    import math
    terms = [acc, *products]
    if not all(math.isfinite(t) for t in terms):
        total = terms[0]
        for t in terms[1:]:
            total += t
        return float(numpy.float32(total))
    big = max(abs(t) for t in terms)
    if big == 0.0:
        return 0.0
    unit = math.ldexp(1.0, math.frexp(big)[1] - 26)
    total = sum(int(t / unit) for t in terms) * unit             # (int() cuts toward zero; every step is exact)
    top = float(numpy.finfo(numpy.float32).max)
    if abs(total) > top:
        return math.copysign(math.inf if abs(total) >= 2.0 ** 128 else top, total)
    f = numpy.float32(total)
    if abs(float(f)) > abs(total):
        f = numpy.nextafter(f, numpy.float32(0))
    return float(f)


def _same_bits(got, want) -> bool:
    got, want = numpy.asarray(got, numpy.float32), numpy.asarray(want, numpy.float32)
    return bool(((got.view(numpy.uint32) == want.view(numpy.uint32)) | (numpy.isnan(got) & numpy.isnan(want))).all())


def test_the_emulators_tensor_core_sums_are_its_model_bit_for_bit(wmma):
    """Every output of an FP16 wmma (one group of 16 products and the accumulator) and of a TF32 one (two groups
    of 4, operands cut to TF32 as the tensor cores read them) is the model's, bit for bit: exponents 2^60 apart,
    cancellations, zeros of both signs, subnormal and infinite accumulators, NaN, sums past FLT_MAX and below
    FLT_MIN (the emulator's vector path and its plain path against the model written out here)."""
    if gl.on_gpu:
        pytest.skip("the emulator's model of the tensor cores (a GPU's own sums differ in their last bits)")
    r = numpy.random.default_rng(52)
    A = (r.choice([-1.0, 1.0], (16, 16)) * numpy.exp2(r.integers(-14, 15, (16, 16))) *
         (1 + r.integers(0, 1024, (16, 16)) / 1024)).astype(numpy.float16)
    B = (r.choice([-1.0, 1.0], (16, 16)) * numpy.exp2(r.integers(-14, 15, (16, 16))) *
         (1 + r.integers(0, 1024, (16, 16)) / 1024)).astype(numpy.float16)
    B[:, 3] = -B[:, 2]                                               # columns 2 and 3 cancel
    A[5, :] = 0.0
    A[6, :] = -A[6, :] * 0
    C0 = (r.standard_normal((16, 16)) * numpy.exp2(r.integers(-30, 30, (16, 16)))).astype(numpy.float32)
    C0[5, :8], C0[5, 8:] = 0.0, -0.0
    C0[7, 3] = 1e-45

    def fp16(A, C0):
        C = xp.asarray(C0.copy())
        wmma.get("wmma_mad")(1, 32, (xp.asarray(A), xp.asarray(B), C))
        a64, b64 = A.astype(numpy.float64), B.astype(numpy.float64)
        want = [[_model_sum(float(C0[i, j]), [float(a64[i, k] * b64[k, j]) for k in range(16)]) for j in range(16)]
                for i in range(16)]
        assert _same_bits(gl.to_host(C), want)
    fp16(A, C0)                                                      # every term finite
    C0[7, 0], C0[7, 1], C0[7, 2] = numpy.inf, -numpy.inf, numpy.nan
    A[8, 0] = numpy.inf
    fp16(A, C0)

    def tf32(x):                                                     # the top 19 bits of finite values
        bits = x.astype(numpy.float32).view(numpy.uint32)
        return numpy.where(numpy.isfinite(x), (bits & 0xffffe000).view(numpy.float32), x).astype(numpy.float64)
    A32 = (r.standard_normal((16, 8)) * numpy.exp2(r.integers(-70, 66, (16, 8)))).astype(numpy.float32)
    BT32 = (r.standard_normal((16, 8)) * numpy.exp2(r.integers(-70, 66, (16, 8)))).astype(numpy.float32)
    A32[0, :], BT32[0, :] = 1.5e19, 1.5e19                           # four products of 2.25e38: past FLT_MAX
    # rows 3 and 4 against column 5: a first group summing to FLT_MAX = 2^128 - 2^104 exactly (2047 2^117 +
    # 2047 2^106 + 3 2^104), then 2^103 more (past FLT_MAX, below 2^128: FLT_MAX) or 2^104 more (2^128: inf)
    BT32[5, :] = 2.0 ** 64
    A32[3, :] = A32[4, :] = [2047 * 2.0 ** 53, 2047 * 2.0 ** 42, 3 * 2.0 ** 40, 0, 2.0 ** 39, 0, 0, 0]
    A32[4, 4] = 2.0 ** 40
    A32[2, :], BT32[2, :] = 1e-22, 3e-23                             # sums far below FLT_MIN: subnormal
    out = xp.full(256, numpy.nan, dtype=numpy.float32)
    wmma.get("wmma_tf32")(1, 32, (xp.asarray(A32), xp.asarray(BT32), out, 16, 16, 8, 0))
    a64, b64 = tf32(A32), tf32(BT32)
    want = numpy.zeros((16, 16))
    for i in range(16):
        for j in range(16):
            acc = 0.0
            for k0 in (0, 4):
                acc = _model_sum(acc, [float(a64[i, k] * b64[j, k]) for k in range(k0, k0 + 4)])
            want[i, j] = acc
    got = gl.to_host(out).reshape(16, 16).T                          # column-major C
    assert want[3, 5] == numpy.finfo(numpy.float32).max and want[4, 5] == numpy.inf and want[0, 0] == numpy.inf
    assert ((want != 0) & (numpy.abs(want) < numpy.finfo(numpy.float32).tiny)).any()
    assert _same_bits(got, want)


def test_emulator_adds_as_the_h200_tensor_cores_do():
    """The recorded H200 errors of tc/01 against float64 on rounded inputs (tensor.accumulation, cut sums:
    growing like K), reproduced on the backend in use for the smaller K, within 2%."""
    from gemmlab import record, tensor
    rec = record.load("tensor-nvidia-h200")["accumulation"]
    ks = [k for k in rec["ks"] if k <= 1024]
    here = tensor.accumulation(ks=ks, m=rec["m"], n=rec["n"], seed=rec["seed"], library=False)["errors"]
    for precision, rows in rec["errors"].items():
        h200 = rows["tc/01"]
        assert h200[-1] / h200[0] > 0.5 * rec["ks"][-1] / rec["ks"][0], (precision, h200)   # like K, not sqrt(K)
        for got, want in zip(here[precision]["tc/01"], h200):
            assert abs(got - want) < 0.02 * want, (precision, here[precision], h200)


def test_bf16_bits_round_to_nearest_even():
    x = numpy.array([1.0, 1.00390625, 1.005859375, -3.14159, numpy.inf], numpy.float32)
    assert ops.to_bf16_bits(x).tolist() == [0x3F80, 0x3F80, 0x3F81, 0xC049, 0x7F80]
    assert numpy.isnan(ops.from_bf16_bits(ops.to_bf16_bits(numpy.array([numpy.nan], numpy.float32)))).all()


def test_tc_gemm_sees_the_inputs_the_tensor_cores_see():
    p = ops.TcGemm(m=16, n=16, k=16, precision="tf32")
    inputs = p.inputs(numpy.random.default_rng(3))
    A, _ = p.seen(inputs)
    assert (A == ops.tf32_round(gl.to_host(inputs[0])).astype(numpy.float64)).all()
    assert numpy.abs(p.reference(inputs) - p.exact(inputs)).max() > 0        # TF32 rounding shows
    with pytest.raises(ValueError, match="precision must be one of"):
        ops.TcGemm(m=16, n=16, k=16, precision="fp8")
    assert ops.tf32_round(numpy.array([1 + 2 ** -11, 1 + 2 ** -12], numpy.float32)).tolist() == [1 + 2 ** -10, 1.0]


def test_the_first_wmma_kernel_refuses_sizes_that_are_not_whole_wmma_tiles():
    v = gl.registry.get("tc/01_wmma")
    with pytest.raises(ValueError, match="multiples of 16 \\(the wmma tile\\), got 33 x 16 x 16"):
        v.runner(ops.TcGemm(m=33, n=16, k=16))


def test_cublas_tensor_core_call_maps_row_major_onto_column_major(monkeypatch):
    """TcGemm.library: C = A B (row-major) is cuBLAS's C^T = B^T A^T; inputs typed by precision, FP32 out,
    TF32 by its compute type. (On the GPU the call itself is checked against float64: test below.)"""
    import sys
    import types
    from gemmlab import hardware as hw, ops
    calls = []
    fake = types.ModuleType("cupy_backends.cuda.libs.cublas")
    fake.gemmEx = lambda *args: calls.append(args)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", fake)
    monkeypatch.setattr(hw, "on_gpu", True)
    monkeypatch.setattr(hw, "xp", types.SimpleNamespace(cuda=types.SimpleNamespace(
        device=types.SimpleNamespace(get_cublas_handle=lambda: 1234))))
    arr = lambda ptr: types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr))   # noqa: E731
    for precision, dtype, compute in (("fp16", 2, 68), ("bf16", 14, 68), ("tf32", 0, 77)):
        calls.clear()
        ops.TcGemm(m=48, n=80, k=32, precision=precision).library((arr(1), arr(2)), arr(3))
        (handle, ta, tb, m, n, k, alpha, b, btype, ldb, a, atype, lda, beta, c, ctype, ldc, comp, algo), = calls
        assert (handle, ta, tb, m, n, k) == (1234, 0, 0, 80, 48, 32)
        assert (b, btype, ldb, a, atype, lda, c, ctype, ldc) == (2, dtype, 80, 1, dtype, 32, 3, 0, 80)
        assert (comp, algo) == (compute, -1)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp16", "bf16", "tf32"])
def test_cublas_tensor_cores_match_float64_of_what_they_see(precision):
    from gemmlab import ops
    problem = ops.TcGemm(m=96, n=160, k=64, precision=precision)
    inputs, out = problem.inputs(numpy.random.default_rng(3)), problem.output()
    problem.library(inputs, out)
    want = problem.reference(inputs)
    err = numpy.abs(gl.to_host(out) - want).max() / numpy.abs(want).max()
    assert err < (5e-3 if precision == "tf32" else 1e-5), err    # TF32: cuBLAS may round the inputs its own way


def _max_rel(out, ref):
    return float(numpy.abs(gl.to_host(out) - ref).max() / numpy.abs(ref).max())


@pytest.mark.parametrize("k", [64, 512])
def test_3xtf32_recovers_fp32_accuracy_that_one_tf32_product_loses(k):
    """Part V's accuracy target, on the backend in use: 3xTF32 within 2x of an FP32 SGEMM's error against
    float64; one TF32 product (tc/01) some hundreds of times worse."""
    from gemmlab import registry
    problem = ops.Gemm(m=64, n=64, k=k)
    inputs = problem.inputs(numpy.random.default_rng(k))
    ref = problem.reference(inputs)
    errors = {}
    for key in ("tc/02_3xtf32", "tc/04_3xtf32_pipelined", "sgemm/02_shared_tiling"):
        out = problem.output()
        registry.get(key).runner(problem)(inputs, out)
        errors[key] = _max_rel(out, ref)
    tf32 = ops.TcGemm(m=64, n=64, k=k, precision="tf32")
    out = tf32.output()
    registry.get("tc/01_wmma").runner(tf32)(inputs, out)
    one = _max_rel(out, ref)
    assert errors["tc/02_3xtf32"] < 2 * errors["sgemm/02_shared_tiling"], errors
    assert errors["tc/04_3xtf32_pipelined"] < 2 * errors["sgemm/02_shared_tiling"], errors
    assert one > 100 * errors["tc/02_3xtf32"], (one, errors)


def test_part5_record_definitions():
    """The targets are the issue's bar; every candidate is a legal configuration of its variant."""
    from gemmlab import registry, tensor
    assert tensor.TC_TARGETS == [("fp16", 0.50), ("bf16", 0.50), ("tf32", 0.50)]
    assert tensor.SPLIT_ERROR_FACTOR == 2.0
    assert tensor.HOPPER_TARGETS == [("fp16", 0.80), ("bf16", 0.80)]
    for key, params in tensor.TC_CANDIDATES + tensor.HOPPER_CANDIDATES:
        assert registry.get(key).op is ops.TcGemm and registry.get(key).resolve(**params) == params
    for key, params in tensor.SPLIT_CANDIDATES:
        assert registry.get(key).op is ops.Gemm and registry.get(key).resolve(**params) == params


def test_error_against_k_orders_the_precisions_as_their_mantissas():
    """Part V chapter 1's study, small, on the backend in use: FP32 and 3xTF32 near 2^-23, TF32 and FP16
    (10-bit mantissas) near 2^-11, BF16 (7 bits) worse; with inputs over 2^±20, FP16 overflows."""
    from gemmlab import tensor
    r = tensor.error_vs_k(ks=(16, 256), m=32, n=32)["errors"]
    for i in range(2):
        assert r["3xTF32 (tc/04)"][i] < 2 * r["FP32 (sgemm/02)"][i] < 1e-5
        assert 1e-5 < r["TF32"][i] < 2e-3 and 1e-5 < r["FP16"][i] < 2e-3
        assert r["BF16"][i] > 3 * max(r["TF32"][i], r["FP16"][i])
    wide = tensor.error_vs_k(ks=(16,), m=32, n=32, spread=20)["errors"]
    assert not numpy.isfinite(wide["FP16"][0]) and numpy.isfinite(wide["BF16"][0]) and wide["BF16"][0] < 1e-2


@pytest.mark.parametrize("precision", ["fp16", "bf16", "tf32"])
def test_the_pipelined_kernels_interior_loop_and_edge_loop_in_one_launch(precision):
    """tc/03 (and tc/04, the same pipeline) run a loop without edge tests in blocks whose tiles lie inside A
    and B: sizes where every block is interior, and where interior and edge blocks share a launch."""
    v = gl.registry.get("tc/03_wmma_pipelined")
    params = dict(BM=128, BN=128, WM=64, WN=32, STAGES=3)
    for m, n, k in ((128, 128, 64), (272, 144, 96)):
        assert v.check(ops.TcGemm(m=m, n=n, k=k, precision=precision), **params).ok, (m, n, k)
    if precision == "tf32":
        assert gl.registry.get("tc/04_3xtf32_pipelined").check(ops.Gemm(m=256, n=256, k=32), **params).ok


def test_tensor_core_kernels_refuse_operands_of_another_precision_before_the_launch():
    """Their parameter type depends on the precision, so the loader cannot check it: the registry does."""
    v = gl.registry.get("tc/01_wmma")
    for precision, wrong in (("fp16", numpy.float32), ("fp16", numpy.uint16), ("bf16", numpy.float16),
                             ("bf16", numpy.float32), ("tf32", numpy.float16)):
        p = ops.TcGemm(m=32, n=32, k=32, precision=precision)
        run = v.runner(p)
        A, B = (xp.zeros(s, dtype=wrong) for s in ((32, 32), (32, 32)))
        with pytest.raises(TypeError, match=f"{precision.upper()} tensor-core kernels take A as {p.input_dtype.name}"):
            run((A, B), p.output())
    p = ops.TcGemm(m=32, n=48, k=16, precision="fp16")
    run = v.runner(p)
    good = p.inputs(numpy.random.default_rng(0))
    with pytest.raises(ValueError, match=r"B must be a C-contiguous 16 x 48 array"):
        run((good[0], xp.zeros((48, 16), dtype=numpy.float16)), p.output())
    with pytest.raises(ValueError, match=r"A must be a C-contiguous 32 x 16 array.*not C-contiguous"):
        run((xp.asfortranarray(good[0]), good[1]), p.output())
    with pytest.raises(ValueError, match=r"C must be a C-contiguous 32 x 48 float32 array"):
        run(good, xp.zeros((32, 48), dtype=numpy.float64))
    out = p.output()
    run(good, out)                                               # the right operands still run
    assert numpy.isfinite(gl.to_host(out)).all()


def test_bf16_bits_are_read_from_uint16_only():
    x = numpy.array([1.5, -2.0], dtype=numpy.float32)
    assert (ops.from_bf16_bits(ops.to_bf16_bits(x)) == x).all()
    for bad in (x, x.astype(numpy.float16), numpy.array([16320], dtype=numpy.int32)):
        with pytest.raises(TypeError, match="uint16"):
            ops.from_bf16_bits(bad)


@pytest.mark.parametrize("key", ["tc/02_3xtf32", "tc/04_3xtf32_pipelined"])
def test_3xtf32_takes_finite_inputs_an_infinite_one_gives_nan(key):
    """The documented limit of the split (chapter 14, the variants' titles): inf's tail is inf - inf."""
    v = gl.registry.get(key)
    assert "finite inputs: an infinite one gives NaN" in v.title
    p = ops.Gemm(m=32, n=32, k=32)
    A, B = numpy.ones((32, 32), numpy.float32), numpy.ones((32, 32), numpy.float32)
    A[0, 0], A[1, 0] = numpy.inf, 1e38                          # an infinity, and the largest finite range
    out = p.output()
    v.runner(p)((xp.asarray(A), xp.asarray(B)), out)
    got = gl.to_host(out)
    assert numpy.isnan(got[0]).all()                             # where an SGEMM gives +inf
    assert numpy.allclose(got[1], 1e38 + 31, rtol=1e-6) and (got[2:] == 32).all()
    text = " ".join(json.loads((Path(__file__).resolve().parents[1] / "chapters" / "14-tensor-cores.ipynb").read_text())
                    ["cells"][15]["source"])
    assert "it takes finite inputs" in " ".join(text.split())


INTEGER_AND_DOUBLE = r'''
#include <mma.h>
using namespace nvcuda;
// 8-bit integers, m16n16k16: A row-major, B column-major, C loaded, D = A B + C in 32-bit integers
__global__ void imma(const signed char* a, const signed char* b, const int* c, int* d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}
// unsigned, m32n8k16, from an accumulator near INT_MAX: wrapped, or clamped with satf; stored column-major
__global__ void umma(const unsigned char* a, const unsigned char* b, int start, int* wrapped, int* clamped)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, unsigned char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, unsigned char, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, int> fc, fd;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::fill_fragment(fc, start);
    wmma::mma_sync(fd, fa, fb, fc);
    wmma::store_matrix_sync(wrapped, fd, 32, wmma::mem_col_major);
    wmma::mma_sync(fd, fa, fb, fc, true);
    wmma::store_matrix_sync(clamped, fd, 32, wmma::mem_col_major);
}
// FP64, m8n8k4, along K in steps of 4
__global__ void dmma(const double* a, const double* b, double* d, int K)
{
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::fill_fragment(fc, 0.0);
    for (int k = 0; k < K; k += 4) {
        wmma::load_matrix_sync(fa, a + k, K);
        wmma::load_matrix_sync(fb, b + k * 8, 8);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}
'''


def test_integer_and_double_wmma_fragments():
    """WMMA with 8-bit integer operands (signed and unsigned, int accumulators: exact, wrapping past int's
    range, clamped to it with satf) and with double (m8n8k4), against exact integer and float64 products."""
    m = gl.load(code=INTEGER_AND_DOUBLE)
    r = numpy.random.default_rng(7)
    a, b = (r.integers(-128, 128, (16, 16)).astype(numpy.int8) for _ in range(2))
    c = r.integers(-10**6, 10**6, (16, 16)).astype(numpy.int32)
    d = xp.zeros((16, 16), dtype=numpy.int32)
    m.get("imma")((1,), (32,), (xp.asarray(a), xp.asarray(b), xp.asarray(c), d))
    assert (gl.to_host(d) == a.astype(numpy.int64) @ b.T.astype(numpy.int64) + c).all()   # b[n, k] is B(k, n)
    ua, ub = r.integers(0, 256, (32, 16)).astype(numpy.uint8), r.integers(0, 256, (16, 8)).astype(numpy.uint8)
    start = 2**31 - 1 - 260_000                      # about the mean of the sums: some pass int's range
    wrapped, clamped = xp.zeros((8, 32), dtype=numpy.int32), xp.zeros((8, 32), dtype=numpy.int32)
    m.get("umma")((1,), (32,), (xp.asarray(ua), xp.asarray(ub), start, wrapped, clamped))
    exact = (ua.astype(numpy.int64) @ ub.astype(numpy.int64) + start).T
    assert (exact > 2**31 - 1).any() and (exact <= 2**31 - 1).any()
    assert (gl.to_host(wrapped) == ((exact + 2**31) % 2**32 - 2**31)).all()
    assert (gl.to_host(clamped) == numpy.minimum(exact, 2**31 - 1)).all()
    K = 36
    da, db = r.standard_normal((8, K)), r.standard_normal((K, 8))
    dd = xp.zeros((8, 8))
    m.get("dmma")((1,), (32,), (xp.asarray(da), xp.asarray(db), dd, K))
    assert numpy.abs(gl.to_host(dd) - da @ db).max() <= 1e-13 * numpy.abs(da).max() * numpy.abs(db).max() * K
