"""Headless Chromium for the browser tests, driven by Playwright: a system Chromium, or Playwright's own
(see chromium.py beside this file; `make browser` finds or installs one)."""
import importlib.util
from pathlib import Path

import pytest

playwright = pytest.importorskip("playwright.sync_api")
_spec = importlib.util.spec_from_file_location("gemmlab_test_chromium", Path(__file__).with_name("chromium.py"))
chromium_finder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chromium_finder)


@pytest.fixture(scope="session")
def chromium():
    path, own = chromium_finder.find()
    if path is None:
        pytest.fail(chromium_finder.HOW)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(**({} if own else {"executable_path": path}), args=["--no-sandbox"])
        yield b
        b.close()
