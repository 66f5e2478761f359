"""A chapter read and run in JupyterLab, as a reader without a GPU does it (`make lab`): the kernel's code and
the answers' summaries are on the page, no MyST markup is left raw, and the committed chapter is untouched.

JupyterLab runs on a working copy made by gemmlab.workbook, as `make lab` does, in a temporary folder with its
own settings (every cell drawn, not only those in view; no news or update checks) and no network.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gemmlab import workbook

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "02-naive-and-tiled.ipynb"          # a kernel listing, folded answers, a folded solution
SHOTS = ROOT / "_build" / "browser"
RAW = ("{literalinclude}", "{admonition}", "{dropdown}", ":class: dropdown", ":language: cuda", "{doc}", ":::",
       ":start-after:")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if shutil.which("jupyter", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("JupyterLab is not installed in this environment (it is in the dev extra: make test installs it)")
    base = tmp_path_factory.mktemp("lab")
    work = base / "workbook"
    workbook.sync(ROOT / "chapters", work, say=lambda s: None)
    settings = base / "settings"
    for plugin, values in (("@jupyterlab/notebook-extension/tracker", {"windowingMode": "none"}),
                           ("@jupyterlab/apputils-extension/notification", {"fetchNews": "false",
                                                                           "checkForUpdates": False})):
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), "gemmlab-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(base / "config"), "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
           "JUPYTER_DATA_DIR": str(base / "data"), "MPLBACKEND": ""}
    env.pop("GEMMLAB_DEVICE", None)
    argv = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
            f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={base / 'workspaces'}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = open(base / "lab.log", "w")
    server = subprocess.Popen(argv, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.time() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (base / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
    yield url, token, work
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def _status() -> str:
    """What git sees of the checkout: every changed tracked file and every new file it does not ignore."""
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def _prompts(page):
    return page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()


def test_a_chapter_in_jupyterlab_shows_its_kernel_and_answers_and_changes_no_committed_file(lab, chromium):
    url, token, work = lab
    tracked = _status()
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{url}/lab/tree/{CHAPTER}?token={token}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
    notebook = page.locator(".jp-Notebook")

    def check(when):
        listing = page.locator(".jp-OutputArea-output", has_text="__global__ void sgemm_naive")
        try:                                     # JupyterLab draws outputs after the cells: give it time
            listing.first.wait_for(state="attached", timeout=60_000)
            page.locator("summary", has_text="Answer").first.wait_for(state="attached", timeout=30_000)
        except Exception:
            pass
        assert listing.count() >= 1, f"{when}: the naive kernel's code is not on the page"
        listing.first.scroll_into_view_if_needed()
        assert listing.first.is_visible(), when
        assert "kernels/sgemm/01_naive.cu, lines" in listing.first.inner_text(), when
        answers = page.locator("summary", has_text="Answer")
        assert answers.count() >= 3, f"{when}: the answers' summaries are not on the page"
        assert answers.first.is_visible()
        assert page.locator("summary", has_text="A solution").count() == 1, when
        text = notebook.inner_text()
        for raw in RAW:
            assert raw not in text, f"{when}: raw MyST markup on the page: {raw!r}"

    check("as committed, before running")
    answer = page.locator("details.gl-answer, details:has(> summary:text('Answer'))").first
    answer.locator("summary").click()
    assert answer.evaluate("d => d.open"), "an answer does not unfold"

    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
    deadline = time.time() + 600
    while True:
        prompts = _prompts(page)
        if prompts and all(p.strip() not in ("[*]:", "[ ]:") for p in prompts) and \
                page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count():
            break
        assert time.time() < deadline, f"the chapter did not finish running: {prompts}"
        time.sleep(1)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                          has_text="Traceback")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    assert page.locator(".jp-OutputArea-output", has_text="This run: the CPU emulator").count() == 1
    check("after running on the emulator")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "jupyterlab-chapter-2.png"), full_page=False)
    page.keyboard.press("Control+s")
    time.sleep(2)
    context.close()
    assert _status() == tracked, "running the chapter changed a file git tracks (or added one it does not ignore)"
    assert "This run: the CPU emulator" in (work / CHAPTER).read_text(), "the reader's run is saved in the workbook"
