"""The book's files agree with each other: packaging, environment, notebooks, configuration."""
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_lists_what_pyproject_lists():
    project = _pyproject()["project"]
    wanted = set(project["dependencies"])
    for extra in ("gpu", "dev"):
        wanted |= set(project["optional-dependencies"][extra])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {p for p in pip if not p.startswith("-e")}
    assert listed == wanted, f"only in environment.yml: {listed - wanted}; only in pyproject: {wanted - listed}"


def test_pinned_dev_tools_are_in_the_constraints():
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    pins = {k.lower().replace("_", "-"): v for k, v in pins.items()}
    for req in _pyproject()["project"]["optional-dependencies"]["dev"]:
        if "==" in req:
            name, version = req.split("==")
            assert pins.get(name.lower()) == version, f"{req} is not what constraints.txt pins"


def test_toc_lists_every_chapter_and_only_existing_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    for f in files:
        assert any((ROOT / f"{f}{ext}").is_file() for ext in (".ipynb", ".md")), f
    on_disk = {f"chapters/{p.stem}" for p in (ROOT / "chapters").iterdir() if p.suffix in (".ipynb", ".md")}
    assert on_disk == set(files)


def test_config_is_static_with_colab_buttons():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["execute"]["execute_notebooks"] == "off"
    assert cfg["launch_buttons"]["colab_url"].startswith("https://colab.research.google.com")
    assert cfg["repository"]["url"].startswith("https://")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_one_setup_cell_pointing_at_the_repository(path):
    nb = json.loads(path.read_text())
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    setups = [c for c in code if "import gemmlab as gl" in "".join(c["source"])]
    assert len(setups) == 1 and setups[0] is code[0], "exactly one setup cell, the first code cell"
    assert f"git+{url}" in "".join(setups[0]["source"]), \
        f"the setup cell must install from _config.yml's repository.url ({url})"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_outputs_come_from_a_gpu_run(path):
    """Committed outputs are those of `python -m gemmlab refresh` on a GPU, every code cell run in order."""
    nb = json.loads(path.read_text())
    meta = nb["metadata"].get("gemmlab", {})
    assert "NVIDIA" in (meta.get("executed_on") or ""), "refresh the notebook on a GPU (python -m gemmlab refresh)"
    counts = [c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1)), "every code cell executed once, top to bottom"
    for c in nb["cells"]:
        for out in c.get("outputs", []):
            assert out.get("output_type") != "error", f"an error output is committed in {path.name}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_code_cell_declares_whether_nbval_checks_it(path):
    nb = json.loads(path.read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            tags = set(c["metadata"].get("tags", []))
            assert tags & {"nbval-check-output", "nbval-ignore-output"}, "".join(c["source"])[:60]


def test_wheel_carries_kernels_and_results(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True, timeout=300)
    wheel = next(tmp_path.glob("gemmlab-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "gemmlab/__init__.py" in names
    assert "gemmlab/kernels/sgemm/01_naive.cu" in names
    assert "gemmlab/emulator/gemmlab_emu.h" in names and "gemmlab/emulator/include/cuda_runtime.h" in names
    assert any(re.match(r"gemmlab/results/ceilings-.*\.json", n) for n in names)


FIGURE_CALLS = ("roofline.plot", "scaling_plot", "heatmap(", "tilemap.figure", "ladder.show", "geometry_heatmap",
                "tune.plot")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_cells_that_draw_have_their_figure(path):
    """A plotting cell whose committed output has no image was executed without a notebook backend."""
    nb = json.loads(path.read_text())
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "code" and any(call in src for call in FIGURE_CALLS):
            kinds = {k for out in c.get("outputs", []) for k in out.get("data", {})}
            assert "image/png" in kinds, f"no figure in the output of: {src[:60]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_explorers_are_committed_as_html_and_no_widget_state(path):
    """The book draws what is in the page: no saved widget (its manager would come from a CDN), and
    every explorer cell's output is the explorer's self-contained HTML, made by the current code."""
    from gemmlab import explorers
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], "saved widget state: refresh with `python -m gemmlab refresh`"
    for c in nb["cells"]:
        src = "".join(c["source"])
        kinds = [k for out in c.get("outputs", []) for k in out.get("data", {})]
        assert "application/vnd.jupyter.widget-view+json" not in kinds, src[:60]
        if c["cell_type"] == "code" and "gl.explorers." in src:
            html = "".join("".join(out["data"]["text/html"]) for out in c["outputs"] if "text/html" in out.get("data", {}))
            assert html.count("GLExplorers.mount(") == 1, src[:60]
            assert explorers.script() in html, f"{src[:60]}: made by older explorer code; refresh the chapter on a GPU"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_figures_are_opaque_so_the_dark_theme_cannot_hide_their_ink(path):
    """The book has a dark theme: a figure with a transparent background would show black axes and text on
    a near-black page. Every committed figure must be opaque, and no wider than two book columns."""
    import base64
    import io
    import matplotlib.image as mpimg
    nb = json.loads(path.read_text())
    for c in nb["cells"]:
        for out in c.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                img = mpimg.imread(io.BytesIO(base64.b64decode(png)), format="png")
                assert img.shape[-1] == 3 or img[..., 3].min() == 1.0, "".join(c["source"])[:60]
                assert img.shape[1] <= 1400, (img.shape, "".join(c["source"])[:60])
