"""The reader's working copy of the chapters: ``workbook/`` beside ``chapters/``, ignored by git.

    python -m gemmlab lab          # (make lab) bring workbook/ up to date, then JupyterLab on it
    python -m gemmlab workbook     # only bring it up to date

Running a chapter writes its outputs into the notebook (JupyterLab saves every two minutes), so a reader
never runs the committed chapters: they would lose the GPU run's outputs, and their next ``git pull`` would
conflict. ``sync`` copies every chapter into ``workbook/`` the first time; when a committed chapter changes
(a pull), a copy whose cells the reader has not edited is replaced by the new chapter (its outputs are the
reader's own run, and go), and a copy they have edited is kept unless they say to replace it; a replaced
edited copy is moved to ``workbook/.previous/`` first, never deleted. ``workbook/.gemmlab-workbook.json``
remembers which committed version each copy came from.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from .paths import REPO, atomic_write

FOLDER = "workbook"
MANIFEST = ".gemmlab-workbook.json"
FIRST = "00-how-to-use.ipynb"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cells_digest(path: Path) -> str | None:
    """A digest of a notebook's cells as the reader wrote them (type and source, not outputs); None when the
    file is not a notebook any more."""
    try:
        nb = json.loads(path.read_text())
        cells = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
                 for c in nb["cells"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return _digest(json.dumps(cells).encode())


def _load_manifest(work: Path) -> dict:
    try:
        data = json.loads((work / MANIFEST).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _copy(src: Path, dst: Path, data: bytes) -> dict:
    atomic_write(dst, data)
    return {"from": _digest(data), "cells": cells_digest(dst)}


def sync(chapters: Path, work: Path, *, replace=(), ask=None, say=print) -> dict:
    """Bring ``work`` up to date with ``chapters`` (see the module's text). ``replace``: names of copies to
    replace with the committed chapter even if the reader edited them (or ``"all"``), changed or not;
    ``ask(question) -> bool``, when given, is asked about each other edited copy of a changed chapter (no
    ``ask``: such a copy is kept). Returns {name: what happened}, each one of "new", "same", "updated", "kept",
    "replaced", "gone" (no longer a chapter of the book: the copy stays, the workbook forgets it)."""
    chapters, work = Path(chapters), Path(work)
    if not chapters.is_dir():
        raise FileNotFoundError(f"no chapters folder at {chapters}")
    sources = {src.name: src for src in sorted(chapters.glob("*.ipynb"))}
    if replace != "all":
        wanted = {r if r.endswith(".ipynb") else f"{r}.ipynb" for r in replace}
        unknown = sorted(wanted - set(sources))
        if unknown:
            raise ValueError(f"no chapter {', '.join(unknown)} to replace; the chapters are "
                             f"{', '.join(n.removesuffix('.ipynb') for n in sources)}")
        replace = wanted
    work.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(work)
    if not manifest and (work / MANIFEST).exists() and (work / MANIFEST).read_bytes().strip() not in (b"", b"{}"):
        say(f"{work / MANIFEST} could not be read (damaged?): every copy in {work.name}/ is taken as edited by "
            "you and kept; --replace NAME takes a chapter anew")
    done = {}
    try:
        for name, src in sources.items():
            done[name] = _sync_one(src, work, manifest, replace == "all" or name in replace, ask, say)
        for name in sorted(set(manifest) - set(sources)):
            manifest.pop(name)
            done[name] = "gone"
            if (work / name).exists():
                say(f"{name}: no longer a chapter of the book; your copy stays in {work.name}/")
    finally:                   # written even when interrupted: every copy made so far is remembered
        atomic_write(work / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return done


def _sync_one(src: Path, work: Path, manifest: dict, replace: bool, ask, say) -> str:
    name, dst = src.name, work / src.name
    data = src.read_bytes()
    entry = manifest.get(name)
    if not dst.exists():
        manifest[name] = _copy(src, dst, data)
        return "new"
    mine = cells_digest(dst)
    edited = entry is None or mine is None or mine != entry.get("cells")
    if not replace and entry and entry.get("from") == _digest(data):
        return "same"
    if not edited:
        changed = not entry or entry.get("from") != _digest(data)
        manifest[name] = _copy(src, dst, data)
        if changed:
            say(f"{name}: the chapter changed; your copy had no edits of yours, so it is the new chapter now "
                f"(the outputs of your last run of it are gone)")
        return "updated"
    if not replace and ask is not None:
        replace = ask(f"{name}: the chapter changed, and your copy has edits of yours. Replace your copy with "
                      f"the new chapter (yours is kept in {work.name}/.previous/)? [y/N] ")
    if not replace:
        say(f"{name}: the chapter changed, and your copy has edits of yours, so it is kept as it is; "
            f"`python -m gemmlab workbook --replace {name.removesuffix('.ipynb')}` takes the new chapter "
            f"(yours goes to {work.name}/.previous/)")
        return "kept"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    previous = work / ".previous" / f"{dst.stem}-{stamp}.ipynb"
    previous.parent.mkdir(exist_ok=True)
    shutil.copy2(dst, previous)
    manifest[name] = _copy(src, dst, data)
    say(f"{name}: replaced by the chapter; your copy is {previous.relative_to(work.parent)}")
    return "replaced"


def _ask_on_terminal(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(question).strip().lower() in ("y", "yes")
    except (EOFError, KeyboardInterrupt):
        print()
        return False


def folders() -> tuple:
    """(chapters/, workbook/) of the checkout this library runs from."""
    if REPO is None:
        raise SystemExit("the chapters come with a checkout of the book (git clone ...), not with the installed "
                         "library; run this from the checkout's .venv")
    return REPO / "chapters", REPO / FOLDER


def main(replace=(), lab: bool = False, lab_args=()) -> int:
    chapters, work = folders()
    try:
        done = sync(chapters, work, replace=replace, ask=_ask_on_terminal)
    except ValueError as exc:
        raise SystemExit(f"python -m gemmlab workbook: {exc}") from None
    counts = {k: sum(v == k for v in done.values()) for k in ("new", "updated", "replaced", "kept", "same", "gone")}
    print(f"{work}: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    if not lab:
        return 0
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    if jupyter is None:
        raise SystemExit("JupyterLab is not installed here: `pip install jupyterlab` (make lab installs it)")
    argv = [jupyter, "lab", FIRST, *lab_args]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in lab_args:
        argv.append("--allow-root")            # JupyterLab refuses to start as root without it (containers, Colab-like VMs)
    print(f"JupyterLab on {work} (open {FIRST} first); Ctrl-C stops it")
    os.chdir(work)
    os.execv(jupyter, argv)
