"""The one table of kernel variants, in the order of their files under ``kernels/``, each with its chapter.
Tests, benchmarks, sweeps and widgets all derive from it.

Adding a variant means adding its ``.cu`` file under ``kernels/`` and one :class:`~gemmlab.variant.Variant`
below: the kernel tests (every legal parameter choice, at sizes that are not multiples of the tile), the checks
before timing and the benchmark tables pick it up from here. What a variant does is in :mod:`gemmlab.variant`;
the device memory some kernels keep between calls is in :mod:`gemmlab.runtime.workspaces`.
"""
from __future__ import annotations

import functools

import numpy

from . import ops
from .cases import awkward_problems
from .runtime.limits import cdiv
from .runtime.workspaces import DOT_WORKSPACE, _split_buffers, dot_workspace, gemm_workspace, gemv_workspace
from .variant import FLOOR, Need, Variant, _load, block_threads

# the table and its look-up; the rest are the names the registry has always offered, now kept where they belong
__all__ = ["VARIANTS", "REGISTRY", "get", "HOPPER_SHARED", "Need", "Variant", "FLOOR", "block_threads",
           "awkward_problems", "DOT_WORKSPACE", "dot_workspace", "gemv_workspace", "gemm_workspace",
           "gemm_split_workspace"]


def _square_blocks(name: str):
    """Launch geometry of a kernel whose blocks are name x name threads, one thread per element of C."""
    return lambda p, c: ((cdiv(p.n, c[name]), cdiv(p.m, c[name])), (c[name], c[name]), 0)


def _gemm_args(p, inputs, out):
    A, B = inputs
    return (A, B, out, p.m, p.n, p.k)


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
    """Warp tiles that fill the block tile, lanes as LANES rows x 32 / LANES columns (8 x 4 where the kernel has
    no LANES) of 4 x 4 sub-tiles, whole float4 loads per thread."""
    lanes = c.get("LANES", 8)
    if c["BM"] % c["WM"] or c["BN"] % c["WN"] or c["WM"] % (4 * lanes) or c["WN"] % (4 * (32 // lanes)):
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


def _gemv_args(p, inputs, out):
    A, x = inputs
    return (_memory(A), 0, p.m, x, 0, 1, out, 0, 1, p.out_len, p.in_len, 1.0, 0.0)


def gemm_split_workspace(m: int, n: int, c: dict):
    """GEMM 5's (counters, partials) for C of m x n in c's tiles and c["SPLITK"] slices (NULL pointers, which
    the kernel never reads, for SPLITK = 1)."""
    if c["SPLITK"] == 1:
        return (None, None)
    tiles = max(1, cdiv(m, c["BM"]) * cdiv(n, c["BN"]))
    return gemm_workspace(tiles, c["SPLITK"] * tiles * c["BM"] * c["BN"])


def _gemm_col_args(p, inputs, out):
    A, B = inputs
    return (_memory(A), 0, A.shape[0], _memory(B), 0, B.shape[0], _memory(out), 0, p.m, p.m, p.n, p.k, 1.0, 0.0)


def _gemm_batched_args(p, inputs, out):
    """GEMM 5's: as the others', and the batch's strides (one product here: 0)."""
    return _gemm_col_args(p, inputs, out) + (0, 0, 0)


_TRANS = lambda p: {"TRANS": int(p.trans == "T")}                                # noqa: E731
_TRANS2 = lambda p: {"TA": int(p.transa == "T"), "TB": int(p.transb == "T")}     # noqa: E731


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
    from .runtime.profiles import PROFILES
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
    want = getattr(p, "output_dtype", numpy.dtype(numpy.float32))
    if getattr(out, "dtype", None) != want or tuple(out.shape) != (p.m, p.n) or not out.flags.c_contiguous:
        raise ValueError(f"C must be a C-contiguous {p.m} x {p.n} {want.name} array; got {getattr(out, 'dtype', '?')} "
                         f"{' x '.join(map(str, getattr(out, 'shape', ())))}")
    return inputs[0], inputs[1], out, p.m, p.n, p.k


def _tc_refuse(p, c):
    if _fp32_out(p):
        return _fp32_out(p)
    if p.m % 16 or p.n % 16 or p.k % 16:
        return f"M, N and K must be multiples of 16 (the wmma tile), got {p.m} x {p.n} x {p.k}"
    return None


def _tc_precision_out(p):
    """PREC, and OUT: 1 where C is in the inputs' 16-bit type (tc/09 and tc/12's epilogue16)."""
    return {**_tc_precision(p), "OUT": int(getattr(p, "out", "fp32") != "fp32")}


def _fp32_out(p) -> str | None:
    """The refusal of a kernel that writes FP32 C only, for a problem that asks for C in its inputs' type."""
    if getattr(p, "out", "fp32") != "fp32":
        return f"this kernel writes C in FP32 only; C in {p.out.upper()} is tc/09's and tc/12's (OUT 1)"
    return None


def _hopper_refuse(p, c):
    return _fp32_out(p) or _hopper_any_out_refuse(p, c)


def _hopper_any_out_refuse(p, c):
    if p.precision == "tf32":
        return "wgmma here takes FP16 or BF16; TF32 is tc/01 and tc/03"
    if p.n % 8 or p.k % 8:
        return f"N and K must be multiples of 8 (TMA copies rows of 16-byte multiples), got {p.m} x {p.n} x {p.k}"
    return None


def _hopper_args(p, inputs, out):
    from .runtime import tma
    A, B, _, _, _, _ = _tc_operands(p, inputs, out)
    return (tma.tensor_map(A, p.precision, 128, 64), tma.tensor_map(B, p.precision, 64, 64), out, p.m, p.n, p.k)


STAGE_SHARED = (128 * 64 + 64 * 256) * 2                  # one stage: A's 128 x 64 and B's 64 x 256, 16-bit
HOPPER_SHARED = 4 * STAGE_SHARED + 1024                     # 4 stages, and room to align them
BOXES_SHARED = 2 * 2 * 64 * 32 * 4                          # two 64 x 32 FP32 boxes of C per consumer


def _store_shared(c) -> int:
    """tc/09's shared memory with c["STAGES"] stages, and the epilogue's boxes."""
    return c["STAGES"] * STAGE_SHARED + 1024 + BOXES_SHARED


STORE_SHARED = _store_shared({"STAGES": 4})                 # tc/09-tc/12 as they run by default (tc/12: the same bytes)


def _pingpong_tile(c) -> tuple:
    """tc/12's tile of C: 128 x 128 a consumer in ping-pong, 256 x 128 shared by both otherwise."""
    return (128, 128) if c["PINGPONG"] else (256, 128)


def _persistent_blocks(p, pair: int = 1, at_once: int | None = None, tile: tuple = (128, 256)) -> int:
    """Chapter 16's persistent grid: one block per SM of the GPU in use, at most one per ``tile`` of C (128 x
    256 unless given). With clusters of ``pair`` blocks: as many clusters as the GPU runs at once (``at_once``;
    by default one per ``pair`` SMs), at most one per ``pair`` tiles stacked."""
    from .runtime.profiles import current
    units = cdiv(cdiv(p.m, tile[0]), pair) * cdiv(p.n, tile[1])
    return pair * max(1, min(units, at_once or current().sm_count // pair))


def _clusters_at_once(key: str, p) -> int | None:
    """How many clusters of tc/10 the GPU in use runs at once (cuOccupancyMaxActiveClusters). A cluster's blocks
    share a GPC; Hopper's SMs come in pairs (two to a TPC), so clusters of two fit on every SM (the H200 reports
    66 for its 132), where larger clusters can leave SMs out. Asked of the driver all the same: a persistent grid
    with one cluster more than this would run that cluster after all the others, doubling the time. None off a
    Hopper GPU (the kernel does not run there)."""
    from .runtime import backend as hw
    from .runtime.profiles import current
    if not hw.on_gpu or current().capability != (9, 0):
        return None
    v = REGISTRY[key]
    return _max_active_clusters(key, v.expression(p), STORE_SHARED, current().name)


@functools.lru_cache(maxsize=None)
def _max_active_clusters(key: str, expr: str, shared: int, gpu: str) -> int:
    from cuda.bindings import driver
    v = REGISTRY[key]
    fn = _load(v.source, v.options).get(expr).impl.function
    fn.max_dynamic_shared_size_bytes = shared           # the query counts the block's shared memory as launched
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = 2, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 384, 1, 1
    config.sharedMemBytes = shared
    err, n = driver.cuOccupancyMaxActiveClusters(driver.CUfunction(fn.kernel.ptr), config)
    if err != driver.CUresult.CUDA_SUCCESS or n < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters gave {err}, {n} for tc/10")
    return int(n)


# what chapter 16's kernels have in common: tc/06's operation, precisions, refusals and target
_PAST_CUBLAS = dict(chapter="16-past-cublas", op=ops.TcGemm, problem_params=_tc_precision, refuse=_hopper_refuse,
                    needs=_HOPPER, options=("-arch=sm_90a",))
# tc/09 and tc/12 write C in FP32 or, for a problem with out = its inputs' type, in that type (OUT 1)
_PAST_CUBLAS_OUT = {**_PAST_CUBLAS, "problem_params": _tc_precision_out, "refuse": _hopper_any_out_refuse}


def _store_args(p, inputs, out):
    """tc/09 and tc/10: tc/06's maps of A and B, and C's (FP32, 64 x 32 boxes: 128-byte rows, swizzled)."""
    from .runtime import tma
    A, B, _, _, _, _ = _tc_operands(p, inputs, out)
    c = (tma.tensor_map(out, "fp32", 64, 32) if getattr(p, "out", "fp32") == "fp32" else
         tma.tensor_map(out, p.out, 64, 64))                      # 16-bit C: 64 x 64 boxes, 128-byte rows too
    return (tma.tensor_map(A, p.precision, 128, 64), tma.tensor_map(B, p.precision, 64, 64), c, p.m, p.n, p.k)


# tc/11 splits the last round only where its idle SMs would wait at least this many 64-wide k-slices' time, on
# average over the blocks: each split tile costs its blocks one more epilogue and its additions in L2 at the
# kernel's end, which on the H200 came to about 11 slices' time (4096^3 and 8192 x 8192 x 1024, each with 8
# slices idle a block, ran slower split; 6144^3, 4096 x 14336 x 4096 and 8192^3, with 26 to 62, faster)
STREAM_K_MIN_SLICES = 16


def stream_k_split(p, sm_count: int | None = None) -> tuple:
    """tc/11's division of the work: (blocks, dp_tiles, sk_blocks). One block per SM (at most one per tile); the
    whole rounds of 128 x 256 tiles walked as tc/09 walks them (the first dp_tiles), the tiles of the last,
    partial round cut into their 64-wide k-slices and shared out among sk_blocks blocks (every block, or one per
    slice where there are fewer slices). Nothing is split where the tiles are a whole number of rounds, or where
    the last round leaves too little idle (:data:`STREAM_K_MIN_SLICES`)."""
    tiles, slices = cdiv(p.m, 128) * cdiv(p.n, 256), cdiv(p.k, 64)
    blocks = _persistent_blocks(p, at_once=sm_count)
    tail = tiles % blocks
    if tail == 0 or (blocks - tail) * slices < STREAM_K_MIN_SLICES * blocks:
        return (blocks, tiles, 0)
    return (blocks, tiles - tail, min(blocks, tail * slices))


def _stream_k_args(p, inputs, out):
    _, dp_tiles, sk_blocks = stream_k_split(p)
    return _store_args(p, inputs, out) + (dp_tiles, sk_blocks)


def _stream_k_workspace(p, c):
    """tc/11's flags: one per consumer of each tile of the tail and a count of finished consumers, zeroed once
    (the kernel leaves them at zero)."""
    from .runtime import workspaces
    _, dp_tiles, _ = stream_k_split(p)
    tail = cdiv(p.m, 128) * cdiv(p.n, 256) - dp_tiles           # 0 where nothing is split
    return (workspaces.stream_k_flags(2 * max(tail, 1) + 1),)


def _split_prepare(p, c, inputs, out):
    """Before each launch of tc/07: split A and B^T into TF32 heads and tails (two small kernels)."""
    (a_head, a_tail, b_head, b_tail), _ = _split_buffers(p)
    A, B = inputs
    ld = a_head.shape[1]
    module = _load("tc/07_3xtf32_wgmma.cu", ("-arch=sm_90a",))
    from .runtime.profiles import current
    blocks = min(cdiv(p.m * ld, 256), 32 * current().sm_count)       # a grid-stride loop: 32 blocks per SM
    module.get("split_tf32_rows")((blocks,), 256, (A, a_head, a_tail, p.m, p.k, ld))
    module.get("split_tf32_transposed")((cdiv(p.n, 32), cdiv(ld, 32)), (32, 8), (B, b_head, b_tail, p.k, p.n, ld))


# --- chapter 17: FP8 ----------------------------------------------------------------------------------

def _fp8_params(p):
    """tc/13's KIND (0 E4M3, 1 E5M2), SCALED (1: per-block scales, promoted a slice at a time) and OUT (1 BF16)."""
    return {"KIND": list(ops.FP8_KINDS).index(p.kind), "SCALED": int(p.scaling == "block"),
            "OUT": int(p.out == "bf16")}


def _fp8_tile(p) -> tuple:
    """tc/13's tile of C: 128 x 128 with per-block scales (the promotion's accumulators take the registers), else
    128 x 256."""
    return (128, 128) if p.scaling == "block" else (128, 256)


def _fp8_refuse(p, c):
    if p.k % 16:
        return f"K must be a multiple of 16 (TMA copies rows of 16-byte multiples), got {p.m} x {p.n} x {p.k}"
    if p.scaling == "block" and p.k % ops.FP8_BLOCK:
        return (f"K must be a multiple of {ops.FP8_BLOCK}, the scales' block along K, with per-block scales; got "
                f"{p.m} x {p.n} x {p.k}")
    step = 8 if p.out == "bf16" else 4
    if p.n % step:
        return f"N must be a multiple of {step} (C's rows: 16-byte multiples for its tensor map), got {p.n}"
    return None


def _fp8_operands(p, inputs, out):
    """Check tc/13's operands: A (m x k) and B^T (n x k) as FP8 bytes (uint8), C-contiguous; the scales float32 of
    the problem's shapes; C of the problem's type. A wrong one is refused by name. The scales' values are not read
    here (that would cost every launch a pass over them and a wait): a NaN or infinite scale makes the elements of
    C it scales NaN or infinite, and no others (chapter 17 states it; tests/test_fp8.py holds it)."""
    if len(inputs) != 4:
        raise ValueError(f"an FP8 GEMM takes four inputs (A, B^T, sa, sb); got {len(inputs)}")
    a8, b8, sa, sb = inputs
    for name, a, shape in (("A", a8, (p.m, p.k)), ("B^T", b8, (p.n, p.k))):
        if getattr(a, "dtype", None) != numpy.uint8:
            raise TypeError(f"{name} must hold {p.kind.upper()} values as their bytes (uint8: gl.ops.to_fp8_bits); "
                            f"got {getattr(a, 'dtype', type(a).__name__)}")
        if tuple(a.shape) != shape or not a.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous {shape[0]} x {shape[1]} array for this {p.m} x {p.n} x "
                             f"{p.k} product (B as its transpose: K-major); got {' x '.join(map(str, a.shape))}")
    for name, s, shape in (("sa", sa, p.scale_shapes()[0]), ("sb", sb, p.scale_shapes()[1])):
        if getattr(s, "dtype", None) != numpy.float32:
            raise TypeError(f"the scales {name} must be float32; got {getattr(s, 'dtype', type(s).__name__)}")
        if tuple(s.shape) != shape or not s.flags.c_contiguous:
            what = {"sa": "a row of A and 128 of K", "sb": "128 x 128 of B"}[name] if p.scaling == "block" else "one"
            raise ValueError(f"{name} must be a C-contiguous {' x '.join(map(str, shape))} array ({what}) for this "
                             f"{p.scaling}-scaled {p.m} x {p.n} x {p.k} product; got {' x '.join(map(str, s.shape))}")
    if getattr(out, "dtype", None) != p.output_dtype or tuple(out.shape) != (p.m, p.n) or not out.flags.c_contiguous:
        raise ValueError(f"C must be a C-contiguous {p.m} x {p.n} {p.output_dtype.name} array; got "
                         f"{getattr(out, 'dtype', '?')} {' x '.join(map(str, getattr(out, 'shape', ())))}")
    return a8, b8, sa, sb


def _fp8_args(p, inputs, out):
    from .runtime import tma
    a8, b8, sa, sb = _fp8_operands(p, inputs, out)
    c = tma.tensor_map(out, "fp32", 64, 32) if p.out == "fp32" else tma.tensor_map(out, "bf16", 64, 64)
    return (tma.tensor_map(a8, p.kind, 128, 128), tma.tensor_map(b8, p.kind, _fp8_tile(p)[1], 128), c, sa, sb,
            p.m, p.n, p.k)


FP8_SHARED = 6 * (128 * 128 * 2) + 1024 + BOXES_SHARED          # = 4 stages of 128 x 256 tiles: 225 KiB either way


# The table: every variant, in the order of its file under kernels/ (tests/test_registry.py checks the order
# and that each names a chapter that shows it).
VARIANTS = [
    # sgemm/: row-major SGEMM, Part II's steps (chapters 2-6) and Part IV's climb (chapter 13)
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
    Variant(
        key="sgemm/07_vectorized",
        chapter="13-sgemm-climb",
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
        chapter="13-sgemm-climb",
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
        chapter="13-sgemm-climb",
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
        key="sgemm/11_cp_async",
        chapter="13-sgemm-climb",
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
    Variant(
        key="sgemm/12_interior",
        chapter="13-sgemm-climb",
        entry="sgemm_interior<{BM}, {BN}, {BK}, {WM}, {WN}, {LANES}, {GROUP}, {SPLITK}, {MINB}>",
        op=ops.Gemm,
        title="sgemm/10 with an unchecked main loop for the tiles inside C; lanes as 8 x 4 or 4 x 8",
        params={**_WARP_TILES, "LANES": (4, 8), **_PROBLEM_SHAPE},
        defaults={"BM": 128, "BN": 256, "BK": 16, "WM": 64, "WN": 64, "LANES": 4, "GROUP": 8, "SPLITK": 1,
                  "MINB": 1},
        valid=_warp_tiled_valid,
        launch=_double_buffer_launch,
        args=_gemm_args,
        prepare=_zero_for_split_k,
    ),
    # blas/dot/: DOT (chapter 7; DOT 7 at the bandwidth roof, chapter 12)
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
        key="blas/dot/07_bandwidth", chapter="12-bandwidth-roof", entry="dot_bandwidth<{BLOCK}, {UNROLL}, {DET}, {CS}>", op=ops.Dot,
        layout="col", title="DOT 7: 16-byte loads, UNROLL of them in flight per thread, a grid sized to the GPU",
        params={"BLOCK": (256, 512, 1024), "UNROLL": (1, 2, 4, 8), "GRID": (264, 528, 1056, 2112, 4224, 8448),
                "DET": (0, 1), "CS": (0, 1)},
        defaults={"BLOCK": 512, "UNROLL": 4, "GRID": 1056, "DET": 0, "CS": 1},
        valid=lambda c: not (c["DET"] and c["GRID"] > DOT_WORKSPACE - 1),   # a partial per block in the workspace
        launch=lambda p, c: (max(1, min(c["GRID"], cdiv(p.n, 4 * c["BLOCK"]))), c["BLOCK"], 0),
        args=_dot_args, workspace=lambda p, c: (dot_workspace(),),
        prepare=lambda p, c, inputs, out: None if c["DET"] else out.fill(0),
    ),
    # blas/gemv/: GEMV (chapter 8; GEMV 4 at the bandwidth roof, chapter 12)
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
        key="blas/gemv/04_bandwidth", chapter="12-bandwidth-roof", entry="gemv_bandwidth<{WARPS}, {UNROLL}, {SPLIT}, {VEC}, {CS}, {TRANS}>",
        op=ops.Gemv, layout="col", title="GEMV 4: coalesced for 'N' and 'T', UNROLL loads in flight per thread",
        params={"WARPS": (4, 8, 16, 32), "UNROLL": (1, 4, 8), "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
                "VEC": (1, 4), "CS": (0, 1)},
        defaults={"WARPS": 16, "UNROLL": 4, "SPLIT": 1, "VEC": 1, "CS": 1},
        problem_params=_TRANS,
        launch=lambda p, c: ((max(1, cdiv(p.out_len, 32 * c["VEC"])), c["SPLIT"]) if p.trans == "N"
                             else max(1, cdiv(p.out_len, c["WARPS"])), 32 * c["WARPS"], 0),
        args=_gemv_args, workspace=lambda p, c: gemv_workspace(p.out_len, c["SPLIT"]),
    ),
    Variant(
        key="blas/gemv/05_any_shape", chapter="10-scaling",
        entry="gemv_any_shape<{WARPS}, {LANES}, {UNROLL}, {SPLIT}, {CS}>", op=ops.Gemv, layout="col",
        title="GEMV 5: 'T' for every shape, LANES lanes a column and SPLIT blocks along it",
        params={"WARPS": (4, 8), "LANES": (4, 8, 16, 32), "UNROLL": (2, 4), "SPLIT": (1, 2, 4, 8, 16, 32, 64, 128),
                "CS": (0, 1)},
        defaults={"WARPS": 8, "LANES": 32, "UNROLL": 4, "SPLIT": 1, "CS": 0},
        refuse=lambda p, c: None if p.trans == "T" else "GEMV 5 computes op(A) = A^T only ('N' is GEMV 4's)",
        launch=lambda p, c: ((max(1, cdiv(p.out_len, c["WARPS"] * 32 // c["LANES"])), c["SPLIT"]), 32 * c["WARPS"], 0),
        args=_gemv_args, workspace=lambda p, c: gemv_workspace(p.out_len, c["SPLIT"]),
    ),
    # blas/gemm/: column-major GEMM with the BLAS's transposes (chapter 9; GEMM 5, gl.blas.gemm's kernel, in chapter 13's climb)
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
        key="blas/gemm/05_warp_tiled", chapter="13-sgemm-climb",
        entry="gemm_warp_tiled<{BM}, {BN}, {BK}, {WM}, {WN}, {LANES}, {GROUP}, {MINB}, {SPLITK}, {TA}, {TB}>",
        op=ops.Gemm, layout="col",
        title="GEMM 5: Part IV's warp tiles, two stages, for every transpose, split over K when C is small",
        params={"BM": (32, 64, 128, 256), "BN": (32, 64, 128, 256), "BK": (8, 16), "WM": (32, 64), "WN": (32, 64),
                "LANES": (4, 8), "GROUP": (1, 8), "MINB": (1, 2), "SPLITK": (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)},
        defaults={"BM": 128, "BN": 128, "BK": 8, "WM": 64, "WN": 32, "LANES": 8, "GROUP": 8, "MINB": 2, "SPLITK": 1},
        valid=_warp_tiled_valid, problem_params=_TRANS2,
        launch=lambda p, c: ((max(1, cdiv(p.m, c["BM"]) * cdiv(p.n, c["BN"])), c["SPLITK"]), _warp_threads(c),
                             8 * c["BK"] * (c["BM"] + c["BN"] + 8)),
        args=_gemm_batched_args, workspace=lambda p, c: gemm_split_workspace(p.m, p.n, c),
    ),
    # tc/: tensor cores (chapter 14: WMMA and 3xTF32; chapter 15: mma.sync, and Hopper's wgmma fed by TMA)
    Variant(
        key="tc/01_wmma", chapter="14-tensor-cores", entry="wmma_gemm<{PREC}, {WARPS_M}, {WARPS_N}>", op=ops.TcGemm,
        title="WMMA: one warp per 16 x 16 tile of C, from global memory",
        params={"WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4)}, defaults={"WARPS_M": 2, "WARPS_N": 2},
        problem_params=_tc_precision,
        refuse=_tc_refuse, needs=_AMPERE_FRAGMENTS,
        launch=lambda p, c: ((cdiv(p.n, 16 * c["WARPS_N"]), cdiv(p.m, 16 * c["WARPS_M"])), 32 * c["WARPS_M"] * c["WARPS_N"], 0),
        args=_tc_operands,
    ),
    Variant(
        key="tc/02_3xtf32", chapter="14-tensor-cores", entry="gemm_3xtf32<{WARPS_M}, {WARPS_N}>", op=ops.Gemm,
        title="3xTF32: FP32 SGEMM on TF32 tensor cores, each operand as a head and a tail (finite inputs: an "
              "infinite one gives NaN, its tail being inf - inf)",
        params={"WARPS_M": (1, 2, 4), "WARPS_N": (1, 2, 4)}, defaults={"WARPS_M": 2, "WARPS_N": 2},
        needs=_TF32_FRAGMENTS,
        launch=lambda p, c: ((cdiv(p.n, 16 * c["WARPS_N"]), cdiv(p.m, 16 * c["WARPS_M"])), 32 * c["WARPS_M"] * c["WARPS_N"], 0),
        args=_gemm_args,
    ),
    Variant(
        key="tc/03_wmma_pipelined", chapter="14-tensor-cores",
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
        key="tc/04_3xtf32_pipelined", chapter="14-tensor-cores",
        entry="gemm_3xtf32_pipelined<{BM}, {BN}, {WM}, {WN}, {STAGES}>", op=ops.Gemm,
        title="3xTF32 fed as tc/03: FP32 SGEMM on TF32 tensor cores through a cp.async pipeline (finite inputs: "
              "an infinite one gives NaN, its tail being inf - inf)",
        params=_TC_TILES, defaults=_TC_TILE_DEFAULTS, valid=_tc_tiles_valid, needs=_TF32_FRAGMENTS,
        launch=_tc_tiles_launch,
        args=_gemm_args,
    ),
    Variant(
        key="tc/05_mma_sync", chapter="15-hopper",
        entry="mma_sync_gemm<{PREC}, {BM}, {BN}, {WM}, {WN}, {BK}, {STAGES}>", op=ops.TcGemm,
        title="mma.sync and ldmatrix in inline PTX, fed through a cp.async pipeline (FP16, BF16, TF32)",
        params={**_TC_TILES, "BK": (32, 64)}, defaults={**_TC_TILE_DEFAULTS, "WN": 64, "BK": 32},
        valid=lambda c: _tc_tiles_valid(c) and _mma_sync_bytes(c, 2) <= _most_shared(),
        # 16-bit stages that fit some GPU (TF32's, twice as large, and each GPU's own limit: does_not_fit)
        problem_params=_tc_precision,
        refuse=_tc_refuse,
        needs=(Need((8, 0), "mma.sync m16n8k16 and m16n8k8 with FP16, BF16 and TF32 operands"),),
        launch=lambda p, c: ((cdiv(p.n, c["BN"]), cdiv(p.m, c["BM"])), _warp_threads(c), _mma_sync_shared(p, c)),
        args=_tc_operands,
    ),
    Variant(
        key="tc/06_wgmma_tma", chapter="15-hopper", entry="wgmma_tma_gemm<{PREC}>", op=ops.TcGemm,
        title="Hopper: TMA copies and mbarriers feed wgmma, a producer warpgroup and two consumers",
        problem_params=_tc_precision, refuse=_hopper_refuse, needs=_HOPPER,
        launch=lambda p, c: ((cdiv(p.n, 256), cdiv(p.m, 128)), 384, HOPPER_SHARED),
        args=_hopper_args, options=("-arch=sm_90a",),
    ),
    Variant(
        key="tc/07_3xtf32_wgmma", chapter="15-hopper", entry="gemm_3xtf32_wgmma", op=ops.Gemm,
        title="3xTF32 on Hopper's pipeline: heads and tails split first, TF32 wgmma fed by TMA (finite inputs: "
              "an infinite one gives NaN, its tail being inf - inf)",
        needs=_HOPPER, prepare=_split_prepare,
        launch=lambda p, c: ((cdiv(p.n, 128), cdiv(p.m, 128)), 384, 3 * 4 * 128 * 32 * 4 + 1024),
        args=lambda p, inputs, out: (_split_buffers(p)[1], out, p.m, p.n, p.k), options=("-arch=sm_90a",),
    ),
    # chapter 16: past cuBLAS on Hopper, one technique a step, each from the one before
    Variant(
        key="tc/08_persistent", entry="wgmma_persistent_gemm<{PREC}>",
        title="tc/06 persistent: one block per SM walks the tiles in bands, loading the next tile's slices during "
              "the stores",
        launch=lambda p, c: ((_persistent_blocks(p),), 384, HOPPER_SHARED), args=_hopper_args,
        **_PAST_CUBLAS,
    ),
    Variant(
        key="tc/09_tma_store", entry="wgmma_tma_store_gemm<{PREC}, {STAGES}, {REGS}, {OUT}>",
        title="tc/08 with a TMA-store epilogue: accumulators to swizzled shared memory, out by the copy engine "
              "behind the next tile's main loop",
        # two knobs of the schedule, measured one at a time (chapter 16): the stages, the producer's registers
        params={"STAGES": (3, 4), "REGS": (24, 40, 56)}, defaults={"STAGES": 4, "REGS": 40},
        valid=lambda c: c["STAGES"] == 4 or c["REGS"] == 40,
        launch=lambda p, c: ((_persistent_blocks(p),), 384, _store_shared(c)), args=_store_args,
        **_PAST_CUBLAS_OUT,
    ),
    Variant(
        key="tc/10_cluster_multicast", entry="wgmma_multicast_gemm<{PREC}>",
        title="tc/09 in clusters of two blocks, one above the other, sharing B's slices by TMA multicast",
        launch=lambda p, c: ((_persistent_blocks(p, 2, _clusters_at_once("tc/10_cluster_multicast", p)),), 384,
                             STORE_SHARED),
        args=_store_args,
        **_PAST_CUBLAS,
    ),
    Variant(
        key="tc/11_stream_k", entry="wgmma_stream_k_gemm<{PREC}>",
        title="tc/09 with the last round's tiles split along K over every SM (stream-K): each tile's first piece "
              "stored, the others added to it in L2 by the copy engine",
        launch=lambda p, c: ((stream_k_split(p)[0],), 384, STORE_SHARED), args=_stream_k_args,
        workspace=_stream_k_workspace,
        **_PAST_CUBLAS,
    ),
    Variant(
        key="tc/12_pingpong", entry="wgmma_pingpong_gemm<{PREC}, {PINGPONG}, {OUT}>",
        title="tc/09 with 128 x 128 consumers: taking turns on the block's tiles, one storing while the other "
              "multiplies (ping-pong), or sharing 256 x 128 tiles (PINGPONG 0)",
        params={"PINGPONG": (0, 1)}, defaults={"PINGPONG": 1},
        launch=lambda p, c: ((_persistent_blocks(p, tile=_pingpong_tile(c)),), 384, STORE_SHARED),
        args=_store_args,
        **_PAST_CUBLAS_OUT,
    ),
    # chapter 17: FP8
    Variant(
        key="tc/13_fp8_scaled", chapter="17-fp8", entry="fp8_gemm<{KIND}, {SCALED}, {OUT}>", op=ops.Fp8Gemm,
        title="FP8 on Hopper: tc/09's pipeline with wgmma k32 on E4M3 or E5M2, scales per tensor (in the epilogue) or "
              "per 128-block (each slice's sum promoted into FP32 registers)",
        problem_params=_fp8_params, refuse=_fp8_refuse, needs=_HOPPER, options=("-arch=sm_90a",),
        launch=lambda p, c: ((_persistent_blocks(p, tile=_fp8_tile(p)),), 384, FP8_SHARED),
        args=_fp8_args,
    ),
]

REGISTRY = {v.key: v for v in VARIANTS}


def get(key: str) -> Variant:
    if key not in REGISTRY:
        raise KeyError(f"no variant {key!r} in the registry; there are: {', '.join(REGISTRY)}")
    return REGISTRY[key]


def with_prefix(prefixes=()) -> list:
    """The variants whose key starts with one of ``prefixes`` (``("tc/",)``: the tensor-core kernels), in the
    table's order; every variant when none is given. A prefix that names no variant is refused (ValueError)."""
    prefixes = tuple(prefixes or ())
    for prefix in prefixes:
        if not any(v.key.startswith(prefix) for v in VARIANTS):
            raise ValueError(f"no variant has a key that starts with {prefix!r} (e.g. {VARIANTS[-1].key})")
    return [v for v in VARIANTS if not prefixes or v.key.startswith(prefixes)]
