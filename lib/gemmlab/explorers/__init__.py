"""The book's explorers: self-contained HTML and inline JavaScript, interactive wherever the page is.

They work in the static HTML book with no Python kernel and no network (the data they need is
embedded in the page), in JupyterLab and in Colab. Each returns an object that notebooks display as
HTML. The arithmetic they draw lives in ``model.js``, and tests check it against the library
(``gemmlab.ops``, ``gemmlab.models.roofline``, ``gemmlab.tilemap``).

- :func:`roofline_calculator` (chapter 01): GPU, operation, sizes, precision, beta -> F, Q, intensity,
  ridge point, binding ceiling, floor time, on a roofline with the measured kernels of results/.
- :func:`tilemap_trainer` (chapters 02 and 06): which tiles a block loads in each phase; which outputs
  and shared rows one thread of a register-tiled kernel owns and reads; which outputs one lane of a
  warp-tiled kernel owns, and what its warp reads of the shared tiles.
- :func:`sweep_explorer` (chapters 02, 05, 06 and 08): sliders over a sweep recorded on the H200. In a
  live notebook it is a widget (``live.py``) with the same front end that also re-runs the chosen
  configuration: timed against cuBLAS on a GPU, checked against float64 on the CPU emulator.
"""
from __future__ import annotations

import html
import itertools
import json

from .assets import HERE, css, script
from .sweeps import SWEEPS

__all__ = ["Explorer", "roofline_calculator", "tilemap_trainer", "sweep_explorer", "sweep_data", "SWEEPS", "HERE",
           "css", "script"]

_ids = itertools.count()


class Explorer:
    """An explorer ready to display: ``_repr_html_`` gives the self-contained HTML."""

    def __init__(self, kind: str, data: dict, title: str):
        self.kind, self.data, self.title = kind, data, title
        self.uid = f"gl-{kind}-{next(_ids)}"

    def _repr_html_(self) -> str:
        payload = json.dumps(self.data).replace("</", "<\\/")
        # the placeholder stays where scripts may not run (Jupyter will not run them in an output it did
        # not produce itself); everywhere else the explorer replaces it at once
        return (f'<div id="{self.uid}"><p><em>{html.escape(self.title)}: an interactive explorer, drawn by its '
                "script: in the book at once, in Jupyter once this cell has run.</em></p></div>\n"
                f"<style>{css()}</style>\n<script>\n{script()}\n"
                f"GLExplorers.mount(document.getElementById({json.dumps(self.uid)}), {json.dumps(self.kind)}, "
                f"{payload}, {json.dumps(self.title)});\n</script>")

    def __repr__(self):
        return f"<{self.title}: an interactive explorer; shown as HTML in a notebook or the book>"


def _gpu_entries(this_gpu=None) -> list:
    from ..models import device
    from ..runtime.profiles import for_device
    entries = [{"id": f"preset:{k}", "name": m.name, "source": "datasheet", "peak32": m.peak_fp32,
                "peak64": device.FP64_PEAKS.get(k), "bw": m.bandwidth, "tensor": device.TENSOR_PEAKS.get(k, {})}
               for k, m in device.PRESETS.items()]
    rec = device.recorded().measured
    known = for_device(rec.environment["gpu"])             # the GPU the record was measured on
    entries.append({"id": "measured:h200", "name": rec.environment["gpu"], "bw": rec.bandwidth,
                    "source": f"measured {rec.environment['date'][:10]}", "peak32": rec.peak_fp32,
                    "peak64": device.FP64_PEAKS.get(known.key) if known else None,
                    "tensor": device.TENSOR_PEAKS.get(known.key, {}) if known else {}})
    if this_gpu is not None and this_gpu.measured is not None and this_gpu.environment.get("date") != \
            rec.environment.get("date"):
        m = this_gpu.measured
        mine = for_device(this_gpu.name)                   # its datasheet's FP64 and tensor peaks, if known
        entries.append({"id": "this", "name": this_gpu.name, "source": "this GPU, measured now", "bw": m.bandwidth,
                        "peak32": m.peak_fp32, "peak64": device.FP64_PEAKS.get(mine.key) if mine else None,
                        "tensor": device.TENSOR_PEAKS.get(mine.key, {}) if mine else {}})
    return entries


def _measured_points() -> list:
    """Kernels measured on the H200 (results/): cuBLAS, the SGEMM ladder, the BLAS steps."""
    from ..studies import blas_steps as blasbench, ladder
    from ..models import device, roofline
    from ..cases import problem as problem_of
    points = [{"label": label, "I": i, "flops": f, "gpu": "measured:h200"}
              for label, i, f in roofline.measured_points(device.recorded())]
    data = ladder.recorded()
    lad = next(t for t in data["timings"] if t["label"] == ladder.timing_label("ladder", data["N"]))
    gemm = problem_of("gemm", data["N"])
    for step in data["steps"]:
        r = next(r for r in lad["rows"] if r["name"] == step["case"])
        points.append({"label": step["label"], "I": gemm.intensity, "flops": r["gflops"] * 1e9, "gpu": "measured:h200"})
    for t in blasbench.recorded()["timings"]:
        if t["label"].startswith(("DOT steps", "GEMV steps")):
            intensity = 0.25 if t["label"].startswith("DOT") else 0.5
            best = max((r for r in t["rows"] if r["name"] != "cuBLAS"), key=lambda r: r["gflops"])
            points.append({"label": best["name"].split(":")[0], "I": intensity, "flops": best["gflops"] * 1e9,
                           "gpu": "measured:h200"})
    return points


def roofline_calculator(this_gpu=None) -> Explorer:
    """Chapter 01's calculator. ``this_gpu`` (a measured DeviceModel) adds "this GPU" to the choices."""
    gpus = _gpu_entries(this_gpu)
    points = _measured_points()
    for p in points:                       # the JS matches points to the selected GPU by name
        p["gpu"] = next(g["name"] for g in gpus if g["id"] == p["gpu"])
    return Explorer("roofline", {"gpus": gpus, "points": points, "default": len(gpus) - 1},
                    "Roofline calculator")


def tilemap_trainer(mode: int = 0, seed: int = 1) -> Explorer:
    """The tile-map trainer: mode 0 shared-memory tiling (chapter 02), 1 register tiling (chapter 06),
    2 warp tiling (Part IV: block, warp and lane tiles), 3 a quiz (which tiles does a block load in phase
    p, which elements does a thread own; answered by clicking, checked; ``seed`` picks the first question)."""
    if mode not in (0, 1, 2, 3):
        raise ValueError(f"mode is 0 (shared-memory tiling), 1 (register tiling), 2 (warp tiling) or 3 (quiz), got {mode!r}")
    return Explorer("tilemap", {"mode": mode, "seed": int(seed)}, "Tile map")


def sweep_data(which: str) -> dict:
    """A recorded sweep as the explorer draws it: one row per configuration, with its variant params."""
    if which not in SWEEPS:
        raise ValueError(f"no recorded sweep {which!r}; there are: {', '.join(SWEEPS)}")
    source, label, key, params = SWEEPS[which]
    from ..studies import blas_steps as blasbench, ladder
    from .. import registry
    if source == "ladder":
        data = ladder.recorded()
        t = next(t for t in data["timings"] if t["label"] == ladder.timing_label(label, data["N"]))
        choices = [c for k, c in ladder.SWEEPS[label] if k == key]
        rows = [{"params": c, "config": c, "name": ladder.case_name(key, c),
                 "gflops": next(r["gflops"] for r in t["rows"] if r["name"] == ladder.case_name(key, c))}
                for c in choices]
        metric = "gflops"
    else:
        t = next(t for t in blasbench.recorded()["timings"] if t["label"].startswith(label))
        rows = []
        for c in registry.get(key).choices():
            name = blasbench.geometry_name(c)
            r = next(r for r in t["rows"] if r["name"] == name)
            rows.append({"params": {"GRID": str(c["GRID"] or "ceil(M/2B)"), "BLOCK": c["BLOCK"]}, "config": c,
                         "name": name, "gflops": r["gflops"], "gbs": r["gbs"]})
        metric = "gbs"
    values = {p: sorted({r["params"][p] for r in rows}, key=lambda v: (isinstance(v, str), v)) for p in params}
    best = max(rows, key=lambda r: r[metric])
    lib = next(r for r in t["rows"] if r["name"] == "cuBLAS")[metric]
    env = t["environment"]
    others = "" if len(params) == 1 else " with the other sliders fixed"
    caption = (f"{t['label']}: recorded on {env['gpu']} on {env['date'][:10]}, median of {t['reps']} repetitions, "
               f"L2 flushed; bars: every value of {params[0]}{others}; grey: cuBLAS")
    return {"key": key, "params": params, "values": values, "rows": rows, "cublas": lib, "start": best["params"],
            "caption": caption, "metric": metric, "gpu": env["gpu"]}


def sweep_explorer(which: str, live: bool | None = None):
    """Sliders over a recorded sweep: "tiling", "cache blocking", "register tiling" or "gemv geometry".

    ``live`` (default: when running in a notebook kernel with anywidget installed) returns the widget
    that also re-runs the chosen configuration here; it still shows as the static explorer wherever
    widgets cannot draw (the built book, a notebook opened without running it).
    """
    data = sweep_data(which)
    title = f"Recorded sweep: {which}"
    from . import live as _live
    if live is None:
        live = _live.available()
    if live:
        return _live.LiveSweep(which, data, title, Explorer("sweep", data, title))
    return Explorer("sweep", data, title)
