"""'Write the kernel' exercises: a scaffold to complete, a check that runs it on any backend, a solution.

    code = gl.exercises.scaffold("dot_strided")     # the kernel to complete (kernels/exercises/)
    ...                                             # edit it in the notebook
    gl.exercises.check("dot_strided", code)         # True when right at every awkward size, twice

The check loads the code with :func:`gemmlab.load` on the backend in use (a GPU, or the CPU emulator,
which also catches out-of-bounds accesses), runs it on fresh random inputs at sizes that are multiples
of nothing, compares with float64, and prints one verdict per size. The reference solutions live in
``kernels/solutions/``; the test suite checks every one of them (and that every scaffold, as given,
fails), so an exercise cannot rot.
"""
from __future__ import annotations

import numbers

from dataclasses import dataclass
from typing import Callable

import numpy

from .runtime import backend as hw
from . import ops
from .check import FP32_TOLERANCE
from .check import check as check_run
from .runtime.limits import cdiv
from .runtime.loader import CompileError, load
from .paths import KERNELS
from .runtime.emulator import EmulatorError, EmulatorTimeout


# --- the problems the exercises solve (ops covers the book's operations; these are the variations) -----

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
        return float(numpy.linalg.norm(self.reference(inputs))) or 1.0


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


@dataclass(frozen=True)
class Exercise:
    name: str
    chapter: str
    title: str
    entry: str
    problems: tuple
    launch: Callable            # problem -> (grid, block)
    args: Callable              # (problem, inputs, out) -> kernel arguments
    tolerance: float = FP32_TOLERANCE
    prepare: Callable | None = None     # out -> None, before each launch (an output the kernel adds into)

    @property
    def scaffold_path(self):
        return KERNELS / "exercises" / f"{self.name}.cu"

    @property
    def solution_path(self):
        return KERNELS / "solutions" / f"{self.name}.cu"


EXERCISES = {e.name: e for e in (
    Exercise("dot_strided", "07-dot", "a DOT with BLAS increments", "dot_strided",
             (StridedDot(1, 1, 1), StridedDot(1000, 2, -3), StridedDot(4097, -1, 1), StridedDot(100003, 3, 2)),
             launch=lambda p: (cdiv(p.n, 256), 256),
             args=lambda p, inputs, out: (inputs[0], p.incx, inputs[1], p.incy, p.n, out)),
    Exercise("gemv_split", "08-gemv", "a GEMV with each row split across a warp", "gemv_split",
             tuple(ops.Gemv(m=m, n=n, layout="row") for m, n in ((1, 1), (77, 1000), (1031, 45), (300, 33))),
             launch=lambda p: (cdiv(p.m, 8), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n)),
    Exercise("micro_tile", "05-cache-blocking", "a 2 x 2 micro-tile of C per thread", "micro_tile",
             tuple(ops.Gemm(m=m, n=n, k=k) for m, n, k in ((1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129))),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("dot_float4", "12-bandwidth-roof", "a DOT that reads 16 bytes at a time", "dot_float4",
             tuple(ops.Dot(n=n) for n in (1, 3, 4097, 100003)),
             launch=lambda p: (max(1, min(264, cdiv(p.n, 1024))), 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], p.n, out),
             prepare=lambda out: out.fill(0)),
    Exercise("axpy", "01-roofline", "z = a x + y, a kernel on the roofline's slope", "axpy",
             tuple(Axpy(n) for n in (1, 1000, 4097, 100003)),
             launch=lambda p: (cdiv(p.n, 256), 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, numpy.float32(p.a), p.n)),
    Exercise("tiled_sgemm", "02-naive-and-tiled", "the 16 x 16 shared-memory tiled SGEMM", "tiled_sgemm",
             tuple(ops.Gemm(m=m, n=n, k=k) for m, n, k in ((1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129))),
             launch=lambda p: ((cdiv(p.n, 16), cdiv(p.m, 16)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("col_sums", "03-coalescing", "column sums with coalesced loads", "col_sums",
             tuple(ColumnSums(m, n) for m, n in ((1, 1), (1000, 33), (77, 4097), (513, 300))),
             launch=lambda p: (cdiv(p.n, 128), 128),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("transpose", "04-shared-tiling", "a transpose through a padded shared tile", "transpose",
             tuple(Transpose(m, n) for m, n in ((1, 1), (33, 65), (100, 31), (257, 130))),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("transpose_swizzled", "15-hopper", "a transpose through an XOR-swizzled shared tile",
             "transpose_swizzled",
             tuple(Transpose(m, n) for m, n in ((1, 1), (33, 65), (100, 31), (257, 130))),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("register_tile", "06-register-tiling", "a 4 x 4 register tile from shared-memory tiles",
             "register_tile",
             tuple(ops.Gemm(m=m, n=n, k=k) for m, n, k in ((1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129))),
             launch=lambda p: ((cdiv(p.n, 64), cdiv(p.m, 64)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("axpy_grid_stride", "10-scaling", "z = a x + y with a grid of any size", "axpy_grid_stride",
             tuple(Axpy(n) for n in (1, 1000, 4097, 100003)),
             launch=lambda p: (4, 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, numpy.float32(p.a), p.n)),
    Exercise("sum_squares", "11-profiling", "a sum of squares with one atomic per warp", "sum_squares",
             tuple(SumSquares(n) for n in (1, 31, 4097, 100003)),
             launch=lambda p: (max(1, min(264, cdiv(p.n, 256))), 256),
             args=lambda p, inputs, out: (inputs[0], p.n, out),
             prepare=lambda out: out.fill(0)),
    Exercise("grouped_order", "13-sgemm-climb", "the tiles of C in grouped order", "grouped_order",
             tuple(ops.Gemm(m=m, n=n, k=k) for m, n, k in ((1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129),
                                                           (300, 40, 9))),
             launch=lambda p: (cdiv(p.m, 16) * cdiv(p.n, 16), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("wmma_two_tiles", "14-tensor-cores", "two tiles of C per warp with one fragment of B", "wmma_two_tiles",
             tuple(ops.TcGemm(m=m, n=n, k=k, precision="fp16") for m, n, k in ((32, 16, 16), (64, 48, 32), (96, 80, 208),
                                                                               (160, 32, 48))),
             launch=lambda p: (cdiv((p.m // 32) * (p.n // 16), 4), 128),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k),
             tolerance=1e-5),
    Exercise("gemm_bt", "09-gemm", "a tiled SGEMM of C = A B^T", "gemm_bt",
             (GemmBT(1, 1, 1), GemmBT(33, 17, 65), GemmBT(100, 131, 7), GemmBT(257, 255, 129)),
             launch=lambda p: ((cdiv(p.n, 16), cdiv(p.m, 16)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
)}


def get(name: str) -> Exercise:
    if name not in EXERCISES:
        raise KeyError(f"no exercise {name!r}; there are: {', '.join(EXERCISES)}")
    return EXERCISES[name]


def scaffold(name: str) -> str:
    """The kernel to complete, as text (put it in a cell, edit, pass it to check)."""
    return get(name).scaffold_path.read_text()


def solution(name: str) -> str:
    return get(name).solution_path.read_text()


def check(name: str, code: str, draws: int = 2, seed=None, quiet: bool = False) -> bool:
    """Run the exercise's kernel from ``code`` at every size, ``draws`` times on fresh inputs; print a
    verdict per size (or the compiler's or the emulator's message); True when every one is right."""
    e = get(name)
    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(f"draws is how many fresh inputs each size is checked on: a whole number from 1, got {draws!r}")
    say = (lambda s: None) if quiet else print
    try:
        kernel = load(code=code).get(e.entry)
    except (CompileError, ValueError) as exc:
        say(f"{name}: does not compile:\n{exc}")
        return False
    ok = True
    for at, p in enumerate(e.problems):
        grid, block = e.launch(p)

        def run(inputs, out, p=p, grid=grid, block=block):
            if e.prepare is not None:
                e.prepare(out)
            kernel(grid, block, e.args(p, inputs, out))

        worst, unwritten = 0.0, 0
        try:
            for d in range(draws):          # gemmlab.check: fresh inputs, a NaN-poisoned output, float64
                r = check_run(run, p, tolerance=e.tolerance, seed=None if seed is None else seed + d)
                unwritten = max(unwritten, r.unwritten)
                worst = r.error if not numpy.isfinite(r.error) else max(worst, r.error)
        except EmulatorTimeout as exc:
            # a kernel that does not finish at one size would not at the others: one time-out, not one a size
            say(f"{name}, {p.label}: the emulator stopped it: {str(exc).splitlines()[0]}")
            rest = e.problems[at + 1:]
            if rest:
                say(f"{name}: not run at the {len(rest)} other size{'s' if len(rest) > 1 else ''} "
                    f"({'; '.join(q.label for q in rest)}): fix the endless loop first")
            return False
        except EmulatorError as exc:
            say(f"{name}, {p.label}: the emulator stopped it: {str(exc).splitlines()[0]}")
            ok = False
            continue
        right = unwritten == 0 and numpy.isfinite(worst) and worst < e.tolerance
        ok &= right
        note = f" ({unwritten} outputs never written)" if unwritten else ""
        say(f"{name}, {p.label}: rel. error < {e.tolerance:g}: {right}{note}")
    return ok
