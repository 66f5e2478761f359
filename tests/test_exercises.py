"""Every exercise's reference solution passes its check on the backend in use, and every scaffold, as given,
does not: an exercise can neither rot nor be solved by running it unchanged."""
from __future__ import annotations

import pytest

import gemmlab as gl


@pytest.mark.parametrize("name", list(gl.exercises.EXERCISES))
def test_the_solution_passes_and_the_scaffold_does_not(name, capsys):
    e = gl.exercises.get(name)
    assert e.scaffold_path.is_file() and e.solution_path.is_file()
    assert gl.exercises.check(name, gl.exercises.solution(name)) is True
    printed = capsys.readouterr().out
    assert printed.count(": True") == len(e.problems) and ": False" not in printed
    assert gl.exercises.check(name, gl.exercises.scaffold(name), quiet=True) is False


def test_a_kernel_that_does_not_compile_is_reported_not_raised(capsys):
    assert gl.exercises.check("gemm_bt", "__global__ void gemm_bt(float* A) { undefined_thing; }") is False
    assert "does not compile" in capsys.readouterr().out


def test_an_out_of_bounds_answer_is_caught_on_the_emulator(capsys):
    if gl.backend != "emulator":
        pytest.skip("on a GPU an illegal address ruins the CUDA context for the rest of the run")
    wrong = gl.exercises.solution("gemv_split").replace("if (row < M && lane == 0) y[row] = sum;", "y[row] = sum;")
    assert gl.exercises.check("gemv_split", wrong) is False
    assert "the emulator stopped it" in capsys.readouterr().out


def test_unknown_exercise():
    with pytest.raises(KeyError, match="no exercise 'nope'; there are: dot_strided"):
        gl.exercises.scaffold("nope")


def test_the_tiled_exercise_without_its_barriers_is_a_race_racecheck_names():
    """The scaffold's note: a missing barrier can leave the result right by luck; racecheck finds it."""
    import numpy
    e = gl.exercises.get("tiled_sgemm")
    p = gl.ops.Gemm(m=40, n=40, k=40)
    grid, block = e.launch(p)
    reports = {}
    for label, code in (("solution", gl.exercises.solution("tiled_sgemm")),
                        ("no barriers", gl.exercises.solution("tiled_sgemm").replace("__syncthreads();", ""))):
        kernel = gl.load(code=code).get("tiled_sgemm")
        inputs, out = p.inputs(numpy.random.default_rng(0)), p.output()
        reports[label] = gl.racecheck(kernel, grid, block, e.args(p, inputs, out))
    assert "no hazards" in str(reports["solution"])
    assert "no hazards" not in str(reports["no barriers"])


@pytest.mark.parametrize("draws", [0, -1, True, 2.0, "2"])
def test_a_check_on_no_draws_is_refused(draws):
    with pytest.raises(ValueError, match="draws is how many fresh inputs"):
        gl.exercises.check("axpy", gl.exercises.scaffold("axpy"), draws=draws)


def test_a_kernel_that_never_ends_costs_one_time_out_and_is_wrong(capsys, monkeypatch):
    """A loop with no side effects that never ends hangs a GPU; the emulator must not compile it away (C++
    compilers may delete such a loop) and, once stopped, must not wait out the limit at every other size."""
    if gl.on_gpu:
        pytest.skip("on a GPU the kernel would hang the device")
    import time
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", "1")
    code = gl.exercises.solution("axpy").replace("const int i =", "while (n > 0) {}\n    const int i =", 1)
    assert "while (n > 0) {}" in code
    start = time.monotonic()
    assert gl.exercises.check("axpy", code) is False
    out = capsys.readouterr().out
    assert out.count("ran longer than 1 s on the emulator") == 1 and "not run at the" in out
    assert time.monotonic() - start < 30
