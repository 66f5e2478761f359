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
    on_disk = {f"{folder}/{p.stem}" for folder in ("chapters", "appendix") for p in (ROOT / folder).iterdir()
               if p.suffix in (".ipynb", ".md")}
    assert on_disk == set(files)


def test_config_is_static_with_colab_buttons():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["execute"]["execute_notebooks"] == "off"
    assert cfg["launch_buttons"]["colab_url"].startswith("https://colab.research.google.com")
    assert cfg["repository"]["url"].startswith("https://")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_one_setup_cell_pointing_at_the_repository(path):
    """(tests/test_colab.py holds the cell to the one gemmlab.colab makes from _config.yml, and runs it)"""
    nb = json.loads(path.read_text())
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    setups = [c for c in code if "import gemmlab as gl" in "".join(c["source"])]
    assert len(setups) == 1 and setups[0] is code[0], "exactly one setup cell, the first code cell"
    assert f'url = "{url}"' in "".join(setups[0]["source"]), \
        f"the setup cell must install from _config.yml's repository.url ({url})"
    assert f'gl.chapter("{path.stem}")' in "".join(setups[0]["source"]), \
        "the setup cell ends in gl.chapter(<this notebook's name>): its line, and the chapter's own record"


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
                "tune.plot", "pictures.")


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


# --- every reading mode: the built book, JupyterLab and Colab show the same chapter -------------------------

def _visible(markup: str) -> str:
    import html
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _markdown_cells(path):
    if path.suffix == ".md":
        return [(0, path.read_text())]
    nb = json.loads(path.read_text())
    return [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]


# what a plain CommonMark renderer (Colab's, JupyterLab's) leaves of MyST-only syntax
MYST_LEFTOVERS = [
    (re.compile(r'class="language-\{'), "a MyST directive (```{name})"),
    (re.compile(r"^:{3,}", re.M), "a MyST colon fence (:::)"),
    (re.compile(r"\{[a-z][\w:+-]*\}<code>"), "a MyST role ({name}`...`)"),
    (re.compile(r"^\([\w-]+\)=\s*$", re.M), "a MyST target ((label)=)"),
    (re.compile(r"^:(class|language|start-after|start-at|end-before|name|open|caption|lines):", re.M),
     "a directive's option line"),
    (re.compile(r"\{\{[^}]*\}\}"), "a MyST substitution"),
    (re.compile(r"(?<![\\\w])\{(literalinclude|admonition|dropdown|note|tip|warning|important|doc|ref|numref)\}"),
     "a MyST directive or role name"),
    (re.compile(r"^%", re.M), "a MyST comment (% ...), which the book drops and CommonMark prints"),
    (re.compile(r"^\+\+\+", re.M), "a MyST block break (+++)"),
    (re.compile(r"\[\^[\w-]+\]"), "a MyST footnote ([^name])"),
    (re.compile(r"\$\$\s*\([\w-]+\)"), "a labelled equation ($$ (label))"),
]


@pytest.mark.parametrize("path", CHAPTERS + [ROOT / "index.md"], ids=lambda p: p.name)
def test_markdown_reads_the_same_in_plain_commonmark(path):
    """Colab and JupyterLab render markdown cells as CommonMark (with raw HTML and $math$): no MyST-only
    syntax may be left for them to print raw; answers fold as <details> with a <summary>; links to other
    chapters are plain links to their notebooks."""
    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark")
    for i, src in _markdown_cells(path):
        out = md.render(src)
        for pattern, what in MYST_LEFTOVERS:
            hit = pattern.search(out) or pattern.search(_visible(out))
            assert not hit, f"{path.name}, cell {i}: {what} renders as raw text: {hit.group(0)!r}"
        assert src.count("<details") == src.count("</details>"), f"{path.name}, cell {i}: unbalanced <details>"
        assert out.count("<details") == out.count("<summary>") - out.count("<summary><"), f"{path.name}, cell {i}"
        for target in re.findall(r"\]\(([^)#\s]+\.ipynb)", src):
            assert (path.parent / target).is_file(), f"{path.name}, cell {i}: a link to {target}, which is not a chapter"


def _math_touching_code(src: str) -> list:
    """Inline math ($...$) with a code span right before or after it: JupyterLab's renderer then leaves the
    backticks on the page ($p\\cdot$`TILE` reads as "p·`TILE`"). Code spans are masked first, so a `$` in
    code is not math."""
    masked = re.sub(r"(`+)(.+?)\1", lambda m: "\x00" * len(m.group(0)), src, flags=re.S)
    return [src[max(0, m.start() - 12):m.end() + 12] for m in re.finditer(r"(?<![\\$])\$[^$\n]+?\$(?!\$)", masked)
            if "\x00" in masked[m.start() - 1:m.start()] + masked[m.end():m.end() + 1]]


@pytest.mark.parametrize("path", CHAPTERS + [ROOT / "index.md"], ids=lambda p: p.name)
def test_math_never_touches_a_code_span(path):
    for i, src in _markdown_cells(path):
        assert not _math_touching_code(src), f"{path.name}, cell {i}: {_math_touching_code(src)}"


def test_the_math_and_code_check_catches_what_jupyterlab_shows_raw():
    assert _math_touching_code("columns $p\\cdot$`TILE`, then") and _math_touching_code("`N`$^2$ loads")
    assert not _math_touching_code("set `$HOME` and $x^2$, `k` and $k$") and not _math_touching_code("$$a$$`b`")


def _listing_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith("gl.listing(")]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_kernel_listings_are_cell_outputs_made_from_the_files(path):
    """A kernel is shown by a cell whose output is the file's marked part (gl.listing), never by a
    literalinclude only the built book renders; the committed output is what the file holds now (nbval
    compares it again on every run: the cell is output-checked), and the book hides the call."""
    import gemmlab as gl
    nb = json.loads(path.read_text())
    for i, src in _markdown_cells(path):
        assert "literalinclude" not in src, f"{path.name}, cell {i}: show a kernel with gl.listing(...)"
    for c in _listing_cells(nb):
        src = "".join(c["source"])
        assert {"remove-input", "nbval-check-output"} <= set(c["metadata"].get("tags", [])), src
        shown = eval(src, {"gl": gl})                       # noqa: S307 -- the chapter's own one-line call
        results = [o for o in c["outputs"] if o["output_type"] == "execute_result"]
        assert len(results) == 1, f"{path.name}: {src}: refresh the chapter (no listing in its output)"
        data = results[0]["data"]
        assert "".join(data["text/plain"]) == repr(shown), f"{path.name}: {src}: the file changed; refresh"
        page = _visible("".join(data["text/html"]))
        for line in shown.lines:
            assert line.strip() in page, (src, line)


RUN_CAPTION = re.compile(r" on NVIDIA [^,]+, \d{4}-\d\d-\d\d: median of \d+ repetitions")


def _texts(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_committed_outputs_are_one_gpus_run_and_its_record_keeps_their_figures(path):
    """The committed outputs are one run on a Hopper GPU, as itself (its setup line names it), and every timing
    that run printed is in the chapter's own record with the same rows: what a reader without a GPU sees when
    they run the chapter (the record is shown instead of a measurement) is the committed figure."""
    from gemmlab import record
    from gemmlab.runtime.profiles import for_device
    from gemmlab.timing import Timings
    nb = json.loads(path.read_text())
    meta = nb["metadata"].get("gemmlab", {})
    gpu = meta.get("executed_on") or ""
    assert gpu.startswith(("NVIDIA H100", "NVIDIA H200")) and meta.get("run", "").startswith(path.stem), \
        f"refresh {path.name} on a Hopper GPU with python -m gemmlab refresh (executed on {gpu!r})"
    assert for_device(gpu) is not None, f"{gpu}: a GPU the profiles do not know"
    if record._committed_run(path.stem) is not None:
        assert record._committed_run(path.stem) == record.chapter_record_name(path.stem, record.slug(gpu)), \
            f"the newest record of {path.name}'s runs is not the run its outputs come from"
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert _texts(setup).startswith(f"This run: {gpu}, CUDA backend"), _texts(setup)[:120]
    assert "running as" not in _texts(setup).splitlines()[0], "a run as another GPU's profile is not the book's"
    live = [(c, line) for c in nb["cells"] if c["cell_type"] == "code" for line in _texts(c).splitlines()
            if RUN_CAPTION.search(line) and "RECORDED" not in line]
    for c in nb["cells"]:
        warned = [o for o in c.get("outputs", []) if o.get("name") == "stderr" and "Warning" in "".join(o["text"])]
        assert not warned, f"{path.name}: a committed warning: {''.join(warned[0]['text'])[:200]}"
        assert "RECORDED earlier, not measured here" not in _texts(c) or "; from " in _texts(c) and \
            "from results/)" not in _texts(c), \
            f"{path.name}: a recorded timing that does not say where it comes from"
    name = record.chapter_record_name(path.stem, record.slug(gpu))
    if not live and not (ROOT / "results" / f"{name}.json").is_file():
        return
    rec = record.load(name)
    assert rec["run"] == meta["run"], f"results/{name}.json is not from the run the notebook was committed from"
    kept = [Timings.from_dict(d, recorded=False) for k, d in rec["figures"].items() if k.startswith("timing: ")]
    for cell, line in live:
        found = [t for t in kept if t.caption() in line]
        assert found, f"{path.name}: {line[:100]!r}: a timing the run printed is not in results/{name}.json"
        if line.strip() == found[0].caption():              # the whole table printed: its rows are the record's
            text = _texts(cell)
            for row in repr(found[0]).splitlines()[1:]:
                assert row in text, f"{path.name}: the record's row {row!r} is not what the cell printed"


CODE_WIDTH = 88      # characters of a code cell's line that the book's column shows at a 1400 px window


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_cells_fit_the_book_s_column(path):
    nb = json.loads(path.read_text())
    long = [(i, len(line)) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
            for line in "".join(c["source"]).splitlines() if len(line) > CODE_WIDTH]
    assert not long, f"{path.name}: (cell, characters) of lines wider than the column: {long}"
    fenced = [(i, len(line)) for i, src in _markdown_cells(path) for block in re.findall(r"```.*?```", src, re.S)
              for line in block.splitlines() if len(line) > CODE_WIDTH]
    assert not fenced, f"{path.name}: (cell, characters) of a code block's lines wider than the column: {fenced}"


@pytest.mark.parametrize("path", [ROOT / "index.md", *sorted((ROOT / "appendix").glob("*.md"))], ids=lambda p: p.name)
def test_code_blocks_of_the_book_s_pages_fit_its_column(path):
    fenced = [len(line) for block in re.findall(r"```.*?```", path.read_text(), re.S)
              for line in block.splitlines() if len(line) > CODE_WIDTH]
    assert not fenced, f"{path.name}: code-block lines wider than the column: {fenced}"
