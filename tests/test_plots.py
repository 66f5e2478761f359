"""The book's figures are legible: the roofline's point labels overlap no other label, no point and not the
legend, and stay inside the axes (drawn with matplotlib's Agg backend, as the chapters' figures are)."""
from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import gemmlab as gl  # noqa: E402
from matplotlib.text import Text  # noqa: E402


@pytest.mark.parametrize("points", ["recorded", "crowded"])
def test_roofline_point_labels_do_not_overlap(points):
    model = gl.device.recorded()
    pts = gl.roofline.measured_points(model)
    if points == "crowded":                      # the ladder's steps: many points at one intensity
        pts += [(f"step {i}", gl.ops.Gemm.square(4096).intensity, r * 1e12)
                for i, r in enumerate((0.9, 2.5, 3.1, 8.3, 17.9, 21.0, 44.7))]
    ax = gl.roofline.plot([model, model.measured], pts)
    fig = ax.figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    labels = [(t.get_text(), Text.get_window_extent(t, r)) for t in ax.texts]
    assert len(labels) == len(pts)
    frame, legend = ax.get_window_extent(r), ax.get_legend().get_window_extent(r)
    marks = [ax.transData.transform((x, y / 1e12)) for _, x, y in pts]
    for i, (name, a) in enumerate(labels):
        assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1, name
        assert not a.overlaps(legend), name
        for other, b in labels[i + 1:]:
            assert not a.overlaps(b), (name, other)
        for px, py in marks:
            assert not (a.x0 < px + 4 and px - 4 < a.x1 and a.y0 < py + 4 and py - 4 < a.y1), (name, px, py)
    matplotlib.pyplot.close(fig)


# Every figure a chapter draws, as the book shows it: a PNG at the inline backend's 100 dpi, cut to its drawn
# area, in an output column 780 px wide (a 1400 px window), scaled down when it is wider. Its text is no smaller
# than the theme's footnotes (CSS `small`: 13 px) and no two labels overlap.
COLUMN_PX, MIN_PX = 780, 13.0


def _figures():
    from gemmlab.studies import blas_shapes
    error_vs_k = {"ks": [64, 256, 1024, 4096], "m": 64, "n": 64, "spread": 0.0, "backend": "emulator",
                  "errors": {"FP32 (sgemm/02)": [1e-7, 2e-7, 4e-7, 8e-7], "3xTF32 (tc/04)": [1e-7, 2e-7, 3e-7, 5e-7],
                             "TF32": [1e-4, 2e-4, 3e-4, 4e-4], "BF16": [1e-3, 2e-3, 3e-3, 4e-3],
                             "FP16": [1e-4, 2e-4, 3e-4, 5e-4]}, "skipped": {}}
    return {
        "roofline.plot_device": lambda: gl.roofline.plot_device(gl.device.recorded()),
        "tilemap.figure": lambda: gl.tilemap.figure(n=8, tile=2, bi=1, bj=2, p=2),
        "tilemap.fragment_figure m16n8k16": lambda: gl.tilemap.fragment_figure(),
        "tilemap.fragment_figure m16n8k8": lambda: gl.tilemap.fragment_figure("m16n8k8"),
        "ladder.show 02": lambda: gl.ladder.show("02-naive-and-tiled"),
        "ladder.show 06": lambda: gl.ladder.show("06-register-tiling"),
        "ladder.heatmap": lambda: gl.ladder.heatmap("cache blocking: TM x TN", x="TN", y="TM"),
        "blasbench.geometry_heatmap": lambda: gl.blasbench.geometry_heatmap(),
        "blasbench.scaling_plot DOT": lambda: gl.blasbench.scaling_plot("DOT", y="gbs"),
        "blasbench.scaling_plot GEMM": lambda: gl.blasbench.scaling_plot("GEMM", y="gflops"),
        "blas_shapes.plot": lambda: blas_shapes.plot(blas_shapes.load()),
        "tune.plot": lambda: gl.tune.plot(gl.tune.recorded("sgemm/12_interior")),
        "climb.plot": lambda: gl.climb.plot(),
        "tensor.plot_error_vs_k": lambda: gl.tensor.plot_error_vs_k(error_vs_k),
        "hopper.plot": lambda: gl.hopper.plot(),
        **{f"pictures.timeline {step}": (lambda step=step: gl.pictures.timeline(step)) for step in gl.pictures.STEPS},
        "pictures.swizzle128": lambda: gl.pictures.swizzle128(),
        **{f"pictures.warp_tiling {key}": (lambda key=key: gl.pictures.warp_tiling(key))
           for key in gl.pictures.warp_tiled_variants()},
    }


def legibility(fig) -> tuple:
    """(the smallest text as the book shows it, in px; pairs of labels that overlap) of a drawn figure."""
    if not hasattr(fig.canvas, "get_renderer"):          # a figure made without pyplot (gemmlab.pictures)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = fig.get_tightbbox(renderer).width * fig.dpi
    scale = min(1.0, COLUMN_PX / width)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_figure() is fig]
    smallest = min(t.get_fontsize() * fig.dpi / 72 * scale for t in texts)
    boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in texts]   # the text, not its leader
    overlaps = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            across = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            up = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if across > 1 and up > 1:
                overlaps.append((a, b))
    return smallest, overlaps


@pytest.mark.parametrize("name", list(_figures()))
def test_every_figure_is_legible_at_the_book_s_width(name, capsys):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    plt.close("all")
    made = _figures()[name]()
    smallest, overlaps = legibility(made if isinstance(made, Figure) else plt.gcf())
    plt.close("all")
    assert smallest >= MIN_PX, f"{name}: text {smallest:.1f} px high in the book (at least {MIN_PX} px)"
    assert not overlaps, f"{name}: labels overlap: {overlaps[:5]}"


def test_the_legibility_check_sees_small_text_and_overlaps():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(12, 3))          # 1200 px: shown at 65%
    ax.text(0.5, 0.5, "small", fontsize=10)
    ax.text(0.5, 0.5, "on top", fontsize=10)
    smallest, overlaps = legibility(fig)
    plt.close(fig)
    assert smallest < MIN_PX and ("small", "on top") in overlaps
