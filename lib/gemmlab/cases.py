"""What the book runs: :class:`Case` (one kernel configuration, as every study, chapter helper and record names
it) and :func:`problem` (the one factory of the problems they run on), with the sizes every kernel is checked on
(:func:`awkward_problems`, multiples of no tile).

    Case("sgemm/12_interior", {"BM": 128, ...})           # its record name: 12_interior[BM=128,...]
    Case(None, name="cuBLAS")                             # the library's own call on the problem
    problem("gemm", 4096)  problem("gemm", 3000, 5000, 2000, layout="col", transa="T")  problem("gemv", 4096, trans="T")
    problem("tc", 4096, precision="bf16")  problem("dot", 1 << 24)  problem(ops.Gemm, "3000x5000x2000")

A study's table is a list of Cases; unpacked, a Case is its (key, params), as the tables of pairs always were.
tests/test_cases.py checks every table of the library: each case resolves in the registry and takes its problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ops


@dataclass(frozen=True)
class Case:
    key: str | None                          # a registry key; None: the library's own call (cuBLAS)
    params: dict = field(default_factory=dict)   # in the order given: the record's name follows it
    name: str | None = None                  # a display name (a chapter's step, a profile's row); default: ``label``
    problem: object = None                   # the problem it runs on, where the table fixes one
    chapter: str | None = None               # the chapter that shows it, where the table says

    def __post_init__(self):
        if self.key is None and self.params:
            raise ValueError(f"the library's own call takes no parameters, got {self.params}")
        object.__setattr__(self, "params", dict(self.params or {}))

    # A Case reads as the (key, params) pair the tables held before: key, params = case; case[0]; len(case)
    def __iter__(self):
        yield self.key
        yield self.params

    def __getitem__(self, i):
        return (self.key, self.params)[i]

    def __len__(self) -> int:
        return 2

    @property
    def label(self) -> str:
        """The name every record gives this configuration: 'file[P=v,...]' (the key's file, its parameters)."""
        if self.key is None:
            return self.name or "cuBLAS"
        return self.key.split("/")[1] + "[" + ",".join(f"{k}={v}" for k, v in self.params.items()) + "]"

    @property
    def shown(self) -> str:
        """What a table prints for it: its display name, else its record name."""
        return self.name or self.label


def cases(*pairs) -> list:
    """A table of Cases from (key, params) pairs (or Cases)."""
    return [p if isinstance(p, Case) else Case(*p) for p in pairs]


# --- the one problem factory ------------------------------------------------------------------------

_KINDS = {"gemm": ops.Gemm, "gemm-col": ops.Gemm, "dot": ops.Dot, "gemv": ops.Gemv, "tc": ops.TcGemm,
          "copy": ops.Copy,
          # the exercises' variations (their fields in order: sizes, then the rest by keyword)
          "strided-dot": ops.StridedDot, "gemm-bt": ops.GemmBT, "axpy": ops.Axpy, "col-sums": ops.ColumnSums,
          "transpose": ops.Transpose, "sum-squares": ops.SumSquares}


def _kind(kind):
    if isinstance(kind, type):
        names = [k for k, op in _KINDS.items() if op is kind]
        if not names:
            raise ValueError(f"no problem of {kind.__name__}; the kinds are {', '.join(_KINDS)}")
        return names[0]
    if kind not in _KINDS:
        raise ValueError(f"no problem kind {kind!r}; the kinds are {', '.join(_KINDS)}")
    return kind


def parse_size(text: str) -> tuple:
    """'4096' -> (4096,), '3000x5000x2000' -> (3000, 5000, 2000): whole numbers >= 1."""
    try:
        dims = tuple(int(x) for x in str(text).lower().split("x"))
    except ValueError:
        dims = ()
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"a size is N or MxNxK (whole numbers >= 1), got {text!r}")
    return dims


def problem(kind, *size, **form):
    """One problem of the book: ``kind`` is gemm (row-major unless ``layout="col"``), gemm-col, dot, gemv
    (column-major unless ``layout="row"``), tc (tensor-core GEMM; ``precision``) or copy, or an ops class;
    ``size`` is N (square) or its dimensions (M, N, K for GEMMs, M, N for GEMV), or one 'MxNxK' text."""
    kind = _kind(kind)
    if len(size) == 1 and isinstance(size[0], str):
        size = parse_size(size[0])
    if kind not in ("gemm", "gemm-col", "dot", "gemv", "tc", "copy"):
        return _KINDS[kind](*size, **form)
    if kind in ("dot", "copy"):
        (n,) = size
        return _KINDS[kind](n=n, **form)
    if kind == "gemv":
        m, n = size if len(size) == 2 else size * 2
        return ops.Gemv(m=m, n=n, **{"layout": "col", **form})
    if len(size) not in (1, 3):
        raise ValueError(f"a GEMM size is N or M, N, K, got {size}")
    m, n, k = size if len(size) == 3 else size * 3
    if kind == "tc":
        return ops.TcGemm(m=m, n=n, k=k, **form)
    layout = "col" if kind == "gemm-col" else form.pop("layout", "row")
    return ops.Gemm(m=m, n=n, k=k, layout=layout, **form)


# The sizes every kernel (and every exercise of the same operation) is checked on: multiples of no tile.
GEMM_SHAPES = [(1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129)]
GEMV_SHAPES = [(1, 1), (77, 1000), (1031, 45)]
DOT_SIZES = (1, 1000, 4097, 100003)


def awkward_problems(op: type, layout: str = "row") -> list:
    """Problem sizes that are multiples of no tile: every kernel is checked on these. (Tensor-core GEMMs
    take multiples of 16, the wmma tile: multiples of no block tile, in each precision.)"""
    if op is ops.TcGemm:
        return [ops.TcGemm(m=m, n=n, k=k, precision=p) for m, n, k in ((16, 16, 16), (48, 80, 32), (112, 48, 208))
                for p in ops.TC_PRECISIONS]
    if op is ops.Fp8Gemm:            # K a multiple of 128, the block scales' (and of 16 for TMA's rows); N of 8
        return [ops.Fp8Gemm(m=m, n=n, k=k, scaling=s, kind=kind, out=out)
                for m, n, k in ((1, 8, 128), (200, 136, 256), (300, 264, 384)) for s in ops.FP8_SCALINGS
                for kind in ops.FP8_KINDS for out in ("bf16", "fp32") if (kind, out) == ("e4m3", "bf16") or k == 256]
    if op is ops.Dot:
        return [ops.Dot(n=n) for n in DOT_SIZES]
    if op is ops.Gemv:
        return [ops.Gemv(m=m, n=n, trans=t, layout=layout) for m, n in GEMV_SHAPES for t in ("N", "T")]
    shapes = GEMM_SHAPES
    if layout == "row":
        return [ops.Gemm(m=m, n=n, k=k) for m, n, k in shapes]
    return [ops.Gemm(m=m, n=n, k=k, transa=ta, transb=tb, layout="col") for m, n, k in shapes[1:]
            for ta, tb in (("N", "N"), ("T", "N"), ("N", "T"), ("T", "T"))]


