"""Checking a kernel's answer before anything is timed.

Every check draws fresh random inputs, fills the output with NaN first (so an element the kernel never
wrote shows up as NaN instead of passing as a stale zero), runs, and compares with a float64 reference
by the relative error ||out - ref|| / ||ref|| (Frobenius norm). FP32 arithmetic lands far under 1e-5
on the sizes the book uses; an unwritten element or a race lands far above.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy

from .runtime import backend as hw

FP32_TOLERANCE = 1e-5


def rel_error(out, ref, scale: float | None = None) -> float:
    """||out - ref|| / ||ref|| in float64 on the host; NaN anywhere in ``out`` gives NaN.

    ``scale`` replaces ||ref|| where that is the wrong yardstick: a dot product can cancel to nearly
    zero, so its error is measured against ``sum |x_i y_i|`` instead (what rounding actually scales with).
    """
    out = numpy.asarray(hw.to_host(out))
    ref = numpy.asarray(ref)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {out.shape} does not match the reference shape {ref.shape}")
    out, ref = out.reshape(-1), ref.reshape(-1)
    squares = [0.0, 0.0]                                # ||out - ref||^2, ||ref||^2: a chunk at a time (a large
    for at in range(0, out.size, _CHUNK):               # product's float64 copies would be hundreds of MB each)
        r = ref[at:at + _CHUNK].astype(numpy.float64)
        d = out[at:at + _CHUNK].astype(numpy.float64) - r
        squares[0] += float(d @ d)
        squares[1] += float(r @ r)
    diff = squares[0] ** 0.5
    scale = squares[1] ** 0.5 if scale is None else scale
    return float(diff / scale) if scale else float(diff)


_CHUNK = 1 << 18


@dataclass(frozen=True)
class CheckResult:
    label: str
    error: float
    tolerance: float
    unwritten: int
    size: int

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and numpy.isfinite(self.error) and self.error < self.tolerance

    def verdict(self) -> str:
        """The line a chapter prints: the same on every backend when the kernel is right."""
        return f"{self.label}: rel. error < {self.tolerance:g}: {self.ok}"

    def __str__(self):
        extra = f", {self.unwritten} of {self.size} outputs never written" if self.unwritten else ""
        return f"{self.label}: rel. error {self.error:.2e} (tolerance {self.tolerance:g}){extra} -> " \
               + ("OK" if self.ok else "WRONG")


def _tolerance(op, base: float) -> float:
    """The problem's own say on the tolerance (ops.Op.tolerance), where it has one (an exercise's may not)."""
    adjust = getattr(op, "tolerance", None)
    return adjust(base) if callable(adjust) else base


def check(run, op, *, label: str = "", tolerance: float = FP32_TOLERANCE, seed=None) -> CheckResult:
    """Run ``run(inputs, out)`` once on fresh random inputs for ``op`` and compare with float64.

    ``seed=None`` (the default) draws new inputs on every call, so passing once proves little about
    one lucky input; tests call it several times.
    """
    rng = numpy.random.default_rng(seed)
    tolerance = _tolerance(op, tolerance)
    inputs = op.inputs(rng)
    out = op.output()                     # NaN-filled
    run(inputs, out)
    hw.synchronize()
    host = hw.to_host(out)
    unwritten = int(numpy.isnan(host).sum())
    err = rel_error(host, op.reference(inputs), op.error_scale(inputs)) if not unwritten else float("nan")
    return CheckResult(label or op.label, err, tolerance, unwritten, int(host.size))


def check_many(runs: dict, op, *, tolerance: float = FP32_TOLERANCE, seed=None) -> dict:
    """Check several implementations of ``op`` on one draw of fresh random inputs and one reference.

    ``runs`` maps a label to ``run(inputs, out)``; each gets its own NaN-poisoned output. Used before
    timing large problems, where one float64 reference is worth sharing.
    """
    rng = numpy.random.default_rng(seed)
    tolerance = _tolerance(op, tolerance)
    inputs = op.inputs(rng)
    ref = op.reference(inputs)
    scale = op.error_scale(inputs)
    results = {}
    for label, run in runs.items():
        out = op.output()
        run(inputs, out)
        hw.synchronize()
        host = hw.to_host(out)
        unwritten = int(numpy.isnan(host).sum())
        err = rel_error(host, ref, scale) if not unwritten else float("nan")
        results[label] = CheckResult(label, err, tolerance, unwritten, int(host.size))
    return results
