"""gl.Table, the one table helper: an HTML table in a notebook, aligned text in a log, the same cells in both."""
import re
import subprocess
import sys

import pytest

import gemmlab as gl


def _table():
    return gl.Table(["kernel", "GFLOP/s", "of cuBLAS"],
                    [["naive", "1,234", "5.2%"], ["tiled <16>", "12,345", "52.0%"]],
                    title="SGEMM, N = 4096", notes=["cuBLAS: cublasSgemm & co."])


def test_the_text_form_aligns_columns_and_keeps_title_and_notes():
    lines = str(_table()).splitlines()
    assert lines[0] == "SGEMM, N = 4096" and lines[-1] == "cuBLAS: cublasSgemm & co."
    assert lines[1] == "kernel      GFLOP/s  of cuBLAS"
    assert lines[2] == "naive         1,234       5.2%"            # numbers right-aligned, names left
    assert repr(_table()) == str(_table())


def test_the_html_form_has_every_cell_escaped_and_aligned():
    h = _table()._repr_html_()
    assert h.count("<tr>") == 3 and h.count("<th ") == 3 and h.count("<td ") == 6
    assert "tiled &lt;16&gt;" in h and "&amp; co." in h and "<16>" not in h
    assert 'text-align:right">12,345<' in h and 'text-align:left">naive<' in h


@pytest.mark.parametrize("bad, match", [
    (lambda: gl.Table(["a", "b"], [["1"]]), "row 0 has 1 cells; the table has 2 columns"),
    (lambda: gl.Table(["a"], [["1"]], align="c"), "align is one letter"),
    (lambda: gl.Table(["a", "b"], [], align="l"), "align is one letter"),
])
def test_a_malformed_table_is_refused_by_name(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


def test_show_prints_the_text_form_outside_a_notebook():
    code = ("import gemmlab as gl; gl.Table(['a', 'b'], [['x', '1'], ['yy', '22']], title='T').show()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["T", "a    b", "x    1", "yy  22"]


# --- every table the library shows is a gl.Table --------------------------------------------------------------

def _budget():
    """A made-up hopper_budget result (straight lines in K), as tests/test_studies.py makes one."""
    from gemmlab import tensor
    rows = [{"k": k, "tc06_ms": 0.020 + 0.050 * k / 1024, "cublas_ms": 0.015 + 0.048 * k / 1024, "write_ms": 0.018,
             "error": 1e-6, "timing": {"reps": 10}} for k in (512, 1024, 2048, 4096)]
    r = {"n": 4096, "precision": "fp16", "ks": [512, 1024, 2048, 4096], "rows": rows, "tile": [128, 256], "sms": 132,
         "blocks_per_sm": 1, "environment": {"gpu": "a GPU", "date": "2026-12-01"}, "shown_as": "made up for the test"}
    return {**r, **tensor.budget(r)}


def _ladder_show():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    gl.ladder.show("03-coalescing")
    plt.close("all")


TIMING = ["case", "median ms", "IQR ms", "GFLOP/s", "GB/s", "vs cuBLAS"]
RESOURCES = ["configuration", "threads", "regs", "smem B", "spill B", "blocks/SM", "occupancy", "limited by"]
HOPPER = ["shape", "tc/06", "tc/08", "tc/09", "tc/10", "tc/11", "tc/12", "Triton", "cuBLAS", "best vs bar", "vs Triton"]
KNOBS = ["shape", "tc/09", "3 stages", "REGS=24", "REGS=56", "256x128", "ping-pong"]
SHOWN = {   # what a chapter (or the command line) calls -> the columns of each table it shows, in order
    "gl.ladder.timed(...).show()": (lambda: gl.ladder.timed("naive and tiled").show(), [TIMING]),
    "gl.ladder.show": (_ladder_show, [["step", "GFLOP/s", "of cuBLAS", "the seed's claim"]]),
    "gl.ladder.resources_table": (lambda: gl.ladder.resources_table([("sgemm/02_shared_tiling", {"TILE": 16})]),
                                  [RESOURCES]),
    # one kernel, more instruction kinds: the kernel across, the kinds down
    "gl.sass.show": (lambda: gl.sass.show("01_naive"), [["instructions", "01_naive[BLOCK=16]"]]),
    "gl.sass.show, many kernels": (lambda: gl.sass.show("04_padded"), [["kernel", "regs", "total"]]),
    "gl.profiling.evidence": (lambda: gl.profiling.evidence("ch2", ["duration_ns", "stall_barrier"]),
                              [["", "time us", "barrier"]]),
    # the climb's few kernels across, its many metrics down (the narrower way round)
    "gl.profiling.climb_table": (gl.profiling.climb_table, [["", "sgemm/10, boustrophedon FMAs"]]),
    "gl.profiling.part4_table": (gl.profiling.part4_table, [["", "time us", "issue %", "ld wave M", "ld confl M",
                                                            "st wave M", "st confl M", "short sb", "long sb", "barrier",
                                                            "dispatch"]]),
    "gl.profiling.roof_table": (gl.profiling.roof_table, [["", "time us", "DRAM %", "occup %", "issue %", "long sb"]]),
    "gl.profiling.tensor_table": (gl.profiling.tensor_table, [["", "time us", "tensor %", "issue %", "inst (M)", "regs",
                                                              "wait", "barrier", "long sb"]]),
    "gl.profiling.table": (gl.profiling.table, [["step", "time", "SM %", "mem %", "DRAM %", "regs", "th.occ %",
                                                 "ach.occ %", "no elig. %", "issued/sch"]]),
    "gl.hopper.ladder_table": (gl.hopper.ladder_table, [HOPPER, HOPPER]),
    "gl.hopper.knob_table": (gl.hopper.knob_table, [KNOBS, KNOBS]),
    "gl.hopper.profile_table": (gl.hopper.profile_table, [["", "time us", "blocks", "tensor %", "SM GHz", "L2 MiB",
                                                          "DRAM rd MiB", "issue %", "wait", "barrier", "long sb",
                                                          "st wave M", "st confl M"]]),
    "gl.tensor.print_budget": (lambda: gl.tensor.print_budget(_budget()),
                               [["K", "tc/06 ms", "IQR", "cuBLAS ms", "IQR", "vs cuBLAS", "write of C ms"]]),
    "gl.tensor.hopper_tables": (gl.tensor.hopper_tables, [TIMING, TIMING]),
    "gl.tensor.split_tables": (gl.tensor.split_tables, [TIMING]),
    "gl.tensor.print_error_vs_k": (lambda: gl.tensor.print_error_vs_k(gl.record.shown("tensor")["error_vs_k"]),
                                   [["product"]]),                                          # then "K = 16", ...
    "gl.tensor.show_summary": (lambda: gl.tensor.show_summary(gl.record.shown("tensor")),
                               [["precision", "product"]]),
    "gl.climb.summary(...).show()": (lambda: gl.climb.summary(gl.climb.recorded()).show(),
                                     [["problem", "best", "vs cuBLAS", "target"]]),
    "gl.device.table(...).show()": (lambda: gl.device.table(gl.device.recorded()).show(),
                                    [["ceiling", "value", "from"]]),
    "gl.blasbench.print_atomic_error": (lambda: gl.blasbench.print_atomic_error(gl.blasbench.recorded()["atomic_error"]),
                                        [["n", "atomic: |err|/|dot|", "shuffle: |err|/|dot|"]]),
    "gl.blasbench.scaling_table": (lambda: gl.blasbench.scaling_table("DOT", [2**16, 2**20], ["DOT 6: warp shuffles",
                                                                                              "cuBLAS"]),
                                   [["size", "DOT 6: warp shuffles", "cuBLAS"]]),
    "gl.demos.print_missing_barrier": (lambda: gl.demos.print_missing_barrier(1, shape=(40, 36, 50), runs=2),
                                       [["backend", "run", "rel. error", "verdict", "bits"]]),
    "blas --shapes (blas_shapes.show)": (
        lambda: __import__("gemmlab.studies.blas_shapes", fromlist=["show"]).show(gl.record.shown("blas-shapes")),
        [["routine", "size", "form", "gl.blas", "cuBLAS", "ratio"],
         ["routine", "class", "shape", "ratio", "rule", "winner"],
         ["class", "out", "shape", "batch", "ratio", "TFLOP/s", "cuBLAS", "error", "bound", "host us", "cuBLAS us",
          "kernel"]]),
}


@pytest.mark.parametrize("name", SHOWN)
def test_every_table_the_library_shows_is_a_table(name, monkeypatch, capsys):
    """Each function that shows a table shows a gl.Table (an HTML table in a notebook) with these columns (first
    columns, where the rest are what the record holds), and returns nothing a cell would show a second time."""
    if gl.on_gpu:
        pytest.skip("the recorded tables: without a GPU")
    call, columns = SHOWN[name]
    shown = []
    monkeypatch.setattr(gl.Table, "show", lambda self: shown.append(self))
    assert call() is None
    assert [t.columns[:len(c)] for t, c in zip(shown, columns)] == columns and len(shown) == len(columns)
    assert all(len(t.columns) > 1 for t in shown)
    assert all(t.rows for t in shown)


def test_a_timing_is_its_table_as_text_and_as_html():
    """Timings (gl.bench, a chapter's timed cell): print gives the Table's text, a cell ending in it its HTML."""
    t = gl.ladder.timed("naive and tiled")
    table = t.table()
    assert repr(t) == str(t) == str(table) and t._repr_html_() == table._repr_html_()
    assert table.title == t.caption() and table.columns == TIMING and len(table.rows) == len(t.rows)
    lines = str(t).splitlines()
    assert lines[1] == "case                       median ms  IQR ms  GFLOP/s  GB/s  vs cuBLAS"
    assert lines[-1].startswith("cuBLAS  ") and lines[-1].endswith("100.0%")


def test_text_summaries_keep_their_text():
    """The summaries the command line prints are the tables' text forms."""
    from gemmlab.studies import crosscheck
    model = gl.device.recorded()
    assert gl.device.describe(model) == str(gl.device.table(model))
    assert gl.device.describe(model).splitlines()[2].split()[:2] == ["FP32", "peak"]
    assert gl.device.describe(model).splitlines()[2].split()[3] == "TFLOP/s"
    r = gl.record.shown("tensor")
    assert re.fullmatch(r"TF32 +cuBLAS +\d\.\d\de-\d\d .*", gl.tensor.summary(r).splitlines()[-1])
    text = crosscheck.report(gl.record.load("emulator-vs-nvidia-h200"))
    assert text.splitlines()[0].split() == ["case", "|gpu-emu|/|ref|", "gpu", "err", "emu", "err", "agree"]
    assert re.fullmatch(r"all agree \(within \S+ or the kernel's tolerance; FP8 and 16-bit C: within the smaller of "
                        r"the two errors\): (True|False)", text.splitlines()[-1])


def test_long_names_may_wrap_in_the_html_but_words_and_numbers_do_not():
    h = gl.Table(["case", "GFLOP/s"], [["12_interior[BM=128,BN=256]", "12,345"]])._repr_html_()
    assert "12_<wbr>interior[<wbr>BM=<wbr>128,<wbr>BN=<wbr>256]" in h and ">12,345<" in h


def test_a_ticking_bar_is_redrawn_while_one_long_step_runs():
    import time
    from gemmlab.progress import ticking

    class Bar:
        refreshed = 0

        def refresh(self):
            self.refreshed += 1
    bar = Bar()
    with ticking(bar, every=0.02):
        time.sleep(0.25)
    drawn = bar.refreshed
    time.sleep(0.1)
    assert drawn >= 5 and bar.refreshed == drawn, "redrawn while the block ran, and no more after it"
    with ticking(None):
        pass
