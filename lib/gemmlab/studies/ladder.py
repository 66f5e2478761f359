"""The SGEMM ladder (chapters 02-06) measured in one run: ``python -m gemmlab ladder --record``.

One process on one GPU: every step and every sweep of the SGEMM chapters is checked against a float64
reference at N = 4096 first, then timed with :func:`gemmlab.bench` (CUDA events, median, L2 flushed,
round-robin, cuBLAS a column). The result goes to ``results/ladder-<gpu>.json``; the chapters read it
where they show the whole ladder, and fall back to it (saying so) where a live timing cannot run.
"""
from __future__ import annotations

import numpy

from ..runtime import backend as hw
from .. import record, registry
from ..cases import problem as problem_of
from ..cases import Case
from ..table import Table
# the measurement core, as the ladder has always offered it (gl.ladder.case_name, measure_problem, resources)
from .core import case_name, measure_problem, resources, timing_label

N = 4096

# The ladder: one configuration per step, in the chapters' order (each Case names its chapter and its label).
STEPS = [
    Case("sgemm/01_naive", {"BLOCK": 16}, name="naive (x = column)", chapter="02-naive-and-tiled"),
    Case("sgemm/02_shared_tiling", {"TILE": 16}, name="shared tiling, TILE 16", chapter="02-naive-and-tiled"),
    Case("sgemm/03_uncoalesced", {"BLOCK": 16}, name="uncoalesced (x = row)", chapter="03-coalescing"),
    Case("sgemm/04_padded_tiling", {"TILE": 16, "PAD": 1, "UNROLL": 1, "AT": 0}, name="padded tiling 16, unrolled",
         chapter="04-shared-tiling"),
    Case("sgemm/05_cache_blocking", {"TM": 8, "TN": 8}, name="cache blocking 8x8", chapter="05-cache-blocking"),
    Case("sgemm/06_register_tiling", {"T": 32, "RM": 4, "RN": 2, "MINB": 1}, name="register tiling 32, 4x2",
         chapter="06-register-tiling"),
]

# What each source reported for the step (their words are theirs; the figures are quoted).
SEED_CLAIMS = {
    "sgemm/02_shared_tiling": "Russian lesson: tiled 3-6x faster than naive in practice (no GPU named)",
    "sgemm/03_uncoalesced": "SGEMM ch. 9: wrong mapping makes A and C traffic 20-30x larger (no GPU named)",
    "sgemm/04_padded_tiling": "SGEMM ch. 9: #pragma unroll typically worth 10-20% (no GPU named)",
    "sgemm/05_cache_blocking": "CUDA Handbook 17.3: best 8x8, 3762 GFLOP/s, 4.2x naive (on its GPU)",
    "sgemm/06_register_tiling": "SGEMM ch. 9: 2x2 tile + padding + launch bounds reach 60-75% of FP32 peak",
}

def _all(key):
    return [Case(key, c) for c in registry.get(key).choices()]


# The recorded sweeps: label -> the Cases timed together (round-robin).
SWEEPS = {
    "naive and tiled": [Case("sgemm/01_naive", {"BLOCK": 16})] + _all("sgemm/02_shared_tiling"),
    "coalescing": [Case("sgemm/01_naive", {"BLOCK": b}) for b in (16, 32)]
                  + [Case("sgemm/03_uncoalesced", {"BLOCK": b}) for b in (16, 32)],
    "padded tiling: switches": _all("sgemm/04_padded_tiling"),
    "cache blocking: TM x TN": [Case("sgemm/05_cache_blocking", {"TM": m, "TN": n})
                                for m in (1, 2, 4, 8) for n in (1, 2, 4, 8)],
    # the same kernel with a guard on every load (EDGE = 1) beside the one whose k loop tests nothing
    "cache blocking: edge tests": [Case("sgemm/05_cache_blocking", {"TM": m, "TN": n, "EDGE": e})
                                   for m, n in ((8, 4), (1, 1), (8, 8)) for e in (0, 1)],
    "register tiling: T, RM x RN, MINB": _all("sgemm/06_register_tiling"),
}


def measure(cases: list, n: int = N, reps: int = 10, label: str = "", progress: bool = True):
    """Check and time SGEMM ladder cases at N = n (square, row-major)."""
    return measure_problem(cases, problem_of("gemm", n), timing_label(label, n), reps, progress)


def run_all(reps: int = 10) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"the ladder is measured on a GPU ({hw.backend_reason})")
    timings, errors, res = [], {}, {}
    steps = list(STEPS)
    t, e = measure(steps, reps=reps, label="ladder")
    timings.append(t.to_dict())
    errors.update(e)
    for name, cases in SWEEPS.items():
        t, e = measure(cases, reps=reps, label=name)
        timings.append(t.to_dict())
        errors.update(e)
        for key, c in cases:
            res[case_name(key, c)] = resources(key, c)
    return {"N": N, "steps": [{"chapter": c.chapter, "label": c.name, "case": c.label, "seed": SEED_CLAIMS.get(c.key)}
                              for c in STEPS],
            "errors": errors, "resources": res, "timings": timings,
            "command": "python -m gemmlab ladder --record"}


def save(result: dict):
    return record.save(f"ladder-{record.gpu_slug()}", result)


# --- reading the recorded ladder (chapters) ----------------------------------------------------

def recorded() -> dict:
    """The ladder record the chapters show: the reader's GPU's, else the H200's (``record.shown``)."""
    return record.shown("ladder")


def table(upto_chapter: str, data: dict | None = None) -> list:
    """The ladder so far: rows of (step, GFLOP/s, % of cuBLAS, seed's claim), every step of every chapter up to
    ``upto_chapter`` (a notebook's name: '02-naive-and-tiled') included, in the ladder's order."""
    data = data or recorded()
    ladder = next(t for t in data["timings"] if t["label"] == timing_label("ladder", data["N"]))
    by_name = {r["name"]: r for r in ladder["rows"]}
    if upto_chapter not in {step["chapter"] for step in data["steps"]}:
        raise ValueError(f"no step of the SGEMM ladder is from chapter {upto_chapter!r}; the ladder's chapters: "
                         f"{', '.join(dict.fromkeys(step['chapter'] for step in data['steps']))}")
    rows = []
    for step in data["steps"]:
        if step["chapter"][:2] > upto_chapter[:2]:
            break
        r = by_name[step["case"]]
        rows.append((step["label"], r["gflops"], r["vs_library"], step["seed"] or ""))
    lib = by_name["cuBLAS"]
    rows.append(("cuBLAS", lib["gflops"], 1.0, ""))
    return rows


def show(upto_chapter: str, ax=None):
    """Show the ladder table up to a chapter and draw it as bars (recorded data, dated)."""
    import matplotlib.pyplot as plt
    data = recorded()
    rows = table(upto_chapter, data)
    env = data["environment"]
    seeds = any(r[3] for r in rows)
    Table(["step", "GFLOP/s", "of cuBLAS"] + (["the seed's claim"] if seeds else []),
          [[label, f"{gflops:.0f}", f"{frac:.1%}"] + ([seed] if seeds else []) for label, gflops, frac, seed in rows],
          align="lrr" + ("l" if seeds else ""),
          title=f"SGEMM ladder, N = {data['N']}, recorded on {env['gpu']} on {env['date'][:10]} ({data['command']}):"
          ).show()
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1))
    labels = [r[0] for r in rows][::-1]
    values = [r[1] / 1e3 for r in rows][::-1]
    bars = ax.barh(labels, values, color=["#888" if l == "cuBLAS" else "#3b7dd8" for l in labels])
    for b, r in zip(bars, rows[::-1]):
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {r[2]:.0%}", va="center", fontsize=10)
    ax.set_xlabel("TFLOP/s (FP32)")
    ax.set_title(f"SGEMM N={data['N']} on {env['gpu']}, {env['date'][:10]} (% of cuBLAS)", fontsize=10)
    ax.figure.tight_layout()
    return ax


def sweep_grid(label: str, x: str, y: str, fixed: dict | None = None, data: dict | None = None):
    """A recorded sweep as a 2-D grid of GFLOP/s over two parameters (others fixed)."""
    data = data or recorded()
    t = next(t for t in data["timings"] if t["label"] == timing_label(label, data["N"]))
    key = SWEEPS[label][-1].key
    choices = [c for k, c in SWEEPS[label] if k == key]
    xs = sorted({c[x] for c in choices})
    ys = sorted({c[y] for c in choices})
    grid = numpy.full((len(ys), len(xs)), numpy.nan)
    by_name = {r["name"]: r for r in t["rows"]}
    for c in choices:
        if fixed and any(c[k] != v for k, v in fixed.items()):
            continue
        grid[ys.index(c[y]), xs.index(c[x])] = by_name[case_name(key, c)]["gflops"]
    return xs, ys, grid, t["environment"]


def heatmap(label: str, x: str, y: str, fixed: dict | None = None, ax=None):
    import matplotlib.pyplot as plt
    xs, ys, grid, env = sweep_grid(label, x, y, fixed)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.2))
    im = ax.imshow(grid / 1e3, origin="lower", cmap="viridis")
    ax.set_xticks(range(len(xs)), xs)
    ax.set_yticks(range(len(ys)), ys)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    for (i, j), v in numpy.ndenumerate(grid):
        if numpy.isfinite(v):
            ax.text(j, i, f"{v / 1e3:.1f}", ha="center", va="center", color="w" if v < numpy.nanmax(grid) * 0.6 else "k",
                    fontsize=10)
    fixed_txt = (", " + ", ".join(f"{k}={v}" for k, v in fixed.items())) if fixed else ""
    ax.set_title(f"{label}{fixed_txt}\nTFLOP/s, N={N}, {env['gpu']}, {env['date'][:10]}", fontsize=10)
    ax.figure.colorbar(im, ax=ax, label="TFLOP/s")
    return ax


__all__ = ["STEPS", "SWEEPS", "SEED_CLAIMS", "run_all", "measure", "table", "show", "heatmap", "sweep_grid",
           "resources", "case_name", "timing_label"]


def cases_for(label: str) -> list:
    """The (key, params) cases behind a recorded timing label ("ladder" or a sweep name)."""
    if label == "ladder":
        return list(STEPS)
    return list(SWEEPS[label])


def timed(label: str, reps: int = 10):
    """A chapter's timing cell: on a GPU, check and time the cases now; without one, the recorded run.

    Either way the returned Timings' caption says which it is.
    """
    if hw.on_gpu:
        return measure(cases_for(label), reps=reps, label=label, progress=False)[0]
    from ..timing import recorded as recorded_timing
    return recorded_timing(record.find("ladder")[0], timing_label(label))


def resources_table(cases: list, data: dict | None = None) -> None:
    """Show registers, shared memory and occupancy of some configurations: on a GPU, compiled for it now;
    without one, as recorded (the table's title says which GPU and compiler produced them)."""
    which = ", ".join(case_name(k, p) for k, p in cases)
    mine = record.kept("resources", which) if not hw.on_gpu and data is None else None
    if hw.on_gpu and data is None:
        from ..runtime.profiles import current
        env = record.environment()
        rows = {case_name(k, p): resources(k, p) for k, p in cases}
        record.keep("resources", which, {"rows": rows, "environment": env})
        title = (f"compiled just now for this GPU ({current().describe()}) by NVRTC of CUDA "
                 f"{record.cuda_version(env)} (CuPy {env['cupy']}):")
    elif mine is not None:
        rows, env = mine[0]["rows"], mine[0]["environment"]
        title = (f"recorded on {env['gpu']} on {env['date'][:10]}, compiled by NVRTC of CUDA "
                 f"{record.cuda_version(env)} (CuPy {env.get('cupy')}); from {mine[1]}:")
    else:
        data = data or recorded()
        env = data["environment"]
        title = (f"recorded on {env['gpu']} on {env['date'][:10]}, compiled by NVRTC of CUDA "
                 f"{record.cuda_version(env)} (CuPy {env.get('cupy')}); {data.get('shown_as', '')}:")
        rows = data["resources"]
    body = []
    for key, params in cases:
        r = rows[case_name(key, params)]
        body.append([case_name(key, params), r["threads"], r["registers"], r["static_shared"], r["local_bytes"],
                     r["blocks_per_sm"], f"{r['occupancy']:.0%}", r["limited_by"]])
    Table(["configuration", "threads", "regs", "smem B", "spill B", "blocks/SM", "occupancy", "limited by"], body,
          align="lrrrrrrl", title=title).show()


def resources_of(key: str, params: dict) -> tuple:
    """(resources, where) of one configuration: compiled now for the GPU in use, else the record shown (the
    reader's GPU's, else the H200's); ``where`` names the GPU they belong to."""
    if hw.on_gpu:
        from ..runtime.profiles import current
        return resources(key, params), f"compiled just now for {current().name}"
    data = recorded()
    return data["resources"][case_name(key, params)], f"recorded on {data['environment']['gpu']}"


def rate(label: str, key: str, params: dict, data: dict | None = None) -> float:
    """GFLOP/s of one configuration in a recorded sweep."""
    data = data or recorded()
    t = next(t for t in data["timings"] if t["label"] == timing_label(label, data["N"]))
    return next(r["gflops"] for r in t["rows"] if r["name"] == case_name(key, params))
