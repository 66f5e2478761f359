"""The GPU's clocks, power and throttle reasons while a timed loop runs: read, never set.

A GPU's clock moves with its power and temperature: a kernel that draws the board to its power limit runs at a
lower SM clock than one that does not, and two figures taken at different clocks rank the clocks as much as
the kernels. So every timed loop (:func:`gemmlab.timing.bench`) samples, from a thread beside it, what NVML (the
driver's management library, reached here through ctypes) says: the SM clock, the board's power draw, the
temperature and the reasons the clock is held below its maximum (the power cap, a thermal slowdown). Each
sample is given to the case whose CUDA events enclose it, so a timing says at what clock each of its rows ran.

Nothing here changes a clock or a limit. Without NVML (no NVIDIA driver, the emulator) a :class:`Sampler`
takes no samples and says why.
"""
from __future__ import annotations

import ctypes
import threading
import time

import numpy

# NVML's clock-event ("throttle") reasons, as nvml.h numbers them
REASONS = {0x1: "idle", 0x2: "applications clocks setting", 0x4: "power cap", 0x8: "hardware slowdown",
           0x10: "sync boost", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
           0x80: "power brake", 0x100: "display clocks setting"}
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0
# nvml.h's NVML_FI_DEV_POWER_INSTANT: the board's draw now, on every architecture, where nvmlDeviceGetPowerUsage
# gives a one-second average on Ampere (but GA100) and newer, longer than most timed loops' calls
_FIELD_POWER_INSTANT = 186
# how each kind of power reading is described
POWER_KINDS = {"instant": "instantaneous readings", "average": "NVML's power usage, a one-second average on Ampere "
                                                               "and newer"}


class _FieldValue(ctypes.Structure):
    """nvml.h's nvmlFieldValue_t: a field's id and scope, when it was read, its value's type, the read's status and
    the value (a union of at most 8 bytes)."""
    _fields_ = [("field_id", ctypes.c_uint), ("scope_id", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latency_us", ctypes.c_longlong), ("value_type", ctypes.c_int), ("status", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]

_nvml = None          # the loaded library, once initialised
_why_not = None       # why NVML cannot be used here (None: not tried yet, or it can)


def _library():
    """libnvidia-ml, initialised once; None (and _why_not set) where there is none."""
    global _nvml, _why_not
    if _nvml is not None or _why_not is not None:
        return _nvml
    for name in ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        _why_not = "no NVIDIA management library (libnvidia-ml) on this machine"
        return None
    init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
    if init is None or init() != 0:
        _why_not = "the NVIDIA management library did not start"
        return None
    _nvml = lib
    return lib


def _reason_function(lib):
    for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
        fn = getattr(lib, name, None)
        if fn is not None:
            return fn
    return None


def device_handle(pci_bus_id: str | None = None):
    """NVML's handle of the GPU with this PCI bus id (the CUDA device in use when None); None without NVML."""
    lib = _library()
    if lib is None:
        return None
    if pci_bus_id is None:
        from .runtime import backend as hw
        if not hw.on_gpu:
            return None
        pci_bus_id = hw.xp.cuda.Device().pci_bus_id
    handle = ctypes.c_void_p()
    get = getattr(lib, "nvmlDeviceGetHandleByPciBusId_v2", None) or lib.nvmlDeviceGetHandleByPciBusId
    if get(pci_bus_id.encode(), ctypes.byref(handle)) != 0:
        return None
    return handle


def read(handle) -> dict | None:
    """One reading of the GPU: SM and memory clocks (MHz), power (W), temperature (C), clock-event reasons (a
    bit mask of REASONS). None where NVML cannot say."""
    lib = _library()
    if lib is None or handle is None:
        return None
    sm, mem, temp = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    reasons = ctypes.c_ulonglong()
    if lib.nvmlDeviceGetClockInfo(handle, _CLOCK_SM, ctypes.byref(sm)) != 0:
        return None
    out = {"sm_mhz": sm.value}
    if lib.nvmlDeviceGetClockInfo(handle, _CLOCK_MEM, ctypes.byref(mem)) == 0:
        out["mem_mhz"] = mem.value
    power = _power(lib, handle)
    if power is not None:
        out["power_w"], out["power_kind"] = power
    if lib.nvmlDeviceGetTemperature(handle, _TEMPERATURE_GPU, ctypes.byref(temp)) == 0:
        out["temperature_c"] = temp.value
    get_reasons = _reason_function(lib)
    if get_reasons is not None and get_reasons(handle, ctypes.byref(reasons)) == 0:
        out["reasons"] = reasons.value
    return out


def _power(lib, handle) -> tuple | None:
    """(the board's power in W, its kind: 'instant' or 'average', POWER_KINDS), or None where NVML says neither."""
    get_fields = getattr(lib, "nvmlDeviceGetFieldValues", None)
    if get_fields is not None:
        field = _FieldValue(field_id=_FIELD_POWER_INSTANT)
        if get_fields(handle, 1, ctypes.byref(field)) == 0 and field.status == 0 and field.value_type in (1, 2, 3):
            milliwatts = field.value & 0xFFFFFFFF if field.value_type == 1 else field.value    # (an unsigned int)
            return milliwatts / 1000.0, "instant"
    milliwatts = ctypes.c_uint()
    if lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(milliwatts)) == 0:
        return milliwatts.value / 1000.0, "average"
    return None


def limits(handle=None) -> dict:
    """What bounds the clocks of the GPU in use: its highest SM clock (MHz) and its enforced power limit (W); {}
    without NVML."""
    lib = _library()
    handle = device_handle() if handle is None else handle
    if lib is None or handle is None:
        return {}
    out = {}
    mhz, milliwatts = ctypes.c_uint(), ctypes.c_uint()
    if lib.nvmlDeviceGetMaxClockInfo(handle, _CLOCK_SM, ctypes.byref(mhz)) == 0:
        out["sm_clock_limit_mhz"] = mhz.value
    if lib.nvmlDeviceGetEnforcedPowerLimit(handle, ctypes.byref(milliwatts)) == 0:
        out["power_limit_w"] = milliwatts.value / 1000.0
    return out


class Sampler:
    """Samples the GPU every ``period`` seconds from a thread while the ``with`` block runs. ``samples``: a list
    of (host time in ns, reading); ``why_not``: why there are none (no NVML), else None."""

    def __init__(self, period: float = 0.005, handle=None):
        self.period = period
        self.samples = []
        self.handle = device_handle() if handle is None else handle
        self.why_not = _why_not if self.handle is None else None
        if self.handle is None and self.why_not is None:
            self.why_not = "NVML does not know the GPU in use"
        self._stop = threading.Event()
        self._thread = None

    def _run(self):
        while not self._stop.is_set():
            reading = read(self.handle)
            if reading is not None:
                self.samples.append((time.monotonic_ns(), reading))
            self._stop.wait(self.period)

    def __enter__(self):
        if self.handle is not None:
            self._thread = threading.Thread(target=self._run, name="gemmlab-gpu-state", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False


def summary(readings: list, limit: dict | None = None) -> dict:
    """What a list of readings says: the SM clock's median, lowest and highest, the power's median and highest (and
    its kind: 'instant' where every reading was, else 'average'), the highest temperature, and for each clock-event
    reason the share of readings that had it ({} for none)."""
    if not readings:
        return {}
    sm = numpy.array([r["sm_mhz"] for r in readings], dtype=float)
    out = {"samples": len(readings), "sm_clock_mhz": float(numpy.median(sm)), "sm_clock_min_mhz": float(sm.min()),
           "sm_clock_max_mhz": float(sm.max())}
    power = [r["power_w"] for r in readings if "power_w" in r]
    if power:
        out["power_w"] = float(numpy.median(power))
        out["power_max_w"] = float(max(power))
        kinds = {r.get("power_kind") for r in readings if "power_w" in r}
        if kinds <= set(POWER_KINDS):
            out["power_kind"] = "instant" if kinds == {"instant"} else "average"
    temps = [r["temperature_c"] for r in readings if "temperature_c" in r]
    if temps:
        out["temperature_max_c"] = int(max(temps))
    masks = [r["reasons"] for r in readings if "reasons" in r]
    if masks:
        shares = {name: sum(1 for m in masks if m & bit) / len(masks) for bit, name in REASONS.items()}
        out["reasons"] = {name: round(share, 3) for name, share in shares.items() if share > 0}
    out.update(limit or {})
    return out


def attribute(samples: list, intervals: dict, near_ns: int = 10_000_000) -> dict:
    """The readings of each case: ``intervals`` maps a case to its [start, stop) host times in ns (from its CUDA
    events). A sample inside an interval belongs to its case; an interval shorter than the sampling period that
    holds none gets the sample nearest its middle, if one lies within ``near_ns`` (the clock moves over
    milliseconds, a short kernel may not). Returns case -> its readings."""
    out = {name: [] for name in intervals}
    if not samples:
        return out
    times = numpy.array([t for t, _ in samples], dtype=numpy.int64)
    for name, pairs in intervals.items():
        for lo, hi in pairs:
            first, last = numpy.searchsorted(times, lo, side="left"), numpy.searchsorted(times, hi, side="left")
            if last > first:
                out[name].extend(samples[i][1] for i in range(first, last))
                continue
            middle = (lo + hi) // 2
            near = [i for i in (first - 1, first) if 0 <= i < len(times)]
            best = min(near, key=lambda i: abs(times[i] - middle), default=None)
            if best is not None and abs(times[best] - middle) <= near_ns:
                out[name].append(samples[best][1])
    return out


def describe(state: dict) -> str:
    """One line for a timing's notes: the SM clock (median and range), the power and what held the clock."""
    if not state:
        return ""
    text = (f"SM clock {state['sm_clock_mhz']:.0f} MHz (median; {state['sm_clock_min_mhz']:.0f} to "
            f"{state['sm_clock_max_mhz']:.0f})")
    if "sm_clock_limit_mhz" in state:
        text += f" of {state['sm_clock_limit_mhz']:.0f}"
    if "power_w" in state:
        kind = f"{POWER_KINDS[state['power_kind']]}: " if state.get("power_kind") in POWER_KINDS else ""
        text += f", power {state['power_w']:.0f} W ({kind}median; at most {state['power_max_w']:.0f})"
        if "power_limit_w" in state:
            text += f" of a {state['power_limit_w']:.0f} W limit"
    reasons = {k: v for k, v in state.get("reasons", {}).items() if k != "idle"}
    if reasons:
        text += ", clock held by " + ", ".join(f"{k} ({v:.0%} of samples)" for k, v in reasons.items())
    return text
