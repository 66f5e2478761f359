"""The one table of kernel variants. Tests, benchmarks, sweeps and widgets all derive from it.

Adding a variant means adding its ``.cu`` file under ``kernels/`` and one :class:`Variant` below: the
kernel tests (every legal parameter choice, at sizes that are not multiples of the tile), the checks
before timing and the benchmark tables pick it up from here.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Callable

from . import ops
from .check import FP32_TOLERANCE, check
from .loader import load


def cdiv(a: int, b: int) -> int:
    """Ceiling division: how many blocks of ``b`` cover ``a``."""
    return -(-a // b)


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

    @property
    def source(self) -> str:
        return self.key + ".cu"

    def choices(self) -> list:
        """Every legal parameter combination, as dicts."""
        names = list(self.params)
        return [dict(zip(names, values)) for values in itertools.product(*(self.params[n] for n in names))]

    def resolve(self, **params) -> dict:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ValueError(f"{self.key} has no parameter {', '.join(sorted(unknown))}; "
                             f"it takes {', '.join(self.params) or 'none'}")
        full = {**self.defaults, **params}
        for name, legal in self.params.items():
            if full.get(name) not in legal:
                raise ValueError(f"{self.key}: {name}={full.get(name)!r} is not one of the legal values {legal}")
        return full

    def kernel(self, **params):
        full = self.resolve(**params)
        return _load(self.source).get(self.entry.format(**full))

    def runner(self, problem, **params) -> Callable:
        """A function ``run(inputs, out)`` that launches this variant on ``problem``."""
        full = self.resolve(**params)
        if not isinstance(problem, self.op):
            raise ValueError(f"{self.key} computes {self.op.__name__}, not {type(problem).__name__}")
        if self.refuse is not None:
            reason = self.refuse(problem, full)
            if reason:
                raise ValueError(f"{self.key} with {full}: {reason}")
        kernel = self.kernel(**full)
        grid, block, shared = self.launch(problem, full)

        def run(inputs, out):
            kernel(grid, block, self.args(problem, inputs, out), shared_mem=shared)
        run.__name__ = f"run_{self.key.replace('/', '_')}"
        return run

    def check(self, problem, *, seed=None, **params):
        label = self.key + (" " + ",".join(f"{k}={v}" for k, v in self.resolve(**params).items())
                            if self.params else "")
        return check(self.runner(problem, **params), problem, label=label, tolerance=self.tolerance, seed=seed)


@functools.lru_cache(maxsize=None)
def _load(source: str):
    return load(source)


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
        entry="sgemm_cache_blocking<{TM}, {TN}>",
        op=ops.Gemm,
        title="cache blocking: a TM x TN register micro-tile per thread, no shared memory",
        params={"TM": (1, 2, 4, 8), "TN": (1, 2, 4, 8)},
        defaults={"TM": 8, "TN": 8},
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

REGISTRY = {v.key: v for v in VARIANTS}


def get(key: str) -> Variant:
    if key not in REGISTRY:
        raise KeyError(f"no variant {key!r} in the registry; there are: {', '.join(REGISTRY)}")
    return REGISTRY[key]
