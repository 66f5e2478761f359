"""The setup cell every chapter starts with, made from the book's one setting, ``repository.url`` in _config.yml.

    python -m gemmlab generate        # writes it (and the other generated text) into every chapter

On Colab, where gemmlab is not installed yet, the cell installs it from the book's repository first:
``gemmlab[gpu] @ git+<url>``, with uv where the machine has it (Colab does: it installs a package of this
kind in a fraction of pip's time) and pip otherwise. When neither can install it (no network, a book not
published at that address), the cell stops with one line that gives the installer's last word and says what
to do, before the import that would fail. ``tests/test_colab.py`` runs the cell in a fresh environment from a ``git+file://`` clone, with
uv and with pip, and once with an address nothing answers.
"""
from __future__ import annotations

import json
import re

from .paths import REPO, notebook_text, rewrite

# The cell's text; {url} and {stem} are filled in. Lines of at most 88 characters: the book's column.
CELL = '''\
# Setup. On Colab, first install the book's library (repository.url in _config.yml).
import importlib.util, shutil, subprocess, sys
if "google.colab" in sys.modules and importlib.util.find_spec("gemmlab") is None:
    url = "{url}"
    pkg, py = f"gemmlab[gpu] @ git+{{url}}", sys.executable
    tries = [[py, "-m", "pip", "install", "-q", pkg]]
    if shutil.which("uv"):              # Colab has uv, which installs faster than pip
        tries.insert(0, ["uv", "pip", "install", "-q", "--python", py, pkg])
    for command in tries:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            break
    else:
        from IPython.core.error import UsageError   # one line, and Run All stops
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UsageError(f"could not install gemmlab from {{url}} ({{why}}): read the "
                         "chapter as it is, or run it on your machine (make lab)")
import gemmlab as gl
gl.chapter("{stem}")   # what this run is: the GPU and date, or the emulator'''


def config_url(root=None) -> str:
    """``repository.url`` of the book's _config.yml (read by line: no YAML library needed)."""
    text = ((root or REPO) / "_config.yml").read_text()
    block = re.search(r"^repository:\s*\n((?:[ \t]+.*\n?)+)", text, flags=re.M)
    found = block and re.search(r"^\s+url:\s*(\S+)", block.group(1), flags=re.M)
    if not found:
        raise ValueError("_config.yml has no repository.url: the address the chapters install the library from")
    return found.group(1).strip("\"'")


def cell(stem: str, url: str | None = None) -> str:
    """The setup cell of chapter ``stem`` (a notebook's name without .ipynb)."""
    return CELL.format(url=url or config_url(), stem=stem)


def _with_setup_cell(stem: str):
    """A notebook text -> the same with its first code cell made again as chapter ``stem``'s setup cell."""
    def change(text: str) -> str:
        nb = json.loads(text)
        first = next((c for c in nb["cells"] if c["cell_type"] == "code"), None)
        if first is None or "import gemmlab as gl" not in "".join(first["source"]):
            raise ValueError(f"{stem}.ipynb: its first code cell is not the setup cell")
        first["source"] = cell(stem).splitlines(keepends=True)
        return notebook_text(nb)
    return change


def write(paths=None) -> list:
    """Make every chapter's setup cell (its first code cell) again from _config.yml; returns the changed files."""
    return [path for path in paths or sorted((REPO / "chapters").glob("*.ipynb"))
            if rewrite(path, _with_setup_cell(path.stem))]
