"""The one timing function of the book: :func:`bench`.

How it times, and why:
- CUDA events around each launch (the GPU's own clock, not the host's);
- warm-up calls first, so compilation, module loading and cuBLAS handle creation stay out;
- many repetitions, reported as the median with the quartiles (the spread says how far to trust a
  difference between two rows);
- the L2 cache flushed before every repetition by writing a buffer twice its size, so an input that
  fits in L2 is not timed from the cache the previous repetition left warm;
- round-robin: repetition r runs every case once, in an order rotated by r, so that clock and thermal
  drift hit all cases alike;
- cuBLAS (through CuPy) always runs as a column, on inputs of the same shape, so every rate can be
  read against the vendor's library measured in the same run;
- the SM clock, the power draw and what holds the clock down (the power cap, heat) sampled through NVML
  while the loop runs (:mod:`gemmlab.gpu_state`), each sample given to the case that was running: a row says
  at what clock it ran, and two rows whose clocks differ by more than their margin are not ranked (:func:`rank`).

On the emulator it refuses: CPU time says nothing about a GPU. Recorded GPU figures live in results/.
"""
from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field

import numpy

from .runtime import backend as hw
from .table import Table

LIBRARY = "cuBLAS"


class TimingUnavailable(RuntimeError):
    """Raised when asked to time without a GPU."""


def _require_gpu():
    if not hw.on_gpu:
        raise TimingUnavailable(
            "Timing needs a CUDA GPU: on the CPU emulator a kernel's time is CPU time and says nothing "
            f"about a GPU ({hw.backend_reason}). The book's recorded GPU measurements are in "
            "results/ (gl.record.load(...)); the chapters show them where a live timing would go.")


@dataclass
class Row:
    name: str
    times_ms: numpy.ndarray
    flops: float
    bytes: float
    clock: dict | None = None       # the SM clock while it ran: median, min, max (MHz) and samples (NVML)

    @property
    def clock_mhz(self):
        return self.clock["median"] if self.clock else None

    @property
    def median_ms(self):
        return float(numpy.median(self.times_ms))

    @property
    def q1_ms(self):
        return float(numpy.percentile(self.times_ms, 25))

    @property
    def q3_ms(self):
        return float(numpy.percentile(self.times_ms, 75))

    @property
    def gflops(self):
        return self.flops / (self.median_ms * 1e-3) / 1e9 if self.flops else None

    @property
    def gbs(self):
        return self.bytes / (self.median_ms * 1e-3) / 1e9 if self.bytes else None


@dataclass
class Timings:
    """The result of :func:`bench`: one row per case, the library row last. ``print`` it for the text table;
    ``.show()`` it (or end a notebook cell with it) for the HTML table; ``.table()`` is the :class:`Table`."""
    label: str
    rows: list
    reps: int
    flushed_l2: bool
    environment: dict = field(default_factory=dict)
    recorded: bool = False          # True: read from results/, not measured in this session
    skipped: dict = field(default_factory=dict)   # case name -> why the GPU in use did not run it
    source: str = ""                # a recorded timing: where it was read from (a chapter's record, a study's)
    gpu_state: dict = field(default_factory=dict)  # the clock, power and throttle reasons over the loop (gpu_state)

    def __getitem__(self, name) -> Row:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def library(self):
        return next((r for r in self.rows if r.name == LIBRARY), None)

    def ratio(self, name) -> float | None:
        """Speed of ``name`` relative to cuBLAS (1.0 = as fast; from medians)."""
        lib = self.library
        return lib.median_ms / self[name].median_ms if lib else None

    def records(self) -> list:
        out = []
        for r in self.rows:
            out.append({"name": r.name, "median_ms": r.median_ms, "q1_ms": r.q1_ms, "q3_ms": r.q3_ms,
                        "min_ms": float(r.times_ms.min()), "reps": len(r.times_ms),
                        "gflops": r.gflops, "gbs": r.gbs, "vs_library": self.ratio(r.name)})
            if r.clock:
                out[-1]["clock"] = dict(r.clock)
        return out

    def rank(self, a: str, b: str) -> tuple:
        """(whether rows a and b of this timing may be ranked, why not): see :func:`rank`."""
        recs = {r["name"]: r for r in self.records()}
        return rank(recs[a], recs[b])

    def to_dict(self) -> dict:
        rows = self.records()
        for rec, row in zip(rows, self.rows):
            rec["times_ms"] = [float(t) for t in row.times_ms]
            rec["flops"], rec["bytes"] = row.flops, row.bytes
        out = {"label": self.label, "reps": self.reps, "flushed_l2": self.flushed_l2,
               "environment": self.environment, "rows": rows}
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self.gpu_state:
            out["gpu_state"] = dict(self.gpu_state)
        return out

    @classmethod
    def from_dict(cls, d: dict, recorded: bool = True, source: str = "") -> "Timings":
        rows = [Row(r["name"], numpy.array(r["times_ms"]), r["flops"], r["bytes"], r.get("clock")) for r in d["rows"]]
        return cls(d["label"], rows, d["reps"], d["flushed_l2"], d["environment"], recorded, d.get("skipped", {}),
                   source, d.get("gpu_state", {}))

    def table(self):
        """The timing as a :class:`~gemmlab.table.Table`: the caption above, a row per case, what was skipped
        below."""
        body = []
        clocked = any(r.clock for r in self.rows)      # (a timing taken before clocks were sampled has no column)
        for rec in self.records():
            body.append([rec["name"], f"{rec['median_ms']:.4f}", f"{rec['q3_ms'] - rec['q1_ms']:.4f}",
                         f"{rec['gflops']:.0f}" if rec["gflops"] else "-",
                         f"{rec['gbs']:.0f}" if rec["gbs"] else "-",
                         f"{rec['vs_library']:.1%}" if rec["vs_library"] else "-"]
                        + ([f"{rec['clock']['median']:.0f}" if rec.get("clock") else "-"] if clocked else []))
        from .gpu_state import describe
        notes = [describe(self.gpu_state)] if self.gpu_state.get("samples") else []
        if self.gpu_state.get("unavailable"):
            notes.append(f"clock and power not sampled: {self.gpu_state['unavailable']}")
        notes += [f"skipped on this GPU: {name}: {why}" for name, why in self.skipped.items()]
        return Table(["case", "median ms", "IQR ms", "GFLOP/s", "GB/s", f"vs {LIBRARY}"] + (["SM MHz"] if clocked else []),
                     body, align="lrrrrr" + ("r" if clocked else ""), title=self.caption(), notes=notes)

    def caption(self):
        gpu = self.environment.get("gpu", "?")
        text = (f"{self.label} on {gpu}, {self.environment.get('date', '')[:10]}: median of {self.reps} "
                f"repetitions, CUDA events, L2 {'flushed' if self.flushed_l2 else 'not flushed'}, round-robin")
        if not self.recorded:
            return text
        why = "a GPU is in use, but this cell shows the record" if hw.on_gpu else "no GPU in use"
        return f"RECORDED earlier, not measured here ({why}{'; from ' + self.source if self.source else ''}). " + text

    def show(self) -> None:
        """Show the timing: an HTML table in a notebook, the text form elsewhere."""
        self.table().show()

    def __repr__(self):
        return str(self.table())

    def _repr_html_(self):
        return self.table()._repr_html_()


_flush_buffer = None


def _flush_l2():
    """Evict the L2 cache by writing a buffer twice its size (a memset through the cache)."""
    global _flush_buffer
    if _flush_buffer is None:
        cp = hw.xp
        l2 = cp.cuda.Device().attributes.get("L2CacheSize", 64 << 20)
        _flush_buffer = cp.empty(max(2 * l2, 32 << 20) // 4, dtype=numpy.int32)
    _flush_buffer.fill(0)


def kept(label: str) -> Timings | None:
    """The timing this chapter's run measured under ``label`` (its own record, :func:`gemmlab.record.kept`),
    saying so, or None."""
    from . import record
    mine = record.kept("timing", label)
    return None if mine is None else Timings.from_dict(mine[0], recorded=True, source=mine[1])


def recorded(results: str, label: str) -> Timings:
    """A timing recorded earlier on a GPU: the one this chapter's run measured under ``label`` (:func:`kept`)
    when there is one, else the entry ``label`` of ``results/<results>.json``'s "timings"."""
    from . import record
    mine = kept(label)
    if mine is not None:
        return mine
    data = record.load(results)
    found = [t for t in data.get("timings", []) if t["label"] == label]
    if not found:
        have = ", ".join(t["label"] for t in data.get("timings", [])) or "none"
        raise TimingUnavailable(f"results/{results}.json has no recorded timing {label!r} (it has: {have})")
    return Timings.from_dict(found[0], recorded=True, source=f"results/{results}.json")


_settle_kernel = None


def _settle(us: float):
    """Keep the GPU busy for ``us`` microseconds (one thread reading the global timer): the host meanwhile
    issues the call that is timed next, so that its launch cost is not counted in the kernel's time."""
    global _settle_kernel
    cp = hw.xp
    if _settle_kernel is None:
        _settle_kernel = cp.RawKernel(r"""
extern "C" __global__ void gl_settle(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { __nanosleep(500); asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}""", "gl_settle")
    _settle_kernel((1,), (1,), (numpy.int64(us * 1000),))


def bench(cases: dict, op=None, *, library: bool = True, reps: int = 20, warmup: int = 3,
          flush_l2: bool = True, progress: bool = False, label: str | None = None, seed=None,
          fallback: str | None = None, settle_us: float = 0.0) -> Timings:
    """Time each zero-argument callable in ``cases`` (name -> fn) on the current GPU.

    ``op`` (from :mod:`gemmlab.ops`) gives the FLOP and byte counts for the rate columns and, with
    ``library=True``, the cuBLAS column on fresh random inputs of the same shape. Callables should be
    checked before they are timed (``Variant.check``, :func:`gemmlab.check`): this function
    measures, it does not judge.

    ``settle_us``: before each timed call (after the flush), the GPU waits this long, so that a call whose host
    side takes longer than the flush (Python, argument packing) is timed from the moment its kernel can start:
    for kernels of tens of microseconds, where that host time would otherwise be part of the figure.

    Without a GPU it never times the CPU: with ``fallback="<results name>"`` it returns the timing of
    the same label recorded on a GPU (its caption says so); without, it raises :class:`TimingUnavailable`.
    """
    if not hw.on_gpu and fallback:
        return recorded(fallback, label or (op.label if op else "timing"))
    _require_gpu()
    from . import record
    if os.environ.get("CUPY_TF32") == "1":
        warnings.warn("CUPY_TF32=1: CuPy lets cuBLAS use TF32 for FP32 products, so the cuBLAS column is not "
                      "plain FP32 and FP32 kernels will look slow beside it. Unset CUPY_TF32 to compare fairly.",
                      RuntimeWarning, stacklevel=2)
    if reps < 1 or warmup < 0:
        raise ValueError(f"reps must be >= 1 and warmup >= 0, got reps={reps}, warmup={warmup}")
    cases = dict(cases)
    if library and op is not None:
        inputs, out = op.inputs(numpy.random.default_rng(seed)), op.output()
        cases[LIBRARY] = lambda: op.library(inputs, out)
    if not cases:
        raise ValueError("nothing to time: give at least one case, or an op with library=True")
    cp = hw.xp
    names = list(cases)
    for fn in cases.values():
        for _ in range(warmup):
            fn()
    cp.cuda.get_current_stream().synchronize()

    events = {n: [] for n in names}
    steps = range(reps)
    if progress:
        from tqdm.auto import tqdm
        steps = tqdm(steps, desc=label or "timing", leave=False)
    from . import gpu_state
    # the GPU's time of `origin` is the host's t0 (to within the few microseconds a wait returns in): each case's
    # events then place it on the host's clock, where the sampler's readings are
    origin = cp.cuda.Event()
    origin.record()
    origin.synchronize()
    t0 = time.monotonic_ns()
    with gpu_state.Sampler() as sampler:
        for r in steps:
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                if flush_l2:
                    _flush_l2()
                if settle_us:
                    _settle(settle_us)
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                cases[name]()
                stop.record()
                events[name].append((start, stop))
            if progress and r % 8 == 7:
                stop.synchronize()        # keep the bar honest: do not let the host run far ahead
        cp.cuda.get_current_stream().synchronize()
    at = {n: [(t0 + int(cp.cuda.get_elapsed_time(origin, a) * 1e6), t0 + int(cp.cuda.get_elapsed_time(origin, b) * 1e6))
              for a, b in events[n]] for n in names}
    readings = gpu_state.attribute(sampler.samples, at)
    rows = []
    for n in names:
        times = numpy.array([cp.cuda.get_elapsed_time(a, b) for a, b in events[n]])
        mhz = [x["sm_mhz"] for x in readings[n]]
        clock = ({"median": float(numpy.median(mhz)), "min": float(min(mhz)), "max": float(max(mhz)),
                  "samples": len(mhz)} if mhz else None)
        rows.append(Row(n, times, op.flops if op else 0, op.bytes if op else 0, clock))
    state = gpu_state.summary([x for _, x in sampler.samples], gpu_state.limits(sampler.handle))
    if not state:
        state = {"unavailable": sampler.why_not or "no reading came back in the loop"}
    t = Timings(label or (op.label if op else "timing"), rows, reps, flush_l2, record.environment(),
                gpu_state=state)
    record.keep("timing", t.label, t.to_dict())
    return t


def rank(a: dict, b: dict) -> tuple:
    """(whether two rows of one timing may be ranked, why not): their medians must differ by at least the larger
    of the two's spreads (IQR over median), and, where the clock was sampled for both, their SM clocks by no more
    than that margin (a kernel that ran at a lower clock is not slower by its code alone). Rows are records
    (:meth:`Timings.records`, or a recorded timing's rows)."""
    margin = abs(a["median_ms"] / b["median_ms"] - 1.0)
    spread = max((r["q3_ms"] - r["q1_ms"]) / r["median_ms"] for r in (a, b))
    if margin < spread:
        return False, f"{margin:.1%} apart, within the run's spread ({spread:.1%})"
    ca, cb = (r.get("clock") or {} for r in (a, b))
    if ca and cb:
        clocks = abs(ca["median"] / cb["median"] - 1.0)
        if clocks > margin:
            return False, (f"{margin:.1%} apart, but their SM clocks differ more ({ca['median']:.0f} and "
                           f"{cb['median']:.0f} MHz)")
    return True, ""


def sweep(points, make_cases, make_op, *, desc: str = "sweep", **bench_kw) -> list:
    """Run :func:`bench` over ``points`` with a progress bar; ``make_cases(p)`` and ``make_op(p)`` per point."""
    _require_gpu()
    from tqdm.auto import tqdm
    points = list(points)
    return [bench(make_cases(p), make_op(p), **bench_kw) for p in tqdm(points, desc=desc)]

