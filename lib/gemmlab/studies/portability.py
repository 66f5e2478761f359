"""Every configuration the book uses, compiled for every GPU generation it claims (no GPU needed).

    python -m gemmlab portability          # nvcc for sm_75, sm_80, sm_86, sm_89 and sm_90 (sm_90a: Hopper)

"Used" means: a chapter's ladder step or sweep, a study's candidate (climb, tensor, the BLAS steps), what
``gl.blas`` dispatches to, the SASS record's cases, and each variant's defaults in every problem form it takes
(its transposes, its precisions). For each architecture of the profile table (:mod:`gemmlab.runtime.profiles`), a
configuration the registry says the architecture cannot run (``Variant.unsupported``: a declared refusal) is not
compiled; every other one must compile, and must launch within the limits of every profile of that
architecture or be refused by ``Variant.does_not_fit``. nvcc's object files are not kept; its verdicts (and
ptxas's registers and shared memory per kernel) are cached by the hash of the unit, its headers, the
architecture and nvcc's version under the cache folder (``gemmlab/nvcc``), so a rerun compiles nothing new.
"""
from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import blas, processes, registry, variant
from . import blas_steps as blasbench, climb, ladder, sass, tensor_cores as tensor
from ..paths import KERNELS


def architectures() -> list:
    """The compute capabilities of the profile table, oldest first: [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0)]."""
    from ..runtime.profiles import PROFILES
    return sorted({p.capability for p in PROFILES.values()})


def profiles_of(capability: tuple) -> list:
    from ..runtime.profiles import PROFILES
    return [p for p in PROFILES.values() if p.capability == capability]


def _forms(v) -> list:
    """One problem per form the variant takes (its transposes, its precisions): the awkward sizes' forms."""
    seen, out = set(), []
    for p in v.awkward():
        form = tuple(sorted(v.problem_params(p).items())) if v.problem_params else ()
        form += (getattr(p, "precision", None),)
        if form not in seen:
            seen.add(form)
            out.append(p)
    return out


def used() -> list:
    """(key, params) of every configuration a chapter, a study or gl.blas uses, without repeats."""
    cases = list(ladder.STEPS)
    for sweep in ladder.SWEEPS.values():
        cases += sweep
    cases += climb.CANDIDATES + climb.DOT_CANDIDATES + climb.GEMV_CANDIDATES + climb.GEMM_CANDIDATES
    cases += tensor.TC_CANDIDATES + tensor.HOPPER_CANDIDATES + tensor.SPLIT_CANDIDATES
    for family in blasbench.FAMILIES:
        cases += blasbench._steps(family)[0]
    from ..runtime.profiles import PROFILES
    cases += [(blas.GEMM, blas._gemm_params(m, n, k, p.sm_count)) for p in PROFILES.values()
              for m, n, k in ((4096, 4096, 4096), (1024, 1024, 1024), (64, 4096, 4096), (4096, 4096, 64))]
    cases += [(blas.DOT, blas._dot_params(n, p.sm_count)) for p in PROFILES.values() for n in (1 << 20, 1 << 30)]
    cases += [(blas.GEMV if t == "N" else blas.GEMV_T, blas._gemv_params(m, n, t, p.sm_count))
              for p in PROFILES.values() for m, n in ((512, 512), (16384, 16384), (100000, 64), (64, 100000))
              for t in ("N", "T")]
    cases += list(sass.CASES)
    cases += [(v.key, {}) for v in registry.VARIANTS]
    out, seen = [], set()
    for key, params in cases:
        full = registry.get(key).resolve(**params)
        ident = (key, tuple(sorted(full.items())))
        if ident not in seen:
            seen.add(ident)
            out.append((key, full))
    return out


def _nvcc() -> str | None:
    return shutil.which("nvcc")


@functools.lru_cache(maxsize=1)
def _nvcc_version() -> str:
    return subprocess.run([_nvcc(), "--version"], capture_output=True, text=True).stdout.strip()


def _cache() -> Path:
    from ..runtime.emulator import _cache_dir
    folder = _cache_dir().parent / "nvcc"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


_INFO = re.compile(r"ptxas info\s*: Compiling entry function '(\S+)' for '(\w+)'")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_SPILL = re.compile(r"(\d+) bytes spill stores")


def _demangle(names: list) -> dict:
    """Mangled kernel names -> their C++ names (cu++filt from the CUDA toolkit, else binutils' c++filt: nvcc
    mangles as the Itanium C++ ABI does)."""
    beside = os.path.join(os.path.dirname(_nvcc()), "cu++filt") if _nvcc() else ""
    filt = shutil.which("cu++filt") or (beside if os.path.exists(beside) else None) or shutil.which("c++filt")
    if not names or not filt:
        return {}
    out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def _norm(expr: str) -> str:
    return re.sub(r"\s+", "", expr)


def _compile_unit(source: str, exprs: list, arch: str) -> dict:
    """nvcc -cubin for one architecture of one .cu file with every expression instantiated: {"ok", "log",
    "kernels": {expression: {"registers", "static_shared", "spill"}}}, cached by content."""
    unit = "\n".join([f'#include "{source}"'] + [sass._instance(e, i) for i, e in enumerate(sorted(exprs))]) + "\n"
    from ..runtime.loader import find_includes
    headers = find_includes(unit, KERNELS / "unit.cu")
    digest = hashlib.sha256("\0".join([unit, arch, _nvcc_version(),
                                       *(f"{p}\n{t}" for p, t in sorted(headers.items()))]).encode()).hexdigest()[:24]
    hit = _cache() / f"{digest}.json"
    try:
        return _by_expression(json.loads(hit.read_text()), exprs)
    except (OSError, ValueError, KeyError):
        pass
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "unit.cu"
        path.write_text(unit)
        proc = processes.run([_nvcc(), "-cubin", f"-arch={arch}", "-std=c++17", f"-I{KERNELS}", "-Xptxas", "-v",
                              "-o", str(Path(tmp) / "unit.cubin"), str(path)], capture_output=True, text=True,
                             timeout=1800, group=True)
    log = proc.stderr + proc.stdout
    kernels, current = {}, None
    for line in log.splitlines():
        m = _INFO.search(line)
        if m:
            current = m.group(1)
            kernels[current] = {"registers": None, "static_shared": 0, "spill": 0}
            continue
        if current and (u := _USED.search(line)):
            kernels[current]["registers"] = int(u.group(1))
            kernels[current]["static_shared"] = int(u.group(2) or 0)
        if current and (s := _SPILL.search(line)):
            kernels[current]["spill"] = int(s.group(1))
    result = {"ok": proc.returncode == 0, "log": log[-4000:] if proc.returncode else "", "mangled": kernels}
    from ..paths import atomic_write
    atomic_write(hit, json.dumps(result))
    return _by_expression(result, exprs)


def _by_expression(result: dict, exprs: list) -> dict:
    """ptxas's figures per kernel, keyed by the registry's name expressions."""
    names = _demangle(list(result["mangled"]))
    by_expr = {_norm(names.get(m, m).split("(")[0].replace("void ", "", 1)): info for m, info in result["mangled"].items()}
    return {**result, "kernels": {e: by_expr.get(_norm(e)) for e in exprs}}


def check(jobs: int = 2, progress: bool = False) -> dict:
    """Compile every used configuration for every architecture; returns the problems found (an empty list
    when all is well) and what was compiled and refused, per architecture."""
    if _nvcc() is None:
        raise RuntimeError("the portability check compiles with nvcc, which is not installed (the CUDA toolkit, "
                           "or pip install nvidia-cuda-nvcc)")
    from ..runtime.profiles import PROFILES
    problems, units, plan = [], {}, []
    for cap in architectures():
        arch = f"sm_{cap[0]}{cap[1]}"
        profile = min(profiles_of(cap), key=lambda p: p.shared_per_block_optin)
        for key, params in used():
            v = registry.get(key)
            for form in _forms(v):
                expr = v.expression(form, **params)
                if v.unsupported(form, profile):
                    plan.append((cap, key, params, form, expr, None))
                    continue                             # a declared refusal: not compiled for this one
                target = next((o.split("=", 1)[1] for o in v.options if o.startswith("-arch=")), arch)
                if target != arch and not target.startswith(arch):
                    problems.append(f"{key}: compiles for {target} only, yet the registry lets {arch} run it")
                    continue
                units.setdefault((v.source, target), set()).add(expr)
                plan.append((cap, key, params, form, expr, (v.source, target)))
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(_compile_unit, src, sorted(exprs), target): (src, target)
                   for (src, target), exprs in units.items()}
        try:
            items = concurrent.futures.as_completed(futures)
            if progress:
                from tqdm.auto import tqdm
                items = tqdm(items, total=len(futures), desc="nvcc")
            for f in items:
                results[futures[f]] = f.result()
        except BaseException:                   # an interrupt: the workers' nvcc runs die before the pool
            for f in futures:                   # waits for them, and the queued ones never start
                f.cancel()
            processes.kill_groups()
            raise
    for (src, target), r in results.items():
        if not r["ok"]:
            problems.append(f"{src} does not compile for {target}:\n{r['log']}")
    compiled = refused = measured = 0
    for cap, key, params, form, expr, unit in plan:
        if unit is None:
            refused += 1
            continue
        compiled += 1
        r = results[unit]
        info = r["kernels"].get(expr) if r["ok"] else None
        if info is None or info.get("registers") is None:
            continue
        measured += 1
        v = registry.get(key)
        _, block, dynamic = v.launch(form, params)
        threads = variant.block_threads(block)
        for p in profiles_of(cap):
            over = []
            if info["static_shared"] + dynamic > p.shared_per_block_optin:
                over.append(f"{info['static_shared'] + dynamic} bytes of shared memory")
            if info["registers"] * threads > p.registers_per_block:
                over.append(f"{info['registers']} registers x {threads} threads")
            if over and v.does_not_fit(form, params, p) is None:
                problems.append(f"{expr} on {p.key} ({p.arch}): {', '.join(over)} exceed its limits, and the "
                                f"registry does not refuse it")
    return {"problems": problems, "compiled": compiled, "refused": refused, "measured": measured,
            "units": len(units), "architectures": [f"sm_{a}{b}" for a, b in architectures()],
            "profiles": list(PROFILES)}
