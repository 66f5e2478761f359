import os
import subprocess
import sys

import pytest

import gemmlab as gl


def _import_with(env_value):
    env = {**os.environ, "GEMMLAB_BACKEND": env_value}
    return subprocess.run([sys.executable, "-c", "import gemmlab as gl; print(gl.backend, gl.xp.__name__)"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_backend_is_one_of_the_two():
    assert gl.backend in ("cuda", "emulator")
    assert gl.on_gpu == (gl.backend == "cuda")
    assert gl.xp.__name__ == ("cupy" if gl.on_gpu else "numpy")
    assert gl.backend_reason


def test_emulator_can_be_forced():
    r = _import_with("emulator")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["emulator", "numpy"]


def test_unknown_backend_is_refused_by_name():
    r = _import_with("opencl")
    assert r.returncode != 0
    assert "GEMMLAB_BACKEND='opencl' is not a backend" in r.stderr


@pytest.mark.skipif(gl.on_gpu, reason="this machine has a GPU")
def test_forcing_cuda_without_a_gpu_says_why():
    r = _import_with("cuda")
    assert r.returncode != 0
    assert "GEMMLAB_BACKEND=cuda asks for a GPU, but: CuPy" in r.stderr
    assert ("CuPy" in r.stderr) and ("GPU" in r.stderr)


def test_size_picks_by_backend():
    assert gl.size(gpu=4096, emulator=128) == (4096 if gl.on_gpu else 128)


def test_broken_gpu_setup_message(monkeypatch):
    """CuPy present but no driver: the reason names the driver and what to check."""
    from gemmlab import hardware as b

    class FakeRuntime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    class FakeCupy:
        class cuda:
            runtime = FakeRuntime

    monkeypatch.setitem(sys.modules, "cupy", FakeCupy)
    cupy, reason = b._probe_cuda()
    assert cupy is None
    assert "no usable NVIDIA GPU or driver" in reason and "nvidia-smi" in reason
    assert "insufficient" in reason
