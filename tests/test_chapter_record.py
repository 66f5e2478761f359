"""A chapter's own record: what its cells measured in the run its outputs come from, shown by a backend that
cannot measure (one story per cell: the committed figure, saying where it is from)."""
import json
from pathlib import Path

import numpy
import pytest

import gemmlab as gl
from gemmlab import record, timing
from gemmlab.timing import Row, Timings


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    saved = dict(record._chapter)
    yield tmp_path
    record._chapter.clear()
    record._chapter.update(saved)


def _timings(label, ms):
    rows = [Row("mine", numpy.array([ms, ms, ms]), 2e9, 1e6), Row("cuBLAS", numpy.array([1.0, 1.0, 1.0]), 2e9, 1e6)]
    return Timings(label, rows, 3, True, {"gpu": "NVIDIA H200", "date": "2026-12-01T09:00:00Z"})


def _record_run(results, name, figures):
    """What `refresh` leaves on the H200: the chapter's figures under the run's token."""
    record._chapter.update(name=name, figures={}, token=f"{name} 2026-12-01T09:00:00Z", shown=None)
    for kind, key, data in figures:
        record.keep(kind, key, data)
    stored = results / f"chapter-{name}-{record.gpu_slug()}.json"
    data = json.loads(stored.read_text())
    # the record a reader's emulator finds is the book GPU's: name it so, as a run on the H200 would
    data["environment"].update(gpu="NVIDIA H200", date="2026-12-01T09:00:00Z")
    (results / f"chapter-{name}-nvidia-h200.json").write_text(json.dumps(data))
    record._chapter.update(name=None, figures=None, token=None, shown=None)


@pytest.mark.skipif(gl.on_gpu, reason="on a GPU the cells measure")
def test_without_a_gpu_a_timing_the_chapter_kept_is_shown_as_the_committed_run(results, capsys):
    _record_run(results, "05-cache-blocking", [("timing", "cache blocking", _timings("cache blocking", 2.0).to_dict())])
    (results / "ladder-nvidia-h200.json").write_text(json.dumps(
        {"environment": {"gpu": "NVIDIA H200", "date": "2026-11-30"}, "N": 4096, "steps": [],
         "timings": [_timings("cache blocking", 9.0).to_dict()]}))
    gl.chapter("05-cache-blocking")
    line = capsys.readouterr().out
    assert line.startswith("This run: the CPU emulator") and "NVIDIA H200 of 2026-12-01" in line
    assert "results/chapter-05-cache-blocking-nvidia-h200.json" in line
    t = timing.recorded("ladder-nvidia-h200", "cache blocking")
    assert t.recorded and t["mine"].median_ms == 2.0, "the chapter's own run, not the study's record"
    assert "this chapter's run on NVIDIA H200 of 2026-12-01" in t.caption()
    gl.chapter("06-register-tiling")              # another chapter, with no record: the study's, saying so
    capsys.readouterr()
    t = timing.recorded("ladder-nvidia-h200", "cache blocking")
    assert t["mine"].median_ms == 9.0 and "results/ladder-nvidia-h200.json" in t.caption()


def test_nothing_is_kept_outside_a_refresh_and_a_chapter_is_named_by_its_notebook(results):
    record._chapter.update(name="05-cache-blocking", figures=None, token=None, shown=None)
    record.keep("timing", "x", _timings("x", 1.0).to_dict())
    assert not list(results.glob("chapter-*.json")), "a reader's run keeps nothing"
    for bad in ("5", "../05-x", "05-Cache", "", None):
        with pytest.raises(ValueError):
            gl.chapter(bad)


@pytest.mark.skipif(gl.on_gpu, reason="on a GPU the cells measure")
def test_a_chapter_run_on_another_gpu_than_the_h200_shows_that_run(results, capsys):
    """A chapter whose committed outputs come from another GPU's run (no H200 record of it) shows that run's
    figures without a GPU, and names that GPU; a record made running as another profile is never it."""
    _record_run(results, "15-hopper", [("timing", "x", _timings("x", 2.0).to_dict())])
    (results / "chapter-15-hopper-nvidia-h200.json").rename(results / "chapter-15-hopper-nvidia-h100-80gb-hbm3.json")
    data = json.loads((results / "chapter-15-hopper-nvidia-h100-80gb-hbm3.json").read_text())
    data["environment"].update(gpu="NVIDIA H100 80GB HBM3", date="2026-12-07T10:00:00Z")
    (results / "chapter-15-hopper-nvidia-h100-80gb-hbm3.json").write_text(json.dumps(data))
    older = json.loads(json.dumps(data))
    older["environment"].update(date="2026-11-01T10:00:00Z")
    older["figures"]["timing: x"]["rows"][0]["median_ms"] = 7.0
    (results / "chapter-15-hopper-nvidia-a100-sxm4-80gb.json").write_text(json.dumps(
        {**older, "environment": {**older["environment"], "gpu": "NVIDIA A100-SXM4-80GB"}}))
    newer_as = json.loads(json.dumps(data))
    newer_as["environment"].update(date="2026-12-08T10:00:00Z")
    (results / "chapter-15-hopper-nvidia-h100-80gb-hbm3-as-t4.json").write_text(json.dumps(newer_as))
    assert record._committed_run("15-hopper") == "chapter-15-hopper-nvidia-h100-80gb-hbm3"
    assert record._committed_run("16-past-cublas") is None
    gl.chapter("15-hopper")
    line = capsys.readouterr().out
    assert "this chapter's run on NVIDIA H100 80GB HBM3 of 2026-12-07" in line, line
    assert "results/chapter-15-hopper-nvidia-h100-80gb-hbm3.json" in line
    assert record.kept("timing", "x")[0]["rows"][0]["median_ms"] == 2.0


def test_a_figure_the_run_did_not_measure_falls_back_to_the_study_record(results):
    _record_run(results, "07-dot", [("climb", "dot 16777216", {"n": 16777216, "timing": _timings("climb DOT", 1.0).to_dict()})])
    record._chapter.update(name="07-dot", shown=None)
    assert record.kept("climb", "dot 16777216")[0]["n"] == 16777216
    assert record.kept("climb", "dot 1024") is None and record.kept("timing", "climb DOT") is None


def test_timing_the_same_label_twice_with_other_cases_is_flagged(results):
    record._chapter.update(name="07-dot", figures={}, token="t", shown=None)
    record.keep("timing", "steps", _timings("steps", 1.0).to_dict())
    other = _timings("steps", 1.0).to_dict()
    other["rows"][0]["name"] = "someone else"
    with pytest.warns(RuntimeWarning, match="twice"):
        record.keep("timing", "steps", other)


@pytest.fixture
def no_chapter_after():
    saved = dict(record._chapter)
    yield
    record._chapter.clear()
    record._chapter.update(saved)


def test_chapter_5s_sweep_run_without_a_gpu_prints_the_committed_figures(capsys, no_chapter_after):
    """The sample of the class: chapter 5's sweep, which the committed chapter shows as measured on the H100,
    is the same table (every row) when a reader runs the chapter on the emulator, and says where it is from;
    the figures derived from it in the cells below come from the same run."""
    if gl.on_gpu:
        pytest.skip("on a GPU the cell measures")
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "05-cache-blocking.ipynb").read_text())
    # the table as the cell showed it: printed text, or the text form of a displayed gl.Table
    committed = next("".join(o.get("text", "")) or "".join(o.get("data", {}).get("text/plain", ""))
                     for c in nb["cells"] if c["cell_type"] == "code"
                     and "".join(c["source"]).startswith('t = gl.ladder.timed("cache blocking')
                     for o in c["outputs"] if o.get("name") == "stdout" or "text/plain" in o.get("data", {}))
    gl.chapter("05-cache-blocking")
    capsys.readouterr()
    t = gl.ladder.timed("cache blocking: TM x TN")
    shown = repr(t).splitlines()
    assert shown[0].startswith("RECORDED earlier, not measured here (no GPU in use; from this chapter's run on "
                               "NVIDIA H100 80GB HBM3")
    assert shown[1:] == committed.strip("\n").splitlines()[1:], "the emulator shows another run than the chapter's"
    assert shown[0].endswith(committed.splitlines()[0])


# each chapter's committed run (the H200's, or the newest run of the GPU its outputs come from)
RECORDS = sorted(record.RESULTS / f"{record._committed_run(p.stem)}.json"
                 for p in (Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb")
                 if record._committed_run(p.stem))


def _case(name: str):
    """'05_cache_blocking[TM=1,TN=1]' -> ('sgemm/05_cache_blocking', {'TM': 1, 'TN': 1})"""
    import re
    base, params = re.fullmatch(r"(\w+)\[(.*)\]", name).groups()
    return f"sgemm/{base}", {k: int(v) for k, v in (p.split("=") for p in params.split(",") if p)}


@pytest.mark.skipif(gl.on_gpu, reason="on a GPU the cells measure")
@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_every_figure_a_chapter_kept_is_what_its_cell_shows_without_a_gpu(path, capsys, no_chapter_after):
    """Each figure of a chapter's record, asked for as the chapter's cell asks for it, comes back from that
    record on the emulator (its key is the one the live cell kept it under), and says so."""
    import ast
    rec = json.loads(path.read_text())
    gl.chapter(rec["chapter"])
    capsys.readouterr()
    for key, data in rec["figures"].items():
        kind, _, which = key.partition(": ")
        if kind == "timing":
            t = timing.recorded("no-such-study", which)
            assert [r.median_ms for r in t.rows] == [r["median_ms"] for r in data["rows"]], key
            assert "this chapter's run" in t.caption(), key
        elif kind == "climb":
            family, _, arg = which.partition(" ")
            entry, t = gl.climb.now_or_recorded(family, arg if family == "sgemm" else ast.literal_eval(arg))
            assert entry == data and "this chapter's run" in t.caption(), key
        elif kind == "tensor":
            got = gl.tensor.now_or_recorded(which.split(","))
            assert got["shown_as"].startswith("this chapter's run"), key
            assert all(got[p] == data[p] for p in which.split(",") if p in data), key
        elif kind == "ceilings":
            model = gl.device.current()
            assert model.measured_copy == data["measured_copy"] and "this chapter's run" in gl.device.describe(model)
        elif kind == "resources":
            gl.ladder.resources_table([_case(name) for name in which.split(", ")])
            shown = capsys.readouterr().out
            assert "this chapter's run" in shown.splitlines()[0], key
            for name, r in data["rows"].items():
                assert any(line.startswith(name) and f"{r['registers']:>6}" in line for line in shown.splitlines()), name
        elif kind == "hopper-budget":
            head, _, ks = which.partition(", K = ")
            precision, n = head.split()
            got = gl.tensor.hopper_budget(n=int(n), ks=tuple(int(k) for k in ks.split(", ")), precision=precision)
            assert got["shown_as"].startswith("this chapter's run") and got["rows"] == data["rows"], key
            gl.tensor.print_budget(got)
            assert "this chapter's run" in capsys.readouterr().out.splitlines()[0], key
        else:
            pytest.fail(f"{path.name}: a figure of kind {kind!r} that no test reads back")
