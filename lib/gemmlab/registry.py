"""The one table of kernel variants. Tests, benchmarks, sweeps and widgets all derive from it.

Adding a variant means adding its ``.cu`` file under ``kernels/`` and one :class:`Variant` below: the
kernel tests (every legal parameter choice, at sizes that are not multiples of the tile), the checks
before timing and the benchmark tables pick it up from here.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy

from . import hardware as hw
from . import ops
from .check import FP32_TOLERANCE, check
from .limits import cdiv
from .loader import load


@dataclass(frozen=True)
class Need:
    """A compute capability a variant needs, and why: ``Need((8, 0), "mma.sync m16n8k16")``; ``precisions``
    limits it to problems of those precisions (tc/01's BF16 and TF32 fragments, not its FP16 ones)."""
    capability: tuple
    feature: str
    precisions: tuple = ()
    only: bool = False        # code for this architecture alone (sm_90a: wgmma runs on Hopper, not after it)

    def applies(self, problem) -> bool:
        return not self.precisions or problem is None or getattr(problem, "precision", None) in self.precisions

    def met_by(self, capability: tuple) -> bool:
        return capability >= self.capability and not (self.only and capability[0] != self.capability[0])

    @property
    def cc(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"


@dataclass(frozen=True)
class Variant:
    key: str                        # "sgemm/01_naive": also its file under kernels/, without .cu
    entry: str                      # kernel name; template arguments as {PARAM}: "sgemm_tiled<{TILE}>"
    op: type                        # the ops class it computes (its FLOP and byte counts)
    title: str
    launch: Callable                # (problem, params) -> (grid, block, shared_mem)
    args: Callable                  # (problem, inputs, out) -> kernel argument tuple
    params: dict = field(default_factory=dict)    # name -> tuple of legal values
    defaults: dict = field(default_factory=dict)  # name -> value used when none is given
    refuse: Callable | None = None  # (problem, params) -> reason string, or None when supported
    chapter: str | None = None      # the chapter that introduces it (None: not in a chapter yet)
    tolerance: float = FP32_TOLERANCE
    layout: str = "row"             # the storage the kernel expects: "row" (SGEMM ladder) or "col" (BLAS)
    problem_params: Callable | None = None   # (problem) -> template fields taken from the problem (e.g. TRANS)
    prepare: Callable | None = None          # (problem, params, inputs, out) -> None, run before each launch
    valid: Callable | None = None            # (params) -> bool: which combinations exist (default: all)
    gpu_only: str | None = None              # why the emulator cannot run it (inline PTX, say); None: it can
    options: tuple = ()                      # compiler options of its own (the architecture, say)
    needs: tuple = ()                        # Need()s: the compute capabilities it needs, and why (none: 7.5,
                                             # the book's floor, a Colab T4)
    older_gpus: str = ""                     # how it runs below the GPU it was written for, when it does

    @property
    def source(self) -> str:
        return self.key + ".cu"

    def choices(self) -> list:
        """Every legal parameter combination, as dicts."""
        names = list(self.params)
        every = [dict(zip(names, values)) for values in itertools.product(*(self.params[n] for n in names))]
        return [c for c in every if self.valid is None or self.valid(c)]

    def covering(self, limit: int = 48) -> list:
        """The choices that tests, sanitizer runs and crosschecks run: all of them when there are at most
        ``limit``; else the defaults, and each value of each parameter with the others at their defaults
        (or in the first combination that exists with it), so that every value is exercised once."""
        every = self.choices()
        if len(every) <= limit:
            return every
        base = self.resolve()
        out = [base]
        for name, legal in self.params.items():
            for value in legal:
                want = {**base, name: value}
                pick = want if (self.valid is None or self.valid(want)) else next(
                    (c for c in every if c[name] == value), None)
                if pick is not None and pick not in out:
                    out.append(pick)
        return out

    def resolve(self, **params) -> dict:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ValueError(f"{self.key} has no parameter {', '.join(sorted(unknown))}; "
                             f"it takes {', '.join(self.params) or 'none'}")
        full = {**self.defaults, **params}
        for name, legal in self.params.items():
            if full.get(name) not in legal:
                raise ValueError(f"{self.key}: {name}={full.get(name)!r} is not one of the legal values {legal}")
        if self.valid is not None and not self.valid(full):
            raise ValueError(f"{self.key}: {full} is not a combination the kernel supports ({len(self.choices())} "
                             f"are, the defaults {self.defaults} among them: Variant.choices() lists them; the "
                             f"rule is in kernels/{self.source}'s header)")
        return full

    def expression(self, problem=None, **params) -> str:
        """The kernel's name expression for these parameters (and the problem's own, such as TRANS)."""
        fields = dict(self.resolve(**params))
        if self.problem_params is not None:
            fields.update(self.problem_params(problem if problem is not None else self.op()))
        return self.entry.format(**fields)

    def kernel(self, problem=None, **params):
        if not self.runnable:
            raise hw.BackendError(f"{self.key} runs on a GPU only ({self.gpu_only}); this is the {hw.backend} "
                                  f"backend ({hw.backend_reason})")
        reason = self.unsupported(problem if problem is not None else self.op())    # (the default problem's form)
        if reason:
            raise hw.UnsupportedGPU(reason)
        return _load(self.source, self.options).get(self.expression(problem, **params))

    def unsupported(self, problem=None, profile=None) -> str | None:
        """Why the GPU in use (or ``profile``) cannot run this variant on ``problem``: one line naming the
        feature, the capability needed and the GPU; None when it can."""
        from . import profiles
        p = profile or profiles.current()
        for n in self.needs:
            if n.applies(problem) and not n.met_by(p.capability):
                what = f" in {problem.precision.upper()}" if n.precisions and problem is not None else ""
                exactly = " exactly" if n.only else ""
                return (f"{self.key}{what} needs compute capability {n.cc}{exactly} ({n.feature}); "
                        f"this is {p.describe()}")
        return None

    def does_not_fit(self, problem, params: dict, profile=None) -> str | None:
        """Why a launch of these parameters on ``problem`` exceeds the limits of the GPU in use (or
        ``profile``): its dynamic shared memory or its threads per block. None when it fits."""
        from . import profiles
        p = profile or profiles.current()
        lim = p.limits
        _, block, shared = self.launch(problem, params)
        threads = block_threads(block)
        label = ",".join(f"{k}={v}" for k, v in params.items())
        if shared > lim.shared_per_block_optin:
            return (f"{self.key} [{label}] needs {shared / 1024:.0f} KiB of shared memory per block; this is "
                    f"{p.describe()}, which allows {lim.shared_per_block_optin // 1024} KiB")
        if threads > lim.max_threads_per_block:
            return (f"{self.key} [{label}] runs {threads} threads per block; this is {p.describe()}, which "
                    f"allows {lim.max_threads_per_block}")
        return None

    def _not_here(self, problem, full: dict, profile=None) -> str | None:
        """Why the backend or the GPU in use (or ``profile``) cannot run these parameters on ``problem``: the
        emulator and inline PTX, the capability, the device's limits; None when it can."""
        if not self.runnable:
            return f"{self.key} runs on a GPU only ({self.gpu_only})"
        return self.unsupported(problem, profile) or self.does_not_fit(problem, full, profile)

    def skip_reason(self, problem, profile=None, **params) -> str | None:
        """Why a study skips this candidate on ``problem`` on the GPU in use: it cannot run here (the
        backend, the capability), refuses the problem, or does not fit the device; None when it runs."""
        full = self.resolve(**params)
        if self.runnable and not self.unsupported(problem, profile) and self.refuse is not None:
            reason = self.refuse(problem, full)
            if reason:
                return f"{self.key}: {reason}"
        return self._not_here(problem, full, profile)

    def awkward(self) -> list:
        """Problems of sizes that are not multiples of any tile, for tests, crosschecks and sanitizers (those
        of its operation that the variant takes: a tensor-core kernel for one precision, say)."""
        every = awkward_problems(self.op, self.layout)
        if self.refuse is None:
            return every
        base = self.resolve()
        return [p for p in every if not self.refuse(p, base)]

    @property
    def runnable(self) -> bool:
        """Whether the backend in use can run it (a GPU-only kernel cannot run on the emulator)."""
        return self.gpu_only is None or hw.on_gpu

    def runner(self, problem, **params) -> Callable:
        """A function ``run(inputs, out)`` that launches this variant on ``problem``."""
        if not self.runnable:
            raise hw.BackendError(f"{self.key} runs on a GPU only ({self.gpu_only}); this is the {hw.backend} "
                                  f"backend ({hw.backend_reason})")
        full = self.resolve(**params)
        if not isinstance(problem, self.op):
            raise ValueError(f"{self.key} computes {self.op.__name__}, not {type(problem).__name__}")
        if getattr(problem, "layout", self.layout) != self.layout:
            raise ValueError(f"{self.key} expects layout={self.layout!r}, the problem has {problem.layout!r}")
        reason = self.unsupported(problem)
        if reason:
            raise hw.UnsupportedGPU(reason)
        if self.refuse is not None:
            reason = self.refuse(problem, full)
            if reason:
                raise ValueError(f"{self.key} with {full}: {reason}")
        reason = self.does_not_fit(problem, full)
        if reason:
            raise hw.UnsupportedGPU(reason)
        kernel = self.kernel(problem, **full)
        grid, block, shared = self.launch(problem, full)
        prepare = self.prepare

        def run(inputs, out):
            if prepare is not None:
                prepare(problem, full, inputs, out)
            kernel(grid, block, self.args(problem, inputs, out), shared_mem=shared)
        run.__name__ = f"run_{self.key.replace('/', '_')}"
        return run

    def verdict(self, problem, *, seed=None, **params) -> str:
        """A chapter's check line: the verdict of :meth:`check`, or, where the GPU in use (or the emulator)
        cannot run this variant on ``problem``, one line saying it was skipped and why."""
        reason = self._not_here(problem, self.resolve(**params))
        if reason:
            return f"skipped here: {reason}"
        return self.check(problem, seed=seed, **params).verdict()

    def check(self, problem, *, seed=None, **params):
        """Check this variant on ``problem`` against float64 (fresh random inputs, NaN-poisoned output)."""
        label = self.key + (" " + ",".join(f"{k}={v}" for k, v in self.resolve(**params).items())
                            if self.params else "")
        return check(self.runner(problem, **params), problem, label=label, tolerance=self.tolerance, seed=seed)


FLOOR = (7, 5)     # the oldest GPU the book runs on: compute capability 7.5 (Turing, Colab's T4)


def block_threads(block) -> int:
    """Threads in a block given as a number or a tuple of dimensions."""
    return math.prod(block) if isinstance(block, tuple) else block


def _load(source: str, options: tuple = ()):
    from .profiles import compile_arch, current
    return _load_for(source, options, current().key, compile_arch())


@functools.lru_cache(maxsize=None)
def _load_for(source: str, options: tuple, profile, arch):
    """A module per source, options and profile in use (a profile's kernels are compiled for its architecture)."""
    return load(source, options=options)


def awkward_problems(op: type, layout: str = "row") -> list:
    """Problem sizes that are multiples of no tile: every kernel is checked on these. (Tensor-core GEMMs
    take multiples of 16, the wmma tile: multiples of no block tile, in each precision.)"""
    if op is ops.TcGemm:
        return [ops.TcGemm(m=m, n=n, k=k, precision=p) for m, n, k in ((16, 16, 16), (48, 80, 32), (112, 48, 208))
                for p in ops.TC_PRECISIONS]
    if op is ops.Dot:
        return [ops.Dot(n=n) for n in (1, 1000, 4097, 100003)]
    if op is ops.Gemv:
        return [ops.Gemv(m=m, n=n, trans=t, layout=layout) for m, n in ((1, 1), (77, 1000), (1031, 45))
                for t in ("N", "T")]
    shapes = [(1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129)]
    if layout == "row":
        return [ops.Gemm(m=m, n=n, k=k) for m, n, k in shapes]
    return [ops.Gemm(m=m, n=n, k=k, transa=ta, transb=tb, layout="col") for m, n, k in shapes[1:]
            for ta, tb in (("N", "N"), ("T", "N"), ("N", "T"), ("T", "T"))]


def _square_blocks(name: str):
    """Launch geometry of a kernel whose blocks are name x name threads, one thread per element of C."""
    return lambda p, c: ((cdiv(p.n, c[name]), cdiv(p.m, c[name])), (c[name], c[name]), 0)


def _gemm_args(p, inputs, out):
    A, B = inputs
    return (A, B, out, p.m, p.n, p.k)


VARIANTS = [
    Variant(
        key="sgemm/01_naive",
        chapter="02-naive-and-tiled",
        entry="sgemm_naive",
        op=ops.Gemm,
        title="naive: one thread per element of C",
        params={"BLOCK": (8, 16, 32)},
        defaults={"BLOCK": 16},
        launch=_square_blocks("BLOCK"),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/02_shared_tiling",
        chapter="02-naive-and-tiled",
        entry="sgemm_shared_tiling<{TILE}>",
        op=ops.Gemm,
        title="shared-memory tiling: TILE x TILE tiles of A and B per phase",
        params={"TILE": (8, 16, 32)},
        defaults={"TILE": 16},
        launch=_square_blocks("TILE"),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/03_uncoalesced",
        chapter="03-coalescing",
        entry="sgemm_uncoalesced",
        op=ops.Gemm,
        title="naive with threadIdx.x walking rows: uncoalesced A and C",
        params={"BLOCK": (16, 32)},
        defaults={"BLOCK": 16},
        launch=lambda p, c: ((cdiv(p.m, c["BLOCK"]), cdiv(p.n, c["BLOCK"])), (c["BLOCK"], c["BLOCK"]), 0),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/04_padded_tiling",
        chapter="04-shared-tiling",
        entry="sgemm_padded_tiling<{TILE}, {PAD}, {UNROLL}, {AT}>",
        op=ops.Gemm,
        title="shared tiling with padding, unrolling and a transposed A tile as switches",
        params={"TILE": (16, 32), "PAD": (0, 1), "UNROLL": (0, 1), "AT": (0, 1)},
        defaults={"TILE": 16, "PAD": 1, "UNROLL": 1, "AT": 0},
        launch=_square_blocks("TILE"),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/05_cache_blocking",
        chapter="05-cache-blocking",
        entry="sgemm_cache_blocking<{TM}, {TN}, {EDGE}>",
        op=ops.Gemm,
        title="cache blocking: a TM x TN register micro-tile per thread, no shared memory",
        params={"TM": (1, 2, 4, 8), "TN": (1, 2, 4, 8), "EDGE": (0, 1)},
        defaults={"TM": 8, "TN": 8, "EDGE": 0},
        # EDGE 1 (a guard on every load) is chapter 5's contrast, at the micro-tiles it times
        valid=lambda c: c["EDGE"] == 0 or (c["TM"], c["TN"]) in ((1, 1), (8, 4), (8, 8)),
        launch=lambda p, c: ((cdiv(p.n, 16 * c["TN"]), cdiv(p.m, 16 * c["TM"])), (16, 16), 0),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/06_register_tiling",
        chapter="06-register-tiling",
        entry="sgemm_register_tiling<{T}, {RM}, {RN}, {MINB}>",
        op=ops.Gemm,
        title="register tiling: shared tiles and an RM x RN micro-tile per thread",
        params={"T": (16, 32), "RM": (2, 4), "RN": (2, 4), "MINB": (1, 2, 4, 6, 8)},
        defaults={"T": 32, "RM": 4, "RN": 2, "MINB": 1},
        launch=lambda p, c: ((cdiv(p.n, c["T"]), cdiv(p.m, c["T"])), (c["T"] // c["RN"], c["T"] // c["RM"]), 0),
        args=_gemm_args,
    ),
]

# --- Part IV: closing the gap (row-major, as the SGEMM ladder) -----------------------------------

def _warp_threads(c):
    """Threads of a warp-tiled block: a warp per WM x WN warp tile of the BM x BN block tile."""
    return (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32


# The parameters of the warp-tiled kernels (sgemm/09-12): block tile, k step, warp tile ...
_WARP_TILES = {"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16, 32), "WM": (32, 64, 128),
               "WN": (32, 64, 128)}
# ... and the shape of the problem (Part IV's autotuning chapter): block order in bands, split-K, blocks per SM
_PROBLEM_SHAPE = {"GROUP": (1, 4, 8, 16), "SPLITK": (1, 2, 3, 4, 8), "MINB": (1, 2)}


def _double_buffer_launch(p, c):
    """sgemm/10 and 12: a one-dimensional grid of tiles (gl_band_tile orders them), SPLITK slices of K in y,
    two stages of both tiles in dynamic shared memory."""
    return (cdiv(p.m, c["BM"]) * cdiv(p.n, c["BN"]), c["SPLITK"]), _warp_threads(c), 8 * c["BK"] * (c["BM"] + 4 + c["BN"])


def _zero_for_split_k(p, c, inputs, out):
    """Split-K slices add into C: it starts at zero."""
    if c["SPLITK"] > 1:
        out.fill(0)


def _warp_tiled_valid(c):
    """Warp tiles that fill the block tile, lanes as 8 x 4 with 4 x 4 sub-tiles, whole float4 loads per thread."""
    if c["BM"] % c["WM"] or c["BN"] % c["WN"] or c["WM"] % 32 or c["WN"] % 16:
        return False
    threads = _warp_threads(c)
    return 64 <= threads <= 1024 and (c["BM"] * c["BK"]) % (4 * threads) == 0 and (c["BK"] * c["BN"]) % (4 * threads) == 0


def _warp_tiled_launch(shared):
    def launch(p, c):
        return (cdiv(p.n, c["BN"]), cdiv(p.m, c["BM"])), _warp_threads(c), shared(c)
    return launch


# cuda_pipeline's primitives exist from compute capability 7.0; the copies are asynchronous (cp.async) from 8.0
_CP_ASYNC_BELOW_80 = "below 8.0 the __pipeline_memcpy_async copies are made at once, through registers (no cp.async)"


def _cp_async_shared(c):
    a_tile = c["BK"] * (c["BM"] + 4) if c["AT"] else c["BM"] * (c["BK"] + 4)
    return 4 * c["STAGES"] * (a_tile + c["BK"] * c["BN"])


def _vectorized_valid(c):
    threads = (c["BM"] // c["TM"]) * (c["BN"] // c["TN"])
    return (not (c["PAD"] and c["SWZ"]) and (not c["SPLIT"] or (c["TM"] % 8 == 0 and c["TN"] % 8 == 0))
            and 64 <= threads <= 1024 and (c["BM"] * c["BK"]) % (4 * threads) == 0
            and (c["BK"] * c["BN"]) % (4 * threads) == 0)


VARIANTS += [
    Variant(
        key="sgemm/07_vectorized",
        chapter=None,
        entry="sgemm_vectorized<{BM}, {BN}, {BK}, {TM}, {TN}, {PAD}, {SWZ}, {SPLIT}>",
        op=ops.Gemm,
        title="128 x 128 tiles, 16-byte loads, a transposed A tile, 8 x 8 per thread; padding, swizzle, split",
        params={"BM": (64, 128), "BN": (64, 128), "BK": (8, 16), "TM": (4, 8), "TN": (4, 8), "PAD": (0, 1),
                "SWZ": (0, 1), "SPLIT": (0, 1)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "PAD": 0, "SWZ": 0, "SPLIT": 0},
        valid=_vectorized_valid,
        launch=lambda p, c: ((cdiv(p.n, c["BN"]), cdiv(p.m, c["BM"])), (c["BM"] // c["TM"]) * (c["BN"] // c["TN"]), 0),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/09_warp_tiling",
        chapter=None,
        entry="sgemm_warp_tiling<{BM}, {BN}, {BK}, {WM}, {WN}>",
        op=ops.Gemm,
        title="block, warp and lane tiles (8 x 4 lanes of 4 x 4 sub-tiles), one stage",
        params={"BM": (64, 128), "BN": (128,), "BK": (8, 16), "WM": (32, 64), "WN": (32, 64)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32},
        valid=lambda c: _warp_tiled_valid(c) and 4 * c["BK"] * (c["BM"] + 4 + c["BN"]) <= 48 * 1024,
        launch=_warp_tiled_launch(lambda c: 0),
        args=_gemm_args,
    ),
    Variant(
        key="sgemm/10_double_buffer",
        chapter=None,
        entry="sgemm_double_buffer<{BM}, {BN}, {BK}, {WM}, {WN}, {GROUP}, {SPLITK}, {MINB}, {SNAKE}>",
        op=ops.Gemm,
        title="warp tiles, two shared stages fed through registers; block order in bands, split-K",
        params={**_WARP_TILES, **_PROBLEM_SHAPE, "SNAKE": (1, 0)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "GROUP": 1, "SPLITK": 1, "MINB": 2,
                  "SNAKE": 1},
        valid=_warp_tiled_valid,
        launch=_double_buffer_launch,
        args=_gemm_args,
        prepare=_zero_for_split_k,
    ),
    Variant(
        key="sgemm/12_interior",
        chapter=None,
        entry="sgemm_interior<{BM}, {BN}, {BK}, {WM}, {WN}, {LANES}, {GROUP}, {SPLITK}, {MINB}>",
        op=ops.Gemm,
        title="sgemm/10 with an unchecked main loop for the tiles inside C; lanes as 8 x 4 or 4 x 8",
        params={**_WARP_TILES, "LANES": (4, 8), **_PROBLEM_SHAPE},
        defaults={"BM": 128, "BN": 256, "BK": 16, "WM": 64, "WN": 64, "LANES": 4, "GROUP": 8, "SPLITK": 1,
                  "MINB": 1},
        valid=lambda c: _warp_tiled_valid(c) and c["WM"] % (4 * c["LANES"]) == 0
        and c["WN"] % (4 * (32 // c["LANES"])) == 0,
        launch=_double_buffer_launch,
        args=_gemm_args,
        prepare=_zero_for_split_k,
    ),
    Variant(
        key="sgemm/11_cp_async",
        chapter=None,
        entry="sgemm_cp_async<{BM}, {BN}, {BK}, {WM}, {WN}, {STAGES}, {AT}, {MINB}>",
        op=ops.Gemm,
        title="warp tiles fed by a STAGES-deep cp.async pipeline",
        older_gpus=_CP_ASYNC_BELOW_80,
        params={**_WARP_TILES, "STAGES": (2, 3, 4, 5), "AT": (0, 1, 2), "MINB": (1, 2)},
        defaults={"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "STAGES": 3, "AT": 1, "MINB": 2},
        valid=_warp_tiled_valid,
        launch=_warp_tiled_launch(_cp_async_shared),
        args=_gemm_args,
    ),
]

# --- the BLAS chapters: column-major, BLAS argument conventions (kernels/common/blas.cuh) -----------

def _dot_args(p, inputs, out):
    x, y = inputs
    return (x, 0, 1, y, 0, 1, p.n, out)


def _zero_result(p, c, inputs, out):
    out.fill(0)          # the kernels accumulate into the result with atomicAdd


def _memory(a):
    """A column-major matrix as the kernel sees it: its memory, as a flat view (a kernel takes raw memory,
    so the loader accepts only C-contiguous arrays; this view says which order is meant)."""
    flat = a.ravel(order="K")
    assert flat.base is not None or flat is a, "a view, not a copy: the kernel writes outputs through it"
    return flat


DOT_WORKSPACE = 1 + 4224     # DOT 7's deterministic pass: a counter, then a partial per block (GRID <= 4224)
_dot_work = {}


def _device_key():
    """Which device a cached workspace belongs to: the backend, and the current GPU on one."""
    from . import hardware as hw
    return (hw.backend, hw.xp.cuda.Device().id if hw.on_gpu else 0)


def dot_workspace():
    """DOT 7's workspace on the backend in use, allocated (zeroed) once: the kernel leaves its counter at 0."""
    from . import hardware as hw
    key = _device_key()
    if key not in _dot_work:
        _dot_work[key] = hw.xp.zeros(DOT_WORKSPACE, dtype="float32")
    return _dot_work[key]


_gemv_work = {}


def gemv_workspace(m: int):
    """GEMV 4's split-column workspace for m outputs: per-row-group counters (zeroed once; the kernel resets
    them) and room for 32 slices (SPLIT at most 32) of partial sums, on the backend in use; grown when a
    larger m comes."""
    from . import hardware as hw
    key = _device_key()
    have = _gemv_work.get(key)
    if have is None or have[1].size < 32 * max(m, 1):
        size = max(m, 1, 0 if have is None else have[1].size // 32)
        have = _gemv_work[key] = (hw.xp.zeros(cdiv(size, 32), dtype="uint32"), hw.xp.empty(32 * size, dtype="float32"))
    return have


def _gemv_args(p, inputs, out):
    A, x = inputs
    return (_memory(A), 0, p.m, x, 0, 1, out, 0, 1, p.out_len, p.in_len, 1.0, 0.0)


def _gemm_col_args(p, inputs, out):
    A, B = inputs
    return (_memory(A), 0, A.shape[0], _memory(B), 0, B.shape[0], _memory(out), 0, p.m, p.m, p.n, p.k, 1.0, 0.0)


_TRANS = lambda p: {"TRANS": int(p.trans == "T")}                                # noqa: E731
_TRANS2 = lambda p: {"TA": int(p.transa == "T"), "TB": int(p.transb == "T")}     # noqa: E731

VARIANTS += [
    Variant(
        key="blas/dot/00_atomic", chapter="07-dot", entry="dot_atomic", op=ops.Dot, layout="col",
        title="DOT 0-1: one atomicAdd per product",
        params={"BLOCK": (768, 256)}, defaults={"BLOCK": 256},
        launch=lambda p, c: (max(1, cdiv(p.n, c["BLOCK"])), c["BLOCK"], 0),
        args=_dot_args, prepare=_zero_result,
        tolerance=1e-3,      # n single-precision additions into one running sum: the error grows with n
    ),
    Variant(
        key="blas/dot/02_block_reduction", chapter="07-dot", entry="dot_block_reduction<{BLOCK}, {TREE}>", op=ops.Dot, layout="col",
        title="DOT 2-5: a shared-memory tree per block, one atomicAdd per block",
        params={"BLOCK": (256,), "TREE": (0, 1, 2), "PER": (1, 2)}, defaults={"BLOCK": 256, "TREE": 2, "PER": 1},
        launch=lambda p, c: (max(1, cdiv(p.n, c["BLOCK"] * c["PER"])), c["BLOCK"], 0),
        args=_dot_args, prepare=_zero_result,
    ),
    Variant(
        key="blas/dot/06_warp_shuffle", chapter="07-dot", entry="dot_warp_shuffle<{BLOCK}>", op=ops.Dot, layout="col",
        title="DOT 6: warp shuffles for the first levels of the tree",
        params={"BLOCK": (256,), "PER": (1, 2)}, defaults={"BLOCK": 256, "PER": 2},
        launch=lambda p, c: (max(1, cdiv(p.n, c["BLOCK"] * c["PER"])), c["BLOCK"], 0),
        args=_dot_args, prepare=_zero_result,
    ),
    Variant(
        key="blas/gemv/00_row_per_thread", chapter="08-gemv", entry="gemv_row_per_thread<{TRANS}>", op=ops.Gemv, layout="col",
        title="GEMV 0: a thread per row, ceil(M/512) blocks of 256",
        problem_params=_TRANS,
        launch=lambda p, c: (max(1, cdiv(p.out_len, 512)), 256, 0),
        args=_gemv_args,
    ),
    Variant(
        key="blas/gemv/01_shared_x", chapter="08-gemv", entry="gemv_shared_x<{BLOCK}, {TRANS}>", op=ops.Gemv, layout="col",
        title="GEMV 1-2: chunks of x in shared memory; the launch geometry swept",
        params={"BLOCK": (128, 256, 512, 1024), "GRID": (0, 128, 512, 2048)}, defaults={"BLOCK": 256, "GRID": 0},
        problem_params=_TRANS,
        # GRID = 0 is the article's first launch, ceil(M / (2*BLOCK)) blocks
        launch=lambda p, c: (c["GRID"] or max(1, cdiv(p.out_len, 2 * c["BLOCK"])), c["BLOCK"], 0),
        args=_gemv_args,
    ),
    Variant(
        key="blas/gemv/03_row_col_split", chapter="08-gemv", entry="gemv_row_col_split<{ROWS}, {SPLITS}, {TRANS}>", op=ops.Gemv,
        layout="col", title="GEMV 3: 32 rows x SPLITS column chunks per block",
        params={"ROWS": (32,), "SPLITS": (8, 16, 32)}, defaults={"ROWS": 32, "SPLITS": 16},
        problem_params=_TRANS,
        launch=lambda p, c: (max(1, cdiv(p.out_len, c["ROWS"])), (c["ROWS"], c["SPLITS"]), 0),
        args=_gemv_args,
    ),
    Variant(
        key="blas/dot/07_bandwidth", chapter=None, entry="dot_bandwidth<{BLOCK}, {UNROLL}, {DET}, {CS}>", op=ops.Dot,
        layout="col", title="DOT 7: 16-byte loads, UNROLL of them in flight per thread, a grid sized to the GPU",
        params={"BLOCK": (256, 512, 1024), "UNROLL": (1, 2, 4, 8), "GRID": (264, 528, 1056, 2112, 4224, 8448),
                "DET": (0, 1), "CS": (0, 1)},
        defaults={"BLOCK": 512, "UNROLL": 4, "GRID": 1056, "DET": 0, "CS": 1},
        valid=lambda c: not (c["DET"] and c["GRID"] > DOT_WORKSPACE - 1),   # a partial per block in the workspace
        launch=lambda p, c: (max(1, min(c["GRID"], cdiv(p.n, 4 * c["BLOCK"]))), c["BLOCK"], 0),
        args=lambda p, inputs, out: (*_dot_args(p, inputs, out), dot_workspace()),
        prepare=lambda p, c, inputs, out: None if c["DET"] else out.fill(0),
    ),
    Variant(
        key="blas/gemv/04_bandwidth", chapter=None, entry="gemv_bandwidth<{WARPS}, {UNROLL}, {SPLIT}, {VEC}, {CS}, {TRANS}>",
        op=ops.Gemv, layout="col", title="GEMV 4: coalesced for 'N' and 'T', UNROLL loads in flight per thread",
        params={"WARPS": (4, 8, 16, 32), "UNROLL": (1, 4, 8), "SPLIT": (1, 2, 4, 8, 16, 32), "VEC": (1, 4),
                "CS": (0, 1)},
        defaults={"WARPS": 16, "UNROLL": 4, "SPLIT": 1, "VEC": 1, "CS": 1},
        problem_params=_TRANS,
        launch=lambda p, c: ((max(1, cdiv(p.out_len, 32 * c["VEC"])), c["SPLIT"]) if p.trans == "N"
                             else max(1, cdiv(p.out_len, c["WARPS"])), 32 * c["WARPS"], 0),
        args=lambda p, inputs, out: (*_gemv_args(p, inputs, out), *gemv_workspace(p.out_len)),
    ),
    Variant(
        key="blas/gemm/00_naive", chapter="09-gemm", entry="gemm_naive<{TA}, {TB}>", op=ops.Gemm, layout="col",
        title="GEMM 0: one thread per element of C, column-major",
        problem_params=_TRANS2,
        launch=lambda p, c: ((max(1, cdiv(p.m, 16)), max(1, cdiv(p.n, 16))), (16, 16), 0),
        args=_gemm_col_args,
    ),
    Variant(
        key="blas/gemm/01_shared_tiling", chapter="09-gemm", entry="gemm_shared_tiling<16, {TA}, {TB}>", op=ops.Gemm, layout="col",
        title="GEMM 1: 16 x 16 shared tiles",
        problem_params=_TRANS2,
        launch=lambda p, c: ((max(1, cdiv(p.m, 16)), max(1, cdiv(p.n, 16))), (16, 16), 0),
        args=_gemm_col_args,
    ),
    Variant(
        key="blas/gemm/02_register_tiling", chapter="09-gemm", entry="gemm_register_tiling<{TT}, {TA}, {TB}>", op=ops.Gemm,
        layout="col", title="GEMM 2-3: a TT x TT register tile per thread (64 or 128 square block tiles)",
        params={"TT": (4, 8)}, defaults={"TT": 4}, problem_params=_TRANS2,
        launch=lambda p, c: ((max(1, cdiv(p.m, 16 * c["TT"])), max(1, cdiv(p.n, 16 * c["TT"]))), (16, 16), 0),
        args=_gemm_col_args,
    ),
    Variant(
        key="blas/gemm/04_double_buffer", chapter="09-gemm", entry="gemm_double_buffer<{TT}, {TA}, {TB}>", op=ops.Gemm, layout="col",
        title="GEMM 4: double-buffered shared tiles, one barrier per phase",
        params={"TT": (4, 8)}, defaults={"TT": 8}, problem_params=_TRANS2,
        launch=lambda p, c: ((max(1, cdiv(p.m, 16 * c["TT"])), max(1, cdiv(p.n, 16 * c["TT"]))), (16, 16), 0),
        args=_gemm_col_args,
    ),
    Variant(
        key="blas/gemm/05_warp_tiled", chapter=None,
        entry="gemm_warp_tiled<{BM}, {BN}, {BK}, {WM}, {WN}, {GROUP}, {MINB}, {TA}, {TB}>", op=ops.Gemm, layout="col",
        title="GEMM 5: Part IV's warp tiles, two stages, for every transpose",
        params={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (8, 16), "WM": (32, 64), "WN": (32, 64),
                "GROUP": (1, 8), "MINB": (1, 2)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "GROUP": 8, "MINB": 2},
        valid=_warp_tiled_valid, problem_params=_TRANS2,
        launch=lambda p, c: (max(1, cdiv(p.m, c["BM"]) * cdiv(p.n, c["BN"])), _warp_threads(c),
                             8 * c["BK"] * (c["BM"] + c["BN"] + 8)),
        args=_gemm_col_args,
    ),
]

# --- Part V: tensor cores ---------------------------------------------------------------------

def _tc_pipelined_shared(p, c):
    """The shared memory of the WMMA kernels fed through a pipeline (tc/03, tc/04): STAGES stages of a
    BM x BK tile of A and a BK x BN tile of B, rows padded by 16 bytes; BK is 64 bytes of a row of A.
    (tc/05 has its own: _mma_sync_shared.)"""
    size = 4 if getattr(p, "precision", "tf32") == "tf32" else 2        # an FP32 Gemm: 3xTF32
    v = 16 // size
    bk = 4 * v
    return c["STAGES"] * (c["BM"] * (bk + v) + bk * (c["BN"] + v)) * size


def _mma_sync_bytes(c, size):
    """tc/05's shared memory: STAGES stages of a BM x BK tile of A (rows padded by 16 bytes) and a BK x BN
    tile of B (rows padded by 8 elements), of ``size``-byte elements (2 for FP16/BF16, 4 for TF32)."""
    return c["STAGES"] * (c["BM"] * (c["BK"] + 16 // size) + c["BK"] * (c["BN"] + 8)) * size


def _mma_sync_shared(p, c):
    return _mma_sync_bytes(c, 4 if p.precision == "tf32" else 2)


def _most_shared() -> int:
    """The most shared memory any GPU of the profile table lets a block have: configurations over it exist
    on no GPU (the registry's choices leave them out; a GPU with less refuses more, Variant.does_not_fit)."""
    from .profiles import PROFILES
    return max(p.shared_per_block_optin for p in PROFILES.values())


# their block tiles, warp tiles and stages
_TC_TILES = {"BM": (64, 128, 256), "BN": (64, 128, 256), "WM": (32, 64), "WN": (32, 64), "STAGES": (2, 3, 4)}
_TC_TILE_DEFAULTS = {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "STAGES": 3}


def _tc_tiles_valid(c):
    return c["BM"] % c["WM"] == 0 and c["BN"] % c["WN"] == 0 and 64 <= _warp_threads(c) <= 512


def _tc_tiles_launch(p, c):
    return (cdiv(p.n, c["BN"]), cdiv(p.m, c["BM"])), _warp_threads(c), _tc_pipelined_shared(p, c)


def _tc_precision(p):
    """The kernels' PREC template argument: the index of the problem's precision (common/tc.cuh)."""
    return {"PREC": ops.TC_PRECISIONS.index(p.precision)}


# what the WMMA kernels need beyond FP16 fragments (compute capability 7.0): BF16 and TF32 ones
_AMPERE_FRAGMENTS = (Need((8, 0), "WMMA fragments of BF16 and TF32", ("bf16", "tf32")),)
_TF32_FRAGMENTS = (Need((8, 0), "WMMA fragments of TF32, for 3xTF32"),)
_HOPPER = (Need((9, 0), "sm_90a: wgmma, TMA copies and mbarriers", only=True),)


def _tc_operands(p, inputs, out):
    """Check a tensor-core kernel's operands before its launch. Their parameter type depends on the precision
    (``typename gl_tc<PREC>::in*``), which the loader cannot check against an array: FP16 takes float16
    arrays, BF16 its bits as uint16 (:func:`gemmlab.ops.to_bf16_bits`), TF32 float32; A is M x K and B K x N,
    row-major; C is M x N float32."""
    want = p.input_dtype
    hint = {"bf16": " (BF16 values as their bits: gl.ops.to_bf16_bits)", "fp16": "", "tf32": ""}[p.precision]
    for name, a, shape in (("A", inputs[0], (p.m, p.k)), ("B", inputs[1], (p.k, p.n))):
        if getattr(a, "dtype", None) != want:
            raise TypeError(f"{p.precision.upper()} tensor-core kernels take {name} as {numpy.dtype(want).name}"
                            f"{hint}; got {getattr(a, 'dtype', type(a).__name__)}")
        if tuple(a.shape) != shape or not a.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous {shape[0]} x {shape[1]} array for this {p.m} x {p.n} x "
                             f"{p.k} product; got {' x '.join(map(str, a.shape))}"
                             f"{'' if a.flags.c_contiguous else ', not C-contiguous'}")
    if getattr(out, "dtype", None) != numpy.float32 or tuple(out.shape) != (p.m, p.n) or not out.flags.c_contiguous:
        raise ValueError(f"C must be a C-contiguous {p.m} x {p.n} float32 array; got {getattr(out, 'dtype', '?')} "
                         f"{' x '.join(map(str, getattr(out, 'shape', ())))}")
    return inputs[0], inputs[1], out, p.m, p.n, p.k


def _tc_refuse(p, c):
    if p.m % 16 or p.n % 16 or p.k % 16:
        return f"M, N and K must be multiples of 16 (the wmma tile), got {p.m} x {p.n} x {p.k}"
    return None


VARIANTS += [
    Variant(
        key="tc/01_wmma", chapter=None, entry="wmma_gemm<{PREC}, {WARPS_M}, {WARPS_N}>", op=ops.TcGemm,
        title="WMMA: one warp per 16 x 16 tile of C, from global memory",
        params={"WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4)}, defaults={"WARPS_M": 2, "WARPS_N": 2},
        problem_params=_tc_precision,
        refuse=_tc_refuse, needs=_AMPERE_FRAGMENTS,
        launch=lambda p, c: ((cdiv(p.n, 16 * c["WARPS_N"]), cdiv(p.m, 16 * c["WARPS_M"])), 32 * c["WARPS_M"] * c["WARPS_N"], 0),
        args=_tc_operands,
    ),
    Variant(
        key="tc/03_wmma_pipelined", chapter=None,
        entry="wmma_pipelined<{PREC}, {BM}, {BN}, {WM}, {WN}, {STAGES}>", op=ops.TcGemm,
        title="WMMA fed through shared memory: block tiles, a cp.async pipeline, warp tiles of fragments",
        older_gpus=_CP_ASYNC_BELOW_80,
        params=_TC_TILES, defaults=_TC_TILE_DEFAULTS, valid=_tc_tiles_valid,
        problem_params=_tc_precision,
        refuse=_tc_refuse, needs=_AMPERE_FRAGMENTS,
        launch=_tc_tiles_launch,
        args=_tc_operands,
    ),
    Variant(
        key="tc/05_mma_sync", chapter=None,
        entry="mma_sync_gemm<{PREC}, {BM}, {BN}, {WM}, {WN}, {BK}, {STAGES}>", op=ops.TcGemm,
        title="mma.sync and ldmatrix in inline PTX, fed through a cp.async pipeline (FP16, BF16, TF32; GPU only)",
        params={**_TC_TILES, "BK": (32, 64)}, defaults={**_TC_TILE_DEFAULTS, "WN": 64, "BK": 32},
        valid=lambda c: _tc_tiles_valid(c) and _mma_sync_bytes(c, 2) <= _most_shared(),
        # 16-bit stages that fit some GPU (TF32's, twice as large, and each GPU's own limit: does_not_fit)
        problem_params=_tc_precision,
        refuse=_tc_refuse,
        needs=(Need((8, 0), "mma.sync m16n8k16 and m16n8k8 with FP16, BF16 and TF32 operands"),),
        launch=lambda p, c: ((cdiv(p.n, c["BN"]), cdiv(p.m, c["BM"])), _warp_threads(c), _mma_sync_shared(p, c)),
        args=_tc_operands,
        gpu_only="inline PTX: mma.sync and ldmatrix",
    ),
    Variant(
        key="tc/04_3xtf32_pipelined", chapter=None,
        entry="gemm_3xtf32_pipelined<{BM}, {BN}, {WM}, {WN}, {STAGES}>", op=ops.Gemm,
        title="3xTF32 fed as tc/03: FP32 SGEMM on TF32 tensor cores through a cp.async pipeline (finite inputs: "
              "an infinite one gives NaN, its tail being inf - inf)",
        params=_TC_TILES, defaults=_TC_TILE_DEFAULTS, valid=_tc_tiles_valid, needs=_TF32_FRAGMENTS,
        launch=_tc_tiles_launch,
        args=_gemm_args,
    ),
    Variant(
        key="tc/02_3xtf32", chapter=None, entry="gemm_3xtf32<{WARPS_M}, {WARPS_N}>", op=ops.Gemm,
        title="3xTF32: FP32 SGEMM on TF32 tensor cores, each operand as a head and a tail (finite inputs: an "
              "infinite one gives NaN, its tail being inf - inf)",
        params={"WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4)}, defaults={"WARPS_M": 2, "WARPS_N": 2},
        needs=_TF32_FRAGMENTS,
        launch=lambda p, c: ((cdiv(p.n, 16 * c["WARPS_N"]), cdiv(p.m, 16 * c["WARPS_M"])), 32 * c["WARPS_M"] * c["WARPS_N"], 0),
        args=_gemm_args,
    ),
]


def _hopper_refuse(p, c):
    if p.precision == "tf32":
        return "wgmma here takes FP16 or BF16; TF32 is tc/01 and tc/03"
    if p.n % 8 or p.k % 8:
        return f"N and K must be multiples of 8 (TMA copies rows of 16-byte multiples), got {p.m} x {p.n} x {p.k}"
    return None


def _hopper_args(p, inputs, out):
    from . import tma
    A, B, _, _, _, _ = _tc_operands(p, inputs, out)
    return (tma.tensor_map(A, p.precision, 128, 64), tma.tensor_map(B, p.precision, 64, 64), out, p.m, p.n, p.k)


HOPPER_SHARED = 4 * (128 * 64 + 64 * 256) * 2 + 1024      # 4 stages of A and B tiles, and room to align them

VARIANTS += [
    Variant(
        key="tc/06_wgmma_tma", chapter=None, entry="wgmma_tma_gemm<{PREC}>", op=ops.TcGemm,
        title="Hopper: TMA copies and mbarriers feed wgmma, a producer warpgroup and two consumers (GPU only)",
        problem_params=_tc_precision, refuse=_hopper_refuse, needs=_HOPPER,
        launch=lambda p, c: ((cdiv(p.n, 256), cdiv(p.m, 128)), 384, HOPPER_SHARED),
        args=_hopper_args,
        gpu_only="inline PTX for sm_90a: wgmma, TMA copies and mbarriers", options=("-arch=sm_90a",),
    ),
]

# tc/07's heads and tails (A's as it lies, B's transposed), rows padded to 16 bytes, and their tensor maps:
# made once per problem size and reused (the last two sizes are kept)
_SPLIT_BUFFERS: dict = {}


def _split_buffers(p):
    key = (p.m, p.n, p.k)
    if key not in _SPLIT_BUFFERS:
        from . import tma
        xp, ld = hw.xp, 4 * cdiv(p.k, 4)
        bufs = [xp.empty((rows, ld), dtype=xp.float32) for rows in (p.m, p.m, p.n, p.n)]
        maps = tma.as_struct(*[tma.tensor_map(b, "fp32", 128, 32, cols=p.k) for b in bufs])   # one 512-byte struct
        while len(_SPLIT_BUFFERS) >= 2:
            _SPLIT_BUFFERS.pop(next(iter(_SPLIT_BUFFERS)))
        _SPLIT_BUFFERS[key] = (bufs, maps)
    return _SPLIT_BUFFERS[key]


def _split_prepare(p, c, inputs, out):
    """Before each launch of tc/07: split A and B^T into TF32 heads and tails (two small kernels)."""
    (a_head, a_tail, b_head, b_tail), _ = _split_buffers(p)
    A, B = inputs
    ld = a_head.shape[1]
    module = _load("tc/07_3xtf32_wgmma.cu", ("-arch=sm_90a",))
    from .profiles import current
    blocks = min(cdiv(p.m * ld, 256), 32 * current().sm_count)       # a grid-stride loop: 32 blocks per SM
    module.get("split_tf32_rows")((blocks,), 256, (A, a_head, a_tail, p.m, p.k, ld))
    module.get("split_tf32_transposed")((cdiv(p.n, 32), cdiv(ld, 32)), (32, 8), (B, b_head, b_tail, p.k, p.n, ld))


VARIANTS += [
    Variant(
        key="tc/07_3xtf32_wgmma", chapter=None, entry="gemm_3xtf32_wgmma", op=ops.Gemm,
        title="3xTF32 on Hopper's pipeline: heads and tails split first, TF32 wgmma fed by TMA (GPU only; "
              "finite inputs: an infinite one gives NaN, its tail being inf - inf)",
        needs=_HOPPER, prepare=_split_prepare,
        launch=lambda p, c: ((cdiv(p.n, 128), cdiv(p.m, 128)), 384, 3 * 4 * 128 * 32 * 4 + 1024),
        args=lambda p, inputs, out: (_split_buffers(p)[1], out, p.m, p.n, p.k),
        gpu_only="inline PTX for sm_90a: wgmma, TMA copies and mbarriers", options=("-arch=sm_90a",),
    ),
]

REGISTRY = {v.key: v for v in VARIANTS}


def get(key: str) -> Variant:
    if key not in REGISTRY:
        raise KeyError(f"no variant {key!r} in the registry; there are: {', '.join(REGISTRY)}")
    return REGISTRY[key]
