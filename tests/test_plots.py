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
