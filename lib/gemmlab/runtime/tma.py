"""Tensor maps for Hopper's Tensor Memory Accelerator (TMA), built with NVIDIA's cuda-python bindings.

A TMA copy is described by a 128-byte *tensor map*: where a matrix lies in global memory, its sizes and
row stride, the box one copy moves, the shared-memory swizzle, and what to read outside the matrix (zeros).
The driver encodes it (``cuTensorMapEncodeTiled``); the kernel receives it by value, as a
``const __grid_constant__`` parameter (``gl_hopper::TensorMap`` in kernels/common/hopper.cuh), the form the CUDA
Programming Guide documents: a map in parameter space needs no proxy fence, where one in global memory needs a
``fence.proxy.tensormap`` acquire before a copy may use it. Here a map is a one-element NumPy array of a
128-byte structured dtype, CuPy's form of a struct passed by value. Maps depend only on their arguments, so
each distinct one is encoded once.
"""
from __future__ import annotations

import functools

import numpy

from . import backend as hw

_DTYPES = {"fp16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2), "bf16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2),
           "fp32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4),
           # FP8 values as their bytes: the copy engine moves bytes and fills zeros, never converts
           "e4m3": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1), "e5m2": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1)}


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise hw.BackendError("TMA tensor maps are built with NVIDIA's cuda-python: pip install cuda-bindings "
                              f"(for CUDA 13: cuda-bindings>=13) ({exc})") from None
    driver.cuInit(0)
    return driver


@functools.lru_cache(maxsize=256)
def _encoded(precision: str, ptr: int, rows: int, cols: int, ld: int, box_rows: int, box_cols: int):
    cu = _driver()
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    name, size = _DTYPES[precision]
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, name), 2, ptr,
        [u64(cols), u64(rows)], [u64(ld * size)], [u32(box_cols), u32(box_rows)], [u32(1), u32(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled refused a {rows} x {cols} {precision} matrix with {box_rows} x "
                         f"{box_cols} boxes: {err}")
    return as_struct(numpy.array(tmap.opaque, dtype=numpy.uint64))


def as_struct(*maps) -> numpy.ndarray:
    """Tensor maps (each 16 64-bit words, or a map this module made), in order, as one kernel parameter passed
    by value: a one-element array of a structured dtype of that many bytes (a TensorMap, or a struct of several)."""
    words = numpy.concatenate([numpy.ascontiguousarray(m).view(numpy.uint64).ravel() if getattr(m, "dtype", None) is not None
                               and m.dtype.fields else numpy.asarray(m, dtype=numpy.uint64).ravel() for m in maps])
    if words.size % 16:
        raise ValueError(f"a tensor map is 16 64-bit words; got {words.size}")
    dtype = numpy.dtype({"names": ["maps"], "formats": [(numpy.uint64, (words.size,))]})
    return words.view(dtype)


# On the emulator a map is gemmlab's own encoding of the same arguments in the 128 bytes (gemmlab_ptx.h's
# TensorMap): what the driver would take, readable by the emulator's TMA copies. It names its matrix by a number;
# an emulated launch finds the array by it, copies it in with the launch's arrays (and back, for a store) and puts
# the copy's address in the map it passes.
EMULATED_MAGIC = 0x31504d54454d4c47                     # "GLMETMP1", as gemmlab_ptx.h checks it
_EMULATED: dict = {}                                     # number -> the array (weakly)
_SWIZZLE_128B = 3


def emulated_arrays(data: bytes):
    """[(byte offset of a map in data, the array it describes, or None if it is gone)] for the emulator's maps in
    the bytes of a kernel argument."""
    found = []
    for at in range(0, len(data) - 127, 64):
        if int.from_bytes(data[at:at + 8], "little") == EMULATED_MAGIC:
            ref = _EMULATED.get(int.from_bytes(data[at + 16:at + 24], "little"))
            found.append((at, ref() if ref is not None else None))
    return found


def _emulated_map(a, precision: str, rows: int, cols: int, ld: int, box_rows: int, box_cols: int):
    import weakref
    size = _DTYPES[precision][1]
    key = len(_EMULATED) + 1
    _EMULATED[key] = weakref.ref(a)
    words = numpy.zeros(16, dtype=numpy.uint64)
    words[0], words[2], words[3], words[4], words[5] = EMULATED_MAGIC, key, cols, rows, ld * size
    words[6] = box_cols | (box_rows << 32)
    words[7] = size | (_SWIZZLE_128B << 32)
    words[8] = 2 | (1 << 32)                             # rank 2, zeros outside
    return as_struct(words)


def tensor_map(a, precision: str, box_rows: int, box_cols: int, cols: int | None = None):
    """The tensor map (a kernel parameter passed by value, :func:`as_struct`) of the row-major matrix ``a`` (FP16, BF16 or FP32): boxes of
    box_rows x box_cols elements (box_cols elements <= 128 bytes: one swizzle row), 128-byte swizzle, zeros
    outside. ``cols``: the matrix's width when ``a``'s rows are padded beyond it (default: all of them)."""
    if precision not in _DTYPES:
        raise ValueError(f"tensor maps here are for FP16, BF16 or FP32 matrices, or FP8 ones (e4m3, e5m2), not "
                         f"{precision!r}")
    rows, ld = a.shape
    cols = ld if cols is None else cols
    size = _DTYPES[precision][1]
    ptr = a.data.ptr if hasattr(a.data, "ptr") else a.__array_interface__["data"][0]
    if (ld * size) % 16 or ptr % 16:
        raise ValueError(f"TMA needs 16-byte aligned rows: {ld} columns of {size} bytes is {ld * size} bytes")
    if not 0 < cols <= ld:
        raise ValueError(f"cols must be from 1 to the rows' length, {ld}; got {cols}")
    if not hw.on_gpu:
        return _emulated_map(a, precision, rows, cols, ld, box_rows, box_cols)
    return _encoded(precision, ptr, rows, cols, ld, box_rows, box_cols)


def map_bytes(ptr: int, precision: str, rows: int, cols: int, ld: int, box_rows: int, box_cols: int) -> bytes:
    """The 128 bytes of the tensor map of a row-major ``rows`` x ``cols`` matrix at address ``ptr`` whose rows are
    ``ld`` elements apart (boxes, swizzle and zero fill as :func:`tensor_map`): the form a direct launch
    (``Kernel.launcher``'s 'm' parameters) takes. ``ptr`` and ``ld``'s bytes must be multiples of 16. (Encoded
    once per distinct map, as :func:`tensor_map`'s are; gemmlab.blas keeps the bytes per plan.)"""
    size = _DTYPES[precision][1]
    if ptr % 16 or (ld * size) % 16:
        raise ValueError(f"TMA needs a 16-byte aligned start and row stride: {ptr:#x}, {ld} x {size} bytes")
    return _encoded(precision, ptr, rows, cols, ld, box_rows, box_cols).tobytes()

