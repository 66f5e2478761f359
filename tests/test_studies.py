"""The record producers as one abstraction (gemmlab.studies): the command line comes from their list, each
says what it needs before it runs, and each loads the record a chapter shows."""
import subprocess
import sys

import pytest

import gemmlab as gl
from gemmlab import studies
from gemmlab.__main__ import main

PRODUCERS = {"ceilings", "ladder", "climb", "tensor", "hopper", "fp8", "tune", "blas", "profile", "sanitize", "crosscheck", "sass",
             "emulator-bench"}


def test_every_record_producer_is_one_entry_and_one_command():
    assert set(studies.BY_NAME) == PRODUCERS
    for s in studies.STUDIES:
        with pytest.raises(SystemExit) as exit_:
            main([s.name, "--help"])
        assert exit_.value.code == 0, s.name
        assert s.writes.startswith("results/"), s.name


@pytest.mark.parametrize("name", ["ceilings", "ladder", "climb", "tensor", "blas", "sanitize", "crosscheck",
                                  "emulator-bench", "profile"])
def test_each_study_loads_the_record_chapters_show(name):
    rec = studies.BY_NAME[name].load()
    assert rec["environment"]["date"] and rec["shown_as"]


def test_a_study_says_what_it_needs_before_it_runs(monkeypatch, capsys):
    if gl.on_gpu:
        pytest.skip("this machine has a GPU")
    for name in ("ceilings", "ladder", "climb", "tensor", "blas"):
        with pytest.raises(SystemExit) as exit_:
            main([name])
        assert exit_.value.code == 2
        assert f"{name} needs a CUDA GPU" in capsys.readouterr().err
    monkeypatch.setattr(studies.shutil, "which", lambda tool: None)
    assert studies.missing(studies.BY_NAME["sass"]) == "sass needs nvcc and cuobjdump on PATH (the CUDA toolkit)"


def test_the_command_line_refuses_bad_numbers_in_words():
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "emulator-bench", "--rounds", "0"], capture_output=True,
                          text=True, timeout=120, env={**__import__("os").environ, "GEMMLAB_BACKEND": "emulator"})
    assert proc.returncode != 0 and "--rounds must be a whole number >= 1, got 0" in proc.stderr
    if not gl.on_gpu:
        return
    for bad in ("-1", "nan", "inf"):
        with pytest.raises(SystemExit, match=f"--budget must be a positive, finite number of seconds, got {bad}"):
            main(["tune", "sgemm/10_double_buffer", "--budget", bad])


def test_the_hopper_budget_splits_a_gap_it_can_recover_exactly():
    """On rows that are straight lines in K, the fits give back the lines, and the parts add up to the gap."""
    import matplotlib
    matplotlib.use("Agg")
    from gemmlab import tensor
    ks = (512, 1024, 2048, 4096)
    rows = [{"k": k, "tc06_ms": 0.020 + 0.050 * k / 1024, "cublas_ms": 0.015 + 0.048 * k / 1024, "write_ms": 0.018,
             "error": 1e-6, "timing": {"reps": 10}} for k in ks]
    r = {"n": 4096, "precision": "fp16", "ks": list(ks), "rows": rows, "tile": [128, 256], "sms": 132, "blocks_per_sm": 1,
         "environment": {"gpu": "a GPU", "date": "2026-12-01"}, "shown_as": "made up for the test"}
    b = tensor.budget(r)
    assert b["fit"]["tc06"]["fixed_ms"] == pytest.approx(0.020) and b["fit"]["cublas"]["per_1024_ms"] == pytest.approx(0.048)
    assert (b["tiles"], b["waves"]) == (512, 4) and b["busy_share"] == pytest.approx(512 / 528)
    assert b["gap_fit_ms"] == pytest.approx(b["gap_measured_ms"]) == pytest.approx(0.005 + 0.002 * 4)
    assert sum(b["parts_ms"].values()) == pytest.approx(b["gap_fit_ms"])
    assert b["parts_ms"] == pytest.approx({"fixed cost": 0.005, "main loop": 0.002 * 4})   # no share charged to a tail
    tensor.print_budget({**r, **b})
    tensor.plot_budget({**r, **b})
    for bad in ((512, 1024), (512, 1000, 2048), (0, 512, 1024)):
        with pytest.raises(ValueError, match="ks"):
            tensor.hopper_budget(ks=bad)


def test_the_transposes_cell_shows_this_chapters_run_without_a_gpu():
    """Chapters 8 and 9's transposes: live on a GPU; on the emulator the chapter's own run, else the BLAS record,
    each Timings saying which; a family without transposes is refused."""
    if gl.on_gpu:
        pytest.skip("on a GPU the cell measures")
    for family, n in (("GEMV", 1), ("GEMM", 3)):
        ts = gl.blasbench.transposed(family)
        assert len(ts) == n and all(t.recorded and t.library is not None for t in ts)
        assert all("RECORDED earlier" in t.caption() for t in ts)
    with pytest.raises(ValueError, match="family"):
        gl.blasbench.transposed("DOT")


def test_paths_and_commits_are_refused_before_any_work(tmp_path):
    """--emit, --emulator-outputs and --baseline are checked at once, in one line, not after minutes of work."""
    from gemmlab import paths
    from gemmlab.studies import emulator_bench
    for bad, why in ((tmp_path, "is a folder"), (tmp_path / "no" / "such" / "x.npz", "does not exist")):
        with pytest.raises(ValueError, match=why):
            paths.writable(str(bad))
    paths.writable(str(tmp_path / "fine.npz"))
    env = {**__import__("os").environ, "GEMMLAB_BACKEND": "emulator"}
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "crosscheck", "--emit", str(tmp_path / "no" / "x.npz")],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode != 0 and "--emit: the folder" in proc.stderr and "Traceback" not in proc.stderr
    for bad in ("no-such-commit-xyz", "-rf", ""):
        with pytest.raises(ValueError):
            emulator_bench.baseline_commit(bad)
    if (paths.REPO is not None) and (paths.REPO / ".git").exists():
        assert len(emulator_bench.baseline_commit("HEAD")) == 40
        proc = subprocess.run([sys.executable, "-m", "gemmlab", "emulator-bench", "--baseline", "no-such-commit-xyz"],
                              capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode != 0 and "--baseline: 'no-such-commit-xyz' names no commit" in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["ladder", "--reps", "0"], ["climb", "--reps", "-3"], ["tensor", "--reps", "x"],
                                  ["blas", "--passes", "0"]])
def test_repetitions_and_passes_are_counted_from_one(args, capsys):
    with pytest.raises(SystemExit):
        main(args)
    err = capsys.readouterr().err
    assert "must be a whole number >= 1" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["refresh", "rehearse"])
def test_a_cell_time_limit_under_a_second_is_refused(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--timeout", "0", "chapters/00-how-to-use.ipynb"])
    assert "--timeout is seconds per cell: a whole number >= 1, got 0" in capsys.readouterr().err


def test_the_command_line_is_made_from_the_studies_and_the_book_commands():
    """Every subcommand is one entry of studies.STUDIES or cli.COMMANDS, and each entry is a subcommand."""
    import argparse

    from gemmlab import cli, studies
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == [s.name for s in studies.STUDIES] + [c.name for c in cli.COMMANDS]
    assert {c.dest: c.help for c in sub._choices_actions} == {
        **{s.name: s.help for s in studies.STUDIES}, **{c.name: c.help for c in cli.COMMANDS}}
    for s in studies.STUDIES:
        assert "--record" in sub.choices[s.name]._option_string_actions


def test_the_ladder_so_far_shows_every_step_each_chapter_introduces():
    """A chapter's closing table holds all of its own steps (chapter 2: the naive and the tiled kernel), every
    earlier chapter's, none of a later one's, then cuBLAS; a chapter with no step is refused by name."""
    from gemmlab.studies import ladder
    data = ladder.recorded()
    chapters = list(dict.fromkeys(step["chapter"] for step in data["steps"]))
    for at, chapter in enumerate(chapters):
        labels = [row[0] for row in ladder.table(chapter, data)]
        wanted = [step["label"] for step in data["steps"] if step["chapter"] in chapters[:at + 1]]
        assert labels == wanted + ["cuBLAS"], chapter
    assert len([s for s in data["steps"] if s["chapter"] == "02-naive-and-tiled"]) == 2
    with pytest.raises(ValueError, match="no step of the SGEMM ladder is from chapter '07-dot'"):
        ladder.table("07-dot", data)


BAD_SETTINGS = [
    ("GEMMLAB_DEVICE", "T5", "GEMMLAB_DEVICE='T5' is not a device profile; the profiles are: T4"),
    ("GEMMLAB_BACKEND", "gpu", "GEMMLAB_BACKEND='gpu' is not a backend; use one of cuda, emulator"),
    ("GEMMLAB_EMULATOR_TIMEOUT", "soon", "GEMMLAB_EMULATOR_TIMEOUT='soon' must be a number of seconds >= 0"),
    ("GEMMLAB_EMULATOR_WORKERS", "0", "GEMMLAB_EMULATOR_WORKERS='0' must be a whole number of processes >= 1"),
    ("GEMMLAB_EMULATOR_MEMCHECK", "yes", "GEMMLAB_EMULATOR_MEMCHECK='yes' must be 1"),
    ("GEMMLAB_EMULATOR_INTERLEAVE", "2", "GEMMLAB_EMULATOR_INTERLEAVE='2' must be 0 (the default) or 1"),
    ("GEMMLAB_EMULATOR_RACECHECK", "on", "GEMMLAB_EMULATOR_RACECHECK='on' must be 0 (the default) or 1"),
    ("GEMMLAB_EMULATOR_TIMOUT", "5", "GEMMLAB_EMULATOR_TIMOUT is not a gemmlab setting; the settings are: "
                                     "GEMMLAB_BACKEND, GEMMLAB_DEVICE"),
]


@pytest.mark.parametrize("setting, value, says", BAD_SETTINGS, ids=[s[0] for s in BAD_SETTINGS])
@pytest.mark.parametrize("args", [["--help"], ["rehearse", "chapters/00-how-to-use.ipynb"]], ids=["help", "rehearse"])
def test_a_bad_setting_stops_the_command_line_in_one_line_before_any_work(setting, value, says, args):
    """A value a setting does not take, or a GEMMLAB_ name gemmlab does not read (a typo would be ignored), is
    one line naming it and what is legal, exit status 2 as argparse's errors, and nothing else runs or prints."""
    import os
    from gemmlab.paths import REPO
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEMMLAB_")}
    env[setting] = value
    done = subprocess.run([sys.executable, "-m", "gemmlab", *args], capture_output=True, text=True, env=env,
                          cwd=REPO or ".", timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout[-500:], done.stderr[-1500:])
    assert len(lines) == 1 and lines[0].startswith("python -m gemmlab: error: ") and says in lines[0], lines


@pytest.mark.parametrize("name", ["ladder", "climb", "tensor_cores", "past_cublas", "fp8"])
def test_a_timing_study_refuses_to_run_without_a_gpu(name):
    """A study that times kernels stops before any work, in one line, where no GPU is in use."""
    import importlib
    if gl.on_gpu:
        pytest.skip("a GPU is in use")
    study = importlib.import_module(f"gemmlab.studies.{name}")
    with pytest.raises(SystemExit, match="measured on a GPU"):
        study.run_all()
