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
    assert "no shared-memory hazards" in str(reports["solution"])
    assert "no shared-memory hazards" not in str(reports["no barriers"])
