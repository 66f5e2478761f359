import pytest

import gemmlab as gl


@pytest.mark.skipif(gl.on_gpu, reason="checks the no-GPU refusal")
def test_timing_refuses_without_a_gpu():
    with pytest.raises(gl.TimingUnavailable, match="results/"):
        gl.bench({"x": lambda: None})


@pytest.mark.gpu
def test_bench_times_kernel_and_library_round_robin():
    v = gl.registry.get("sgemm/01_naive")
    op = gl.ops.Gemm.square(1024)
    assert v.check(op).ok
    run = v.runner(op)
    inputs, out = op.inputs(__import__("numpy").random.default_rng()), op.output()
    t = gl.bench({"naive": lambda: run(inputs, out)}, op, reps=7, warmup=2)
    assert [r.name for r in t.rows] == ["naive", "cuBLAS"]
    for r in t.rows:
        assert len(r.times_ms) == 7 and r.median_ms > 0 and r.q1_ms <= r.median_ms <= r.q3_ms
        assert r.gflops == pytest.approx(op.flops / (r.median_ms * 1e-3) / 1e9)
    assert t.ratio("cuBLAS") == 1.0
    assert 0 < t.ratio("naive") < 1            # the naive kernel does not beat cuBLAS at N=1024
    assert "NVIDIA" in t.environment["gpu"] and "cuBLAS" in repr(t)


@pytest.mark.gpu
def test_bench_argument_errors():
    with pytest.raises(ValueError, match="nothing to time"):
        gl.bench({})
    with pytest.raises(ValueError, match="reps must be"):
        gl.bench({"x": lambda: None}, reps=0)
