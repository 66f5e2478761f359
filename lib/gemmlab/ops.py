"""The operations the book measures, with their FLOP and byte counts (chapter 01, the roofline).

F counts a multiply-add as two FLOPs. Q is the ideal useful traffic of the BLAS article: each input read
once, each output written once, and the old output read only when beta != 0 makes it matter. Every
rate the book prints (GFLOP/s, GB/s) divides these counts by a measured time, so they are defined once,
here. Each operation also knows how to make fresh random inputs, its float64 reference, and the
vendor-library call (cuBLAS through CuPy) that is always the comparison column.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy

from . import hardware as hw


def _random(rng, shape, dtype):
    """Normal random data drawn on the host and moved to the device: never zeros, never a pattern."""
    return hw.xp.asarray(rng.standard_normal(shape).astype(dtype))


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

    def library(self, inputs, out):
        x, y = inputs
        hw.xp.dot(x, y, out=out.reshape(()))


@dataclass(frozen=True)
class Gemv(Op):
    """y = alpha * A x + beta * y with A of m rows and n columns."""
    m: int = 0
    n: int = 0
    beta_nonzero: bool = False

    @property
    def label(self):
        return f"GEMV {self.m}x{self.n}" + (", beta != 0" if self.beta_nonzero else "")

    @property
    def flops(self):
        return 2 * self.m * self.n

    @property
    def bytes(self):
        return self.itemsize * (self.m * self.n + self.n + self.m + (self.m if self.beta_nonzero else 0))

    def inputs(self, rng):
        return (_random(rng, (self.m, self.n), self.dtype), _random(rng, self.n, self.dtype))

    def output(self):
        return hw.xp.full(self.m, numpy.nan, dtype=self.dtype)

    def reference(self, inputs):
        A, x = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        return A @ x

    def library(self, inputs, out):
        A, x = inputs
        hw.xp.matmul(A, x, out=out)


@dataclass(frozen=True)
class Gemm(Op):
    """C = alpha * A B + beta * C with A m x k, B k x n, C m x n (row-major in the SGEMM ladder)."""
    m: int = 0
    n: int = 0
    k: int = 0
    beta_nonzero: bool = False

    @classmethod
    def square(cls, n: int, **kw):
        return cls(m=n, n=n, k=n, **kw)

    @property
    def label(self):
        shape = f"{self.m}" if self.m == self.n == self.k else f"{self.m}x{self.n}x{self.k}"
        return f"GEMM N={shape}" + (", beta != 0" if self.beta_nonzero else "")

    @property
    def flops(self):
        return 2 * self.m * self.n * self.k

    @property
    def bytes(self):
        mn = self.m * self.n
        return self.itemsize * (self.m * self.k + self.k * self.n + mn + (mn if self.beta_nonzero else 0))

    def inputs(self, rng):
        return (_random(rng, (self.m, self.k), self.dtype), _random(rng, (self.k, self.n), self.dtype))

    def output(self):
        return hw.xp.full((self.m, self.n), numpy.nan, dtype=self.dtype)

    def reference(self, inputs):
        # float64 on the device when there is one (cuBLAS DGEMM; a 4096^3 product on the host takes seconds)
        A, B = (hw.xp.asarray(a, dtype=numpy.float64) for a in inputs)
        return hw.to_host(A @ B)

    def library(self, inputs, out):
        A, B = inputs
        hw.xp.matmul(A, B, out=out)


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
