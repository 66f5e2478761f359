"""The one measurement core of every study: measure the candidates (each checked against float64 first, then
all timed in one round-robin with the library, :func:`gemmlab.bench`), pick the best, compare it with the
library, and judge it against a goal. The studies (ladder, climb, tensor cores, the BLAS steps, the live
sweeps) differ only in their cases and problems; how a case is named, checked, timed and judged is here.
"""
from __future__ import annotations

import numpy

from .. import record, registry
from ..cases import Case, problem as problem_of
from ..check import check_many
from ..runtime import backend as hw
from ..runtime.limits import occupancy
from ..timing import bench


def case_name(key: str, params: dict) -> str:
    """The name every record gives a configuration: 'file[P=v,...]' (:attr:`gemmlab.cases.Case.label`)."""
    return Case(key, params).label


def timing_label(name: str, n: int = 4096) -> str:
    return f"{name}, N={n}"


def resources(key: str, params: dict, problem=None) -> dict:
    """Registers, spills, shared memory and occupancy of one compiled configuration."""
    v = registry.get(key)
    problem = problem if problem is not None else (v.awkward()[-1] if v.layout == "col" else problem_of("gemm", 4096))
    k = v.kernel(problem, **params)
    _, block, dyn = v.launch(problem, v.resolve(**params))
    threads = int(numpy.prod(block))
    out = {"threads": threads, "registers": k.num_regs, "static_shared": k.static_shared_bytes,
           "local_bytes": getattr(k.impl, "local_bytes", None)}
    if k.num_regs is not None:
        out.update(occupancy(threads, k.num_regs, k.static_shared_bytes + dyn, k.limits))
    return out


def measure_problem(cases: list, problem, label: str, reps: int = 10, progress: bool = True, names=None,
                    extra: dict | None = None, settle_us: float = 0.0):
    """Check (one float64 reference) and time (key, params) cases on one problem, cuBLAS a column.

    ``names`` optionally gives each case a display name; by default ``case_name(key, params)``.
    ``extra`` (name -> zero-argument callable) is timed in the same round-robin, unchecked (a copy, say,
    whose bandwidth the cases are compared with). A case the GPU in use cannot run (its capability, its
    limits: ``Variant.skip_reason``) is not run: the Timings' ``skipped`` says which, and why. ``settle_us``:
    :func:`gemmlab.bench`'s.
    """
    names = names or [case_name(k, p) for k, p in cases]
    skipped = {name: registry.get(k).skip_reason(problem, **p) for name, (k, p) in zip(names, cases)}
    skipped = {name: why for name, why in skipped.items() if why}
    if len(skipped) == len(names):
        raise hw.UnsupportedGPU(f"{label}: the GPU in use runs none of the cases: " + "; ".join(skipped.values()))
    runners = {name: registry.get(k).runner(problem, **p) for name, (k, p) in zip(names, cases)
               if name not in skipped}
    checks = check_many(runners, problem, tolerance=max(registry.get(k).tolerance for k, _ in cases))
    bad = [str(c) for c in checks.values() if not c.ok]
    if bad:
        raise AssertionError("wrong results, not timing them:\n" + "\n".join(bad))
    inputs, out = problem.inputs(numpy.random.default_rng()), problem.output()
    prepared = {name: (lambda r=run: r(inputs, out)) for name, run in runners.items()}
    prepared.update(extra or {})
    t = bench(prepared, problem, reps=reps, progress=progress, label=label, warmup=2, settle_us=settle_us)
    if skipped:
        t.skipped = skipped
        record.keep("timing", t.label, t.to_dict())
    return t, {name: c.error for name, c in checks.items()}


def pick(t, names, by: str = "gflops") -> dict:
    """The fastest row of a timing among ``names`` (by its ``gflops``, or ``gbs`` for a bandwidth study)."""
    rows = [r for r in t.to_dict()["rows"] if r["name"] in names]
    return max(rows, key=lambda r: r[by])


def judge(best: str, ratio, target: float) -> dict:
    """A study's verdict on one problem: the best case, its ratio to the library (or to a ceiling), the goal,
    and whether it was met (a ratio that could not be measured meets nothing)."""
    return {"target": target, "best": best, "ratio": ratio, "met": ratio is not None and ratio >= target}


def against_library(cases: list, problem, label: str, target: float, reps: int = 10, progress: bool = True,
                    names=None) -> tuple:
    """Measure ``cases`` on ``problem`` with the library in the same round-robin and judge the best against
    ``target`` (a fraction of the library's speed): (the verdict, the timing, each case's error)."""
    t, errors = measure_problem(cases, problem, label, reps=reps, progress=progress, names=names)
    best = pick(t, set(names or [case_name(k, p) for k, p in cases]))
    return judge(best["name"], t.ratio(best["name"]), target), t, errors
