"""gemmlab: the library behind the course book on GPU matrix multiplication.

    import gemmlab as gl
    gl.backend                      # "cuda" (a GPU through CuPy) or "emulator" (the CPU)
    k = gl.load("sgemm/01_naive.cu").get("sgemm_naive")
    k(grid, block, (A, B, C, M, N, K))          # checked before launch, CuPy's RawKernel convention
    gl.registry.get("sgemm/01_naive").check(gl.ops.Gemm.square(1000))
    gl.bench({"naive": fn}, gl.ops.Gemm.square(4096))   # the one timing function; cuBLAS a column

The house, in layers (a module imports only from its own layer or those below; tests/test_layers.py checks it):

- ``paths``, ``processes``, ``_version``, ``table``: where files live, child processes that die with their parent,
  the one table helper.
- ``runtime/``: the machine. ``backend`` (a GPU through CuPy, or the CPU emulator), ``limits`` and
  ``profiles`` (the one table of GPUs, and the one in use: GEMMLAB_DEVICE), ``source`` (the C++ parser),
  ``loader`` (load, compile, check every launch), ``cuda`` and ``emulator/`` (build, launch, hazards), ``racecheck``,
  ``tma`` (Hopper tensor maps), ``workspaces`` (device memory kernels keep between calls).
- the core: ``ops`` (problems: FLOP and byte counts, inputs, references, cuBLAS calls), ``cases`` (the sizes every
  kernel is checked on), ``variant`` and ``registry`` (the table of every kernel variant), ``check``, ``timing``
  (``bench``, the one timing function), ``record`` (results/ with GPU, date, versions; ``gl.chapter``), ``blas``.
- ``models/``: ``device`` (ceilings and presets), ``roofline``, ``coalescing`` (sectors and shared-memory banks).
- ``studies/``: the record producers, one per study, on one measurement core (``studies/core.py``); ``cli``
  makes the command line from their list and the book's own commands.
- the book: ``listing``, ``tilemap``, ``pictures`` (drawn from the kernels' own constants), ``explorers``,
  ``exercises``, ``support``, ``colab``, ``refresh``, ``workbook``.

The old flat names (``gl.hardware``, ``gl.ladder``, ``gl.tensor``, ``gl.memory``, ...) are the same modules at their
new places (``gemmlab._aliases``).
"""
import sys as _sys

from ._version import __version__
from .table import Table
try:     # GEMMLAB_BACKEND and GEMMLAB_DEVICE: an unknown name, or a GPU it cannot be, stops here
    from . import ops, record
    from .runtime.backend import (BackendError, MachineError, UnsupportedGPU, backend, backend_reason, on_gpu, size,
                                  synchronize, to_host, xp)
    from .runtime import profiles
    profiles.check_setting()
except (ValueError, RuntimeError) as _exc:
    # `python -m gemmlab ...` imports this package before its command line starts (sys.argv[0] is "-m" until
    # then): a bad setting is one line there, as every other error of the command line
    if _sys.argv[:1] != ["-m"] or not str(_exc).startswith("GEMMLAB_"):
        raise
    print(f"python -m gemmlab: error: {str(_exc).splitlines()[0]}", file=_sys.stderr)
    raise SystemExit(2) from None
from .check import CheckResult, check, rel_error  # noqa: E402
from .runtime.loader import CompileError, Kernel, Module, load  # noqa: E402
from .runtime.emulator import EmulatorError  # noqa: E402
from .timing import TimingUnavailable, bench, sweep  # noqa: E402
from . import _aliases  # noqa: E402
_aliases.install(__import__(__name__))
from .runtime.racecheck import RaceReport, racecheck  # noqa: E402  (the function, over the module's old name)
from .listing import listing  # noqa: E402
from .record import chapter  # noqa: E402
from . import blas, exercises, explorers, paths, pictures, registry, tilemap  # noqa: E402

__all__ = [
    "__version__", "backend", "backend_reason", "on_gpu", "xp", "size", "synchronize", "to_host", "BackendError",
    "MachineError", "UnsupportedGPU",
    "profiles",
    "load", "Module", "Kernel", "CompileError", "EmulatorError", "check", "rel_error", "CheckResult",
    "bench", "sweep", "TimingUnavailable", "racecheck", "RaceReport", "ops", "record", "device", "registry", "roofline", "ladder",
    "tilemap", "pictures", "demos", "memory", "sass", "blas", "blasbench", "climb", "exercises", "explorers",
    "profiling", "paths",
    "tensor", "hopper", "fp8", "tune", "listing", "chapter", "Table",
]
