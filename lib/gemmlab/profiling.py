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
