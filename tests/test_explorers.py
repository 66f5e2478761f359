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
        assert "GLExplorers." in page and "GLModel" in page and "<script" in page
        assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    with pytest.raises(ValueError, match="no recorded sweep"):
        gl.explorers.sweep_explorer("tensor cores")
