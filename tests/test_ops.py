import numpy
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


def test_warp_sector_model():
    from gemmlab import memory
    assert memory.sectors(range(0, 128, 4)) == 4                    # 32 consecutive floats
    assert memory.sectors([4096 * 4 * i for i in range(32)]) == 32   # 32 floats N apart
    col = memory.naive_warp_traffic("x=col", 16, 4096)
    row = memory.naive_warp_traffic("x=row", 16, 4096)
    # x=col: two rows of A per warp (broadcast to 16 lanes each), 16 consecutive B floats (2 sectors)
    assert (col["A addresses"], col["A sectors"], col["B sectors"]) == (2, 2, 2)
    # x=row: 16 rows of A, N apart: 16 sectors; B is 2 addresses in one sector
    assert (row["A sectors"], row["B sectors"], row["C sectors"]) == (16, 1, 16)
    wide = memory.naive_warp_traffic("x=row", 32, 4096)
    assert wide["A sectors"] == 32 and wide["B addresses"] == 1
    with pytest.raises(ValueError, match="mapping"):
        memory.naive_warp_traffic("diagonal", 16, 64)


def test_tile_map_counts_and_indices():
    from gemmlab.tilemap import TileMap
    m = TileMap(64, 16)
    assert m.global_loads() == {"naive": 2 * 64**3, "tiled": 2 * 64**3 // 16, "ratio": 16.0}
    assert m.a_tile(1, 2, 3) == (1, 3) and m.b_tile(1, 2, 3) == (3, 2)
    assert len(m.a_elements(0, 0, 0)) == 256
    ragged = TileMap(20, 16)                         # the last tile is partial
    assert ragged.tiles == 2 and len(ragged.a_elements(1, 1, 1)) == 16
    with pytest.raises(ValueError, match="outside"):
        m.a_tile(4, 0, 0)


def test_bank_conflict_model():
    from gemmlab import memory
    assert memory.bank_conflict_degree(range(32)) == 1               # consecutive words
    assert memory.bank_conflict_degree([0] * 32) == 1                # one word: a broadcast
    assert memory.bank_conflict_degree([32 * i for i in range(32)]) == 32
    # 04_padded_tiling, TILE 16: unpadded, every access is conflict-free; padded, a warp's two rows of
    # stores wrap around (words 0..15 and 17..32): word 32 shares bank 0 with word 0, a 2-way conflict
    assert set(memory.tiled_shared_accesses(16, 0, at=0).values()) == {1}
    assert memory.tiled_shared_accesses(16, 1, at=0) == {"As store": 2, "As read": 1, "Bs store": 2, "Bs read": 1}
    # the transposed A store conflicts 8-way unpadded (32-way with TILE 32); padding cuts it to 2 (to 1)
    assert memory.tiled_shared_accesses(16, 0, at=1)["As store"] == 8
    assert memory.tiled_shared_accesses(16, 1, at=1)["As store"] == 2
    assert memory.tiled_shared_accesses(32, 0, at=1)["As store"] == 32
    assert memory.tiled_shared_accesses(32, 1, at=1)["As store"] == 1


@pytest.mark.parametrize("kind", list(ops.FP8_KINDS))
def test_every_fp8_value_round_trips_and_rounding_is_to_the_nearest(kind):
    bits = numpy.arange(256, dtype=numpy.uint8)
    values = ops.fp8_values(bits, kind)
    finite = numpy.isfinite(values)
    assert values[finite].max() == ops.FP8_KINDS[kind][0] and finite.sum() == (254 if kind == "e4m3" else 248)
    back = ops.to_fp8_bits(values[finite], kind)
    assert ((back == bits[finite]) | (values[finite] == 0)).all()
    x = numpy.random.default_rng(0).standard_normal(20000) * 40
    got = ops.fp8_values(ops.to_fp8_bits(x, kind), kind)
    grid = numpy.unique(values[finite])
    clipped = numpy.clip(x, grid[0], grid[-1])
    assert (numpy.abs(got - clipped) <= numpy.abs(clipped[:, None] - grid[None, :]).min(axis=1)).all()
    assert ops.fp8_values(ops.to_fp8_bits([1e9, -1e9], kind), kind).tolist() == [grid[-1], grid[0]]   # saturates
    assert numpy.isnan(ops.fp8_values(ops.to_fp8_bits([numpy.nan], kind), kind)).all()
    with pytest.raises(TypeError, match="as their bytes"):
        ops.fp8_values(values, kind)
    with pytest.raises(ValueError, match="one of e4m3, e5m2"):
        ops.to_fp8_bits(x, "e3m4")


def test_block_scales_are_each_blocks_largest_magnitude_over_the_formats_largest():
    rng = numpy.random.default_rng(1)
    a = rng.standard_normal((5, 300)) * 3
    a[2] = 0.0
    bits, scale = ops.fp8_quantize(a, "e4m3", "block", 1)
    assert scale.shape == (5, 3) and scale.dtype == numpy.float32
    for r in range(5):
        for b in range(3):
            amax = numpy.abs(a[r, 128 * b:128 * (b + 1)]).max()
            assert scale[r, b] == numpy.float32(amax / 448 if amax else 1.0)
    back = ops.fp8_values(bits) * numpy.repeat(scale.astype(numpy.float64), 128, 1)[:, :300]
    assert numpy.abs(back - a).max() <= 2.0 ** -4 * numpy.abs(a).max()           # E4M3: 3 mantissa bits
    bits, scale = ops.fp8_quantize(a.T, "e4m3", "block", 128)                      # B's 128 x 128 blocks
    assert scale.shape == (3, 1)
    bits, scale = ops.fp8_quantize(a, "e4m3", "tensor")
    assert scale.shape == (1,) and scale[0] == numpy.float32(numpy.abs(a).max() / 448)
    _, rows = ops.fp8_quantize(a, "e4m3", "block", 1, 300)                         # one scale a row
    assert rows.shape == (5, 1)



@pytest.mark.parametrize("scaling, rows_of_block, cols_of_block", [("tensor", 1, 0), ("block", 1, 0), ("block", 128, 0),
                                                                   ("block", 1, 300), ("block", 2, 64)])
def test_fp8_dequantize_undoes_fp8_quantize_with_the_same_blocks(scaling, rows_of_block, cols_of_block):
    """The values the bytes and scales stand for are each element's FP8 value times its own block's scale: within
    E4M3's rounding of the original, and exactly fp8 x scale of the block written out by hand."""
    rng = numpy.random.default_rng(2)
    a = rng.standard_normal((130, 300)) * 2.0 ** rng.uniform(-6, 6, (130, 1))
    bits, scale = ops.fp8_quantize(a, "e4m3", scaling, rows_of_block, cols_of_block)
    back = ops.fp8_dequantize(bits, scale, "e4m3", rows_of_block, cols_of_block)
    width = cols_of_block or 128
    for r, c in ((0, 0), (129, 299), (64, 130), (1, 255)):
        s = scale[0] if scaling == "tensor" else scale[r // rows_of_block, c // width]
        assert back[r, c] == ops.fp8_values(bits[r:r + 1, c:c + 1])[0, 0] * float(s)
    if scaling == "block" and rows_of_block == 1:                 # each row's own scale: E4M3's three mantissa bits
        assert (numpy.abs(back - a) <= 2.0 ** -4 * numpy.abs(a).max(axis=1, keepdims=True)).all()
