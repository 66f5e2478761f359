"""The BLAS chapters' measurements, in one run: ``python -m gemmlab blas --record``.

Every step of the DOT, GEMV and column-major GEMM chapters, at the BLAS article's sizes (DOT 2^24,
GEMV 4096 x 4096, GEMM 2048), checked against float64 first and timed round-robin with cuBLAS; the
GEMV launch-geometry sweep; the transposes; the atomic DOT's error growth; and the scaling study
(every step and cuBLAS across sizes, median of several passes, written as CSV). Results go to
``results/blas-<gpu>.json`` and ``results/blas-scaling-<gpu>.csv``.
"""
from __future__ import annotations

import csv
import io
import statistics

import numpy

from ..runtime import backend as hw
from .. import record, registry
from ..cases import Case, problem as problem_of
from .core import measure_problem, resources
from ..paths import atomic_write
from ..table import Table


DOT_STEPS = [
    Case("blas/dot/00_atomic", {"BLOCK": 768}, name="DOT 0: atomic, 768-thread blocks"),
    Case("blas/dot/00_atomic", {"BLOCK": 256}, name="DOT 1: atomic, 256-thread blocks"),
    Case("blas/dot/02_block_reduction", {"BLOCK": 256, "TREE": 0, "PER": 1}, name="DOT 2: block tree, divergent"),
    Case("blas/dot/02_block_reduction", {"BLOCK": 256, "TREE": 1, "PER": 1}, name="DOT 3: block tree, contiguous threads"),
    Case("blas/dot/02_block_reduction", {"BLOCK": 256, "TREE": 2, "PER": 1}, name="DOT 4: sequential addressing"),
    Case("blas/dot/02_block_reduction", {"BLOCK": 256, "TREE": 2, "PER": 2}, name="DOT 5: two elements per thread"),
    Case("blas/dot/06_warp_shuffle", {"BLOCK": 256, "PER": 2}, name="DOT 6: warp shuffles"),
]
GEMV_STEPS = [
    Case("blas/gemv/00_row_per_thread", {}, name="GEMV 0: a thread per row, ceil(M/512) blocks"),
    Case("blas/gemv/01_shared_x", {"BLOCK": 256, "GRID": 0}, name="GEMV 1: shared x, same launch"),
    Case("blas/gemv/01_shared_x", {"BLOCK": 256, "GRID": 512}, name="GEMV 2: shared x, 512 blocks of 256"),
    Case("blas/gemv/03_row_col_split", {"ROWS": 32, "SPLITS": 16}, name="GEMV 3: 32 rows x 16 column splits"),
]
GEMM_STEPS = [
    Case("blas/gemm/00_naive", {}, name="GEMM 0: naive"),
    Case("blas/gemm/01_shared_tiling", {}, name="GEMM 1: 16 x 16 shared tiles"),
    Case("blas/gemm/02_register_tiling", {"TT": 4}, name="GEMM 2: 4 x 4 register tile"),
    Case("blas/gemm/02_register_tiling", {"TT": 8}, name="GEMM 3: 8 x 8 register tile"),
    Case("blas/gemm/04_double_buffer", {"TT": 8}, name="GEMM 4: double buffering"),
]
FAMILIES = {"DOT": DOT_STEPS, "GEMV": GEMV_STEPS, "GEMM": GEMM_STEPS}


def problem(family: str, size: int, **kw):
    """A family's problem at one size (column-major, as the BLAS's): cases.problem, named by the family."""
    return problem_of({"DOT": "dot", "GEMV": "gemv", "GEMM": "gemm-col"}[family], size, **kw)


ARTICLE_SIZE = {"DOT": 1 << 24, "GEMV": 4096, "GEMM": 2048}
SCALING_SIZES = {"DOT": [1 << e for e in range(16, 27)], "GEMV": [256, 512, 1024, 2048, 4096, 8192],
                 "GEMM": [256, 512, 1024, 2048, 4096, 8192]}


def _steps(family):
    return list(FAMILIES[family]), [c.name for c in FAMILIES[family]]


def geometry_name(config: dict) -> str:
    """The name of one launch geometry of the shared-x GEMV kernel in the recorded sweep."""
    return f"grid {config['GRID'] or 'ceil(M/2B)'} x block {config['BLOCK']}"


def run_steps(reps: int = 20) -> dict:
    timings, errors, res = [], {}, {}
    for family in FAMILIES:
        cases, names = _steps(family)
        prob = problem(family, ARTICLE_SIZE[family])
        t, e = measure_problem(cases, prob, f"{family} steps, {prob.label}", reps=reps, names=names)
        timings.append(t.to_dict())
        errors.update(e)
        for name, (k, p) in zip(names, cases):
            res[name] = resources(k, p, prob)
    # GEMV launch geometry (grid x block) for the shared-x kernel
    v = registry.get("blas/gemv/01_shared_x")
    prob = problem("GEMV", 4096)
    cases = [("blas/gemv/01_shared_x", c) for c in v.choices()]
    names = [geometry_name(c) for c in v.choices()]
    t, e = measure_problem(cases, prob, f"GEMV launch geometry, {prob.label}", reps=reps, names=names)
    timings.append(t.to_dict())
    # transposes, final kernels against cuBLAS
    for family in TRANSPOSES:
        timings += [t.to_dict() for t in _transposed(family, reps, progress=True)]
    return {"timings": timings, "errors": errors, "resources": res, "atomic_error": atomic_error()}


# the transpose flags each family's last step is timed with against cuBLAS (chapters 8 and 9)
TRANSPOSES = {"GEMV": [{"trans": "T"}], "GEMM": [{"transa": "T"}, {"transb": "T"}, {"transa": "T", "transb": "T"}]}


def _transposed(family, reps, progress):
    last = FAMILIES[family][-1]
    name, k, p = last.name, last.key, last.params
    out = []
    for f in TRANSPOSES[family]:
        prob = problem(family, ARTICLE_SIZE[family], **f)
        out.append(measure_problem([(k, p)], prob, f"{family} transposed, {prob.label}", reps=reps, names=[name],
                                   progress=progress)[0])
    return out


def transposed(family: str, reps: int = 20) -> list:
    """A chapter's cell: the family's last step and cuBLAS with each transpose flag (:data:`TRANSPOSES`), one
    Timings each: measured now on a GPU; without one, this chapter's run, else the BLAS study's record (each
    Timings says which)."""
    if family not in TRANSPOSES:
        raise ValueError(f"family is one of {sorted(TRANSPOSES)}, got {family!r}")
    if hw.on_gpu:
        return _transposed(family, reps, progress=False)
    from ..timing import recorded as recorded_timing
    name = record.find("blas")[0]
    return [recorded_timing(name, f"{family} transposed, {problem(family, ARTICLE_SIZE[family], **f).label}")
            for f in TRANSPOSES[family]]


def atomic_error(sizes=tuple(1 << e for e in range(16, 27, 2)), distribution: str = "normal") -> list:
    """How the atomic DOT's rounding error grows with n, against the warp-shuffle DOT's.

    ``distribution`` "normal" (mean 0: the running sum wanders around sqrt(n)) or "uniform" (values in
    [0, 1): the running sum grows like n/4, and each small product is added to a huge total).
    """
    if distribution not in ("normal", "uniform"):
        raise ValueError(f"distribution must be 'normal' or 'uniform', got {distribution!r}")
    rows = []
    for n in sizes:
        prob = problem_of("dot", n)
        rng = numpy.random.default_rng(n)
        if distribution == "normal":
            inputs = prob.inputs(rng)
        else:
            inputs = tuple(hw.xp.asarray(rng.random(n).astype(numpy.float32)) for _ in range(2))
        x, y = (hw.to_host(a).astype(numpy.float64) for a in inputs)
        ref, scale = float(x @ y), float(numpy.abs(x) @ numpy.abs(y))
        row = {"n": n, "reference": ref}
        for tag, (k, p) in (("atomic", ("blas/dot/00_atomic", {"BLOCK": 256})),
                            ("shuffle", ("blas/dot/06_warp_shuffle", {"BLOCK": 256, "PER": 2}))):
            out = prob.output()
            registry.get(k).runner(prob, **p)(inputs, out)
            got = float(hw.to_host(out)[0])
            row[f"{tag}_relative"] = abs(got - ref) / abs(ref)
            row[f"{tag}_vs_sum_abs"] = abs(got - ref) / scale
        rows.append(row)
    return rows


def run_scaling(passes: int = 3, reps: int = 10) -> list:
    """Every step and cuBLAS at every size: median over passes of each pass's median."""
    from tqdm.auto import tqdm
    rows = []
    jobs = [(f, s) for f in FAMILIES for s in SCALING_SIZES[f]]
    for family, size in tqdm(jobs, desc="scaling"):
        cases, names = _steps(family)
        prob = problem(family, size)
        medians = {}
        for _ in range(passes):
            t, _ = measure_problem(cases, prob, f"{family} {size}", reps=reps, names=names, progress=False)
            for r in t.rows:
                medians.setdefault(r.name, []).append(r.median_ms)
        lib = statistics.median(medians["cuBLAS"])
        for name, values in medians.items():
            ms = statistics.median(values)
            rows.append({"family": family, "size": size, "kernel": name, "median_ms": ms,
                         "gflops": prob.flops / (ms * 1e-3) / 1e9, "gbs": prob.bytes / (ms * 1e-3) / 1e9,
                         "vs_cublas": lib / ms, "pass_medians_ms": ";".join(f"{v:.6f}" for v in values)})
    return rows


def scaling_csv(rows: list, env: dict) -> str:
    out = io.StringIO()
    for key in ("gpu", "date", "cupy", "cuda_runtime", "cuda_driver", "git_commit"):
        out.write(f"# {key}: {env.get(key)}\n")
    out.write("# command: python -m gemmlab blas --record\n")
    w = csv.DictWriter(out, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def run_all(passes: int = 3) -> tuple:
    if not hw.on_gpu:
        raise SystemExit(f"the BLAS measurements need a GPU ({hw.backend_reason})")
    steps = run_steps()
    steps["command"] = "python -m gemmlab blas --record"
    scaling = run_scaling(passes=passes)
    return steps, scaling


def save(steps: dict, scaling: list):
    path = record.save(f"blas-{record.gpu_slug()}", steps)
    csv_path = path.with_name(f"blas-scaling-{record.gpu_slug()}.csv")
    atomic_write(csv_path, scaling_csv(scaling, record.environment()))
    return path, csv_path


def run_once(families) -> None:
    """Each step of the families once at the article's size: what ``ncu`` profiles (profiling appendix)."""
    for family in families:
        prob = problem(family, ARTICLE_SIZE[family])
        inputs = prob.inputs(numpy.random.default_rng(0))
        for c in FAMILIES[family]:
            registry.get(c.key).runner(prob, **c.params)(inputs, prob.output())
            hw.synchronize()
            print("ran", c.name, flush=True)


# --- reading what was recorded (chapters) ---------------------------------------------------------

def recorded() -> dict:
    """The BLAS record the chapters show: the reader's GPU's, else the H200's (``record.shown``)."""
    return record.shown("blas")


def scaling_path():
    """The scaling study's CSV beside the BLAS record shown (results/blas-scaling-<gpu>.csv)."""
    from ..paths import RESULTS as DIR
    return DIR / f"{record.find('blas')[0].replace('blas-', 'blas-scaling-', 1)}.csv"


SCALING_FIELDS = ("family", "size", "kernel", "median_ms", "gflops", "gbs", "vs_cublas", "pass_medians_ms")


def scaling_rows(path=None) -> list:
    """The scaling study's rows, checked: every field of every row present and a number where it should be,
    and every family's every step and cuBLAS at every size there (a truncated or hand-edited file is refused,
    named, rather than read as fewer rows)."""
    path = scaling_path() if path is None else path
    again = "re-make it with python -m gemmlab blas --record on the GPU it is for"

    def bad(why):
        raise ValueError(f"{path}: {why}; {again}")
    lines = [l for l in path.read_text().splitlines() if not l.startswith("#")]
    reader = csv.DictReader(lines)
    if tuple(reader.fieldnames or ()) != SCALING_FIELDS:
        bad(f"its header is {reader.fieldnames}, not the scaling study's {list(SCALING_FIELDS)}")
    rows = []
    for number, r in enumerate(reader, start=2):
        if None in r or any(v in (None, "") for v in r.values()):
            bad(f"row {number} is incomplete ({', '.join(f'{k}={v!r}' for k, v in r.items())})")
        try:
            rows.append({k: (float(v) if k not in ("family", "kernel", "pass_medians_ms") else v) for k, v in r.items()})
        except ValueError:
            bad(f"row {number} has a field that is not a number where one should be ({dict(r)})")
    for family, sizes in SCALING_SIZES.items():
        names = [c.name for c in FAMILIES[family]] + ["cuBLAS"]
        have = {(r["size"], r["kernel"]) for r in rows if r["family"] == family}
        missing = [(size, name) for size in sizes for name in names if (float(size), name) not in have]
        if missing:
            bad(f"{family} lacks {len(missing)} of its {len(sizes) * len(names)} rows, the first {missing[0][1]!r} at "
                f"{missing[0][0]} (a truncated file?)")
    return rows


COPY = "copy (as many bytes as the steps read)"


def timed(label_prefix: str, family: str, reps: int = 20):
    """A chapter's timing cell: the steps of a family now on a GPU; the recorded run without one. Live, the
    memory-bound families (DOT, GEMV) time a device-to-device copy of as many bytes as they read in the same
    round-robin: the ceiling their GB/s is read against (:func:`copy_bandwidth`)."""
    if hw.on_gpu:
        cases, names = _steps(family)
        prob = problem(family, ARTICLE_SIZE[family])
        extra = None
        if family in ("DOT", "GEMV"):
            src = hw.xp.ones(prob.bytes // 4, dtype="float32")
            dst = hw.xp.empty_like(src)
            extra = {COPY: lambda: hw.xp.copyto(dst, src)}
        return measure_problem(cases, prob, f"{family} steps, {prob.label}", reps=reps, names=names,
                               progress=False, extra=extra)[0]
    from ..timing import Timings, kept
    mine = kept(f"{family} steps, {problem(family, ARTICLE_SIZE[family]).label}")      # the live label
    if mine is not None:
        return mine
    t = next(t for t in recorded()["timings"] if t["label"].startswith(label_prefix))
    return Timings.from_dict(t, recorded=True, source=record.source_of("blas"))


def copy_bandwidth(t) -> tuple:
    """The copy bandwidth (bytes/s, read + written) a family's GB/s is read against, and where it comes from:
    the copy timed in the same round-robin (a live :func:`timed`); for a recorded timing, the ceilings
    recorded on the same GPU (``results/ceilings-<gpu>.json``)."""
    from ..models import device
    if any(r.name == COPY for r in t.rows):
        row = t[COPY]
        return 2 * row.bytes / (row.median_ms * 1e-3), "a copy timed in the same round-robin"
    gpu = t.environment.get("gpu")
    model = device.recorded(gpu)
    return model.measured_copy, (f"the copy recorded on the same GPU, {gpu}, on "
                                 f"{model.environment.get('date', '?')[:10]} (results/ceilings-{record.slug(gpu)}.json)")


def print_atomic_error(rows: list) -> None:
    """Show the error of the atomic DOT and of the warp-shuffle DOT against float64, per n (chapter 07)."""
    Table(["n", "atomic: |err|/|dot|", "shuffle: |err|/|dot|"],
          [[r["n"], f"{r['atomic_relative']:.2e}", f"{r['shuffle_relative']:.2e}"] for r in rows], align="rrr").show()


def geometry_heatmap(ax=None):
    """The recorded GEMV launch-geometry sweep (grid x block of the shared-x kernel) as a heatmap."""
    import matplotlib.pyplot as plt
    t = next(t for t in recorded()["timings"] if t["label"].startswith("GEMV launch geometry"))
    rows = [r for r in t["rows"] if r["name"] != "cuBLAS"]
    grids = list(dict.fromkeys(r["name"].split(" x ")[0].replace("grid ", "") for r in rows))
    blocks = list(dict.fromkeys(r["name"].split("block ")[1] for r in rows))
    grid = numpy.array([[next(r["gbs"] for r in rows if r["name"] == f"grid {g} x block {b}") for b in blocks]
                        for g in grids])
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    im = ax.imshow(grid, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(blocks)), blocks)
    ax.set_yticks(range(len(grids)), grids)
    ax.set_xlabel("threads per block")
    ax.set_ylabel("blocks")
    for (i, j), v in numpy.ndenumerate(grid):
        ax.text(j, i, f"{v:.0f}", ha="center", va="center", color="w" if v < grid.max() * 0.6 else "k", fontsize=10)
    env = t["environment"]
    ax.set_title(f"GEMV 4096^2 shared-x kernel, GB/s (useful bytes)\n{env['gpu']}, {env['date'][:10]}", fontsize=10)
    ax.figure.colorbar(im, ax=ax, label="GB/s")
    return ax


def scaling_table(family: str, sizes: list, kernels: list) -> None:
    """Show recorded scaling times (µs) for some kernels at some sizes."""
    rows = [r for r in scaling_rows() if r["family"] == family]
    body = []
    for s in sizes:
        found = [next((r for r in rows if r["size"] == s and r["kernel"] == k), None) for k in kernels]
        body.append([s] + [f"{r['median_ms'] * 1e3:.1f}us" if r else "-" for r in found])
    Table(["size"] + list(kernels), body, align="r" * (len(kernels) + 1)).show()


def scaling_plot(family: str, y: str = "gflops", ax=None):
    """Log-log plot of every step and cuBLAS across sizes, from the recorded CSV."""
    import matplotlib.pyplot as plt
    rows = [r for r in scaling_rows() if r["family"] == family]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.5))
    for name in dict.fromkeys(r["kernel"] for r in rows):
        pts = sorted((r["size"], r[y]) for r in rows if r["kernel"] == name)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-" if name != "cuBLAS" else "k--", ms=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (elements)" if family == "DOT" else "N (matrix order)")
    ax.set_ylabel({"gflops": "GFLOP/s", "gbs": "GB/s (useful bytes)"}[y])
    env = recorded()["environment"]
    ax.set_title(f"{family} across sizes, {env['gpu']}, {env['date'][:10]} (median of passes, L2 flushed)",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=10)
    return ax
