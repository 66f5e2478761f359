"""The device model: how fast a GPU could go (chapter 01, the roofline).

Two ceilings bound every kernel: the FP32 arithmetic rate and the memory bandwidth. They come in
three grades, and the book always says which one it shows:
- datasheet: the vendor's figures, kept here as presets for common GPUs;
- device attributes: peak FP32 = SMs x FP32 lanes per SM x 2 FLOP x clock, and bandwidth = 2 (double
  data rate) x memory clock x bus width, read from the GPU you are on;
- measured: a large device-to-device copy (bytes read + written) and cuBLAS SGEMM, timed with
  :func:`gemmlab.timing.bench`. These are the ceilings a kernel can actually reach.

The measurement itself is a study, :mod:`gemmlab.studies.ceilings` (``python -m gemmlab ceilings --record``
writes ``results/ceilings-<gpu>.json``); this module is the model, the presets and the records' reading.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..runtime import backend as hw
from .. import record
from ..table import Table

TFLOP, GBS = 1e12, 1e9

from ..runtime.profiles import FP32_LANES, PROFILES     # noqa: E402  (the one table of GPUs)


@dataclass(frozen=True)
class DeviceModel:
    name: str
    peak_fp32: float              # FLOP/s
    bandwidth: float              # bytes/s
    source: str                   # where the two numbers come from, in words
    measured_copy: float | None = None          # bytes/s, read + written
    measured_sgemm: dict = field(default_factory=dict)   # N -> FLOP/s of cuBLAS SGEMM
    measured_ops: tuple = ()      # cuBLAS on the memory-bound ops: dicts of op, intensity, flops, bytes_per_s
    timings: tuple = ()           # the Timings behind the figures, as dicts (bench(..., fallback=...) reads them)
    environment: dict = field(default_factory=dict)

    @property
    def ridge(self) -> float:
        """The ridge point in FLOP/byte: below it memory binds, above it arithmetic."""
        return self.peak_fp32 / self.bandwidth

    @property
    def measured(self):
        """The same device with the measured ceilings (copy, best cuBLAS SGEMM) as its roofline."""
        if not self.measured_copy or not self.measured_sgemm:
            return None
        return replace(self, peak_fp32=max(self.measured_sgemm.values()), bandwidth=self.measured_copy,
                       source=f"measured ({self.environment.get('gpu', self.name)}, "
                              f"{self.environment.get('date', '')[:10]}): copy and cuBLAS SGEMM")

    def summary(self) -> list:
        rows = [("FP32 peak", f"{self.peak_fp32 / TFLOP:.1f} TFLOP/s", self.source.split(";")[0]),
                ("memory bandwidth", f"{self.bandwidth / GBS:.0f} GB/s", self.source.split(";")[-1].strip()),
                ("ridge point", f"{self.ridge:.1f} FLOP/byte", "peak / bandwidth")]
        if self.measured_copy:
            rows.append(("measured copy", f"{self.measured_copy / GBS:.0f} GB/s", "read + written bytes"))
        if self.measured is not None:
            m = self.measured
            rows.append(("measured ridge", f"{m.ridge:.1f} FLOP/byte", "best cuBLAS SGEMM / measured copy"))
        for n, rate in sorted(self.measured_sgemm.items()):
            rows.append((f"cuBLAS SGEMM N={n}", f"{rate / TFLOP:.1f} TFLOP/s", "measured"))
        for p in self.measured_ops:
            rows.append((f"cuBLAS {p['op']}", f"{p['bytes_per_s'] / GBS:.0f} GB/s", "measured, useful bytes"))
        return rows


# Vendor datasheet figures, FP32 non-tensor peak and memory bandwidth, from the profile table
# (gemmlab.runtime.profiles): leads, not measurements.
PRESETS = {key: DeviceModel(p.name, p.datasheet.fp32, p.datasheet.bandwidth, f"datasheet ({p.datasheet.part})")
           for key, p in PROFILES.items()}
# Dense tensor-core peaks (FP32 accumulation) and FP64 peaks where the datasheets give them: the roofline
# calculator's other precisions.
TENSOR_PEAKS = {key: p.datasheet.tensor for key, p in PROFILES.items() if p.datasheet.tensor}
FP64_PEAKS = {key: p.datasheet.fp64 for key, p in PROFILES.items() if p.datasheet.fp64}


def preset(name: str) -> DeviceModel:
    """A datasheet preset by a loose name: 'h200', 'A100', 'RTX 4060', or a full device name."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    for short, model in PRESETS.items():
        if re.sub(r"[^a-z0-9]", "", short.lower()) in key:
            return model
    raise KeyError(f"no preset for {name!r}; presets: {', '.join(PRESETS)}")


def from_attributes() -> DeviceModel:
    """The current GPU's peaks from its own attributes (needs a GPU)."""
    cp = hw.xp
    dev = cp.cuda.Device()
    a = dev.attributes
    cc = tuple(int(c) for c in dev.compute_capability)
    name = record.environment()["gpu"]
    lanes = FP32_LANES.get(cc)
    if lanes is None or "ClockRate" not in a or "MemoryClockRate" not in a:
        fallback = preset(name)
        return replace(fallback, name=name, source=fallback.source + ", the device did not report its clocks")
    peak = a["MultiProcessorCount"] * lanes * 2 * a["ClockRate"] * 1e3
    bandwidth = 2 * a["MemoryClockRate"] * 1e3 * a["GlobalMemoryBusWidth"] / 8
    src = (f"device attributes: {a['MultiProcessorCount']} SMs x {lanes} lanes x 2 FLOP x "
           f"{a['ClockRate'] / 1e6:.2f} GHz; 2 x {a['MemoryClockRate'] / 1e6:.2f} GHz x "
           f"{a['GlobalMemoryBusWidth']} bits / 8")
    return DeviceModel(name, peak, bandwidth, src)


def _as_dict(model: DeviceModel) -> dict:
    return {
        "name": model.name, "peak_fp32": model.peak_fp32, "bandwidth": model.bandwidth,
        "source": model.source, "measured_copy": model.measured_copy,
        "measured_sgemm": {str(k): v for k, v in model.measured_sgemm.items()},
        "measured_ops": list(model.measured_ops),
        "timings": list(model.timings),
        "command": "python -m gemmlab ceilings --record",
    }


def _from_dict(data: dict, environment: dict) -> DeviceModel:
    return DeviceModel(data["name"], data["peak_fp32"], data["bandwidth"], data["source"],
                       data["measured_copy"], {int(k): v for k, v in data["measured_sgemm"].items()},
                       tuple(data.get("measured_ops", ())), tuple(data.get("timings", ())), environment)


def recorded(name: str | None = None) -> DeviceModel:
    """Ceilings recorded on a GPU earlier (``results/ceilings-<gpu>.json``): that GPU's by name, or (no name)
    the record the chapters show, the reader's GPU's, else the H200's (``record.shown``)."""
    data = record.load(f"ceilings-{record.slug(name)}") if name else record.shown("ceilings")
    return _from_dict(data, data["environment"])


def nominal() -> DeviceModel:
    """This GPU's attribute peaks (no measuring); without a GPU, the recorded H200's."""
    return from_attributes() if hw.on_gpu else recorded()


def table(model: DeviceModel) -> Table:
    """A device's ceilings as a :class:`~gemmlab.table.Table` (``.show()`` it): each figure, and where it comes
    from; the title says whether they were measured here or recorded (on which GPU, when)."""
    live = bool(hw.on_gpu and model.environment.get("date"))
    head = (f"{model.name}: measured on this GPU just now" if live else
            f"{model.name}: no GPU here, so these are the ceilings recorded on "
            f"{model.environment.get('gpu', model.name)} on {model.environment.get('date', '?')[:10]}"
            + (f", in {model.environment['shown_as']}" if model.environment.get("shown_as") else ""))
    return Table(["ceiling", "value", "from"], model.summary(), align="lrl", title=head)


def describe(model: DeviceModel) -> str:
    """:func:`table`'s text form."""
    return str(table(model))
