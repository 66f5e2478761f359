"""Every registry kernel, every legal parameter choice, at sizes that are not multiples of any tile.

Generated from the registry: a new variant is tested here without touching this file. Runs on the
current backend: the CPU emulator in CI, the GPU on a GPU machine.
"""
import pytest

import gemmlab as gl

AWKWARD_GEMM = [(1, 1, 1), (33, 17, 65), (100, 131, 7), (257, 255, 129)]

CASES = [(v, choice, shape) for v in gl.registry.VARIANTS for choice in v.choices()
         for shape in AWKWARD_GEMM]


@pytest.mark.parametrize("v, choice, shape", CASES,
                         ids=[f"{v.key}-{'-'.join(f'{k}{x}' for k, x in c.items())}-{'x'.join(map(str, s))}"
                              for v, c, s in CASES])
def test_kernel_matches_float64(v, choice, shape):
    m, n, k = shape
    problem = v.op(m=m, n=n, k=k)
    for _ in range(2):                               # two draws of fresh random inputs
        result = v.check(problem, **choice)
        assert result.ok, str(result)
