"""Hopper's kernels (sm_90a: wgmma, TMA, mbarriers, clusters) compile here with nvcc whenever it is present, in
every configuration the tests run: CI catches PTX that ptxas refuses (the emulator runs the same statements) before
a GPU session does. Their results are checked on the emulator and on the GPU (test_kernels)."""
import shutil
import subprocess

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops
from gemmlab.paths import KERNELS
from gemmlab.sass import _instance

HOPPER = [v for v in gl.registry.VARIANTS if "-arch=sm_90a" in v.options]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("v", HOPPER, ids=[v.key for v in HOPPER])
def test_hopper_kernels_compile_for_sm90a(v, tmp_path):
    lines = [f'#include "{v.source}"']
    problems = v.awkward()
    assert problems, f"{v.key} takes none of its operation's test problems"
    exprs = {v.expression(problems[0], **choice) for choice in v.covering()}
    exprs |= {v.expression(p) for p in problems}                 # the defaults in each precision the problems take
    for i, expr in enumerate(sorted(exprs)):
        lines.append(_instance(expr, i))
    unit = tmp_path / "unit.cu"
    unit.write_text("\n".join(lines) + "\n")
    arch = next((o for o in v.options if o.startswith("-arch=")), "-arch=sm_90")     # wgmma needs sm_90a
    proc = subprocess.run(["nvcc", "-cubin", arch, "-std=c++17", f"-I{KERNELS}", "-o",
                           str(tmp_path / "unit.cubin"), str(unit)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_tensor_candidates_are_taken_per_precision():
    from gemmlab import ops, tensor
    tf32 = {k for k, _ in tensor.taken(tensor.TC_CANDIDATES, ops.TcGemm(m=64, n=64, k=64, precision="tf32"))}
    fp16 = {k for k, _ in tensor.taken(tensor.TC_CANDIDATES, ops.TcGemm(m=64, n=64, k=64, precision="fp16"))}
    assert "tc/05_mma_sync" in fp16 and "tc/05_mma_sync" in tf32
    # tc/05's TF32 stages are twice as large: those over the block's shared memory of the GPU in use (the
    # H200's 227 KiB here, a T4's 64) do not fit, and a study skips them with the reason
    five = gl.registry.get("tc/05_mma_sync")
    big = five.resolve(BM=128, BN=256, BK=64)
    tf32_problem = ops.TcGemm(m=64, n=64, k=64, precision="tf32")
    why = five.does_not_fit(tf32_problem, big, gl.profiles.PROFILES["H200"])
    assert "needs 300 KiB of shared memory per block" in why and "which allows 227 KiB" in why
    assert five.does_not_fit(ops.TcGemm(m=64, n=64, k=64, precision="fp16"), big, gl.profiles.PROFILES["H200"]) is None
    deep = five.resolve(BM=128, BN=256, BK=64, STAGES=4)                 # 204 KiB in FP16
    assert "allows 163 KiB" in five.does_not_fit(ops.TcGemm(m=64, n=64, k=64, precision="fp16"), deep,
                                                 gl.profiles.PROFILES["A100"])
    runs_here = [c for k, c in tensor.taken(tensor.TC_CANDIDATES, tf32_problem) if k == "tc/05_mma_sync"
                 and five.does_not_fit(tf32_problem, five.resolve(**c), gl.profiles.PROFILES["H200"]) is None]
    assert len(runs_here) == 4


def test_the_hopper_kernel_refuses_what_it_cannot_do_with_its_reason():
    from gemmlab import hardware as hw, ops
    v = gl.registry.get("tc/06_wgmma_tma")
    assert v.options == ("-arch=sm_90a",)                              # (the emulator runs its PTX)
    assert "FP16 or BF16" in v.refuse(ops.TcGemm(m=64, n=64, k=64, precision="tf32"), {})
    assert "multiples of 8" in v.refuse(ops.TcGemm(m=64, n=60, k=64, precision="fp16"), {})
    assert "got 64 x 64 x 36" in v.refuse(ops.TcGemm(m=64, n=64, k=36, precision="bf16"), {})
    assert v.refuse(ops.TcGemm(m=65, n=72, k=40, precision="bf16"), {}) in (None, "") or hw.on_gpu
    if not hw.on_gpu:
        v.runner(ops.TcGemm(m=64, n=64, k=64, precision="bf16"))


def test_tensor_maps_need_cuda_python_and_16_byte_rows(monkeypatch):
    import sys
    import types
    from gemmlab import hardware as hw, tma
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver"):      # cuda-python not installed (nor imported
        monkeypatch.setitem(sys.modules, name, None)                    # by an earlier test)
    tma._encoded.cache_clear()
    host = numpy.zeros((64, 64), dtype=numpy.float16)                  # the emulator's maps need no driver
    monkeypatch.setattr(tma.hw, "on_gpu", False)
    made = tma.tensor_map(host, "bf16", 64, 64).view(numpy.uint64).ravel()
    assert made.size == 16 and made[0] == tma.EMULATED_MAGIC and tma.emulated_arrays(made.tobytes())[0][1] is host
    monkeypatch.setattr(tma.hw, "on_gpu", True)                        # a GPU's: the driver encodes them
    a = types.SimpleNamespace(shape=(64, 64), data=types.SimpleNamespace(ptr=1 << 20))
    with pytest.raises(hw.BackendError, match="pip install cuda-bindings"):
        tma.tensor_map(a, "bf16", 64, 64)
    with pytest.raises(ValueError, match="16-byte aligned rows: 60 columns"):
        tma.tensor_map(types.SimpleNamespace(shape=(64, 60), data=a.data), "bf16", 64, 64)
    with pytest.raises(ValueError, match="FP16, BF16 or FP32"):
        tma.tensor_map(a, "tf32", 64, 64)
    with pytest.raises(ValueError, match="16-byte aligned rows: 61 columns of 4 bytes"):
        tma.tensor_map(types.SimpleNamespace(shape=(64, 61), data=a.data), "fp32", 128, 32)
    with pytest.raises(ValueError, match="cols must be from 1 to the rows' length, 64; got 65"):
        tma.tensor_map(a, "bf16", 64, 64, cols=65)


# on a GPU, every shape chapter 16's kernels are checked at (tests/test_past_cublas.py's); on the emulator, one
ROUNDING_SHAPES = ([(1, 8, 8), (200, 136, 72), (1000, 520, 264), (3000, 2600, 520), (3900, 4104, 200), (8200, 200, 64),
                    (2430, 1784, 1096)] if gl.on_gpu else [(200, 264, 72)])


@pytest.mark.parametrize("key, config", [("tc/09_tma_store", {}), ("tc/09_tma_store", {"STAGES": 3}),
                                         ("tc/12_pingpong", {"PINGPONG": 1}), ("tc/12_pingpong", {"PINGPONG": 0})])
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", ROUNDING_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_c_in_the_inputs_type_is_the_fp32_sum_rounded_once_to_nearest(key, config, precision, shape):
    """The 16-bit epilogue rounds each FP32 accumulator once, to nearest (ties to even): its C is, bit for bit, the
    same kernel's FP32 C rounded so, at sizes that are not multiples of any tile; and it passes the float64 check."""
    v = gl.registry.get(key)
    m, n, k = shape
    wide = ops.TcGemm(m=m, n=n, k=k, precision=precision)
    narrow = ops.TcGemm(m=m, n=n, k=k, precision=precision, out=precision)
    if v.skip_reason(narrow):
        pytest.skip(v.skip_reason(narrow))
    inputs = wide.inputs(numpy.random.default_rng(7))
    c32, c16 = wide.output(), narrow.output()
    v.runner(wide, **config)(inputs, c32)
    v.runner(narrow, **config)(inputs, c16)
    c32, c16 = gl.to_host(c32), gl.to_host(c16)
    want = c32.astype(numpy.float16) if precision == "fp16" else ops.to_bf16_bits(c32)
    assert c16.dtype == want.dtype and numpy.array_equal(c16.view(numpy.uint16), want.view(numpy.uint16))
    assert v.check(narrow, **config).ok


def test_only_tc09_and_tc12_write_c_in_the_inputs_type():
    problem = ops.TcGemm(m=64, n=64, k=64, precision="fp16", out="fp16")
    for key in ("tc/05_mma_sync", "tc/06_wgmma_tma", "tc/08_persistent", "tc/10_cluster_multicast", "tc/11_stream_k"):
        with pytest.raises(ValueError, match="writes C in FP32 only; C in FP16 is tc/09's and tc/12's"):
            gl.registry.get(key).runner(problem)
    with pytest.raises(ValueError, match="out is C's type"):
        ops.TcGemm(m=64, n=64, k=64, precision="fp16", out="bf16")
