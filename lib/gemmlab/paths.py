"""Where the kernel sources and the recorded results live: inside the wheel, or in the source tree."""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _locate(name: str) -> Path:
    bundled = PACKAGE / name            # installed from a wheel: carried next to the code
    if bundled.is_dir():
        return bundled
    return PACKAGE.parents[1] / name    # editable install or a checkout: <repo>/lib/gemmlab -> <repo>/name


KERNELS = _locate("kernels")
RESULTS = _locate("results")
REPO = PACKAGE.parents[1] if (PACKAGE.parents[1] / "_toc.yml").is_file() else None
