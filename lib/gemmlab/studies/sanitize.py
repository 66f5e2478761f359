"""Run every registry kernel under NVIDIA's compute-sanitizer: ``python -m gemmlab sanitize --record``.

What each tool covers: memcheck, out-of-bounds and misaligned accesses to global, shared and local memory
(global accesses are checked against CUDA allocations, so CuPy's memory pool, which carves arrays out of
larger allocations, is switched off in the sanitized process: every array is its own allocation);
racecheck, hazards on shared memory between threads with no barrier between them (shared memory only: not
global memory, not TMA's or wgmma's own accesses, which it does not model); synccheck, barriers and warp
synchronisation used illegally (a __syncthreads() some threads of a block skip, a __syncwarp mask naming
lanes that do not take part); initcheck, reads of global memory never written. Every legal configuration
(``covering``) of every variant is launched at the largest of its awkward sizes (none of its dimensions a
multiple of any tile) in every precision it takes, and the tensor-core kernels also at 208 x 528 x 1040 (multiples of 16, of no block tile), deep
enough that every pipeline refills its stages and wide enough for several blocks, and chapter 16's persistent
kernels at 3900 x 2104 x 72 (more tiles than SMs); one sanitized Python process per tool.
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys

import numpy

from ..runtime import backend as hw
from .. import ops, processes, record, registry

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEEP = (208, 528, 1040)          # tensor-core kernels: several blocks, and more k-tiles than any pipeline has stages
# chapter 16's persistent kernels: more 128 x 256 tiles than the H200 has SMs (31 x 9, an odd number of rows of
# tiles for the clusters' pairs), so that each block walks several tiles and its pipeline runs on across them
WALK = (3900, 2104, 72)
# tc/11 splits a last round only where it pays: 19 x 7 = 133 tiles are one round and one tile, and with 18
# k-slices (K not a multiple of 64) that tile is cut into 18 pieces on 18 blocks, every flag and addition used
SPLIT = (2430, 1784, 1096)


def problems(v) -> list:
    """The problems a variant is sanitized at: its largest awkward size in every precision it takes (and, for
    chapter 17's FP8 kernel, every scaling), and for a tensor-core kernel (tc/) the same precisions at :data:`DEEP`
    too; the persistent kernels of chapters 16 and 17 also at :data:`WALK`. FP8 with per-block scales takes K in
    whole blocks of 128: its deep sizes have K rounded up to one."""
    every = v.awkward()
    last = every[-1]
    if v.op in (ops.TcGemm, ops.Fp8Gemm):
        out = [p for p in every if (p.m, p.n, p.k) == (last.m, last.n, last.k)]
    else:
        out = [last]                                # one precision: the largest awkward size
    shallow = out[:]

    def at(p, m, n, k):
        if v.op is ops.Fp8Gemm:
            k = -(-k // ops.FP8_BLOCK) * ops.FP8_BLOCK
        q = dataclasses.replace(p, m=m, n=n, k=k)
        return None if v.refuse is not None and v.refuse(q, v.resolve()) else q
    sizes = ([DEEP] if v.key.startswith("tc/") else []) + ([WALK] if v.chapter in ("16-past-cublas", "17-fp8") else [])
    sizes += [SPLIT] if v.key == "tc/11_stream_k" else []
    for m, n, k in sizes:
        out += [q for q in (at(p, m, n, k) for p in shallow) if q is not None]
    return out


def launch_all(only=()) -> int:
    import cupy
    cupy.cuda.set_allocator(None)                  # every array its own allocation: memcheck sees each one's end
    count = 0
    for v in registry.with_prefix(only):
        for problem in problems(v):
            for choice in v.covering():
                v.runner(problem, **choice)(problem.inputs(numpy.random.default_rng(count)), problem.output())
                count += 1
    hw.synchronize()
    print(f"launched {count} kernel configurations at awkward sizes", flush=True)
    return count


def configurations(only=()) -> dict:
    """What a run launches: {variant: its covering configurations times its problems}, for the variants whose key
    starts with one of ``only`` (all by default)."""
    return {v.key: len(v.covering()) * len(problems(v)) for v in registry.with_prefix(only)}


def run(tools=TOOLS, only=()) -> dict:
    """Every tool in its own sanitized process, side by side; ``only``: key prefixes of the variants launched (a
    part of the registry, which :func:`save` puts into the GPU's record)."""
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        raise SystemExit("compute-sanitizer is not on the PATH (it ships with the CUDA toolkit)")
    only = tuple(only or ())
    try:
        variants = configurations(only)                  # (a prefix that names nothing: refused before any run)
    except ValueError as exc:
        raise SystemExit(f"--only: {exc}") from None
    name = f"sanitizer-{record.gpu_slug()}"
    old = record.previous(name) if only else None
    if old is not None and "variants" not in old:
        raise SystemExit(f"--only: results/{name}.json counts its configurations for the whole registry, not per "
                         "variant, so a part cannot be put into it: record the whole registry (no --only)")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = {"problems": "each variant's largest awkward size in every precision it takes, and tensor-core kernels at "
                       f"{DEEP[0]} x {DEEP[1]} x {DEEP[2]} too, the persistent ones at {WALK[0]} x {WALK[1]} x {WALK[2]} "
                       "(gemmlab.sanitize.problems)", "pool": "off",
           "sanitizer": version, "tools": {}, "variants": variants, "only": list(only),
           "command": "python -m gemmlab sanitize --record" + "".join(f" --only {p}" for p in only)}
    def sanitized(tool):
        # memcheck would also report every CUDA API call that returns an error; cuda-python's driver bindings
        # (the Hopper kernel's tensor maps) look up each entry point of their CUDA version once, and those
        # that an older driver lacks come back "not found": 43 such reports on the H200's 13.0 driver, none
        # from a kernel. A failing call that matters raises in the launching Python process anyway.
        quiet = ["--report-api-errors", "no"] if tool in ("memcheck", "initcheck") else []
        return processes.run([exe, "--tool", tool, *quiet, "--error-exitcode", "1", sys.executable, "-m", "gemmlab",
                              "sanitize", "--launch", *(a for p in only for a in ("--only", p))],
                             capture_output=True, text=True, group=True)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(len(tools)) as pool:         # one process per tool, side by side on the GPU
        try:
            procs = dict(zip(tools, pool.map(sanitized, tools)))
        except BaseException:                            # an interrupt: the workers' tools die before the
            processes.kill_groups()                      # pool waits for them
            raise
    for tool, proc in procs.items():
        text = proc.stdout + proc.stderr
        summary = [line.strip() for line in text.splitlines() if re.search(r"SUMMARY", line)]
        launched = re.search(r"launched (\d+) kernel configurations", text)
        out["tools"][tool] = {"exit_code": proc.returncode, "summary": summary,
                              "configurations": int(launched.group(1)) if launched else 0,
                              "clean": proc.returncode == 0 and launched is not None,
                              "log_tail": text.splitlines()[-15:]}
    return out


def merged(new: dict, old: dict | None) -> dict:
    """A partial run (``--only``) put into the GPU's earlier record, where that record counts its configurations
    per variant: each tool's count and verdict become the two runs' together, the new run's variants replacing
    theirs; ``runs`` lists the runs the record holds. A whole run replaces the record; a part is refused where the
    record has no per-variant counts (:func:`run` says so before any launch)."""
    if not old or not new["only"]:
        return new
    if "variants" not in old:
        raise ValueError("the earlier record counts its configurations for the whole registry, not per variant: "
                         "a part cannot be put into it")
    variants = {k: n for k, n in old["variants"].items() if k not in new["variants"]}
    variants.update(new["variants"])
    runs = record.runs(old, new, lambda r: {"sanitizer": r["sanitizer"], "tools": r["tools"]})
    # a tool is clean only if it was in every run, and the record's count is what it holds now
    tools = {}
    for t in new["tools"]:
        each = [r["tools"].get(t, {}) for r in runs]
        clean = all(x.get("clean") for x in each)
        tools[t] = {"clean": clean, "exit_code": max(x.get("exit_code", 1) for x in each),
                    "summary": [s for x in each for s in x.get("summary", [])],
                    "configurations": sum(variants.values()) if clean else 0}
    return {**new, "tools": tools, "variants": variants, "only": record.merged_only(old, new), "runs": runs}


def save(result: dict):
    name = f"sanitizer-{record.gpu_slug()}"
    return record.save(name, merged(result, record.previous(name)))


def run_demo() -> dict:
    """compute-sanitizer's racecheck of chapter 2's tiled kernel without barrier 1, then 2 (built with line
    information), on the GPU: the summary and each distinct pair of source lines it reports."""
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        raise SystemExit("compute-sanitizer is not on the PATH (it ships with the CUDA toolkit)")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = {"sanitizer": version, "shape": "M, N, K = 40, 36, 50 (gemmlab.demos.RACE_SHAPE), TILE = 16",
           "command": "python -m gemmlab sanitize --demo --record", "barriers": {}}
    for barrier in (1, 2):
        proc = processes.run([exe, "--tool", "racecheck", "--racecheck-report", "hazard", sys.executable, "-m",
                              "gemmlab", "sanitize", "--launch-demo", str(barrier)], capture_output=True, text=True,
                             group=True)
        text = proc.stdout + proc.stderr
        summary = next((line.replace("=========", "").strip() for line in text.splitlines()
                        if "RACECHECK SUMMARY" in line), "no summary")
        pairs = _hazard_pairs(text)
        out["barriers"][str(barrier)] = {"exit_code": proc.returncode, "summary": summary, "pairs": pairs[:12],
                                         "log_head": text.splitlines()[:6]}
    return out


def _hazard_pairs(text: str) -> list:
    """Distinct hazards of a racecheck log as 'error RAW: write at line 32, read at line 38' (an error is
    between warps; a warning, within one warp)."""
    pairs, head, sides = [], None, []
    for line in text.splitlines():
        body = line.replace("=========", "").strip()
        m = re.match(r"(Error|Warning):.*?Potential (\w+) hazard", body)
        if m:
            head, sides = f"{m.group(1).lower()} {m.group(2)}", []
            continue
        access = re.match(r"(Read|Write) Thread \([\d,]+\) at .* in \S+?:(\d+)\s*$", body)
        if access and head is not None:
            sides.append(f"{access.group(1).lower()} at line {access.group(2)}")
            if len(sides) == 2:
                pair = f"{head}: {sides[0]}, {sides[1]}"
                if pair not in pairs:
                    pairs.append(pair)
                head = None
    return sorted(pairs)


def save_demo(result: dict):
    return record.save(f"racecheck-demo-{record.gpu_slug()}", result)
