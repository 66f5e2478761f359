import numpy
import pytest

import gemmlab as gl
from gemmlab import ops
from gemmlab.check import rel_error


def test_rel_error():
    ref = numpy.array([3.0, 4.0])
    assert gl.rel_error(ref, ref) == 0
    assert gl.rel_error(numpy.array([3.0, 4.5]), ref) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="shape"):
        gl.rel_error(numpy.zeros(3), ref)


def _host_matmul(inputs, out):
    A, B = (gl.to_host(a) for a in inputs)
    out[...] = gl.xp.asarray(A @ B)


def test_correct_run_passes_and_prints_a_stable_verdict():
    r = gl.check(_host_matmul, ops.Gemm(m=33, n=17, k=65))
    assert r.ok, str(r)
    assert r.verdict() == "GEMM N=33x17x65: rel. error < 1e-05: True"


def test_unwritten_outputs_are_caught_by_the_nan_poison():
    def forgets_last_row(inputs, out):
        A, B = (gl.to_host(a) for a in inputs)
        out[:-1] = gl.xp.asarray((A @ B)[:-1])
    r = gl.check(forgets_last_row, ops.Gemm(m=20, n=10, k=5))
    assert not r.ok and r.unwritten == 10
    assert "never written" in str(r)


def test_wrong_answer_fails():
    def off_by_a_bit(inputs, out):
        A, B = (gl.to_host(a) for a in inputs)
        out[...] = gl.xp.asarray(A @ B * 1.001)
    assert not gl.check(off_by_a_bit, ops.Gemm.square(16)).ok


def test_inputs_are_fresh_random_and_never_zero():
    op = ops.Gemm.square(64)
    a1, _ = op.inputs(numpy.random.default_rng())
    a2, _ = op.inputs(numpy.random.default_rng())
    a1, a2 = gl.to_host(a1), gl.to_host(a2)
    assert not numpy.array_equal(a1, a2)
    assert numpy.count_nonzero(a1) == a1.size
    assert numpy.isnan(gl.to_host(op.output())).all()


def test_the_relative_error_of_a_large_output_is_the_whole_arrays_and_a_nan_anywhere_shows():
    rng = numpy.random.default_rng(3)
    ref = rng.standard_normal((700, 1000))                     # (more than one of rel_error's chunks)
    out = (ref + 1e-7 * rng.standard_normal(ref.shape)).astype(numpy.float32)
    whole = numpy.linalg.norm(out.astype(numpy.float64) - ref) / numpy.linalg.norm(ref)
    assert abs(rel_error(out, ref) - whole) <= 1e-12 * whole
    assert abs(rel_error(out, ref, scale=2.0) - numpy.linalg.norm(out.astype(numpy.float64) - ref) / 2.0) < 1e-15
    out[-1, -1] = numpy.nan
    assert numpy.isnan(rel_error(out, ref))
