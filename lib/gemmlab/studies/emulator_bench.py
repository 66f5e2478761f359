"""The emulator benchmark: how fast this machine emulates the book's tiled SGEMM, and a comparison with another commit."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy

from .. import processes
from ..cases import problem as problem_of
from ..runtime.backend import BackendError
from ..runtime.emulator.build import _compiler, _compiler_version


BARRIERS_ONLY = r'''
__global__ void barriers_only(float* out, int rounds)
{
    for (int r = 0; r < rounds; ++r) __syncthreads();
    if (threadIdx.x == 0) out[0] = (float)rounds;
}
'''


BUDGET_SECONDS = 0.1          # the tiled SGEMM at N = 256 on a 2-core machine, as CI's


def benchmark(repeats: int = 3) -> dict:
    """The emulator's speed on this machine: the budget is a 16x16 tiled SGEMM at N=256 in 0.1 s."""
    import platform
    import statistics

    from .. import registry
    if not hasattr(os, "fork"):
        raise BackendError("the emulator benchmark needs the emulator (Linux or macOS)")

    def timed(fn):
        fn()                                              # compile, reserve stacks: not timed
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    out = {"cpu": _cpu_name(), "cores": os.cpu_count(), "machine": platform.machine(),
           "compiler": _compiler_version(_compiler()).splitlines()[0], "repeats": repeats, "kernels": {}}
    op = problem_of("gemm", 256)
    inputs, result = op.inputs(numpy.random.default_rng(0)), op.output()
    for key, params in (("sgemm/01_naive", {"BLOCK": 16}), ("sgemm/02_shared_tiling", {"TILE": 16})):
        v = registry.get(key)
        run = v.runner(op, **params)
        seconds = timed(lambda: run(inputs, result))
        impl = v.kernel(**params).impl
        out["kernels"][key] = {"params": params, "N": 256, "seconds": seconds, "switches": impl.last_switches,
                               "correct": v.check(op, **params).ok}
    from ..runtime.loader import load
    k = load(code=BARRIERS_ONLY).get("barriers_only")
    buf = numpy.zeros(1, dtype=numpy.float32)
    empty = timed(lambda: k(1, 256, (buf, 0)))
    rounds = 4000
    full = timed(lambda: k(1, 256, (buf, rounds)))
    switches = k.impl.last_switches
    out["launch_overhead_ms"] = empty * 1e3
    out["switch_cost_ns"] = (full - empty) / switches * 1e9
    out["switch_probe"] = {"threads": 256, "barriers": rounds, "switches": switches, "seconds": full}
    out["budget"] = {"what": "sgemm/02_shared_tiling TILE=16 at N=256", "seconds": BUDGET_SECONDS,
                     "met": out["kernels"]["sgemm/02_shared_tiling"]["seconds"] <= BUDGET_SECONDS}
    out["command"] = "python -m gemmlab emulator-bench --record"
    return out


def baseline_commit(revision: str) -> str:
    """The commit ``revision`` names in this checkout, or a ValueError saying why there is none."""
    from ..paths import REPO
    if REPO is None or not (REPO / ".git").exists():
        raise ValueError("comparing with a commit needs a git checkout of gemmlab")
    if not isinstance(revision, str) or not revision or revision.startswith("-"):
        raise ValueError(f"a commit, a branch or a tag, got {revision!r}")
    proc = processes.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                         capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"{revision!r} names no commit in {REPO}")
    return proc.stdout.strip()


def compare_with(revision: str, rounds: int = 3) -> dict:
    """This tree's emulator benchmark beside an earlier commit's, measured in turns on this machine.

    The earlier commit is checked out into a temporary git worktree and benchmarked in a child process
    (its own build cache); the two alternate ``rounds`` times so that the machine's drift hits both alike.
    Returns this tree's result with ``baseline`` (the commit's medians) and ``ratio`` (this / baseline,
    below 1 is faster) for each timed figure.
    """
    import statistics

    from ..paths import REPO
    try:
        revision = baseline_commit(revision)
    except ValueError as exc:
        raise BackendError(str(exc)) from None
    work = Path(tempfile.mkdtemp(prefix="gemmlab-baseline-"))
    tree = work / "tree"
    try:
        proc = processes.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), revision],
                             capture_output=True, text=True)
        if proc.returncode != 0:
            raise BackendError(f"git could not check out {revision!r}: {proc.stderr.strip()}")
        env = {**os.environ, "PYTHONPATH": str(tree / "lib"), "GEMMLAB_CACHE_DIR": str(work / "cache"),
               "GEMMLAB_BACKEND": "emulator"}

        def theirs():
            out = processes.run([sys.executable, "-m", "gemmlab", "emulator-bench"], env=env, capture_output=True, group=True,
                                text=True, cwd=str(work))
            if out.returncode != 0:
                raise BackendError(f"the benchmark of {revision} failed: {out.stderr.strip()[-2000:]}")
            return json.loads(out.stdout)
        ours, base = [], []
        for _ in range(rounds):
            base.append(theirs())
            ours.append(benchmark())
    finally:
        processes.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)

    def medians(results):
        figures = {f"{k} seconds": [r["kernels"][k]["seconds"] for r in results] for k in results[0]["kernels"]}
        figures["launch_overhead_ms"] = [r["launch_overhead_ms"] for r in results]
        figures["switch_cost_ns"] = [r["switch_cost_ns"] for r in results]
        return {k: statistics.median(v) for k, v in figures.items()}
    result = ours[-1]
    mine, theirs_ = medians(ours), medians(base)
    result["medians"] = mine
    result["baseline"] = {"commit": revision, "medians": theirs_, "rounds": rounds}
    result["ratio"] = {k: mine[k] / theirs_[k] for k in mine if k in theirs_ and theirs_[k]}
    result["command"] = (f"GEMMLAB_BACKEND=emulator python -m gemmlab emulator-bench --record --baseline {revision} "
                         f"--rounds {rounds}")
    return result


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()

