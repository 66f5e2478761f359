import pytest

import gemmlab as gl


def _kernel_group(item) -> str | None:
    """test_kernels' cases of one kernel instance (variant and choice) run in one worker, so that each is built
    once per run (make test runs the tests on every core: pytest -n, --dist loadgroup); None for other tests."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    v, choice = params.get("v"), params.get("choice")
    if v is None or choice is None:
        return None
    return f"{v.key}[{','.join(f'{k}={x}' for k, x in choice.items())}]"


_SAMPLES: dict = {}


def _sample_of(v) -> tuple:
    """(first configuration, last awkward problem) of a variant, worked out once per variant."""
    if v.key not in _SAMPLES:
        _SAMPLES[v.key] = (v.covering()[0], v.awkward()[-1])
    return _SAMPLES[v.key]


def _sampled(item) -> bool:
    """The quick loop's sample of test_kernels: each variant's first configuration at every awkward size but the
    last of its list (the largest of a GEMM's); make test runs every configuration at every size."""
    params = item.callspec.params
    v, choice, problem = params["v"], params["choice"], params["problem"]
    first, last = _sample_of(v)
    return choice == first and problem != last


# whole tests left out of the quick loop (make check): each takes seconds to minutes, and make test runs them
SLOW = (
    "tests/test_portability.py",                                          # nvcc, every configuration x architecture
    "tests/test_book.py::test_wheel_carries_kernels_and_results",         # builds the wheel
    "tests/test_wmma.py::test_emulator_adds_as_the_h200_tensor_cores_do",  # tensor-core sums to K = 1024, emulated
    "tests/test_wmma.py::test_3xtf32_recovers_fp32_accuracy",
    "tests/test_hopper.py::test_hopper_kernels_compile_for_sm90a",        # nvcc for sm_90a
    "tests/test_faults.py::test_a_killed_or_interrupted_compile",          # kills real compiles, waits for them
)


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        # on a GPU every test runs in one worker, one after another: a timing is only a timing with the GPU
        # to itself; nvcc's tests share one worker too (each runs two compilers at once, on one cache)
        group = "gpu" if gl.on_gpu else "nvcc" if "test_portability.py" in item.nodeid else _kernel_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(item, "originalname", "") == "test_kernel_matches_float64" and not _sampled(item):
                item.add_marker(slow)
        if item.nodeid.startswith(SLOW):
            item.add_marker(slow)
    if gl.on_gpu:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {gl.backend_reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
