"""Which chapters and kernels run on which GPUs and on the emulator: the tables of README, chapter 0 and the
appendix, from the registry.

    python -m gemmlab support            # prints the tables (README, chapter 0 and the appendix carry them;
                                         # a test compares)

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
from .paths import REPO, notebook_text, rewrite
from .runtime.profiles import BOOK

GROUPS = [("Colab T4 (7.5)", ("T4",)), ("A100, A6000, L4, RTX 4090, RTX 4060 (8.0-8.9)",
                                        ("A100", "A6000", "L4", "RTX 4090", "RTX 4060")),
          ("H100, H200 (9.0)", ("H100", "H200"))]
SHORT = ["Colab T4", "Ampere, Ada", "Hopper"]      # the groups' names in the short table
# without a GPU the emulator runs every kernel as this profile (the book's GPU: GEMMLAB_DEVICE names another)
EMULATOR = (f"no GPU: the emulator, as the {BOOK}", (BOOK,))
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


def _skips(cases: list, profiles: list) -> tuple:
    """What a group of profiles skips of these cases: {(capability, feature): {kernel: precisions that need
    it, or none for all}}, and {kernel: the group's smallest shared memory in KiB} for the kernels of which some
    configurations are too big for it. Configurations too big for every GPU are not the group's loss."""
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
    return needs, big


def skipped(cases: list, profiles: list) -> list:
    """What a group of profiles skips of these cases, as phrases: the kernels each needed capability leaves
    out (with the precisions, where only some need it), and those of which some configurations are too big
    for the group's smallest shared memory."""
    needs, big = _skips(cases, profiles)
    phrases = []
    for (cap, feature), keys in sorted(needs.items()):
        names = ", ".join(k + (f" in {'/'.join(sorted(ps))}" if ps else "") for k, ps in keys.items())
        phrases.append(f"{names} (need {cap[0]}.{cap[1]}: {feature})")
    for key, kib in big.items():
        phrases.append(f"the {key} configurations over {kib} KiB of shared memory")
    return phrases


def rows(groups=None) -> list:
    """(chapter title, [what each group runs]) per chapter, in full: the kernels each group skips and why."""
    from .runtime.profiles import PROFILES
    out = []
    for _, title, cases in chapters():
        cells = []
        for _, keys in groups or GROUPS:
            phrases = skipped(cases, [PROFILES[k] for k in keys])
            cells.append("everything" if not phrases else
                         "everything but " + "; ".join(phrases) + ", whose recorded figures it shows")
        out.append((title, cells))
    return out


def _count(cases: list, profiles: list) -> str:
    """One short cell: 'all', or how many of the chapter's kernels (and some configurations) are skipped."""
    needs, big = _skips(cases, profiles)
    if not needs and not big:
        return "all"
    whole = {k for keys in needs.values() for k, ps in keys.items() if not ps}
    some = {k for keys in needs.values() for k, ps in keys.items() if ps} - whole
    parts = [f"{len(whole)} kernel{'s' if len(whole) != 1 else ''}"] if whole else []
    parts += [f"{len(some)} in some precisions"] if some else []
    parts += ["some configurations"] if big else []
    return "all but " + ", ".join(parts)


def short_rows() -> list:
    """(chapter number and short title, [cell per GPU group], emulator cell) per chapter."""
    from .runtime.profiles import PROFILES
    out = []
    for _, title, cases in chapters():
        cells = [_count(cases, [PROFILES[k] for k in keys]) for _, keys in GROUPS]
        emu = _count(cases, [PROFILES[k] for k in EMULATOR[1]])
        cells.append("checks all; timings recorded" if emu == "all" else f"checks {emu}; timings recorded")
        out.append((title if title.startswith("Appendix") else title.split(":")[0], cells))
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


def short_markdown() -> str:
    """The chapters against the GPU groups and the emulator, one short cell each (README, chapter 0)."""
    lines = ["| Chapter | " + " | ".join(SHORT) + " | No GPU (emulator) |", "|" + " --- |" * (len(SHORT) + 2)]
    lines += [f"| {title} | " + " | ".join(cells) + " |" for title, cells in short_rows()]
    return "\n".join(lines)


def markdown() -> str:
    """The full tables: per chapter what each group skips and why, then per kernel what it needs (the appendix)."""
    head = "| Chapter | " + " | ".join(name for name, _ in GROUPS) + " |"
    lines = [head, "|" + " --- |" * (len(GROUPS) + 1)]
    for title, cells in rows():
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += ["", "| Kernel | runs from compute capability | what it needs |", "| --- | --- | --- |"]
    lines += [f"| `{key}` | {cc} | {why} |" for key, cc, why in kernel_rows()]
    return "\n".join(lines)


START, END = "<!-- support table: python -m gemmlab support -->", "<!-- end of the support table -->"
FULL_START, FULL_END = "<!-- full support tables: python -m gemmlab support --full -->", "<!-- end of the full tables -->"


def block() -> str:
    """The short table as README and chapter 0 carry it, between its markers."""
    return f"{START}\n{short_markdown()}\n{END}"


def full_block() -> str:
    """The full tables as the appendix carries them, between their markers."""
    return f"{FULL_START}\n{markdown()}\n{FULL_END}"


def _toc() -> list:
    """(caption, [chapter file stems]) per part of the book's _toc.yml (read by line: no YAML library needed)."""
    parts = []
    for line in (REPO / "_toc.yml").read_text().splitlines():
        line = line.strip()
        if line.startswith("- caption:"):
            parts.append((line.split(":", 1)[1].strip().strip('"'), []))
        elif line.startswith("- file:") and parts:
            parts[-1][1].append(line.split(":", 1)[1].strip().rsplit("/", 1)[-1])
    return parts


def book_summary() -> str:
    """What the book holds, as the README says it: the chapters counted from the files, the parts from _toc.yml."""
    parts = _toc()
    notebooks = sorted(p.stem for p in (REPO / "chapters").glob("*.ipynb"))
    listed = [f for _, files in parts for f in files if f in notebooks]
    assert sorted(listed) == notebooks, "every chapter notebook is in _toc.yml once"
    main = [c for c, _ in parts if c != "Appendix"]
    words = {4: "four", 5: "five", 6: "six", 7: "seven"}
    names = "; ".join(f"*{c}*" for c in main)
    return (f"The book has {len(notebooks)} chapters, in {words.get(len(main), len(main))} parts and an appendix: "
            f"{names}.")


def emulator_times() -> str:
    """The emulator's chapter times as the README gives them, from results/chapters-emulator.json."""
    from . import record
    try:
        r = record.load("chapters-emulator")
    except FileNotFoundError:
        raise FileNotFoundError("the README's emulator times come from results/chapters-emulator.json: make it "
                                "without a GPU, python -m gemmlab rehearse --jobs 2 --record chapters/*.ipynb (two chapters at a time, "
                                "as the README's figures were measured)") \
            from None
    cold = sum(n["cold_seconds"] for n in r["notebooks"])
    warm = sum(n["warm_seconds"] for n in r["notebooks"])
    longest = max(r["notebooks"], key=lambda n: n["warm_seconds"])
    number = int(longest["notebook"].rsplit("/", 1)[-1][:2])

    def mins(s):
        return f"{round(s / 60)} minutes" if s >= 90 else f"{round(s)} s"
    return (f"Without a GPU, the {len(r['notebooks'])} chapters' running times add up to {mins(cold)} the first "
            f"time (each kernel compiled once) and {mins(warm)} after that (measured up to {r['jobs']} at a time "
            f"on a {r['cores']}-core machine, {r['compiler'].split(' (')[0]}; `results/chapters-emulator.json`); the "
            f"longest, chapter {number}, takes {round(longest['warm_seconds'])} s.")


BLOCKS = {"chapter count": book_summary, "emulator times": emulator_times}


def generated(text: str) -> str:
    """``text`` with every generated block (the support table, the chapter count, the emulator's times) made
    again between its markers; a block the text does not have is left out."""
    text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda m: block(), text, flags=re.S)
    text = re.sub(re.escape(FULL_START) + ".*?" + re.escape(FULL_END), lambda m: full_block(), text, flags=re.S)
    for name, make in BLOCKS.items():
        start, end = f"<!-- {name}: generated -->", f"<!-- end of the {name} -->"
        if start in text:
            text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda m: f"{start}\n{make()}\n{end}", text,
                          flags=re.S)
    return text


def carriers() -> list:
    """The files that carry generated blocks: README.md, the appendix's pages, chapter 0 (a notebook)."""
    return [REPO / "README.md", *sorted((REPO / "appendix").glob("*.md")), REPO / "chapters" / "00-how-to-use.ipynb"]


def _generated_cells(text: str) -> str:
    """A notebook's text with every generated block of its markdown cells made again."""
    nb = json.loads(text)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = generated("".join(cell["source"])).splitlines(keepends=True)
    return notebook_text(nb)


def write() -> list:
    """Make every generated block again where it is carried; returns the files that changed."""
    return [path for path in carriers()
            if rewrite(path, _generated_cells if path.suffix == ".ipynb" else generated)]
