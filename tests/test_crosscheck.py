"""The emulator and the GPU agree on every registry kernel (run on a GPU machine with a C++ compiler)."""
import pytest

from gemmlab import crosscheck


@pytest.mark.gpu
def test_every_registry_kernel_agrees_between_gpu_and_emulator():
    result = crosscheck.compare(seed=123)
    bad = [r for r in result["cases"] if not r["agree"]]
    assert not bad, crosscheck.report(result)
    assert all(r["gpu_error"] < 1e-5 and r["emulator_error"] < 1e-5 for r in result["cases"])
