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


@pytest.mark.skipif(gl.on_gpu, reason="checks the no-GPU fallback")
def test_without_a_gpu_bench_shows_the_recorded_gpu_figure_and_says_so():
    t = gl.bench({}, gl.ops.Gemm.square(4096), fallback="ceilings-nvidia-h200")
    assert t.recorded and repr(t).startswith("RECORDED earlier, not measured here")
    assert "NVIDIA H200" in repr(t) and t.library.gflops > 10000
    with pytest.raises(gl.TimingUnavailable, match="no recorded timing 'GEMM N=999'"):
        gl.bench({}, gl.ops.Gemm.square(999), fallback="ceilings-nvidia-h200")


@pytest.mark.gpu
def test_timings_survive_a_round_trip_through_results():
    t = gl.bench({}, gl.ops.Dot(n=1 << 20), reps=5)
    back = gl.timing.Timings.from_dict(t.to_dict())
    assert back.recorded and back.records()[0]["median_ms"] == t.records()[0]["median_ms"]


@pytest.mark.gpu
def test_sweep_runs_one_bench_per_point():
    results = gl.sweep([1 << 16, 1 << 18], lambda n: {}, lambda n: gl.ops.Dot(n=n), reps=3, desc="dot sizes")
    assert [r.label for r in results] == ["DOT n=65536", "DOT n=262144"]
    assert all(r.library.median_ms > 0 for r in results)
