"""Part V's targets measured in one run: ``python -m gemmlab tensor --record``.

For FP16, BF16 and TF32 at N = 4096: every tensor-core candidate below is checked against float64 (on the
inputs as the tensor cores see them), then timed with cuBLAS in the same precision (cublasGemmEx: FP32
accumulation; TF32 by its compute type) in one round-robin (:func:`gemmlab.bench`: CUDA events, medians,
L2 flushed). 3xTF32 (FP32 inputs and output) is timed against cuBLAS's FP32 SGEMM, and its accuracy
measured beside it: on one draw of FP32 inputs, the largest error of each product against a float64
product (computed on the GPU), divided by the largest entry of that product, for 3xTF32, cuBLAS SGEMM,
cuBLAS TF32 and a single TF32 product. Results go to ``results/tensor-<gpu>.json`` with the issue's
targets, met or not.
"""
from __future__ import annotations

import numpy

from ..runtime import backend as hw
from .. import ops, record, registry
from ..cases import cases, problem as problem_of
from .core import against_library, case_name, measure_problem, pick
from ..progress import ticking
from ..table import Table
from ..timing import Timings

N = 4096
# (precision, target fraction of cuBLAS in that precision): the bar, never lowered here
TC_TARGETS = [("fp16", 0.50), ("bf16", 0.50), ("tf32", 0.50)]


def _p(BM, BN, WM, WN, STAGES):
    return dict(BM=BM, BN=BN, WM=WM, WN=WN, STAGES=STAGES)


TC_CANDIDATES = cases(
    ("tc/01_wmma", dict(WARPS_M=2, WARPS_N=2)),
    ("tc/03_wmma_pipelined", _p(128, 128, 64, 32, 3)),
    ("tc/03_wmma_pipelined", _p(128, 128, 64, 64, 3)),
    ("tc/03_wmma_pipelined", _p(128, 256, 64, 64, 3)),
    ("tc/03_wmma_pipelined", _p(256, 128, 64, 64, 3)),
    ("tc/03_wmma_pipelined", _p(128, 128, 64, 32, 4)),
    ("tc/05_mma_sync", {**_p(128, 128, 64, 64, 3), "BK": 32}),            # 128 bytes of a row per tile in TF32
    ("tc/05_mma_sync", {**_p(256, 128, 64, 64, 3), "BK": 32}),
    ("tc/05_mma_sync", {**_p(128, 256, 64, 64, 3), "BK": 32}),
    ("tc/05_mma_sync", {**_p(128, 128, 64, 64, 3), "BK": 64}),            # ... and in FP16/BF16
    ("tc/05_mma_sync", {**_p(128, 256, 64, 64, 3), "BK": 64}),            # (TF32: too big, refused)
    ("tc/05_mma_sync", {**_p(256, 128, 64, 64, 3), "BK": 64}),
)
# Hopper's own pipeline (TMA, mbarriers, wgmma), FP16 and BF16: its own target, 80% of cuBLAS
HOPPER_CANDIDATES = cases(("tc/06_wgmma_tma", {}))
HOPPER_TARGETS = [("fp16", 0.80), ("bf16", 0.80)]
SPLIT_CANDIDATES = cases(
    ("tc/02_3xtf32", dict(WARPS_M=2, WARPS_N=2)),
    ("tc/04_3xtf32_pipelined", _p(128, 128, 64, 32, 3)),
    ("tc/04_3xtf32_pipelined", _p(128, 128, 64, 64, 3)),
    ("tc/04_3xtf32_pipelined", _p(128, 256, 64, 64, 3)),
    ("tc/07_3xtf32_wgmma", {}),                             # Hopper only (chapter 15)
)
SPLIT_ERROR_FACTOR = 2.0          # 3xTF32's error within 2x of cuBLAS SGEMM's, and faster than it


def taken(candidates, problem) -> list:
    """The candidates whose variant takes this problem (the Hopper kernel has no TF32, say); which of them
    the GPU in use can run is measure_problem's to say (it skips the others, with the reason)."""
    out = []
    for key, params in candidates:
        v = registry.get(key)
        if v.refuse is None or not v.refuse(problem, v.resolve(**params)):
            out.append((key, params))
    return out


def measure_tc(precision: str, target: float, n: int = N, reps: int = 10, progress: bool = True,
               candidates=TC_CANDIDATES) -> dict:
    problem = problem_of("tc", n, n, n, precision=precision)
    cases = taken(candidates, problem)
    which = "Hopper" if candidates is HOPPER_CANDIDATES else "tensor"     # two studies, two labels
    verdict, t, errors = against_library(cases, problem, f"{which} {precision.upper()} {n}", target, reps=reps,
                                         progress=progress)
    return {"precision": precision, "n": n, **verdict, "errors": errors, "timing": t.to_dict()}


def max_error(out, exact) -> float:
    """The largest error of a product against float64, over the product's largest entry."""
    xp = hw.xp
    return float(xp.abs(out.astype(xp.float64) - exact).max() / xp.abs(exact).max())


def accuracy(n: int = N, seed: int = 0, split=None) -> dict:
    """One draw of FP32 inputs; each product's max error against float64 (computed on the device). ``split``:
    the 3xTF32 case (key, params) to measure (default: the pipelined one at its defaults)."""
    xp = hw.xp
    problem = problem_of("gemm", n)
    inputs = problem.inputs(numpy.random.default_rng(seed))
    exact = xp.matmul(inputs[0].astype(xp.float64), inputs[1].astype(xp.float64))
    out = {}
    key, params = split or SPLIT_CANDIDATES[1]
    c = problem.output()
    registry.get(key).runner(problem, **params)(inputs, c)
    out["3xTF32 (" + case_name(key, params) + ")"] = max_error(c, exact)
    c = problem.output()
    problem.library(inputs, c)
    out["cuBLAS SGEMM (FP32)"] = max_error(c, exact)
    tf32 = problem_of("tc", n, n, n, precision="tf32")
    c = problem.output()
    tf32.library(inputs, c)
    out["cuBLAS TF32"] = max_error(c, exact)
    c = problem.output()
    registry.get("tc/01_wmma").runner(tf32)(inputs, c)
    out["one TF32 product (tc/01)"] = max_error(c, exact)
    return out


def measure_split(n: int = N, reps: int = 10, progress: bool = True) -> dict:
    problem = problem_of("gemm", n)
    candidates = taken(SPLIT_CANDIDATES, problem)              # those this GPU runs
    t, errors = measure_problem(candidates, problem, f"3xTF32 {n}", reps=reps, progress=progress)
    cases = {case_name(k, c): (k, c) for k, c in candidates}
    best = pick(t, set(cases))
    ratio = t.ratio(best["name"])
    acc = accuracy(n, split=cases[best["name"]])             # the error of the fastest
    split = next(v for k, v in acc.items() if k.startswith("3xTF32"))
    return {"n": n, "best": best["name"], "ratio_to_sgemm": ratio, "faster_than_sgemm": ratio is not None and ratio > 1.0,
            "accuracy": acc, "error_factor": split / acc["cuBLAS SGEMM (FP32)"],
            "accurate": split <= SPLIT_ERROR_FACTOR * acc["cuBLAS SGEMM (FP32)"], "errors": errors,
            "timing": t.to_dict()}


ACCUMULATION_KS = (256, 1024, 4096)


def accumulation(ks=ACCUMULATION_KS, m: int = 128, n: int = 128, seed: int = 0, library: bool = True) -> dict:
    """How the tensor cores add: for each precision and K, one draw of inputs (its own seed, so any subset of
    ks draws the same ones) multiplied by tc/01 (and cuBLAS in that precision where ``library``), the
    norm-wise error (the check's measure) against float64 on the inputs as rounded for the tensor cores. With
    IEEE additions it would grow like sqrt(K); cut toward zero, as the tensor cores add, it grows like K.
    The emulator adds as the H200 does, and a test holds it to this record."""
    from ..check import check_many
    out = {}
    for pi, precision in enumerate(ops.TC_PRECISIONS):
        rows = {"tc/01": []}
        if library:
            rows["cuBLAS"] = []
        for k in ks:
            problem = problem_of("tc", m, n, k, precision=precision)
            runs = {"tc/01": registry.get("tc/01_wmma").runner(problem)}
            if library:
                runs["cuBLAS"] = problem.library
            for name, result in check_many(runs, problem, seed=[seed, pi, k]).items():
                rows[name].append(result.error)
        out[precision] = rows
    return {"ks": list(ks), "m": m, "n": n, "seed": seed, "errors": out}


def run_all(reps: int = 10) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"Part V is measured on a GPU ({hw.backend_reason})")
    from .climb import _warm_up
    _warm_up()
    tc = []
    for precision, target in TC_TARGETS:
        tc.append(measure_tc(precision, target, reps=reps))
        print(Timings.from_dict(tc[-1]["timing"], recorded=False), flush=True)
    hopper = []
    for precision, target in HOPPER_TARGETS:
        hopper.append(measure_tc(precision, target, reps=reps, candidates=HOPPER_CANDIDATES))
        print(Timings.from_dict(hopper[-1]["timing"], recorded=False), flush=True)
    split = measure_split(reps=reps)
    print(Timings.from_dict(split["timing"], recorded=False), flush=True)
    return {"tc": tc, "hopper": hopper, "split": split, "accumulation": accumulation(),
            "error_vs_k": error_vs_k(ks=(16, 64, 256, 1024, 4096, 16384)),
            "command": "python -m gemmlab tensor --record"}


def save(result: dict):
    return record.save(f"tensor-{record.gpu_slug()}", result)


PARTS = ("tc", "hopper", "split")


def now_or_recorded(parts=PARTS, reps: int = 10) -> dict:
    """A Part V timing cell: on a GPU, the parts of the record (``tc``: the tensor-core candidates in FP16,
    BF16 and TF32; ``hopper``: tc/06; ``split``: 3xTF32) measured now, as ``tensor --record`` measures them,
    with what this GPU cannot run skipped and said (``"skipped"``); without a GPU, the record shown
    (``record.shown``: the reader's GPU's, else the H200's). ``"shown_as"`` says which."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"parts are some of {PARTS}, got {sorted(unknown)}")
    which = ",".join(parts)
    if not hw.on_gpu:
        return _recorded(parts)
    from .climb import _warm_up
    from ..runtime.profiles import current
    _warm_up(2.0)
    out = {"tc": [], "hopper": [], "skipped": {}, "environment": record.environment(), "live": True,
           "shown_as": f"measured on this GPU just now ({current().describe()})"}

    def attempt(name, measure):
        try:
            return measure()
        except hw.UnsupportedGPU as exc:
            out["skipped"][name] = str(exc)
            return None

    if "tc" in parts:
        for precision, target in TC_TARGETS:
            r = attempt(f"tensor {precision.upper()}", lambda: measure_tc(precision, target, reps=reps, progress=False))
            out["tc"] += [r] if r else []
    if "hopper" in parts:
        for precision, target in HOPPER_TARGETS:
            r = attempt(f"Hopper {precision.upper()}", lambda: measure_tc(
                precision, target, reps=reps, progress=False, candidates=HOPPER_CANDIDATES))
            out["hopper"] += [r] if r else []
    if "split" in parts:
        r = attempt("3xTF32", lambda: measure_split(reps=reps, progress=False))
        if r:
            out["split"] = r
    record.keep("tensor", which, out)
    return out


def _recorded(parts) -> dict:
    """Part V's figures where they cannot be measured (no GPU; a GPU that cannot run the kernels): this
    chapter's run, from its own record, when that run measured them; else the tensor record shown (the
    reader's GPU's, else the H200's)."""
    for which in (",".join(parts), ",".join(PARTS)):
        mine = record.kept("tensor", which)
        if mine is not None and all(mine[0].get(p) for p in parts):
            return {**mine[0], "live": False, "shown_as": mine[1]}
    return record.shown("tensor")


# --- where tc/06's time goes beside cuBLAS's (chapter 15) ------------------------------------------

BUDGET_KS = (512, 1024, 2048, 4096, 8192)
BUDGET_TILE = (128, 256)            # tc/06's block tile (kernels/tc/06_wgmma_tma.cu: BM, BN)


def hopper_budget(n: int = N, ks=BUDGET_KS, precision: str = "fp16", reps: int = 20) -> dict:
    """tc/06 and cuBLAS at M = N = ``n`` for each K of ``ks``, one round-robin per K (checked against float64
    first; a write of as many bytes as C, the epilogue's traffic, timed beside them by cudaMemsetAsync), each fitted by
    time = fixed + per-k x K. The fixed part is what a call pays whatever K is (the launch, filling the
    pipeline, the epilogue's stores, as far as nothing hides them); the slope is the main loop. Live on a
    GPU that runs tc/06; elsewhere this chapter's record (``"shown_as"`` says which)."""
    if len(ks) < 3 or any(not isinstance(k, int) or k < 64 or k % 64 for k in ks):
        raise ValueError(f"ks: three or more sizes of K, multiples of 64, got {ks!r}")
    key = f"{precision} {n}, K = {', '.join(map(str, ks))}"
    why = None
    if hw.on_gpu:
        try:
            return _measure_budget(n, list(ks), precision, reps, key)
        except hw.UnsupportedGPU as exc:
            why = str(exc)
    mine = record.kept("hopper-budget", key)
    if mine is None:
        raise LookupError(f"no recorded budget for {key} in this chapter's record"
                          + (f" (and this GPU cannot measure one: {why})" if why else ""))
    return {**mine[0], "live": False, "shown_as": mine[1], **({"skipped": why} if why else {})}


def _measure_budget(n, ks, precision, reps, key) -> dict:
    from .climb import _warm_up
    from ..runtime.profiles import current
    _warm_up(2.0)
    rows = []
    for k in ks:
        problem = problem_of("tc", n, n, k, precision=precision)
        c = problem.output()
        rt = hw.xp.cuda.runtime

        def write(c=c):                      # cudaMemsetAsync: nothing but C's bytes written, at the memory's pace
            rt.memsetAsync(c.data.ptr, 0, c.nbytes, hw.xp.cuda.get_current_stream().ptr)
        t, errors = measure_problem([("tc/06_wgmma_tma", {})], problem, f"Hopper budget {precision.upper()} {n}x{n}x{k}",
                                    reps=reps, progress=False, extra={"write of C": write})
        d = t.to_dict()
        med, name = {r["name"]: r for r in d["rows"]}, case_name("tc/06_wgmma_tma", {})
        iqr = lambda r: r["q3_ms"] - r["q1_ms"]                                  # noqa: E731
        rows.append({"k": k, "tc06_ms": med[name]["median_ms"], "cublas_ms": med["cuBLAS"]["median_ms"],
                     "tc06_iqr_ms": iqr(med[name]), "cublas_iqr_ms": iqr(med["cuBLAS"]),
                     "write_ms": med["write of C"]["median_ms"], "error": errors[name], "timing": d})
    gpu = current()
    per_sm = gpu.shared_per_sm // (registry.HOPPER_SHARED + gpu.shared_reserved_per_block)   # shared memory's bound
    out = {"n": n, "precision": precision, "ks": ks, "rows": rows, "tile": list(BUDGET_TILE), "sms": gpu.sm_count,
           "blocks_per_sm": per_sm, "environment": record.environment(), "live": True,
           "shown_as": f"measured on this GPU just now ({gpu.describe()})"}
    out.update(budget(out))
    record.keep("hopper-budget", key, {k: v for k, v in out.items() if k not in ("live", "shown_as")})
    return out


def budget(result: dict) -> dict:
    """The fits and the budget of a :func:`hopper_budget` result at K = n: how much of tc/06's extra time over
    cuBLAS's is fixed cost and how much main loop; and how full tc/06's rounds of tiles are (cuBLAS's kernel,
    persistent over as many tiles of the same size, has the same last round, so it is no part of the gap)."""
    ks = numpy.array([r["k"] for r in result["rows"]], dtype=float)
    fit = {}
    for name in ("tc06", "cublas"):
        t = numpy.array([r[f"{name}_ms"] for r in result["rows"]])
        slope, fixed = numpy.polyfit(ks, t, 1)
        fit[name] = {"fixed_ms": float(fixed), "per_1024_ms": float(1024 * slope),
                     "worst_residual": float(numpy.max(numpy.abs(fixed + slope * ks - t) / t))}
    n = result["n"]
    bm, bn = result["tile"]
    tiles = -(-n // bm) * -(-n // bn)
    slots = result["sms"] * result["blocks_per_sm"]
    waves = -(-tiles // slots)
    busy = tiles / (waves * slots)
    a, c = fit["tc06"], fit["cublas"]
    main = a["per_1024_ms"] * n / 1024
    parts = {"fixed cost": a["fixed_ms"] - c["fixed_ms"], "main loop": main - c["per_1024_ms"] * n / 1024}
    at_n = next((r for r in result["rows"] if r["k"] == n), None)
    return {"fit": fit, "tiles": tiles, "waves": waves, "busy_share": busy, "parts_ms": parts,
            "gap_fit_ms": sum(parts.values()),
            "gap_measured_ms": at_n["tc06_ms"] - at_n["cublas_ms"] if at_n else None,
            "write_ms": float(numpy.median([r["write_ms"] for r in result["rows"]]))}


def print_budget(result: dict) -> None:
    """Show the table of a :func:`hopper_budget` result, then print its fits and its budget."""
    env = result["environment"]
    print(f"shown: {result['shown_as']}")
    if result.get("skipped"):
        print(f"tc/06 skipped here: {result['skipped']}")
    n = result["n"]
    Table(["K", "tc/06 ms", "IQR", "cuBLAS ms", "IQR", "vs cuBLAS", "write of C ms"],
          [[r["k"], f"{r['tc06_ms']:.4f}", f"{r.get('tc06_iqr_ms', float('nan')):.4f}", f"{r['cublas_ms']:.4f}",
            f"{r.get('cublas_iqr_ms', float('nan')):.4f}", f"{100 * r['cublas_ms'] / r['tc06_ms']:.1f}%",
            f"{r['write_ms']:.4f}"] for r in result["rows"]], align="rrrrrrr",
          title=f"{result['precision'].upper()}, M = N = {n}, {env['gpu']}, {env['date'][:10]}; medians of "
                f"{result['rows'][0]['timing']['reps']}, L2 flushed:").show()
    for name, label in (("tc06", "tc/06 "), ("cublas", "cuBLAS")):
        f = result["fit"][name]
        print(f"{label} time = {1e3 * f['fixed_ms']:.1f} us + {1e3 * f['per_1024_ms']:.1f} us per 1024 of K "
              f"(worst misfit {100 * f['worst_residual']:.1f}%)")
    print(f"at K = {n}: {result['tiles']} tiles of {result['tile'][0]} x {result['tile'][1]} on {result['sms']} SMs "
          f"are {result['waves']} rounds, {100 * result['busy_share']:.1f}% of their SM-slots busy")
    gap = result["gap_measured_ms"]
    print(f"tc/06's extra time over cuBLAS at K = {n}: {1e3 * result['gap_fit_ms']:.1f} us by the fits"
          + (f" ({1e3 * gap:.1f} us measured)" if gap is not None else "") + ", of which:")
    for part, ms in result["parts_ms"].items():
        print(f"    {part:<38}{1e3 * ms:>7.1f} us")
    print(f"(a write of C's {4 * n * n / 2 ** 20:.0f} MiB alone: {1e3 * result['write_ms']:.1f} us)")


def plot_budget(result: dict, ax=None):
    """Time against K for tc/06 and cuBLAS, with the fitted lines: where they cross zero is the fixed cost."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    ks = numpy.array([0] + [r["k"] for r in result["rows"]], dtype=float)
    for name, label, colour in (("tc06", "tc/06", "#d8823b"), ("cublas", "cuBLAS", "#3b7dd8")):
        f = result["fit"][name]
        ax.plot(ks[1:], [r[f"{name}_ms"] for r in result["rows"]], "o", color=colour, label=f"{label}, measured")
        ax.plot(ks, f["fixed_ms"] + f["per_1024_ms"] * ks / 1024, "-", color=colour, lw=1,
                label=f"{label}: {1e3 * f['fixed_ms']:.0f} us + {1e3 * f['per_1024_ms']:.0f} us per 1024 of K")
    ax.set_xlabel("K")
    ax.set_ylabel("time (ms)")
    ax.set_xlim(0, None)
    ax.set_ylim(0, None)
    ax.legend(fontsize=10)
    ax.set_title(f"{result['precision'].upper()}, M = N = {result['n']}, {result['environment']['gpu']}", fontsize=10)
    return ax


def hopper_tables(result: dict | None = None) -> None:
    """Show the recorded Hopper runs (tc/06 and cuBLAS in one round-robin, per precision) and their verdicts."""
    result = result or record.shown("tensor")
    print(f"shown: {result.get('shown_as', 'a record given by the caller')}")
    for name, why in result.get("skipped", {}).items():
        print(f"{name}: skipped here: {why}")
    if not result.get("hopper") and result.get("skipped"):
        result = _recorded(["hopper"])                    # the figures the chapter needs, from a Hopper GPU
        print(f"instead, {result['shown_as']}:")
    if not result.get("hopper"):
        print("no Hopper run to show (python -m gemmlab tensor --record on a Hopper GPU makes one)")
        return
    for t in result["hopper"]:
        Timings.from_dict(t["timing"], recorded=not result.get("live"), source=result.get("shown_as", "")).show()
        print(f"{t['best']}: {100 * t['ratio']:.1f}% of cuBLAS (target {100 * t['target']:.0f}%: "
              f"{'met' if t['met'] else 'MISSED'}); max error against float64 {t['errors'][t['best']]:.2e}\n")


def split_tables(result: dict | None = None) -> None:
    """Show the recorded 3xTF32 run (every candidate and cuBLAS's FP32 SGEMM in one round-robin) and the
    accuracy of the fastest beside cuBLAS's."""
    result = result or record.shown("tensor")
    print(f"shown: {result.get('shown_as', 'a record given by the caller')}")
    if "split" not in result:
        result = _recorded(["split"])
        print(f"instead, {result['shown_as']}:")
    s = result["split"]
    Timings.from_dict(s["timing"], recorded=not result.get("live"), source=result.get("shown_as", "")).show()
    print(f"fastest: {s['best']} at {s['ratio_to_sgemm']:.2f}x cuBLAS SGEMM's speed "
          f"({'faster' if s['faster_than_sgemm'] else 'slower'})")
    for name, e in s["accuracy"].items():
        print(f"    max error / max |C|, {name}: {e:.2e}")
    print(f"error {s['error_factor']:.2f}x cuBLAS SGEMM's (target <= {SPLIT_ERROR_FACTOR:g}x: "
          f"{'met' if s['accurate'] else 'MISSED'})")


def _summary_parts(result: dict) -> list:
    """What :func:`summary` says, in order: lines of text, and a :class:`Table` (how the tensor cores add)."""
    lines = [f"shown: {result['shown_as']}"] if "shown_as" in result else []
    lines += [f"{name}: skipped here: {why}" for name, why in result.get("skipped", {}).items()]
    for t in result["tc"]:
        lines.append(f"{t['precision'].upper():>6} N={t['n']}: best {t['best']} at {100 * t['ratio']:.1f}% of cuBLAS "
                     f"(target {100 * t['target']:.0f}%: {'met' if t['met'] else 'MISSED'})")
    for t in result.get("hopper", []):
        lines.append(f"Hopper {t['precision'].upper()} N={t['n']}: {t['best']} at {100 * t['ratio']:.1f}% of cuBLAS "
                     f"(target {100 * t['target']:.0f}%: {'met' if t['met'] else 'MISSED'})")
    s = result.get("split")
    if s is None:
        return lines
    lines.append(f"3xTF32 N={s['n']}: best {s['best']} at {s['ratio_to_sgemm']:.2f}x cuBLAS SGEMM's speed "
                 f"({'faster' if s['faster_than_sgemm'] else 'NOT faster'}); error {s['error_factor']:.2f}x SGEMM's "
                 f"(target <= {SPLIT_ERROR_FACTOR:g}x: {'met' if s['accurate'] else 'MISSED'})")
    for k, v in s["accuracy"].items():
        lines.append(f"    max error / max |C|, {k}: {v:.2e}")
    acc = result.get("accumulation")
    if acc:
        lines.append(Table(["precision", "product"] + [f"K = {k}" for k in acc["ks"]],
                           [[precision.upper(), name] + [f"{e:.2e}" for e in errs]
                            for precision, rows in acc["errors"].items() for name, errs in rows.items()],
                           align="ll" + "r" * len(acc["ks"]),
                           title=f"How the tensor cores add ({acc['m']} x {acc['n']} x K; error against float64 on the "
                                 "rounded inputs):"))
    return lines


def summary(result: dict) -> str:
    """The verdicts of a Part V run (:func:`run_all`, or :func:`now_or_recorded`), as text."""
    return "\n".join(map(str, _summary_parts(result)))


def show_summary(result: dict) -> None:
    """Print the verdicts of a Part V run and show its table of how the tensor cores add (HTML in a notebook)."""
    for part in _summary_parts(result):
        if isinstance(part, Table):
            part.show()
        else:
            print(part)


# --- Part V, chapter 1: how the error of a product grows with K and with the inputs' range ----------

def _inputs_fp32(rng, m, n, k, spread):
    """FP32 A (m x k), B (k x n): standard normal values times 2^u, u uniform in [-spread, spread]."""
    def draw(shape):
        x = rng.standard_normal(shape) * numpy.exp2(rng.uniform(-spread, spread, shape))
        return x.astype(numpy.float32)
    return draw((m, k)), draw((k, n))


def error_vs_k(ks=(64, 256, 1024, 4096), m: int = 64, n: int = 64, spread: float = 0.0, seed: int = 0,
               progress: bool | None = None) -> dict:
    """For each K, one draw of FP32 inputs, multiplied in each precision on the backend in use: FP32 (an
    SGEMM), 3xTF32, TF32, BF16 and FP16 (the inputs converted, FP32 accumulation; tensor-core kernels
    tc/01, tc/04). Returns {method: [max error / max |C| against float64 of the FP32 inputs, per K]};
    a method whose result is not finite (FP16's range exceeded) gets NaN. ``progress`` (by default on the
    emulator, where the products take a minute) shows a bar naming the product being made."""
    from ..ops import to_bf16_bits
    xp = hw.xp
    methods = {"FP32 (sgemm/02)": None, "3xTF32 (tc/04)": None, "TF32": "tf32", "BF16": "bf16", "FP16": "fp16"}
    tc04, tc01 = registry.get("tc/04_3xtf32_pipelined"), registry.get("tc/01_wmma")
    skipped = {name: why for name, why in (
        ("3xTF32 (tc/04)", tc04.unsupported(problem_of("gemm", m, n, ks[0]))),
        *((name, tc01.unsupported(problem_of("tc", m, n, 16, precision=p))) for name, p in methods.items() if p))
        if why}
    methods = {name: p for name, p in methods.items() if name not in skipped}
    out = {name: [] for name in methods}
    rng = numpy.random.default_rng(seed)
    bar = None
    if progress if progress is not None else not hw.on_gpu:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(ks) * len(methods), leave=False,
                   desc=f"{m} x {n} products on the {hw.backend}, against float64")
    with ticking(bar):
        for k in ks:
            A, B = _inputs_fp32(rng, m, n, k, spread)
            exact = A.astype(numpy.float64) @ B.astype(numpy.float64)
            scale = numpy.abs(exact).max()
            for name, precision in methods.items():
                if bar is not None:
                    bar.set_postfix_str(f"{name}, K = {k}")
                    bar.update(0)
                c = xp.full((m, n), numpy.nan, dtype=numpy.float32)
                if precision is None:
                    key = "sgemm/02_shared_tiling" if name.startswith("FP32") else "tc/04_3xtf32_pipelined"
                    problem = problem_of("gemm", m, n, k)
                    registry.get(key).runner(problem)((xp.asarray(A), xp.asarray(B)), c)
                else:
                    problem = problem_of("tc", m, n, k, precision=precision)
                    conv = {"fp16": lambda a: a.astype(numpy.float16), "bf16": to_bf16_bits,
                            "tf32": lambda a: a}[precision]
                    with numpy.errstate(over="ignore"):         # FP16 ends at 65504: larger inputs become inf
                        a16, b16 = conv(A), conv(B)
                    registry.get("tc/01_wmma").runner(problem)((xp.asarray(a16), xp.asarray(b16)), c)
                with numpy.errstate(invalid="ignore"):
                    out[name].append(float(numpy.abs(hw.to_host(c).astype(numpy.float64) - exact).max() / scale))
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return {"ks": list(ks), "m": m, "n": n, "spread": spread, "backend": hw.backend, "errors": out,
            "skipped": skipped}


def print_error_vs_k(result: dict) -> None:
    """Show error_vs_k's table: a row per method (max error / max |C| at each K), and the methods the GPU in use
    could not run, each with the reason."""
    Table(["product"] + [f"K = {k}" for k in result["ks"]],
          [[name] + [f"{e:.1e}" for e in errors] for name, errors in result["errors"].items()],
          align="l" + "r" * len(result["ks"]),
          title=f"max error / max |C| against float64, {result['m']} x {result['n']} x K"
                + (f", inputs x 2^U(-{result['spread']:g}, {result['spread']:g})" if result.get("spread") else "")
                + f" ({result.get('backend', '?')})",
          notes=[f"{name}: skipped here: {why}" for name, why in result.get("skipped", {}).items()]).show()


def plot_error_vs_k(result: dict, ax=None):
    """The errors of error_vs_k on a log-log plot, one line per precision."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for name, errors in result["errors"].items():
        ax.loglog(result["ks"], errors, marker="o", label=name)
    ax.set_xlabel("K (products summed per element of C)")
    ax.set_ylabel("max |C - exact| / max |exact|")
    spread = f", inputs x 2^U(-{result['spread']:g}, {result['spread']:g})" if result["spread"] else ""
    ax.set_title(f"Error against float64, {result['m']} x {result['n']} x K{spread} ({result['backend']})", fontsize=10)
    ax.legend(fontsize=10)
    ax.figure.tight_layout()
    return ax
