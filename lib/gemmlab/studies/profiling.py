"""Hardware counters for the DOT and GEMM steps, through Nsight Compute: ``python -m gemmlab profile --record``.

Runs ``ncu`` (with ``--clock-control none``: the GPU's clocks are left as they are) around a Python
process that launches each DOT and GEMM step once at the BLAS article's sizes, keeps the sections the
profiling appendix explains (Speed Of Light, occupancy, scheduler statistics, launch statistics),
and writes a compact table per kernel to ``results/ncu-<gpu>.json``.
"""
from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys

from .. import processes, record
from ..cases import Case, problem as problem_of
from ..table import Table

SECTIONS = ("SpeedOfLight", "Occupancy", "SchedulerStats", "LaunchStats")
KEEP = {
    "Duration": "duration", "Compute (SM) Throughput": "sm_throughput_pct", "Memory Throughput": "memory_throughput_pct",
    "DRAM Throughput": "dram_throughput_pct", "L1/TEX Cache Throughput": "l1_throughput_pct",
    "L2 Cache Throughput": "l2_throughput_pct", "Registers Per Thread": "registers",
    "Theoretical Occupancy": "theoretical_occupancy_pct", "Achieved Occupancy": "achieved_occupancy_pct",
    "Block Limit Registers": "block_limit_registers", "No Eligible": "no_eligible_pct",
    "Issued Warp Per Scheduler": "issued_warp_per_scheduler", "Eligible Warps Per Scheduler": "eligible_warps",
    "SM Frequency": "sm_frequency", "DRAM Frequency": "dram_frequency", "Grid Size": "grid", "Block Size": "block",
}


def parse(text: str) -> list:
    """ncu --csv --page details output -> one dict per profiled kernel, in launch order."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    kernels = {}
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], {"kernel": row["Kernel Name"], "device": row["Device"]})
        key = KEEP.get(row["Metric Name"])
        if key:
            value = row["Metric Value"].replace(",", "")
            try:
                value = float(value)
            except ValueError:
                pass
            unit = row["Metric Unit"]
            k[key] = value
            if unit and key in ("duration", "sm_frequency", "dram_frequency"):
                k[key + "_unit"] = unit
    return [kernels[i] for i in sorted(kernels, key=int)]


def run() -> dict:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cmd = [ncu, "--clock-control", "none", "--kernel-name-base", "function", "-k", "regex:^(dot|gemm)_",
           *[a for s in SECTIONS for a in ("--section", s)], "--csv", "--page", "details",
           sys.executable, "-m", "gemmlab", "profile", "--launch"]
    proc = processes.run(cmd, capture_output=True, text=True, group=True)
    if proc.returncode != 0:
        raise SystemExit(f"ncu failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    steps = [m.group(1) for m in re.finditer(r"^ran (.*)$", proc.stdout, re.M)]
    kernels = parse(proc.stdout)
    for k, step in zip(kernels, steps):
        k["step"] = step
    return {"ncu": version, "command": "python -m gemmlab profile --record", "clock_control": "none",
            "sections": list(SECTIONS), "kernels": kernels}


def save(result: dict):
    return record.save(f"ncu-{record.gpu_slug()}", result)


# --- Parts IV and V: studies of chosen kernels (python -m gemmlab profile --study NAME --record) --------
#
# A study is a list of Cases (a registry key or None for the library, its params, its label as the name, its
# problem), written below as rows (label, key, params, problem spec) for brevity. Each case runs
# in its own process under ncu, which profiles that case's kernel only (its name, or cuBLAS's GEMM/GEMV/DOT
# kernels for the library), once; the kernel is then checked against float64 at an awkward size.

def _g(n):
    return ("gemm", n)


_BEST = dict(BM=128, BN=256, BK=16, WM=64, WN=64, GROUP=8, SPLITK=1, MINB=1)


def _blas_steps(family):
    from .blas_steps import FAMILIES
    return [(c.name, c.key, c.params) for c in FAMILIES[family]]


_ROWS = {
    # why the best SGEMM is where it is: it, the same with its FMAs row by row, and cuBLAS (chapter 13)
    "climb": [
        ("sgemm/10, boustrophedon FMAs", "sgemm/10_double_buffer", {**_BEST, "SNAKE": 1}, _g(4096)),
        ("sgemm/10, FMAs row by row", "sgemm/10_double_buffer", {**_BEST, "SNAKE": 0}, _g(4096)),
        *[(f"sgemm/12, lanes {lanes} x {32 // lanes}", "sgemm/12_interior", {**_BEST, "LANES": lanes}, _g(4096))
          for lanes in (4, 8)],
        ("cuBLAS", None, None, _g(4096)),
    ],
    # every Part IV step as its chapter introduces it, with the switches the chapters measure
    "part4": [
        *[(f"sgemm/07 PAD={p} SWZ={w} SPLIT={t}", "sgemm/07_vectorized",
           dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=p, SWZ=w, SPLIT=t), _g(4096))
          for p, w, t in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1, 1))],
        ("sgemm/09 warp tiles", "sgemm/09_warp_tiling", dict(BM=128, BN=128, BK=8, WM=64, WN=32), _g(4096)),
        ("sgemm/10 as introduced", "sgemm/10_double_buffer",
         dict(BM=128, BN=128, BK=8, WM=64, WN=32, GROUP=1, SPLITK=1, MINB=2), _g(4096)),
        ("sgemm/10 tuned", "sgemm/10_double_buffer", {**_BEST, "SNAKE": 1}, _g(4096)),
        ("sgemm/12 interior, lanes 4 x 8", "sgemm/12_interior", {**_BEST, "LANES": 4}, _g(4096)),
        *[(f"sgemm/11 AT={a}", "sgemm/11_cp_async",
           dict(BM=128, BN=128, BK=16, WM=64, WN=32, STAGES=3, AT=a, MINB=2), _g(4096)) for a in (0, 1, 2)],
        ("cuBLAS SGEMM", None, None, _g(4096)),
        *[(f"DOT 7 DET={d}", "blas/dot/07_bandwidth", dict(BLOCK=1024, UNROLL=2, GRID=1056, DET=d, CS=0),
           ("dot", 1 << 26)) for d in (0, 1)],
        *[(f"GEMV 4 '{t}'", "blas/gemv/04_bandwidth", dict(WARPS=8, UNROLL=8, SPLIT=8, VEC=4, CS=0),
           ("gemv", 16384, t)) for t in ("N", "T")],
        ("GEMM 5 NN", "blas/gemm/05_warp_tiled", dict(BM=128, BN=256, BK=8, WM=64, WN=64, GROUP=8, MINB=1),
         ("gemm-col", 4096)),
    ],
    # the ladders of chapters 2-9, each step as its chapter times it, with cuBLAS beside each family
    "ladder": [
        ("ch2 naive, 16 x 16", "sgemm/01_naive", dict(BLOCK=16), _g(4096)),
        ("ch2 shared tiles, 16", "sgemm/02_shared_tiling", dict(TILE=16), _g(4096)),
        ("ch2 shared tiles, 32", "sgemm/02_shared_tiling", dict(TILE=32), _g(4096)),
        ("ch3 uncoalesced, 16", "sgemm/03_uncoalesced", dict(BLOCK=16), _g(4096)),
        *[(f"ch4 tiles 32 PAD={p} AT={a}", "sgemm/04_padded_tiling", dict(TILE=32, PAD=p, UNROLL=1, AT=a), _g(4096))
          for p, a in ((0, 0), (1, 0), (0, 1), (1, 1))],
        *[(f"ch5 cache blocking {m} x {n}", "sgemm/05_cache_blocking", dict(TM=m, TN=n), _g(4096))
          for m, n in ((1, 1), (4, 4), (8, 4), (8, 8))],
        *[(f"ch6 register tiles {m} x {n}", "sgemm/06_register_tiling", dict(T=32, RM=m, RN=n, MINB=1), _g(4096))
          for m, n in ((2, 2), (4, 2), (4, 4))],
        ("cuBLAS SGEMM 4096", None, None, _g(4096)),
        *[(f"ch7 {label}", key, params, ("dot", 1 << 24)) for label, key, params in _blas_steps("DOT")],
        ("cuBLAS DOT 2^24", None, None, ("dot", 1 << 24)),
        *[(f"ch8 {label}", key, params, ("gemv", 4096, "N")) for label, key, params in _blas_steps("GEMV")],
        ("cuBLAS GEMV 4096", None, None, ("gemv", 4096, "N")),
        *[(f"ch9 {label}", key, params, ("gemm-col", 2048)) for label, key, params in _blas_steps("GEMM")],
        ("cuBLAS GEMM 2048", None, None, ("gemm-col", 2048)),
    ],
    # chapter 12's pairs, each at both sizes: chapter 7's and 8's last steps, chapter 12's, and cuBLAS
    "roof": [
        *[case for e in (24, 26) for case in (
            (f"DOT 6, 2^{e}", *_blas_steps("DOT")[-1][1:], ("dot", 1 << e)),
            *[(f"DOT 7 DET={d}, 2^{e}", "blas/dot/07_bandwidth", dict(BLOCK=1024, UNROLL=2, GRID=1056, DET=d, CS=0),
               ("dot", 1 << e)) for d in (0, 1)],
            (f"cuBLAS DOT, 2^{e}", None, None, ("dot", 1 << e)))],
        *[case for n in (4096, 16384) for t in ("N", "T") for case in (
            (f"GEMV 3 '{t}', {n}^2", *_blas_steps("GEMV")[-1][1:], ("gemv", n, t)),
            (f"GEMV 4 '{t}', {n}^2", "blas/gemv/04_bandwidth", dict(WARPS=8, UNROLL=8, SPLIT=8, VEC=4, CS=0),
             ("gemv", n, t)),
            (f"cuBLAS GEMV '{t}', {n}^2", None, None, ("gemv", n, t)))],
    ],
    # Part V: the tensor-core kernels and cuBLAS in the same precision
    "part5": [
        *[(f"WMMA {p}", "tc/01_wmma", dict(WARPS_M=2, WARPS_N=2), ("tc", 4096, p)) for p in ("fp16", "bf16", "tf32")],
        *[(f"WMMA pipelined {p}", "tc/03_wmma_pipelined", dict(BM=128, BN=128, WM=64, WN=64, STAGES=3),
           ("tc", 4096, p)) for p in ("fp16", "bf16", "tf32")],
        *[(f"mma.sync {p}", "tc/05_mma_sync", dict(BM=128, BN=256, WM=64, WN=64, STAGES=3, BK=64), ("tc", 4096, p))
          for p in ("fp16", "bf16")],
        ("mma.sync tf32", "tc/05_mma_sync", dict(BM=128, BN=128, WM=64, WN=64, STAGES=3, BK=32), ("tc", 4096, "tf32")),
        *[(f"cuBLAS {p}", None, None, ("tc", 4096, p)) for p in ("fp16", "bf16", "tf32")],
        *[(f"Hopper TMA + wgmma {p}", "tc/06_wgmma_tma", {}, ("tc", 4096, p)) for p in ("fp16", "bf16")],
        ("3xTF32", "tc/02_3xtf32", dict(WARPS_M=2, WARPS_N=2), _g(4096)),
        ("3xTF32 pipelined", "tc/04_3xtf32_pipelined", dict(BM=128, BN=128, WM=64, WN=32, STAGES=3), _g(4096)),
        ("3xTF32 on wgmma", "tc/07_3xtf32_wgmma", {}, _g(4096)),
    ],
    # chapter 16: each step of the Hopper ladder and cuBLAS, FP16 at 4096^3
    "hopper": [
        ("tc/06 (chapter 15)", "tc/06_wgmma_tma", {}, ("tc", 4096, "fp16")),
        ("tc/08 persistent", "tc/08_persistent", {}, ("tc", 4096, "fp16")),
        ("tc/09 TMA-store epilogue", "tc/09_tma_store", {}, ("tc", 4096, "fp16")),
        ("tc/10 clusters, multicast B", "tc/10_cluster_multicast", {}, ("tc", 4096, "fp16")),
        ("tc/11 stream-K tail", "tc/11_stream_k", {}, ("tc", 4096, "fp16")),
        ("tc/12 ping-pong", "tc/12_pingpong", {}, ("tc", 4096, "fp16")),
        ("cuBLAS fp16", None, None, ("tc", 4096, "fp16")),
    ],
}


def _spec_problem(spec):
    """('gemm', n), ('gemm-col', n), ('dot', n), ('gemv', n, trans) or ('tc', n, precision) as a problem."""
    kind, n, *form = spec
    return problem_of(kind, n, **({"trans": form[0]} if kind == "gemv" else {"precision": form[0]} if kind == "tc" else {}))


STUDIES = {study: [Case(key, params or {}, name=label, problem=_spec_problem(spec)) for label, key, params, spec in rows]
           for study, rows in _ROWS.items()}
SECTIONS_RAW = ("SpeedOfLight", "LaunchStats", "Occupancy", "SchedulerStats", "WarpStateStats", "InstructionStats",
                "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables")
# raw metric -> short name; stall reasons are warp-cycles per issued instruction (they add up to the
# average cycles between a warp's issues)
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALLS = ("selected", "not_selected", "dispatch_stall", "no_instruction", "wait", "short_scoreboard",
          "long_scoreboard", "barrier", "branch_resolving", "mio_throttle", "math_pipe_throttle", "lg_throttle")
RAW_METRICS = {
    "gpu__time_duration.sum": "duration_ns", "launch__registers_per_thread": "registers",
    "launch__block_size": "block", "launch__grid_size": "grid",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
    "smsp__inst_executed.sum": "instructions", "smsp__warps_active.avg.per_cycle_active": "warps_per_scheduler",
    "smsp__warps_eligible.avg.per_cycle_active": "eligible_per_scheduler",
    "smsp__average_warp_latency_per_inst_issued.ratio": "cycles_per_issue",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "dram__bytes.sum.per_second": "dram_bytes_per_s",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_throughput_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    # shared memory: wavefronts and the bank conflicts among them, loads and stores
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared_ld_wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared_st_wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_ld_bank_conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared_st_bank_conflicts",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
    "lts__t_bytes.sum": "l2_bytes", "dram__bytes_read.sum": "dram_read_bytes", "sm__cycles_elapsed.avg.per_second": "sm_hz",
    **{STALL.format(r): "stall_" + r for r in STALLS},
}


def _awkward(problem):
    """A small problem of the same kind whose sizes are multiples of nothing (of 16 for tensor cores)."""
    import dataclasses
    from .. import ops
    if isinstance(problem, ops.TcGemm):
        return dataclasses.replace(problem, m=112, n=48, k=208)
    if isinstance(problem, ops.Gemm):
        return dataclasses.replace(problem, m=257, n=131, k=67)
    if isinstance(problem, ops.Gemv):
        return dataclasses.replace(problem, m=1031, n=45 if problem.trans == "N" else 1000)
    return dataclasses.replace(problem, n=100003)


def launch_case(study: str, index: int) -> None:
    """The profiled half: one case of a study, once, then its kernel checked against float64."""
    from ..runtime import backend as hw
    from .. import registry
    case = STUDIES[study][index]
    label, key, params, problem = case.shown, case.key, case.params, case.problem
    inputs, out = problem.inputs(__import__("numpy").random.default_rng(0)), problem.output()
    run = problem.library if key is None else registry.get(key).runner(problem, **params)
    hw.synchronize()
    runtime = hw.xp.cuda.runtime
    runtime.profilerStart()                  # ncu profiles from here (--profile-from-start off) ...
    run(inputs, out)
    hw.synchronize()
    runtime.profilerStop()                   # ... to here: not the kernels that made the inputs
    print(f"ran {label}", flush=True)
    if key is not None:
        check = registry.get(key).check(_awkward(problem), **params)
        print(f"checked {label}: {check}", flush=True)
        if not check.ok:
            raise SystemExit(f"a profiled kernel is wrong: {check}")


def parse_raw(text: str) -> list:
    """ncu --csv --page raw output -> one dict of RAW_METRICS per profiled kernel, in launch order."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        return []
    header, kernels = rows[0], []
    for row in rows[2:]:                       # rows[1] holds the units
        values = dict(zip(header, row))
        k = {"kernel": values.get("Kernel Name", "")}
        for metric, key in RAW_METRICS.items():
            raw = values.get(metric, "").replace(",", "")
            try:
                k[key] = float(raw)
            except ValueError:
                pass
        kernels.append(k)
    return kernels


def kernel_filter(key: str, params: dict | None) -> str:
    """ncu's -k for a registry case: its kernel's function name. (A library case is every kernel its call
    launches between cudaProfilerStart and Stop.)"""
    from .. import registry
    return registry.get(key).entry.split("<", 1)[0]


def run_study(study: str, progress: bool = True) -> dict:
    if study not in STUDIES:
        raise SystemExit(f"no study {study!r}; there are: {', '.join(STUDIES)}")
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    kernels = []
    cases = STUDIES[study]
    for i, case in enumerate(cases):
        label, key, params = case.shown, case.key, (case.params if case.key else None)
        if progress:
            print(f"[{i + 1}/{len(cases)}] {label}", flush=True)
        # a registry case: its own kernel, once; the library: every kernel its call launches (cuBLAS's DOT is
        # two, a partial-sum kernel and a reduction), recorded under the longest
        only = [] if key is None else ["-k", kernel_filter(key, params), "--launch-count", "1"]
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--kernel-name-base", "function",
               *only, *[a for s in SECTIONS_RAW for a in ("--section", s)],
               "--metrics", ",".join(RAW_METRICS), "--csv", "--page", "raw",
               sys.executable, "-m", "gemmlab", "profile", "--launch-case", study, str(i)]
        proc = processes.run(cmd, capture_output=True, text=True, group=True)
        if proc.returncode != 0 and "metric" in (proc.stderr + proc.stdout).lower():
            # a metric this ncu does not know: the sections' own metrics only
            at = cmd.index("--metrics")
            proc = processes.run(cmd[:at] + cmd[at + 2:], capture_output=True, text=True, group=True)
        if proc.returncode != 0:
            raise SystemExit(f"ncu failed on {label} ({proc.returncode}):\n{proc.stderr[-2000:]}\n{proc.stdout[-1000:]}")
        found = parse_raw(proc.stdout)
        if len(found) != 1 and not (key is None and found):
            raise SystemExit(f"ncu profiled {len(found)} kernels for {label}, expected 1:\n{proc.stdout[-2000:]}")
        main = max(found, key=lambda k: k.get("duration_ns", 0))
        others = [{"kernel": k["kernel"], "duration_ns": k.get("duration_ns")} for k in found if k is not main]
        kernels.append({**main, "case": label, "key": key, "params": params, "problem": case.problem.label,
                        **({"other_kernels": others} if others else {})})
    return {"ncu": version, "command": f"python -m gemmlab profile --study {study} --record",
            "clock_control": "none", "study": study, "sections": list(SECTIONS_RAW), "kernels": kernels}


def save_study(result: dict):
    return record.save(f"ncu-{result['study']}-{record.gpu_slug()}", result)


def climb_table(data: dict | None = None) -> None:
    """Show the recorded stall reasons of the best SGEMM, its row-by-row ablation and cuBLAS."""
    data = data or record.shown("ncu-climb")
    env = data["environment"]
    size = f", N = {data['n']}" if "n" in data else ""
    cols = [("duration_ns", "time us", 1e-3), ("registers", "regs", 1), ("issue_active_pct", "issue %", 1),
            ("instructions", "inst (G)", 1e-9)] + [("stall_" + r, *HEADINGS["stall_" + r]) for r in STALLS]
    kernels = data["kernels"]
    _show_columns(kernels, [c for c in cols if any(k.get(c[0]) for k in kernels)], spec=".2f",
                  title=f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}{size}; "
                        "stalls in warp-cycles per issued instruction:", across=True)


def _show_columns(kernels, cols, spec: str, title: str, across: bool = False) -> None:
    """Show a table of one row per kernel of a study: its case, then each (metric, heading,
    scale[, format spec]) column, formatted with ``spec`` unless the column names its own, '-' where missing.
    ``across``: the kernels across and the metrics down instead (for many metrics of few kernels: narrower)."""
    rows = [[k["case"]] + [format(k[c[0]] * c[2], c[3] if len(c) > 3 else spec) if c[0] in k else "-" for c in cols]
            for k in kernels]
    if across:
        table = Table([""] + [r[0] for r in rows], [[c[1]] + [r[j + 1] for r in rows] for j, c in enumerate(cols)],
                      title=title, align="l" + "r" * len(rows))
    else:
        table = Table([""] + [c[1] for c in cols], rows, title=title, align="l" + "r" * len(cols))
    table.show()


# how each recorded metric is printed: (heading, scale)
HEADINGS = {
    "duration_ns": ("time us", 1e-3), "grid": ("blocks", 1), "block": ("threads", 1), "registers": ("regs", 1),
    "achieved_occupancy_pct": ("occup %", 1), "issue_active_pct": ("issue %", 1), "instructions": ("inst (M)", 1e-6),
    "dram_throughput_pct": ("DRAM %", 1), "l2_throughput_pct": ("L2 %", 1), "sm_throughput_pct": ("SM %", 1),
    "tensor_pipe_pct": ("tensor %", 1), "warps_per_scheduler": ("warps/sch", 1), "eligible_per_scheduler": ("elig/sch", 1),
    "shared_ld_wavefronts": ("ld wave M", 1e-6), "shared_ld_bank_conflicts": ("ld confl M", 1e-6),
    "shared_st_wavefronts": ("st wave M", 1e-6), "shared_st_bank_conflicts": ("st confl M", 1e-6),
    **{"stall_" + r: (h, 1) for r, h in zip(STALLS, ("selected", "not sel", "dispatch", "no instr", "wait",
                                                      "short sb", "long sb", "barrier", "branch", "mio thr",
                                                      "math thr", "lg thr"))},
}


def evidence(cases, metrics, study: str = "ladder", data: dict | None = None) -> None:
    """Show the recorded metrics of one ncu study (``results/ncu-<study>-<gpu>.json``, the record shown: the reader's
    GPU's, else the book's) for the cases whose names start with ``cases`` (a prefix, or a list of prefixes), one
    row each, one column per metric (:data:`HEADINGS`; stalls are warp-cycles per issued instruction). Raises if no
    case matches."""
    data = data or record.shown(f"ncu-{study}")
    prefixes = (cases,) if isinstance(cases, str) else tuple(cases)
    kernels = [k for k in data["kernels"] if k["case"].startswith(prefixes)]
    if not kernels:
        raise ValueError(f"cases: no case of the {study} study starts with {prefixes}; its cases are: "
                         + ", ".join(k["case"] for k in data["kernels"]))
    unknown = [m for m in metrics if m not in HEADINGS]
    if unknown:
        raise ValueError(f"metrics: unknown metrics {unknown}; known: {sorted(HEADINGS)}")
    env = data["environment"]
    problems = sorted({k["problem"] for k in kernels if k.get("problem")})
    version = re.search(r"\d+(?:\.\d+)+", data["ncu"])
    title = (f"Nsight Compute {version.group(0) if version else data['ncu']}, clocks not locked, {env['gpu']}, "
             f"{env['date'][:10]}{'; ' + '; '.join(problems) if problems else ''}" +
             ("; stalls: warp-cycles per issued instruction" if any(m.startswith("stall_") for m in metrics) else ""))
    cols = [(m, *HEADINGS[m], ",.0f" if m in ("grid", "block", "registers") else ",.2f") for m in metrics]
    _show_columns(kernels, cols, spec=",.2f", title=title)


def part4_table(data: dict | None = None) -> None:
    """Show what changes from step to step of Part IV's SGEMM (the part4 study): shared-memory wavefronts and
    the bank conflicts among them (millions), and the stalls the chapter discusses."""
    evidence(("sgemm/", "cuBLAS SGEMM"), ["duration_ns", "issue_active_pct", "shared_ld_wavefronts",
             "shared_ld_bank_conflicts", "shared_st_wavefronts", "shared_st_bank_conflicts", "stall_short_scoreboard",
             "stall_long_scoreboard", "stall_barrier", "stall_dispatch_stall"], study="part4", data=data)


def roof_table(data: dict | None = None) -> None:
    """Show chapter 12's profile: each DOT and GEMV step beside the next and cuBLAS, at the same sizes (the
    roof study): how busy each keeps the memory, and what its warps wait for."""
    evidence(("DOT", "cuBLAS DOT", "GEMV", "cuBLAS GEMV"), ["duration_ns", "dram_throughput_pct", "achieved_occupancy_pct",
             "issue_active_pct", "stall_long_scoreboard"], study="roof", data=data)


def tensor_table(data: dict | None = None) -> None:
    """Show how busy each Part V kernel keeps the tensor cores and the schedulers (the part5 study)."""
    data = data or record.shown("ncu-part5")
    env = data["environment"]
    cols = [("duration_ns", "time us", 1e-3), ("tensor_pipe_pct", "tensor %", 1), ("issue_active_pct", "issue %", 1),
            ("instructions", "inst (M)", 1e-6), ("registers", "regs", 1), ("stall_wait", "wait", 1),
            ("stall_barrier", "barrier", 1), ("stall_long_scoreboard", "long sb", 1)]
    _show_columns(data["kernels"], cols, spec=".1f",
                  title=f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}, "
                        "N = 4096:")


def table(data: dict | None = None) -> None:
    """Show the recorded metrics the profiling appendix discusses."""
    data = data or record.shown("ncu")
    env = data["environment"]
    cols = [("duration", "time"), ("sm_throughput_pct", "SM %"), ("memory_throughput_pct", "mem %"),
            ("dram_throughput_pct", "DRAM %"), ("registers", "regs"), ("theoretical_occupancy_pct", "th.occ %"),
            ("achieved_occupancy_pct", "ach.occ %"), ("no_eligible_pct", "no elig. %"),
            ("issued_warp_per_scheduler", "issued/sch")]
    rows = []
    for k in data["kernels"]:
        cells = []
        for key, _ in cols:
            v = k.get(key)
            if key == "duration" and v is not None:
                cells.append(f"{v:,.1f} {k.get('duration_unit', '')}")
            else:
                cells.append(f"{v:.2f}" if isinstance(v, float) else str(v))
        rows.append([k.get("step", k["kernel"])] + cells)
    t = Table(["step"] + [h for _, h in cols], rows, align="l" + "r" * len(cols),
              title=f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}:")
    t.show()
