"""Which Chromium the browser tests drive, found without root: GEMMLAB_CHROMIUM, a system Chromium or
Chrome on PATH, or Playwright's own (``python -m playwright install chromium``).

``python tests/browser/chromium.py`` exits 0 when one is found and prints its path, else prints one line
saying how to get one and exits 1 (``--quiet``: the exit status alone); ``make browser`` uses it.
"""
from __future__ import annotations

import os
import shutil
import sys

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
HOW = ("the browser tests need Chromium and found none: install it (Debian/Ubuntu, as root: apt-get install "
       "chromium), or run `.venv/bin/python -m playwright install chromium` (no root needed), or set "
       "GEMMLAB_CHROMIUM to a Chromium or Chrome binary; then `make browser`")


def playwright_own() -> str | None:
    """The Chromium that `playwright install chromium` put in its cache, if it is there."""
    try:
        from playwright.sync_api import sync_playwright
        with sync_playwright() as p:
            path = p.chromium.executable_path
    except Exception:
        return None
    return path if path and os.path.isfile(path) else None


def find() -> tuple[str | None, bool]:
    """(executable, is_playwrights_own); (None, False) when there is none."""
    given = os.environ.get("GEMMLAB_CHROMIUM")
    if given:
        return (shutil.which(given) or (given if os.path.isfile(given) else None)), False
    for name in NAMES:
        if shutil.which(name):
            return shutil.which(name), False
    own = playwright_own()
    return (own, True) if own else (None, False)


if __name__ == "__main__":
    quiet = "--quiet" in sys.argv            # only the exit status: 0 found, 1 not
    path, _ = find()
    if path is None:
        if not quiet:
            print(HOW)
        sys.exit(1)
    if not quiet:
        print(path)
