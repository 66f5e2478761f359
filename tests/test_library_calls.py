"""The baselines are cuBLAS's own routines: DOT is cublasSdot, GEMV cublasSgemv (not CuPy's dot, which
sums a temporary product with CUB for two vectors, nor CuPy's matmul, a GEMM with one column).

Without a GPU the calls go to a stand-in binding that does what the BLAS reference says a column-major
routine does with the pointers, strides and flags it is given: so these tests check the mapping of every
layout and transpose onto cuBLAS's arguments. On the GPU the same calls are checked against float64."""
import ctypes
import sys
import types

import numpy
import pytest

import gemmlab as gl
from gemmlab import hardware as hw, ops


class FakeBlas(types.ModuleType):
    CUBLAS_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_DEVICE = 0, 1

    def __init__(self, memory):
        super().__init__("cupy_backends.cuda.libs.cublas")
        self.memory, self.mode, self.calls = memory, 0, []

    def getPointerMode(self, handle):
        return self.mode

    def setPointerMode(self, handle, mode):
        self.mode = mode

    def _flat(self, ptr):
        return self.memory[ptr]

    def sdot(self, handle, n, x, incx, y, incy, result):
        assert self.mode == self.CUBLAS_POINTER_MODE_DEVICE        # the result is written on the device
        self.calls.append("sdot")
        self._flat(result)[0] = self._flat(x)[:n * incx:incx].astype(numpy.float64) @ self._flat(y)[:n * incy:incy]

    def sgemv(self, handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy):
        assert self.mode == self.CUBLAS_POINTER_MODE_HOST           # alpha and beta are host addresses
        alpha, beta = (ctypes.c_float.from_address(p).value for p in (alpha, beta))
        assert (alpha, beta) == (1.0, 0.0)                             # beta = 0: y is written, never read
        self.calls.append(("sgemv", trans, m, n, lda))
        a = self._flat(A)
        cols = numpy.stack([a[j * lda:j * lda + m] for j in range(n)], axis=1).astype(numpy.float64)
        op = cols.T if trans else cols
        out_len, in_len = op.shape
        self._flat(y)[:out_len * incy:incy] = op @ self._flat(x)[:in_len * incx:incx]


@pytest.fixture
def fake_gpu(monkeypatch):
    memory = {}
    blas = FakeBlas(memory)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", blas)
    monkeypatch.setattr(hw, "on_gpu", True)
    monkeypatch.setattr(hw, "xp", types.SimpleNamespace(cuda=types.SimpleNamespace(
        device=types.SimpleNamespace(get_cublas_handle=lambda: 7))))

    class Arr:
        """A host array seen through a device pointer: its memory in storage order, as cuBLAS sees it."""
        def __init__(self, a):
            self.a, self.dtype = a, a.dtype
            self.data = types.SimpleNamespace(ptr=len(memory) + 1)
            memory[self.data.ptr] = a.reshape(-1, order="F" if a.flags.f_contiguous and a.ndim > 1 else "C")  # a view

    yield blas, Arr


def test_dot_calls_cublas_sdot_in_device_pointer_mode_and_restores_the_mode(fake_gpu):
    blas, Arr = fake_gpu
    rng = numpy.random.default_rng(0)
    x, y = rng.standard_normal(1001).astype(numpy.float32), rng.standard_normal(1001).astype(numpy.float32)
    out = numpy.full(1, numpy.nan, numpy.float32)
    ops.Dot(n=1001).library((Arr(x), Arr(y)), Arr(out))
    assert blas.calls == ["sdot"] and blas.mode == blas.CUBLAS_POINTER_MODE_HOST
    assert out[0] == pytest.approx(x.astype(numpy.float64) @ y, rel=1e-6)


@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("trans", ["N", "T"])
def test_gemv_maps_every_layout_and_transpose_onto_column_major_sgemv(fake_gpu, layout, trans):
    blas, Arr = fake_gpu
    m, n = 37, 53
    problem = ops.Gemv(m=m, n=n, trans=trans, layout=layout)
    rng = numpy.random.default_rng(1)
    A = rng.standard_normal((m, n)).astype(numpy.float32)
    A = numpy.asfortranarray(A) if layout == "col" else numpy.ascontiguousarray(A)
    x = rng.standard_normal(problem.in_len).astype(numpy.float32)
    out = numpy.full(problem.out_len, numpy.nan, numpy.float32)
    problem.library((Arr(A), Arr(x)), Arr(out))
    want = (A.T if trans == "T" else A).astype(numpy.float64) @ x
    numpy.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    (_, op, rows, cols, lda), = blas.calls
    assert (rows, cols, lda) == ((m, n, m) if layout == "col" else (n, m, n))
    assert blas.mode == blas.CUBLAS_POINTER_MODE_HOST


def test_without_a_gpu_the_baselines_are_numpy():
    if hw.on_gpu:
        pytest.skip("the emulator's baseline")
    problem = ops.Gemv(m=20, n=30, trans="T", layout="col")
    inputs, out = problem.inputs(numpy.random.default_rng(2)), problem.output()
    problem.library(inputs, out)
    numpy.testing.assert_allclose(out, problem.reference(inputs), rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("problem", [ops.Dot(n=100003), *[ops.Gemv(m=1031, n=517, trans=t, layout=l)
                                                          for t in "NT" for l in ("row", "col")]],
                         ids=lambda p: p.label)
def test_cublas_baselines_match_float64(problem):
    inputs, out = problem.inputs(numpy.random.default_rng(3)), problem.output()
    problem.library(inputs, out)
    got, want = gl.to_host(out).astype(numpy.float64), problem.reference(inputs)
    scale = problem.error_scale(inputs) if isinstance(problem, ops.Dot) else numpy.abs(want).max()
    assert numpy.abs(got - want).max() / scale < 1e-5
