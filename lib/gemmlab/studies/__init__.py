"""Every record producer of the book as one abstraction, and the command line generated from their list.

    python -m gemmlab <study> [--record] [options]      # one entry of STUDIES below

A :class:`Study` is data (triton.testing's ``perf_report`` in spirit): what it needs (a GPU, a profiler, a
compiler), its options, how to run it, how to show what it found, how to save it as ``results/<name>-<gpu>.json``
(``record.save``: GPU, date and versions first, written whole or not at all) and how to load the record a
chapter shows (``record.shown``: the reader's GPU's, else the H200's). Adding a study is one entry here; the
command, its ``--record`` and its "needs a GPU" check come with it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Study:
    name: str                        # the command, and the record's name: results/<record>-<gpu>.json
    help: str
    run: Callable                    # (args) -> result: the measurement
    show: Callable                   # (result) -> None: prints what the run found
    save: Callable                   # (result) -> paths written (results/...)
    writes: str                      # what --record writes, for the help text
    needs: tuple = ("GPU",)          # "GPU", "emulator" (the backend), and tools that must be on PATH
    options: tuple = ()              # ((flags...), argparse keyword arguments) of its own
    record: str | None = None        # the record chapters load (record.shown); None: the study's name
    ok: Callable = lambda result: True         # the exit status: False makes it 1
    internal: Callable | None = None           # (args) -> exit code, or None: a child process's half
    per_gpu: bool = True             # False: one record, not one per GPU (the emulator's speed, nvcc's SASS)

    def load(self) -> dict:
        """The record of this study a chapter shows: the reader's GPU's, else the H200's (``record.shown``);
        for a study whose record is no GPU's, that record."""
        from .. import record
        name = self.record or self.name
        return record.shown(name) if self.per_gpu else {**record.load(name), "shown_as": f"results/{name}.json"}


def _o(*flags, **kwargs):
    return (flags, kwargs)


# --- the entries ------------------------------------------------------------------------------------

def _ceilings():
    from . import ceilings as device
    return Study("ceilings", "measure this GPU's ceilings: copy bandwidth, cuBLAS SGEMM, DOT, GEMV",
                 run=lambda a: device.measure(), show=lambda m: print(device.describe(m)),
                 save=lambda m: [device.save(m)], writes="results/ceilings-<gpu>.json")


def _count(text: str) -> int:
    """An option that counts repetitions or passes: a whole number from 1 (argparse says so in one line)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {n}")
    return n


def _ladder():
    from . import ladder

    def show(result):
        print(f"checked and timed {sum(len(t['rows']) for t in result['timings'])} cases")
    return Study("ladder", "check and time every SGEMM step and sweep at N=4096 in one run",
                 run=lambda a: ladder.run_all(reps=a.reps), show=show, save=lambda r: [ladder.save(r)],
                 writes="results/ladder-<gpu>.json", options=(_o("--reps", type=_count, default=10),))


def _climb():
    from . import climb
    return Study("climb", "Part IV: check and time the tuned SGEMM kernels against cuBLAS at every target size",
                 run=lambda a: climb.run_all(reps=a.reps), show=lambda r: print(climb.summary(r)),
                 save=lambda r: [climb.save(r)], writes="results/climb-<gpu>.json",
                 options=(_o("--reps", type=_count, default=10),))


def _tensor():
    from . import tensor_cores as tensor
    return Study("tensor", "Part V: check and time the tensor-core kernels against cuBLAS in the same precision, "
                           "and 3xTF32's speed and accuracy against cuBLAS SGEMM",
                 run=lambda a: tensor.run_all(reps=a.reps), show=lambda r: print(tensor.summary(r)),
                 save=lambda r: [tensor.save(r)], writes="results/tensor-<gpu>.json",
                 options=(_o("--reps", type=_count, default=10),))


def _hopper():
    from . import past_cublas
    return Study("hopper", "chapter 16: check and time the Hopper ladder (tc/06 onwards) against cuBLAS and a Triton "
                           "matmul in FP16 and BF16, at the squares and two language-model shapes",
                 run=_hopper_run,
                 show=lambda r: print(past_cublas.summary(r)),
                 save=lambda r: [past_cublas.save(r)], writes="results/hopper-<gpu>.json",
                 options=(_o("--reps", type=_count, default=10),
                          _o("--shapes", type=_shapes, default=None, metavar="MxNxK,...",
                             help="these shapes only (default: the chapter's six)"),
                          _o("--out", nargs="+", choices=past_cublas.OUTS, default=past_cublas.OUTS,
                             help="C in FP32 (fp32), in the inputs' type (same), or both (default)")))


def _fp8():
    from . import fp8
    return Study("fp8", "chapter 17: check and time tc/13 (FP8, per-block and per-tensor scales) against cuBLASLt FP8 "
                        "(torch._scaled_mm) and a Triton matmul, and the error of the tensor cores' FP8 sums per K",
                 run=lambda a: fp8.run_all(reps=a.reps), show=lambda r: print(fp8.summary(r)),
                 save=lambda r: [fp8.save(r)], writes="results/fp8-<gpu>.json",
                 options=(_o("--reps", type=_count, default=10),))


def _shapes(text: str) -> list:
    """--shapes: MxNxK sizes (or N for a square), comma-separated (argparse says what is wrong in one line)."""
    from ..cases import parse_size
    out = []
    for part in text.split(","):
        try:
            size = parse_size(part)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if len(size) not in (1, 3):
            raise argparse.ArgumentTypeError(f"each shape is N or MxNxK, got {part!r}")
        out.append(size * 3 if len(size) == 1 else size)
    return out


def _hopper_run(a):
    """The study, or a part of it: with --out alone and --record, its points replace the same points of this GPU's
    record (past_cublas.merged); a part of the shapes is for looking at, not recorded."""
    from .. import record
    from . import past_cublas
    if a.record and a.shapes is not None:
        raise SystemExit("--record writes every shape of the study; --shapes picks a few to look at, without --record")
    result = past_cublas.run_all(reps=a.reps, shapes=a.shapes, outs=tuple(a.out))
    if set(a.out) != set(past_cublas.OUTS):
        result["command"] += " --out " + " ".join(a.out)
        if a.record:
            result = past_cublas.merged(result, record.previous(f"hopper-{record.gpu_slug()}"))
    return result


def _tune():
    from . import tune

    def run(a):
        if not (a.budget > 0 and a.budget != float("inf")):          # nan and inf fail this too
            raise SystemExit(f"--budget must be a positive, finite number of seconds, got {a.budget:g}")
        return tune.run(a.key, [x for x in a.sizes.split(",") if x], a.budget, a.seed)
    return Study("tune", "search a variant's parameter space on the GPU within a time budget", run=run,
                 show=lambda r: print(tune.summary(r)), save=lambda r: [tune.save(r)],
                 writes="results/tune-<variant>-<gpu>.json", record="tune-sgemm-12_interior",
                 options=(_o("key", help="a registry variant, e.g. sgemm/10_double_buffer"),
                          _o("--sizes", default="1024,2048,4096", help="comma-separated: N (square) or MxNxK"),
                          _o("--budget", type=float, default=600.0, help="seconds in all, shared among the sizes"),
                          _o("--seed", type=int, default=0)))


def _blas():
    from . import blas_shapes, blas_steps as blasbench

    def show(result):
        if "grid" in result:
            return blas_shapes.show(result)
        from ..timing import Timings
        steps, _ = result
        for t in steps["timings"]:
            Timings.from_dict(t, recorded=False).show()

    def run(a):
        if a.shapes:
            return blas_shapes.run(budget=a.budget, only=a.only)
        return blasbench.run_all(passes=a.passes)

    def save(result):
        return [blas_shapes.save(result)] if "grid" in result else list(blasbench.save(*result))
    return Study("blas", "check and time every DOT, GEMV and GEMM step, sweeps and the scaling study; with --shapes, "
                         "gl.blas as a user calls it over a grid of shapes (the tuning table it dispatches from)",
                 run=run, show=show, save=save,
                 writes="results/blas-<gpu>.json and blas-scaling-<gpu>.csv; with --shapes, blas-shapes-<gpu>.json",
                 options=(_o("--passes", type=_count, default=3),
                          _o("--shapes", action="store_true",
                             help="the call costs and the shape grid of gl.blas against cuBLAS"),
                          _o("--budget", type=float, default=480.0,
                             help="with --shapes: seconds the grid may take (points past it are listed as left)"),
                          _o("--only", nargs="+", choices=("dot", "gemv", "gemm", "precisions"), default=None,
                             help="with --shapes: these routines' points only (precisions: gl.blas.gemm on the "
                                  "tensor cores, FP16, BF16, TF32, 3xTF32, and batched); the record keeps the rest")))


def _profile():
    from . import blas_steps as blasbench, profiling
    from .. import record

    def internal(a):
        if a.launch:
            blasbench.run_once(("DOT", "GEMM"))
            return 0
        if a.launch_case:
            profiling.launch_case(a.launch_case[0], int(a.launch_case[1]))
            return 0
        return None

    def run(a):
        study = a.study or ("climb" if a.climb else None)
        return profiling.run_study(study) if study else profiling.run()

    def save(r):
        return [profiling.save_study(r) if "study" in r else profiling.save(r)]

    def show(r):
        (profiling.climb_table if "study" in r else profiling.table)({**r, "environment": record.environment()})
    return Study("profile", "Nsight Compute metrics of each DOT and GEMM step, or of one study's kernels "
                            "(needs ncu and a GPU)", run=run, show=show, save=save, needs=("GPU", "ncu"),
                 writes="results/ncu-<gpu>.json, or ncu-<study>-<gpu>.json with --study", record="ncu",
                 internal=internal,
                 options=(_o("--launch", action="store_true", help=argparse.SUPPRESS),
                          _o("--study", help="a study of chosen kernels, each in its own ncu run: climb (the best "
                                             "SGEMM at 4096, its row-by-row ablation, cuBLAS), ladder (chapters "
                                             "2-9), part4, part5 (ncu-<study>-<gpu>.json)"),
                          _o("--climb", action="store_true", help="the same as --study climb"),
                          _o("--launch-case", nargs=2, metavar=("STUDY", "INDEX"), help=argparse.SUPPRESS)))


def _sanitize():
    from . import missing_barrier as demos
    from . import sanitize

    def internal(a):
        if a.launch:
            sanitize.launch_all(a.only)
            return 0
        if a.launch_demo:
            demos.launch_without_barrier(a.launch_demo, options=("-lineinfo",))
            return 0
        return None

    def show(r):
        if "barriers" in r:
            for barrier, x in r["barriers"].items():
                print(f"without barrier {barrier}: {x['summary']}", *x["pairs"], sep="\n  ")
            return
        for tool, x in r["tools"].items():
            print(f"{tool}: exit {x['exit_code']}, {x['configurations']} configurations, clean={x['clean']}; "
                  + " / ".join(x["summary"]))
    return Study("sanitize", "every registry kernel under compute-sanitizer memcheck and racecheck",
                 run=lambda a: sanitize.run_demo() if a.demo else sanitize.run(only=a.only), show=show,
                 save=lambda r: [sanitize.save_demo(r) if "barriers" in r else sanitize.save(r)],
                 writes="results/sanitizer-<gpu>.json (racecheck-demo-<gpu>.json with --demo)",
                 needs=("GPU", "compute-sanitizer"), record="sanitizer", internal=internal,
                 ok=lambda r: "barriers" in r or all(x["clean"] for x in r["tools"].values()),
                 options=(_o("--launch", action="store_true", help=argparse.SUPPRESS),
                          _o("--only", action="append", default=[], metavar="PREFIX",
                             help="launch only the variants whose key starts with PREFIX (tc/12: chapter 16's "
                                  "ping-pong kernel); may be given more than once; --record puts them into the GPU's "
                                  "record"),
                          _o("--demo", action="store_true",
                             help="racecheck chapter 2's tiled kernel without each barrier (writes "
                                  "racecheck-demo-<gpu>.json)"),
                          _o("--launch-demo", type=int, help=argparse.SUPPRESS)))


def _crosscheck():
    from . import crosscheck
    from .. import paths

    def internal(a):
        if a.emit:
            try:
                paths.writable(a.emit)                           # before the minutes of running every kernel
            except ValueError as exc:
                raise SystemExit(f"--emit: {exc}") from None
            crosscheck.emit(a.emit, a.seed, a.only)
            return 0
        return None

    def run(a):
        if a.emulator_outputs is not None and not os.path.isfile(a.emulator_outputs):
            raise SystemExit(f"--emulator-outputs: no file {a.emulator_outputs!r} (what crosscheck --emit wrote)")
        return crosscheck.compare(a.seed, a.emulator_outputs, a.only)
    return Study("crosscheck", "run every registry kernel on the GPU and on the emulator; compare",
                 run=run,
                 show=lambda r: print(crosscheck.report(r)), save=lambda r: [crosscheck.save(r)],
                 writes="results/emulator-vs-<gpu>.json", needs=(), record="emulator-vs", internal=internal,
                 ok=lambda r: r["all_agree"],
                 options=(_o("--seed", type=int, default=0), _o("--emit", help=argparse.SUPPRESS),
                          _o("--only", action="append", default=[], metavar="PREFIX",
                             help="compare only the variants whose key starts with PREFIX (tc/: the tensor-core "
                                  "kernels); may be given more than once"),
                          _o("--emulator-outputs", metavar="NPZ",
                             help="compare with what GEMMLAB_BACKEND=emulator python -m gemmlab crosscheck --emit "
                                  "NPZ wrote on another machine, instead of running the emulator here")))


def _sass():
    from . import sass

    def show(r):
        for name, x in r["kernels"].items():
            print(f"{name:<80} {x['registers']:>4} regs  {x['instructions']}")
    return Study("sass", "count the machine instructions nvcc makes of chosen kernels (no GPU needed)",
                 run=lambda a: sass.run(), show=show, save=lambda r: [sass.save(r)],
                 writes=f"results/sass-{sass.ARCH}.json", needs=("nvcc", "cuobjdump"), record=f"sass-{sass.ARCH}",
                 per_gpu=False)


def _emulator_bench():
    from . import emulator_bench as _emulator
    from .. import record

    def run(a):
        if a.rounds < 1:
            raise SystemExit(f"--rounds must be a whole number >= 1, got {a.rounds}")
        if a.baseline:
            try:
                _emulator.baseline_commit(a.baseline)            # before minutes of benchmarking, not after
            except ValueError as exc:
                raise SystemExit(f"--baseline: {exc}") from None
            return _emulator.compare_with(a.baseline, a.rounds)
        return _emulator.benchmark()
    return Study("emulator-bench", "the CPU emulator's speed on this machine", run=run,
                 show=lambda r: print(json.dumps(r, indent=2)),
                 save=lambda r: [record.save("emulator-benchmark", r)], writes="results/emulator-benchmark.json",
                 needs=("emulator",), record="emulator-benchmark", per_gpu=False,
                 options=(_o("--baseline", metavar="COMMIT", help="also measure COMMIT's emulator, in turns, and "
                                                                   "give the ratios (needs a git checkout)"),
                          _o("--rounds", type=int, default=3, help="turns of each with --baseline (default 3)")))


STUDIES = [f() for f in (_ceilings, _ladder, _climb, _tensor, _hopper, _fp8, _tune, _blas, _profile, _sanitize, _crosscheck,
                         _sass, _emulator_bench)]
BY_NAME = {s.name: s for s in STUDIES}


def add_commands(sub) -> None:
    """One subcommand per study, with --record and the study's own options."""
    for s in STUDIES:
        p = sub.add_parser(s.name, help=s.help)
        p.add_argument("--record", action="store_true", help=f"write {s.writes}")
        for flags, kwargs in s.options:
            p.add_argument(*flags, **kwargs)


def missing(s: Study) -> str | None:
    """What this machine lacks of what the study needs, in words; None when it has it all."""
    from ..runtime import backend as hw
    if "GPU" in s.needs and not hw.on_gpu:
        return f"{s.name} needs a CUDA GPU ({hw.backend_reason})"
    if "emulator" in s.needs and hw.backend != "emulator":
        return f"{s.name} measures the emulator: run it with GEMMLAB_BACKEND=emulator"
    tools = [t for t in s.needs if t not in ("GPU", "emulator") and shutil.which(t) is None]
    if tools:
        return f"{s.name} needs {' and '.join(tools)} on PATH (the CUDA toolkit)"
    return None


def main(s: Study, args, parser) -> int:
    """Run one study from its parsed command line: its internal half if asked, else check what it needs,
    run, show, and with --record save."""
    if s.internal is not None:
        code = s.internal(args)
        if code is not None:
            return code
    why = missing(s)
    if why:
        parser.error(why)
    result = s.run(args)
    s.show(result)
    if args.record:
        print("wrote", *s.save(result))
    return 0 if s.ok(result) else 1


__all__ = ["Study", "STUDIES", "BY_NAME", "add_commands", "main", "missing"]
