"""Do the emulator and the GPU compute the same thing? Every registry kernel, the same inputs, both backends.

    python -m gemmlab crosscheck [--record] [--only tc/ ...]     (on a GPU machine with a C++ compiler)

Runs every registry variant with every legal parameter choice on the GPU, then the same inputs (drawn
on the host from the run's seed and the case's key, so a case's inputs do not depend on where it stands in
the registry) on the emulator in a child process, and compares the two outputs. They
agree "within FP32 rounding" when their difference is of the size of each one's own error against the
float64 reference: the GPU fuses multiply-adds (FFMA) where the CPU build rounds twice, so the bits
differ but not the accuracy.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import tempfile

import numpy

from ..runtime import backend as hw
from .. import ops, processes, record, registry
from ..check import rel_error
from ..table import Table

AGREE = 1e-5


def _selected(only) -> list:
    """The variants compared: every one, or those whose key starts with one of ``only`` (``("tc/",)``: the
    tensor-core kernels); a prefix that names none is refused."""
    try:
        return registry.with_prefix(only)
    except ValueError as exc:
        raise SystemExit(f"--only: {exc}") from None


def _forms(v) -> list:
    """A variant's awkward problems, and for a tensor-core kernel that writes C in its inputs' 16-bit type as well
    (chapter 16's best steps) each of those problems with that C too: every type of output it writes."""
    out = v.awkward()
    if v.op is ops.TcGemm:
        same = [dataclasses.replace(p, out=p.precision) for p in out if p.precision in ("fp16", "bf16")]
        out += [p for p in same if v.refuse is None or not v.refuse(p, v.resolve())]
    return out


def _cases(only=()):
    for v in _selected(only):
        for choice in v.covering():
            for problem in _forms(v):
                yield v, choice, problem


def _key(v, choice, problem):
    return f"{v.key}|{','.join(f'{k}={x}' for k, x in choice.items())}|{problem.label}"


def _rounded(ref) -> numpy.ndarray:
    """The float64 reference rounded to FP32: what a stored output is written as a distance from."""
    return numpy.asarray(ref, dtype=numpy.float64).astype(numpy.float32)


def _delta(out: numpy.ndarray, anchor: numpy.ndarray) -> numpy.ndarray:
    """out - anchor in units in the last place: the difference of their bit patterns, in the smallest
    integer type that holds it (a few ulps for most outputs, so it compresses to a few bits each)."""
    d = (numpy.ascontiguousarray(out, dtype=numpy.float32).view(numpy.int32).astype(numpy.int64)
         - anchor.view(numpy.int32).astype(numpy.int64))
    for t in (numpy.int8, numpy.int16, numpy.int32):
        if d.size == 0 or (d.min() >= numpy.iinfo(t).min and d.max() <= numpy.iinfo(t).max):
            return d.astype(t)
    return d


def _undelta(d: numpy.ndarray, anchor: numpy.ndarray) -> numpy.ndarray:
    """The output _delta came from, bit for bit (given the same anchor)."""
    bits = anchor.view(numpy.int32).astype(numpy.int64) + d.astype(numpy.int64)
    return bits.astype(numpy.int32).view(numpy.float32).reshape(anchor.shape)


def _seeded(seed: int, only=()):
    """Every case, its key and its inputs, drawn on the host from a seed of its own: the run's seed and the case's
    key (so a case draws the same inputs wherever it stands in the registry, and an emitted file stays readable)."""
    import zlib
    for v, choice, problem in _cases(only):
        key = _key(v, choice, problem)
        yield v, choice, problem, key, problem.inputs(numpy.random.default_rng([seed, zlib.crc32(key.encode())]))


def _run(v, choice, problem, inputs) -> numpy.ndarray:
    """One case's output as numbers (a C stored as BF16 bits read as its values; FP16 and BF16 values are exact in
    FP32, which the emitted file keeps)."""
    out = problem.output()
    v.runner(problem, **choice)(inputs, out)
    hw.synchronize()
    return problem.values(hw.to_host(out))


def outputs(seed: int = 0, only=()) -> dict:
    """Every case on the current backend: key -> output (host array); inputs from fixed seeds."""
    return {key: _run(v, choice, problem, inputs) for v, choice, problem, key, inputs in _seeded(seed, only)}


def _machine() -> str:
    import platform
    return f"{platform.machine()}, {platform.platform()}"


def agree(v, problem, diff: float, gpu_error: float, emulator_error: float) -> bool:
    """Whether a case's GPU and emulator outputs agree: their difference (relative to the reference's size) under
    AGREE or the kernel's tolerance. Where the emulator's arithmetic is a fit rather than the GPU's bits (the FP8
    tensor cores' adder gives the GPU's bits for most sums, not all) or C is rounded to 16 bits (two FP32 sums an
    ulp apart may round one 16-bit ulp apart), it is enough that they differ by less than the smaller of their own
    errors against float64: each is as right as the other."""
    bar = max(AGREE, v.tolerance)
    if isinstance(problem, ops.Fp8Gemm) or getattr(problem, "out", "fp32") != "fp32":
        bar = max(bar, min(gpu_error, emulator_error))
    return diff < bar


def compare(seed: int = 0, emulator_outputs: str | None = None, only=()) -> dict:
    """GPU against emulator. ``emulator_outputs``: a .npz that ``--emit`` wrote (with the same seed) on
    another machine, used instead of running the emulator here (a GPU machine with few spare minutes).
    ``only``: key prefixes of the variants to compare (default: all)."""
    if not hw.on_gpu:
        raise SystemExit(f"crosscheck compares the GPU with the emulator and needs a GPU ({hw.backend_reason})")
    only = tuple(only or ())
    _selected(only)                         # (a prefix that names nothing is refused before the GPU's minutes)
    gpu = outputs(seed, only)
    if emulator_outputs is not None:
        stored, ran_on, packed = _load(emulator_outputs, "unknown")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "emulator.npz")
            env = {**os.environ, "GEMMLAB_BACKEND": "emulator"}
            processes.run([sys.executable, "-m", "gemmlab", "crosscheck", "--emit", path, "--seed", str(seed),
                           *(a for prefix in only for a in ("--only", prefix))], check=True, env=env, group=True)
            stored, ran_on, packed = _load(path, _machine())
    missing = [_key(v, c, p) for v, c, p in _cases(only) if _key(v, c, p) not in stored]
    if missing:
        raise SystemExit(f"{emulator_outputs or 'the emulator'} lacks {len(missing)} cases (emitted from another "
                         f"tree?), e.g. {missing[0]}")
    rows = []
    for v, choice, problem, key, inputs in _seeded(seed, only):
        ref, scale = problem.reference(inputs), problem.error_scale(inputs)
        emu = _emulated(stored, packed, key, ref)
        diff = rel_error(gpu[key], emu, scale if scale is not None else float(numpy.linalg.norm(ref)))
        errors = rel_error(gpu[key], ref, scale), rel_error(emu, ref, scale)
        rows.append({"case": key, "gpu_vs_emulator": diff, "gpu_error": errors[0], "emulator_error": errors[1],
                     "bitwise_equal": bool((gpu[key] == emu).all()), "agree": agree(v, problem, diff, *errors)})
    command = "python -m gemmlab crosscheck --record" + "".join(f" --only {p}" for p in only)
    return {"seed": seed, "tolerance": AGREE, "emulator_ran_on": ran_on, "cases": rows, "only": list(only),
            "bitwise_equal": sum(r["bitwise_equal"] for r in rows), "all_agree": all(r["agree"] for r in rows),
            "command": command}


def emit(path: str, seed: int = 0, only=()):
    """The emulator half: every case's output, with the machine it ran on, written whole or not at all.
    Each output is stored as its distance in ulps from the float64 reference rounded to FP32 (the GPU
    side computes the same reference from the same seeded inputs and gets the output back bit for bit):
    a few bits per value instead of 32, so that the file travels to a GPU machine."""
    import io
    from ..paths import atomic_write, writable
    writable(path)                       # refused before the minutes of running every kernel, not after
    packed = {key: _delta(_run(v, choice, problem, inputs), _rounded(problem.reference(inputs)))
              for v, choice, problem, key, inputs in _seeded(seed, tuple(only or ()))}
    buffer = io.BytesIO()
    numpy.savez_compressed(buffer, __machine__=numpy.array(_machine()), __format__=numpy.array(FORMAT), **packed)
    atomic_write(path, buffer.getvalue())


FORMAT = "ulps from the FP32-rounded float64 reference; inputs seeded by case key"


def _load(path: str, machine: str):
    """emit's file: (stored outputs by key, the machine it ran on, whether they are stored as ulps)."""
    import zipfile
    try:
        with numpy.load(path) as f:
            stored = dict(f)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, AttributeError) as exc:
        raise ValueError(f"{path} is not a file that crosscheck --emit wrote (truncated or another file?): {exc}; "
                         "emit it again with GEMMLAB_BACKEND=emulator python -m gemmlab crosscheck --emit") from None
    ran_on = str(stored.pop("__machine__", machine))
    kind = str(stored.pop("__format__", ""))
    if kind != FORMAT:                      # another tree's file: its inputs were drawn otherwise
        raise ValueError(f"{path} was written by another version of crosscheck --emit ({kind or 'whole outputs'}, "
                         f"not {FORMAT!r}); emit it again with GEMMLAB_BACKEND=emulator python -m gemmlab "
                         "crosscheck --emit")
    return stored, ran_on, True


def _emulated(stored: dict, packed: bool, key: str, ref) -> numpy.ndarray:
    """One case's emulator output from emit's file, given the case's float64 reference (an older file
    holds the outputs whole)."""
    return _undelta(stored[key], _rounded(ref)) if packed else stored[key]


def report(result: dict) -> str:
    """A comparison as text: a row per case (the GPU's output against the emulator's, each one's error), and
    the verdict."""
    return str(Table(["case", "|gpu-emu|/|ref|", "gpu err", "emu err", "agree"],
                     [[r["case"], f"{r['gpu_vs_emulator']:.2e}", f"{r['gpu_error']:.1e}", f"{r['emulator_error']:.1e}",
                       r["agree"]] for r in result["cases"]], align="lrrrl",
                     notes=[f"all agree (within {result['tolerance']:g} or the kernel's tolerance; FP8 and 16-bit C: "
                            f"within the smaller of the two errors): {result['all_agree']}"]))


def merged(new: dict, old: dict | None) -> dict:
    """A partial run (``--only``) put into the GPU's earlier record: its variants' cases replace theirs, the other
    cases stay; ``runs`` lists the runs the record now holds (each with its date, command, seed and where its
    emulator ran). A whole run replaces the record."""
    if not old or not new["only"]:
        return new
    chosen = tuple(new["only"])
    kept = [c for c in old["cases"] if not c["case"].split("|")[0].startswith(chosen)]
    runs = record.runs(old, new, lambda r: {"seed": r["seed"], "emulator_ran_on": r["emulator_ran_on"],
                                            "cases": len(r["cases"])})
    cases = kept + new["cases"]
    return {**new, "cases": cases, "only": record.merged_only(old, new), "runs": runs,
            "bitwise_equal": sum(c["bitwise_equal"] for c in cases), "all_agree": all(c["agree"] for c in cases)}


def save(result: dict):
    name = f"emulator-vs-{record.gpu_slug()}"
    return record.save(name, merged(result, record.previous(name)))
