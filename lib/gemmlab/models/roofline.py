"""The roofline model of chapter 01: attainable rate = min(peak, intensity x bandwidth)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy

from .device import GBS, TFLOP, DeviceModel


@dataclass(frozen=True)
class Floor:
    """The least time an operation can take on a device, and which ceiling sets it."""
    op_label: str
    compute_s: float
    memory_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"

    def __str__(self):
        return (f"{self.op_label}: at least {self.seconds * 1e6:,.1f} µs ({self.bound}-bound: "
                f"F/P = {self.compute_s * 1e6:,.1f} µs, Q/B = {self.memory_s * 1e6:,.1f} µs)")


def floor(op, model: DeviceModel) -> Floor:
    return Floor(op.label, op.flops / model.peak_fp32, op.bytes / model.bandwidth)


def attainable(intensity, model: DeviceModel):
    """FLOP/s the roofline allows at the given intensity (FLOP/byte)."""
    return numpy.minimum(model.peak_fp32, numpy.asarray(intensity, dtype=float) * model.bandwidth)


def plot(models, points=(), ax=None, title=None):
    """Draw one roofline per model and place measured points (label, intensity, FLOP/s) on it.

    Each model's legend entry says where its ceilings come from (datasheet, attributes, measured).
    """
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.8))
    models = [m for m in models if m is not None]
    lo = min([0.05] + [p[1] / 2 for p in points])
    hi = max([1e4] + [p[1] * 2 for p in points])
    x = numpy.logspace(numpy.log10(lo), numpy.log10(hi), 400)
    for i, m in enumerate(models):
        style = "-" if i == 0 else "--"
        ax.plot(x, attainable(x, m) / TFLOP, style, lw=2,
                label=f"{m.name}, {m.source.split(':')[0]}: {m.peak_fp32 / TFLOP:.1f} TFLOP/s, "
                      f"{m.bandwidth / GBS:,.0f} GB/s")
        ax.axvline(m.ridge, color=ax.lines[-1].get_color(), lw=0.8, ls=":")
    for label, intensity, rate in points:
        ax.plot([intensity], [rate / TFLOP], "o", ms=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s (FP32)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    lo_y, hi_y = ax.get_ylim()
    # room above the roof for the labels of the points on it, and below the lowest y label for the lowest x one
    ax.set_ylim(lo_y / 2, hi_y * 3)
    if title:
        ax.set_title(title, fontsize=10)
    label_points(ax, [(label, intensity, rate / TFLOP) for label, intensity, rate in points])
    return ax


def label_points(ax, points, fontsize: float = 10):
    """Label (label, x, y) points so that no label overlaps another label or a point and each stays inside
    the axes: beside its point where it can, else moved up or down (in steps of a line) with a leader
    line back to the point. Returns the annotations."""
    ax.figure.canvas.draw()                   # final limits and transforms
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed = [ax.transData.transform((x, y)) for _, x, y in points]
    occupied = [(px - 5, py - 5, px + 5, py + 5) for px, py in placed]
    legend = ax.get_legend()
    if legend is not None:
        lb = legend.get_window_extent(renderer)
        occupied.append((lb.x0, lb.y0, lb.x1, lb.y1))
    pt = ax.figure.dpi / 72                   # pixels per point
    line = round(fontsize * 1.5)              # one line of labels, in points
    out = []
    order = sorted(range(len(points)), key=lambda i: -points[i][2])

    def clear(b):
        return (b.x0 >= frame.x0 and b.x1 <= frame.x1 and b.y0 >= frame.y0 and b.y1 <= frame.y1
                and not any(b.x0 < o[2] and o[0] < b.x1 and b.y0 < o[3] and o[1] < b.y1 for o in occupied))

    for i in order:
        label, x, y = points[i]
        choice = None
        for step in range(13):
            for dy in ([0] if step == 0 else [line * step, -line * step]):
                for dx, ha in ((7, "left"), (-7, "right")):
                    a = ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx, dy - 3), fontsize=fontsize,
                                    ha=ha)
                    b = a.get_window_extent(renderer)
                    if clear(b):
                        choice = (a, b, dy)
                        break
                    a.remove()
                if choice:
                    break
            if choice:
                break
        if choice is None:
            a = ax.annotate(label, (x, y), textcoords="offset points", xytext=(7, -3), fontsize=fontsize)
            choice = (a, a.get_window_extent(renderer), 0)
        a, b, dy = choice
        if abs(dy) > 6:
            a.arrow_patch = None
            a.remove()
            a = ax.annotate(label, (x, y), textcoords="offset points", xytext=a.xyann, fontsize=fontsize, ha=a.get_ha(),
                            arrowprops={"arrowstyle": "-", "lw": 0.6, "alpha": 0.6, "shrinkA": 0, "shrinkB": 4})
        occupied.append((b.x0 - pt, b.y0 - pt, b.x1 + pt, b.y1 + pt))
        out.append(a)
    return out


def measured_points(model: DeviceModel) -> list:
    """cuBLAS on DOT, GEMV and square SGEMM as (label, intensity, FLOP/s), from the model's measurements."""
    from ..ops import Gemm
    pts = [(f"cuBLAS {p['op']}", p["intensity"], p["flops"]) for p in model.measured_ops]
    pts += [(f"cuBLAS SGEMM N={n}", Gemm.square(n).intensity, rate) for n, rate in sorted(model.measured_sgemm.items())]
    return pts


def plot_device(model: DeviceModel, ax=None):
    """Chapter 01's figure: the device's peak roofline, its measured roofline, and cuBLAS placed on them."""
    env = model.environment
    title = f"{env.get('gpu', model.name)}, measured {env.get('date', '?')[:10]}"
    return plot([model, model.measured], measured_points(model), ax=ax, title=title)


def gap_table(model: DeviceModel) -> list:
    """For each measured point: its rate, the measured roof at its intensity, and the fraction reached."""
    roof = model.measured or model
    rows = []
    for label, intensity, rate in measured_points(model):
        top = float(attainable(intensity, roof))
        rows.append((label, intensity, rate, top, rate / top))
    return rows
