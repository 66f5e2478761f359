"""Device memory that kernels keep between calls: DOT 7's and GEMV 4's workspaces, tc/07's split operands and
their tensor maps. Made once per device (or problem size) on the backend in use, and reused."""
from __future__ import annotations

from . import backend as hw
from .limits import cdiv


DOT_WORKSPACE = 1 + 4224     # DOT 7's deterministic pass: a counter, then a partial per block (GRID <= 4224)
_dot_work = {}


def _device_key():
    """Which device a cached workspace belongs to: the backend, and the current GPU on one."""

    return (hw.backend, hw.xp.cuda.Device().id if hw.on_gpu else 0)


def dot_workspace():
    """DOT 7's workspace on the backend in use, allocated (zeroed) once: the kernel leaves its counter at 0."""

    key = _device_key()
    if key not in _dot_work:
        _dot_work[key] = hw.xp.zeros(DOT_WORKSPACE, dtype="float32")
    return _dot_work[key]


_gemv_work = {}


def gemv_workspace(m: int):
    """GEMV 4's split-column workspace for m outputs: per-row-group counters (zeroed once; the kernel resets
    them) and room for 32 slices (SPLIT at most 32) of partial sums, on the backend in use; grown when a
    larger m comes."""

    key = _device_key()
    have = _gemv_work.get(key)
    if have is None or have[1].size < 32 * max(m, 1):
        size = max(m, 1, 0 if have is None else have[1].size // 32)
        have = _gemv_work[key] = (hw.xp.zeros(cdiv(size, 32), dtype="uint32"), hw.xp.empty(32 * size, dtype="float32"))
    return have



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
