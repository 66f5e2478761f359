import numpy
import pytest

import gemmlab as gl
from gemmlab import ops
from gemmlab.check import check_many, rel_error


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


def _gemm():
    return gl.ops.Gemm(m=30, n=20, k=50)


def test_a_wrong_kernel_that_overwrites_its_inputs_is_judged_against_what_it_was_given():
    """The reference comes from copies of the inputs taken before the launch: zeroing A and B after writing a
    wrong C does not make C right."""
    def wrong_and_erases(inputs, out):
        A, B = inputs
        out[...] = 0.5 * (A @ B)
        A[...] = 0
        B[...] = 0
    for checker in (lambda run: gl.check(run, _gemm()), lambda run: check_many({"k": run}, _gemm())["k"]):
        result = checker(wrong_and_erases)
        assert not result.ok and result.changed == (0, 1)
        assert result.verdict().endswith("False; it changed inputs[0], inputs[1], which it should only read")


def test_a_right_kernel_that_uses_an_input_as_scratch_passes_and_is_told_so():
    def right_with_scratch(inputs, out):
        A, B = inputs
        out[...] = A @ B
        A[...] = 7
    result = gl.check(right_with_scratch, _gemm())
    assert result.ok and result.changed == (0,) and "it changed inputs[0]" in str(result)


def test_each_of_several_runs_gets_the_inputs_as_drawn():
    def erases(inputs, out):
        inputs[0][...] = 0
        out[...] = 0
    results = check_many({"first": erases, "library": _gemm().library}, _gemm())
    assert not results["first"].ok and results["library"].ok and results["library"].changed == ()


def test_a_kernel_that_only_reads_its_inputs_says_nothing_more():
    result = gl.check(_gemm().library, _gemm())
    assert result.ok and result.changed == () and result.verdict().endswith(": True")


def test_every_copy_of_an_input_keeps_its_layout():
    """A kernel reads raw memory: the copies each run gets (and the reference's) keep the strides of the inputs as
    drawn, a column-major matrix column-major."""
    op = gl.ops.Gemv(m=30, n=20, layout="col")
    drawn = op.inputs(numpy.random.default_rng(0))
    seen = []

    def reads_raw_memory(inputs, out):
        seen.append(tuple(a.strides for a in inputs))
        op.library(inputs, out)
    assert gl.check(reads_raw_memory, op).ok
    assert check_many({"a": reads_raw_memory, "b": reads_raw_memory}, op)["b"].ok
    assert seen[0] == tuple(a.strides for a in drawn) and len(set(seen)) == 1 and drawn[0].flags.f_contiguous


@pytest.mark.parametrize("make", [lambda: numpy.asfortranarray(numpy.arange(12.0).reshape(3, 4)),
                                  lambda: numpy.arange(24.0).reshape(4, 6)[:, ::2],
                                  lambda: numpy.arange(24.0).reshape(4, 6)[::-1, 1:5],
                                  lambda: numpy.zeros(2, dtype=[("a", "f4"), ("b", "f4"), ("c", "f4")])[["a", "b"]]])
def test_a_kept_copy_has_its_originals_strides(make):
    from gemmlab.check import _same_layout
    a = make()
    k = _same_layout(a)
    assert k.strides == a.strides and numpy.array_equal(k, a) and not numpy.shares_memory(k, a)
