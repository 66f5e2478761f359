"""Autotuning: search a registry variant's parameter space on the GPU within a time budget.

    python -m gemmlab tune sgemm/10_double_buffer --sizes 1024,2048,4096 --budget 600 --record

For each size, the legal configurations (``Variant.choices``) are tried in a fixed order: the variant's
defaults first, then the rest shuffled with a fixed seed (so an interrupted or budget-limited search is
a fair sample, and reruns try the same ones). Each one is compiled (a configuration the compiler or the
GPU refuses is noted, with its reason, and skipped), checked against the float64 reference of that size,
then timed alone (CUDA events, medians, L2 flushed). When the budget runs out the search stops and says
how many it tried. At the end the best few of each size are timed again together with cuBLAS in one
round-robin (:func:`gemmlab.bench`): those are the recorded winners, in ``results/tune-<variant>-<gpu>.json``.
"""
from __future__ import annotations

import random
import time

import numpy

from ..runtime import backend as hw
from .. import ops, record, registry
from ..check import check_many
from ..cases import parse_size, problem as problem_of
from .core import case_name
from ..timing import bench

FINALISTS = 4


def order(v, seed: int = 0) -> list:
    """The order in which the search tries v's configurations: defaults first, the rest shuffled (fixed seed)."""
    every = v.choices()
    first = v.resolve()
    rest = [c for c in every if c != first]
    random.Random(seed).shuffle(rest)
    return [first] + rest


def search(key: str, problem, budget_s: float, reps: int = 5, seed: int = 0, progress: bool = True,
           clock=time.monotonic) -> dict:
    """Try configurations of ``key`` on ``problem`` until ``budget_s`` seconds are spent; returns what was
    tried (timed, wrong or refused) and how many were left untried."""
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not 0 < budget_s < float("inf"):
        raise ValueError(f"budget_s must be a positive, finite number of seconds, got {budget_s!r}")
    v = registry.get(key)
    candidates = order(v, seed)
    start = clock()
    tried, refused, wrong = [], [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(candidates), desc=f"tuning {key} on {problem.label}", leave=False)
    inputs, out = problem.inputs(numpy.random.default_rng(seed)), problem.output()
    done = 0
    for params in candidates:
        if clock() - start >= budget_s:
            break
        done += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{clock() - start:.0f}/{budget_s:.0f} s")
        name = case_name(key, params)
        why = v.skip_reason(problem, **params)            # the GPU in use cannot run it, or it does not fit
        if why:
            refused.append({"params": params, "reason": why})
            continue
        try:
            run = v.runner(problem, **params)
            check = check_many({name: run}, problem, tolerance=v.tolerance, seed=seed)[name]
        except Exception as exc:                      # the compiler or the launch refused this configuration
            refused.append({"params": params, "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"})
            continue
        if not check.ok:
            wrong.append({"params": params, "check": str(check)})
            continue
        t = bench({name: lambda r=run: r(inputs, out)}, problem, library=False, reps=reps, warmup=1)
        tried.append({"params": params, "median_ms": t[name].median_ms, "error": check.error})
    if bar is not None:
        bar.close()
    tried.sort(key=lambda x: x["median_ms"])
    return {"key": key, "problem": problem.label, "budget_s": budget_s, "spent_s": clock() - start,
            "space": len(candidates), "tried": tried, "refused": refused, "wrong": wrong,
            "untried": len(candidates) - done}


def finals(key: str, problem, found: dict, reps: int = 10) -> dict:
    """The best few of a search, timed again together with cuBLAS in one round-robin."""
    v = registry.get(key)
    best = [x["params"] for x in found["tried"][:FINALISTS]]
    if not best:
        return {"winner": None, "timing": None}
    inputs, out = problem.inputs(numpy.random.default_rng(1)), problem.output()
    runs = {case_name(key, p): v.runner(problem, **p) for p in best}
    t = bench({n: (lambda r=r: r(inputs, out)) for n, r in runs.items()}, problem, reps=reps, label=f"tune {key} {problem.label}")
    winner = min(best, key=lambda p: t[case_name(key, p)].median_ms)
    return {"winner": winner, "ratio": t.ratio(case_name(key, winner)), "timing": t.to_dict()}


def problem_for(key: str, size: str):
    """A problem of the variant's operation from "4096" (square) or "3000x5000x2000" (m x n x k)."""
    v = registry.get(key)
    if v.op is not ops.Gemm:
        raise ValueError(f"tune handles GEMM variants; {key} computes {v.op.__name__}")
    dims = parse_size(size)
    if len(dims) not in (1, 3):
        raise ValueError(f"a GEMM size is N or MxNxK, got {size!r}")
    return problem_of("gemm", *dims, layout=v.layout)


def run(key: str, sizes: list, budget_s: float, seed: int = 0) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"tuning measures on a GPU ({hw.backend_reason})")
    per = budget_s / max(1, len(sizes))
    out = []
    for size in sizes:
        problem = problem_for(key, size)
        found = search(key, problem, per, seed=seed)
        result = finals(key, problem, found)
        print(f"{problem.label}: tried {len(found['tried'])} of {found['space']} in {found['spent_s']:.0f} s "
              f"({len(found['refused'])} refused, {len(found['wrong'])} wrong, {found['untried']} untried); winner "
              f"{result['winner']} at {100 * (result.get('ratio') or 0):.1f}% of cuBLAS", flush=True)
        out.append({**found, **result, "size": size})
    return {"key": key, "budget_s": budget_s, "seed": seed, "sizes": out,
            "command": f"python -m gemmlab tune {key} --sizes {','.join(sizes)} --budget {budget_s:g} --record"}


def save(result: dict):
    return record.save(f"tune-{result['key'].replace('/', '-')}-{record.gpu_slug()}", result)


def recorded(key: str = "sgemm/12_interior") -> dict:
    """The recorded search of ``key`` (``python -m gemmlab tune KEY --record``): the reader's GPU's, else the
    H200's (``record.shown``)."""
    return record.shown(f"tune-{key.replace('/', '-')}")


def _cublas_ms(size: dict):
    rows = (size.get("timing") or {}).get("rows", [])
    return next((r["median_ms"] for r in rows if r["name"] == "cuBLAS"), None)


def summary(result: dict) -> str:
    """Per size: how much of the space the budget covered, and the winner against cuBLAS (final round-robin)."""
    env = result["environment"]
    lines = [f"tune {result['key']}: {result['budget_s']:g} s on {env['gpu']}, {env['date'][:10]} (seed {result['seed']})"]
    for s in result["sizes"]:
        head = (f"{s['problem']}: tried {len(s['tried'])} of {s['space']:,} in {s['spent_s']:.0f} s "
                f"({len(s['refused'])} refused, {len(s['wrong'])} wrong)")
        if s["winner"] is None:
            lines.append(head + "; no configuration ran")
            continue
        lines.append(f"{head}; winner at {100 * s['ratio']:.1f}% of cuBLAS:\n    "
                     + ", ".join(f"{k}={v}" for k, v in s["winner"].items()))
    return "\n".join(lines)


def plot(result: dict, ax=None):
    """Every configuration the search timed, per size, as a fraction of cuBLAS's time in that size's final
    round-robin (the search times each alone, so the dots are approximate); the winner starred."""
    import matplotlib.pyplot as plt
    env = result["environment"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.0))
    rng = numpy.random.default_rng(0)
    labels = []
    for i, s in enumerate(result["sizes"]):
        lib = _cublas_ms(s)
        labels.append(s["size"])
        if lib is None or not s["tried"]:
            continue
        ratios = [100 * lib / t["median_ms"] for t in s["tried"]]
        ax.scatter(i + rng.uniform(-0.18, 0.18, len(ratios)), ratios, s=14, color="#4477aa", alpha=0.7,
                   label="a configuration tried (timed alone)" if i == 0 else None)
        ax.scatter([i], [100 * s["ratio"]], marker="*", s=180, color="#ee6677", zorder=3,
                   label="winner (with cuBLAS, one round-robin)" if i == 0 else None)
    ax.axhline(100, color="#888", lw=1)
    ax.set_xticks(range(len(labels)), labels, fontsize=10)
    ax.set_xlabel("problem size (N, or M x N x K)")
    ax.set_ylabel("% of cuBLAS SGEMM")
    ax.set_ylim(0, 110)
    ax.set_title(f"Searching {result['key']} for {result['budget_s']:g} s, {env['gpu']}, {env['date'][:10]}",
                 fontsize=10)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    ax.figure.tight_layout()
    return ax
