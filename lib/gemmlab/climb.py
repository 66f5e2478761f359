"""Part IV's climb to cuBLAS (FP32 SGEMM) measured in one run: ``python -m gemmlab climb --record``.

For each problem size the issue's targets name (N = 1024, 2048, 4096, 8192, and two awkward shapes), every
candidate configuration below is checked against a float64 reference, then all are timed together with
cuBLAS as a column (:func:`gemmlab.bench`: CUDA events, medians, L2 flushed, round-robin). The best per
size and its ratio to cuBLAS go to ``results/climb-<gpu>.json`` beside the targets, met or not.
The candidates are the winners of the tuning runs on the H200 (Part IV's autotuning chapter searches the
registry's whole space); the ladder's last step before Part IV (chapter 06) is timed with them for scale.
"""
from __future__ import annotations

from . import hardware as hw
from . import ops, record
from .ladder import case_name, measure_problem, resources

# (size label, problem, target ratio to cuBLAS): the bar, never lowered here
PROBLEMS = [
    ("4096", ops.Gemm.square(4096), 0.90),
    ("1024", ops.Gemm.square(1024), 0.80),
    ("2048", ops.Gemm.square(2048), 0.80),
    ("8192", ops.Gemm.square(8192), 0.80),
    ("4097", ops.Gemm.square(4097), 0.75),
    ("3000x5000x2000", ops.Gemm(m=3000, n=5000, k=2000), 0.75),
]


def _d(BM, BN, BK, WM, WN, GROUP, SPLITK, MINB):
    return ("sgemm/10_double_buffer", dict(BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, GROUP=GROUP, SPLITK=SPLITK, MINB=MINB))


CANDIDATES = [
    ("sgemm/06_register_tiling", dict(T=32, RM=4, RN=2, MINB=1)),
    _d(128, 128, 8, 64, 32, 1, 1, 2),          # the double-buffered step as chapter IV.4 introduces it
    _d(128, 256, 16, 64, 64, 8, 1, 1),         # large tiles: the big squares
    _d(128, 128, 16, 64, 32, 8, 2, 2),         # split-K in two: sizes whose tiles leave SMs idle
    _d(128, 256, 8, 64, 64, 8, 2, 1),
    _d(64, 64, 16, 32, 32, 8, 1, 2),           # small tiles: enough blocks at N = 1024
    ("sgemm/11_cp_async", dict(BM=128, BN=256, BK=16, WM=64, WN=64, STAGES=4, AT=1, MINB=1)),
    ("sgemm/11_cp_async", dict(BM=128, BN=128, BK=16, WM=64, WN=32, STAGES=3, AT=0, MINB=2)),
]


def run_all(reps: int = 10) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"the climb is measured on a GPU ({hw.backend_reason})")
    sizes = []
    for label, problem, target in PROBLEMS:
        t, errors = measure_problem(CANDIDATES, problem, f"climb {label}", reps=reps if problem.m < 8000 else 5,
                                    progress=True)
        print(t, flush=True)
        rows = [r for r in t.to_dict()["rows"] if r["name"] != "cuBLAS"]
        best = max(rows, key=lambda r: r["gflops"])
        ratio = t.ratio(best["name"])
        sizes.append({"size": label, "target": target, "best": best["name"], "ratio": ratio,
                      "met": ratio is not None and ratio >= target, "errors": errors, "timing": t.to_dict()})
    return {"sizes": sizes, "resources": {case_name(k, c): resources(k, c) for k, c in CANDIDATES},
            "command": "python -m gemmlab climb --record"}


def save(result: dict):
    return record.save(f"climb-{record.gpu_slug()}", result)


def summary(result: dict) -> str:
    lines = [f"{'size':>16}  {'best':<72} {'vs cuBLAS':>9}  target"]
    for s in result["sizes"]:
        lines.append(f"{s['size']:>16}  {s['best']:<72} {100 * s['ratio']:8.1f}%  {100 * s['target']:.0f}% "
                     f"{'met' if s['met'] else 'MISSED'}")
    return "\n".join(lines)
