"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright (no browser download)."""
import shutil

import pytest

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium():
    if CHROMIUM is None:
        pytest.fail("no chromium found: `make test` installs Debian's chromium when it is missing")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()
