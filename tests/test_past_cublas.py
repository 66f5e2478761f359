"""Chapter 16's Hopper kernels (tc/08 onwards) and the study that measures them against cuBLAS and Triton.

On the GPU: every kernel against float64 at sizes that are multiples of none of its tiles, with more tiles
than the GPU has SMs (so each block walks several), an odd number of rows of tiles (the clusters' last pair
half outside C) and K not a multiple of the 64-wide slices. Everywhere: the registry's refusals and grids,
and the study's bar."""
import pytest

import gemmlab as gl
from gemmlab import ops
from gemmlab.runtime import backend as hw
from gemmlab.runtime import profiles
from gemmlab.studies import past_cublas

NEW = ["tc/08_persistent", "tc/09_tma_store", "tc/10_cluster_multicast", "tc/11_stream_k", "tc/12_pingpong"]
# every configuration of each: tc/09's knobs (stages, the producer's registers) and tc/12's two schedules
CONFIGS = [(key, c) for key in NEW for c in gl.registry.get(key).covering()]
# (M, N, K): one partial tile; a few tiles; more tiles than SMs (264 on 132); an odd 31 rows of tiles, 17
# columns and K = 200 (a partial last slice); a tall one with a single column of tiles
SHAPES = [(1, 8, 8), (200, 136, 72), (1000, 520, 264), (3000, 2600, 520), (3900, 4104, 200), (8200, 200, 64)]
# shapes whose last round tc/11 splits on 132 SMs: one tile over 18 blocks, slice by slice (K = 1096: a partial last
# slice); 28 tiles of 65 slices over 132 blocks; 33 tiles of 32 slices
SPLIT_SHAPES = [(2430, 1784, 1096), (5000, 1000, 4104), (4100, 2056, 2000)]


@pytest.mark.gpu
@pytest.mark.skipif(not hw.on_gpu, reason="needs a GPU")
@pytest.mark.parametrize("key, params", CONFIGS, ids=lambda x: x if isinstance(x, str) else
                         ",".join(f"{k}={v}" for k, v in x.items()) or "defaults")
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES + SPLIT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_new_hopper_kernels_agree_with_float64(key, params, precision, shape):
    v = gl.registry.get(key)
    problem = ops.TcGemm(m=shape[0], n=shape[1], k=shape[2], precision=precision)
    why = v.skip_reason(problem)
    if why:
        pytest.skip(why)
    result = v.check(problem, **params)
    assert result.ok, str(result)


@pytest.mark.gpu
@pytest.mark.skipif(not hw.on_gpu, reason="needs a GPU")
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES[1:] + SPLIT_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_stream_k_agrees_however_the_tail_is_split(precision, shape):
    """tc/11 against float64 with the split the registry picks and with others it might: the last round split
    over every block, two rounds split, every tile split over every SM; each launched twice (the flags the first
    leaves must be zero for the second), and the flags zero after."""
    from gemmlab import registry
    from gemmlab.check import check
    from gemmlab.runtime import workspaces
    from gemmlab.runtime.limits import cdiv
    v = gl.registry.get("tc/11_stream_k")
    p = ops.TcGemm(m=shape[0], n=shape[1], k=shape[2], precision=precision)
    if v.skip_reason(p):
        pytest.skip(v.skip_reason(p))
    sm = profiles.current().sm_count
    tiles, slices = cdiv(p.m, 128) * cdiv(p.n, 256), cdiv(p.k, 64)
    blocks = min(tiles, sm)
    tail = tiles % blocks
    splits = {"registry": registry.stream_k_split(p), "every tile on every SM": (sm, 0, min(sm, tiles * slices))}
    if tail:
        splits["last round"] = (blocks, tiles - tail, min(blocks, tail * slices))
        if tiles >= blocks + tail:
            splits["two rounds"] = (blocks, tiles - tail - blocks, min(blocks, (tail + blocks) * slices))
    kernel = v.kernel(p)
    for name, (grid, dp_tiles, sk_blocks) in splits.items():
        flags = workspaces.stream_k_flags(2 * max(tiles - dp_tiles, 1) + 1)

        def run(inputs, out, grid=grid, dp_tiles=dp_tiles, sk_blocks=sk_blocks, flags=flags):
            for _ in range(2):
                kernel((grid,), 384, registry._store_args(p, inputs, out) + (dp_tiles, sk_blocks, flags),
                       shared_mem=registry.STORE_SHARED)
        result = check(run, p, label=f"tc/11 {name} {(grid, dp_tiles, sk_blocks)}", tolerance=v.tolerance)
        assert result.ok, str(result)
        assert int(hw.xp.count_nonzero(flags)) == 0, name


def test_stream_k_splits_only_a_last_round_worth_splitting(monkeypatch):
    """The registry's division for tc/11, on the GPU in use's SM count (the H200's, a T4's, an A100's): whole
    rounds stay whole, a tail is shared by at most one block per slice, and a tail is split only where the SMs
    it leaves idle would wait at least STREAM_K_MIN_SLICES slices a block, averaged over the blocks."""
    from gemmlab import registry
    from gemmlab.runtime.limits import cdiv
    v = gl.registry.get("tc/11_stream_k")
    for name in ("H200", "T4", "A100"):
        gpu = profiles.PROFILES[name]
        monkeypatch.setattr(profiles, "current", lambda gpu=gpu: gpu)
        for m, n, k in SHAPES + SPLIT_SHAPES + past_cublas.SHAPES:
            p = ops.TcGemm(m=m, n=n, k=k, precision="fp16")
            blocks, dp_tiles, sk_blocks = registry.stream_k_split(p)
            tiles, slices = cdiv(m, 128) * cdiv(n, 256), cdiv(k, 64)
            assert blocks == min(tiles, gpu.sm_count) and v.launch(p, {})[0] == (blocks,)
            tail = tiles - dp_tiles
            assert tail == 0 and dp_tiles == tiles or tail == tiles % blocks and dp_tiles % blocks == 0
            worth = tiles % blocks and (blocks - tiles % blocks) * slices >= registry.STREAM_K_MIN_SLICES * blocks
            assert (sk_blocks > 0) == bool(worth), (name, m, n, k)
            assert sk_blocks <= min(blocks, tail * slices)
    monkeypatch.setattr(profiles, "current", lambda: profiles.PROFILES["H200"])
    split = {s: registry.stream_k_split(ops.TcGemm(m=s[0], n=s[1], k=s[2], precision="bf16"))[2] > 0
             for s in past_cublas.SHAPES}
    assert split == {(2048,) * 3: False, (4096,) * 3: False, (6144,) * 3: True, (8192,) * 3: True,
                     (8192, 8192, 1024): False, (4096, 14336, 4096): True}


@pytest.mark.parametrize("key", NEW)
def test_they_refuse_what_tma_cannot_copy_and_run_on_hopper_only(key):
    v = gl.registry.get(key)
    assert v.chapter == "16-past-cublas" and v.options == ("-arch=sm_90a",)
    assert "FP16 or BF16" in v.refuse(ops.TcGemm(m=64, n=64, k=64, precision="tf32"), {})
    assert "multiples of 8" in v.refuse(ops.TcGemm(m=64, n=60, k=64, precision="fp16"), {})
    assert "multiples of 8" in v.refuse(ops.TcGemm(m=64, n=64, k=36, precision="bf16"), {})
    assert not v.refuse(ops.TcGemm(m=65, n=72, k=40, precision="bf16"), {})
    assert any(n.capability == (9, 0) and n.only for n in v.needs)       # Hopper's own code: not after it either
    if not hw.on_gpu:                                                   # (the emulator runs them)
        v.runner(ops.TcGemm(m=64, n=64, k=64, precision="fp16"))


def test_the_persistent_grids_follow_the_gpu_in_use(monkeypatch):
    """One block per SM of the GPU in use (the H200's 132, another GPU's own count), never more blocks than
    tiles; the clusters' grid is whole pairs, one pair per two tiles stacked."""
    from gemmlab import registry
    monkeypatch.setattr(registry, "_clusters_at_once", lambda key, p: None)    # the rule, not this GPU's count
    eight = gl.registry.get("tc/08_persistent")
    ten = gl.registry.get("tc/10_cluster_multicast")
    for name in ("H200", "T4", "A100"):
        gpu = profiles.PROFILES[name]
        monkeypatch.setattr(profiles, "current", lambda gpu=gpu: gpu)
        big = ops.TcGemm(m=8192, n=8192, k=64, precision="fp16")
        assert eight.launch(big, {})[0] == (gpu.sm_count,)
        assert ten.launch(big, {})[0] == (2 * (gpu.sm_count // 2),)
    twelve = gl.registry.get("tc/12_pingpong")
    for name in ("H200", "T4", "A100"):
        gpu = profiles.PROFILES[name]
        monkeypatch.setattr(profiles, "current", lambda gpu=gpu: gpu)
        big = ops.TcGemm(m=8192, n=8192, k=64, precision="fp16")
        assert twelve.launch(big, twelve.resolve())[0] == (gpu.sm_count,)
    small = ops.TcGemm(m=300, n=600, k=64, precision="fp16")          # 3 x 3 tiles; 2 pairs of rows x 3
    assert eight.launch(small, {})[0] == (9,) and ten.launch(small, {})[0] == (12,)
    # tc/12: 3 x 5 tiles of 128 x 128 in ping-pong (one a block: consumer 1 of each has none), 2 x 5 of 256 x 128
    assert twelve.launch(small, twelve.resolve(PINGPONG=1))[0] == (15,)
    assert twelve.launch(small, twelve.resolve(PINGPONG=0))[0] == (10,)
    assert registry._persistent_blocks(ops.TcGemm(m=1, n=8, k=8, precision="fp16"), 2) == 2


def test_the_bar_is_the_one_set_and_every_shape_is_measured_in_both_precisions():
    assert past_cublas.target((4096, 4096, 4096)) == 1.00 and past_cublas.target((8192, 8192, 8192)) == 1.00
    for shape in [(2048,) * 3, (6144,) * 3, (8192, 8192, 1024), (4096, 14336, 4096)]:
        assert shape in past_cublas.SHAPES and past_cublas.target(shape) == 0.95
    assert past_cublas.PRECISIONS == ("fp16", "bf16")
    assert [k for k, _ in past_cublas.LADDER][:1] == ["tc/06_wgmma_tma"]
    assert set(NEW) <= {k for k, _ in past_cublas.LADDER}
    # each knob changes one parameter of a ladder kernel, and the chapter's table names every one
    knobs = [gl.cases.Case(k, p).label for k, p in past_cublas.KNOBS]
    assert all(len(p) == 1 for _, p in past_cublas.KNOBS)
    assert set(knobs) | {"12_pingpong[]"} == {name for name, _ in past_cublas.KNOB_ROWS}
    # the recorded best at each point is a step of the ladder (the knobs are timed beside them, not ranked for the bar)
    from gemmlab import record
    steps = {gl.cases.Case(k, p).label for k, p in past_cublas.LADDER}
    assert all(p["best"] in steps for p in record.load("hopper-nvidia-h200")["points"])
    for key, params in past_cublas.KNOBS:
        v = gl.registry.get(key)
        assert v.resolve(**params) in v.covering() and v.resolve(**params) != v.resolve()


def test_without_triton_the_column_says_why(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "triton", None)
    got = past_cublas.pick_triton(ops.TcGemm(m=64, n=64, k=64, precision="fp16"), None)
    assert "Triton (with torch) is not installed here" in got["missing"] and "config" not in got


@pytest.mark.gpu
@pytest.mark.skipif(not hw.on_gpu, reason="needs a GPU")
def test_the_cluster_grid_is_what_the_gpu_runs_at_once():
    from gemmlab import registry
    if profiles.current().capability != (9, 0):
        pytest.skip("tc/10 runs on Hopper only")
    big = ops.TcGemm(m=8192, n=8192, k=64, precision="fp16")
    at_once = registry._clusters_at_once("tc/10_cluster_multicast", big)
    assert 1 <= at_once <= profiles.current().sm_count // 2
    assert gl.registry.get("tc/10_cluster_multicast").launch(big, {})[0] == (2 * at_once,)


def _same_out_point(point, precision):
    """A ladder point of the H200's record dressed as a run with C in the inputs' type: its cuBLAS row also as
    torch.matmul's (the table's bar), as measure_shape(out="same") makes one."""
    import copy
    p = copy.deepcopy(point)
    torch_row = dict(next(r for r in p["timing"]["rows"] if r["name"] == "cuBLAS"), name=past_cublas.TORCH)
    p["timing"]["rows"].append(torch_row)
    p.update(out=precision, base=past_cublas.TORCH)
    return p


def test_a_run_of_part_of_the_study_replaces_only_its_own_points():
    from gemmlab import record
    old = record.load("hopper-nvidia-h200")
    new = {"points": [_same_out_point(old["points"][1], old["points"][1]["precision"])], "command": "x --out same",
           "triton": "9.9", "torch": "9.9"}
    merged = past_cublas.merged(new, old)
    assert len(merged["points"]) == len(old["points"]) + 1
    assert [r["points"] for r in merged["runs"]] == [len(old["points"]), 1]
    kept = [p for p in merged["points"] if p.get("out", "fp32") == "fp32"]
    assert all(p["versions"]["triton"] == old["triton"] for p in kept)         # each point keeps its own run's
    again = past_cublas.merged(new, merged)                                      # the same part again: replaced
    assert len(again["points"]) == len(merged["points"])
    assert past_cublas.merged(new, None) is new


def test_the_tables_of_a_record_with_both_kinds_of_c(capsys):
    from gemmlab import record
    old = record.load("hopper-nvidia-h200")
    merged = past_cublas.merged({"points": [_same_out_point(p, p["precision"]) for p in old["points"][:2]],
                                 "command": "x --out same", "triton": None, "torch": "2.11"}, old)
    merged["environment"] = old["environment"]
    past_cublas.out16_table(merged)
    past_cublas.ladder_table(merged)
    text = capsys.readouterr().out
    assert "torch.matmul" in text and "of torch" in text and "torch 2.11" in text
    assert text.count("FP16 in, FP16 C") == 1 and f"Triton {old['triton']}: FP32 C" in text
    past_cublas.out16_table(old)
    assert "has no run with C in the inputs' type" in capsys.readouterr().out


def test_the_command_records_all_the_shapes_or_none():
    import argparse
    from gemmlab import studies
    args = argparse.Namespace(record=True, shapes=[(4096,) * 3], out=list(past_cublas.OUTS), reps=10)
    with pytest.raises(SystemExit, match="--record writes every shape"):
        studies._hopper_run(args)
    assert studies._shapes("4096,8192x8192x1024") == [(4096,) * 3, (8192, 8192, 1024)]
    with pytest.raises(argparse.ArgumentTypeError, match="each shape is N or MxNxK"):
        studies._shapes("4096x2")
    with pytest.raises(argparse.ArgumentTypeError, match="whole numbers >= 1"):
        studies._shapes("4096,x")
    with pytest.raises(ValueError, match="out must be one of fp32, same"):
        past_cublas.check_step("tc/09_tma_store", out="fp16")


def test_a_baseline_is_timed_only_once_it_gives_the_right_answer():
    """checked_baseline runs a baseline once into a fresh C and checks it against float64 as the kernels are: a
    right answer is kept with its error, a wrong one and a missing package are reasons, not timings."""
    import numpy
    p = ops.TcGemm(m=24, n=16, k=32, precision="fp16", out="fp16")
    inputs = p.inputs(numpy.random.default_rng(0))
    right = gl.xp.asarray(p.reference(inputs).astype(numpy.float16))

    def copying(value):
        return lambda problem, inputs, out: (lambda: out.__setitem__(Ellipsis, value))

    got = past_cublas.checked_baseline("exact", copying(right), p, inputs)
    assert got["error"] < p.tolerance(1e-5) and callable(got["run"])
    got = past_cublas.checked_baseline("zeros", copying(0), p, inputs)
    assert got["missing"].startswith("zeros gave a wrong answer (error 1.00e+00") and "run" not in got

    def absent(problem, inputs, out):
        raise ImportError("no module named torch")
    assert past_cublas.checked_baseline("torch.matmul", absent, p, inputs) == {
        "missing": "torch.matmul is not installed here (no module named torch)"}
