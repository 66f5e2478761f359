"""The explorers' arithmetic (model.js, run in node) agrees with the library, and the library's index
functions agree with what the kernels actually do (instrumented on the current backend)."""
import json
import shutil
import subprocess

import numpy
import pytest

import gemmlab as gl
from gemmlab import tilemap
from gemmlab.explorers import HERE

node = shutil.which("node")
needs_node = pytest.mark.skipif(node is None, reason="node is not installed (it runs model.js in the tests)")


def run_model(expression: str):
    script = f"const M = require({json.dumps(str(HERE / 'model.js'))}); console.log(JSON.stringify({expression}));"
    return json.loads(subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout)


@needs_node
def test_counts_match_gemmlab_ops():
    cases = [("DOT", {"n": 1 << 24}, gl.ops.Dot(n=1 << 24)),
             ("GEMV", {"m": 4096, "n": 1024}, gl.ops.Gemv(m=4096, n=1024)),
             ("GEMM", {"m": 300, "n": 200, "k": 500}, gl.ops.Gemm(m=300, n=200, k=500))]
    for op, size, ref in cases:
        for item, dtype in ((4, numpy.float32), (8, numpy.float64)):
            for beta in (False, True):
                r = ref.__class__(**{**ref.__dict__, "dtype": dtype, **({"beta_nonzero": beta} if op != "DOT" else {})})
                got = run_model(f"M.counts({json.dumps(op)}, {json.dumps(size)}, {item}, {json.dumps(beta)})")
                assert got == {"F": r.flops, "Q": r.bytes}, (op, item, beta)


@needs_node
def test_floor_matches_gemmlab_roofline():
    h200 = gl.device.preset("H200")
    for op in (gl.ops.Dot(n=1 << 20), gl.ops.Gemm.square(2048)):
        got = run_model(f"M.floor({op.flops}, {op.bytes}, {h200.peak_fp32}, {h200.bandwidth})")
        ref = gl.roofline.floor(op, h200)
        assert got["bound"] == ref.bound and got["seconds"] == pytest.approx(ref.seconds)


@needs_node
@pytest.mark.parametrize("n, tile", [(64, 16), (20, 16), (8, 2), (31, 4)])
def test_tile_map_matches_gemmlab_tilemap(n, tile):
    m = tilemap.TileMap(n, tile)
    got = run_model(f"[M.tiles({n}, {tile}), M.globalLoads({n}, {tile}), M.aTile(1, 0, 1), M.bTile(1, 0, 1)]")
    assert got[0] == m.tiles and got[1] == pytest.approx(m.global_loads())
    if m.tiles > 1:
        assert tuple(got[2]) == m.a_tile(1, 0, 1) and tuple(got[3]) == m.b_tile(1, 0, 1)


@needs_node
@pytest.mark.parametrize("T, RM, RN, tx, ty", [(16, 2, 2, 3, 1), (32, 4, 2, 15, 7), (8, 1, 4, 1, 6)])
def test_register_map_matches_gemmlab_tilemap(T, RM, RN, tx, ty):
    got = run_model(f"[M.threadOutputs({T},{RM},{RN},{tx},{ty}), M.threadAsRows({T},{RM},{RN},{tx},{ty}), "
                    f"M.threadBsCols({T},{RM},{RN},{tx},{ty})]")
    assert [tuple(x) for x in got[0]] == tilemap.thread_outputs(T, RM, RN, tx, ty)
    assert got[1] == tilemap.thread_as_rows(T, RM, RN, tx, ty) and got[2] == tilemap.thread_bs_cols(T, RM, RN, tx, ty)


def _instrumented(replacements: dict):
    """The register-tiling kernel with some lines replaced, compiled on the current backend."""
    source = gl.load("sgemm/06_register_tiling.cu").source
    for old, new in replacements.items():
        assert old in source, old
        source = source.replace(old, new)
    return gl.load(code=source)


STORE = "if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];"
READ_A = "for (int i = 0; i < RM; ++i) a[i] = As[ty * RM + i][k];"
READ_B = "for (int j = 0; j < RN; ++j) b[j] = Bs[k][tx * RN + j];"


@pytest.mark.parametrize("T, RM, RN", [(16, 2, 2), (32, 4, 2), (16, 4, 4)])
def test_the_kernel_touches_what_the_tile_map_draws(T, RM, RN):
    n = T                                   # one block, one phase
    A = gl.xp.ones((n, n), dtype=numpy.float32)
    B = gl.xp.ones((n, n), dtype=numpy.float32)
    block = (T // RN, T // RM)

    def run(module):
        C = gl.xp.full((n, n), numpy.nan, dtype=numpy.float32)
        module.get(f"sgemm_register_tiling<{T}, {RM}, {RN}, 1>")(1, block, (A, B, C, n, n, n))
        return gl.to_host(C)

    owner = run(_instrumented({STORE: "if (r < M && c < N) C[(size_t)r * N + c] = threadIdx.y * 1000 + threadIdx.x;"}))
    rows = run(_instrumented({READ_A: "for (int i = 0; i < RM; ++i) { (void)As[0][0]; a[i] = ty * RM + i; }",
                              READ_B: "for (int j = 0; j < RN; ++j) b[j] = 1.0f;"})) / T
    cols = run(_instrumented({READ_A: "for (int i = 0; i < RM; ++i) a[i] = 1.0f;",
                              READ_B: "for (int j = 0; j < RN; ++j) { (void)Bs[0][0]; b[j] = tx * RN + j; }"})) / T
    for ty in range(T // RM):
        for tx in range(T // RN):
            for (r, c), ar, bc in zip(tilemap.thread_outputs(T, RM, RN, tx, ty),
                                      [a for a in tilemap.thread_as_rows(T, RM, RN, tx, ty) for _ in range(RN)],
                                      tilemap.thread_bs_cols(T, RM, RN, tx, ty) * RM):
                assert owner[r, c] == ty * 1000 + tx
                assert rows[r, c] == ar and cols[r, c] == bc


def test_explorers_embed_their_data_and_code():
    for e in (gl.explorers.roofline_calculator(), gl.explorers.tilemap_trainer(1),
              gl.explorers.sweep_explorer("gemv geometry")):
        page = e._repr_html_()
        assert "GLExplorers.mount(" in page and "GLModel" in page and "<script" in page
        assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    with pytest.raises(ValueError, match="no recorded sweep"):
        gl.explorers.sweep_explorer("tensor cores")


def test_every_recorded_sweep_row_is_a_registry_configuration():
    for which, (_, _, key, params) in gl.explorers.SWEEPS.items():
        data = gl.explorers.sweep_data(which)
        v = gl.registry.get(key)
        configs = [v.resolve(**r["config"]) for r in data["rows"]]      # each a configuration the kernel has
        assert all(c in v.choices() for c in configs) and len({str(c) for c in configs}) == len(configs), which
        for p in params:                                                 # and every value its slider offers
            assert {c[p] for c in configs} == set(v.params.get(p, {c[p] for c in configs})), (which, p)
        assert all(set(r["params"]) == set(params) and r[data["metric"]] > 0 for r in data["rows"])
        assert data["start"] in [r["params"] for r in data["rows"]] and data["cublas"] > 0


# ---------------------------------------------------------------- the live sweep explorer (anywidget)
anywidget = pytest.importorskip("anywidget")
from gemmlab.explorers import live  # noqa: E402


def test_outside_a_kernel_the_sweep_explorer_is_the_static_one():
    assert not live.available()
    assert isinstance(gl.explorers.sweep_explorer("tiling"), gl.explorers.Explorer)


def test_asking_for_the_live_explorer_without_anywidget_says_what_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "anywidget", None)         # as if it were not installed
    live._widget_class.cache_clear()
    try:
        assert not live.available()
        with pytest.raises(ImportError, match="pip install anywidget"):
            gl.explorers.sweep_explorer("tiling", live=True)
    finally:
        live._widget_class.cache_clear()


def test_the_live_widget_carries_the_static_explorer_for_where_widgets_cannot_draw():
    w = gl.explorers.sweep_explorer("cache blocking", live=True)
    bundle, _ = w._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.model_id
    assert bundle["text/html"].count("GLExplorers.mount(") == 1
    assert w.data == gl.explorers.sweep_data("cache blocking")
    # the widget's front end is the book's explorer, mounted with the live hook
    assert gl.explorers.script() in w._esm and "GLExplorers.mount(el, \"sweep\"" in w._esm


@pytest.mark.parametrize("which", list(gl.explorers.SWEEPS))
def test_a_request_from_the_page_runs_that_configuration_here(which):
    w = gl.explorers.sweep_explorer(which, live=True)
    i = len(w.data["rows"]) - 1                      # the last row: not the recorded best
    w.request = {"row": i, "n": 1}                   # what the page sends when a slider is let go
    answer = w.results[str(i)]
    row = w.data["rows"][i]
    config = ",".join(f"{k}={v}" for k, v in row["config"].items())
    if gl.on_gpu:
        assert answer["value"] > 0 and answer["cublas"] > 0 and "measured now on" in answer["summary"]
    else:
        assert "value" not in answer and "CPU emulator" in answer["summary"]
        assert config in answer["summary"] and answer["summary"].count("-> OK") == 1
    assert w.status == live.where()


def test_bad_requests_and_failures_are_shown_in_the_explorer(monkeypatch):
    w = gl.explorers.sweep_explorer("tiling", live=True)
    w.request = {"row": 3, "n": 1}
    assert w.status == "no row 3 in this sweep (it has 3)" and w.results == {}

    def broken(*args, **kwargs):
        raise AssertionError("wrong results, not timing them")
    monkeypatch.setattr(live, "run_row", broken)
    w.request = {"row": 0, "n": 2}
    assert w.status == "02_shared_tiling[TILE=8] failed: AssertionError: wrong results, not timing them"
    assert w.results == {}


def test_refresh_keeps_the_html_form_of_widgets_and_no_widget_state():
    import nbformat
    from gemmlab.refresh import WIDGET_VIEW, drop_widget_views
    nb = nbformat.v4.new_notebook(metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {}}})
    view = {WIDGET_VIEW: {"model_id": "x", "version_major": 2, "version_minor": 1}}
    nb.cells = [nbformat.v4.new_code_cell("w", outputs=[nbformat.v4.new_output(
                    "display_data", data={"text/plain": "w", "text/html": "<div>explorer</div>", **view})]),
                nbformat.v4.new_code_cell("bar", outputs=[nbformat.v4.new_output(
                    "display_data", data={"text/plain": "HBox()", **view})])]
    assert drop_widget_views(nb) == [nb.cells[1].id]
    assert "widgets" not in nb.metadata
    assert sorted(nb.cells[0].outputs[0].data) == ["text/html", "text/plain"]
    assert nb.cells[1].outputs == [], "a progress bar's snapshot is not kept"


WARP_CASES = [(128, 128, 64, 32, 3, 17), (128, 256, 64, 64, 7, 31), (64, 128, 32, 64, 2, 0), (64, 64, 32, 32, 3, 9)]


@needs_node
@pytest.mark.parametrize("BM, BN, WM, WN, warp, lane", WARP_CASES)
def test_warp_map_matches_gemmlab_tilemap(BM, BN, WM, WN, warp, lane):
    args = f"{BM},{BN},{WM},{WN},{warp},{lane}"
    got = run_model(f"[M.warpCorner({BM},{BN},{WM},{WN},{warp}), M.laneAsCols({args}), M.laneBsCols({args}), "
                    f"M.laneOutputs({args})]")
    assert tuple(got[0]) == tilemap.warp_corner(BM, BN, WM, WN, warp)
    assert got[1] == tilemap.lane_as_cols(BM, BN, WM, WN, warp, lane)
    assert got[2] == tilemap.lane_bs_cols(BM, BN, WM, WN, warp, lane)
    assert [tuple(x) for x in got[3]] == tilemap.lane_outputs(BM, BN, WM, WN, warp, lane)


@pytest.mark.parametrize("BM, BN, WM, WN", [(128, 128, 64, 32), (64, 128, 32, 64)])
def test_the_warp_tiled_kernel_writes_what_the_warp_map_draws(BM, BN, WM, WN):
    """sgemm/09_warp_tiling with its stores replaced by warp * 1000 + lane: who wrote each element of C."""
    source = gl.load("sgemm/09_warp_tiling.cu").source
    store = "gl_store_warp_tile<MI, NI, LR, LC>(C, M, N, row0, col0, wm, wn, lm, ln, acc);"
    assert source.count(store) == 1
    source = source.replace(store, "for (auto& row : acc) for (float& x : row) x = warp * 1000.0f + lane;\n    " + store)
    kernel = gl.load(code=source).get(f"sgemm_warp_tiling<{BM}, {BN}, 8, {WM}, {WN}>")
    A = gl.xp.ones((BM, 8), dtype=numpy.float32)
    B = gl.xp.ones((8, BN), dtype=numpy.float32)
    C = gl.xp.full((BM, BN), numpy.nan, dtype=numpy.float32)
    kernel(1, (BM // WM) * (BN // WN) * 32, (A, B, C, BM, BN, 8))
    owner = gl.to_host(C)
    expect = numpy.full((BM, BN), numpy.nan)
    for warp in range((BM // WM) * (BN // WN)):
        for lane in range(32):
            for r, c in tilemap.lane_outputs(BM, BN, WM, WN, warp, lane):
                assert numpy.isnan(expect[r, c]), "each element has one owner"
                expect[r, c] = warp * 1000 + lane
    assert not numpy.isnan(expect).any() and (owner == expect).all()


def test_the_warp_map_refuses_what_the_kernel_cannot_be():
    with pytest.raises(ValueError, match="warp tiles 48x32"):
        tilemap.lane_outputs(128, 128, 48, 32, 0, 0)
    with pytest.raises(ValueError, match="warps 0..7"):
        tilemap.lane_outputs(128, 128, 64, 32, 8, 0)
