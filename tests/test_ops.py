import pytest

from gemmlab import ops


def test_dot_intensity_is_a_quarter():
    op = ops.Dot(n=1 << 24)
    assert op.flops == 2 << 24
    assert op.intensity == pytest.approx(0.25, rel=1e-6)


def test_gemv_intensity_approaches_a_half():
    assert ops.Gemv(m=4096, n=4096).intensity == pytest.approx(0.5, rel=1e-3)
    assert ops.Gemv(m=64, n=64).intensity < ops.Gemv(m=4096, n=4096).intensity


@pytest.mark.parametrize("n", [256, 1000, 4096])
def test_square_gemm_intensity_is_n_over_6(n):
    assert ops.Gemm.square(n).intensity == pytest.approx(n / 6)
    # beta != 0 reads C too: four N^2 matrices of traffic instead of three
    assert ops.Gemm.square(n, beta_nonzero=True).intensity == pytest.approx(n / 8)


def test_fp64_halves_intensity():
    import numpy
    assert ops.Dot(n=1000, dtype=numpy.float64).intensity == pytest.approx(ops.Dot(n=1000).intensity / 2)


def test_copy_moves_bytes_and_no_flops():
    op = ops.Copy(n=1000)
    assert op.flops == 0 and op.bytes == 8000
