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

from . import processes, record

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
    proc = processes.run(cmd, capture_output=True, text=True)
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


# --- Part IV: why the best SGEMM is where it is (python -m gemmlab profile --climb --record) ----------

# the climb's best SGEMM at N = 4096, the same with its FMAs row by row, and cuBLAS: (label, key, params)
CLIMB_CASES = [
    ("sgemm/10, boustrophedon FMAs", "sgemm/10_double_buffer",
     dict(BM=128, BN=256, BK=16, WM=64, WN=64, GROUP=8, SPLITK=1, MINB=1, SNAKE=1)),
    ("sgemm/10, FMAs row by row", "sgemm/10_double_buffer",
     dict(BM=128, BN=256, BK=16, WM=64, WN=64, GROUP=8, SPLITK=1, MINB=1, SNAKE=0)),
    ("cuBLAS", None, None),
]
CLIMB_N = 4096
CLIMB_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "SchedulerStats", "WarpStateStats", "InstructionStats")
# raw metric -> short name; stall reasons are warp-cycles per issued instruction (they add up to the
# average cycles between a warp's issues)
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALLS = ("selected", "not_selected", "dispatch_stall", "no_instruction", "wait", "short_scoreboard",
          "long_scoreboard", "barrier", "branch_resolving", "mio_throttle", "math_pipe_throttle", "lg_throttle")
CLIMB_METRICS = {
    "gpu__time_duration.sum": "duration_ns", "launch__registers_per_thread": "registers",
    "launch__block_size": "block", "launch__grid_size": "grid",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
    "smsp__inst_executed.sum": "instructions", "smsp__warps_active.avg.per_cycle_active": "warps_per_scheduler",
    "smsp__warps_eligible.avg.per_cycle_active": "eligible_per_scheduler",
    "smsp__average_warp_latency_per_inst_issued.ratio": "cycles_per_issue",
    **{STALL.format(r): "stall_" + r for r in STALLS},
}


def launch_climb() -> None:
    """The profiled half: each of CLIMB_CASES once at N = CLIMB_N, then each kernel checked against float64
    at an awkward size (after the profiled launches: ncu profiles only the first len(CLIMB_CASES))."""
    from . import hardware as hw, ops, registry
    problem = ops.Gemm.square(CLIMB_N)
    inputs, out = problem.inputs(__import__("numpy").random.default_rng(0)), problem.output()
    for label, key, params in CLIMB_CASES:
        if key is None:
            problem.library(inputs, out)
        else:
            registry.get(key).runner(problem, **params)(inputs, out)
        hw.synchronize()
        print(f"ran {label}", flush=True)
    for label, key, params in CLIMB_CASES:
        if key is not None:
            check = registry.get(key).check(ops.Gemm.square(257), **params)
            print(f"checked {label}: {check}", flush=True)
            if not check.ok:
                raise SystemExit(f"a profiled kernel is wrong: {check}")


def parse_raw(text: str) -> list:
    """ncu --csv --page raw output -> one dict of CLIMB_METRICS per profiled kernel, in launch order."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        return []
    header, kernels = rows[0], []
    for row in rows[2:]:                       # rows[1] holds the units
        values = dict(zip(header, row))
        k = {"kernel": values.get("Kernel Name", "")}
        for metric, key in CLIMB_METRICS.items():
            raw = values.get(metric, "").replace(",", "")
            try:
                k[key] = float(raw)
            except ValueError:
                pass
        kernels.append(k)
    return kernels


def run_climb() -> dict:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    # the kernels of the cases, not CuPy's random-number or fill kernels
    cmd = [ncu, "--clock-control", "none", "-k", "regex:^(sgemm_|sm[0-9]+_xmma|ampere_|cutlass)",
           "--launch-count", str(len(CLIMB_CASES)),
           *[a for s in CLIMB_SECTIONS for a in ("--section", s)], "--csv", "--page", "raw",
           sys.executable, "-m", "gemmlab", "profile", "--launch-climb"]
    proc = processes.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"ncu failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    kernels = parse_raw(proc.stdout)
    labels = [label for label, _, _ in CLIMB_CASES]
    if len(kernels) != len(labels):
        raise SystemExit(f"ncu profiled {len(kernels)} kernels, expected {len(labels)}:\n{proc.stdout[-2000:]}")
    for k, label in zip(kernels, labels):
        k["case"] = label
    return {"ncu": version, "command": "python -m gemmlab profile --climb --record", "clock_control": "none",
            "n": CLIMB_N, "sections": list(CLIMB_SECTIONS), "kernels": kernels}


def save_climb(result: dict):
    return record.save(f"ncu-climb-{record.gpu_slug()}", result)


def climb_table(data: dict | None = None) -> None:
    """Print the recorded stall reasons of the best SGEMM, its row-by-row ablation and cuBLAS."""
    data = data or record.load("ncu-climb-nvidia-h200")
    env = data["environment"]
    print(f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}, N = {data['n']}; "
          "stalls in warp-cycles per issued instruction:")
    cols = [("duration_ns", "time us", 1e-3), ("registers", "regs", 1), ("issue_active_pct", "issue %", 1),
            ("instructions", "inst (G)", 1e-9)] + [("stall_" + r, r.replace("_", " ")[:11], 1) for r in STALLS]
    kernels = data["kernels"]
    shown = [c for c in cols if any(k.get(c[0]) for k in kernels)]
    print(f"{'':<30}" + "".join(f"{h:>12}" for _, h, _ in shown))
    for k in kernels:
        print(f"{k['case'][:29]:<30}" + "".join(
            f"{k[key] * scale:>12.2f}" if key in k else f"{'-':>12}" for key, _, scale in shown))


def table(data: dict | None = None) -> None:
    """Print the recorded metrics the profiling appendix discusses."""
    data = data or record.load("ncu-nvidia-h200")
    env = data["environment"]
    print(f"Nsight Compute ({data['ncu']}), clocks not locked, {env['gpu']}, {env['date'][:10]}:")
    cols = [("duration", "time"), ("sm_throughput_pct", "SM %"), ("memory_throughput_pct", "mem %"),
            ("dram_throughput_pct", "DRAM %"), ("registers", "regs"), ("theoretical_occupancy_pct", "th.occ %"),
            ("achieved_occupancy_pct", "ach.occ %"), ("no_eligible_pct", "no elig. %"),
            ("issued_warp_per_scheduler", "issued/sch")]
    print(f"{'step':<40}" + "".join(f"{h:>11}" for _, h in cols))
    for k in data["kernels"]:
        cells = []
        for key, _ in cols:
            v = k.get(key)
            if key == "duration" and v is not None:
                cells.append(f"{v:,.1f} {k.get('duration_unit', '')}".rjust(11))
            else:
                cells.append(f"{v:>11.2f}" if isinstance(v, float) else f"{str(v):>11}")
        print(f"{k.get('step', k['kernel'])[:39]:<40}" + "".join(cells))
