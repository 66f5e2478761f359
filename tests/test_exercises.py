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
