"""Which chapters and kernels run on which GPUs: the table of README and chapter 0, from the registry.

    python -m gemmlab support            # prints the table (README and chapter 0 carry it; a test compares)

For each chapter, the kernels it runs (named in its cells, and the candidates of the studies its timing cells
call) are held against the profile table (:mod:`gemmlab.runtime.profiles`) in three groups: a Colab T4 (7.5), Ampere
and Ada (8.0 to 8.9), Hopper (9.0). A kernel a group cannot run (``Variant.unsupported``: the capability it
declares), or a configuration too big for the group's smallest shared memory (``Variant.does_not_fit``), is
skipped there with one line that says why, and the chapter shows the recorded figure instead.
"""
from __future__ import annotations

import json
import re

from .studies import climb, tensor_cores as tensor
from . import ops, registry, variant
from .cases import problem as problem_of
from .paths import REPO

GROUPS = [("Colab T4 (7.5)", ("T4",)), ("A100, A6000, L4, RTX 4090, RTX 4060 (8.0-8.9)",
                                        ("A100", "A6000", "L4", "RTX 4090", "RTX 4060")),
          ("H100, H200 (9.0)", ("H100", "H200"))]
_KEY = re.compile(r"\b((?:sgemm|blas/dot|blas/gemv|blas/gemm|tc)/\d\d_\w+?)(?:\.cu|\b)")
# the studies a chapter's timing cells call, and the candidates they run
_STUDIES = {"gl.tensor.now_or_recorded(": tensor.TC_CANDIDATES + tensor.HOPPER_CANDIDATES + tensor.SPLIT_CANDIDATES,
            "gl.tensor.error_vs_k(": [("tc/01_wmma", {}), ("tc/04_3xtf32_pipelined", {})],
            'gl.climb.now_or_recorded("sgemm"': climb.CANDIDATES,
            'gl.climb.now_or_recorded("dot"': climb.DOT_CANDIDATES,
            'gl.climb.now_or_recorded("gemv"': climb.GEMV_CANDIDATES}


def chapters() -> list:
    """(file stem, title, [(key, params)]) of every chapter in reading order."""
    if REPO is None:
        raise FileNotFoundError("the support table reads the chapters, which are in the book's source tree, "
                                "not in an installed wheel")
    out = []
    for path in sorted((REPO / "chapters").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), "", "".join("".join(c["source"]) for c in cells),
                      flags=re.S)                   # chapter 0 carries this table: not kernels it runs
        title = re.sub(r"^#+\s*", "", "".join(cells[0]["source"]).splitlines()[0]).strip()
        cases = [(k, {}) for k in sorted(set(_KEY.findall(text)) & set(registry.REGISTRY))]
        for call, candidates in _STUDIES.items():
            if call in text:
                cases += candidates
        out.append((path.stem, title, cases))
    return out


def _problems(v) -> list:
    if v.op is ops.TcGemm:
        return [problem_of("tc", 4096, precision=p) for p in ops.TC_PRECISIONS]
    return [p for p in v.awkward()[-1:]] if v.layout == "col" else [problem_of("gemm", 4096)] if v.op is ops.Gemm \
        else v.awkward()[-1:]


def skipped(cases: list, profiles: list) -> list:
    """What a group of profiles skips of these cases, as phrases: the kernels each needed capability leaves
    out (with the precisions, where only some need it), and those of which some configurations are too big
    for the group's smallest shared memory. Configurations too big for every GPU are not the group's loss."""
    from .runtime.profiles import PROFILES
    most = max(p.shared_per_block_optin for p in PROFILES.values())
    needs, big = {}, {}
    for key, params in cases:
        v = registry.get(key)
        full = v.resolve(**params)
        for problem in _problems(v):
            if v.refuse is not None and v.refuse(problem, full):
                continue                                  # not a problem this kernel takes at all
            for p in profiles:
                need = next((n for n in v.needs if n.applies(problem) and not n.met_by(p.capability)), None)
                if need is not None:
                    what = needs.setdefault((need.capability, need.feature), {})
                    what.setdefault(key, set()).update({problem.precision.upper()} if need.precisions else set())
                elif v.does_not_fit(problem, full, p):
                    _, _, shared = v.launch(problem, full)
                    if shared <= most:
                        big.setdefault(key, p.shared_per_block_optin // 1024)
                        big[key] = min(big[key], p.shared_per_block_optin // 1024)
    phrases = []
    for (cap, feature), keys in sorted(needs.items()):
        names = ", ".join(k + (f" in {'/'.join(sorted(ps))}" if ps else "") for k, ps in keys.items())
        phrases.append(f"{names} (need {cap[0]}.{cap[1]}: {feature})")
    for key, kib in big.items():
        phrases.append(f"the {key} configurations over {kib} KiB of shared memory")
    return phrases


def rows() -> list:
    """(chapter title, [what each group runs]) per chapter."""
    from .runtime.profiles import PROFILES
    out = []
    for _, title, cases in chapters():
        cells = []
        for _, keys in GROUPS:
            phrases = skipped(cases, [PROFILES[k] for k in keys])
            cells.append("everything" if not phrases else
                         "everything but " + "; ".join(phrases) + ", whose recorded figures it shows")
        out.append((title, cells))
    return out


def kernel_rows() -> list:
    """(variant, lowest compute capability, why) per registry variant: its Need()s, or the book's floor."""
    out = []
    for v in registry.VARIANTS:
        needs = sorted(v.needs, key=lambda n: n.capability)
        floor = f"{variant.FLOOR[0]}.{variant.FLOOR[1]}"
        if not needs:
            out.append((v.key, floor, v.older_gpus or "nothing past the book's floor"))
            continue
        low = min((n.capability for n in needs if n.precisions), default=None)
        first = f"{floor} in FP16" if low else f"{needs[0].cc}{' exactly' if needs[0].only else ''}"
        out.append((v.key, first, "; ".join(
            [(f"{n.cc}{' exactly' if n.only else ''} for {'/'.join(p.upper() for p in n.precisions)}" if n.precisions
              else f"{n.cc}{' exactly' if n.only else ''}") + f": {n.feature}" for n in needs]
            + ([v.older_gpus] if v.older_gpus else []))))
    return out


def markdown() -> str:
    head = "| Chapter | " + " | ".join(name for name, _ in GROUPS) + " |"
    lines = [head, "|" + " --- |" * (len(GROUPS) + 1)]
    for title, cells in rows():
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += ["", "| Kernel | runs from compute capability | what it needs |", "| --- | --- | --- |"]
    lines += [f"| `{key}` | {cc} | {why} |" for key, cc, why in kernel_rows()]
    return "\n".join(lines)


START, END = "<!-- support table: python -m gemmlab support -->", "<!-- end of the support table -->"


def block() -> str:
    """The table as README and chapter 0 carry it, between its markers."""
    return f"{START}\n{markdown()}\n{END}"
