"""Demonstrations that two chapters share: what a missing barrier does (chapter 02)."""
from __future__ import annotations

import numpy

from ..runtime import backend as hw
from ..runtime.loader import load
from ..table import Table

TILED = "sgemm/02_shared_tiling.cu"


def without_barrier(barrier: int, backend: str | None = None, options: tuple = ()):
    """The tiled kernel's module with barrier 1 or 2 removed (the line marked ``[barrier N]``)."""
    source = load(TILED, backend=backend).source
    marker = f"__syncthreads();  // [barrier {barrier}]"
    if marker not in source:
        raise ValueError(f"{TILED} has no line marked [barrier {barrier}]")
    return load(code=source.replace(marker, f"// [barrier {barrier} removed]"), backend=backend, options=options)


RACE_SHAPE = (40, 36, 50)


def launch_without_barrier(barrier: int, shape=RACE_SHAPE, tile: int = 16, options: tuple = ()):
    """One launch of the tiled kernel without barrier 1 or 2 on the current backend (what
    ``python -m gemmlab sanitize --demo`` runs under compute-sanitizer's racecheck)."""
    m, n, k = shape
    rng = numpy.random.default_rng(0)
    A = hw.xp.asarray(rng.standard_normal((m, k)).astype(numpy.float32))
    B = hw.xp.asarray(rng.standard_normal((k, n)).astype(numpy.float32))
    C = hw.xp.zeros((m, n), dtype=numpy.float32)
    kernel = without_barrier(barrier, options=options).get(f"sgemm_shared_tiling<{tile}>")
    kernel((-(-n // tile), -(-m // tile)), (tile, tile), (A, B, C, m, n, k))
    hw.synchronize()


def print_sanitizer_racecheck():
    """compute-sanitizer's racecheck of the same broken kernels on the GPU, as recorded."""
    from .. import record
    try:
        rec = record.shown("racecheck-demo")
    except FileNotFoundError:
        print("no compute-sanitizer record yet (python -m gemmlab sanitize --demo --record on a GPU)")
        return
    env = rec["environment"]
    print(f"compute-sanitizer racecheck on {env['gpu']}, {env['date'][:10]} ({rec['sanitizer']}):")
    for barrier, r in rec["barriers"].items():
        print(f"  without barrier {barrier}: {r['summary']}")
        for pair in r["pairs"]:
            print(f"    {pair}")


def missing_barrier(barrier: int, shape=(200, 184, 240), tile: int = 16, runs: int = 3, seed: int = 0) -> list:
    """Run the tiled kernel without one barrier, several times on the same inputs, on each backend at hand.

    Returns rows (backend, run, relative error, same bits as run 1). The emulator always runs; the GPU
    too when there is one.
    """
    m, n, k = shape
    rng = numpy.random.default_rng(seed)
    A = rng.standard_normal((m, k)).astype(numpy.float32)
    B = rng.standard_normal((k, n)).astype(numpy.float32)
    ref = A.astype(numpy.float64) @ B.astype(numpy.float64)
    grid, block = (-(-n // tile), -(-m // tile)), (tile, tile)
    rows = []
    for backend in ["emulator"] + (["cuda"] if hw.on_gpu else []):
        xp = numpy if backend == "emulator" else hw.xp
        kernel = without_barrier(barrier, backend).get(f"sgemm_shared_tiling<{tile}>")
        first = None
        for run in range(1, runs + 1):
            C = xp.full((m, n), numpy.nan, dtype=numpy.float32)
            kernel(grid, block, (xp.asarray(A), xp.asarray(B), C, m, n, k))
            host = hw.to_host(C) if backend == "cuda" else C
            err = float(numpy.linalg.norm(host - ref) / numpy.linalg.norm(ref))
            first = host if first is None else first
            rows.append((backend, run, err, bool(numpy.array_equal(host, first, equal_nan=True))))
    return rows


def print_missing_barrier(barrier: int, **kw):
    """Show :func:`missing_barrier`'s runs: per backend and run, the error, right or wrong, and whether the bits
    are run 1's."""
    rows = missing_barrier(barrier, **kw)
    Table(["backend", "run", "rel. error", "verdict", "bits"],
          [["CPU emulator" if backend == "emulator" else "GPU", run, f"{err:.2e}",
            "WRONG" if not err < 1e-5 else "right",
            "" if run == 1 else ("same as run 1" if same else "different from run 1")]
           for backend, run, err, same in rows], align="lrrll",
          title=f"tiled kernel without barrier {barrier}: relative error against float64, same inputs every run").show()


def print_racecheck(barrier: int | None, shape=(40, 36, 50), tile: int = 16):
    """The emulator's racecheck of the tiled kernel with barrier 1 or 2 removed (None: both kept), at a
    size that fits no tile: each hazard with the two source lines as the kernel file has them."""
    from ..runtime.racecheck import racecheck
    m, n, k = shape
    rng = numpy.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(numpy.float32)
    B = rng.standard_normal((k, n)).astype(numpy.float32)
    C = numpy.zeros((m, n), dtype=numpy.float32)
    module = load(TILED, backend="emulator") if barrier is None else without_barrier(barrier, "emulator")
    report = racecheck(module.get(f"sgemm_shared_tiling<{tile}>"), (-(-n // tile), -(-m // tile)), (tile, tile),
                       (A, B, C, m, n, k))
    lines = module.source.splitlines()
    title = "both barriers" if barrier is None else f"without barrier {barrier}"
    if report.clean:
        print(f"racecheck, tiled kernel with {title}: no hazards")
        return
    print(f"racecheck, tiled kernel {title}: {report.total:,} hazardous accesses, two threads each with "
          f"no barrier between:")
    seen = set()
    for array in sorted({h.array for h in report.hazards}):
        pairs = []
        for h in sorted((h for h in report.hazards if h.array == array), key=lambda h: h.kind):
            a, b = (int(x.rsplit(":", 1)[1]) for x in (h.first_line, h.second_line))
            seen |= {a, b}
            pairs.append(f"{h.kind} (line {a}, then {b})")
        print(f"  {array}: " + ", ".join(pairs))
    for number in sorted(seen):
        print(f"  line {number}: {lines[number - 1].strip()}")
