"""Every registry kernel, every legal parameter choice (every value of every parameter, where the choices
are many: Variant.covering), at sizes that are not multiples of any tile.

Generated from the registry: a new variant is tested here without touching this file. Runs on the
current backend: the CPU emulator in CI, the GPU on a GPU machine.
"""
import pytest

import gemmlab as gl

CASES = [(v, choice, problem) for v in gl.registry.VARIANTS for choice in v.covering()
         for problem in v.awkward()]


def _id(v, choice, problem):
    return f"{v.key}-{'-'.join(f'{k}{x}' for k, x in choice.items())}-{problem.label}"


@pytest.mark.parametrize("v, choice, problem", CASES, ids=[_id(*c) for c in CASES])
def test_kernel_matches_float64(v, choice, problem):
    # the GPU in use, or the profile it runs as (GEMMLAB_DEVICE), may be unable to run some: said, not failed
    why = v.unsupported(problem) or v.does_not_fit(problem, v.resolve(**choice))
    if why:
        pytest.skip(why)
    for _ in range(2):                               # two draws of fresh random inputs
        result = v.check(problem, **choice)
        assert result.ok, str(result)

