"""gemmlab: the library behind the course book on GPU matrix multiplication.

    import gemmlab as gl
    gl.backend                      # "cuda" (a GPU through CuPy) or "emulator" (the CPU)
    k = gl.load("sgemm/01_naive.cu").get("sgemm_naive")
    k(grid, block, (A, B, C, M, N, K))          # checked before launch, CuPy's RawKernel convention
    gl.registry.get("sgemm/01_naive").check(gl.ops.Gemm.square(1000))
    gl.bench({"naive": fn}, gl.ops.Gemm.square(4096))   # the one timing function; cuBLAS a column

Module map: backend (which machine), profiles (the one table of GPUs, and the one in use: GEMMLAB_DEVICE), loader (load, compile, launch checks), registry (every kernel
variant), ops (FLOP and byte counts, references, cuBLAS calls), check (correctness), timing (bench),
device (ceilings and presets), roofline, record (results/ with GPU, date, versions; ``gl.chapter``, a
chapter's setup and its own record), listing (a kernel's source as a cell shows it), refresh (re-run chapter
notebooks on a GPU), workbook (the reader's working copy of the chapters), climb (Part IV's targets in one run).
"""
from . import ops, record
from .hardware import (BackendError, UnsupportedGPU, backend, backend_reason, on_gpu, size, synchronize, to_host,
                       xp)
from . import profiles
profiles.check_setting()          # GEMMLAB_DEVICE: an unknown profile, or one this GPU cannot be, stops here
from .check import CheckResult, check, rel_error
from .loader import CompileError, Kernel, Module, load
from ._emulator import EmulatorError
from .timing import TimingUnavailable, bench, sweep
from .racecheck import RaceReport, racecheck
from .listing import listing
from .record import chapter
from . import blas, blasbench, climb, demos, exercises, explorers, profiling, paths, device, ladder, memory, registry, roofline, sass, tensor, tilemap, tune  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "backend", "backend_reason", "on_gpu", "xp", "size", "synchronize", "to_host", "BackendError", "UnsupportedGPU",
    "profiles",
    "load", "Module", "Kernel", "CompileError", "EmulatorError", "check", "rel_error", "CheckResult",
    "bench", "sweep", "TimingUnavailable", "racecheck", "RaceReport", "ops", "record", "device", "registry", "roofline", "ladder",
    "tilemap", "demos", "memory", "sass", "blas", "blasbench", "climb", "exercises", "explorers", "profiling", "paths",
    "tensor", "tune", "listing", "chapter",
]
