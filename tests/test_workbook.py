"""workbook/: the reader runs copies of the chapters, never the committed ones, and never loses an edit."""
import json
import subprocess

import pytest
import sys
from pathlib import Path

from gemmlab import workbook

ROOT = Path(__file__).resolve().parents[1]


def _nb(*sources, outputs=()):
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": list(outputs),
              "source": s} for i, s in enumerate(sources)]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def _edit(path: Path, source: str):
    nb = json.loads(path.read_text())
    nb["cells"][0]["source"] = source
    path.write_text(json.dumps(nb))


def _run(path: Path):                       # what running a cell does to a notebook: outputs, not sources
    nb = json.loads(path.read_text())
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "emulator\n"}]
    nb["cells"][0]["execution_count"] = 1
    path.write_text(json.dumps(nb))


def _synced(tmp_path, **chapters):
    """A chapters/ folder holding these notebooks (name -> the source of its one cell), already copied into
    a workbook/ beside it once: (chapters, workbook)."""
    ch, work = tmp_path / "chapters", tmp_path / "workbook"
    ch.mkdir()
    for name, source in (chapters or {"00-a": "print(1)"}).items():
        (ch / f"{name}.ipynb").write_text(_nb(source))
    workbook.sync(ch, work, say=lambda s: None)
    return ch, work


def test_a_first_sync_copies_every_chapter_and_a_second_changes_nothing(tmp_path):
    ch, work = tmp_path / "chapters", tmp_path / "workbook"
    ch.mkdir()
    (ch / "00-a.ipynb").write_text(_nb("print(1)"))
    (ch / "01-b.ipynb").write_text(_nb("print(2)"))
    assert workbook.sync(ch, work, say=lambda s: None) == {"00-a.ipynb": "new", "01-b.ipynb": "new"}
    assert (work / "00-a.ipynb").read_text() == (ch / "00-a.ipynb").read_text()
    _run(work / "00-a.ipynb")
    assert workbook.sync(ch, work, say=lambda s: None) == {"00-a.ipynb": "same", "01-b.ipynb": "same"}
    assert "emulator" in (work / "00-a.ipynb").read_text(), "a run of the reader's copy is theirs to keep"
    (work / "01-b.ipynb").unlink()                      # a copy the reader deleted comes back
    assert workbook.sync(ch, work, say=lambda s: None)["01-b.ipynb"] == "new"


def test_a_changed_chapter_replaces_a_copy_that_was_only_run(tmp_path):
    ch, work = _synced(tmp_path)
    _run(work / "00-a.ipynb")
    (ch / "00-a.ipynb").write_text(_nb("print('new')"))      # git pull
    said = []
    assert workbook.sync(ch, work, say=said.append) == {"00-a.ipynb": "updated"}
    assert (work / "00-a.ipynb").read_text() == (ch / "00-a.ipynb").read_text() and said


def test_an_edited_copy_is_kept_unless_the_reader_says_replace_and_then_it_is_kept_aside(tmp_path):
    ch, work = _synced(tmp_path)
    _edit(work / "00-a.ipynb", "print('my own experiment')")
    (ch / "00-a.ipynb").write_text(_nb("print('new')"))
    said, asked = [], []
    assert workbook.sync(ch, work, say=said.append) == {"00-a.ipynb": "kept"}      # nobody to ask: kept
    assert "my own experiment" in (work / "00-a.ipynb").read_text() and "--replace 00-a" in said[0]
    assert workbook.sync(ch, work, say=said.append, ask=lambda q: asked.append(q) or False) == {"00-a.ipynb": "kept"}
    assert asked and "edits" in asked[0]
    assert workbook.sync(ch, work, say=said.append, ask=lambda q: True) == {"00-a.ipynb": "replaced"}
    assert (work / "00-a.ipynb").read_text() == (ch / "00-a.ipynb").read_text()
    kept = list((work / ".previous").glob("00-a-*.ipynb"))
    assert len(kept) == 1 and "my own experiment" in kept[0].read_text()
    assert workbook.sync(ch, work, say=said.append) == {"00-a.ipynb": "same"}


def test_replace_by_name_and_a_copy_that_is_no_notebook_any_more(tmp_path):
    ch, work = _synced(tmp_path)
    (work / "00-a.ipynb").write_text("{ not json")                  # a broken save counts as the reader's
    (ch / "00-a.ipynb").write_text(_nb("print(2)"))
    assert workbook.sync(ch, work, say=lambda s: None)["00-a.ipynb"] == "kept"
    assert workbook.sync(ch, work, say=lambda s: None, replace=("00-a",))["00-a.ipynb"] == "replaced"
    assert (work / "00-a.ipynb").read_text() == (ch / "00-a.ipynb").read_text()


def test_replace_resets_an_edited_copy_of_an_unchanged_chapter_and_refuses_unknown_names(tmp_path):
    ch, work = _synced(tmp_path)
    _edit(work / "00-a.ipynb", "print('broken beyond repair')")
    assert workbook.sync(ch, work, say=lambda s: None) == {"00-a.ipynb": "same"}
    assert workbook.sync(ch, work, say=lambda s: None, replace=("00-a",)) == {"00-a.ipynb": "replaced"}
    assert (work / "00-a.ipynb").read_text() == (ch / "00-a.ipynb").read_text()
    with pytest.raises(ValueError, match="no chapter 00-b"):
        workbook.sync(ch, work, say=lambda s: None, replace=("00-b",))


def test_a_chapter_gone_from_the_book_is_said_and_an_interrupted_sync_remembers_what_it_copied(tmp_path):
    ch, work = _synced(tmp_path, **{name: f"print('{name}')" for name in ("00-a", "01-b", "02-c")})
    (ch / "02-c.ipynb").unlink()
    said = []
    assert workbook.sync(ch, work, say=said.append)["02-c.ipynb"] == "gone"
    assert (work / "02-c.ipynb").is_file() and "no longer a chapter" in said[0]
    _edit(work / "01-b.ipynb", "print('mine')")
    (ch / "00-a.ipynb").write_text(_nb("print('a, new')"))
    (ch / "01-b.ipynb").write_text(_nb("print('b, new')"))

    def interrupted(question):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        workbook.sync(ch, work, say=lambda s: None, ask=interrupted)
    # 00-a was brought up to date before the question about 01-b: the manifest knows it, so it is not "edited"
    assert workbook.sync(ch, work, say=lambda s: None) == {"00-a.ipynb": "same", "01-b.ipynb": "kept"}


def test_the_command_line_and_git_know_the_workbook():
    out = subprocess.run([sys.executable, "-m", "gemmlab", "workbook", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "--replace" in out.stdout
    ignored = subprocess.run(["git", "check-ignore", "-q", "workbook/00-how-to-use.ipynb"], cwd=ROOT)
    assert ignored.returncode == 0, "workbook/ must be ignored by git"
    assert "lab:" in (ROOT / "Makefile").read_text() and "gemmlab lab" in (ROOT / "Makefile").read_text()


def test_lab_opens_the_first_chapter_of_the_workbook_and_adds_allow_root_as_root(tmp_path, monkeypatch):
    ch, work = tmp_path / "chapters", tmp_path / "workbook"
    ch.mkdir()
    (ch / "00-how-to-use.ipynb").write_text(_nb("print(1)"))
    monkeypatch.setattr(workbook, "folders", lambda: (ch, work))
    monkeypatch.setattr(workbook.shutil, "which", lambda name, path=None: "/opt/jupyter/bin/jupyter")
    started = []
    monkeypatch.setattr(workbook.os, "execv", lambda prog, argv: started.append((prog, argv, Path.cwd())))
    monkeypatch.chdir(tmp_path)
    for uid, root in ((0, True), (1000, False)):
        started.clear()
        monkeypatch.setattr(workbook.os, "geteuid", lambda uid=uid: uid)
        assert workbook.main(lab=True, lab_args=("--no-browser",)) is None
        prog, argv, cwd = started[0]
        assert prog == "/opt/jupyter/bin/jupyter" and argv[1:3] == ["lab", "00-how-to-use.ipynb"] and "--no-browser" in argv and cwd == work
        assert ("--allow-root" in argv) == root
        monkeypatch.chdir(tmp_path)
    assert (work / "00-how-to-use.ipynb").is_file()


def test_a_damaged_manifest_keeps_every_copy_and_says_so(tmp_path):
    from gemmlab import workbook
    chapters, work = tmp_path / "chapters", tmp_path / "workbook"
    chapters.mkdir()
    nb = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (chapters / "01-a.ipynb").write_text(json.dumps(nb))
    workbook.sync(chapters, work, say=lambda s: None)
    nb["cells"][0]["source"] = "x = 2"                              # the book changes the chapter
    (chapters / "01-a.ipynb").write_text(json.dumps(nb))
    (work / workbook.MANIFEST).write_text('{"01-a.ipynb": {"from"')   # and the manifest is cut short
    said = []
    assert workbook.sync(chapters, work, say=said.append) == {"01-a.ipynb": "kept"}
    assert any("could not be read" in s for s in said)
    assert json.loads((work / "01-a.ipynb").read_text())["cells"][0]["source"] == "x = 1"    # nothing lost
