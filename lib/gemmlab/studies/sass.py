"""What the compiler made of a kernel: registers and machine instructions (chapters 04-06, Part IV).

    python -m gemmlab sass --record      (needs nvcc and cuobjdump; no GPU)

Compiles registry configurations with ``nvcc -cubin -arch=sm_90 -Xptxas -v`` and counts, per kernel, the
instructions the chapters talk about: FFMA (fused multiply-adds), LDS/STS (shared loads and stores, with
their width: LDS.128 moves four floats at once), LDG (global loads, LDG.E.128 four floats), LDGSTS (cp.async
copies from global to shared memory) and local-memory traffic (spills).
Without a GPU this answers "did the compiler vectorise, unroll, spill?" at no device time.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import ops, processes, record, registry
from ..cases import Case, cases, problem as problem_of
from .core import case_name
from ..runtime.loader import parse_name_expression
from ..paths import KERNELS
from ..table import Table

ARCH = "sm_90"


def _tc(precision):            # a tensor-core case's instance depends on its precision only
    return problem_of("tc", 16, precision=precision)


def _gemv(trans):               # a GEMV case's on its transpose only
    return problem_of("gemv", 1, trans=trans)


CASES = cases(
    ("sgemm/01_naive", {"BLOCK": 16}),
    ("sgemm/02_shared_tiling", {"TILE": 16}),
    *[("sgemm/04_padded_tiling", {"TILE": 16, "PAD": p, "UNROLL": u, "AT": a})
      for p in (0, 1) for u in (0, 1) for a in (0, 1)],
    *[("sgemm/05_cache_blocking", {"TM": m, "TN": n}) for m, n in ((1, 1), (4, 4), (8, 4), (8, 8))],
    *[("sgemm/06_register_tiling", {"T": 32, "RM": m, "RN": n, "MINB": b})
      for m, n in ((2, 2), (4, 2), (4, 4)) for b in (1, 8)],
    # Part IV: 07's switches, and the configurations the recorded climb times (gemmlab.studies.climb)
    *[("sgemm/07_vectorized", dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=p, SWZ=w, SPLIT=t))
      for p, w, t in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 1, 1))],
    ("sgemm/09_warp_tiling", dict(BM=128, BN=128, BK=8, WM=64, WN=32)),
    *[("sgemm/10_double_buffer", dict(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, GROUP=g, SPLITK=sk, MINB=mb, SNAKE=sn))
      for bm, bn, bk, wm, wn, g, sk, mb, sn in ((128, 128, 8, 64, 32, 1, 1, 2, 1), (128, 256, 16, 64, 64, 8, 1, 1, 1),
                                                 (128, 256, 16, 64, 64, 8, 1, 1, 0), (128, 128, 16, 64, 32, 8, 2, 2, 1),
                                                 (64, 64, 16, 32, 32, 8, 1, 2, 1))],
    *[("sgemm/12_interior", dict(BM=128, BN=256, BK=16, WM=64, WN=64, LANES=lanes, GROUP=8, SPLITK=1, MINB=1))
      for lanes in (4, 8)],
    *[("sgemm/11_cp_async", dict(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, STAGES=st, AT=at, MINB=mb))
      for bm, bn, bk, wm, wn, st, at, mb in ((128, 256, 16, 64, 64, 4, 1, 1), (128, 128, 16, 64, 32, 3, 0, 2),
                                             (128, 128, 16, 64, 32, 3, 2, 2))],
    *[("blas/dot/07_bandwidth", dict(BLOCK=1024, UNROLL=2, GRID=1056, DET=d, CS=c)) for d, c in ((0, 0), (1, 1))],
    *[Case("blas/gemv/04_bandwidth", dict(WARPS=8, UNROLL=8, SPLIT=8, VEC=4, CS=1), problem=_gemv(t))
      for t in ("N", "T")],
    # Part V: the tensor-core kernels the record times, in FP16 (a TcGemm case's problem names its precision)
    Case("tc/03_wmma_pipelined", dict(BM=128, BN=128, WM=64, WN=32, STAGES=4), problem=_tc("fp16")),
    Case("tc/05_mma_sync", dict(BM=128, BN=256, WM=64, WN=64, STAGES=3, BK=64), problem=_tc("fp16")),      # the record's fastest
    Case("tc/05_mma_sync", dict(BM=128, BN=128, WM=64, WN=64, STAGES=3, BK=32), problem=_tc("tf32")),
    Case("tc/06_wgmma_tma", {}, problem=_tc("fp16")),
    ("tc/07_3xtf32_wgmma", {}),                                  # 3xTF32 on wgmma: FP32 in and out
    # chapter 16: the steps, and tc/09 at each of the register split's settings (the registers the code names)
    *[Case(key, {}, problem=_tc("fp16")) for key in ("tc/08_persistent", "tc/10_cluster_multicast", "tc/11_stream_k",
                                                      "tc/12_pingpong")],
    *[Case("tc/09_tma_store", {"STAGES": 4, "REGS": r}, problem=_tc("fp16")) for r in (24, 40, 56)],
)
CLASSES = re.compile(r"\b(FFMA|LDS(?:\.\w+)?|STS(?:\.\w+)?|LDGSTS(?:\.[\w.]+)?|LDG(?:\.[\w.]+)?|STG(?:\.[\w.]+)?"
                     r"|LDL(?:\.\w+)?|STL(?:\.\w+)?|BAR\.SYNC"
                     r"|HMMA(?:\.[\w.]+)?|HGMMA(?:\.[\w.]+)?|LDSM(?:\.[\w.]+)?|UTMALDG(?:\.\w+)?)\b")


def _tool(name):
    path = shutil.which(name)
    if path is None:
        raise SystemExit(f"{name} not found: install the CUDA toolkit, or `pip install nvidia-cuda-cuobjdump "
                         "nvidia-cuda-nvdisasm` and put their bin/ folder on PATH")
    return path


_INSTRUCTION = re.compile(r"/\*([0-9a-f]+)\*/\s+([^;]*);")
# predicated on "never": nvcc places three `@!PT LDS RZ, [RZ]` after each cp.async (LDGSTS); they are in
# the instruction stream (counted in totals and loop sizes) but load nothing (not counted as loads)
_NEVER = re.compile(r"@!PT\s")
_BRANCH_TO = re.compile(r"\bBRA\b[^;]*?(0x[0-9a-f]+)\s*$")


def _instructions(block: str) -> list:
    """(offset, text) of each instruction of one kernel's SASS."""
    return [(int(m.group(1), 16), m.group(2).strip()) for m in _INSTRUCTION.finditer(block)]


def _kinds(texts) -> dict:
    """The instructions of the kinds CLASSES names, counted by kind; never-executed placeholders left out."""
    counts = collections.Counter(c.group(1) for t in texts if not _NEVER.match(t) for c in CLASSES.finditer(t))
    return dict(sorted(counts.items()))


def _loops(found: list, smallest: int) -> list:
    """Each backward branch closes a loop from its target to itself: (size and branches, mix of kinds) per loop
    of at least ``smallest`` instructions, in address order."""
    out = []
    for offset, text in found:
        m = _BRANCH_TO.search(text)
        if m and int(m.group(1), 16) < offset:
            body = [t for o, t in found if int(m.group(1), 16) <= o <= offset]
            if len(body) >= smallest:
                never = sum(1 for t in body if _NEVER.match(t))
                out.append(([len(body), sum(1 for t in body if re.search(r"\bBRA\b", t))],
                            {**_kinds(body), **({"never executed": never} if never else {})}))
    return out


def loops(block: str, smallest: int = 64) -> list:
    """The loops of one kernel's SASS (cuobjdump -sass): each backward branch closes a loop from its target
    to itself. Returns [instructions, branches inside (the closing one included)] per loop of at least
    ``smallest`` instructions, in address order: what the instruction fetch streams through."""
    return [size for size, _ in _loops(_instructions(block), smallest)]


def _named(block: str) -> int:
    """How many general registers one kernel's SASS uses: the highest Rn it names, plus one (RZ is not one)."""
    found = [int(r) for r in re.findall(r"\bR(\d+)\b", block)]
    return max(found) + 1 if found else 0


def _instance(expr: str, i: int) -> str:
    """Taking a template kernel's address instantiates it, whatever its parameter types."""
    return f"void* gl_instance_{i} = (void*)&{expr};"


def analyse(cases=CASES) -> dict:
    nvcc, cuobjdump = _tool("nvcc"), _tool("cuobjdump")
    out = {}
    by_file = collections.defaultdict(list)
    for case in cases:       # a GEMV case's problem names its transpose ('N' or 'T'), a TcGemm's its precision
        if not isinstance(case, Case):
            if len(case) != 2:
                raise ValueError(f"a sass case is a Case, or a (key, params) pair, got {case!r}: a transpose or a "
                                 "precision goes in its problem")
            case = Case(*case)
        by_file[registry.get(case.key).source].append((case.key, case.params, case.problem))
    with tempfile.TemporaryDirectory() as tmp:
        for source, items in by_file.items():
            lines = [f'#include "{source}"']
            names = {}
            for key, params, problem in items:
                v = registry.get(key)
                if isinstance(problem, ops.TcGemm):
                    shown = {**params, "PREC": problem.precision}
                elif isinstance(problem, ops.Gemv):
                    shown = {**params, "TRANS": problem.trans}
                else:
                    shown = params
                expr = v.expression(problem, **params)
                lines.append(_instance(expr, len(names)))
                names[expr] = (key, shown)
            arch = next((o.split("=", 1)[1] for o in registry.get(items[0][0]).options if o.startswith("-arch=")), ARCH)
            unit = Path(tmp) / "unit.cu"
            unit.write_text("\n".join(lines) + "\n")
            cubin = Path(tmp) / "unit.cubin"
            ptxas = processes.run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", f"-I{KERNELS}",
                                    "-o", str(cubin), str(unit)], capture_output=True, text=True, check=True,
                                   group=True).stderr
            sass = processes.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True,
                                  env={**os.environ}).stdout
            regs, spills = {}, {}
            for chunk in ptxas.split("Compiling entry function '")[1:]:
                name = chunk.split("'", 1)[0]
                used = re.search(r"Used (\d+) registers", chunk)
                spilled = re.search(r"(\d+) bytes spill stores", chunk)
                regs[name] = int(used.group(1)) if used else 0
                spills[name] = int(spilled.group(1)) if spilled else 0
            for block in re.split(r"\n\s*Function : ", sass)[1:]:
                mangled = block.split("\n", 1)[0].strip()
                found = _instructions(block)
                found_loops = _loops(found, 64)
                total = len(found)                                      # every instruction, placeholders too
                expr = next((e for e in names if _mangled_matches(mangled, e)), None)
                if expr is None:        # another kernel of the same file (tc/07's splitting pre-pass): not asked for
                    continue
                key, params = names[expr]
                out[case_label(key, params)] = {"key": key, "params": params, "arch": arch,
                                                "registers": regs.get(mangled, 0),
                                                # the registers the code names (R0 to the highest): what a thread
                                                # uses, whatever setmaxnreg lets a warpgroup have
                                                "registers_named": _named(block),
                                                "spill_store_bytes": spills.get(mangled, 0),
                                                "total": total,
                                                "never_executed": sum(1 for _, t in found if _NEVER.match(t)),
                                                "instructions": _kinds(t for _, t in found),
                                                # operands the FFMAs take from the operand reuse cache
                                                "ffma_reuse_operands": sum(line.count(".reuse") for line in
                                                                           block.splitlines() if "FFMA" in line),
                                                "loops": [size for size, _ in found_loops],
                                                "loop_mix": [mix for _, mix in found_loops]}
    return out


case_label = case_name                  # a kernel configuration's name, as every record names it (studies.core)


def _mangled_matches(mangled: str, expr: str) -> bool:
    base, args = parse_name_expression(expr)
    return f"{len(base)}{base}" in mangled and "".join(f"Li{a}E" for a in args) in mangled


def run() -> dict:
    version = subprocess.run([_tool("nvcc"), "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return {"arch": ARCH, "nvcc": version, "kernels": analyse(),
            "command": "python -m gemmlab sass --record"}


def save(result: dict):
    return record.save(f"sass-{ARCH}", result)


def show(prefix: str = "", data: dict | None = None) -> None:
    """Show the recorded instruction counts (results/sass-sm_90.json) of kernels whose label starts with prefix."""
    data = data or record.load(f"sass-{ARCH}")
    rows = {k: v for k, v in data["kernels"].items() if k.startswith(prefix)}
    kinds = sorted({i for v in rows.values() for i in v["instructions"]})
    kernels = sorted(rows)
    title = (f"instructions in each compiled kernel (total, and by kind), {data['nvcc']}, {data['arch']}, "
             f"{data['environment']['date'][:10]}:")
    if len(kinds) > len(kernels):      # a column a kernel, a row a kind: the narrower way round
        Table(["instructions"] + kernels,
              [["registers"] + [rows[k]["registers"] for k in kernels], ["total"] + [rows[k]["total"] for k in kernels]]
              + [[i] + [rows[k]["instructions"].get(i, 0) for k in kernels] for i in kinds], title=title).show()
    else:
        Table(["kernel", "regs", "total"] + kinds,
              [[k, rows[k]["registers"], rows[k]["total"]] + [rows[k]["instructions"].get(i, 0) for i in kinds]
               for k in kernels], title=title).show()
