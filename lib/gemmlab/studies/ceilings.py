"""The ceilings study: this GPU's copy bandwidth and cuBLAS SGEMM rate, measured (chapter 01, the roofline).

``python -m gemmlab ceilings --record`` measures the current GPU and writes ``results/ceilings-<gpu>.json``;
without a GPU, :func:`current` returns the recorded ceilings the chapters show and says so. The model it fills
in, the presets and the records' reading are :mod:`gemmlab.models.device`, whose names this module also offers
(``gl.device`` is this module).
"""
from __future__ import annotations

from dataclasses import replace

from .. import ops, record
from ..cases import problem as problem_of
from ..models.device import (FP32_LANES, FP64_PEAKS, GBS, PRESETS, PROFILES, TENSOR_PEAKS, TFLOP, DeviceModel,
                             _as_dict, _from_dict, describe, from_attributes, nominal, preset, recorded, table)
from ..runtime import backend as hw

# gl.device is this module: the model's names (models.device) and its measurement, in one place
__all__ = ["DeviceModel", "PRESETS", "TENSOR_PEAKS", "FP64_PEAKS", "FP32_LANES", "PROFILES", "TFLOP", "GBS", "preset",
           "from_attributes", "recorded", "nominal", "describe", "table", "SGEMM_SIZES", "measure", "save", "current"]


SGEMM_SIZES = (1024, 2048, 4096, 8192)


def measure(copy_bytes: int = 1 << 30, sgemm_sizes=SGEMM_SIZES, reps: int = 20) -> DeviceModel:
    """Attribute peaks plus the measured ceilings: a device-to-device copy and cuBLAS SGEMM."""
    from ..timing import bench
    model = from_attributes()
    copy = problem_of("copy", copy_bytes // 4)
    t = bench({}, copy, reps=reps)
    timings = [t]
    points = []
    for op in (problem_of("dot", 1 << 24), ops.Gemv(m=4096, n=4096)):
        timings.append(bench({}, op, reps=reps))
        lib = timings[-1].library
        points.append({"op": op.label, "intensity": op.intensity, "flops": lib.gflops * 1e9,
                       "bytes_per_s": lib.gbs * 1e9})
    sgemm = {}
    for n in sgemm_sizes:
        timings.append(bench({}, problem_of("gemm", n), reps=max(5, reps // (1 + n // 4096))))
        sgemm[n] = timings[-1].library.gflops * 1e9
    return replace(model, measured_copy=t.library.gbs * 1e9, measured_sgemm=sgemm,
                   measured_ops=tuple(points), timings=tuple(x.to_dict() for x in timings),
                   environment=t.environment)


def save(model: DeviceModel):
    return record.save(f"ceilings-{record.slug(model.name)}", _as_dict(model))


def current() -> DeviceModel:
    """This GPU, measured now; without a GPU, the recorded H200 ceilings (``.environment`` says when)."""
    if hw.on_gpu:
        model = measure()
        record.keep("ceilings", "this GPU", {**_as_dict(model), "environment": model.environment})
        return model
    mine = record.kept("ceilings", "this GPU")
    if mine is not None:
        return _from_dict(mine[0], {**mine[0]["environment"], "shown_as": mine[1]})
    return recorded()
