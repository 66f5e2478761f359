"""Device memory that kernels keep between calls: DOT 7's, GEMV 4's and GEMM 6's workspaces, tc/07's split operands and
their tensor maps. Made once per device (or problem size) on the backend in use, and reused."""
from __future__ import annotations

from . import backend as hw
from .limits import cdiv


DOT_WORKSPACE = 1 + 4224     # DOT 7's deterministic pass: a counter, then a partial per block (GRID <= 4224)
_dot_work = {}


def _device_key():
    """Which device and stream a cached workspace belongs to: the backend, and on a GPU the current device and
    stream (kernels that count finished blocks in a workspace must not share one with a launch on another
    stream that may run at the same time)."""

    if not hw.on_gpu:
        return (hw.backend, 0, 0)
    return (hw.backend, hw.xp.cuda.runtime.getDevice(), hw.xp.cuda.get_current_stream().ptr)


def dot_workspace():
    """DOT 7's workspace on the backend in use, allocated (zeroed) once: the kernel leaves its counter at 0."""

    key = _device_key()
    if key not in _dot_work:
        _dot_work[key] = hw.xp.zeros(DOT_WORKSPACE, dtype="float32")
    return _dot_work[key]


def gemv_workspace(m: int, split: int = 32):
    """GEMV 4's and GEMV 5's split workspace for m outputs: a counter per group of at least 4 outputs (zeroed
    once; the kernels reset them) and room for ``split`` slices of partial sums, on the device and stream in
    use; grown when a larger one is asked for."""

    return _counted("gemv", cdiv(max(m, 1), 4), split * max(m, 1))


def gemm_workspace(tiles: int, floats: int):
    """GEMM 5's split-K workspace: a counter per tile of C (zeroed once; the kernel resets them) and ``floats``
    floats of partial tiles, on the device and stream in use; grown when a larger one is asked for."""

    return _counted("gemm", tiles, floats)


def stream_k_flags(count: int):
    """tc/11's flags on the device and stream in use, zeroed once (the kernel leaves them at zero); grown when
    more are asked for."""

    return _counted("stream-k", count, 1)[0]


_results = {}


def result_buffer():
    """One float32 on the device and stream in use: where gl.blas.dot writes the sum it then returns."""

    key = _device_key()
    if key not in _results:
        _results[key] = hw.xp.zeros(1, dtype="float32")
    return _results[key]


_counted_work = {}
_tc_work = {}
tc_generation = 0       # counts GEMM 6's allocations: a caller that kept views of the buffers knows they are current


def tc_buffers(*sizes):
    """GEMM 6's buffers on the device and stream in use, one per size in bytes (the packed operands and the FP32
    product), each a uint8 array of at least that many bytes, 256-byte aligned; grown when a larger one is asked
    for (``tc_generation`` then counts one more), and otherwise reused by every call."""

    global tc_generation
    key = _device_key()
    have = _tc_work.get(key)
    if have is None or len(have) != len(sizes) or any(b.size < s for b, s in zip(have, sizes)):
        tc_generation += 1
        old = have if have is not None and len(have) == len(sizes) else [None] * len(sizes)
        have = _tc_work[key] = [b if b is not None and b.size >= s else hw.xp.empty(max(s, 256), dtype="uint8")
                                for b, s in zip(old, sizes)]
    return have


def _counted(kind: str, counters: int, floats: int):
    """(counters, partials) of one kind on the device and stream in use, at least this large."""

    key = (kind, *_device_key())
    have = _counted_work.get(key)
    if have is None or have[0].size < counters or have[1].size < floats:
        counters = max(counters, 0 if have is None else have[0].size)
        floats = max(floats, 1, 0 if have is None else have[1].size)
        have = _counted_work[key] = (hw.xp.zeros(counters, dtype="uint32"), hw.xp.empty(floats, dtype="float32"))
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
