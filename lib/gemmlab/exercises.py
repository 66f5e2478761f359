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

from .cases import DOT_SIZES, GEMM_SHAPES, GEMV_SHAPES, problem as problem_of
# the exercises' problems live with the others in ops; here under the names they have always had
from .ops import Axpy, ColumnSums, GemmBT, StridedDot, SumSquares, Transpose

__all__ = ["Exercise", "EXERCISES", "get", "scaffold", "solution", "check",
           "Axpy", "ColumnSums", "GemmBT", "StridedDot", "SumSquares", "Transpose"]
from .check import FP32_TOLERANCE
from .check import check as check_run
from .runtime.limits import cdiv
from .runtime.loader import CompileError, load
from .paths import KERNELS
from .runtime.backend import on_gpu
from .runtime.emulator import EmulatorError, EmulatorTimeout
from .variant import ElsewhereError, Need, last_line


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
    need: Need | None = None            # a GPU that lacks it has the check run on the CPU emulator as the book's GPU
    options: tuple = ()                 # the compiler's (-arch=sm_90a for Hopper's own instructions)
    emulator_first: bool = False        # on a GPU, run only a kernel the emulator found right (a wrong wait can hang it)

    @property
    def scaffold_path(self):
        return KERNELS / "exercises" / f"{self.name}.cu"

    @property
    def solution_path(self):
        return KERNELS / "solutions" / f"{self.name}.cu"


EXERCISES = {e.name: e for e in (
    Exercise("dot_strided", "07-dot", "a DOT with BLAS increments", "dot_strided",
             tuple(problem_of("strided-dot", n, incx=x, incy=y)
                   for n, x, y in ((1, 1, 1), (1000, 2, -3), (4097, -1, 1), (100003, 3, 2))),
             launch=lambda p: (cdiv(p.n, 256), 256),
             args=lambda p, inputs, out: (inputs[0], p.incx, inputs[1], p.incy, p.n, out)),
    Exercise("gemv_split", "08-gemv", "a GEMV with each row split across a warp", "gemv_split",
             tuple(problem_of("gemv", *s, layout="row") for s in GEMV_SHAPES + [(300, 33)]),
             launch=lambda p: (cdiv(p.m, 8), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n)),
    Exercise("micro_tile", "05-cache-blocking", "a 2 x 2 micro-tile of C per thread", "micro_tile",
             tuple(problem_of("gemm", *s) for s in GEMM_SHAPES),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("dot_float4", "12-bandwidth-roof", "a DOT that reads 16 bytes at a time", "dot_float4",
             tuple(problem_of("dot", n) for n in (1, 3, 4097, 100003)),
             launch=lambda p: (max(1, min(264, cdiv(p.n, 1024))), 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], p.n, out),
             prepare=lambda out: out.fill(0)),
    Exercise("axpy", "01-roofline", "z = a x + y, a kernel on the roofline's slope", "axpy",
             tuple(problem_of("axpy", n) for n in DOT_SIZES),
             launch=lambda p: (cdiv(p.n, 256), 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, numpy.float32(p.a), p.n)),
    Exercise("tiled_sgemm", "02-naive-and-tiled", "the 16 x 16 shared-memory tiled SGEMM", "tiled_sgemm",
             tuple(problem_of("gemm", *s) for s in GEMM_SHAPES),
             launch=lambda p: ((cdiv(p.n, 16), cdiv(p.m, 16)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("col_sums", "03-coalescing", "column sums with coalesced loads", "col_sums",
             tuple(problem_of("col-sums", m, n) for m, n in ((1, 1), (1000, 33), (77, 4097), (513, 300))),
             launch=lambda p: (cdiv(p.n, 128), 128),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("transpose", "04-shared-tiling", "a transpose through a padded shared tile", "transpose",
             tuple(problem_of("transpose", m, n) for m, n in ((1, 1), (33, 65), (100, 31), (257, 130))),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("transpose_swizzled", "15-hopper", "a transpose through an XOR-swizzled shared tile",
             "transpose_swizzled",
             tuple(problem_of("transpose", m, n) for m, n in ((1, 1), (33, 65), (100, 31), (257, 130))),
             launch=lambda p: ((cdiv(p.n, 32), cdiv(p.m, 32)), (32, 8)),
             args=lambda p, inputs, out: (inputs[0], out, p.m, p.n)),
    Exercise("register_tile", "06-register-tiling", "a 4 x 4 register tile from shared-memory tiles",
             "register_tile",
             tuple(problem_of("gemm", *s) for s in GEMM_SHAPES),
             launch=lambda p: ((cdiv(p.n, 64), cdiv(p.m, 64)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("axpy_grid_stride", "10-scaling", "z = a x + y with a grid of any size", "axpy_grid_stride",
             tuple(problem_of("axpy", n) for n in DOT_SIZES),
             launch=lambda p: (4, 256),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, numpy.float32(p.a), p.n)),
    Exercise("sum_squares", "11-profiling", "a sum of squares with one atomic per warp", "sum_squares",
             tuple(problem_of("sum-squares", n) for n in (1, 31, 4097, 100003)),
             launch=lambda p: (max(1, min(264, cdiv(p.n, 256))), 256),
             args=lambda p, inputs, out: (inputs[0], p.n, out),
             prepare=lambda out: out.fill(0)),
    Exercise("grouped_order", "13-sgemm-climb", "the tiles of C in grouped order", "grouped_order",
             tuple(problem_of("gemm", *s) for s in GEMM_SHAPES + [(300, 40, 9)]),
             launch=lambda p: (cdiv(p.m, 16) * cdiv(p.n, 16), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
    Exercise("wmma_two_tiles", "14-tensor-cores", "two tiles of C per warp with one fragment of B", "wmma_two_tiles",
             tuple(problem_of("tc", *s, precision="fp16") for s in ((32, 16, 16), (64, 48, 32), (96, 80, 208),
                                                                       (160, 32, 48))),
             launch=lambda p: (cdiv((p.m // 32) * (p.n // 16), 4), 128),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k),
             tolerance=1e-5),
    Exercise("mma_ldmatrix", "15-hopper", "one mma.sync tile fed by ldmatrix", "mma_ldmatrix",
             tuple(problem_of("tc", *s, precision="fp16") for s in ((16, 8, 16), (48, 24, 64), (80, 40, 208),
                                                                       (144, 16, 48))),
             launch=lambda p: ((p.n // 8, p.m // 16), 32),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k),
             tolerance=1e-5, need=Need((8, 0), "mma.sync m16n8k16 with FP16 operands")),
    Exercise("tma_pipeline", "16-past-cublas", "a two-stage TMA pipeline with full and empty barriers",
             "tma_pipeline",
             tuple(problem_of("tc", *s, precision="fp16") for s in ((64, 64, 64), (100, 136, 72), (130, 72, 264),
                                                                       (33, 200, 136))),
             launch=lambda p: ((cdiv(p.n, 64), cdiv(p.m, 64)), 128),
             args=lambda p, inputs, out: (*_tensor_maps(inputs, 64, 64), out, p.m, p.n, p.k),
             tolerance=1e-5, need=Need((9, 0), "sm_90a: TMA copies and mbarriers", only=True),
             options=("-arch=sm_90a",), emulator_first=True),
    Exercise("gemm_bt", "09-gemm", "a tiled SGEMM of C = A B^T", "gemm_bt",
             tuple(problem_of("gemm-bt", *s) for s in GEMM_SHAPES),
             launch=lambda p: ((cdiv(p.n, 16), cdiv(p.m, 16)), (16, 16)),
             args=lambda p, inputs, out: (inputs[0], inputs[1], out, p.m, p.n, p.k)),
)}


def _tensor_maps(inputs, rows: int, cols: int) -> tuple:
    """TMA tensor maps of A and B (FP16, row-major), boxes of rows x cols elements."""
    from .runtime import tma
    return tuple(tma.tensor_map(a, "fp16", rows, cols) for a in inputs[:2])


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
    verdict per size (or the compiler's or the emulator's message); True when every one is right (a Python
    bool, never NumPy's)."""
    e = get(name)
    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(f"draws is how many fresh inputs each size is checked on: a whole number from 1, got {draws!r}")
    say = (lambda s: None) if quiet else print
    reason = _cannot_run(e)
    if reason:
        return _check_elsewhere(e, code, draws, seed, say, reason)
    if e.emulator_first and on_gpu:
        if not _check_elsewhere(e, code, draws, seed, say, "first: a wait that never ends, which would hang this GPU, "
                                                           "is named there"):
            return False
        say(f"{name}: and on the GPU in use:")
    try:
        kernel = load(code=code, options=e.options).get(e.entry)
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
            lines = str(exc).splitlines()               # (a deadlock's first line is followed by who waits on what)
            say(f"{name}, {p.label}: the emulator stopped it: " + "\n".join(lines[:4] if lines[0].endswith(":")
                                                                            else lines[:1]))
            ok = False
            continue
        right = bool(unwritten == 0 and numpy.isfinite(worst) and worst < e.tolerance)
        ok = ok and right
        note = f" ({unwritten} outputs never written)" if unwritten else ""
        say(f"{name}, {p.label}: rel. error < {e.tolerance:g}: {right}{note}")
    return ok


def _cannot_run(e: Exercise) -> str | None:
    """Why the GPU in use (or the profile the emulator runs as) cannot run exercise ``e``; None when it can."""
    from .runtime import profiles
    return e.need.lacking(e.name, profiles.current()) if e.need is not None else None


# the child of _check_elsewhere: (name, code, draws, seed) on its standard input; exit status 0 right, 3 wrong
_CHECK_CHILD = ("import pickle, sys\n"
                "import gemmlab as gl\n"
                "name, code, draws, seed = pickle.load(sys.stdin.buffer)\n"
                "sys.exit(0 if gl.exercises.check(name, code, draws, seed) else 3)\n")


def _check_elsewhere(e: Exercise, code: str, draws: int, seed, say, reason: str) -> bool:
    """The check of ``code`` in a child process on the CPU emulator as the book's GPU, for a GPU that cannot
    run it: its verdicts, after one line that says where and why."""
    from . import processes
    from .runtime import profiles
    book = profiles.PROFILES[profiles.BOOK]
    if e.need is not None and not e.need.met_by(book.capability):
        say(f"{e.name}: skipped here: {reason}")
        return False
    say(f"{e.name}: checked on {book.on_emulator()} ({reason})")
    done = processes.python_on_emulator(_CHECK_CHILD, (e.name, code, draws, seed), book.key)
    if done.returncode not in (0, 3):
        raise ElsewhereError(f"{e.name}'s check on {book.on_emulator()} failed: {last_line(done)}")
    for line in done.stdout.splitlines():
        say(line)
    return done.returncode == 0
