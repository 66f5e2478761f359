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
    changed: tuple = ()          # the inputs (by position) the kernel wrote, which it should only read

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and numpy.isfinite(self.error) and self.error < self.tolerance

    def _changed(self) -> str:
        if not self.changed:
            return ""
        which = ", ".join(f"inputs[{i}]" for i in self.changed)
        return f"; it changed {which}, which it should only read"

    def verdict(self) -> str:
        """The line a chapter prints: the same on every backend when the kernel is right."""
        return f"{self.label}: rel. error < {self.tolerance:g}: {self.ok}{self._changed()}"

    def __str__(self):
        extra = f", {self.unwritten} of {self.size} outputs never written" if self.unwritten else ""
        return f"{self.label}: rel. error {self.error:.2e} (tolerance {self.tolerance:g}){extra} -> " \
               + ("OK" if self.ok else "WRONG") + self._changed()


def _kept(inputs) -> tuple:
    """Copies of the inputs as drawn, taken before a launch: the reference is computed from these, so a kernel
    that writes its inputs is judged against what it was given, and its writes are seen. Each copy has its
    original's strides (a kernel reads raw memory: a Fortran-ordered matrix must stay one)."""
    return tuple(_same_layout(a) if hasattr(a, "copy") and hasattr(a, "shape") else a for a in inputs)


def _same_layout(a):
    """A copy of array ``a`` with the very strides of ``a``."""
    k = a.copy(order="K")
    if k.strides == a.strides or a.size == 0:
        return k
    # the bytes the strides reach, from the lowest to one past the highest, in a buffer of their own
    lo = sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    if isinstance(a, numpy.ndarray):
        room = numpy.empty(hi - lo, dtype=numpy.uint8)
        view = numpy.ndarray(a.shape, a.dtype, buffer=room, offset=-lo, strides=a.strides)
    else:
        room = hw.xp.empty(hi - lo, dtype=numpy.uint8)
        view = hw.xp.ndarray(a.shape, a.dtype, memptr=room.data + (-lo), strides=a.strides)
    view[...] = a
    return view


def _changed(inputs, kept) -> tuple:
    """The positions of the inputs that differ, bit for bit, from their copies."""
    xp = hw.xp
    out = []
    for i, (a, k) in enumerate(zip(inputs, kept)):
        if hasattr(a, "shape") and hasattr(k, "shape"):
            floating = xp.asarray(a).dtype.kind in "fc"
            if not bool(xp.array_equal(a, k, equal_nan=floating)):
                out.append(i)
    return tuple(out)


def output_values(op, out):
    """The output on the host as numbers (the problem reads an output stored as bits, BF16's: ops.Op.values)."""
    host = hw.to_host(out)
    read = getattr(op, "values", None)
    return read(host) if read is not None else host


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
    kept = _kept(inputs)
    out = op.output()                     # NaN-filled
    run(inputs, out)
    hw.synchronize()
    host = output_values(op, out)
    unwritten = int(numpy.isnan(host).sum())
    err = rel_error(host, op.reference(kept), op.error_scale(kept)) if not unwritten else float("nan")
    return CheckResult(label or op.label, err, tolerance, unwritten, int(host.size), _changed(inputs, kept))


def check_many(runs: dict, op, *, tolerance: float = FP32_TOLERANCE, seed=None) -> dict:
    """Check several implementations of ``op`` on one draw of fresh random inputs and one reference.

    ``runs`` maps a label to ``run(inputs, out)``; each gets its own NaN-poisoned output. Used before
    timing large problems, where one float64 reference is worth sharing.
    """
    rng = numpy.random.default_rng(seed)
    tolerance = _tolerance(op, tolerance)
    drawn = op.inputs(rng)
    kept = _kept(drawn)
    ref = op.reference(kept)
    scale = op.error_scale(kept)
    results = {}
    for label, run in runs.items():
        inputs = _kept(kept)              # each run on the inputs as drawn, whatever an earlier run did to its own
        out = op.output()
        run(inputs, out)
        hw.synchronize()
        host = output_values(op, out)
        unwritten = int(numpy.isnan(host).sum())
        err = rel_error(host, ref, scale) if not unwritten else float("nan")
        results[label] = CheckResult(label, err, tolerance, unwritten, int(host.size), _changed(inputs, kept))
    return results
