"""Kernels the emulator cannot run (inline PTX) still compile here for the H200 whenever nvcc is present: CI
catches a broken one before a GPU session does. Their results are checked on the GPU (test_kernels)."""
import shutil
import subprocess

import pytest

import gemmlab as gl
from gemmlab.paths import KERNELS
from gemmlab.sass import _instance

ONLY = [v for v in gl.registry.VARIANTS if v.gpu_only]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("v", ONLY, ids=[v.key for v in ONLY])
def test_gpu_only_kernels_compile_for_sm90(v, tmp_path):
    lines = [f'#include "{v.source}"']
    problems = v.awkward()
    assert problems, f"{v.key} takes none of its operation's test problems"
    exprs = {v.expression(problems[0], **choice) for choice in v.covering()}
    exprs |= {v.expression(p) for p in problems}                 # the defaults in each precision the problems take
    for i, expr in enumerate(sorted(exprs)):
        lines.append(_instance(expr, i))
    unit = tmp_path / "unit.cu"
    unit.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", f"-I{KERNELS}", "-o",
                           str(tmp_path / "unit.cubin"), str(unit)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_tensor_candidates_are_taken_per_precision():
    from gemmlab import ops, tensor
    tf32 = {k for k, _ in tensor.taken(tensor.TC_CANDIDATES, ops.TcGemm(m=64, n=64, k=64, precision="tf32"))}
    fp16 = {k for k, _ in tensor.taken(tensor.TC_CANDIDATES, ops.TcGemm(m=64, n=64, k=64, precision="fp16"))}
    assert "tc/05_mma_sync" in fp16 and "tc/05_mma_sync" not in tf32
