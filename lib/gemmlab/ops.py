"""The operations the book measures, with their FLOP and byte counts (chapter 01, the roofline).

F counts a multiply-add as two FLOPs. Q is the ideal useful traffic of the BLAS article: each input read
once, each output written once, and the old output read only when beta != 0 makes it matter. Every
rate the book prints (GFLOP/s, GB/s) divides these counts by a measured time, so they are defined once,
here. Each operation also knows how to make fresh random inputs, its float64 reference, and the
vendor-library call (cuBLAS through CuPy) that is always the comparison column.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy

from .runtime import backend as hw


def _random(rng, shape, dtype, order="C"):
    """Normal random data drawn on the host and moved to the device: never zeros, never a pattern.

    ``order="F"`` gives a column-major (Fortran-ordered) array, as the BLAS chapters use.
    """
    host = rng.standard_normal(shape).astype(dtype)
    return hw.xp.asfortranarray(hw.xp.asarray(host)) if order == "F" else hw.xp.asarray(host)


def _order(layout: str) -> str:
    if layout not in ("row", "col"):
        raise ValueError(f"layout must be 'row' or 'col', got {layout!r}")
    return "C" if layout == "row" else "F"


def _cublas():
    """(CuPy's cuBLAS binding, this device's handle) on a GPU, None on the emulator."""
    if not hw.on_gpu:
        return None
    import importlib
    return importlib.import_module("cupy_backends.cuda.libs.cublas"), hw.xp.cuda.device.get_cublas_handle()


@contextlib.contextmanager
def _pointer_mode(cublas, handle, mode):
    """cuBLAS reads scalars (and writes DOT's result) through host or device pointers, a setting of the handle
    that CuPy shares: set it for one call, and put the caller's back."""
    before = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, mode)
    try:
        yield
    finally:
        cublas.setPointerMode(handle, before)


def _trans(flag: str) -> bool:
    if flag not in ("N", "T"):
        raise ValueError(f"a transpose flag must be 'N' or 'T', got {flag!r}")
    return flag == "T"


@dataclass(frozen=True)
class Op:
    dtype: type = numpy.float32

    @property
    def itemsize(self) -> int:
        return numpy.dtype(self.dtype).itemsize

    @property
    def intensity(self) -> float:
        """FLOP per byte of ideal traffic."""
        return self.flops / self.bytes if self.bytes else float("inf")

    def error_scale(self, inputs):
        """What a check divides the error by; None means ||reference|| (see check.rel_error)."""
        return None

    def values(self, host):
        """The output as numbers, from its array on the host (an output stored as bits, BF16's, is read here)."""
        return host

    def tolerance(self, base: float) -> float:
        """The relative error a check of this problem accepts, given the kernel's own (``base``)."""
        return base

    def describe(self) -> dict:
        return {"op": self.label, "F (FLOP)": self.flops, "Q (bytes)": self.bytes,
                "intensity (FLOP/byte)": self.intensity}


@dataclass(frozen=True)
class Dot(Op):
    """result = sum_i x_i y_i over n elements."""
    n: int = 0

    @property
    def label(self):
        return f"DOT n={self.n}"

    @property
    def flops(self):
        return 2 * self.n

    @property
    def bytes(self):
        return self.itemsize * (2 * self.n + 1)

    def inputs(self, rng):
        return (_random(rng, self.n, self.dtype), _random(rng, self.n, self.dtype))

    def output(self):
        return hw.xp.full(1, numpy.nan, dtype=self.dtype)

    def reference(self, inputs):
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return numpy.array([x @ y])

    def error_scale(self, inputs):
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return float(numpy.abs(x) @ numpy.abs(y))      # a sum can cancel; its rounding scales with this

    def library(self, inputs, out):
        """cuBLAS's DOT (cublasSdot, the result written on the device) on a GPU; NumPy on the emulator.
        Not ``cupy.dot``: for two vectors CuPy multiplies them into a temporary and sums it with CUB."""
        x, y = inputs
        blas = _cublas()
        if blas is None:
            hw.xp.dot(x, y, out=out.reshape(()))
            return
        cublas, handle = blas
        with _pointer_mode(cublas, handle, cublas.CUBLAS_POINTER_MODE_DEVICE):
            (cublas.sdot if x.dtype == numpy.float32 else cublas.ddot)(handle, self.n, x.data.ptr, 1, y.data.ptr, 1,
                                                                      out.data.ptr)


@dataclass(frozen=True)
class Gemv(Op):
    """y = alpha * op(A) x + beta * y with A of m rows and n columns; op(A) = A ('N') or A^T ('T').

    ``layout="col"`` stores A column-major, as BLAS does (the GEMV chapter); ``"row"`` row-major.
    """
    m: int = 0
    n: int = 0
    beta_nonzero: bool = False
    trans: str = "N"
    layout: str = "row"

    @property
    def label(self):
        extra = (f", {self.trans}" if self.trans != "N" else "") + (", column-major" if self.layout == "col" else "")
        return f"GEMV {self.m}x{self.n}" + extra + (", beta != 0" if self.beta_nonzero else "")

    @property
    def out_len(self):
        return self.n if _trans(self.trans) else self.m

    @property
    def in_len(self):
        return self.m if _trans(self.trans) else self.n

    @property
    def flops(self):
        return 2 * self.m * self.n

    @property
    def bytes(self):
        return self.itemsize * (self.m * self.n + self.n + self.m + (self.out_len if self.beta_nonzero else 0))

    def inputs(self, rng):
        return (_random(rng, (self.m, self.n), self.dtype, _order(self.layout)),
                _random(rng, self.in_len, self.dtype))

    def output(self):
        return hw.xp.full(self.out_len, numpy.nan, dtype=self.dtype)

    def _op(self, A):
        return A.T if _trans(self.trans) else A

    def reference(self, inputs):
        A, x = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return self._op(A) @ x

    def library(self, inputs, out):
        """cuBLAS's GEMV (cublasSgemv, beta = 0) on a GPU; NumPy on the emulator. Not ``cupy.matmul``,
        which computes a matrix times a vector as a GEMM with one column (cublasGemmEx)."""
        A, x = inputs
        blas = _cublas()
        if blas is None:
            hw.xp.matmul(self._op(A), x, out=out)
            return
        cublas, handle = blas
        # cuBLAS reads column-major: a row-major m x n A is the column-major n x m A^T
        col = self.layout == "col"
        rows, cols = (self.m, self.n) if col else (self.n, self.m)
        op = _trans(self.trans) == col                    # transpose the column-major matrix cuBLAS sees
        one, zero = numpy.ones(1, A.dtype), numpy.zeros(1, A.dtype)
        with _pointer_mode(cublas, handle, cublas.CUBLAS_POINTER_MODE_HOST):
            (cublas.sgemv if A.dtype == numpy.float32 else cublas.dgemv)(
                handle, int(op), rows, cols, one.ctypes.data, A.data.ptr, rows, x.data.ptr, 1,
                zero.ctypes.data, out.data.ptr, 1)


@dataclass(frozen=True)
class Gemm(Op):
    """C = alpha * op(A) op(B) + beta * C, op(A) m x k, op(B) k x n.

    ``layout="row"`` (the SGEMM ladder): row-major, no transposes. ``layout="col"`` (the BLAS GEMM
    chapter): column-major storage, A stored m x k for 'N' or k x m for 'T', likewise B.
    """
    m: int = 0
    n: int = 0
    k: int = 0
    beta_nonzero: bool = False
    transa: str = "N"
    transb: str = "N"
    layout: str = "row"

    @classmethod
    def square(cls, n: int, **kw):
        return cls(m=n, n=n, k=n, **kw)

    @property
    def label(self):
        shape = f"{self.m}" if self.m == self.n == self.k else f"{self.m}x{self.n}x{self.k}"
        extra = ""
        if self.layout == "col":
            extra = ", column-major" + (f", {self.transa}{self.transb}" if (self.transa, self.transb) != ("N", "N") else "")
        return f"GEMM N={shape}" + extra + (", beta != 0" if self.beta_nonzero else "")

    @property
    def flops(self):
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self):
        mn = self.m * self.n
        return self.itemsize * (self.m * self.k + self.k * self.n + mn + (mn if self.beta_nonzero else 0))

    def inputs(self, rng):
        order = _order(self.layout)
        a_shape = (self.k, self.m) if _trans(self.transa) else (self.m, self.k)
        b_shape = (self.n, self.k) if _trans(self.transb) else (self.k, self.n)
        return (_random(rng, a_shape, self.dtype, order), _random(rng, b_shape, self.dtype, order))

    def output(self):
        out = hw.xp.full((self.m, self.n), numpy.nan, dtype=self.dtype)
        return hw.xp.asfortranarray(out) if self.layout == "col" else out

    def _ops(self, A, B):
        return (A.T if _trans(self.transa) else A), (B.T if _trans(self.transb) else B)

    def reference(self, inputs):
        # float64 on the device when there is one (cuBLAS DGEMM; a 4096^3 product on the host takes seconds)
        A, B = self._ops(*(hw.xp.asarray(a, dtype=numpy.float64) for a in inputs))
        return hw.to_host(A @ B)

    def library(self, inputs, out):
        A, B = self._ops(*inputs)
        if self.layout == "col":
            # a column-major C is a row-major C^T: ask for op(B)^T op(A)^T into it, no copy
            hw.xp.matmul(B.T, A.T, out=out.T)
        else:
            hw.xp.matmul(A, B, out=out)


def tf32_round(a) -> numpy.ndarray:
    """float32 values rounded to TF32 (10 mantissa bits; to nearest, ties away: __float_to_tf32)."""
    u = numpy.ascontiguousarray(a, dtype=numpy.float32).view(numpy.uint32).copy()
    finite = (u & 0x7F800000) != 0x7F800000
    u[finite] = (u[finite] + 0x1000) & 0xFFFFE000
    return u.view(numpy.float32)


TC_PRECISIONS = ("fp16", "bf16", "tf32")
# cudaDataType and cublasComputeType_t values (library_types.h, cublas_api.h)
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_GEMM_DEFAULT = -1
# precision -> (the inputs' data type, the compute type) for cublasGemmEx
TC_CUBLAS = {"fp16": (CUDA_R_16F, CUBLAS_COMPUTE_32F), "bf16": (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
             "tf32": (CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32)}


@dataclass(frozen=True)
class TcGemm(Op):
    """C = A B on the tensor cores (Part V), row-major: FP16 or BF16 inputs (BF16 passed as its bits,
    uint16), or FP32 inputs that the kernel rounds to TF32; FP32 accumulation, and FP32 output, or with
    ``out`` = the inputs' precision ("fp16", "bf16"), C in their type (BF16 as its bits), as torch calls it.

    ``reference`` is float64 on the inputs as the tensor cores see them (rounded: the check tests the
    kernel's arithmetic); ``exact`` is float64 on the FP32 values before rounding (what the error of a
    tensor-core product against the true product is measured with)."""
    m: int = 0
    n: int = 0
    k: int = 0
    precision: str = "fp16"
    out: str = "fp32"

    def __post_init__(self):
        if self.precision not in TC_PRECISIONS:
            raise ValueError(f"precision must be one of {TC_PRECISIONS}, got {self.precision!r}")
        if self.out not in ("fp32", self.precision) or self.out == "tf32":
            raise ValueError(f"out is C's type: 'fp32', or the inputs' 16-bit type ('fp16' or 'bf16' with those "
                             f"inputs); got out={self.out!r} with {self.precision} inputs")

    @property
    def label(self):
        shape = f"{self.m}" if self.m == self.n == self.k else f"{self.m}x{self.n}x{self.k}"
        extra = f", {self.out.upper()} out" if self.out != "fp32" else ""
        return f"GEMM N={shape}, {self.precision.upper()} tensor cores{extra}"

    @property
    def flops(self):
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self):
        item = 4 if self.precision == "tf32" else 2
        return item * (self.m * self.k + self.k * self.n) + self.output_dtype.itemsize * self.m * self.n

    @property
    def input_dtype(self):
        """The dtype of A and B as a kernel of this precision takes them: float16, uint16 (BF16 bits), float32."""
        return numpy.dtype({"fp16": numpy.float16, "bf16": numpy.uint16, "tf32": numpy.float32}[self.precision])

    def _fp32(self, rng):
        return (rng.standard_normal((self.m, self.k)).astype(numpy.float32),
                rng.standard_normal((self.k, self.n)).astype(numpy.float32))

    def inputs(self, rng):
        A, B = self._fp32(rng)
        if self.precision == "fp16":
            A, B = A.astype(numpy.float16), B.astype(numpy.float16)
        elif self.precision == "bf16":
            A, B = to_bf16_bits(A), to_bf16_bits(B)
        return hw.xp.asarray(A), hw.xp.asarray(B)

    def seen(self, inputs):
        """The inputs as the tensor cores multiply them, in float64."""
        A, B = (hw.to_host(a) for a in inputs)
        if self.precision == "bf16":
            A, B = from_bf16_bits(A), from_bf16_bits(B)
        elif self.precision == "tf32":
            A, B = tf32_round(A), tf32_round(B)
        return A.astype(numpy.float64), B.astype(numpy.float64)

    @property
    def output_dtype(self):
        """C's dtype: float32, float16, or uint16 (BF16 bits)."""
        return numpy.dtype({"fp32": numpy.float32, "fp16": numpy.float16, "bf16": numpy.uint16}[self.out])

    def output(self):
        if self.out == "bf16":                       # a NaN in every element, as BF16 bits
            return hw.xp.full((self.m, self.n), 0x7FC0, dtype=numpy.uint16)
        return hw.xp.full((self.m, self.n), numpy.nan, dtype=self.output_dtype)

    def values(self, host):
        """C as numbers (BF16 bits read as their values)."""
        return from_bf16_bits(host) if self.out == "bf16" else host

    def tolerance(self, base: float) -> float:
        """The tensor cores add a few products at a time into the FP32 accumulator and cut the sum toward
        zero, so the error against the reference grows like K, not like an SGEMM's: on the H200 (and the
        emulator, which adds as they do) 1.2e-6, 4.8e-6, 1.9e-5 at K = 256, 1024, 4096 for TF32 and a quarter
        of that for FP16 and BF16 (16 products a step instead of 4). K 2^-26 is three times TF32's. C in a
        16-bit type adds its one rounding, at most half its unit in the last place: 2^-11 (FP16), 2^-8 (BF16)."""
        rounding = {"fp32": 0.0, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}[self.out]
        return max(base, self.k * 2.0 ** -26) + rounding

    def reference(self, inputs):
        # float64 on the device when there is one (an 8192^3 product on the host takes seconds)
        A, B = (hw.xp.asarray(x) for x in self.seen(inputs))
        return hw.to_host(A @ B)

    def exact(self, inputs):
        A, B = (hw.to_host(a) for a in inputs)
        if self.precision == "bf16":
            A, B = from_bf16_bits(A), from_bf16_bits(B)
        return A.astype(numpy.float64) @ B.astype(numpy.float64)

    def library(self, inputs, out):
        """cuBLAS on the tensor cores in the same precision, through CuPy's binding of cublasGemmEx: FP16 or
        BF16 inputs with FP32 accumulation (CUBLAS_COMPUTE_32F), or FP32 inputs with TF32 products
        (CUBLAS_COMPUTE_32F_FAST_TF32, what CUPY_TF32=1 selects for float32 matmul). Row-major C = A B is
        column-major C^T = B^T A^T, so B goes first."""
        if not hw.on_gpu:
            raise hw.BackendError(f"cuBLAS needs a GPU ({hw.backend_reason})")
        import importlib
        cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
        A, B = inputs
        dtype, compute = TC_CUBLAS[self.precision]
        c_type = CUDA_R_32F if self.out == "fp32" else dtype       # C in the inputs' type: as torch.matmul asks
        one, zero = numpy.ones(1, numpy.float32), numpy.zeros(1, numpy.float32)
        cublas.gemmEx(hw.xp.cuda.device.get_cublas_handle(), 0, 0, self.n, self.m, self.k,
                      one.ctypes.data, B.data.ptr, dtype, self.n, A.data.ptr, dtype, self.k,
                      zero.ctypes.data, out.data.ptr, c_type, self.n, compute, CUBLAS_GEMM_DEFAULT)


@dataclass(frozen=True)
class Copy(Op):
    """dst = src over n elements: no arithmetic, 2n elements of traffic. The bandwidth ceiling."""
    n: int = 0

    @property
    def label(self):
        return f"copy n={self.n}"

    @property
    def flops(self):
        return 0

    @property
    def bytes(self):
        return 2 * self.n * self.itemsize

    def inputs(self, rng):
        return (_random(rng, self.n, self.dtype),)

    def output(self):
        return hw.xp.full(self.n, numpy.nan, dtype=self.dtype)

    def reference(self, inputs):
        return hw.to_host(inputs[0]).astype(numpy.float64)

    def library(self, inputs, out):
        hw.xp.copyto(out, inputs[0])


# --- FP8: the 8-bit formats ------------------------------------------------------------------------------------
# the two 8-bit formats wgmma multiplies: (largest finite value, mantissa bits, exponent bias)
FP8_KINDS = {"e4m3": (448.0, 3, 7), "e5m2": (57344.0, 2, 15)}
FP8_SCALINGS = ("block", "tensor")
FP8_BLOCK = 128                  # the scales' block: a row of A and 128 of K; 128 x 128 of B


def _fp8_kind(kind: str):
    if kind not in FP8_KINDS:
        raise ValueError(f"an FP8 kind is one of {', '.join(FP8_KINDS)}, got {kind!r}")
    return FP8_KINDS[kind]


def fp8_values(bits, kind: str = "e4m3") -> numpy.ndarray:
    """The float64 values of FP8 bytes (a uint8 array): E4M3 (bias 7, no infinity, 0x7F and 0xFF NaN) or E5M2
    (bias 15, IEEE-like: exponent 31 is infinity or NaN)."""
    _, mb, bias = _fp8_kind(kind)
    b = numpy.asarray(bits)
    if b.dtype != numpy.uint8:
        raise TypeError(f"fp8_values takes FP8 values as their bytes (uint8; to_fp8_bits makes them); got {b.dtype}")
    b = b.astype(numpy.int64)
    e, m = (b & 0x7F) >> mb, b & ((1 << mb) - 1)
    val = numpy.where(e == 0, m * 2.0 ** (1 - bias - mb), (1.0 + m / 2.0 ** mb) * numpy.ldexp(1.0, e - bias))
    if kind == "e4m3":
        val = numpy.where((b & 0x7F) == 0x7F, numpy.nan, val)
    else:
        val = numpy.where(e == 31, numpy.where(m == 0, numpy.inf, numpy.nan), val)
    return numpy.where(b & 0x80, -val, val)


def to_fp8_bits(a, kind: str = "e4m3") -> numpy.ndarray:
    """Values rounded to FP8 (to nearest, ties to even; beyond the largest finite value, that value, as the
    .satfinite conversions give; NaN stays NaN) as their bytes, a uint8 array."""
    largest, mb, bias = _fp8_kind(kind)
    x = numpy.asarray(a, dtype=numpy.float64)
    mag = numpy.minimum(numpy.nan_to_num(numpy.abs(x)), largest)             # (NaN: its own bits, below)
    _, e = numpy.frexp(numpy.where(mag > 0, mag, 1.0))        # mag = f 2^e, 0.5 <= f < 1
    quantum = numpy.ldexp(1.0, numpy.maximum(e - 1, 1 - bias) - mb)  # the spacing at mag (subnormals: the least)
    q = numpy.minimum(numpy.round(mag / quantum) * quantum, largest)  # numpy.round: ties to even
    _, e2 = numpy.frexp(numpy.where(q > 0, q, 1.0))
    normal = q >= 2.0 ** (1 - bias)
    exp = numpy.where(normal, e2 - 1 + bias, 0)
    man = numpy.where(normal, q / numpy.ldexp(1.0, e2 - 1) - 1.0, q / 2.0 ** (1 - bias)) * 2 ** mb
    bits = (exp.astype(numpy.int64) << mb) | numpy.round(man).astype(numpy.int64)
    bits = numpy.where(numpy.signbit(x), bits | 0x80, bits)
    nan = 0x7F if kind == "e4m3" else 0x7E
    return numpy.where(numpy.isnan(x), nan, bits).astype(numpy.uint8)


def fp8_quantize(a, kind: str = "e4m3", scaling: str = "block", rows_of_block: int = 1, cols_of_block: int = 0):
    """(bytes, scales) of a float matrix (rows x cols) quantized for an FP8 GEMM along its columns: with
    ``scaling="block"`` one scale per ``rows_of_block`` rows and ``cols_of_block`` columns (by default 128; 1 row:
    A's rows; 128: B's 128 x 128 blocks, given as B^T; all the columns: a scale per row, cuBLASLt's row-wise
    form), each the block's largest magnitude over the format's largest value (1 for a block of zeros);
    ``"tensor"``: one for the whole matrix. values = fp8 x scale, the scale taken from the block it covers."""
    largest, _, _ = _fp8_kind(kind)
    x = numpy.ascontiguousarray(a, dtype=numpy.float64)
    rows, cols = x.shape
    if scaling == "tensor":
        amax = float(numpy.abs(x).max()) if x.size else 0.0
        scale = numpy.array([amax / largest if amax > 0 else 1.0], dtype=numpy.float32)
        return to_fp8_bits(x / float(scale[0]), kind), scale
    if scaling != "block":
        raise ValueError(f"scaling is one of {', '.join(FP8_SCALINGS)}, got {scaling!r}")
    width = cols_of_block or FP8_BLOCK
    rb, cb = -(-rows // rows_of_block), -(-cols // width)
    padded = numpy.zeros((rb * rows_of_block, cb * width))
    padded[:rows, :cols] = numpy.abs(x)
    amax = padded.reshape(rb, rows_of_block, cb, width).max(axis=(1, 3))
    scale = numpy.where(amax > 0, amax / largest, 1.0).astype(numpy.float32)
    return to_fp8_bits(x / _scale_grid(scale, rows, cols, rows_of_block, width), kind), scale


def _scale_grid(scale, rows: int, cols: int, rows_of_block: int, width: int) -> numpy.ndarray:
    """Each element's scale (float64, rows x cols) from a block's scales: one per rows_of_block x width block."""
    return numpy.repeat(numpy.repeat(scale.astype(numpy.float64), rows_of_block, 0), width, 1)[:rows, :cols]


def fp8_dequantize(bits, scale, kind: str = "e4m3", rows_of_block: int = 1, cols_of_block: int = 0) -> numpy.ndarray:
    """The values (float64) that FP8 ``bits`` and their ``scale`` stand for, as :func:`fp8_quantize` made them with
    the same blocks: fp8 x scale, one scale for all (a scale of one element) or one per block."""
    values = fp8_values(bits, kind)
    scale = numpy.asarray(scale)
    if scale.size == 1:
        return values * float(scale.ravel()[0])
    return values * _scale_grid(scale, *values.shape, rows_of_block, cols_of_block or FP8_BLOCK)


@dataclass(frozen=True)
class Fp8Gemm(Op):
    """C = (A sa)(B sb) with FP8 operands (chapter 17): A (m x k) and B^T (n x k, B's columns as rows: the K-major
    layout wgmma takes 8-bit operands in) as E4M3 or E5M2 bytes (uint8), their scales in float32: with
    ``scaling="block"`` sa (m x k/128: a row and 128 of K) and sb (k/128 x n/128 rounded up: 128 x 128 blocks of
    B), as DeepSeek-V3 scales; ``"tensor"``: one each. C in BF16 (its bits, ``out="bf16"``) or FP32.

    ``reference`` is float64 on the values the kernel multiplies (the FP8 values times their scales); the inputs
    come from normal values whose rows of A and columns of B differ in size by up to 2^4 either way, quantized
    by :func:`fp8_quantize`."""
    m: int = 0
    n: int = 0
    k: int = 0
    scaling: str = "block"
    kind: str = "e4m3"
    out: str = "bf16"

    def __post_init__(self):
        _fp8_kind(self.kind)
        if self.scaling not in FP8_SCALINGS:
            raise ValueError(f"scaling is one of {', '.join(FP8_SCALINGS)}, got {self.scaling!r}")
        if self.out not in ("bf16", "fp32"):
            raise ValueError(f"out is C's type, 'bf16' or 'fp32'; got {self.out!r}")

    @property
    def label(self):
        shape = f"{self.m}" if self.m == self.n == self.k else f"{self.m}x{self.n}x{self.k}"
        return f"GEMM N={shape}, {self.kind.upper()} {self.scaling}-scaled, {self.out.upper()} out"

    @property
    def flops(self):
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self):
        return self.m * self.k + self.k * self.n + self.output_dtype.itemsize * self.m * self.n

    @property
    def output_dtype(self):
        return numpy.dtype(numpy.uint16 if self.out == "bf16" else numpy.float32)

    def scale_shapes(self) -> tuple:
        """The shapes of sa and sb."""
        if self.scaling == "tensor":
            return (1,), (1,)
        kb = -(-self.k // FP8_BLOCK)
        return (self.m, kb), (kb, -(-self.n // FP8_BLOCK))

    def inputs(self, rng):
        A = rng.standard_normal((self.m, self.k)) * 2.0 ** rng.uniform(-4, 4, (self.m, 1))
        B = rng.standard_normal((self.k, self.n)) * 2.0 ** rng.uniform(-4, 4, (1, self.n))
        return self.quantized(A, B)

    def quantized(self, A, B) -> tuple:
        """(a8, bt8, sa, sb) on the device: float matrices A (m x k) and B (k x n) quantized as the problem's
        scaling says, in the layout tc/13 takes (B as B^T; block scales of B as k blocks x n blocks)."""
        a8, sa = fp8_quantize(A, self.kind, self.scaling, 1)
        b8, sb = fp8_quantize(numpy.asarray(B).T, self.kind, self.scaling, FP8_BLOCK)
        if self.scaling == "block":
            sb = numpy.ascontiguousarray(sb.T)          # (k blocks, n blocks): a slice's scales side by side
        return tuple(hw.xp.asarray(x) for x in (a8, b8, sa, sb))

    def output(self):
        if self.out == "bf16":
            return hw.xp.full((self.m, self.n), 0x7FC0, dtype=numpy.uint16)
        return hw.xp.full((self.m, self.n), numpy.nan, dtype=numpy.float32)

    def values(self, host):
        return from_bf16_bits(host) if self.out == "bf16" else host

    def seen(self, inputs):
        """A and B as the kernel multiplies them, in float64: the FP8 values times their scales."""
        a8, b8, sa, sb = (hw.to_host(x) for x in inputs)
        return (fp8_dequantize(a8, sa, self.kind, 1),
                fp8_dequantize(b8, sb.T, self.kind, FP8_BLOCK).T)     # (sb: k blocks x n blocks, B^T's transposed)

    def reference(self, inputs):
        A, B = (hw.xp.asarray(x) for x in self.seen(inputs))
        return hw.to_host(A @ B)

    def tolerance(self, base: float) -> float:
        """The tensor cores add FP8 products into an accumulator that keeps FP8_ACCUMULATOR_BITS bits below its
        largest term (chapter 17 measures it): each 128-wide slice's sum, or with one scale per tensor all of K,
        carries about one cut of 2^-bits a group of 32 products; then C's rounding (2^-8 in BF16)."""
        groups = (FP8_BLOCK if self.scaling == "block" else self.k) / 32
        rounding = 2.0 ** -8 if self.out == "bf16" else 0.0
        return max(base, groups * 2.0 ** -FP8_ACCUMULATOR_BITS) + rounding


# bits the tensor cores keep below the largest term when they add FP8 products (the emulator's
# GL_TC_ALIGN_BITS_FP8; a test keeps the two equal)
FP8_ACCUMULATOR_BITS = 14


def to_bf16_bits(a) -> numpy.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even, as __float2bfloat16 does), as their
    16 bits in a uint16 array: how a __nv_bfloat16 array is passed to a kernel (NumPy has no bfloat16)."""
    u = numpy.ascontiguousarray(a, dtype=numpy.float32).view(numpy.uint32).astype(numpy.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return numpy.where(nan, (u >> 16) | 0x40, rounded).astype(numpy.uint16)


def from_bf16_bits(b) -> numpy.ndarray:
    """The float32 values of bfloat16 bits, given as a uint16 array (what :func:`to_bf16_bits` makes). Anything
    else is refused: a float32 array cast to uint16 would be read as bits it never held."""
    a = numpy.asarray(b)
    if a.dtype != numpy.uint16:
        raise TypeError(f"from_bf16_bits takes BF16 bits as a uint16 array (to_bf16_bits makes them); got {a.dtype}"
                        + ("; to round float32 values to BF16, use from_bf16_bits(to_bf16_bits(x))"
                           if a.dtype.kind == "f" else ""))
    return (a.astype(numpy.uint32) << 16).view(numpy.float32)


# --- the problems the exercises solve: variations on the book's operations --------------------------

def _blas_indices(n: int, inc: int) -> numpy.ndarray:
    i = numpy.arange(n)
    return i * inc if inc > 0 else (n - 1 - i) * -inc


@dataclass(frozen=True)
class StridedDot:
    """sum_i x[i*incx] * y[i*incy] with BLAS increments (negative: from the high end of the storage)."""
    n: int
    incx: int
    incy: int

    @property
    def label(self):
        return f"DOT n={self.n}, incx={self.incx}, incy={self.incy}"

    def inputs(self, rng):
        return tuple(hw.xp.asarray(rng.standard_normal(1 + (self.n - 1) * abs(inc)).astype(numpy.float32))
                     for inc in (self.incx, self.incy))

    def output(self):
        return hw.xp.zeros(1, dtype=numpy.float32)      # the kernel adds into it

    def _pairs(self, inputs):
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return x[_blas_indices(self.n, self.incx)], y[_blas_indices(self.n, self.incy)]

    def reference(self, inputs):
        x, y = self._pairs(inputs)
        return numpy.array([x @ y])

    def error_scale(self, inputs):
        x, y = self._pairs(inputs)
        return float(numpy.abs(x) @ numpy.abs(y))


@dataclass(frozen=True)
class GemmBT:
    """C = A B^T with A m x k and B n x k, row-major."""
    m: int
    n: int
    k: int

    @property
    def label(self):
        return f"C = A B^T, {self.m}x{self.n}x{self.k}"

    def inputs(self, rng):
        return (hw.xp.asarray(rng.standard_normal((self.m, self.k)).astype(numpy.float32)),
                hw.xp.asarray(rng.standard_normal((self.n, self.k)).astype(numpy.float32)))

    def output(self):
        return hw.xp.full((self.m, self.n), numpy.nan, dtype=numpy.float32)

    def reference(self, inputs):
        A, B = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return A @ B.T

    def error_scale(self, inputs):
        return float(numpy.linalg.norm(self.reference(inputs)))


@dataclass(frozen=True)
class Axpy:
    """z = a x + y over n elements (two FLOPs per 12 bytes moved: a kernel on the roofline's slope)."""
    n: int
    a: float = 1.5

    @property
    def label(self):
        return f"z = a x + y, n={self.n}"

    def inputs(self, rng):
        return tuple(hw.xp.asarray(rng.standard_normal(self.n).astype(numpy.float32)) for _ in range(2))

    def output(self):
        return hw.xp.full(self.n, numpy.nan, dtype=numpy.float32)

    def reference(self, inputs):
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return numpy.float64(numpy.float32(self.a)) * x + y

    def error_scale(self, inputs):
        # a x_i + y_i can cancel to nearly zero (at n = 1, about one draw in a few hundred comes close enough for
        # a right FP32 kernel to fail against ||z||); its rounding scales with |a x_i| + |y_i|, as a dot's does
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return float(numpy.linalg.norm(abs(numpy.float64(numpy.float32(self.a))) * numpy.abs(x) + numpy.abs(y))) or 1.0


@dataclass(frozen=True)
class ColumnSums:
    """s[j] = sum_i A[i][j] of a row-major m x n matrix."""
    m: int
    n: int

    @property
    def label(self):
        return f"column sums of {self.m}x{self.n}"

    def inputs(self, rng):
        return (hw.xp.asarray(rng.standard_normal((self.m, self.n)).astype(numpy.float32)),)

    def output(self):
        return hw.xp.full(self.n, numpy.nan, dtype=numpy.float32)

    def reference(self, inputs):
        return hw.to_host(inputs[0]).astype(numpy.float64).sum(axis=0)

    def error_scale(self, inputs):
        return float(numpy.linalg.norm(numpy.abs(hw.to_host(inputs[0]).astype(numpy.float64)).sum(axis=0)))


@dataclass(frozen=True)
class Transpose:
    """B (n x m) = A^T for a row-major m x n matrix A."""
    m: int
    n: int

    @property
    def label(self):
        return f"transpose of {self.m}x{self.n}"

    def inputs(self, rng):
        return (hw.xp.asarray(rng.standard_normal((self.m, self.n)).astype(numpy.float32)),)

    def output(self):
        return hw.xp.full((self.n, self.m), numpy.nan, dtype=numpy.float32)

    def reference(self, inputs):
        return hw.to_host(inputs[0]).astype(numpy.float64).T

    def error_scale(self, inputs):
        return float(numpy.linalg.norm(self.reference(inputs))) or 1.0


@dataclass(frozen=True)
class SumSquares:
    """sum_i x[i]^2 (the square of BLAS's NRM2) over n elements, added into a zeroed result."""
    n: int

    @property
    def label(self):
        return f"sum of squares, n={self.n}"

    def inputs(self, rng):
        return (hw.xp.asarray(rng.standard_normal(self.n).astype(numpy.float32)),)

    def output(self):
        return hw.xp.zeros(1, dtype=numpy.float32)      # the kernel adds into it

    def reference(self, inputs):
        x = hw.to_host(inputs[0]).astype(numpy.float64)
        return numpy.array([x @ x])

    def error_scale(self, inputs):
        return float(self.reference(inputs)[0]) or 1.0
