"""The autotuner's search (python -m gemmlab tune): its order, its budget, what it does with refusals and
wrong results. The GPU's timings are replaced here by a fake; the search logic is what is tested."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

import gemmlab as gl
from gemmlab import registry, tune
from gemmlab.check import CheckResult

KEY = "sgemm/10_double_buffer"


def test_order_tries_the_defaults_first_then_a_fixed_shuffle_of_everything():
    v = registry.get(KEY)
    first, again = tune.order(v, seed=3), tune.order(v, seed=3)
    assert first == again and first[0] == v.resolve()
    assert sorted(map(str, first)) == sorted(map(str, v.choices())) and len(first) == len(v.choices())
    assert tune.order(v, seed=4) != first


@pytest.fixture
def fake_gpu(monkeypatch):
    """Configurations 'run' instantly; BK = 32 ones are refused by the 'compiler', GROUP = 16 ones compute
    wrong results, and a configuration's time is a made-up function of its parameters."""
    def runner(self, problem, **params):
        full = self.resolve(**params)
        if full["BK"] == 32:
            raise gl.CompileError("ptxas error: uses too much shared data")
        return lambda inputs, out: None

    def check_many(runs, problem, tolerance, seed=None):
        (name,) = runs
        ok = "GROUP=16" not in name
        return {name: CheckResult(name, 1e-7 if ok else 0.5, tolerance, 0, 1)}

    def bench(cases, problem, library=False, reps=5, warmup=1, label=None):
        (name,) = cases
        ms = 1.0 + (hash(name) % 1000) / 1000
        return {name: SimpleNamespace(median_ms=ms)}

    monkeypatch.setattr(registry.Variant, "runner", runner)
    monkeypatch.setattr(tune, "check_many", check_many)
    monkeypatch.setattr(tune, "bench", bench)


def test_the_search_stops_at_the_budget_and_says_how_much_it_left(fake_gpu):
    ticks = itertools.count()
    found = tune.search(KEY, gl.ops.Gemm.square(256), budget_s=40, progress=False, clock=lambda: next(ticks))
    done = len(found["tried"]) + len(found["refused"]) + len(found["wrong"])
    assert 30 <= done <= 40 and found["untried"] == found["space"] - done
    assert [x["median_ms"] for x in found["tried"]] == sorted(x["median_ms"] for x in found["tried"])


def test_refused_and_wrong_configurations_are_kept_apart_never_timed(fake_gpu):
    found = tune.search(KEY, gl.ops.Gemm.square(256), budget_s=1e9, progress=False)
    assert found["untried"] == 0
    assert found["refused"] and all(x["params"]["BK"] == 32 and "too much shared" in x["reason"] for x in found["refused"])
    assert found["wrong"] and all(x["params"]["GROUP"] == 16 for x in found["wrong"])
    assert all(x["params"]["BK"] != 32 and x["params"]["GROUP"] != 16 for x in found["tried"])
    assert len(found["tried"]) + len(found["refused"]) + len(found["wrong"]) == found["space"]


def test_sizes_and_the_gpu():
    assert tune.problem_for(KEY, "4096") == gl.ops.Gemm(m=4096, n=4096, k=4096)
    assert tune.problem_for(KEY, "3000x5000x2000") == gl.ops.Gemm(m=3000, n=5000, k=2000)
    with pytest.raises(ValueError, match="N or MxNxK"):
        tune.problem_for(KEY, "3x4")
    with pytest.raises(ValueError, match="tune handles GEMM"):
        tune.problem_for("blas/dot/07_bandwidth", "1024")
    if not gl.on_gpu:
        with pytest.raises(SystemExit, match="tuning measures on a GPU"):
            tune.run(KEY, ["256"], 10)


def test_chapter_13s_account_of_the_recorded_search_matches_the_record():
    """Chapter 13, "Searching the space": every figure it states, read back from the records."""
    import matplotlib
    matplotlib.use("Agg")
    from gemmlab import climb, registry, tune
    r = tune.recorded("sgemm/12_interior")
    sizes = {s["size"]: s for s in r["sizes"]}
    assert r["budget_s"] == 250 and list(sizes) == ["1024", "2048", "4096", "8192", "4097"]
    tried = [len(s["tried"]) for s in sizes.values()]
    assert (min(tried), max(tried)) == (12, 42) and {s["space"] for s in sizes.values()} == {12480}
    assert all(round(s["spent_s"]) in range(50, 56) for s in sizes.values())
    defaults = registry.get("sgemm/12_interior").resolve()
    for size in ("2048", "4096", "8192"):
        assert sizes[size]["winner"] == defaults
    assert (sizes["1024"]["winner"]["SPLITK"], sizes["4097"]["winner"]["SPLITK"]) == (2, 8)
    assert round(100 * sizes["1024"]["ratio"]) == round(100 * sizes["4097"]["ratio"]) == 82
    best = {s["size"]: s["ratio"] for s in climb.recorded()["sizes"]}
    assert (round(100 * best["1024"]), round(100 * best["4097"])) == (85, 88)
    text = tune.summary(r)
    assert "tried 42 of 12,480" in text and "82.2% of cuBLAS" in text
    ax = tune.plot(r)
    assert len(ax.get_xticklabels()) == 5


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), 0, -1, True, "600"])
def test_a_budget_that_is_not_a_positive_finite_number_is_refused(budget):
    with pytest.raises(ValueError, match="budget_s must be a positive, finite number of seconds"):
        tune.search(KEY, gl.ops.Gemm.square(256), budget_s=budget, progress=False)
