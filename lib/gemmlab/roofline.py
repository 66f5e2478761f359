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
        _, ax = plt.subplots(figsize=(7.5, 4.6))
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
    previous, drop = None, 0
    for label, intensity, rate in sorted(points, key=lambda p: p[1]):
        ax.plot([intensity], [rate / TFLOP], "o", ms=7)
        # points close together on the x axis get their labels stacked downwards instead of overlapping
        drop = drop + 11 if previous is not None and intensity < 3 * previous else 0
        previous = intensity
        ax.annotate(label, (intensity, rate / TFLOP), textcoords="offset points", xytext=(7, -12 - drop),
                    fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s (FP32)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def measured_points(model: DeviceModel) -> list:
    """cuBLAS on DOT, GEMV and square SGEMM as (label, intensity, FLOP/s), from the model's measurements."""
    from .ops import Gemm
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
