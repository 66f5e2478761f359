"""Part IV's targets measured in one run: ``python -m gemmlab climb --record``.

SGEMM: for each size the targets name (N = 1024, 2048, 4096, 8192, and two awkward shapes), every candidate
configuration below is checked against a float64 reference, then all are timed together with cuBLAS as a
column (:func:`gemmlab.bench`: CUDA events, medians, L2 flushed, round-robin). DOT: the same at n = 2^24
and 2^26, with a device-to-device copy of as many bytes as DOT reads timed in the same round-robin (the
copy bandwidth the target is a fraction of). GEMV: 'N' and 'T' at 4096^2 and 16384^2 against cuBLAS.
GEMM (column-major, gemmlab.blas's kernel): the four transpose cases at N = 4096 against cuBLAS.
The best per problem and its ratio go to ``results/climb-<gpu>.json`` beside the targets, met or not.
The candidates are the winners of tuning runs on the H200 (Part IV's autotuning chapter searches the
registry's whole space); the last steps before Part IV (chapters 06, 07, 08) are timed with them for scale.
The GPU first runs cuBLAS for five seconds, so that every measurement finds it at its working clocks.
"""
from __future__ import annotations

import numpy

from ..runtime import backend as hw
from .. import record
from ..table import Table
from ..timing import Timings
from ..cases import cases, problem as problem_of
from .core import against_library, case_name, measure_problem, pick, resources

# (size label, problem, target ratio to cuBLAS): the bar, never lowered here
PROBLEMS = [
    ("4096", problem_of("gemm", 4096), 0.90),
    ("1024", problem_of("gemm", 1024), 0.80),
    ("2048", problem_of("gemm", 2048), 0.80),
    ("8192", problem_of("gemm", 8192), 0.80),
    ("4097", problem_of("gemm", 4097), 0.75),
    ("3000x5000x2000", problem_of("gemm", 3000, 5000, 2000), 0.75),
]


def _d(BM, BN, BK, WM, WN, GROUP, SPLITK, MINB, SNAKE=1):
    return ("sgemm/10_double_buffer", dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, GROUP=GROUP, SPLITK=SPLITK, MINB=MINB,
                                           SNAKE=SNAKE))


def _i(BM, BN, BK, WM, WN, LANES, GROUP, SPLITK, MINB):
    return ("sgemm/12_interior", dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, LANES=LANES, GROUP=GROUP, SPLITK=SPLITK,
                                      MINB=MINB))


CANDIDATES = cases(
    ("sgemm/06_register_tiling", dict(T=32, RM=4, RN=2, MINB=1)),
    ("sgemm/07_vectorized", dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=1, SWZ=0, SPLIT=0)),   # chapter IV.1-2
    ("sgemm/09_warp_tiling", dict(BM=128, BN=128, BK=8, WM=64, WN=32)),                       # chapter IV.3
    _d(128, 128, 8, 64, 32, 1, 1, 2),          # the double-buffered step as chapter IV.4 introduces it
    _d(128, 256, 16, 64, 64, 8, 1, 1),         # large tiles: the big squares
    _d(128, 256, 16, 64, 64, 8, 1, 1, 0),      # the same, its FMAs row by row (what the boustrophedon buys)
    _d(128, 128, 16, 64, 32, 8, 2, 2),         # split-K in two: sizes whose tiles leave SMs idle
    _d(128, 256, 8, 64, 64, 8, 2, 1),
    _d(64, 64, 16, 32, 32, 8, 1, 2),           # small tiles: enough blocks at N = 1024
    ("sgemm/11_cp_async", dict(BM=128, BN=256, BK=16, WM=64, WN=64, STAGES=4, AT=1, MINB=1)),
    ("sgemm/11_cp_async", dict(BM=128, BN=128, BK=16, WM=64, WN=32, STAGES=3, AT=2, MINB=2)),
    _i(128, 256, 16, 64, 64, 4, 8, 1, 1),      # unchecked interior loop, lanes 4 x 8
    _i(128, 256, 16, 64, 64, 8, 8, 1, 1),      # the same with 10's lanes, 8 x 4 (what each change buys)
    _i(128, 128, 16, 64, 32, 4, 8, 2, 2),      # split-K in two
)


# DOT: (n, target fraction of the copy bandwidth); GEMV: (m = n, trans, target fraction of cuBLAS)
DOT_PROBLEMS = [(1 << 24, 0.80), (1 << 26, 0.90)]
# gemmlab.blas.gemm's kernel, column-major, N = 4096: (transa, transb, target fraction of cuBLAS)
GEMM_PROBLEMS = [("N", "N", 0.85), ("N", "T", 0.85), ("T", "N", 0.85), ("T", "T", 0.85)]
GEMV_PROBLEMS = [(4096, "N", 0.90), (4096, "T", 0.90), (16384, "N", 0.90), (16384, "T", 0.90)]


def _dot(BLOCK, UNROLL, GRID, DET, CS=1):
    return ("blas/dot/07_bandwidth", dict(BLOCK=BLOCK, UNROLL=UNROLL, GRID=GRID, DET=DET, CS=CS))


def _gemv(WARPS, UNROLL, SPLIT, VEC, CS=1):
    return ("blas/gemv/04_bandwidth", dict(WARPS=WARPS, UNROLL=UNROLL, SPLIT=SPLIT, VEC=VEC, CS=CS))


DOT_CANDIDATES = cases(
    ("blas/dot/06_warp_shuffle", dict(BLOCK=256, PER=2)),
    _dot(256, 1, 8448, 0, 1), _dot(1024, 2, 2112, 0, 1), _dot(1024, 2, 2112, 0, 0), _dot(512, 2, 4224, 0, 0),
    _dot(256, 1, 8448, 0, 0),
    _dot(1024, 2, 1056, 1, 1), _dot(1024, 2, 1056, 1, 0), _dot(512, 1, 4224, 1, 1),   # deterministic
)
GEMV_CANDIDATES = cases(
    ("blas/gemv/03_row_col_split", dict(ROWS=32, SPLITS=16)),
    _gemv(8, 8, 8, 4, 1), _gemv(8, 8, 4, 4, 1), _gemv(8, 4, 16, 4, 1), _gemv(8, 8, 8, 4, 0), _gemv(16, 4, 8, 4, 0),
    _gemv(4, 8, 16, 4, 0), _gemv(32, 8, 1, 1, 0), _gemv(8, 8, 1, 1, 0), _gemv(8, 8, 1, 1, 1),
)


def _gemm5(BM, BN, BK, WM, WN, GROUP, MINB):
    return ("blas/gemm/05_warp_tiled", dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, GROUP=GROUP, MINB=MINB))


GEMM_CANDIDATES = cases(
    ("blas/gemm/04_double_buffer", dict(TT=8)),
    _gemm5(128, 256, 16, 64, 64, 8, 1), _gemm5(256, 128, 16, 64, 64, 8, 1), _gemm5(128, 128, 8, 64, 32, 8, 2),
    _gemm5(128, 128, 16, 64, 32, 8, 2), _gemm5(128, 256, 8, 64, 64, 8, 1),
)


def _warm_up(seconds: float = 5.0):
    import time
    problem = problem_of("gemm", 4096)
    inputs, out = problem.inputs(numpy.random.default_rng(0)), problem.output()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(20):
            problem.library(inputs, out)
        hw.xp.cuda.get_current_stream().synchronize()


COPY = "copy (as many bytes as DOT reads)"


def measure_dot(n: int, target: float, reps: int = 30, progress: bool = True) -> dict:
    """DOT's candidates at n, checked, then timed with cuBLAS and a copy of 8n bytes in one round-robin."""
    src = hw.xp.ones(2 * n, dtype="float32")
    dst = hw.xp.empty_like(src)
    t, errors = measure_problem(DOT_CANDIDATES, problem_of("dot", n), f"climb DOT n=2^{n.bit_length() - 1}", reps=reps,
                                progress=progress, extra={COPY: lambda: hw.xp.copyto(dst, src)})
    best = pick(t, {case_name(k, c) for k, c in DOT_CANDIDATES}, by="gbs")
    copy_gbs = 2 * 2 * n * 4 / (t[COPY].median_ms * 1e-3) / 1e9
    det = max((r for r in t.to_dict()["rows"] if "DET=1" in r["name"]), key=lambda r: r["gbs"])
    return {"n": n, "target": target, "best": best["name"], "gbs": best["gbs"], "copy_gbs": copy_gbs,
            "ratio": best["gbs"] / copy_gbs, "met": best["gbs"] / copy_gbs >= target,
            "deterministic_best": det["name"], "deterministic_ratio": det["gbs"] / copy_gbs,
            "errors": errors, "timing": t.to_dict()}


def measure_gemv(m: int, trans: str, target: float, reps: int = 30, progress: bool = True) -> dict:
    """GEMV's candidates on an m x m column-major A, checked, then timed with cuBLAS in one round-robin."""
    problem = problem_of("gemv", m, m, trans=trans)
    verdict, t, errors = against_library(GEMV_CANDIDATES, problem, f"climb GEMV {m}^2 {trans}", target, reps=reps,
                                         progress=progress)
    return {"m": m, "trans": trans, **verdict, "errors": errors, "timing": t.to_dict()}


def measure_gemm(transa: str, transb: str, target: float, n: int = 4096, reps: int = 10,
                 progress: bool = True) -> dict:
    """The column-major GEMM candidates (gemmlab.blas.gemm's kernel) at N = n, checked, then timed with
    cuBLAS called with the same transposes, in one round-robin."""
    problem = problem_of("gemm", n, n, n, transa=transa, transb=transb, layout="col")
    verdict, t, errors = against_library(GEMM_CANDIDATES, problem, f"climb GEMM {n} {transa}{transb}", target,
                                         reps=reps, progress=progress)
    return {"transa": transa, "transb": transb, "n": n, **verdict, "errors": errors, "timing": t.to_dict()}


def run_gemm(reps: int = 10) -> list:
    out = []
    for ta, tb, target in GEMM_PROBLEMS:
        out.append(measure_gemm(ta, tb, target, reps=reps))
        print(Timings.from_dict(out[-1]["timing"], recorded=False), flush=True)
    return out


def run_dot(reps: int = 30) -> list:
    out = []
    for n, target in DOT_PROBLEMS:
        out.append(measure_dot(n, target, reps))
        print(Timings.from_dict(out[-1]["timing"], recorded=False), flush=True)
    return out


def run_gemv(reps: int = 30) -> list:
    out = []
    for m, trans, target in GEMV_PROBLEMS:
        out.append(measure_gemv(m, trans, target, reps))
        print(Timings.from_dict(out[-1]["timing"], recorded=False), flush=True)
    return out


def recorded() -> dict:
    """The climb record the chapters show: the reader's GPU's, else the H200's (``record.shown``)."""
    return record.shown("climb")


_warmed = False


def now_or_recorded(kind: str, key) -> tuple:
    """A chapter's timing cell: DOT at n = key, GEMV at key = (m, trans), or SGEMM at a size label of
    PROBLEMS ("4096", "4097", ...), measured now on a GPU (the
    record's candidates and method), else the H200 run recorded by ``python -m gemmlab climb --record``.
    Returns (the entry, its Timings)."""
    if kind not in ("dot", "gemv", "sgemm"):
        raise ValueError(f"kind must be 'dot', 'gemv' or 'sgemm', got {kind!r}")
    rec = recorded()
    if kind == "sgemm" and key not in [label for label, _, _ in PROBLEMS]:
        raise ValueError(f"an SGEMM key is a size of the climb, one of {[label for label, _, _ in PROBLEMS]}, got {key!r}")
    if not hw.on_gpu:                               # the record has only the sizes it was measured at
        have = {"dot": [d["n"] for d in rec["dot"]], "gemv": [(g["m"], g["trans"]) for g in rec["gemv"]],
                "sgemm": [x["size"] for x in rec["sizes"]]}[kind]
        if (tuple(key) if kind == "gemv" else key) not in have:
            raise ValueError(f"without a GPU only the recorded {kind} keys can be shown, one of {have}; got {key!r}")
    global _warmed
    if hw.on_gpu and not _warmed:
        _warm_up(2.0)
        _warmed = True
    if kind == "dot":
        target = dict(DOT_PROBLEMS).get(key, 0.0)
        entry = measure_dot(key, target, progress=False) if hw.on_gpu else next(
            d for d in rec["dot"] if d["n"] == key)
    elif kind == "sgemm":
        entry = next(x for x in rec["sizes"] if x["size"] == key)
        if hw.on_gpu:
            problem = next(p for label, p, _ in PROBLEMS if label == key)
            entry = measure_sgemm(key, problem, entry["target"], progress=False)
    else:
        target = {(m, t): x for m, t, x in GEMV_PROBLEMS}.get(tuple(key), 0.0)
        entry = measure_gemv(*key, target, progress=False) if hw.on_gpu else next(
            g for g in rec["gemv"] if (g["m"], g["trans"]) == tuple(key))
    name = f"{kind} {tuple(key) if kind == 'gemv' else key}"
    if hw.on_gpu:
        record.keep("climb", name, entry)
        return entry, Timings.from_dict(entry["timing"], recorded=False)
    mine = record.kept("climb", name)
    if mine is not None:
        entry = mine[0]
        return entry, Timings.from_dict(entry["timing"], recorded=True, source=mine[1])
    return entry, Timings.from_dict(entry["timing"], recorded=True, source=record.source_of("climb"))


def measure_sgemm(label: str, problem, target: float, reps: int = 10, progress: bool = True) -> dict:
    """Every SGEMM candidate on ``problem``, checked, then timed with cuBLAS in one round-robin."""
    verdict, t, errors = against_library(CANDIDATES, problem, f"climb {label}", target, reps=reps, progress=progress)
    return {"size": label, **verdict, "errors": errors, "timing": t.to_dict()}


def run_all(reps: int = 10) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"the climb is measured on a GPU ({hw.backend_reason})")
    _warm_up()
    sizes = []
    for label, problem, target in PROBLEMS:
        sizes.append(measure_sgemm(label, problem, target, reps=reps if problem.m < 8000 else 5))
        print(Timings.from_dict(sizes[-1]["timing"], recorded=False), flush=True)
    return {"sizes": sizes, "resources": {case_name(k, c): resources(k, c) for k, c in CANDIDATES},
            "dot": run_dot(), "gemv": run_gemv(), "gemm": run_gemm(), "command": "python -m gemmlab climb --record"}


# the steps of Part IV by the kernel file, in the order the chapters introduce them
STEPS = [("06_register_tiling", "06 register tiles (Part II)"), ("07_vectorized", "07 float4, 8 x 8 per thread"),
         ("09_warp_tiling", "09 warp tiles"), ("10_double_buffer", "10 two stages, tuned"),
         ("11_cp_async", "11 cp.async pipeline")]


def step_ratios(result: dict | None = None) -> dict:
    """{step label: {size: best ratio to cuBLAS of that kernel file's candidates}} from a climb record."""
    result = result or recorded()
    out = {}
    for prefix, label in STEPS:
        row = {}
        for s in result["sizes"]:
            t = Timings.from_dict(s["timing"])
            ratios = [t.ratio(r["name"]) for r in s["timing"]["rows"] if r["name"].startswith(prefix)]
            ratios = [r for r in ratios if r is not None]
            if ratios:
                row[s["size"]] = max(ratios)
        out[label] = row
    return out


def plot(result: dict | None = None, ax=None):
    """Each step's best configuration as a fraction of cuBLAS at every size of the record, the targets marked."""
    import matplotlib.pyplot as plt
    result = result or recorded()
    env = result["environment"]
    order = {"1024": 0, "2048": 1, "4096": 2, "8192": 3}          # the squares by size, then the awkward shapes
    entries = sorted(result["sizes"], key=lambda s: order.get(s["size"], 4))
    sizes = [s["size"] for s in entries]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.4))
    x = range(len(sizes))
    for label, row in step_ratios(result).items():
        ax.plot(list(x), [100 * row.get(size, float("nan")) for size in sizes], marker="o", label=label)
    ax.scatter(list(x), [100 * s["target"] for s in entries], marker="_", s=400, color="black",
               label="target", zorder=3)
    ax.axhline(100, color="#888", lw=1)
    ax.set_xticks(list(x), sizes, fontsize=10)
    ax.set_ylabel("% of cuBLAS SGEMM")
    ax.set_ylim(0, 110)
    ax.set_title(f"Part IV's steps against cuBLAS, {env['gpu']}, {env['date'][:10]}", fontsize=10)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
    ax.figure.tight_layout()
    return ax


def save(result: dict):
    return record.save(f"climb-{record.gpu_slug()}", result)


def summary(result: dict) -> Table:
    """The best of each problem of a climb run against its target, as a :class:`Table` (``print`` it for text,
    ``.show()`` it in a notebook): SGEMM sizes, DOT (against the copy), GEMV and GEMM."""
    def verdict(x):
        return f"{100 * x['target']:.0f}% {'met' if x['met'] else 'MISSED'}"
    rows = [[s["size"], s["best"], f"{100 * s['ratio']:.1f}%", verdict(s)] for s in result["sizes"]]
    rows += [["DOT n=2^%d" % (d["n"].bit_length() - 1), d["best"], f"{100 * d['ratio']:.1f}%",
              f"{verdict(d)} of copy ({d['gbs']:.0f} of {d['copy_gbs']:.0f} GB/s); "
              f"deterministic {100 * d['deterministic_ratio']:.1f}%"] for d in result.get("dot", [])]
    rows += [["GEMV %d^2 %s" % (g["m"], g["trans"]), g["best"], f"{100 * g['ratio']:.1f}%", verdict(g)]
             for g in result.get("gemv", [])]
    rows += [["GEMM %d %s%s" % (g["n"], g["transa"], g["transb"]), g["best"], f"{100 * g['ratio']:.1f}%", verdict(g)]
             for g in result.get("gemm", [])]
    return Table(["problem", "best", "vs cuBLAS", "target"], rows, align="rlrl")
