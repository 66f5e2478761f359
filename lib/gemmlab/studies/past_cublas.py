"""Chapter 16's ladder measured in one run: ``python -m gemmlab hopper --record``.

For FP16 and BF16 inputs (FP32 accumulation) at every shape of :data:`SHAPES`, twice:

- C in FP32: each Hopper kernel of :data:`LADDER` (chapter 15's tc/06, then one technique a step) is checked
  against float64 on the inputs as the tensor cores see them, then timed with cuBLAS in the same mode
  (cublasGemmEx, FP32 output) and a Triton matmul (:func:`triton_matmul`: the tutorial's structure, the fastest
  of :data:`TRITON_CONFIGS` on this shape, itself checked first) in one round-robin (:func:`gemmlab.bench`: CUDA
  events, medians, L2 flushed, the GPU kept busy while the host issues each call);
- C in the inputs' type, as torch and every training and inference stack ask for it: the steps that write it
  (:data:`LADDER_16`) against ``torch.matmul`` (cuBLAS as torch calls it), cublasGemmEx writing the same type,
  and the Triton matmul storing that type, in one round-robin.

Where Triton or torch is not installed the column says so; neither is a dependency of the book. Every row
carries the SM clock and power sampled during its timed calls. Results go to ``results/hopper-<gpu>.json``
with the targets of :data:`TARGETS`, met or not.
"""
from __future__ import annotations

import numpy

from .. import record
from ..check import FP32_TOLERANCE, output_values, rel_error
from ..cases import cases, problem as problem_of
from ..runtime import backend as hw
from ..table import Table
from ..timing import Timings, bench
from .core import case_name, measure_problem

# (M, N, K): the squares, then two shapes from language-model layers (a projection of 8192 tokens with
# K = 1024; a 4096-token batch through a 4096 -> 14336 MLP layer)
SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192),
          (8192, 8192, 1024), (4096, 14336, 4096)]
PRECISIONS = ("fp16", "bf16")
LADDER = cases(("tc/06_wgmma_tma", {}), ("tc/08_persistent", {}), ("tc/09_tma_store", {}),
               ("tc/10_cluster_multicast", {}), ("tc/11_stream_k", {}), ("tc/12_pingpong", {}))
# the steps that write C in the inputs' type too (OUT 1, chosen by the problem), and the baseline they are held to
LADDER_16 = cases(("tc/09_tma_store", {}), ("tc/12_pingpong", {}))
OUTS = ("fp32", "same")
TORCH = "torch.matmul"
# the schedule's knobs, each changed alone from tc/09 (or, for the tile's shape, from tc/12's consumers), timed
# in the same round-robin as the ladder
KNOBS = cases(("tc/09_tma_store", {"STAGES": 3}), ("tc/09_tma_store", {"REGS": 24}),
              ("tc/09_tma_store", {"REGS": 56}), ("tc/12_pingpong", {"PINGPONG": 0}))
# the bar: a fraction of cuBLAS at each shape (never lowered here), and faster than Triton at every one
# (C in FP32: of cuBLAS writing FP32; C in the inputs' type: of torch.matmul)
TARGETS = {(4096, 4096, 4096): 1.00, (8192, 8192, 8192): 1.00}
OTHER_TARGET = 0.95
TRITON = "Triton matmul"
# the GPU waits this long before each timed call (gemmlab.bench's settle_us): at 2048^3 a kernel takes about
# 25 µs, less than the host needs to issue some of these calls, which would otherwise be timed with it
SETTLE_US = 200.0
# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps): the tutorial's kind of candidates
TRITON_CONFIGS = [(128, 256, 64, 8, 3, 8), (256, 128, 64, 8, 3, 8), (128, 128, 64, 8, 4, 4),
                  (128, 256, 64, 8, 4, 8), (128, 128, 128, 8, 3, 8)]


# chapter 16's float64 checks of each step: sizes that are multiples of no tile, three with more tiles than a
# Hopper GPU has SMs (blocks walk several), an odd number of rows of tiles (a cluster's second tile lies
# below C), tile counts that leave some ping-pong consumers none, and a shape at which stream-K cuts one tile
# of 18 slices over 18 blocks
CHECK_SIZES = ((200, 136, 72), (3000, 2600, 520), (3900, 4104, 200), (2430, 1784, 1096))


def check_step(key: str, precision: str = "fp16", sizes=CHECK_SIZES, out: str = "fp32") -> None:
    """Print one ladder step's float64 check at each of ``sizes`` (chapter 16), a line per size as it is done:
    on the GPU in use, or on the CPU emulator as the book's GPU where this one cannot run the kernel (the line
    says so and why). ``out``: C in FP32, or "same" (the inputs' type: tc/09 and tc/12)."""
    from .. import ops, registry
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    if out not in OUTS:
        raise ValueError(f"out must be one of {', '.join(OUTS)}; got {out!r}")
    variant = registry.get(key)
    c_type = "fp32" if out == "fp32" else precision
    for m, n, k in sizes:
        line = variant.verdict(ops.TcGemm(m=m, n=n, k=k, precision=precision, out=c_type))
        print(f"{precision.upper()} {m} x {n} x {k}{'' if out == 'fp32' else f', {c_type.upper()} C'}: {line}",
              flush=True)


def target(shape) -> float:
    return TARGETS.get(tuple(shape), OTHER_TARGET)


def _triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, alpha, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, GROUP: tl.constexpr):
        # program -> tile of C in bands of GROUP rows of tiles (as tc/08's grouped_tile)
        pid = tl.program_id(0)
        rows_of_tiles, cols_of_tiles = tl.cdiv(M, BM), tl.cdiv(N, BN)
        band = pid // (GROUP * cols_of_tiles)
        first = band * GROUP
        height = tl.minimum(rows_of_tiles - first, GROUP)
        inside = pid % (GROUP * cols_of_tiles)
        tm, tn = first + inside % height, inside // height
        rm = (tm * BM + tl.arange(0, BM)) % M          # rows past M wrap (their results are not stored)
        rn = (tn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            left = K - k * BK
            acc = tl.dot(tl.load(pa, mask=rk[None, :] < left, other=0.0),
                         tl.load(pb, mask=rk[:, None] < left, other=0.0), acc)
            pa += BK * sak
            pb += BK * sbk
        cm, cn = tm * BM + tl.arange(0, BM), tn * BN + tl.arange(0, BN)
        # (alpha: 1 here; chapter 17's per-tensor FP8 scales)
        tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc * alpha, mask=(cm[:, None] < M) & (cn[None, :] < N))
    return triton, matmul


def triton_matmul(problem, inputs, out, config):
    """A zero-argument callable: the Triton matmul of ``problem`` on CuPy arrays ``inputs`` into ``out`` (C in
    ``problem.out``'s type: the store rounds the FP32 sums to it, to nearest), with ``config`` (one of
    :data:`TRITON_CONFIGS`). Raises ImportError without Triton and torch."""
    A, B, C = _torch_views(problem, inputs, out)
    return triton_call(A, B, C, 1.0, config)


def triton_call(A, B, C, alpha, config):
    """A zero-argument callable: the Triton matmul C = alpha A B on torch tensors (any strides) with ``config``."""
    triton, kernel = _triton_kernel()
    bm, bn, bk, group, stages, warps = config
    (m, k), n = A.shape, B.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

    def run():
        kernel[grid](A, B, C, m, n, k, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                     alpha, BM=bm, BN=bn, BK=bk, GROUP=group, num_stages=stages, num_warps=warps)
    return run


def _torch_views(problem, inputs, out):
    """A, B and C as torch tensors on the same memory (BF16 bits viewed as torch.bfloat16)."""
    import torch
    A, B, C = (torch.from_dlpack(x) for x in (*inputs, out))
    if problem.precision == "bf16":                      # the book keeps BF16 values as their bits
        A, B = A.view(torch.bfloat16), B.view(torch.bfloat16)
    if problem.out == "bf16":
        C = C.view(torch.bfloat16)
    return A, B, C


def torch_matmul(problem, inputs, out):
    """A zero-argument callable: ``torch.matmul(A, B, out=C)`` on the same memory, C in the inputs' type (cuBLAS
    as torch calls it). Raises ImportError without torch."""
    import torch
    A, B, C = _torch_views(problem, inputs, out)
    return lambda: torch.matmul(A, B, out=C)


def _first_call(make, problem, inputs, ref, scale) -> tuple:
    """(call, error): a baseline's zero-argument call (``make(out)``) into a fresh C, run once, and its error
    against the float64 reference ``ref``."""
    out = problem.output()
    run = make(out)
    run()
    hw.synchronize()
    return run, rel_error(output_values(problem, out), ref, scale)


def checked_baseline(name, make, problem, inputs) -> dict:
    """A baseline (``make(problem, inputs, out)`` gives its zero-argument call) run once and checked against
    float64 as the book's kernels are: {"run": the call, "error": ...}, or {"missing": why} where it cannot be
    built here or gives a wrong answer (then it is not timed)."""
    try:
        run, err = _first_call(lambda out: make(problem, inputs, out), problem, inputs, problem.reference(inputs),
                               problem.error_scale(inputs))
    except ImportError as exc:
        return {"missing": f"{name} is not installed here ({exc})"}
    if not err <= problem.tolerance(FP32_TOLERANCE):
        return {"missing": f"{name} gave a wrong answer (error {err:.2e} against float64)", "error": err}
    return {"run": run, "error": err}


def pick_triton(problem, inputs, reps: int = 5, make=None, configs=TRITON_CONFIGS) -> dict:
    """Each of ``configs`` checked against float64 and timed alone on ``problem``; the fastest that is right, or
    why there is none ({"missing": why}). ``make(problem, inputs, out, config)`` gives the call (by default
    :func:`triton_matmul`)."""
    make = make or triton_matmul
    try:
        import importlib
        importlib.import_module("torch")
        _triton_kernel()
    except ImportError as exc:
        return {"missing": f"Triton (with torch) is not installed here ({exc})"}
    ref = problem.reference(inputs)
    scale = problem.error_scale(inputs)
    tried, best = [], None
    for config in configs:
        try:
            run, err = _first_call(lambda out, c=config: make(problem, inputs, out, c), problem, inputs, ref, scale)
        except Exception as exc:                      # a config this GPU cannot compile (shared memory, say)
            tried.append({"config": list(config), "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        t = bench({"t": run}, problem, library=False, reps=reps, label=f"{TRITON} {config}", settle_us=SETTLE_US)
        ms = t["t"].median_ms
        tried.append({"config": list(config), "error": err, "median_ms": ms})
        if err <= problem.tolerance(FP32_TOLERANCE) and (best is None or ms < best["median_ms"]):
            best = tried[-1]
    if best is None:
        return {"missing": "no Triton configuration gave the right answer", "tried": tried}
    return {"config": best["config"], "error": best["error"], "tried": tried}


def measure_shape(precision: str, shape, reps: int = 10, progress: bool = True, out: str = "fp32") -> dict:
    """One point of the study: ``out`` "fp32" (the ladder and its knobs against cuBLAS writing FP32) or "same"
    (:data:`LADDER_16` writing C in the inputs' type against torch.matmul, cuBLAS and Triton writing it too)."""
    if out not in OUTS:
        raise ValueError(f"out must be one of {', '.join(OUTS)}, got {out!r}")
    m, n, k = shape
    c_type = "fp32" if out == "fp32" else precision
    problem = problem_of("tc", m, n, k, precision=precision, out=c_type)
    inputs, c = problem.inputs(numpy.random.default_rng(1)), problem.output()
    tri = pick_triton(problem, inputs)
    extra, baselines = {}, {}
    if "config" in tri:
        extra[TRITON] = triton_matmul(problem, inputs, c, tuple(tri["config"]))
    if out == "same":
        got = checked_baseline(TORCH, torch_matmul, problem, inputs)
        baselines[TORCH] = {key: v for key, v in got.items() if key != "run"}
        if "run" in got:
            extra[TORCH] = got["run"]
    steps = LADDER if out == "fp32" else LADDER_16
    label = f"hopper ladder {precision.upper()} {m} x {n} x {k}" + ("" if out == "fp32" else f", {c_type.upper()} C")
    t, errors = measure_problem(steps + (KNOBS if out == "fp32" else []), problem, label, reps=reps,
                                progress=progress, extra=extra, settle_us=SETTLE_US)
    names = [case_name(key, p) for key, p in steps]               # the bar is met by a step, not by a knob
    ran = [x for x in names if x not in t.skipped]
    best = max(ran, key=lambda x: t.ratio(x))
    # the bar's baseline: cuBLAS writing FP32, or torch.matmul writing the inputs' type (where torch is here)
    base = TORCH if TORCH in extra else "cuBLAS"
    ratio, goal = t[base].median_ms / t[best].median_ms, target(shape)
    spread = {r["name"]: (r["q3_ms"] - r["q1_ms"]) / r["median_ms"] for r in t.records()}
    point = {"precision": precision, "out": c_type, "shape": list(shape), "best": best, "base": base,
             "ratio": ratio, "target": goal, "met": ratio >= goal, "errors": errors, "triton": tri,
             "baselines": baselines, "timing": t.to_dict(), "spread": spread, "settle_us": SETTLE_US,
             "versions": {"triton": _version("triton"), "torch": _version("torch")}}
    if TRITON in extra:
        point["vs_triton"] = t[TRITON].median_ms / t[best].median_ms
        point["faster_than_triton"] = point["vs_triton"] > 1.0    # by the medians; against_triton weighs the spread
    return point


def ranked(point: dict, a: str, b: str) -> bool:
    """Whether a point's run ranks rows a and b (:func:`gemmlab.timing.rank`): their medians differ by at least the
    larger of the two's spreads (IQR over median), and their SM clocks, where sampled, by no more than that."""
    from ..timing import rank
    rows = {r["name"]: r for r in point["timing"]["rows"]}
    return rank(rows[a], rows[b])[0]


def against_triton(point: dict) -> str:
    """'faster', 'slower' or 'tied' for a point's best step against Triton (tied: not :func:`ranked`)."""
    if not ranked(point, TRITON, point["best"]):
        return "tied"
    return "faster" if point["vs_triton"] > 1.0 else "slower"


def run_all(reps: int = 10, shapes=None, precisions=PRECISIONS, outs=OUTS) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"chapter 16's ladder is measured on a GPU ({hw.backend_reason})")
    from .climb import _warm_up
    _warm_up()
    points = []
    for out in outs:
        for precision in precisions:
            for shape in shapes or SHAPES:
                points.append(measure_shape(precision, shape, reps=reps, out=out))
                print(Timings.from_dict(points[-1]["timing"], recorded=False), flush=True)
                print(_line(points[-1]), flush=True)
    return {"points": points, "triton": _version("triton"), "torch": _version("torch"),
            "command": "python -m gemmlab hopper --record"}


def _version(module: str):
    """The version of ``module`` (torch, triton) as it says when imported here, or None where it is not installed."""
    import importlib
    try:
        return importlib.import_module(module).__version__
    except ImportError:
        return None


def _tf(point, name) -> str:
    row = next(r for r in point["timing"]["rows"] if r["name"] == name)
    return f"{row['gflops'] / 1e3:.0f} TF/s"


def _line(p) -> str:
    m, n, k = p["shape"]
    out = p.get("out", "fp32")
    base = p.get("base", "cuBLAS")
    tri = (f", {p['vs_triton']:.3f}x Triton ({_tf(p, TRITON)})" if "vs_triton" in p else
           f", Triton: {p['triton'].get('missing', 'not timed')}")
    return (f"{p['precision'].upper()} {m} x {n} x {k}, {out.upper()} C: best {p['best']} {_tf(p, p['best'])}, "
            f"{p['ratio']:.1%} of {base} ({_tf(p, base)}; target {p['target']:.0%}: "
            f"{'met' if p['met'] else 'missed'}){tri}")


def merged(new: dict, old: dict | None) -> dict:
    """A partial run (``hopper --record --out same``, say) put into the GPU's earlier record: its points replace the
    same points (precision, C's type, shape) of ``old``, the others stay, each keeping its own run's date (its
    timing's environment) and versions; ``runs`` lists the runs the record now holds."""
    if not old:
        return new

    def key(p):
        return p["precision"], p.get("out", "fp32"), tuple(p["shape"])
    fresh = {key(p) for p in new["points"]}
    runs = record.runs(old, new, lambda r: {"points": len(r["points"])})
    kept = [{"versions": {"triton": old.get("triton"), "torch": old.get("torch")}, **p}
            for p in old["points"] if key(p) not in fresh]
    return {**new, "points": kept + new["points"], "runs": runs}


def summary(result) -> str:
    return "\n".join(_line(p) for p in result["points"])


def save(result: dict):
    return record.save(f"hopper-{record.gpu_slug()}", result)


# --- what chapter 16 shows ---------------------------------------------------------------------------

SHORT = {"06_wgmma_tma[]": "tc/06", "08_persistent[]": "tc/08", "09_tma_store[]": "tc/09",
         "10_cluster_multicast[]": "tc/10", "11_stream_k[]": "tc/11", "12_pingpong[]": "tc/12",
         TRITON: "Triton", "cuBLAS": "cuBLAS"}
# the knobs' rows: (name in the records, the column's heading), each compared with KNOB_BASE in the same run
KNOB_BASE = "09_tma_store[]"
KNOB_ROWS = [("09_tma_store[STAGES=3]", "3 stages"), ("09_tma_store[REGS=24]", "REGS=24"),
             ("09_tma_store[REGS=56]", "REGS=56"), ("12_pingpong[PINGPONG=0]", "256x128"),
             ("12_pingpong[]", "ping-pong")]


def _shape_text(shape) -> str:
    m, n, k = shape
    return f"{m}^3" if m == n == k else f"{m} x {n} x {k}"


def ladder_table(result: dict | None = None) -> None:
    """Show the ladder's run (the record shown: the reader's GPU's, else the H200's): per precision and shape,
    each kernel's share of cuBLAS's speed, Triton's beside them, cuBLAS's TFLOP/s, the bar and whether the best
    met it, and the best against Triton."""
    result = result or record.shown("hopper")
    env = result["environment"]
    print(f"shown: {result.get('shown_as', 'a record given by the caller')}")
    first = next(points for _, points in _by_precision(result))[0]
    print(f"{env['gpu']}, {_date(first)}, Triton {_versions(result, first)['triton'] or 'not installed'}: FP32 C, "
          f"medians of {first['timing']['reps']}, L2 flushed, one round-robin per shape; % of cuBLAS in the same run")
    names = list(SHORT)[:-1]
    for precision, points in _by_precision(result):
        rows = []
        for p in points:
            timed = {r["name"]: r for r in p["timing"]["rows"]}
            tri = (f"{p['vs_triton']:.3f}x" + (" (tied: within the spread)" if against_triton(p) == "tied" else "")
                   if "vs_triton" in p else "no Triton")
            rows.append([_shape_text(p["shape"])]
                        + [f"{timed[n]['vs_library']:.1%}" if n in timed else "-" for n in names]
                        + [f"{timed['cuBLAS']['gflops'] / 1e3:.0f} TF/s",
                           f"{SHORT.get(p['best'], p['best'])} {p['ratio']:.1%} (bar {p['target']:.0%}: "
                           f"{'met' if p['met'] else 'MISSED'})", tri])
        Table(["shape"] + [SHORT[n] for n in names] + ["cuBLAS", "best vs bar", "vs Triton"], rows,
              align="r" * (len(names) + 2) + "ll", title=precision.upper()).show()


# C in the inputs' type: the rows of the table, in its order (name in the records, heading)
OUT16_ROWS = [("09_tma_store[]", "tc/09"), ("12_pingpong[]", "tc/12"), ("cuBLAS", "cublasGemmEx"),
              (TRITON, "Triton"), (TORCH, "torch.matmul")]


def out16_table(result: dict | None = None) -> None:
    """Show the run's points with C in the inputs' type: each kernel's and baseline's TFLOP/s, the best step
    against torch.matmul (the bar) and against Triton, each ranked only beyond the run's spread and at SM clocks
    no further apart than the margin (:func:`ranked`), and the clocks they ran at."""
    result = result or record.shown("hopper")
    env = result["environment"]
    groups = list(_by_precision(result, "same"))
    if not groups:
        print(f"{env['gpu']}: this record has no run with C in the inputs' type (python -m gemmlab hopper --record "
              "makes one)")
        return
    first = groups[0][1][0]
    versions = _versions(result, first)
    print(f"{env['gpu']}, {_date(first)}, torch {versions['torch'] or 'not installed'}, Triton "
          f"{versions['triton'] or 'not installed'}: C in the inputs' type, TFLOP/s (medians of "
          f"{first['timing']['reps']}, L2 flushed, one round-robin per shape); ~ : within the run's spread or at "
          "clocks further apart than the margin")
    for precision, points in groups:
        rows = []
        for p in points:
            timed = {r["name"]: r for r in p["timing"]["rows"]}
            cells = [f"{timed[n]['gflops'] / 1e3:.0f}" if n in timed else "-" for n, _ in OUT16_ROWS]
            best = SHORT.get(p["best"], p["best"])
            base = "torch" if p["base"] == TORCH else "cuBLAS"
            bar = (f"{best} {p['ratio']:.1%} of {base}{' ' if ranked(p, p['base'], p['best']) else '~'} "
                   f"(bar {p['target']:.0%}: {'met' if p['met'] else 'MISSED'})")
            tri = (f"{p['vs_triton']:.3f}x{' ' if ranked(p, TRITON, p['best']) else '~'}" if "vs_triton" in p
                   else "no Triton")
            clocks = "/".join(f"{timed[n]['clock']['median']:.0f}" if timed.get(n, {}).get("clock") else "-"
                              for n in (p["best"], p["base"]))
            rows.append([_shape_text(p["shape"])] + cells + [bar, tri, clocks])
        Table(["shape"] + [h for _, h in OUT16_ROWS] + ["best vs bar", "vs Triton", "SM MHz best/base"], rows,
              align="r" * (len(OUT16_ROWS) + 1) + "llr", title=f"{precision.upper()} in, {precision.upper()} C").show()


def _date(point: dict) -> str:
    """The day a point was measured (a record may hold points of two runs: :func:`merged`)."""
    return point["timing"]["environment"]["date"][:10]


def _versions(result: dict, point: dict) -> dict:
    """The Triton and torch a point was measured with (its own, or its record's where it has none)."""
    return point.get("versions") or {"triton": result.get("triton"), "torch": result.get("torch")}


def _by_precision(result: dict, out: str = "fp32"):
    """(precision, its points) for each precision of a ladder run that has any, C in FP32 (``out`` "fp32") or in
    the inputs' type ("same")."""
    for precision in PRECISIONS:
        points = [p for p in result["points"] if p["precision"] == precision
                  and (p.get("out", "fp32") == "fp32") == (out == "fp32")]
        if points:
            yield precision, points


def knob(point: dict, name: str, base: str) -> dict:
    """One knob at one point of the run: its share of cuBLAS, its speed against ``base``'s (time ratio: above 1,
    faster) and whether the run ranks the two (:func:`ranked`); None where either row is missing."""
    rows = {r["name"]: r for r in point["timing"]["rows"]}
    if name not in rows or base not in rows:
        return None
    return {"ratio": rows[name]["vs_library"], "vs_base": rows[base]["median_ms"] / rows[name]["median_ms"],
            "ranked": ranked(point, name, base)}


def knob_table(result: dict | None = None) -> None:
    """Show the schedule's knobs from the run shown: each changed alone, its share of cuBLAS at each shape and
    precision and its speed against tc/09 in the same round-robin ('~' where the margin is within the spread)."""
    result = result or record.shown("hopper")
    env = result["environment"]
    first = next(points for _, points in _by_precision(result))[0]
    print(f"{env['gpu']}, {_date(first)}: % of cuBLAS, then tc/09's time over the knob's (above 1: faster) in "
          f"the same round-robin; ~ : within the run's spread, not a ranking")
    print("3 stages: tc/09 with 3 stages, not 4; REGS=24, REGS=56: its producer keeps 24 or 56 registers, not 40; "
          "256x128: tc/12's consumers sharing 256 x 128 tiles; ping-pong: tc/12, 128 x 128 tiles in turns")
    for precision, points in _by_precision(result):
        rows = []
        for p in points:
            cells = []
            for name, _ in KNOB_ROWS:
                k = knob(p, name, KNOB_BASE)
                cells.append("-" if k is None else f"{k['ratio']:.1%} {k['vs_base']:.3f}{' ' if k['ranked'] else '~'}")
            rows.append([_shape_text(p["shape"]), f"{knob(p, KNOB_BASE, KNOB_BASE)['ratio']:.1%}"] + cells)
        Table(["shape", "tc/09"] + [what for _, what in KNOB_ROWS], rows, align="r" * (len(KNOB_ROWS) + 2),
              title=precision.upper()).show()


def plot(result: dict | None = None):
    """Each kernel's share of cuBLAS's speed at each shape, FP16 and BF16 side by side, from the run shown."""
    import matplotlib.pyplot as plt
    result = result or record.shown("hopper")
    env = result["environment"]
    names = [n for n in SHORT if n != "cuBLAS"]
    # one precision a row, 7.6 in wide: the book's column, so nothing is scaled down to fit it
    fig, axes = plt.subplots(len(PRECISIONS), 1, figsize=(7.6, 3.0 * len(PRECISIONS) + 0.8), sharex=True,
                             layout="constrained")
    shown = dict(_by_precision(result))
    for ax, precision in zip(axes, PRECISIONS):
        points = shown.get(precision, [])
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            ys = []
            for p in points:
                rows = {r["name"]: r for r in p["timing"]["rows"]}
                ys.append(rows[name]["vs_library"] * 100 if name in rows else 0)
            ax.bar([j + (i - (len(names) - 1) / 2) * width for j in range(len(points))], ys, width, label=SHORT[name])
        ax.axhline(100, color="k", lw=1, ls="--")
        ax.set_xticks(range(len(points)), [f"{m}^3" if m == n == k else f"{m}x{n}\nx{k}"    # two lines: they fit
                                           for m, n, k in (p["shape"] for p in points)], fontsize=10)
        ax.set_title(f"{precision.upper()}: % of cuBLAS, same run", fontsize=10, loc="left")
        ax.set_ylim(40, 130)
        ax.set_ylabel("% of cuBLAS's speed")
    axes[-1].legend(fontsize=10, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    fig.suptitle(f"{env['gpu']}, {_date(next(iter(shown.values()))[0])}", fontsize=10)
    return fig


def now(precision: str = "fp16", shape=(4096, 4096, 4096), reps: int = 10) -> dict | None:
    """One point of the ladder measured on the GPU in use, as ``hopper --record`` measures it, printed; on a GPU
    that cannot run the kernels (or none), one line that says why, and None."""
    from ..runtime.profiles import current
    from ..timing import kept
    m, n, k = shape
    why = (f"no GPU in use ({hw.backend_reason.rstrip('.')})" if not hw.on_gpu else
           None if current().capability == (9, 0) else
           f"the kernels of this chapter need a Hopper GPU (sm_90a), this is {current().describe()}")
    if why:
        print(f"not measured here: {why}")
        shown = kept(f"hopper ladder {precision.upper()} {m} x {n} x {k}")      # the chapter's committed run
        if shown is not None:
            shown.show()
        return None
    point = measure_shape(precision, shape, reps=reps)
    Timings.from_dict(point["timing"], recorded=False).show()
    print(_line(point))
    return point


def profile_table(data: dict | None = None) -> None:
    """Show the recorded Nsight Compute run of each step and cuBLAS (``profile --study hopper``); the last two
    columns: shared-memory store wavefronts and the bank conflicts among them, in millions."""
    from .profiling import _show_columns
    if data is None:
        try:
            data = record.shown("ncu-hopper")
        except FileNotFoundError:
            print("no profile of this chapter's kernels is recorded yet (python -m gemmlab profile --study hopper "
                  "--record on a Hopper GPU makes one)")
            return
    env = data["environment"]
    for k in data["kernels"]:
        if k.get("l2_bytes") is not None:
            k["l2_mib"] = k["l2_bytes"] / 2 ** 20
    cols = [("duration_ns", "time us", 1e-3), ("grid", "blocks", 1), ("tensor_pipe_pct", "tensor %", 1),
            ("sm_hz", "SM GHz", 1e-9), ("l2_mib", "L2 MiB", 1), ("dram_read_bytes", "DRAM rd MiB", 2 ** -20),
            ("issue_active_pct", "issue %", 1), ("stall_wait", "wait", 1), ("stall_barrier", "barrier", 1),
            ("stall_long_scoreboard", "long sb", 1), ("shared_st_wavefronts", "st wave M", 1e-6),
            ("shared_st_bank_conflicts", "st confl M", 1e-6)]
    _show_columns(data["kernels"], cols, spec=".1f",
                  title=f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}, FP16, "
                        "4096^3:")
