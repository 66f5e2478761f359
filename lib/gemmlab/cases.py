"""The problems every kernel is checked and measured on."""
from __future__ import annotations

from . import ops


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
