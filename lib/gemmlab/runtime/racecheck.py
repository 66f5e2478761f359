"""``gl.racecheck``: shared-memory races (and global-memory ones within a warp) found on the CPU emulator, as compute-sanitizer's racecheck finds
them on a GPU (chapter 2's missing barrier is the book's example).

    report = gl.racecheck(kernel, grid, block, args, shared_mem=0)
    print(report)              # each hazard: kind, array and byte, the two threads and their source lines
    report.clean               # True when there is none

The kernel runs once on the emulator, built so that every access to shared memory is recorded: two
accesses to one word by different threads, at least one of them a write, with no ``__syncthreads()``
between them (and no ``__syncwarp()`` when both threads are in one warp) make a hazard: read-after-write,
write-after-read or write-after-write. The words of the array arguments a kernel writes are recorded too, and
two lanes of one warp that touch one of them the same way with no ``__syncwarp()`` between are a hazard as well
(the emulator gives such code a converged warp's answer, which a GPU gives only in practice); accesses of
different warps or blocks to global memory are not followed (their order comes from barriers, fences and
atomics). A kernel loaded for the GPU is rebuilt for the emulator; its array
arguments are copied to the host, and the launch writes only those copies. ``GEMMLAB_EMULATOR_RACECHECK=1``
checks every emulated launch this way and makes a hazard an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy

from . import emulator as _emulator
from . import backend as hw
from .loader import Kernel, Module
from .source import readonly_params


@dataclass
class RaceReport:
    kernel: str
    hazards: list = field(default_factory=list)   # distinct pairs of source lines, at most 32
    total: int = 0                                 # every hazardous access found

    @property
    def clean(self) -> bool:
        return self.total == 0

    def __str__(self):
        if self.clean:
            return (f"racecheck: kernel {self.kernel}: no hazards (shared memory, and global memory between the "
                    f"lanes of a warp)")
        kinds = sorted({h.kind for h in self.hazards})
        lines = [f"racecheck: kernel {self.kernel}: {self.total} hazardous accesses ({', '.join(kinds)}), "
                 f"{len(self.hazards)} distinct pairs of lines:"]
        lines += ["  " + h.describe() for h in self.hazards]
        return "\n".join(lines)

    __repr__ = __str__


def racecheck(kernel: Kernel, grid, block, args, shared_mem: int = 0) -> RaceReport:
    """Run ``kernel`` once on the emulator with its shared-memory accesses recorded; see the module doc."""
    if not isinstance(kernel, Kernel) or kernel.module is None:
        raise ValueError(f"racecheck takes a kernel from gl.load(...).get(...), got {type(kernel).__name__}")
    source = kernel.module
    module = source if source.backend == "emulator" else Module(source.source, source.path, source.options,
                                                                 backend="emulator")
    impl = _emulator.compile(module, kernel.name, kernel.signature, racecheck=True)
    impl.describe_params(kernel.signature.params, readonly_params(module.source, kernel.signature))
    checked = Kernel(name=kernel.name, signature=kernel.signature, impl=impl, limits=impl.limits,
                     origin=kernel.origin, array_type=numpy.ndarray, module=module)
    checked._arg_types = list(kernel._arg_types)
    copies = tuple(numpy.array(hw.to_host(a)) if isinstance(a, (numpy.ndarray, hw.xp.ndarray)) else a for a in args)
    # the module's variables as its kernels see them now, in a copy that the checked run may change, as it
    # may change the copies of the arrays: the emulator's own, or a GPU module's, copied from the device
    from .emulator.launch import module_state
    state = module_state(module, impl.lib) if source.variable_names else None
    kept = None if state is None else state.copy()
    unit = getattr(source, "_cuda_unit", None) if source is not module else None
    if state is not None and unit is not None:
        for name, value in unit.values().items():
            at, size = module._device_layout.get(name, (0, -1))
            if value.size == size:
                state[at:at + size] = value
    try:
        checked(grid, block, copies, shared_mem=shared_mem)
    finally:
        if kept is not None:
            state[...] = kept
    return RaceReport(kernel.name, list(impl.last_hazards), impl.hazard_total)
