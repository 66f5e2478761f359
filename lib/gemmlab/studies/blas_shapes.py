"""gl.blas as a user calls it, over a grid of shapes: ``python -m gemmlab blas --shapes --record``.

Two measurements, in one run on the GPU in use, written to ``results/blas-shapes-<gpu>.json``:

- **the cost of a call**: host time per call of ``gl.blas`` and of CuPy's own call of cuBLAS for the same
  operation and shape (a loop of calls between two clock readings, the GPU left to run behind; the median of
  five loops), at three sizes of each routine; DOT both ways, returning a float (which waits for the GPU) and
  into a device array;
- **the precisions**: ``gl.blas.gemm`` on the tensor cores (FP16, BF16, TF32, 3xTF32) and batched, each point
  checked against float64 (its error beside the bound the docstring states) and timed against cuBLAS in the same
  mode (cublasGemmEx, cublasGemmStridedBatchedEx), with both calls' host time;
- **the shape grid**: at every point of the grid, every candidate configuration of the routine's kernel (GEMM 5's
  tiles and SPLITK; GEMV 4's and GEMV 5's slices and lanes) is checked against float64 and then timed as
  ``gl.blas`` calls it, round-robin with cuBLAS (CUDA events around the whole call, L2 flushed, medians). The
  fastest is the winner that ``gl.blas`` dispatches from (:func:`gemmlab.blas.choose` takes the nearest recorded
  shape); the record keeps each point's ratio to cuBLAS, the rule's pick and its ratio, and each class's worst.

A time budget (``--budget``, seconds) stops the grid early, saying which points were left; a progress bar
shows where it is.
"""
from __future__ import annotations

import itertools
import statistics
import time

import numpy

from .. import blas, ops
from ..check import check_many
from ..runtime import backend as hw
from ..runtime.limits import cdiv
from ..table import Table

# the shape classes of the grid: (m, n, k) for GEMM, all NN, and the transposes at a few of them
GEMM_GRID = {
    "square": [(n, n, n) for n in (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)],
    "awkward": [(511, 513, 257), (1000, 1000, 1000), (1234, 4321, 777), (2500, 1700, 900), (3000, 5000, 2000),
                (4097, 4097, 4097)],
    "skinny": [(64, 4096, 4096), (4096, 64, 4096), (128, 8192, 4096), (8192, 128, 4096), (3000, 200, 5000),
               (32, 8192, 8192), (8192, 32, 8192), (100, 100000, 1000)],
    "small K": [(4096, 4096, 64), (8192, 1024, 128), (4096, 4096, 256), (8192, 8192, 128), (2048, 2048, 32)],
    "large K": [(1024, 1024, 16384), (2048, 2048, 16384), (512, 512, 32768), (4096, 4096, 16384),
                (256, 256, 65536)],
}
GEMM_FORMS = {(4096, 4096, 4096): ("NT", "TN", "TT"), (1536, 1536, 1536): ("NT", "TN", "TT"),
              (64, 4096, 4096): ("TN", "NT"), (4096, 4096, 64): ("TN",)}
# GEMV: (m, n) of A, both transposes
GEMV_GRID = {
    "square": [(n, n) for n in (512, 1024, 2048, 4096, 8192, 16384)],
    "tall": [(100000, 64), (1000000, 32), (200000, 256), (16384, 1024)],
    "wide": [(64, 100000), (32, 1000000), (256, 200000), (1024, 16384)],
}
DOT_SIZES = [1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26]
# gl.blas.gemm in the tensor cores' modes (GEMM 6), each against cuBLAS in the same mode: (mode, C's type, (m, n, k,
# transposes), batch). 3xTF32 is timed against cuBLAS's FP32 SGEMM, whose accuracy it matches (cuBLAS has no 3xTF32).
PRECISION_GRID = [
    ("fp16", "fp32", (2048, 2048, 2048, "NN"), 1), ("fp16", "fp32", (4096, 4096, 4096, "NN"), 1),
    ("fp16", "fp32", (8192, 8192, 8192, "NN"), 1), ("fp16", "fp16", (4096, 4096, 4096, "NN"), 1),
    ("fp16", "fp32", (4096, 4096, 4096, "TN"), 1), ("fp16", "fp32", (4097, 4097, 4097, "NN"), 1),
    ("fp16", "fp32", (1000, 1000, 1000, "NN"), 1), ("fp16", "fp32", (64, 4096, 4096, "NN"), 1),
    ("bf16", "fp32", (4096, 4096, 4096, "NN"), 1), ("bf16", "bf16", (4096, 4096, 4096, "NN"), 1),
    ("bf16", "fp32", (2500, 1700, 900, "NT"), 1),
    ("tf32", "fp32", (2048, 2048, 2048, "NN"), 1), ("tf32", "fp32", (4096, 4096, 4096, "NN"), 1),
    ("tf32", "fp32", (4097, 4097, 4097, "TT"), 1),
    ("3xtf32", "fp32", (2048, 2048, 2048, "NN"), 1), ("3xtf32", "fp32", (4096, 4096, 4096, "NN"), 1),
    ("fp32", "fp32", (256, 256, 256, "NN"), 64), ("fp32", "fp32", (64, 64, 64, "NN"), 256),
    ("fp16", "fp32", (512, 512, 512, "NN"), 32), ("bf16", "bf16", (128, 128, 128, "TN"), 128),
    ("tf32", "fp32", (256, 256, 256, "NN"), 64), ("3xtf32", "fp32", (256, 256, 256, "NN"), 16),
]
# (C's type, cuBLAS's compute type) per mode: cudaDataType / cublasComputeType_t values (library_types.h)
_CUDA_TYPES = {"fp32": ops.CUDA_R_32F, "tf32": ops.CUDA_R_32F, "3xtf32": ops.CUDA_R_32F, "fp16": ops.CUDA_R_16F,
               "bf16": ops.CUDA_R_16BF}
_COMPUTE = {"fp32": ops.CUBLAS_COMPUTE_32F, "tf32": ops.CUBLAS_COMPUTE_32F_FAST_TF32,
            "3xtf32": ops.CUBLAS_COMPUTE_32F, "fp16": ops.CUBLAS_COMPUTE_32F, "bf16": ops.CUBLAS_COMPUTE_32F}
# the error gl.blas.gemm's docstring allows, relative to sum_k |alpha a b| (the largest element's), per mode and
# C's type, at these k: 2^-23 k plus the inputs' rounding (TF32) plus C's (a 16-bit C)
_ROUNDING = {"fp32": 0.0, "tf32": 2.0 ** -10, "3xtf32": 2.0 ** -21, "fp16": 0.0, "bf16": 0.0}
_OUT_ROUNDING = {"fp32": 0.0, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
CALL_SIZES = {"dot": [1 << 10, 1 << 20, 1 << 24], "gemv": [512, 2048, 4096], "gemm": [256, 1024, 4096]}

TILES = {"256x128": blas.GEMM_LARGE, "128x128": blas.GEMM_MIDDLE, "128x128, lanes 8 x 4": blas.GEMM_MIDDLE_8X4,
         "128x128, k steps of 8": blas.GEMM_MIDDLE_K8, "64x64": blas.GEMM_SMALL, "32x128": blas.GEMM_SKINNY,
         "128x32": blas.GEMM_SHORT}
SPLITS = (1, 2, 3, 4, 8, 16, 32, 64)  # the SPLITK values tried (gl.blas takes any of blas.GEMM_SPLITS)


def gemm_candidates(m: int, n: int, k: int, sms: int | None = None) -> list:
    """GEMM 5's configurations worth timing at (m, n, k): every tile, and each SPLITK that cuts K into slices of
    at least 128, fits the workspace, and keeps its blocks within four waves, or (2 and 3) evens out a last wave
    that is less than half full."""
    sms = sms or blas._sms()
    out = []
    for tile in TILES.values():
        tiles, places = cdiv(m, tile["BM"]) * cdiv(n, tile["BN"]), sms * tile["MINB"]
        limit = blas._gemm_split_limit(m, n, tile)
        ragged = 0 < tiles % places < places // 2
        for split in SPLITS:
            if split == 1 or (split <= limit and k >= 128 * split
                              and (tiles * split <= 4 * places or (ragged and split <= 3))):
                out.append({**tile, "SPLITK": split})
    return out


def gemv_candidates(m: int, n: int, trans: str, sms: int | None = None) -> list:
    """GEMV 4's ('N') or GEMV 5's ('T') configurations worth timing for A of m x n: each SPLIT from 1 up to
    eight blocks per SM; for 'T' each LANES too."""
    sms = sms or blas._sms()
    cs = int(4 * m * n < blas.STREAMING_BYTES)
    out = []
    if trans == "N":
        shapes = [(8, 8, 4), (4, 8, 4), (8, 4, 4)] + ([(8, 8, 1), (16, 8, 1), (32, 8, 1)] if m <= 256 else [])
        for (warps, unroll, vec), split in itertools.product(shapes, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)):
            groups = cdiv(m, 32 * vec)
            if split == 1 or (groups * split <= 8 * sms and n >= 16 * split):
                out.append({"WARPS": warps, "UNROLL": unroll, "SPLIT": split, "VEC": vec, "CS": cs})
        return out
    for lanes, split in itertools.product((4, 8, 16, 32), (1, 2, 4, 8, 16, 32, 64, 128)):
        blocks = cdiv(n, 8 * 32 // lanes)
        if lanes > 4 and m < lanes * 4:
            continue                                    # a column shorter than one float4 per lane
        if split == 1 or (blocks * split <= 8 * sms and m >= 4 * lanes * split):
            out.append({"WARPS": 8, "LANES": lanes, "UNROLL": 4, "SPLIT": split, "CS": cs})
    return out


def _label(params: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


def _gemm_args(problem, inputs, out):
    A, B = inputs
    return (problem.transa, problem.transb, 1.0, A, B, 0.0, out)


def _gemv_args(problem, inputs, out):
    A, x = inputs
    return (problem.trans, 1.0, A, x, 0.0, out)


def _point(routine, problem, key, candidates, rule, reps):
    """Check every candidate at one shape against float64, then time the ones that pass as gl.blas calls them,
    round-robin with cuBLAS. Returns the point's entry of the record."""
    from .. import timing
    args_of = _gemm_args if routine == "gemm" else _gemv_args
    rng = numpy.random.default_rng(7)
    inputs, out = problem.inputs(rng), problem.output()
    args = args_of(problem, inputs, out)
    plans = {}
    for params in candidates:
        plans[_label(params)] = blas.configure(routine, key(params), params, *args)

    def runner(plan):
        def run(i, o):
            blas.use(plan)
            getattr(blas, routine)(*args_of(problem, i, o))
        return run
    checked = check_many({name: runner(plan) for name, plan in plans.items()}, problem, seed=11)
    passed = {name: plan for name, plan in plans.items() if checked[name].ok}

    def call(plan):
        def go():
            blas.use(plan)
            getattr(blas, routine)(*args)
        return go
    if not passed:
        raise RuntimeError(f"no candidate of {problem.label} passed its check: " +
                           "; ".join(str(c) for c in checked.values()))
    t = timing.bench({name: call(plan) for name, plan in passed.items()}, problem, reps=reps,
                     label=f"blas shapes {problem.label}", seed=3)
    rows = {r.name: r for r in t.rows}
    lib = rows.pop(timing.LIBRARY)
    best = min(rows, key=lambda n: rows[n].median_ms)
    rule_name = _label(rule)
    blas.clear_plans()
    return {
        "winner": dict(plans[best].params) if best in plans else None, "winner_label": best,
        "ratio": lib.median_ms / rows[best].median_ms,
        "rule": rule, "rule_ratio": (lib.median_ms / rows[rule_name].median_ms) if rule_name in rows else None,
        "cublas_ms": lib.median_ms, "winner_ms": rows[best].median_ms,
        "candidates": {n: round(r.median_ms, 5) for n, r in rows.items()},
        "failed": {n: str(c) for n, c in checked.items() if not c.ok},
    }


def _host_time(fn, calls: int = 100, loops: int = 5) -> float:
    """Host microseconds per call: the median over ``loops`` loops of ``calls`` calls (the GPU runs behind)."""
    fn()
    hw.synchronize()
    per = []
    for _ in range(loops):
        hw.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter() - start) / calls * 1e6)
    hw.synchronize()
    return statistics.median(per)


def call_costs() -> list:
    """Host time per call of gl.blas and of CuPy's call of cuBLAS for the same operation, at three sizes each."""
    import cupy
    from cupy import cublas as cupy_blas
    rng = numpy.random.default_rng(1)
    rows = []
    for n in CALL_SIZES["dot"]:
        x, y = (cupy.asarray(rng.standard_normal(n).astype(numpy.float32)) for _ in range(2))
        r = cupy.zeros(1, dtype=numpy.float32)
        r0 = cupy.zeros((), dtype=numpy.float32)
        rows.append({"routine": "dot", "size": n, "form": "returns a float",
                     "gemmlab_us": _host_time(lambda: blas.dot(x, y)),
                     "cupy_us": _host_time(lambda: float(cupy_blas.dot(x, y))), "cupy_call": "float(cupy.cublas.dot(x, y))"})
        rows.append({"routine": "dot", "size": n, "form": "into a device array",
                     "gemmlab_us": _host_time(lambda: blas.dot(x, y, out=r)),
                     "cupy_us": _host_time(lambda: cupy_blas.dot(x, y, out=r0)), "cupy_call": "cupy.cublas.dot(x, y, out=r)"})
    for n in CALL_SIZES["gemv"]:
        A = cupy.asfortranarray(cupy.asarray(rng.standard_normal((n, n)).astype(numpy.float32)))
        x, y = (cupy.asarray(rng.standard_normal(n).astype(numpy.float32)) for _ in range(2))
        for t in ("N", "T"):
            rows.append({"routine": "gemv", "size": n, "form": t,
                         "gemmlab_us": _host_time(lambda: blas.gemv(t, 1.0, A, x, 0.0, y)),
                         "cupy_us": _host_time(lambda: cupy_blas.gemv(t, 1.0, A, x, 0.0, y)),
                         "cupy_call": f"cupy.cublas.gemv('{t}', 1.0, A, x, 0.0, y)"})
    for n in CALL_SIZES["gemm"]:
        A, B, C = (cupy.asfortranarray(cupy.asarray(rng.standard_normal((n, n)).astype(numpy.float32))) for _ in range(3))
        rows.append({"routine": "gemm", "size": n, "form": "NN",
                     "gemmlab_us": _host_time(lambda: blas.gemm("N", "N", 1.0, A, B, 0.0, C), calls=50),
                     "cupy_us": _host_time(lambda: cupy_blas.gemm("N", "N", A, B, out=C, alpha=1.0, beta=0.0), calls=50),
                     "cupy_call": "cupy.cublas.gemm('N', 'N', A, B, out=C, alpha=1.0, beta=0.0)"})
    for r in rows:
        r["ratio"] = r["gemmlab_us"] / r["cupy_us"]
    return rows


def _matrices(mode, out, m, n, k, form, batch, rng):
    """A, B and C of one precision point as gl.blas takes them: column-major (a batch of them: 3-D, matrix
    first), the inputs in the mode's type (BF16 as its bits), C in ``out``'s."""
    import cupy
    kind = {"tf32": "fp32", "3xtf32": "fp32"}.get(mode, mode)

    def make(rows, cols, what):
        shape = (cols, rows) if batch == 1 else (batch, cols, rows)
        values = cupy.asarray(rng.standard_normal(shape, dtype=numpy.float32))
        if what == "bf16":
            values = cupy.asarray(ops.to_bf16_bits(cupy.asnumpy(values)))
        elif what == "fp16":
            values = values.astype(numpy.float16)
        return values.swapaxes(-1, -2)
    A = make(m, k, kind) if form[0] == "N" else make(k, m, kind)
    B = make(k, n, kind) if form[1] == "N" else make(n, k, kind)
    return A, B, make(m, n, out)


def _values(a, kind):
    """float64 values on the device of an array of ``kind``'s storage (BF16 bits decoded)."""
    if kind == "bf16" and a.dtype == numpy.uint16:
        return (a.astype(numpy.uint32) << 16).view(numpy.float32).astype(numpy.float64)
    return a.astype(numpy.float64)


def _cublas_call(mode, out, A, B, C, form, batch):
    """cuBLAS in the same mode as gl.blas's call: cublasGemmEx (cublasGemmStridedBatchedEx for a batch) with the
    same types, leading dimensions and transposes, alpha = 1 and beta = 0 (host pointers)."""
    import cupy
    cublas = __import__("cupy_backends.cuda.libs.cublas", fromlist=["gemmEx"])
    handle = cupy.cuda.device.get_cublas_handle()
    m, n = C.shape[-2:]
    k = A.shape[-1] if form[0] == "N" else A.shape[-2]
    one, zero = numpy.ones(1, numpy.float32), numpy.zeros(1, numpy.float32)
    in_type, out_type, compute = _CUDA_TYPES[mode], _CUDA_TYPES[out], _COMPUTE[mode]
    ta, tb = (int(f == "T") for f in form)
    ld = lambda x: x.strides[-1] // x.itemsize                  # noqa: E731
    stride = lambda x: x.strides[0] // x.itemsize if batch > 1 else 0     # noqa: E731
    assert cublas.getPointerMode(handle) == cublas.CUBLAS_POINTER_MODE_HOST

    def go():
        if batch == 1:
            cublas.gemmEx(handle, ta, tb, m, n, k, one.ctypes.data, A.data.ptr, in_type, ld(A), B.data.ptr, in_type,
                          ld(B), zero.ctypes.data, C.data.ptr, out_type, ld(C), compute, ops.CUBLAS_GEMM_DEFAULT)
        else:
            cublas.gemmStridedBatchedEx(handle, ta, tb, m, n, k, one.ctypes.data, A.data.ptr, in_type, ld(A),
                                        stride(A), B.data.ptr, in_type, ld(B), stride(B), zero.ctypes.data, C.data.ptr,
                                        out_type, ld(C), stride(C), batch, compute, ops.CUBLAS_GEMM_DEFAULT)
    return go


def precision_point(mode, out, shape, batch, reps):
    """One point of PRECISION_GRID: gl.blas's call checked against float64 (its error against the docstring's
    bound), then timed round-robin with cuBLAS in the same mode, and both calls' host time."""
    from .. import timing
    m, n, k, form = shape
    rng = numpy.random.default_rng(13)
    A, B, C = _matrices(mode, out, m, n, k, form, batch, rng)
    kind = {"tf32": "fp32", "3xtf32": "fp32"}.get(mode, mode)
    kw = {"compute": mode if mode in blas.COMPUTES else None, "input_type": "bfloat16" if mode == "bf16" else None}
    call = (lambda: blas.gemm_strided_batched("N" if form[0] == "N" else "T", form[1], 1.0, A, B, 0.0, C, **kw)) \
        if batch > 1 else (lambda: blas.gemm(form[0], form[1], 1.0, A, B, 0.0, C, **kw))
    call()
    a, b = _values(A, kind), _values(B, kind)
    a, b = (a if form[0] == "N" else a.swapaxes(-1, -2)), (b if form[1] == "N" else b.swapaxes(-1, -2))
    want, size = a @ b, abs(a) @ abs(b)
    err = float((abs(_values(C, out) - want) / size.max(axis=(-2, -1), keepdims=True)).max())
    bound = 2.0 ** -23 * k + _ROUNDING[mode] + _OUT_ROUNDING[out]
    del a, b, want, size
    lib = _cublas_call(mode, out, A, B, C, form, batch)
    problem = ops.Gemm(m=m, n=n, k=k * batch, layout="col")            # (for the FLOP count: 2 m n k per product)
    t = timing.bench({"gl.blas": call, "cuBLAS": lib}, problem, library=False, reps=reps,
                     label=f"blas precisions {mode} {out} {shape} x{batch}", seed=3)
    rows = {r.name: r for r in t.rows}
    plan = blas.plan_of("gemm_strided_batched" if batch > 1 else "gemm", form[0], form[1], 1.0, A, B, 0.0, C, **kw)
    entry = {"routine": "gemm_ex", "class": mode, "shape": list(shape), "batch": batch, "out": out,
             "kernel": plan.key, "winner": None, "winner_label": plan.key,
             "ratio": rows["cuBLAS"].median_ms / rows["gl.blas"].median_ms, "cublas_ms": rows["cuBLAS"].median_ms,
             "winner_ms": rows["gl.blas"].median_ms, "tflops": rows["gl.blas"].gflops / 1e3,
             "cublas_tflops": rows["cuBLAS"].gflops / 1e3, "error": err, "bound": bound, "within": err <= bound,
             "cublas": ("cublasGemmStridedBatchedEx" if batch > 1 else "cublasGemmEx") +
                       (" FP32 (it has no 3xTF32)" if mode == "3xtf32" else ""),
             "gemmlab_us": _host_time(call, calls=20), "cupy_us": _host_time(lib, calls=20)}
    blas.clear_plans()
    return entry


def _grid_points():
    for family, shapes in GEMM_GRID.items():
        for m, n, k in shapes:
            for form in ("NN",) + GEMM_FORMS.get((m, n, k), ()):
                yield "gemm", family, (m, n, k, form)
    for family, shapes in GEMV_GRID.items():
        for m, n in shapes:
            for t in ("N", "T"):
                yield "gemv", family, (m, n, t)
    for n in DOT_SIZES:
        yield "dot", "n >= 2^20" if n >= 1 << 20 else "small", (n,)
    for mode, out, shape, batch in PRECISION_GRID:
        yield "precisions", mode, (mode, out, shape, batch)


def run(budget: float = 480.0, reps: int = 10, progress: bool = True, only=None) -> dict:
    """The whole study on the GPU in use: the call costs, then the grid until ``budget`` seconds have gone."""
    from tqdm.auto import tqdm
    from .. import timing
    started = time.monotonic()
    calls = call_costs() if only is None or set(only) - {"precisions"} else []
    points = [p for p in _grid_points() if only is None or p[0] in only]
    grid, left = [], []
    sms = blas._sms()
    bar = tqdm(points, desc="blas shapes", disable=not progress)
    for routine, family, shape in bar:
        if time.monotonic() - started > budget:
            left.append({"routine": routine, "class": family, "shape": list(shape)})
            continue
        bar.set_postfix_str(f"{routine} {shape}")
        if routine == "precisions":
            grid.append(precision_point(*shape, reps))
            continue
        if routine == "gemm":
            m, n, k, form = shape
            problem = ops.Gemm(m=m, n=n, k=k, transa=form[0], transb=form[1], layout="col")
            entry = _point("gemm", problem, lambda c: blas.GEMM, gemm_candidates(m, n, k, sms),
                           blas._gemm_params(m, n, k, sms), reps)
        elif routine == "gemv":
            m, n, t = shape
            problem = ops.Gemv(m=m, n=n, trans=t, layout="col")
            key = blas.GEMV if t == "N" else blas.GEMV_T
            entry = _point("gemv", problem, lambda c, key=key: key, gemv_candidates(m, n, t, sms),
                           blas._gemv_params(m, n, t, sms), reps)
        else:
            (n,) = shape
            problem = ops.Dot(n=n)
            x, y = problem.inputs(numpy.random.default_rng(5))
            r = hw.xp.zeros(1, dtype=numpy.float32)
            got = blas.dot(x, y)
            want = float(hw.to_host(x).astype(numpy.float64) @ hw.to_host(y).astype(numpy.float64))
            scale = float(numpy.abs(hw.to_host(x)).astype(numpy.float64) @ numpy.abs(hw.to_host(y)))
            t = timing.bench({"gl.blas.dot": lambda: blas.dot(x, y, out=r)}, problem, reps=reps * 2,
                             label=f"blas shapes {problem.label}", seed=3)
            rows = {row.name: row for row in t.rows}
            lib = rows[timing.LIBRARY]
            entry = {"winner": blas._dot_params(n, sms), "winner_label": "gl.blas.dot",
                     "ratio": lib.median_ms / rows["gl.blas.dot"].median_ms, "rule": blas._dot_params(n, sms),
                     "rule_ratio": lib.median_ms / rows["gl.blas.dot"].median_ms, "cublas_ms": lib.median_ms,
                     "winner_ms": rows["gl.blas.dot"].median_ms, "error": abs(got - want) / scale}
        grid.append({"routine": routine, "class": family, "shape": list(shape), **entry})
    return {"calls": calls, "grid": grid, "left": left, "budget_s": budget, "reps": reps,
            "seconds": time.monotonic() - started, "only": only, **summarize(grid)}


TARGET = 0.9
GEMV_FLOOR_MS = 0.020     # GEMV's target holds where cuBLAS's own call takes longer than this (below: launch-bound)


def in_scope(point: dict) -> bool:
    """Whether a grid point counts towards its class's target: every GEMM point; GEMV where cuBLAS's call takes
    more than GEMV_FLOOR_MS; DOT from 2^20 elements."""
    if point["routine"] == "gemv":
        return point["cublas_ms"] > GEMV_FLOOR_MS
    if point["routine"] == "dot":
        return point["shape"][0] >= 1 << 20
    return point["routine"] == "gemm"         # (the tensor cores' modes are measured against cuBLAS, without a target)


def summarize(grid: list) -> dict:
    """The winners gl.blas dispatches from (by routine) and each class's worst ratio, over the points that count
    towards the target (:func:`in_scope`), against it."""
    winners = {}
    for g in grid:
        if g["routine"] in ("gemm", "gemv") and g.get("winner"):
            winners.setdefault(g["routine"], []).append({"shape": g["shape"], "params": g["winner"]})
    classes = {}
    for g in grid:
        c = classes.setdefault(f"{g['routine']} {g['class']}", {"points": 0, "counted": 0, "worst": None,
                                                               "worst_shape": None, "winners": {}})
        c["points"] += 1
        c["winners"][g["winner_label"]] = c["winners"].get(g["winner_label"], 0) + 1
        if not in_scope(g):
            continue
        c["counted"] += 1
        if c["worst"] is None or g["ratio"] < c["worst"]:
            c["worst"], c["worst_shape"] = g["ratio"], g["shape"]
    for c in classes.values():
        c["met"] = None if c["worst"] is None else c["worst"] >= TARGET
    return {"winners": winners, "classes": classes, "target": TARGET, "gemv_floor_ms": GEMV_FLOOR_MS}


def save(result: dict):
    """Write the record; a run of some routines (``--only``) replaces those routines' points and call costs in the
    GPU's record and keeps the rest."""
    from .. import record
    name = blas.SHAPES_RECORD + record.gpu_slug()
    only = result.get("only")
    data = dict(result)
    if only:
        try:
            old = record.load(name)
        except FileNotFoundError:
            old = None
        if old is not None:
            routines = {"precisions": {"gemm_ex", "precisions"}}
            mine = set().union(*(routines.get(o, {o}) for o in only))
            data["grid"] = [g for g in old["grid"] if g["routine"] not in mine] + result["grid"]
            data["calls"] = result["calls"] or old.get("calls", [])
            data["left"] = [p for p in old.get("left", []) if p["routine"] not in mine] + result["left"]
            data.update(summarize(data["grid"]))
            data["kept_from"] = {"environment": old.get("environment"), "command": old.get("command"),
                                 "routines": sorted({g["routine"] for g in old["grid"]} - mine)}
    data["command"] = "python -m gemmlab blas --shapes --record" + (f" --only {' '.join(only)}" if only else "")
    return record.save(name, data)


def show(result: dict) -> None:
    """Show a shape study's tables (the call costs, the grid against cuBLAS, the tensor-core points) and print
    each class's verdict."""
    Table(["routine", "size", "form", "gl.blas", "cuBLAS", "ratio"],
          [[r["routine"], r["size"], r["form"], f"{r['gemmlab_us']:.1f}", f"{r['cupy_us']:.1f}", f"{r['ratio']:.2f}x"]
           for r in result["calls"]], align="lrlrrr",
          title="host time per call (µs): gl.blas against CuPy's call of cuBLAS").show()
    Table(["routine", "class", "shape", "ratio", "rule", "winner"],
          [[g["routine"], g["class"], str(tuple(g["shape"])), f"{g['ratio']:.1%}",
            f"{g['rule_ratio']:.1%}" if g.get("rule_ratio") is not None else "n/a", g["winner_label"]]
           for g in result["grid"] if g["routine"] != "gemm_ex"], align="lllrrl",
          title="ratio to cuBLAS, as gl.blas calls it (winner; the rule's pick)").show()
    ex = [g for g in result["grid"] if g["routine"] == "gemm_ex"]
    if ex:
        Table(["class", "out", "shape", "batch", "ratio", "TFLOP/s", "cuBLAS", "error", "bound", "host us",
               "cuBLAS us", "kernel"],
              [[g["class"], g["out"], str(tuple(g["shape"])), g["batch"], f"{g['ratio']:.1%}", f"{g['tflops']:.1f}",
                f"{g['cublas_tflops']:.1f}", f"{g['error']:.1e}", f"{g['bound']:.1e}", f"{g['gemmlab_us']:.1f}",
                f"{g['cupy_us']:.1f}", g["kernel"]] for g in ex], align="lllrrrrrrrrl",
              title="gl.blas.gemm on the tensor cores against cuBLAS in the same mode (ratio; TFLOP/s, gl.blas and "
                    "cuBLAS; error and its bound; host us per call, gl.blas and cuBLAS)").show()
    for name, c in result["classes"].items():
        if name.startswith("gemm_ex"):
            continue
        if c["worst"] is None:
            print(f"  {name:<18} no point counts towards the target (cuBLAS's call is launch-bound there)")
            continue
        print(f"  {name:<18} worst {c['worst']:6.1%} at {tuple(c['worst_shape'])} ({c['counted']} of {c['points']} "
              f"points count): {'met' if c['met'] else 'below'} {result['target']:.0%}")
    for p in result["left"]:
        print(f"  left for lack of time: {p['routine']} {tuple(p['shape'])}")


def load() -> dict:
    """The shape record a chapter shows: the reader's GPU's, else the H200's."""
    from .. import record
    return record.shown("blas-shapes")


def ratio_grid(data: dict, routine: str, family: str) -> list:
    """(shape, ratio, counts towards the target) of one class of a record's grid, in grid order."""
    return [(tuple(g["shape"]), g["ratio"], in_scope(g)) for g in data["grid"]
            if g["routine"] == routine and g["class"] == family]


def plot(data: dict | None = None, ax=None):
    """The grid as a picture: for each GEMM class and GEMV's, each point's ratio to cuBLAS (bars, the 90% line:
    green at or above it, red below, grey where the point does not count towards it), the GPU and date of the
    record in the title."""
    import matplotlib.pyplot as plt
    data = data or load()
    families = [("gemm", f) for f in GEMM_GRID] + [("gemv", f) for f in GEMV_GRID]
    have = [(r, f) for r, f in families if ratio_grid(data, r, f)]
    if ax is None:
        fig, axes = plt.subplots(len(have), 1, figsize=(7.6, 2.9 * len(have)), squeeze=False, layout="constrained")
        axes = axes[:, 0]
    else:
        axes = [ax] * len(have)
    for a, (routine, family) in zip(axes, have):
        pts = ratio_grid(data, routine, family)
        names = ["x".join(str(v) for v in s[:-1]) + ("" if s[-1] in ("NN",) else f" {s[-1]}") for s, _, _ in pts]
        ratios = [100 * r for _, r, _ in pts]
        colors = ["#bbb" if not counted else "#2a7" if r >= 100 * TARGET else "#d64"
                  for r, (_, _, counted) in zip(ratios, pts)]
        a.bar(range(len(pts)), ratios, color=colors)
        a.axhline(100 * TARGET, color="#555", lw=0.8, ls="--")
        a.axhline(100, color="#999", lw=0.6)
        a.set_xticks(range(len(pts)), names, rotation=90, fontsize=10)     # upright: as many as fit the width
        a.set_ylabel("% of cuBLAS", fontsize=10)
        a.set_title(f"{routine.upper()}, {family}", fontsize=10, loc="left")
        a.set_ylim(0, max(130, max(ratios) + 10))
    env = data.get("environment", {})
    axes[0].figure.suptitle(f"gl.blas as a user calls it, against cuBLAS: {env.get('gpu')}, {env.get('date', '')[:10]}"
                            f"\n({data.get('shown_as', '')})", fontsize=10)
    return axes
