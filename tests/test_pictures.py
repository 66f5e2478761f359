"""gemmlab.pictures: each picture shows the constants of the kernel it depicts (read here from the .cu files on
their own, not through the module's reader), the 128-byte swizzle as the emulator's TMA copy lays it out, and
the warp tiling as the kernel itself writes C. (Their legibility at the book's width: tests/test_plots.py.)"""
from __future__ import annotations

import re

import numpy
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402,F401  (the pictures are pyplot figures)

import gemmlab as gl  # noqa: E402
from gemmlab import ops, pictures, registry, tilemap  # noqa: E402
from gemmlab.paths import KERNELS  # noqa: E402
from gemmlab.studies import past_cublas  # noqa: E402

HEADER = (KERNELS / "common/wgmma.cuh").read_text()



@pytest.fixture(autouse=True)
def _close_figures():
    """The pictures are pyplot figures, as the book's others: each test closes what it drew."""
    yield
    matplotlib.pyplot.close("all")

def _gids(fig, prefix: str) -> dict:
    """gid -> artist, for every artist of the figure whose gid starts with ``prefix``."""
    return {a.get_gid(): a for a in fig.findobj(lambda a: (a.get_gid() or "").startswith(prefix))}


def _span(patch) -> tuple:
    return patch.get_x(), patch.get_x() + patch.get_width()


def _text(key: str) -> str:
    return (KERNELS / f"{key}.cu").read_text()


def _measured(key: str) -> dict:
    """The configuration of ``key`` that chapter 16's study measures."""
    case = next(c for c in past_cublas.LADDER if c.key == key)
    return registry.get(key).resolve(**case.params)


def _expected(step: str) -> dict:
    """STAGES, the tile of C, the consumers and the cluster of ``step``, read from its source with plain patterns."""
    key = pictures.STEPS[step]
    text = _text(key)
    bm, bn, bk = map(int, re.search(r"constexpr int BM = (\d+), BN = (\d+), BK = (\d+);", HEADER).groups())
    threads = int(re.search(r"__launch_bounds__\((\d+),", text).group(1))
    cluster = re.search(r"__cluster_dims__\((\d+),", text)
    tile, b_cols = (bm, bn), bn
    if step == "tc/12":
        on = _measured(key)["PINGPONG"]
        pick = lambda name: int(re.search(rf"{name} = PINGPONG \? (\d+) : (\d+)", text).group(1 if on else 2))  # noqa
        tm, tn = re.search(r"TM = (\d+) \* MB, TN = (\d+)", text).groups()
        tile = (int(tm) * pick("MB"), int(tn))
        stages, b_cols = pick("STAGES"), int(tn)
    elif step == "tc/09":
        assert "int STAGES" in re.search(r"template <([^>]*)>\s*__global__", text).group(1)   # a template parameter
        stages = _measured(key)["STAGES"]
    else:
        stages = int(re.search(r"constexpr int STAGES = (\d+)", text).group(1))
    return dict(stages=stages, tile=tile, bk=bk, b_cols=b_cols, consumers=threads // 128 - 1,
                cluster=int(cluster.group(1)) if cluster else 1, bm=bm)


# --- the constants reader ----------------------------------------------------------------------------

def test_constants_are_read_from_the_source_with_c_arithmetic():
    k = pictures.kernel_constants("tc/08_persistent.cu")
    assert (k["BM"], k["BN"], k["BK"], k["STAGES"], k["GROUP"]) == (128, 256, 64, 4, 8)
    assert k["STAGE_BYTES"] == (128 * 64 + 64 * 256) * 2                # common/wgmma.cuh's, from BM, BN, BK
    for on, stages, tm in ((1, 6, 128), (0, 4, 256)):
        k = pictures.kernel_constants("tc/12_pingpong.cu", PINGPONG=on)
        assert (k["STAGES"], k["TM"], k["TN"]) == (stages, tm, 128)
    assert pictures._evaluate("-7 / 2 + (0 ? 1 : 5) % 3 * S::X", {"X": 4}) == -3 + 8      # C truncates toward 0
    with pytest.raises(ValueError, match="kernels/tc/99.cu"):
        pictures.kernel_constants("tc/99.cu")


# --- chapter 16: the timeline --------------------------------------------------------------------

@pytest.mark.parametrize("step", list(pictures.STEPS))
def test_the_ring_has_stages_slots_and_the_loads_cycle_through_them(step):
    want = _expected(step)
    fig = pictures.timeline(step)
    slots = _gids(fig, "slot:")
    assert len(slots) == want["stages"] * want["cluster"]
    for r in range(want["cluster"]):
        assert sorted(int(g.split(":")[2]) for g in slots if g.startswith(f"slot:{r}:")) == list(range(want["stages"]))
    loads = _gids(fig, "load:")
    labels = _gids(fig, "label:load:")
    for cta in {g.split(":")[1] for g in loads}:
        mine = sorted((p for g, p in loads.items() if g.split(":")[1] == cta), key=lambda p: p.get_x())
        stages = [int(p.get_gid().split(":")[4]) for p in mine]
        assert stages == [i % want["stages"] for i in range(len(mine))], "the ring's stages in turn"
        assert [labels["label:" + p.get_gid()].get_text() for p in mine] == [str(s) for s in stages]
        # a stage is refilled only once the slice it held before has been multiplied (by every consumer)
        done = {}
        for g, p in _gids(fig, f"math:{cta}:").items():
            tile, kt = g.split(":")[3:]
            start, end = _span(p)
            was = done.get((tile, kt), (start, end))
            done[tile, kt] = (min(start, was[0]), max(end, was[1]))
        slices = sorted(done.values())
        assert len(slices) == len(mine)
        for i, load in enumerate(mine[want["stages"]:]):
            assert load.get_x() >= slices[i][1] - 1e-9


@pytest.mark.parametrize("step", list(pictures.STEPS))
def test_the_labels_give_the_kernel_s_tiles(step):
    want = _expected(step)
    fig = pictures.timeline(step)
    rows, cols = want["tile"]
    title = fig.get_suptitle()
    assert pictures.STEPS[step] in title and f"{rows} x {cols} tiles" in title and f"STAGES = {want['stages']}" in title
    ring = fig.axes[0].get_title()
    assert f"{want['stages']} stages" in ring and f"B {want['bk']} x {want['b_cols']}" in ring
    ticks = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    if step == "tc/12":
        assert sum(f"{rows} x {cols}" in t for t in ticks) == want["consumers"]
    elif step != "tc/11":
        per = want["bm"] // want["consumers"]
        for c in range(want["consumers"]):
            assert sum(f"consumer {c}\nrows {c * per}-{(c + 1) * per - 1}" in t for t in ticks) == want["cluster"]


def test_pingpong_consumers_multiply_in_turn_and_store_behind_each_other():
    fig = pictures.timeline("tc/12")
    math = _gids(fig, "math:0:")
    tiles = sorted({int(g.split(":")[3]) for g in math})
    assert len(tiles) >= 4
    runs = []
    for t in tiles:
        mine = [p for g, p in math.items() if int(g.split(":")[3]) == t]
        owners = {g.split(":")[2] for g in math if int(g.split(":")[3]) == t}
        assert owners == {str(t % 2)}, f"tile {t} belongs to consumer {t % 2} alone"
        runs.append((min(_span(p)[0] for p in mine), max(_span(p)[1] for p in mine)))
    for (_, end), (start, _) in zip(runs, runs[1:]):
        assert start >= end - 1e-9, "one consumer's math after the other's"
    stores = _gids(fig, "store:0:")
    for t in tiles[:-1]:
        s0, s1 = _span(stores[f"store:0:{t}"])
        start, end = runs[t + 1]
        assert s0 < end and start < s1, f"tile {t}'s stores overlap tile {t + 1}'s math"


def test_tc08_waits_for_its_stores_and_tc09_stores_behind_the_next_tile():
    for step, kind in (("tc/08", "regs:0:0"), ("tc/09", "store:0:0")):
        fig = pictures.timeline(step)
        epilogue = _span(_gids(fig, kind)[kind])
        next_tile = min(_span(p)[0] for g, p in _gids(fig, "math:0:").items() if g.split(":")[3] == "1")
        if step == "tc/08":
            assert next_tile >= epilogue[1] - 1e-9
        else:
            assert next_tile < epilogue[1]


def test_tc10_one_copy_fills_the_same_part_of_b_in_both_ctas():
    fig = pictures.timeline("tc/10")
    parts, loads = _gids(fig, "part:"), _gids(fig, "load:")
    cluster = _expected("tc/10")["cluster"]
    for q in range(cluster):
        faces = {tuple(p.get_facecolor()) for g, p in parts.items() if g.split(":")[3] == str(q)}
        mine = {tuple(p.get_facecolor()) for g, p in loads.items() if g.split(":")[1] == str(q)}
        assert len(faces) == 1 and faces == mine, f"CTA {q}'s loads fill its part of B in every CTA"
    assert len(_gids(fig, "multicast:")) == cluster


def test_stream_k_pieces_cover_the_tail_once_and_add_after_the_first_piece():
    blocks, tiles, kt = 3, 5, pictures.SLICES
    seen = []
    for b in range(blocks):
        pieces = pictures._stream_k_walk(b, tiles, kt, blocks, blocks, blocks)
        assert pieces[0] == (b, 0, kt)                                  # its whole tile first
        tail = pieces[1:]
        assert [t for t, _, _ in tail] == sorted((t for t, _, _ in tail), reverse=True), "last piece first"
        seen += [(t, k) for t, k0, k1 in tail for k in range(k0, k1)]
    assert sorted(seen) == [(t, k) for t in range(blocks, tiles) for k in range(kt)]
    fig = pictures.timeline("tc/11")
    stores, adds = _gids(fig, "store:"), _gids(fig, "add:")
    assert adds
    for g, p in adds.items():
        _, b, t = g.split(":")
        first = [(int(h.split(":")[1]), s) for h, s in stores.items() if h.split(":")[2] == t]
        assert len(first) == 1 and first[0][0] < int(b), "one first piece, stored by an earlier block"
        assert p.get_x() >= _span(first[0][1])[1] - 1e-9, "added once the first piece is in C"


def test_an_unknown_step_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="'tc/13'.*tc/08, tc/09, tc/10, tc/11, tc/12"):
        pictures.timeline("tc/13")


# --- chapter 15: the 128-byte swizzle -------------------------------------------------------------

def test_swizzle128_chunk_is_the_definition():
    for row in range(24):
        where = [pictures.swizzle128_chunk(row, j) for j in range(8)]
        assert where == [j ^ (row % 8) for j in range(8)]
        assert sorted(where) == list(range(8))
        assert [pictures.swizzle128_chunk(row, p) for p in where] == list(range(8))      # its own inverse
    for j in range(8):
        assert len({pictures.swizzle128_chunk(r, j) for r in range(8)}) == 8            # 8 rows, 8 bank groups
    for bad, name in (({"row": -1, "chunk": 0}, "row"), ({"row": 0, "chunk": 8}, "chunk=8"),
                      ({"row": 1.0, "chunk": 0}, "1.0")):
        with pytest.raises(ValueError, match=name):
            pictures.swizzle128_chunk(**bad)


def test_the_picture_shows_the_swizzle_and_its_bank_groups():
    fig = pictures.swizzle128(chunk=3)
    cells = _gids(fig, "cell:")
    assert len(cells) == 2 * 64
    for g in cells:
        swizzled, r, p, logical = map(int, g.split(":")[1:])
        assert logical == (pictures.swizzle128_chunk(r, p) if swizzled else p)
    for swizzled, groups in ((0, 1), (1, 8)):
        shaded = {int(g.split(":")[3]) for g, c in cells.items() if g.startswith(f"cell:{swizzled}:")
                  and g.endswith(":3")}
        assert len(shaded) == groups
    assert "8-way conflict" in _gids(fig, "verdict:0")["verdict:0"].get_text()
    assert "no conflict" in _gids(fig, "verdict:1")["verdict:1"].get_text()
    bm, bk = re.search(r"constexpr int BM = (\d+), BN = \d+, BK = (\d+);", HEADER).groups()
    assert f"{bm} x {bk} values of 2 bytes" in fig.get_suptitle()


# (That the TMA copy writes each chunk where swizzle128_chunk says is held by every TMA test of tests/test_ptx.py,
# whose expected layout, _swizzled_128, is built from it: on the emulator and on a Hopper GPU.)


# --- chapter 13: warp tiling ------------------------------------------------------------------------

def test_the_warp_tiled_variants_are_chapter_13_s():
    known = pictures.warp_tiled_variants()
    assert "sgemm/12_interior" in known and "sgemm/09_warp_tiling" in known
    assert all(registry.get(k).chapter == "13-sgemm-climb" for k in known)
    with pytest.raises(ValueError, match="sgemm/12_interior"):
        pictures.warp_tiling("sgemm/06_register_tiling")
    with pytest.raises(ValueError, match="warp must be 0..7"):
        pictures.warp_tiling("sgemm/12_interior", warp=8)


@pytest.mark.parametrize("key", pictures.warp_tiled_variants())
def test_the_warps_drawn_are_the_block_s_warps(key):
    v = registry.get(key)
    c = v.resolve()
    _, block, _ = v.launch(ops.Gemm.square(1000), c)
    warps = (c["BM"] // c["WM"]) * (c["BN"] // c["WN"])
    fig = pictures.warp_tiling(key)
    assert len(_gids(fig, "warp:")) == warps == registry.block_threads(block) // 32
    title = fig.get_suptitle()
    assert f"{c['BM']} x {c['BN']}" in title and f"WM x WN = {c['WM']} x {c['WN']}" in title


@pytest.mark.parametrize("key, params, warp", [("sgemm/12_interior", {}, 0), ("sgemm/12_interior", {"LANES": 8}, 7),
                                               ("sgemm/09_warp_tiling", {}, 5), ("sgemm/10_double_buffer", {}, 0)])
def test_every_element_of_the_warp_s_tile_has_one_lane(key, params, warp):
    g = pictures.warp_geometry(key, **params)
    fig = pictures.warp_tiling(key, warp=warp, **params)
    owner = {}
    for gid in _gids(fig, "lane:"):
        lane, r0, c0 = map(int, gid.split(":")[1:])
        for r in range(r0, r0 + 4):
            for c in range(c0, c0 + 4):
                assert (r, c) not in owner, f"({r}, {c}) drawn for lanes {owner[(r, c)]} and {lane}"
                owner[(r, c)] = lane
    wm, wn = tilemap.warp_corner(g["BM"], g["BN"], g["WM"], g["WN"], warp, g["LR"])
    assert set(owner) == {(wm + r, wn + c) for r in range(g["WM"]) for c in range(g["WN"])}
    for lane in range(32):
        drawn = sorted(rc for rc, who in owner.items() if who == lane)
        assert drawn == sorted(tilemap.lane_outputs(g["BM"], g["BN"], g["WM"], g["WN"], warp, lane, g["LR"]))


@pytest.mark.parametrize("lanes", [4, 8])
def test_the_interior_kernel_writes_what_the_picture_draws(lanes):
    """sgemm/12_interior with its stores given warp * 1000 + lane: who wrote each element of C (one block)."""
    key = "sgemm/12_interior"
    v = registry.get(key)
    c = v.resolve(LANES=lanes)
    source = gl.load(v.source).source
    store = "gl_store_warp_tile<MI, NI, LR, LC, SPLITK>("
    assert source.count(store) == 1
    source = source.replace(store, "for (auto& row : acc) for (float& x : row) x = warp * 1000.0f + lane;\n    "
                            + store)
    problem = ops.Gemm(m=c["BM"], n=c["BN"], k=c["BK"])
    grid, block, shared = v.launch(problem, c)
    kernel = gl.load(code=source).get(v.expression(problem, **c))
    A = gl.xp.ones((c["BM"], c["BK"]), dtype=numpy.float32)
    B = gl.xp.ones((c["BK"], c["BN"]), dtype=numpy.float32)
    C = gl.xp.full((c["BM"], c["BN"]), numpy.nan, dtype=numpy.float32)
    kernel(grid, block, (A, B, C, numpy.int32(c["BM"]), numpy.int32(c["BN"]), numpy.int32(c["BK"])), shared_mem=shared)
    wrote = gl.to_host(C)
    g = pictures.warp_geometry(key, LANES=lanes)
    for warp in range(g["warps"]):
        fig = pictures.warp_tiling(key, warp=warp, LANES=lanes)
        for gid in _gids(fig, "lane:"):
            lane, r0, c0 = map(int, gid.split(":")[1:])
            assert (wrote[r0:r0 + 4, c0:c0 + 4] == warp * 1000 + lane).all(), (warp, lane, r0, c0)
