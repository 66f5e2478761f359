"""gemmlab.blas: DOT, GEMV and GEMM on device arrays, with the reference BLAS's calling contract.

    gl.blas.dot(x, y)                                   -> float
    gl.blas.gemv(trans, alpha, A, x, beta, y)           -> y, updated in place
    gl.blas.gemm(transa, transb, alpha, A, B, beta, C)  -> C, updated in place

Arrays are passed as scipy.linalg.blas or CuPy users pass them (device arrays on a GPU, NumPy arrays
on the emulator), FP32 only (these are the *s* routines):
- a matrix is column-major: a Fortran-ordered array, or a Fortran-ordered view of a larger one, whose
  leading dimension (the distance between columns) may exceed its number of rows;
- a vector may be any 1-D view, with a negative step too; its increment is the step in elements, and
  zero is refused;
- ``trans`` is 'N' or 'T' (or 'C', which for real data is 'T'), in either case.

The contract of the reference BLAS: quick returns when there is nothing to do (m or n = 0; alpha = 0
and beta = 1), alpha = 0 never reads A or B, k = 0 leaves beta * C, and beta = 0 never reads the old
output, so a NaN there cannot leak. Bad arguments raise ``BlasError`` naming the routine and the
argument, as the reference BLAS's XERBLA does. The kernels: DOT 7 in its deterministic form (the same bits
on every run) and GEMV 4, configured per shape as the recorded tuning on the H200 found best
(results/climb-nvidia-h200.json; see ``_dot_params`` and ``_gemv_params``); GEMM 5 (Part IV's warp
tiles for every transpose; see ``_gemm_params``).
"""
from __future__ import annotations

import math

import numpy

from .runtime import backend as hw, workspaces
from . import ops, registry
from .runtime.loader import data_address


class BlasError(ValueError):
    """An illegal argument to a BLAS routine (the routine and the argument are named)."""


DOT = "blas/dot/07_bandwidth"
GEMV = "blas/gemv/04_bandwidth"
GEMM = "blas/gemm/05_warp_tiled"
# GEMM 5's large tile, the fastest of the climb's candidates at N = 4096 in all four transpose cases
GEMM_LARGE = {"BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "GROUP": 8, "MINB": 1}
GEMM_SMALL = {"BM": 64, "BN": 64, "BK": 16, "WM": 32, "WN": 32, "GROUP": 8, "MINB": 2}
STREAMING_BYTES = 256 << 20   # below this, streaming loads (evict-first in L2) measured faster on the H200


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


def _gemm_params(m: int, n: int, sms: int | None = None) -> dict:
    """GEMM 5's 128 x 256 tiles (8 warps of 64 x 64) when C has at least one of them per SM, as at the
    climb's N = 4096 (results/climb-nvidia-h200.json); smaller C gets 64 x 64 tiles, four times as many
    blocks, so that the SMs have work. ``sms``: the GPU in use's, unless given."""
    large = -(-m // GEMM_LARGE["BM"]) * -(-n // GEMM_LARGE["BN"]) >= (sms or _sms())
    return GEMM_LARGE if large else GEMM_SMALL


def _gemv_params(m: int, n: int, trans: str) -> dict:
    """GEMV 4: for 'N', 4 rows per lane and the columns split so that about 256 blocks run (a few per SM);
    for 'T', a warp per column. Streaming loads when A takes less than STREAMING_BYTES."""
    cs = int(4 * m * n < STREAMING_BYTES)
    if trans == "N":
        groups = -(-m // 128)
        split = 1
        while split < 16 and groups * split * 2 <= 256:
            split *= 2
        return {"WARPS": 8, "UNROLL": 8, "SPLIT": split, "VEC": 4, "CS": cs}
    return {"WARPS": 8, "UNROLL": 8, "SPLIT": 1, "VEC": 1, "CS": cs}


def _fail(routine, position, name, why):
    raise BlasError(f"{routine}: argument {position} ({name}) {why}")


def _root(routine, position, name, a):
    """(memory, offset, span): the memory the kernels are given for a view, the view's first element's offset
    into it (in elements), and the bytes [lo, hi) the view's elements occupy.

    Kernels take raw memory: a flat, contiguous span of the array that owns the view's memory, from just below
    the view's lowest element to its highest. A float32 view of memory owned by an array of another type is
    refused (its owner is not float32).
    """
    root = a
    while getattr(root, "base", None) is not None and isinstance(root.base, type(a)):
        root = root.base
        if root.dtype != a.dtype:
            _fail(routine, position, name, f"is a {a.dtype} view of a {root.dtype} array; gemmlab.blas takes "
                                           f"float32 arrays: pass a float32 copy (gl.xp.array(..., dtype='float32'))")
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        _fail(routine, position, name, "is a view of an array that is not contiguous; pass a contiguous copy")
    flat = root.ravel(order="K")
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


def _array(routine, position, name, a, ndim):
    array_type = hw.xp.ndarray
    if not isinstance(a, array_type):
        if isinstance(a, numpy.ndarray):
            _fail(routine, position, name, "is a NumPy array in host memory; pass a device array (gl.xp.asarray)")
        _fail(routine, position, name, f"must be an array, got {type(a).__name__}")
    if a.ndim != ndim:
        _fail(routine, position, name, f"must have {ndim} dimension{'s' if ndim > 1 else ''}, it has {a.ndim}")
    if a.dtype != numpy.float32:
        _fail(routine, position, name, f"must be float32 (gemmlab.blas implements the s routines), it is {a.dtype}")


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


def _matrix(routine, position, name, a):
    """(memory, offset, ld, span) of a column-major matrix view (:func:`_root`)."""
    _array(routine, position, name, a, 2)
    rows, cols = a.shape
    if a.size == 0:
        return a, 0, max(rows, 1), (0, 0)    # nothing is read or written: any layout will do
    s0, s1 = a.strides
    if rows > 1 and s0 != a.itemsize:
        _fail(routine, position, name, "must be column-major (Fortran-ordered: consecutive rows adjacent in "
                                       "memory); pass gl.xp.asfortranarray(...) or a Fortran-ordered view")
    ld = s1 // a.itemsize if cols > 1 else max(rows, 1)
    if cols > 1 and (s1 % a.itemsize or ld < max(rows, 1)):
        _fail(routine, position, name, f"has leading dimension {s1 / a.itemsize:g} < rows = {rows} (lda >= max(1, m))")
    if ld >= 2 ** 31 or rows >= 2 ** 31 or cols >= 2 ** 31:
        _fail(routine, position, name, f"is {rows:,} x {cols:,} with leading dimension {ld:,}: the kernels' 32-bit "
                                       "sizes and leading dimensions reach 2^31 - 1")
    root, off, span = _root(routine, position, name, a)
    return root, off, ld, span


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


def _launch(spec, problem, args):
    """Launch the kernel a routine uses (DOT, GEMV or GEMM above) on ``problem``'s geometry."""
    key, params = spec
    v = registry.get(key)
    grid, block, shared = v.launch(problem, v.resolve(**params))
    v.kernel(problem, **params)(grid, block, args, shared_mem=shared)


def dot(x, y) -> float:
    """sum_i x_i y_i over two float32 vectors of equal length (any nonzero increments)."""
    xr, xo, xi, _ = _vector("sdot", 1, "x", x)
    yr, yo, yi, _ = _vector("sdot", 2, "y", y)
    if x.size != y.size:
        _fail("sdot", 2, "y", f"has {y.size} elements, x has {x.size}")
    n = x.size
    if n == 0:
        return 0.0
    result = hw.xp.zeros(1, dtype=numpy.float32)
    _launch((DOT, _dot_params(n)), ops.Dot(n=n), (xr, xo, xi, yr, yo, yi, n, result, workspaces.dot_workspace()))
    return float(hw.to_host(result)[0])


def gemv(trans, alpha, A, x, beta, y):
    """y = alpha * op(A) x + beta * y; op(A) = A or A^T; A column-major m x n. Returns y."""
    t = _trans("sgemv", 1, "trans", trans)
    alpha = _scalar("sgemv", 2, "alpha", alpha)
    ar, ao, lda, aspan = _matrix("sgemv", 3, "A", A)
    xr, xo, xi, xspan = _vector("sgemv", 4, "x", x)
    beta = _scalar("sgemv", 5, "beta", beta)
    yr, yo, yi, yspan = _vector("sgemv", 6, "y", y)
    _output("sgemv", 6, "y", y)
    m, n = A.shape
    need_x, need_y = (n, m) if t == "N" else (m, n)
    if x.size != need_x:
        _fail("sgemv", 4, "x", f"has {x.size} elements; op(A) has {need_x} columns")
    if y.size != need_y:
        _fail("sgemv", 6, "y", f"has {y.size} elements; op(A) has {need_y} rows")
    _distinct("sgemv", (6, "y", y, yspan), ((3, "A", A, aspan), (4, "x", x, xspan)))
    if m == 0 or n == 0 or (alpha == 0.0 and beta == 1.0):
        return y
    if alpha == 0.0:
        _scale(y, beta)
        return y
    _launch((GEMV, _gemv_params(m, n, t)), ops.Gemv(m=m, n=n, trans=t, layout="col"),
            (ar, ao, lda, xr, xo, xi, yr, yo, yi, need_y, need_x, alpha, beta, *workspaces.gemv_workspace(need_y)))
    return y


def gemm(transa, transb, alpha, A, B, beta, C):
    """C = alpha * op(A) op(B) + beta * C, all column-major; op(A) m x k, op(B) k x n. Returns C."""
    ta = _trans("sgemm", 1, "transa", transa)
    tb = _trans("sgemm", 2, "transb", transb)
    alpha = _scalar("sgemm", 3, "alpha", alpha)
    ar, ao, lda, aspan = _matrix("sgemm", 4, "A", A)
    br, bo, ldb, bspan = _matrix("sgemm", 5, "B", B)
    beta = _scalar("sgemm", 6, "beta", beta)
    cr, co, ldc, cspan = _matrix("sgemm", 7, "C", C)
    _output("sgemm", 7, "C", C)
    m, n = C.shape
    am, ak = A.shape if ta == "N" else A.shape[::-1]
    bk, bn = B.shape if tb == "N" else B.shape[::-1]
    if am != m:
        _fail("sgemm", 4, "A", f"gives op(A) {am} rows; C has {m}")
    if bn != n:
        _fail("sgemm", 5, "B", f"gives op(B) {bn} columns; C has {n}")
    if ak != bk:
        _fail("sgemm", 5, "B", f"gives op(B) {bk} rows; op(A) has {ak} columns")
    _distinct("sgemm", (7, "C", C, cspan), ((4, "A", A, aspan), (5, "B", B, bspan)))
    k = ak
    if m == 0 or n == 0 or ((alpha == 0.0 or k == 0) and beta == 1.0):
        return C
    if alpha == 0.0:
        _scale(C, beta)
        return C
    _launch((GEMM, _gemm_params(m, n)), ops.Gemm(m=m, n=n, k=k, transa=ta, transb=tb, layout="col"),
            (ar, ao, lda, br, bo, ldb, cr, co, ldc, m, n, k, alpha, beta))
    return C
