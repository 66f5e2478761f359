"""Chapter 16's ladder measured in one run: ``python -m gemmlab hopper --record``.

For FP16 and BF16 inputs (FP32 accumulation, FP32 C) at every shape of :data:`SHAPES`: each Hopper kernel of
:data:`LADDER` (chapter 15's tc/06, then one technique a step) is checked against float64 on the inputs as the
tensor cores see them, then timed with cuBLAS in the same mode (cublasGemmEx, FP32 output) and a Triton
matmul (:func:`triton_matmul`: the tutorial's structure, FP32 output, the fastest of :data:`TRITON_CONFIGS`
on this shape, itself checked first) in one round-robin (:func:`gemmlab.bench`: CUDA events, medians, L2
flushed, the GPU kept busy while the host issues each call). Where Triton is not installed the column says so; it is not a dependency of the book. Results go
to ``results/hopper-<gpu>.json`` with the targets of :data:`TARGETS`, met or not.
"""
from __future__ import annotations

import numpy

from .. import record
from ..check import FP32_TOLERANCE, rel_error
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
# the schedule's knobs, each changed alone from tc/09 (or, for the tile's shape, from tc/12's consumers), timed
# in the same round-robin as the ladder
KNOBS = cases(("tc/09_tma_store", {"STAGES": 3}), ("tc/09_tma_store", {"REGS": 24}),
              ("tc/09_tma_store", {"REGS": 56}), ("tc/12_pingpong", {"PINGPONG": 0}))
# the bar: a fraction of cuBLAS at each shape (never lowered here), and faster than Triton at every one
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


def check_step(key: str, precision: str = "fp16", sizes=CHECK_SIZES) -> None:
    """Print one ladder step's float64 check at each of ``sizes`` (chapter 16), a line per size as it is done:
    on the GPU in use, or on the CPU emulator as the book's GPU where this one cannot run the kernel (the line
    says so and why)."""
    from .. import ops, registry
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    variant = registry.get(key)
    for m, n, k in sizes:
        line = variant.verdict(ops.TcGemm(m=m, n=n, k=k, precision=precision))
        print(f"{precision.upper()} {m} x {n} x {k}: {line}", flush=True)


def target(shape) -> float:
    return TARGETS.get(tuple(shape), OTHER_TARGET)


def _triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def matmul(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
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
        tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))
    return triton, matmul


def triton_matmul(problem, inputs, out, config):
    """A zero-argument callable: the Triton matmul of ``problem`` on CuPy arrays ``inputs`` into ``out`` (FP32),
    with ``config`` (one of :data:`TRITON_CONFIGS`). Raises ImportError without Triton and torch."""
    import torch
    triton, kernel = _triton_kernel()
    A, B = (torch.from_dlpack(x) for x in inputs)
    if problem.precision == "bf16":                      # the book keeps BF16 values as their bits
        A, B = A.view(torch.bfloat16), B.view(torch.bfloat16)
    C = torch.from_dlpack(out)
    bm, bn, bk, group, stages, warps = config
    grid = (triton.cdiv(problem.m, bm) * triton.cdiv(problem.n, bn),)
    m, n, k = problem.m, problem.n, problem.k

    def run():
        kernel[grid](A, B, C, m, n, k, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                     BM=bm, BN=bn, BK=bk, GROUP=group, num_stages=stages, num_warps=warps)
    return run


def _triton_version():
    try:
        import triton
        return triton.__version__
    except ImportError:
        return None


def pick_triton(problem, inputs, reps: int = 5) -> dict:
    """Each of :data:`TRITON_CONFIGS` checked against float64 and timed alone on ``problem``; the fastest that
    is right, or why there is none ({"missing": why})."""
    try:
        import importlib
        importlib.import_module("torch")
        _triton_kernel()
    except ImportError as exc:
        return {"missing": f"Triton (with torch) is not installed here ({exc})"}
    ref = problem.reference(inputs)
    scale = problem.error_scale(inputs)
    tried, best = [], None
    for config in TRITON_CONFIGS:
        out = problem.output()
        try:
            run = triton_matmul(problem, inputs, out, config)
            run()
            hw.synchronize()
        except Exception as exc:                      # a config this GPU cannot compile (shared memory, say)
            tried.append({"config": list(config), "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        err = rel_error(hw.to_host(out), ref, scale)
        t = bench({"t": run}, problem, library=False, reps=reps, label=f"{TRITON} {config}", settle_us=SETTLE_US)
        ms = t["t"].median_ms
        tried.append({"config": list(config), "error": err, "median_ms": ms})
        if err <= problem.tolerance(FP32_TOLERANCE) and (best is None or ms < best["median_ms"]):
            best = tried[-1]
    if best is None:
        return {"missing": "no Triton configuration gave the right answer", "tried": tried}
    return {"config": best["config"], "error": best["error"], "tried": tried}


def measure_shape(precision: str, shape, reps: int = 10, progress: bool = True) -> dict:
    m, n, k = shape
    problem = problem_of("tc", m, n, k, precision=precision)
    inputs, out = problem.inputs(numpy.random.default_rng(1)), problem.output()
    tri = pick_triton(problem, inputs)
    extra = {}
    if "config" in tri:
        extra[TRITON] = triton_matmul(problem, inputs, out, tuple(tri["config"]))
    label = f"hopper ladder {precision.upper()} {m} x {n} x {k}"
    t, errors = measure_problem(LADDER + KNOBS, problem, label, reps=reps, progress=progress, extra=extra,
                                settle_us=SETTLE_US)
    names = [case_name(key, p) for key, p in LADDER]               # the bar is met by a step, not by a knob
    ran = [x for x in names if x not in t.skipped]
    best = max(ran, key=lambda x: t.ratio(x))
    ratio, goal = t.ratio(best), target(shape)
    spread = {r["name"]: (r["q3_ms"] - r["q1_ms"]) / r["median_ms"] for r in t.records()}
    out = {"precision": precision, "shape": list(shape), "best": best, "ratio": ratio, "target": goal,
           "met": ratio >= goal, "errors": errors, "triton": tri, "timing": t.to_dict(), "spread": spread,
           "settle_us": SETTLE_US}
    if TRITON in [r.name for r in t.rows]:
        out["vs_triton"] = t[TRITON].median_ms / t[best].median_ms
        out["faster_than_triton"] = out["vs_triton"] > 1.0         # by the medians; against_triton weighs the spread
    return out


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


def run_all(reps: int = 10, shapes=None, precisions=PRECISIONS) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"chapter 16's ladder is measured on a GPU ({hw.backend_reason})")
    from .climb import _warm_up
    _warm_up()
    points = []
    for precision in precisions:
        for shape in shapes or SHAPES:
            points.append(measure_shape(precision, shape, reps=reps))
            print(Timings.from_dict(points[-1]["timing"], recorded=False), flush=True)
            print(_line(points[-1]), flush=True)
    return {"points": points, "triton": _triton_version(), "command": "python -m gemmlab hopper --record"}


def _line(p) -> str:
    m, n, k = p["shape"]
    tri = (f", {p['vs_triton']:.3f}x Triton" if "vs_triton" in p else
           f", Triton: {p['triton'].get('missing', 'not timed')}")
    return (f"{p['precision'].upper()} {m} x {n} x {k}: best {p['best']} at {p['ratio']:.1%} of cuBLAS "
            f"(target {p['target']:.0%}: {'met' if p['met'] else 'missed'}){tri}")


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
    print(f"{env['gpu']}, {env['date'][:10]}, Triton {result.get('triton') or 'not installed'}: FP32 C, medians of "
          f"{result['points'][0]['timing']['reps']}, L2 flushed, one round-robin per shape; % of cuBLAS in the same run")
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


def _by_precision(result: dict):
    """(precision, its points) for each precision of a ladder run that has any."""
    for precision in PRECISIONS:
        points = [p for p in result["points"] if p["precision"] == precision]
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
    print(f"{env['gpu']}, {env['date'][:10]}: % of cuBLAS, then tc/09's time over the knob's (above 1: faster) in "
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
    for ax, precision in zip(axes, PRECISIONS):
        points = [p for p in result["points"] if p["precision"] == precision]
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
    fig.suptitle(f"{env['gpu']}, {env['date'][:10]}", fontsize=10)
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
