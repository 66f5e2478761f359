"""gemmlab.blas: DOT, GEMV and GEMM on device arrays, with the reference BLAS's calling contract.

    gl.blas.dot(x, y)                                   -> float
    gl.blas.dot(x, y, out=r)                            -> r, a 1-element device array, the GPU not waited for
    gl.blas.gemv(trans, alpha, A, x, beta, y)           -> y, updated in place
    gl.blas.gemm(transa, transb, alpha, A, B, beta, C)  -> C, updated in place
    gl.blas.gemm(..., compute="tf32" | "3xtf32")        -> float32 on the tensor cores
    gl.blas.gemm(...) of float16 or BF16 A and B        -> FP32 sums, C float32 or the inputs' type
    gl.blas.gemm_strided_batched(transa, transb, alpha, A, B, beta, C)   -> C[i] for each matrix i of 3-D views

Arrays are passed as scipy.linalg.blas or CuPy users pass them (device arrays on a GPU, NumPy arrays
on the emulator), FP32 (the *s* routines; GEMM also on the tensor cores, below):

- a matrix is column-major: a Fortran-ordered array, or a Fortran-ordered view of a larger one, whose
  leading dimension (the distance between columns) may exceed its number of rows; the array that owns the memory
  of a view holds its elements side by side, in any order of its axes (C, Fortran, or what ``zeros_like`` of a
  batch of column-major matrices makes);
- a vector may be any 1-D view, with a negative step too; its increment is the step in elements, and
  zero is refused;
- ``trans`` is 'N' or 'T' (or 'C', which for real data is 'T'), in either case.

The contract of the reference BLAS: quick returns when there is nothing to do (m or n = 0; alpha = 0
and beta = 1), alpha = 0 never reads A or B, k = 0 leaves beta * C, and beta = 0 never reads the old
output, so a NaN there cannot leak. Bad arguments raise ``BlasError`` naming the routine and the
argument, as the reference BLAS's XERBLA does.

A call is planned once per form: the routine, its transposes, the arrays' types, shapes and strides, the device,
the stream and the profile in use. The plan holds what only those decide (the arguments' checks, the kernel and
its configuration, the launch geometry, the workspace); a later call of the same form checks only what can
differ (the scalars, where each array lies, whether the output overlaps an input) and launches. Nothing in a
call waits for the GPU except ``dot``'s returned float. The kernels: DOT 7 in its deterministic form (the same
bits on every run); GEMV 4 for 'N' and GEMV 5 for 'T'; GEMM 5 (Part IV's warp tiles for every transpose, split
over K where C has too few tiles). Each configuration is the one the GPU's recorded shape tuning found best
for the nearest recorded shape (``results/blas-shapes-<gpu>.json``, made by ``python -m gemmlab blas --shapes
--record``); on a GPU with none, rules from its profile (its SM count) choose (``_dot_params``, ``_gemv_params``,
``_gemm_params``). ``gl.blas.plan_of(...)`` says which was chosen, and why.

GEMM on the tensor cores (GEMM 6, kernels/blas/gemm/06_tensor_cores.cu): float16 inputs, BF16 ones (their bits as
uint16 with ``input_type='bfloat16'``: CuPy has no bfloat16), or float32 ones with ``compute='tf32'`` or
``'3xtf32'``, behind the same contract; the operands are packed into the layout Part V's kernels read (chapter
16's tc/09 on sm_90, tc/05 on sm_80 and later, tc/03 on the emulator, tc/04 for 3xTF32) and an epilogue applies
alpha, beta, C's leading dimension and type. An ordinary call (no transposes, alpha 1, beta 0, 16-byte aligned
columns) is one launch of tc/09, which writes C itself, in FP32 or the inputs' type. Below compute capability 8.0
these modes are refused by name.
"""
from __future__ import annotations

import math
import os
import struct

import numpy

from .runtime import backend as hw, tma, workspaces
from .runtime.limits import cdiv
from . import ops, registry
from .runtime.loader import data_address


class BlasError(ValueError):
    """An illegal argument to a BLAS routine (the routine and the argument are named)."""


DOT = "blas/dot/07_bandwidth"
GEMV = "blas/gemv/04_bandwidth"          # 'N'
GEMV_T = "blas/gemv/05_any_shape"        # 'T'
GEMM = "blas/gemm/05_warp_tiled"
# GEMM 5's tiles, as the shape search on the H200 found them best: the large one (256 x 128, 16-wide k steps, lanes
# 4 x 8) for C of many tiles, two of 128 x 128 (16-wide k steps with lanes 4 x 8 or 8 x 4; 8-wide with 4 x 8) and a
# small one for C of fewer tiles ...
GEMM_LARGE = {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "LANES": 4, "GROUP": 8, "MINB": 1}
GEMM_MIDDLE = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "LANES": 4, "GROUP": 8, "MINB": 2}
GEMM_MIDDLE_8X4 = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 32, "LANES": 8, "GROUP": 8, "MINB": 2}
GEMM_MIDDLE_K8 = {"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "LANES": 4, "GROUP": 8, "MINB": 2}
GEMM_SMALL = {"BM": 64, "BN": 64, "BK": 16, "WM": 32, "WN": 32, "LANES": 4, "GROUP": 8, "MINB": 2}
# ... and two for a C with one side of a few dozen (m or n of 32: the 64 x 64 tile would leave half of it idle)
GEMM_SKINNY = {"BM": 32, "BN": 128, "BK": 16, "WM": 32, "WN": 32, "LANES": 4, "GROUP": 8, "MINB": 2}
GEMM_SHORT = {"BM": 128, "BN": 32, "BK": 16, "WM": 32, "WN": 32, "LANES": 8, "GROUP": 8, "MINB": 2}
STREAMING_BYTES = 256 << 20   # below this, streaming loads (evict-first in L2) measured faster on the H200
SPLIT_WORKSPACE = 64 << 20    # the most device memory a split-K GEMM's partial tiles may take (bytes), or three
                              # times C's size where that is more
SHAPES_RECORD = "blas-shapes-"
BATCH_PER_LAUNCH = 65535      # products of a strided batch one launch of GEMM 5 takes (a grid's z)
TC_BATCH_BYTES = 256 << 20    # the most workspace GEMM 6 takes to pack and finish a batch's products together


def _dot_params(n: int, sms: int | None = None) -> dict:
    """DOT 7, deterministic: 8 blocks of 1024 threads per SM (the GPU's; the registry's nearest grid at or
    below, 1056 on 132 SMs), two 16-byte loads of each vector in flight per thread; streaming loads for vectors
    that together take less than STREAMING_BYTES."""
    grids = registry.get(DOT).params["GRID"]
    want = 8 * (sms or _sms())
    grid = max((g for g in grids if g <= want), default=min(grids))
    return {"BLOCK": 1024, "UNROLL": 2, "GRID": grid, "DET": 1, "CS": int(8 * n < STREAMING_BYTES)}


def _sms() -> int:
    """The SM count of the GPU in use (its profile: read from the device, or GEMMLAB_DEVICE's; on the
    emulator, whose launches have no SMs to fill, the emulated GPU's)."""
    from .runtime.profiles import current
    return current().sm_count


def _gemm_split_limit(m: int, n: int, tile: dict) -> int:
    """The largest SPLITK whose partial tiles fit in SPLIT_WORKSPACE or three times C's size, the larger."""
    tiles = cdiv(m, tile["BM"]) * cdiv(n, tile["BN"])
    return max(1, max(SPLIT_WORKSPACE, 12 * m * n) // (4 * tiles * tile["BM"] * tile["BN"]))


GEMM_SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
# per-SM speed of each tile relative to the large one, and the cost of meeting partial tiles, in k steps of
# one element of C (a write and SPLITK reads of 4 bytes against an FMA per k): the rules' model, for GPUs
# without a shape record
_TILE_SPEED = ((GEMM_LARGE, 1.0), (GEMM_MIDDLE, 0.97), (GEMM_SMALL, 0.8), (GEMM_SKINNY, 0.6), (GEMM_SHORT, 0.6))
_SPLIT_COST = 64


def _gemm_params(m: int, n: int, k: int, sms: int | None = None) -> dict:
    """GEMM 5's configuration by rule: of the three tiles and the SPLITK values, the one a model of waves says
    is fastest on ``sms`` SMs (the GPU in use's, unless given). A block of a tile runs at the tile's per-SM
    speed shared among the MINB blocks an SM holds; a launch takes as many waves as its blocks need of
    sms * MINB places; splitting K divides a block's work by SPLITK and adds the partial tiles' traffic. So the
    large tile wins where C has a wave of them (4096^2), smaller tiles or split-K where it has not (64 x 4096,
    1536^2 with a long K)."""
    sms = sms or _sms()
    best = None
    for tile, speed in _TILE_SPEED:
        tiles = cdiv(m, tile["BM"]) * cdiv(n, tile["BN"])
        places = sms * tile["MINB"]
        limit = _gemm_split_limit(m, n, tile)
        for split in GEMM_SPLITS:
            if split > 1 and (split > limit or k < 256 * split):
                continue
            waves = cdiv(tiles * split, places)
            steps = cdiv(k, split) + (_SPLIT_COST * split if split > 1 else 0)
            cost = waves * tile["BM"] * tile["BN"] * steps * tile["MINB"] / speed
            if best is None or cost < best[0] * 0.98:        # a tie goes to the earlier: larger tile, less split
                best = (cost, {**tile, "SPLITK": split})
    return best[1]


def _gemv_params(m: int, n: int, trans: str, sms: int | None = None) -> dict:
    """GEMV by rule, from the shape of op(A) (out_len outputs of in_len terms each) and the SM count: enough
    blocks for a few per SM (2 x sms) without slicing a column or row below 64 terms of 16-byte loads.
    'N' (GEMV 4): 4 rows per lane, the columns cut into SPLIT slices; 'T' (GEMV 5): LANES lanes a column, as
    few as keep a lane's UNROLL loads busy, and the column's length cut into SPLIT slices. Streaming loads
    when A takes less than STREAMING_BYTES."""
    sms = sms or _sms()
    cs = int(4 * m * n < STREAMING_BYTES)
    want = 2 * sms
    if trans == "N":
        # rows of 4 floats a lane (one 16-byte load), or 1 where A has so few rows that 4 would idle lanes
        vec = 4 if m > 64 else 1
        warps = 8 if vec == 4 else 32
        unroll = 8 if n >= 8 * 8 * 2 else 4
        groups, length = cdiv(m, 32 * vec), n
        split = 1
        while split < 128 and groups * split * 2 <= want and length // (split * 2) >= 64:
            split *= 2
        return {"WARPS": warps, "UNROLL": unroll, "SPLIT": split, "VEC": vec, "CS": cs}
    outputs, length = n, m
    lanes = 32
    while lanes > 4 and length < lanes * 4 * 4 * 2:        # a column shorter than 2 rounds of the lanes' loads
        lanes //= 2
    blocks = cdiv(outputs, 8 * 32 // lanes)
    split = 1
    while split < 128 and blocks * split * 2 <= want and length // (split * 2) >= 64 * lanes // 8:
        split *= 2
    return {"WARPS": 8, "LANES": lanes, "UNROLL": 4, "SPLIT": split, "CS": cs}


# --- the recorded shape tuning of the GPU in use ---------------------------------------------------------

_RECORD = {}          # gpu slug -> the record's winners by routine (or None: no record)


def _tuning():
    """The shape record of the GPU in use: {routine: [(shape, params), ...]}; None with no record (or none
    that holds this GPU's candidates), or on the emulator."""
    if not hw.on_gpu:
        return None
    from . import record
    name = SHAPES_RECORD + record.gpu_slug()
    if name not in _RECORD:
        try:
            data = record.load(name)
        except FileNotFoundError:
            data = None
        _RECORD[name] = None if data is None else {
            routine: [(tuple(w["shape"]), dict(w["params"])) for w in rows]
            for routine, rows in data["winners"].items()}
    return _RECORD[name]


FORM_PENALTY = 1.0     # how far (squared log2 sizes) another transpose's recorded point counts as being


def _nearest(rows, shape, strict: bool = False):
    """The recorded winner at the shape nearest to ``shape``: sizes compared as logarithms (a factor of 2 in one
    dimension is a distance of 1); a point of other transposes counts as FORM_PENALTY further (the tile a shape
    wants depends on its sizes more than on its transposes), or not at all when ``strict`` (GEMV's 'N' and 'T'
    are different kernels)."""
    size, form = shape[:-1], shape[-1]
    best = None
    for recorded, params in rows:
        if recorded[-1] != form and strict:
            continue
        d = sum((math.log2(max(a, 1)) - math.log2(max(b, 1))) ** 2 for a, b in zip(recorded[:-1], size))
        d += 0.0 if recorded[-1] == form else FORM_PENALTY
        if best is None or d < best[0]:
            best = (d, recorded, params)
    return best


def choose(routine: str, *shape) -> tuple:
    """(kernel key, params, why) for ``routine`` ('dot', 'gemv', 'gemm') at ``shape``: (n,) for dot,
    (m, n, trans) for gemv, (m, n, k, transa + transb) for gemm. From the GPU's shape record when it has one,
    else by rule."""
    if routine == "dot":
        return DOT, _dot_params(shape[0]), "rule"
    tuned = _tuning()
    if routine == "gemv":
        m, n, t = shape
        key = GEMV if t == "N" else GEMV_T
        if tuned and tuned.get("gemv"):
            near = _nearest(tuned["gemv"], (m, n, t), strict=True)
            if near is not None:
                return key, {**near[2], "CS": int(4 * m * n < STREAMING_BYTES)}, f"recorded at {list(near[1])}"
        return key, _gemv_params(m, n, t), "rule"
    m, n, k, form = shape
    if tuned and tuned.get("gemm"):
        near = _nearest(tuned["gemm"], (m, n, k, form))
        if near is not None:
            params = dict(near[2])
            params["SPLITK"] = max(s for s in GEMM_SPLITS if s <= min(params.get("SPLITK", 1),
                                                                       _gemm_split_limit(m, n, params)))
            return GEMM, params, f"recorded at {list(near[1])}"
    return GEMM, _gemm_params(m, n, k), "rule"


def _fail(routine, position, name, why):
    raise BlasError(f"{routine}: argument {position} ({name}) {why}")


def _root(routine, position, name, a):
    """(memory, offset, span): the memory the kernels are given for a view, the view's first element's offset
    into it (in elements), and the bytes [lo, hi) the view's elements occupy.

    Kernels take raw memory: a flat, contiguous span of the array that owns the view's memory, from just below
    the view's lowest element to its highest. A float32 view of memory owned by an array of another type is
    refused (its owner is not float32).
    """
    root = _owner(routine, position, name, a)
    flat = _flat(root)
    # the kernels index from a base with 32-bit offsets: pass the memory the view spans, from its lowest
    # element (rounded down to 256 bytes, the allocation's alignment, so that offset % 4 still says whether
    # 16-byte loads are aligned) to its highest: a view far into a large array needs only a small offset, and
    # only the bytes a launch may touch are handed over (the emulator copies what it is given)
    at = data_address(a)
    if a.size == 0:
        return flat[:0], 0, (at, at)
    root_at = data_address(root)
    span = _extent(a, at)
    lo, hi = ((e - root_at) // a.itemsize for e in span)
    base = lo - lo % (256 // a.itemsize)
    off = (at - root_at) // a.itemsize - base
    if off >= 2 ** 31:
        _fail(routine, position, name, f"spans {off:,} elements from its lowest to its first element, past the "
                                       "2^31 - 1 that the kernels' 32-bit offsets reach")
    return flat[base:hi], off, span


def _array(routine, position, name, a, ndim, dtypes=None):
    """``a`` is a device array of ``ndim`` dimensions and one of ``dtypes`` (default: float32, the s routines')."""
    array_type = hw.xp.ndarray
    if not isinstance(a, array_type):
        if isinstance(a, numpy.ndarray):
            _fail(routine, position, name, "is a NumPy array in host memory; pass a device array (gl.xp.asarray)")
        _fail(routine, position, name, f"must be an array, got {type(a).__name__}")
    if a.ndim != ndim:
        _fail(routine, position, name, f"must have {ndim} dimension{'s' if ndim > 1 else ''}, it has {a.ndim}")
    if dtypes is None and a.dtype != numpy.float32:
        _fail(routine, position, name, f"must be float32 (gemmlab.blas implements the s routines), it is {a.dtype}")
    if dtypes is not None and a.dtype not in dtypes:
        _fail(routine, position, name, f"must be {' or '.join(str(d) for d in dtypes)}, it is {a.dtype}")


def _vector(routine, position, name, v):
    """(memory, offset, inc, span) of a 1-D view (:func:`_root`)."""
    _array(routine, position, name, v, 1)
    if v.size >= 2 ** 31:
        _fail(routine, position, name, f"has {v.size:,} elements; the kernels' 32-bit sizes reach 2^31 - 1")
    if v.size > 1 and v.strides[0] == 0:
        _fail(routine, position, name, "has increment 0 (a broadcast view); BLAS increments must not be zero")
    if v.strides[0] % v.itemsize:
        _fail(routine, position, name, "has a step that is not a whole number of elements")
    inc = (v.strides[0] // v.itemsize) if v.size > 1 else 1
    if abs(inc) >= 2 ** 31:
        _fail(routine, position, name, f"has increment {inc:,}, past the 2^31 - 1 that the kernels' 32-bit "
                                       "increments reach")
    root, off, span = _root(routine, position, name, v)
    return root, off, inc, span


def _matrix(routine, position, name, a, dtypes=None, batched=False):
    """(memory, offset, ld, span) of a column-major matrix view (:func:`_root`); with ``batched``, of a batch of
    them: a 3-D view whose first index picks the matrix (``ld`` is then the pair (ld, stride between matrices, in
    elements))."""
    _array(routine, position, name, a, 3 if batched else 2, dtypes)
    rows, cols = a.shape[-2:]
    stride = 0
    if batched:
        if a.shape[0] > 1 and (a.strides[0] < 0 or a.strides[0] % a.itemsize):
            _fail(routine, position, name, f"has a stride between matrices of {a.strides[0]} bytes; it must be a "
                                           "whole number of elements, zero or more")
        stride = a.strides[0] // a.itemsize if a.shape[0] > 1 else 0
        if stride >= 2 ** 40:
            _fail(routine, position, name, f"has matrices {stride:,} elements apart, too far for 64-bit offsets here")
    if a.size == 0:
        ld = max(rows, 1)
        return a, 0, ((ld, stride) if batched else ld), (0, 0)    # nothing is read or written: any layout will do
    s0, s1 = a.strides[-2:]
    if rows > 1 and s0 != a.itemsize:
        if batched:
            _fail(routine, position, name, "must hold column-major matrices (in each, consecutive rows adjacent in "
                                           "memory), as x.transpose(0, 2, 1) of a C-ordered (batch, cols, rows) "
                                           "array does; make one with gl.xp.ascontiguousarray(x.transpose(0, 2, 1))"
                                           ".transpose(0, 2, 1)")
        _fail(routine, position, name, "must be column-major (Fortran-ordered: consecutive rows adjacent in "
                                       "memory); pass gl.xp.asfortranarray(...) or a Fortran-ordered view")
    ld = s1 // a.itemsize if cols > 1 else max(rows, 1)
    if cols > 1 and (s1 % a.itemsize or ld < max(rows, 1)):
        _fail(routine, position, name, f"has leading dimension {s1 / a.itemsize:g} < rows = {rows} (lda >= max(1, m))")
    if ld >= 2 ** 31 or rows >= 2 ** 31 or cols >= 2 ** 31:
        _fail(routine, position, name, f"is {rows:,} x {cols:,} with leading dimension {ld:,}: the kernels' 32-bit "
                                       "sizes and leading dimensions reach 2^31 - 1")
    root, off, span = _root(routine, position, name, a)
    return root, off, ((ld, stride) if batched else ld), span


def _overlap_at(stride: int, ld: int, rows: int, cols: int, batch: int):
    """The first matrix t of a batch that shares an element with matrix 0 (None: none does): matrix t's element
    (r, c) lies at t stride + r + c ld, so t and 0 meet where t stride = dr + dc ld with |dr| < rows, |dc| < cols."""
    if stride >= (cols - 1) * ld + rows:        # one matrix's span apart or more: none meets another
        return None
    for t in range(1, batch):
        d = t * stride
        for dc in {d // ld, d // ld + 1}:
            if abs(dc) < cols and abs(d - dc * ld) < rows:
                return t
    return None


def _output(routine, position, name, a):
    """An output must be writable: a read-only array is refused before anything runs."""
    flags = getattr(a, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True):
        _fail(routine, position, name, "is read-only (flags.writeable is False: a read-only memory map, a buffer "
                                       "over bytes, or setflags(write=False)); the result is written into it: "
                                       "pass a writable array")


def _extent(a, at: int | None = None) -> tuple:
    """[first byte, one past the last byte) of the memory an array's elements occupy (``at``: its address,
    when the caller has it)."""
    lo = hi = data_address(a) if at is None else at
    for size, stride in zip(a.shape, a.strides):
        if size == 0:
            return lo, lo
        reach = (size - 1) * stride
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return lo, hi + a.itemsize


_TOO_HARD = getattr(numpy, "exceptions", numpy).TooHardError      # (numpy.exceptions from NumPy 1.25)


class _View:
    """An address, a shape and strides as NumPy reads an array's: numpy.asarray of one is never read."""
    def __init__(self, at, a):
        self.__array_interface__ = {"data": (at, True), "shape": tuple(a.shape), "strides": tuple(a.strides),
                                    "typestr": a.dtype.str, "version": 3}


def _proxy(a):
    """A NumPy array with ``a``'s address, shape and strides, never read: what numpy.shares_memory needs to
    decide exactly, by arithmetic on the addresses, whether two views have an element in common."""
    return numpy.asarray(_View(data_address(a), a))


def _distinct(routine, out, inputs):
    """Refuse an output that shares memory with an input (the reference BLAS leaves the result undefined;
    a kernel that reads an input while another block writes the output returns garbage). Each is (position,
    name, array, span); views whose byte ranges do not meet pass at once; for those that do, the exact test
    decides (interleaved views pass)."""
    (po, no, o, (olo, ohi)), rest = out, inputs
    for pi, ni, a, (alo, ahi) in rest:
        if a.size == 0 or o.size == 0 or ahi <= olo or ohi <= alo:
            continue
        try:
            shared = numpy.shares_memory(_proxy(o), _proxy(a), max_work=10 ** 6)
        except _TOO_HARD:
            shared = True
        if shared:
            _fail(routine, po, no, f"shares memory with argument {pi} ({ni}); the output must not overlap an "
                                   f"input: pass a copy of {ni} (or a separate output)")


def _trans(routine, position, name, flag):
    if not isinstance(flag, str) or flag.upper() not in ("N", "T", "C"):
        _fail(routine, position, name, f"must be 'N', 'T' or 'C' (either case), got {flag!r}")
    return "N" if flag.upper() == "N" else "T"


def _scalar(routine, position, name, value):
    """The scalar as the s routines compute with it: rounded to float32 (so a value that rounds to zero is a
    zero, as in the reference BLAS). A finite value that float32 cannot hold is refused; infinities and NaN
    are passed on, for the reference BLAS's arithmetic to decide what they do."""
    if isinstance(value, bool) or not isinstance(value, (int, float, numpy.floating, numpy.integer)):
        _fail(routine, position, name, f"must be a real number, got {type(value).__name__}")
    try:
        wide = float(value)                        # an int beyond any float overflows here: refused below
    except OverflowError:
        wide = None
    with numpy.errstate(over="ignore"):
        narrow = float("inf") if wide is None else float(numpy.float32(wide))
    if (wide is None or math.isfinite(wide)) and math.isinf(narrow):
        _fail(routine, position, name, f"= {value!r} is beyond float32's range (largest "
                                       f"{float(numpy.finfo(numpy.float32).max)!r}): the s routines compute in "
                                       "float32, where it would become infinite")
    return narrow


def _scale(y, beta):
    """y = beta * y, with beta = 0 meaning zeros (the old values, NaN included, are not read)."""
    if beta == 0.0:
        y.fill(0)
    elif beta != 1.0:
        y *= numpy.float32(beta)


# --- plans: what a call of one form needs, made once ------------------------------------------------------

_PLANS: dict = {}
PLAN_LIMIT = 1024         # forms kept (the oldest go first)
_FLAGS = {"N": "N", "n": "N", "T": "T", "t": "T", "C": "T", "c": "T"}
_PACK = struct.Struct("f")


class Plan:
    """One form of a call, planned: the kernel and its configuration (``key``, ``params``, ``why`` it was
    chosen), the launch (``grid``, ``block``, ``shared``), the workspace arguments and, per array argument, where
    its elements lie relative to its first one (``extents``). ``send`` launches it on a GPU (None on the
    emulator, which takes the checked call)."""
    __slots__ = ("routine", "key", "params", "why", "kernel", "grid", "block", "shared", "extra", "extra_ptrs",
                 "send", "extents", "fixed", "problem", "form", "mode", "batch", "steps")

    def __repr__(self):
        return (f"<gemmlab.blas plan {self.routine}: {self.key} {self.params} ({self.why}); grid {self.grid}, "
                f"block {self.block}, {self.shared} B shared>")


def _form(a):
    """What a plan depends on of an array: its type, dtype, shape and strides (None for a non-array: no plan)."""
    try:
        return (a.__class__, a.dtype, a.shape, a.strides)
    except AttributeError:
        return None


def _context() -> tuple:
    """What a plan depends on beyond its arguments: the backend, the device and stream, the profile asked for."""
    env = os.environ.get("GEMMLAB_DEVICE")
    if hw.on_gpu:
        cuda = hw.xp.cuda
        return (cuda.runtime.getDevice(), cuda.get_current_stream().ptr, env)
    return (hw.backend, env)


def clear_plans():
    """Forget every plan and the shape record read (after a new ``blas --shapes --record``, say)."""
    _PLANS.clear()
    _RECORD.clear()


def _keep(key, plan):
    if len(_PLANS) >= PLAN_LIMIT:
        _PLANS.pop(next(iter(_PLANS)))
    _PLANS[key] = plan
    return plan


def _make_plan(routine, problem, choice, arrays) -> Plan:
    key, params, why = choice
    v = registry.get(key)
    full = v.resolve(**params)
    plan = Plan()
    plan.routine, plan.key, plan.params, plan.why, plan.problem = routine, key, full, why, problem
    plan.steps = None
    plan.kernel = v.kernel(problem, **full)
    plan.grid, plan.block, plan.shared = v.launch(problem, full)
    plan.extra = tuple(v.workspace(problem, full)) if v.workspace is not None else ()
    plan.send = plan.kernel.launcher(plan.grid, plan.block, plan.shared) if hw.on_gpu else None
    plan.extra_ptrs = tuple(0 if w is None else data_address(w) for w in plan.extra)
    plan.extents = tuple(_extent(a, 0) for a in arrays)     # relative to each one's first element
    return plan


def _dense_order(a):
    """The axes of ``a`` from the largest stride to the smallest when its elements fill one block of memory with
    no gap (C or Fortran order, or any other order of its axes: what zeros_like of a transposed view makes), with
    no negative stride; else None."""
    if a.flags.c_contiguous:
        return tuple(range(a.ndim))
    if a.flags.f_contiguous:
        return tuple(reversed(range(a.ndim)))
    order = tuple(sorted(range(a.ndim), key=lambda i: (-a.strides[i], -i)))
    step = a.itemsize
    for i in reversed(order):
        if a.shape[i] > 1 and a.strides[i] != step:
            return None
        step *= a.shape[i]
    return order


def _owner(routine, position, name, a):
    """The array that owns a view's memory: its elements must fill one block of memory, in any order of its axes
    (a C- or Fortran-ordered array, or zeros_like of a batch of column-major matrices). A float32 view of memory
    owned by an array of another type is refused (its owner is not float32)."""
    root = a
    while getattr(root, "base", None) is not None and isinstance(root.base, type(a)):
        root = root.base
        if root.dtype != a.dtype:
            _fail(routine, position, name, f"is a {a.dtype} view of a {root.dtype} array; gemmlab.blas takes "
                                           f"arrays of their own type: pass a copy (gl.xp.array(..., dtype='{a.dtype}'))")
    if _dense_order(root) is None:
        what = "is a view of an array" if root is not a else "is an array"
        _fail(routine, position, name, f"{what} whose elements do not fill one block of memory (strides "
                                       f"{tuple(root.strides)} bytes for shape {tuple(root.shape)}): the kernels take "
                                       "memory owned by an array whose elements lie side by side, in any order of its "
                                       "axes; pass a copy (gl.xp.asfortranarray for a matrix)")
    return root


def _flat(root):
    """The memory of an owner (:func:`_owner`) as a 1-D view, in the order of its addresses."""
    return root.transpose(_dense_order(root)).reshape(-1)


def _place(routine, plan, arrays, output: bool = True) -> list:
    """What every call checks and finds out per call, for ``arrays`` ((position, name, array), ..., the output
    last when ``output``): each array's owner (:func:`_owner`), where it lies, and whether the output shares memory
    with an input (:func:`_distinct`, once the byte ranges meet). Returns (memory, offset) per array: a base
    address on a GPU (:func:`_where`), the owner's flat memory on the emulator (:func:`_root`)."""
    placed, spans = [], []
    for (position, name, a), extent in zip(arrays, plan.extents):
        if hw.on_gpu:
            _owner(routine, position, name, a)
            memory, off, span = _where(routine, position, name, a, extent)
        else:
            memory, off, span = _root(routine, position, name, a)
        placed.append((memory, off))
        spans.append((position, name, a, span))
    if output:
        _overlap(routine, spans[-1], spans[:-1])
    return placed


def _no_kernel(routine, arrays) -> Plan:
    """The plan of a form that runs no kernel (a dimension is 0): the per-call checks still apply."""
    plan = Plan()
    plan.routine, plan.send, plan.kernel, plan.steps = routine, None, None, None
    plan.extents = tuple(_extent(a, 0) for a in arrays)
    return plan


def _where(routine, position, name, a, extent):
    """(base address, offset in elements, [lo, hi) bytes) of an array for a launch: the base is its lowest
    element's address rounded down to 256 bytes (so the offset's residue mod 4 says whether 16-byte loads are
    aligned, as :func:`_root`'s), the offset its first element's distance from there."""
    at = a.data.ptr if hw.on_gpu else data_address(a)
    lo, hi = at + extent[0], at + extent[1]
    base = lo - lo % 256
    off = (at - base) // a.itemsize
    if off >= 2 ** 31:
        _fail(routine, position, name, f"spans {off:,} elements from its lowest to its first element, past the "
                                       "2^31 - 1 that the kernels' 32-bit offsets reach")
    return base, off, (lo, hi)


def _overlap(routine, out, inputs):
    """:func:`_distinct` once the byte ranges meet (most calls: they do not)."""
    (_, _, o, (olo, ohi)) = out
    if any(a.size and o.size and alo < ohi and olo < ahi for _, _, a, (alo, ahi) in inputs):
        _distinct(routine, out, inputs)


def _flag(routine, position, name, flag):
    t = _FLAGS.get(flag) if flag.__class__ is str else None
    return t if t is not None else _trans(routine, position, name, flag)


def _real(routine, position, name, value):
    """:func:`_scalar` with the common case (a Python float) first."""
    if value.__class__ is float:
        narrow = _PACK.unpack(_PACK.pack(value))[0]
        if narrow - narrow == 0.0 or value - value != 0.0:       # finite, or not finite to begin with
            return narrow
    return _scalar(routine, position, name, value)


def plan_of(routine: str, *args, **kw):
    """The plan a call ``gl.blas.<routine>(*args)`` takes (made now if it is new): its kernel, configuration,
    launch and why it was chosen. Nothing runs."""
    routine = {"sdot": "dot", "sgemv": "gemv", "sgemm": "gemm"}.get(routine, routine)
    if routine == "dot":
        return _dot_plan(*args[:2])[0]
    if routine == "gemv":
        return _gemv_plan(*args)[0]
    if routine == "gemm":
        return _gemm_plan(*args, **kw)[0]
    if routine == "gemm_strided_batched":
        return _gemm_plan(*args, batched=True, **kw)[0]
    raise ValueError(f"routine must be 'dot', 'gemv', 'gemm' or 'gemm_strided_batched', got {routine!r}")


def configure(routine: str, key: str, params: dict, *args, **kw) -> Plan:
    """Plan the call ``gl.blas.<routine>(*args)`` with a given kernel and configuration instead of the chosen one
    (the shape study's candidates), and make it the plan such calls take until :func:`use` installs another or
    :func:`clear_plans` forgets them. The arguments are checked as a call checks them."""
    choice = (key, params, "configured")
    routine = {"sdot": "dot", "sgemv": "gemv", "sgemm": "gemm"}.get(routine, routine)
    if routine == "dot":
        plan = _dot_plan(*args[:2], choice=choice)[0]
    elif routine == "gemv":
        plan = _gemv_plan(*args, choice=choice)[0]
    elif routine == "gemm":
        plan = _gemm_plan(*args, choice=choice, **kw)[0]
    else:
        raise ValueError(f"routine must be 'dot', 'gemv' or 'gemm', got {routine!r}")
    if plan is None:
        raise ValueError(f"{routine} of these arguments runs no kernel (nothing to compute): nothing to configure")
    return plan


def use(plan: Plan) -> None:
    """Make ``plan`` (from :func:`configure`) the one its form of call takes."""
    _PLANS[plan.form] = plan


# --- the routines ---------------------------------------------------------------------------------------

def _dot_plan(x, y, choice=None, out=None):
    key = ("dot", _form(x), _form(y), _form(out) if out is not None else None, _context())
    plan = _PLANS.get(key) if choice is None else None
    if plan is None:
        _vector("sdot", 1, "x", x)
        _vector("sdot", 2, "y", y)
        if x.size != y.size:
            _fail("sdot", 2, "y", f"has {y.size} elements, x has {x.size}")
        if out is not None:
            _array("sdot", 3, "out", out, getattr(out, "ndim", 1))
            if out.size != 1 or not out.flags.c_contiguous:
                _fail("sdot", 3, "out", f"must be a contiguous float32 array of one element, it has shape {out.shape}")
            _output("sdot", 3, "out", out)
        n = x.size
        arrays = (x, y) if out is None else (x, y, out)
        plan = _no_kernel("sdot", arrays) if n == 0 else _make_plan("sdot", ops.Dot(n=n), choice or choose("dot", n),
                                                                     arrays)
        plan.fixed = (x.strides[0] // 4 if n > 1 else 1, y.strides[0] // 4 if n > 1 else 1, n)
        plan.form = key
        _keep(key, plan)
    return plan, key


def dot(x, y, out=None):
    """sum_i x_i y_i over two float32 vectors of equal length (any nonzero increments).

    Returns a float (waiting for the GPU, as cuBLAS's host pointer mode does); with ``out`` (a float32 device
    array of one element), writes the sum there and returns ``out`` at once (cuBLAS's device pointer mode)."""
    plan, _ = _dot_plan(x, y, out=out)
    if plan.kernel is None:
        if out is None:
            return 0.0
        out.fill(0)
        return out
    if out is not None and not hw.on_gpu:
        _output("sdot", 3, "out", out)
    arrays = ((1, "x", x), (2, "y", y)) + (() if out is None else ((3, "out", out),))
    (xm, xo), (ym, yo), *_ = _place("sdot", plan, arrays, output=out is not None)
    result = workspaces.result_buffer() if out is None else out
    incx, incy, n = plan.fixed
    if plan.send is not None:
        plan.send((xm, xo, incx, ym, yo, incy, n, result.data.ptr, *plan.extra_ptrs))
    else:
        plan.kernel(plan.grid, plan.block, (xm, xo, incx, ym, yo, incy, n, result.reshape(1), *plan.extra),
                    shared_mem=plan.shared)
    if out is not None:
        return out
    return float(hw.to_host(result)[0])


def _gemv_plan(trans, alpha, A, x, beta, y, choice=None):
    t = _flag("sgemv", 1, "trans", trans)
    key = ("gemv", t, _form(A), _form(x), _form(y), _context())
    plan = _PLANS.get(key) if choice is None else None
    if plan is None:
        _scalar("sgemv", 2, "alpha", alpha)
        _, _, lda, _ = _matrix("sgemv", 3, "A", A)
        _vector("sgemv", 4, "x", x)
        _scalar("sgemv", 5, "beta", beta)
        _vector("sgemv", 6, "y", y)
        _output("sgemv", 6, "y", y)
        m, n = A.shape
        need_x, need_y = (n, m) if t == "N" else (m, n)
        if x.size != need_x:
            _fail("sgemv", 4, "x", f"has {x.size} elements; op(A) has {need_x} columns")
        if y.size != need_y:
            _fail("sgemv", 6, "y", f"has {y.size} elements; op(A) has {need_y} rows")
        if m == 0 or n == 0:
            plan = _no_kernel("sgemv", (A, x, y))
        else:
            plan = _make_plan("sgemv", ops.Gemv(m=m, n=n, trans=t, layout="col"), choice or choose("gemv", m, n, t),
                              (A, x, y))
        incx = x.strides[0] // 4 if x.size > 1 else 1
        incy = y.strides[0] // 4 if y.size > 1 else 1
        plan.fixed = (lda, incx, incy, need_y, need_x)
        plan.form = key
        _keep(key, plan)
    return plan, t


def gemv(trans, alpha, A, x, beta, y):
    """y = alpha * op(A) x + beta * y; op(A) = A or A^T; A column-major m x n. Returns y."""
    plan, t = _gemv_plan(trans, alpha, A, x, beta, y)
    alpha = _real("sgemv", 2, "alpha", alpha)
    beta = _real("sgemv", 5, "beta", beta)
    if not hw.on_gpu:
        _output("sgemv", 6, "y", y)
    (am, ao), (xm, xo), (ym, yo) = _place("sgemv", plan, ((3, "A", A), (4, "x", x), (6, "y", y)))
    if plan.kernel is None or (alpha == 0.0 and beta == 1.0):
        return y
    if alpha == 0.0:
        _scale(y, beta)
        return y
    lda, incx, incy, rows, cols = plan.fixed
    args = (am, ao, lda, xm, xo, incx, ym, yo, incy, rows, cols, alpha, beta)
    if plan.send is not None:
        plan.send((*args, *plan.extra_ptrs))
    else:
        plan.kernel(plan.grid, plan.block, (*args, *plan.extra), shared_mem=plan.shared)
    return y


# GEMM's arithmetic: the s routine (FP32 on the CUDA cores), float32 on the tensor cores (compute=), 16-bit inputs
COMPUTES = ("tf32", "3xtf32")
INPUT_TYPES = ("float16", "bfloat16")
_UINT16, _FLOAT16 = numpy.dtype(numpy.uint16), numpy.dtype(numpy.float16)
# C's type: float32, or the inputs' own (the epilogue's OUT: 0 FP32, 1 FP16, 2 BF16 bits)
_OUT = {"fp32": 0, "fp16": 1, "bf16": 2}


def _is_bf16(dtype) -> bool:
    return dtype.name == "bfloat16"                     # ml_dtypes' bfloat16 (NumPy arrays: the emulator)


def _mode(batched, A, B, C, compute, input_type) -> tuple:
    """(mode, out): the arithmetic a GEMM call asks for and C's kind. mode is 'fp32' (sgemm), 'tf32' or '3xtf32'
    (float32 inputs on the tensor cores), 'fp16' or 'bf16' (16-bit inputs, products exact, sums in FP32, as
    cublasGemmEx with CUBLAS_COMPUTE_32F); out is 'fp32' or the inputs' type. BF16 arrays are the bits of
    bfloat16 values in uint16 (:func:`gemmlab.ops.to_bf16_bits`; CuPy has no bfloat16) with
    input_type='bfloat16', or arrays of ml_dtypes' bfloat16 on the emulator."""
    plain = getattr(A, "dtype", None) == numpy.float32 and compute is None and input_type is None
    name = _routine("fp32" if plain else "ex", batched)
    if compute is not None and compute not in COMPUTES:
        _fail(name, 8, "compute", f"must be None (FP32), 'tf32' or '3xtf32', got {compute!r}")
    if input_type is not None and input_type not in INPUT_TYPES:
        _fail(name, 9, "input_type", f"must be None (A's dtype decides), 'float16' or 'bfloat16', got {input_type!r}")
    for position, label, a in ((4, "A", A), (5, "B", B), (7, "C", C)):
        if not hasattr(a, "dtype"):
            _array(name, position, label, a, 2)          # refused there, as an array is
    dtype = A.dtype
    if input_type == "bfloat16" and dtype not in (_UINT16,) and not _is_bf16(dtype):
        _fail(name, 4, "A", f"must hold BF16 values as their bits (uint16; gl.ops.to_bf16_bits) for "
                            f"input_type='bfloat16', it is {dtype}")
    if input_type == "float16" and dtype != _FLOAT16:
        _fail(name, 4, "A", f"must be float16 for input_type='float16', it is {dtype}")
    if dtype == numpy.float32:
        mode = compute or "fp32"
    elif dtype == _FLOAT16:
        mode = "fp16"
    elif _is_bf16(dtype) or (dtype == _UINT16 and input_type == "bfloat16"):
        mode = "bf16"
    elif dtype == _UINT16:
        _fail(name, 4, "A", "is uint16: if it holds BF16 values as their bits (gl.ops.to_bf16_bits), say so with "
                            "input_type='bfloat16'")
    else:
        _fail(name, 4, "A", f"must be float32, float16 or BF16 bits (uint16, input_type='bfloat16'), it is {dtype}")
    name = _routine(mode, batched)
    if B.dtype != dtype:
        _fail(name, 5, "B", f"must be {dtype} as A is, it is {B.dtype}")
    if mode in ("fp16", "bf16") and compute is not None:
        _fail(name, 8, "compute", f"applies to float32 inputs; {mode.upper()} inputs are multiplied exactly and "
                                  "summed in FP32 (leave compute=None)")
    if C.dtype not in (numpy.dtype(numpy.float32), dtype):
        _fail(name, 7, "C", f"must be float32 or {dtype} (the inputs' type), it is {C.dtype}")
    out = "fp32" if C.dtype == numpy.float32 else mode
    return mode, out


def _routine(mode, batched) -> str:
    """The name a GEMM call's errors give: sgemm for FP32, gemm_ex (cublasGemmEx's) for the others."""
    return ("sgemm" if mode == "fp32" else "gemm_ex") + ("_strided_batched" if batched else "")


# the multiples GEMM 6 pads each kernel's row-major M, N and K to (its tiles; tc/06's TMA rows of 16 bytes; tc/04's
# 16-byte copies)
TC_MULTIPLES = {"tc/03_wmma_pipelined": (16, 16, 16), "tc/04_3xtf32_pipelined": (1, 4, 4),
                "tc/05_mma_sync": (16, 16, 16), "tc/06_wgmma_tma": (1, 8, 8), "tc/09_tma_store": (1, 8, 8)}
# the kernels that read their operands through tensor maps (any leading dimension of 16 bytes' multiples): tc/06,
# and tc/09, which writes its product through one too, in FP32 or (OUT 1) in the inputs' type
_TMA_KERNELS = ("tc/06_wgmma_tma", "tc/09_tma_store")
HOPPER_GEMM = "tc/09_tma_store"


def _tc_kernel(mode) -> tuple:
    """(key, params, why): the Part V kernel that GEMM 6 runs for ``mode`` on the GPU in use. On sm_90 for FP16 and
    BF16 chapter 16's tc/09 (wgmma fed by TMA, persistent, its product stored by TMA: into C itself, in C's type,
    for an ordinary call);
    tc/05 (mma.sync) on sm_80 and later, and for TF32; tc/03 (WMMA) on the emulator, which cannot run inline PTX;
    tc/04 for 3xTF32. Below compute capability 8.0 none: refused by name."""
    from .runtime.profiles import current
    gpu = current()
    if gpu.capability < (8, 0):
        raise hw.UnsupportedGPU(f"gl.blas.gemm in {mode.upper()} needs compute capability 8.0 (tensor cores with "
                                f"BF16 and TF32 operands, mma.sync); this is {gpu.describe()}")
    if mode == "3xtf32":
        return "tc/04_3xtf32_pipelined", {}, "3xTF32 on the tensor cores"
    if not hw.on_gpu:
        return "tc/03_wmma_pipelined", {}, "the emulator's WMMA (it cannot run inline PTX)"
    if mode != "tf32" and gpu.capability[0] == 9:
        return HOPPER_GEMM, {}, "Hopper's wgmma fed by TMA, persistent, its product stored by TMA"
    return "tc/05_mma_sync", {}, "mma.sync"


class _Steps:
    """GEMM 6's launches for one form of call: the two packs, Part V's kernel and the epilogue; which of the packs
    and the epilogue a call may go without (``direct``: B is A' as it lies, A is B', C can take W), and the
    workspace's views, made once (``views``)."""
    __slots__ = ("pack_a", "pack_b", "epilogue", "dims", "item", "out_item", "sizes", "precision", "direct",
                 "align", "views", "maps", "per", "one", "into_c16")


def _glue(expression):
    from .variant import _load
    return _load("blas/gemm/06_tensor_cores.cu").get(expression)


def _launch(kernel, grid, block, shared=0):
    """(kernel, grid, block, shared, send): send is the direct launch on a GPU (None: the checked call)."""
    return (kernel, grid, block, shared, kernel.launcher(grid, block, shared) if hw.on_gpu else None)


def _tc_plan(name, mode, out, m, n, k, ta, tb, choice=None) -> Plan:
    """The plan of a GEMM on the tensor cores (kernels/blas/gemm/06_tensor_cores.cu says how)."""
    key, params, why = _tc_kernel(mode) if choice is None else choice
    pm, pn, pk = TC_MULTIPLES[key]
    up = lambda x, q: cdiv(x, q) * q                    # noqa: E731
    rows, cols, depth = up(n, pm), up(m, pn), up(max(k, 1), pk)     # W = A' B': rows x depth times depth x cols
    v = registry.get(key)
    if mode == "3xtf32":
        problem = ops.Gemm(m=rows, n=cols, k=depth)
    else:
        problem = ops.TcGemm(m=rows, n=cols, k=depth, precision=mode)
    # the kernel's defaults, or where a GPU's shared memory is too small for them (TF32 stages on an sm_86 or
    # sm_89: 99 KiB), fewer stages and smaller tiles
    tries = [params] if choice is not None else [params, {"STAGES": 2}, {"STAGES": 2, "BM": 64, "WM": 32}]
    for p in tries:
        try:
            full = v.resolve(**p)
        except ValueError:                              # not a configuration this kernel has
            full, reason = None, True
            continue
        reason = (v.refuse(problem, full) if v.refuse is not None else None) or v.does_not_fit(problem, full)
        if not reason:
            break
    if reason:
        raise hw.UnsupportedGPU(f"{key}: {reason if isinstance(reason, str) else 'no configuration fits this GPU'}")
    plan = Plan()
    plan.routine, plan.key, plan.params, plan.problem, plan.why = name, key, full, problem, why
    plan.kernel = v.kernel(problem, **full)
    plan.grid, plan.block, plan.shared = v.launch(problem, full)
    plan.send = plan.kernel.launcher(plan.grid, plan.block, plan.shared) if hw.on_gpu else None
    plan.extra, plan.extra_ptrs = (), ()
    steps = plan.steps = _Steps()
    # tc/09 writing C in the inputs' type itself (OUT 1), for the calls whose product is C
    steps.into_c16 = None
    if key == HOPPER_GEMM and out != "fp32":
        k16 = v.kernel(ops.TcGemm(m=rows, n=cols, k=depth, precision=mode, out=mode), **full)
        steps.into_c16 = (k16, k16.launcher(plan.grid, plan.block, plan.shared) if hw.on_gpu else None)
    item = steps.item = 4 if mode in COMPUTES else 2
    bits = "float" if item == 4 else "unsigned short"
    tall = lambda r: min(cdiv(r, 32), 65535)             # noqa: E731 (grid.y's limit; the kernel loops past it)
    steps.pack_a = _launch(_glue(f"gemm_pack<{bits}, {int(tb == 'T')}>"), (cdiv(depth, 32), tall(rows)), (32, 8))
    steps.pack_b = _launch(_glue(f"gemm_pack<{bits}, {int(ta == 'T')}>"), (cdiv(cols, 32), tall(depth)), (32, 8))
    steps.epilogue = _launch(_glue(f"gemm_epilogue<{_OUT[out]}>"), (cdiv(m, 32), min(cdiv(n, 8), 4096)), (32, 8))
    steps.out_item = 4 if out == "fp32" else 2
    steps.dims = (rows, cols, depth)
    steps.sizes = (item * rows * depth, item * depth * cols, 4 * rows * cols)
    steps.precision, steps.views, steps.direct, steps.maps = mode, None, (False, False, False), {}
    steps.align = 32 if key == "tc/03_wmma_pipelined" else 16      # WMMA's loads: 256 bits; cp.async, TMA: 16 bytes
    return plan


def _tc_direct(plan, ta, tb, out):
    """Which of GEMM 6's copies a call of this form can go without. The kernel computes W (rows x cols, row-major)
    = A' (rows x depth) B' (depth x cols), A' = op(B)^T and B' = op(A)^T: a column-major B that is not transposed
    is A' as it lies (rows ldb apart), an A that is not transposed is B' (rows lda apart), and W is C when C is
    FP32 with ldc = cols. tc/06 and tc/09 read their operands through tensor maps, which take any row stride of 16
    bytes and fill zeros past the matrix; the other kernels read dense, padded operands, so there the sizes must
    already be the kernel's multiples and the leading dimensions the sizes. tc/09 writes its product through a
    tensor map as well, which writes nothing past the matrix: C in FP32 or the inputs' type, any leading dimension
    of 16 bytes' multiples. (Each call also needs the start aligned, and alpha = 1, beta = 0 for W to be C.)"""
    lda, ldb, ldc, m, n, k = plan.fixed
    s = plan.steps
    rows, cols, depth = s.dims
    if plan.key in _TMA_KERNELS:
        a = tb == "N" and (ldb * s.item) % 16 == 0
        b = ta == "N" and (lda * s.item) % 16 == 0
    else:
        a = tb == "N" and ldb == depth == k and rows == n
        b = ta == "N" and lda == cols == m and depth == k
    if plan.key == HOPPER_GEMM:
        w = rows == n and (ldc * s.out_item) % 16 == 0
    else:
        w = out == "fp32" and ldc == cols == m and rows == n
    s.direct = (a, b, w)
    # a batch: as many products a launch of the packs and the epilogue as TC_BATCH_BYTES of workspace holds
    batch = plan.batch[0]
    s.one = s.sizes
    s.per = max(1, min(batch, 65535, TC_BATCH_BYTES // max(sum(s.one), 1)))
    if s.per > 1:
        s.sizes = tuple(x * s.per for x in s.one)
        s.pack_a, s.pack_b, s.epilogue = (_launch(step[0], (*step[1][:2], s.per), step[2])
                                          for step in (s.pack_a, s.pack_b, s.epilogue))


def _gemm_plan(transa, transb, alpha, A, B, beta, C, choice=None, compute=None, input_type=None, batched=False):
    ta = _flag("sgemm", 1, "transa", transa)
    tb = _flag("sgemm", 2, "transb", transb)
    key = ("gemm", ta, tb, _form(A), _form(B), _form(C), compute, input_type, batched, _context())
    plan = _PLANS.get(key) if choice is None else None
    if plan is None:
        mode, out = _mode(batched, A, B, C, compute, input_type)
        name = _routine(mode, batched)
        dtypes = (A.dtype,)
        _scalar(name, 3, "alpha", alpha)
        _, _, lda, _ = _matrix(name, 4, "A", A, dtypes, batched)
        _, _, ldb, _ = _matrix(name, 5, "B", B, dtypes, batched)
        _scalar(name, 6, "beta", beta)
        column_major = C.ndim == 3 and (C.shape[-2] <= 1 or C.strides[-2] == C.itemsize)   # (else _matrix says so)
        if batched and column_major and C.shape[0] > 1 and C.size and C.strides[0] >= 0 and not C.strides[0] % C.itemsize:
            ld = C.strides[-1] // C.itemsize if C.shape[-1] > 1 else max(C.shape[-2], 1)
            clash = _overlap_at(C.strides[0] // C.itemsize, ld, *C.shape[-2:], C.shape[0])
            if clash is not None:
                _fail(name, 7, "C", f"has its matrices {C.strides[0] // C.itemsize} elements apart with leading "
                                    f"dimension {ld}: matrices 0 and {clash} share elements, and the products would "
                                    "overwrite each other")
        _, _, ldc, _ = _matrix(name, 7, "C", C, (C.dtype,), batched)
        _output(name, 7, "C", C)
        (lda, sa), (ldb, sb), (ldc, sc) = (lda, ldb, ldc) if batched else ((lda, 0), (ldb, 0), (ldc, 0))
        m, n = C.shape[-2:]
        am, ak = A.shape[-2:] if ta == "N" else A.shape[-1:-3:-1]
        bk, bn = B.shape[-2:] if tb == "N" else B.shape[-1:-3:-1]
        if am != m:
            _fail(name, 4, "A", f"gives op(A) {am} rows; C has {m}")
        if bn != n:
            _fail(name, 5, "B", f"gives op(B) {bn} columns; C has {n}")
        if ak != bk:
            _fail(name, 5, "B", f"gives op(B) {bk} rows; op(A) has {ak} columns")
        k = ak
        batch = 1
        if batched:
            batch = C.shape[0]
            for position, label, a in ((4, "A", A), (5, "B", B)):
                if a.shape[0] != batch:
                    _fail(name, position, label, f"holds {a.shape[0]} matrices; C holds {batch}")
        if m == 0 or n == 0 or batch == 0:
            plan = _no_kernel(name, (A, B, C))
        elif mode == "fp32":
            choice = choice or choose("gemm", m, n, k, ta + tb)
            if batch > 1 and choice[1].get("SPLITK", 1) != 1:
                choice = (choice[0], {**choice[1], "SPLITK": 1}, choice[2] + "; K whole (a batch fills the GPU)")
            plan = _make_plan(name, ops.Gemm(m=m, n=n, k=k, transa=ta, transb=tb, layout="col"), choice, (A, B, C))
            if batch > 1:                 # one launch: blockIdx.z picks the product
                plan.grid = (*plan.grid[:2], min(batch, BATCH_PER_LAUNCH))
                plan.send = plan.kernel.launcher(plan.grid, plan.block, plan.shared) if hw.on_gpu else None
        else:
            plan = _tc_plan(name, mode, out, m, n, k, ta, tb, choice)
            plan.extents = tuple(_extent(a, 0) for a in (A, B, C))
        plan.mode = mode
        plan.fixed = (lda, ldb, ldc, m, n, k)
        plan.batch = (batch, sa, sb, sc)
        if plan.steps is not None:
            _tc_direct(plan, ta, tb, out)
        plan.form = key
        _keep(key, plan)
    return plan, (ta, tb)


def gemm(transa, transb, alpha, A, B, beta, C, compute=None, input_type=None):
    """C = alpha * op(A) op(B) + beta * C, all column-major; op(A) m x k, op(B) k x n. Returns C.

    float32 A and B (sgemm): FP32 on the CUDA cores (GEMM 5), or on the tensor cores with ``compute='tf32'``
    (each input rounded to TF32, 10 mantissa bits: error up to about (2^-10 + k 2^-23) sum_k ``|a||b|`` per element of
    C) or ``compute='3xtf32'`` (each input as a TF32 head and tail: errors of FP32's size, (2^-21 + k 2^-23)
    sum_k ``|a||b|``). float16 A and B, or BF16 ones (uint16 bits with ``input_type='bfloat16'``): products exact,
    sums in FP32 (up to about k 2^-23 sum_k ``|a||b|``), C float32 or the inputs' type (then rounded once, to
    nearest), as cublasGemmEx with CUBLAS_COMPUTE_32F. The tensor-core modes need compute capability 8.0
    (GEMM 6: kernels/blas/gemm/06_tensor_cores.cu)."""
    return _gemm_call(transa, transb, alpha, A, B, beta, C, compute, input_type, False)


def gemm_strided_batched(transa, transb, alpha, A, B, beta, C, compute=None, input_type=None):
    """C[i] = alpha * op(A[i]) op(B[i]) + beta * C[i] for every i: A, B and C are 3-D views whose first index
    picks a column-major matrix (``x.transpose(0, 2, 1)`` of a C-ordered (batch, cols, rows) array is one, and so is
    what ``zeros_like`` or ``empty_like`` of it makes), the matrices a fixed stride apart, zero or more (0 for an A or
    B that every product shares; C's must not overlap). Types and ``compute`` as :func:`gemm`. Returns C."""
    return _gemm_call(transa, transb, alpha, A, B, beta, C, compute, input_type, True)


def _item(memory, off, index, stride, itemsize):
    """(memory, offset) of matrix ``index`` of a batch: on a GPU a base address that keeps the first's alignment
    to 256 bytes (so that offset % 4 still says whether 16-byte loads are aligned) and a small offset; on the
    emulator the same memory and a larger offset."""
    e = off + index * stride
    if not hw.on_gpu or not index:
        return memory, e
    return memory + itemsize * (e - e % 64), e % 64


def _gemm_call(transa, transb, alpha, A, B, beta, C, compute, input_type, batched):
    plan, _ = _gemm_plan(transa, transb, alpha, A, B, beta, C, compute=compute, input_type=input_type,
                         batched=batched)
    name = plan.routine
    alpha = _real(name, 3, "alpha", alpha)
    beta = _real(name, 6, "beta", beta)
    if not hw.on_gpu:
        _output(name, 7, "C", C)
    placed = _place(name, plan, ((4, "A", A), (5, "B", B), (7, "C", C)))
    lda, ldb, ldc, m, n, k = plan.fixed
    if plan.kernel is None or ((alpha == 0.0 or k == 0) and beta == 1.0):
        return C
    if plan.steps is not None:
        _tc_run(plan, alpha, beta, placed)
        return C
    if alpha == 0.0:
        _scale(C, beta)
        return C
    (am, ao), (bm, bo), (cm, co) = placed
    batch, sa, sb, sc = plan.batch
    if batch == 1:
        args = (am, ao, lda, bm, bo, ldb, cm, co, ldc, m, n, k, alpha, beta, 0, 0, 0)
        if plan.send is not None:
            plan.send((*args, *plan.extra_ptrs))
        else:
            plan.kernel(plan.grid, plan.block, (*args, *plan.extra), shared_mem=plan.shared)
        return C
    per = plan.grid[2]
    for first in range(0, batch, per):
        (ai, aio), (bi, bio), (ci, cio) = (_item(am, ao, first, sa, 4), _item(bm, bo, first, sb, 4),
                                           _item(cm, co, first, sc, 4))
        args = (ai, aio, lda, bi, bio, ldb, ci, cio, ldc, m, n, k, alpha, beta, sa, sb, sc)
        count = min(per, batch - first)
        if plan.send is not None and count == per:
            plan.send((*args, *plan.extra_ptrs))
        elif hw.on_gpu:                                      # the last, shorter launch of a long batch
            plan.kernel.launcher((*plan.grid[:2], count), plan.block, plan.shared)((*args, *plan.extra_ptrs))
        else:
            plan.kernel((*plan.grid[:2], count), plan.block, (*args, *plan.extra), shared_mem=plan.shared)
    return C


def _tc_views(plan):
    """(generation, A' at, B' at, W at): GEMM 6's workspace (the packed operands and the product, ``per`` products'
    of each one after another) as the kernels take it, the first product's address on a GPU, flat typed views
    on the emulator; made once, and again when the workspace has grown (its generation)."""
    s = plan.steps
    raw = workspaces.tc_buffers(*s.sizes)
    bits = numpy.float32 if s.item == 4 else numpy.uint16
    flat = (raw[0][:s.sizes[0]].view(bits), raw[1][:s.sizes[1]].view(bits), raw[2][:s.sizes[2]].view(numpy.float32))
    at = tuple(data_address(x) for x in flat) if hw.on_gpu else flat
    s.views = (workspaces.tc_generation, *at)
    return s.views


def _grouped(step, steps, count, args):
    """A pack or the epilogue for ``count`` products of a batch (the plan's launch for a full group of them)."""
    kernel, grid, block, shared, send = step
    if count == steps.per:
        _send(step, args)
    elif hw.on_gpu:
        kernel.launcher((*grid[:2], count), block, shared)(args)
    else:
        kernel((*grid[:2], count), block, args, shared_mem=shared)


def _send(step, args):
    kernel, grid, block, shared, send = step
    if send is not None:
        send(args)
    else:
        kernel(grid, block, args, shared_mem=shared)


def _tc_run(plan, alpha, beta, placed):
    """GEMM 6's launches: op(B)^T and op(A)^T packed for a group of the batch's products (unless the arrays already
    are the kernel's operands, :func:`_tc_direct`: in place where every product's matrix is aligned), W = A' B' on
    the tensor cores for each product, C = alpha W + beta C for the group (the epilogue alone when alpha or k is 0:
    W is not read; nothing more when W was C)."""
    s = plan.steps
    (am, ao), (bm, bo), (cm, co) = placed
    lda, ldb, ldc, m, n, k = plan.fixed
    batch, sa, sb, sc = plan.batch
    rows, cols, depth = s.dims
    views = s.views
    if views is None or views[0] != workspaces.tc_generation:
        views = _tc_views(plan)
    _, a_at, b_at, w_at = views
    gpu = hw.on_gpu
    item, out_item, align = s.item, s.out_item, s.align
    if not gpu:                       # the emulator checks each array's type against its parameter's: the bits
        bits = numpy.float32 if item == 4 else numpy.uint16
        am, bm = am.view(bits), bm.view(bits)
        cm = cm.view(numpy.float32 if out_item == 4 else numpy.uint16)
    product = alpha != 0.0 and k != 0
    direct_a, direct_b, direct_w = s.direct
    direct_a = direct_a and _aligned(bm, bo, item, align) and (sb * item) % align == 0
    direct_b = direct_b and _aligned(am, ao, item, align) and (sa * item) % align == 0
    into_c = (direct_w and product and alpha == 1.0 and beta == 0.0 and _aligned(cm, co, out_item, align)
              and (sc * out_item) % align == 0)
    # tc/06 and tc/09 take their operands as tensor maps (A' in 128-row boxes, B' in 64-row ones), the others as
    # addresses; tc/09 its product too (FP32 in 64 x 32 boxes, 16-bit in 64 x 64: 128-byte rows)
    box_a, box_b = (128, 64) if plan.key in _TMA_KERNELS else (0, 0)
    stored = plan.key == HOPPER_GEMM
    send, kernel = plan.send, plan.kernel
    if into_c and out_item == 2:                       # the product is C, in the inputs' type: tc/09's OUT 1
        kernel, send = s.into_c16
    w_item = out_item if into_c else 4
    size_a, size_b, size_w = (x // y for x, y in zip(s.one, (item, item, 4)))    # elements a product of each
    for first in range(0, batch, s.per):
        count = min(s.per, batch - first)
        ai, aio = _item(am, ao, first, sa, item) if first else (am, ao)
        bi, bio = _item(bm, bo, first, sb, item) if first else (bm, bo)
        ci, cio = _item(cm, co, first, sc, out_item) if first else (cm, co)
        if product:
            if not direct_a:
                _grouped(s.pack_a, s, count, (bi, bio, ldb, n, k, a_at, rows, depth, sb))
            if not direct_b:
                _grouped(s.pack_b, s, count, (ai, aio, lda, k, m, b_at, depth, cols, sa))
            # each operand's source (memory, first offset, offset from one product to the next, its matrix's
            # rows, columns and leading dimension): the caller's array, or the workspace the packs filled
            a_src = (bi, bio, sb, (n, k, ldb)) if direct_a else (a_at, 0, size_a, (rows, depth, depth))
            b_src = (ai, aio, sa, (k, m, lda)) if direct_b else (b_at, 0, size_b, (depth, cols, cols))
            w_src = (ci, cio, sc, (n, m, ldc)) if into_c else (w_at, 0, size_w, (rows, cols, cols))
            for j in range(count):
                w = (_operand(s, w_src, j, w_item, 64, w_item, 64 if w_item == 2 else 32) if stored else
                     _at(w_src[0], w_src[1] + j * w_src[2], 4))
                args = (_operand(s, a_src, j, item, box_a), _operand(s, b_src, j, item, box_b), w, rows, cols, depth)
                if send is not None:
                    send(args)
                else:
                    kernel(plan.grid, plan.block, args, shared_mem=plan.shared)
        if not into_c:
            _grouped(s.epilogue, s, count, (w_at, cols, ci, cio, ldc, m, n, alpha if product else 0.0, beta, size_w, sc))


def _aligned(memory, off, size, align):
    """Whether an element lies on an ``align``-byte boundary: at memory + size * off on a GPU (an address), at
    size * off bytes into the owner's memory on the emulator."""
    return ((memory if memory.__class__ is int else 0) + size * off) % align == 0


def _at(memory, off, size):
    """An operand as a kernel takes it, the element ``off`` into ``memory``: its address on a GPU, a view from it
    on the emulator."""
    return memory + size * off if memory.__class__ is int else memory[off:]


def _operand(steps, src, j, size, box_rows, map_item=None, box_cols=64):
    """Product ``j``'s operand from ``src`` (memory, offset, offset per product, (rows, cols, ld)): its address (or
    view), or with ``box_rows`` its tensor map in boxes of that many rows and ``box_cols`` columns, of elements of
    the inputs' type (or FP32 where ``map_item`` is 4)."""
    memory, off, stride, shape = src
    at = _at(memory, off + j * stride, size)
    if not box_rows:
        return at
    return _map(steps, at, *shape, box_rows, "fp32" if map_item == 4 else steps.precision, box_cols)


def _map(steps, at, rows, cols, ld, box_rows, precision, box_cols):
    """tc/06's and tc/09's tensor map (as its bytes) of an operand or product, a caller's array or the workspace:
    zeros read past it, nothing written past it; kept per plan (a batch has one per product)."""
    key = (at, rows, cols, ld, box_rows, precision, box_cols)
    got = steps.maps.get(key)
    if got is None:
        if len(steps.maps) >= 1024:
            steps.maps.clear()
        got = steps.maps[key] = tma.map_bytes(at, precision, rows, cols, ld, box_rows, box_cols)
    return got
