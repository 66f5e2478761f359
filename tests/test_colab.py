"""The setup cell, tested as far as it can be without Colab: every chapter carries the one the library makes
from _config.yml; run in a fresh environment as Colab runs it (``google.colab`` imported), it installs
``gemmlab[gpu]`` from a ``git+file://`` clone of this tree, with uv and with pip, and imports it; and with an
address nothing answers, it stops in one line that says what to do, before the import."""
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from gemmlab import colab
from gemmlab.paths import REPO

pytestmark = pytest.mark.skipif(REPO is None, reason="the chapters are in the source tree, not in a wheel")
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb")) if REPO else []


def _first_code(path):
    return next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_starts_with_the_setup_cell_made_from_the_config(path):
    assert "".join(_first_code(path)["source"]) == colab.cell(path.stem), \
        f"{path.name}: run `python -m gemmlab generate` (the setup cell follows _config.yml's repository.url)"


def test_the_repository_url_is_the_one_setting_a_publisher_changes(tmp_path):
    (tmp_path / "_config.yml").write_text((REPO / "_config.yml").read_text().replace(
        colab.config_url(), "https://example.org/someone/gemmlab-fork"))
    url = colab.config_url(tmp_path)
    assert url == "https://example.org/someone/gemmlab-fork"
    assert f'url = "{url}"' in colab.cell("02-naive-and-tiled", url)
    # the address is written nowhere else in the chapters, so nothing else would need changing
    here = colab.config_url()
    for path in CHAPTERS:
        cells = json.loads(path.read_text())["cells"]
        assert sum(here in "".join(c["source"]) for c in cells) == 1, path.name
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(ValueError, match="repository.url"):
        colab.config_url(tmp_path)


def _clone_of_this_tree(tmp: Path) -> Path:
    """A git repository of the working tree's files as they are now (committed or not), for git+file://."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    dest = tmp / "book"
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the tree under test"]):
        subprocess.run(git + args, cwd=dest, check=True, capture_output=True)
    return dest


def _colab_module(tmp: Path) -> Path:
    """A stand-in for Colab's ``google.colab`` package: the cell only asks whether it is imported."""
    for folder in (tmp / "fake" / "google", tmp / "fake" / "google" / "colab"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    return tmp / "fake"


def _environment(path: str, pythonpath: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GEMMLAB_", "PYTHON", "VIRTUAL_ENV"))}   # the machine's network settings stay
    system = Path("/etc/ssl/certs/ca-certificates.crt")       # uv trusts what the system trusts, as pip does
    if "SSL_CERT_FILE" not in env and system.is_file():
        env["SSL_CERT_FILE"] = str(system)
    return {**env, "PATH": path, "PYTHONPATH": str(pythonpath)}


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_setup_cell_installs_the_library_from_a_git_url(tmp_path, installer):
    """uv: the fresh environment has no pip, so only uv can have installed it; pip: no uv on the PATH."""
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if installer == "uv" and uv is None:
        pytest.skip("uv is not installed here (make installs it with the dev extra)")
    book = _clone_of_this_tree(tmp_path)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=installer == "pip")
    python = env_dir / "bin" / "python"
    bins = tmp_path / "bin"                          # uv, for the uv case: the system's folders have none
    bins.mkdir()
    assert not any(shutil.which("uv", path=d) for d in ("/usr/bin", "/bin"))
    if installer == "uv":
        (bins / "uv").symlink_to(uv)
    # file://localhost/...: the form pip 23 takes too (it refuses a git+file:/// address with no host)
    code = colab.cell("00-how-to-use", url=f"file://localhost{book}") + "\nprint('imported from', gl.__file__)\n"
    done = subprocess.run([str(python), "-c", "import google.colab\n" + code], cwd=tmp_path,
                          env=_environment(f"{env_dir / 'bin'}:{bins}:/usr/bin:/bin", _colab_module(tmp_path)),
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "This run:" in done.stdout, done.stdout
    where = done.stdout.split("imported from", 1)[1].strip()
    assert where.startswith(str(env_dir)) and "site-packages" in where, where
    assert (shutil.which("pip", path=str(env_dir / "bin")) is None) == (installer == "uv")


def test_the_setup_cell_stops_in_one_line_when_it_cannot_install(tmp_path):
    """As a notebook runs it (an IPython kernel): the error is IPython's one-line UsageError, and the cell
    stops before `import gemmlab` (whose failure would be the reader's next, less helpful, line)."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    missing = f"file://{tmp_path}/no-such-repository"
    # this kernel has gemmlab installed: the cell is run as where it is not (Colab before its first install)
    code = colab.cell("00-how-to-use", url=missing).replace("import gemmlab as gl", "REACHED = True") \
        .replace('importlib.util.find_spec("gemmlab") is None', "True")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import sys, types; sys.modules['google.colab'] = types.ModuleType('colab')"),
        nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell("print(REACHED)")])
    with pytest.raises(CellExecutionError):
        NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    shown = [o for o in nb.cells[1].outputs]
    assert len(shown) == 1 and shown[0].get("name") == "stderr", shown
    line = shown[0]["text"]
    assert line.startswith(f"UsageError: could not install gemmlab from {missing} ("), line
    assert line.count("\n") == 1 and "make lab" in line, line
    assert nb.cells[2].outputs == [], "Run All stops at the setup cell"


def test_the_setup_cell_does_not_install_again_where_gemmlab_is_there(tmp_path):
    """Run again on Colab (or where the library is installed), the cell imports it and installs nothing: an
    address nothing answers would stop it otherwise."""
    code = colab.cell("00-how-to-use", url=f"file://{tmp_path}/no-such-repository")
    fake = "import sys, types\nsys.modules['google.colab'] = types.ModuleType('colab')\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMMLAB_")}
    done = subprocess.run([sys.executable, "-c", fake + code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0 and "This run:" in done.stdout, done.stderr[-2000:]
