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
    # the clock each row ran at, and the loop's clock, power and limits (NVML; read, never set)
    state = t.gpu_state
    assert state["samples"] > 0 and 200 < state["sm_clock_mhz"] <= state["sm_clock_limit_mhz"] + 1
    assert 0 < state["power_w"] <= state["power_max_w"] and state["power_limit_w"] > 0
    assert state["power_kind"] in __import__("gemmlab.gpu_state").gpu_state.POWER_KINDS
    for r in t.rows:
        assert r.clock is not None and r.clock["min"] <= r.clock_mhz <= r.clock["max"] and r.clock["samples"] > 0
    assert "SM MHz" in repr(t) and "SM clock" in repr(t)
    back = gl.timing.Timings.from_dict(t.to_dict())
    assert back.gpu_state == state and back["naive"].clock == t["naive"].clock


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


def test_samples_go_to_the_case_that_was_running_and_a_short_one_gets_the_nearest():
    from gemmlab import gpu_state
    samples = [(t, {"sm_mhz": mhz}) for t, mhz in [(5, 1000), (15, 1500), (25, 1980), (35, 1200), (45, 1100)]]
    got = gpu_state.attribute(samples, {"a": [(10, 20), (40, 50)], "b": [(20, 30)]}, near_ns=0)
    assert [x["sm_mhz"] for x in got["a"]] == [1500, 1100] and [x["sm_mhz"] for x in got["b"]] == [1980]
    # a call shorter than the sampling period, with no sample inside: the nearest one, if near enough
    got = gpu_state.attribute(samples, {"short": [(31, 33)], "far": [(100, 102)]}, near_ns=5)
    assert [x["sm_mhz"] for x in got["short"]] == [1200] and got["far"] == []


def test_a_summary_says_the_clock_the_power_and_what_held_the_clock():
    from gemmlab import gpu_state
    readings = [{"sm_mhz": m, "power_w": w, "temperature_c": 60 + i, "reasons": r}
                for i, (m, w, r) in enumerate([(1980, 500.0, 0), (1755, 699.0, 0x4), (1830, 690.0, 0x4),
                                               (1700, 700.0, 0x4 | 0x20)])]
    s = gpu_state.summary(readings, {"sm_clock_limit_mhz": 1980, "power_limit_w": 700.0})
    assert s["sm_clock_mhz"] == pytest.approx(1792.5) and (s["sm_clock_min_mhz"], s["sm_clock_max_mhz"]) == (1700, 1980)
    assert s["power_max_w"] == 700.0 and s["temperature_max_c"] == 63
    assert s["reasons"] == {"power cap": 0.75, "software thermal slowdown": 0.25}
    line = gpu_state.describe(s)
    assert line.startswith("SM clock 1792 MHz (median; 1700 to 1980) of 1980, power 694 W")
    assert "of a 700 W limit" in line and "power cap (75% of samples)" in line
    assert gpu_state.summary([]) == {}
    assert "power_kind" not in s                     # readings that do not say what their power is (older records)


@pytest.mark.parametrize("kinds, kind, words", [(["instant"] * 3, "instant", "instantaneous readings: median"),
                                                (["instant", "average", "instant"], "average", "one-second average"),
                                                (["average"] * 3, "average", "one-second average")])
def test_a_summary_says_what_kind_of_power_reading_it_holds(kinds, kind, words):
    """NVML's power usage is a one-second average on Ampere and newer, longer than a timed call; a reading of the
    instantaneous draw says so, and a loop's summary is 'instant' only where every reading was."""
    from gemmlab import gpu_state
    readings = [{"sm_mhz": 1980, "power_w": 400.0 + i, "power_kind": k} for i, k in enumerate(kinds)]
    s = gpu_state.summary(readings)
    assert s["power_kind"] == kind and words in gpu_state.describe(s)


def test_a_power_reading_decodes_nvml_s_field_value():
    """The instantaneous draw comes from nvmlDeviceGetFieldValues (NVML_FI_DEV_POWER_INSTANT, an unsigned int of
    milliwatts in an 8-byte union); where that field fails, the one-second average, named as such."""
    from gemmlab import gpu_state

    class FakeNvml:
        def __init__(self, field_ok):
            self.field_ok = field_ok

        def nvmlDeviceGetFieldValues(self, handle, count, ref):
            field = ref._obj
            assert count == 1 and field.field_id == 186
            field.status, field.value_type = (0, 1) if self.field_ok else (3, 1)
            field.value = (0xDEAD << 32) | 512_345                 # the union's other bytes are not the value's
            return 0

        def nvmlDeviceGetPowerUsage(self, handle, ref):
            ref._obj.value = 120_000
            return 0
    assert gpu_state._power(FakeNvml(True), None) == (512.345, "instant")
    assert gpu_state._power(FakeNvml(False), None) == (120.0, "average")


def test_without_nvml_a_sampler_takes_no_samples_and_says_why(monkeypatch):
    from gemmlab import gpu_state
    monkeypatch.setattr(gpu_state, "_nvml", None)
    monkeypatch.setattr(gpu_state, "_why_not", "no NVIDIA management library (libnvidia-ml) on this machine")
    with gpu_state.Sampler() as sampler:
        pass
    assert sampler.samples == [] and "libnvidia-ml" in sampler.why_not


def _row(name, median, iqr, clock=None):
    row = {"name": name, "median_ms": median, "q1_ms": median - iqr / 2, "q3_ms": median + iqr / 2}
    return {**row, "clock": {"median": clock}} if clock else row


@pytest.mark.parametrize("a, b, ranked, why", [
    (_row("x", 1.00, 0.01), _row("y", 1.05, 0.01), True, ""),
    (_row("x", 1.00, 0.08), _row("y", 1.05, 0.01), False, "within the run's spread"),
    (_row("x", 1.00, 0.01, 1980), _row("y", 1.05, 0.01, 1755), False, "SM clocks differ more (1980 and 1755 MHz)"),
    (_row("x", 1.00, 0.01, 1980), _row("y", 1.05, 0.01, 1950), True, ""),
    (_row("x", 1.00, 0.01, 1980), _row("y", 1.05, 0.01), True, ""),       # a row without a clock: the spread rules
])
def test_two_rows_are_ranked_only_past_their_spread_and_at_comparable_clocks(a, b, ranked, why):
    got, said = gl.timing.rank(a, b)
    assert got == ranked and why in said
