import pytest

import gemmlab as gl


def pytest_collection_modifyitems(config, items):
    if gl.on_gpu:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {gl.backend_reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
