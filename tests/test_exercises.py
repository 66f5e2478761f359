"""Every exercise's reference solution passes its check on the backend in use, and every scaffold, as given,
does not: an exercise can neither rot nor be solved by running it unchanged."""
from __future__ import annotations

import re

import pytest

import gemmlab as gl


@pytest.mark.parametrize("name", list(gl.exercises.EXERCISES))
def test_the_solution_passes_and_the_scaffold_does_not(name, capsys):
    e = gl.exercises.get(name)
    assert e.scaffold_path.is_file() and e.solution_path.is_file()
    assert gl.exercises.check(name, gl.exercises.solution(name)) is True
    printed = capsys.readouterr().out
    # (an exercise checked on the emulator before the GPU runs it prints its verdicts from both)
    assert printed.count(": True") == len(e.problems) * (2 if e.emulator_first and gl.on_gpu else 1)
    assert ": False" not in printed
    assert gl.exercises.check(name, gl.exercises.scaffold(name), quiet=True) is False


def test_an_exercise_the_gpu_cannot_run_is_checked_on_the_emulator_as_the_books_gpu(capsys, monkeypatch):
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    assert gl.exercises.check("mma_ldmatrix", gl.exercises.solution("mma_ldmatrix")) is True
    first, *rest = capsys.readouterr().out.splitlines()
    assert first == ("mma_ldmatrix: checked on the CPU emulator as an NVIDIA H200, 9.0 (mma_ldmatrix needs compute "
                     f"capability 8.0 (mma.sync m16n8k16 with FP16 operands); this is {gl.profiles.current().describe()})")
    assert first.endswith("Tesla T4, 7.5)")
    assert len(rest) == 4 and all(line.endswith(": True") for line in rest)
    wrong = gl.exercises.scaffold("mma_ldmatrix")
    assert gl.exercises.check("mma_ldmatrix", wrong) is False
    assert capsys.readouterr().out.count("outputs never written") == 4
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "several")          # (the child's launch refuses it)
    from gemmlab.variant import ElsewhereError
    with pytest.raises(ElsewhereError, match=r"mma_ldmatrix's check on the CPU emulator as an NVIDIA "
                                               r"H200, 9.0 failed: .*GEMMLAB_EMULATOR_WORKERS='several'"):
        gl.exercises.check("mma_ldmatrix", wrong, quiet=True)


@pytest.mark.skipif(gl.on_gpu, reason="a wrong pipeline can hang a GPU: the exercise's check runs it on the emulator")
def test_a_pipeline_that_refills_a_stage_too_soon_or_waits_on_the_wrong_phase_is_caught(capsys):
    right = gl.exercises.solution("tma_pipeline")
    early = right.replace("bar_wait(smem(&empty[s]), (i / STAGES) & 1);", "")
    stale = right.replace("bar_wait(smem(&full[s]), (i / STAGES) & 1);", "bar_wait(smem(&full[s]), 1);")
    assert early != right and stale != right
    assert gl.exercises.check("tma_pipeline", early, draws=1) is False
    said = capsys.readouterr().out
    assert "the emulator stopped it: deadlock: no thread can go on in kernel tma_pipeline" in said
    assert re.search(r"wait at .*hopper.cuh:\d+ on the mbarrier at shared address \d+ for the phase of parity",
                     said)
    # the first phase's wait returns at once: the tile is read before it lands, and nothing ever waits for it
    assert gl.exercises.check("tma_pipeline", stale, draws=1) is False
    assert ("a TMA load into this block's shared memory that no thread of the block waited for"
            in capsys.readouterr().out.splitlines()[0])


def test_on_a_gpu_a_pipeline_runs_there_only_once_the_emulator_found_it_right(capsys, monkeypatch):
    monkeypatch.setattr(gl.exercises, "on_gpu", True)  # (here the "GPU" is the emulator too: the order is tested)
    assert gl.exercises.check("tma_pipeline", gl.exercises.solution("tma_pipeline")) is True
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("tma_pipeline: checked on the CPU emulator as an NVIDIA H200, 9.0 (first: a wait that never "
                        "ends, which would hang this GPU, is named there)")
    assert lines[5] == "tma_pipeline: and on the GPU in use:" and len(lines) == 10
    assert all(line.endswith(": True") for line in lines[1:5] + lines[6:])
    assert gl.exercises.check("tma_pipeline", gl.exercises.scaffold("tma_pipeline")) is False
    assert "and on the GPU in use" not in capsys.readouterr().out


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
