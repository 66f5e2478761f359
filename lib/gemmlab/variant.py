"""A kernel variant: one registry entry's type and behaviour (resolve its parameters, build it, launch it, check it
against float64, say why a GPU or a problem cannot run it). The entries themselves are in :mod:`gemmlab.registry`."""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

from .cases import awkward_problems
from .check import FP32_TOLERANCE, check
from .runtime import backend as hw
from .runtime.loader import load


@dataclass(frozen=True)
class Need:
    """A compute capability a variant needs, and why: ``Need((8, 0), "mma.sync m16n8k16")``; ``precisions``
    limits it to problems of those precisions (tc/01's BF16 and TF32 fragments, not its FP16 ones)."""
    capability: tuple
    feature: str
    precisions: tuple = ()
    only: bool = False        # code for this architecture alone (sm_90a: wgmma runs on Hopper, not after it)

    def applies(self, problem) -> bool:
        return not self.precisions or problem is None or getattr(problem, "precision", None) in self.precisions

    def met_by(self, capability: tuple) -> bool:
        return capability >= self.capability and not (self.only and capability[0] != self.capability[0])

    @property
    def cc(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"

    def lacking(self, who: str, profile) -> str | None:
        """Why ``profile``'s GPU cannot run ``who`` (a kernel, an exercise) for want of this: one line naming the
        capability, the feature and the GPU; None when it has it."""
        if self.met_by(profile.capability):
            return None
        exactly = " exactly" if self.only else ""
        return f"{who} needs compute capability {self.cc}{exactly} ({self.feature}); this is {profile.describe()}"


@dataclass(frozen=True)
class Variant:
    key: str                        # "sgemm/01_naive": also its file under kernels/, without .cu
    entry: str                      # kernel name; template arguments as {PARAM}: "sgemm_tiled<{TILE}>"
    op: type                        # the ops class it computes (its FLOP and byte counts)
    title: str
    launch: Callable                # (problem, params) -> (grid, block, shared_mem)
    args: Callable                  # (problem, inputs, out) -> kernel argument tuple
    params: dict = field(default_factory=dict)    # name -> tuple of legal values
    defaults: dict = field(default_factory=dict)  # name -> value used when none is given
    refuse: Callable | None = None  # (problem, params) -> reason string, or None when supported
    chapter: str | None = None      # the chapter that introduces it (None: not in a chapter yet)
    tolerance: float = FP32_TOLERANCE
    layout: str = "row"             # the storage the kernel expects: "row" (SGEMM ladder) or "col" (BLAS)
    problem_params: Callable | None = None   # (problem) -> template fields taken from the problem (e.g. TRANS)
    prepare: Callable | None = None          # (problem, params, inputs, out) -> None, run before each launch
    valid: Callable | None = None            # (params) -> bool: which combinations exist (default: all)
    options: tuple = ()                      # compiler options of its own (the architecture, say)
    needs: tuple = ()                        # Need()s: the compute capabilities it needs, and why (none: 7.5,
                                             # the book's floor, a Colab T4)
    older_gpus: str = ""                     # how it runs below the GPU it was written for, when it does
    workspace: Callable | None = None        # (problem, params) -> arguments appended to ``args``: device memory
                                             # the kernel keeps between launches, sized for these parameters

    @property
    def source(self) -> str:
        return self.key + ".cu"

    def choices(self) -> list:
        """Every legal parameter combination, as dicts."""
        names = list(self.params)
        every = [dict(zip(names, values)) for values in itertools.product(*(self.params[n] for n in names))]
        return [c for c in every if self.valid is None or self.valid(c)]

    def covering(self, limit: int = 48) -> list:
        """The choices that tests, sanitizer runs and crosschecks run: all of them when there are at most
        ``limit``; else the defaults, and each value of each parameter with the others at their defaults
        (or in the first combination that exists with it), so that every value is exercised once."""
        every = self.choices()
        if len(every) <= limit:
            return every
        base = self.resolve()
        out = [base]
        for name, legal in self.params.items():
            for value in legal:
                want = {**base, name: value}
                pick = want if (self.valid is None or self.valid(want)) else next(
                    (c for c in every if c[name] == value), None)
                if pick is not None and pick not in out:
                    out.append(pick)
        return out

    def resolve(self, **params) -> dict:
        unknown = set(params) - set(self.params)
        if unknown:
            raise ValueError(f"{self.key} has no parameter {', '.join(sorted(unknown))}; "
                             f"it takes {', '.join(self.params) or 'none'}")
        full = {**self.defaults, **params}
        for name, legal in self.params.items():
            if full.get(name) not in legal:
                raise ValueError(f"{self.key}: {name}={full.get(name)!r} is not one of the legal values {legal}")
        if self.valid is not None and not self.valid(full):
            raise ValueError(f"{self.key}: {full} is not a combination the kernel supports ({len(self.choices())} "
                             f"are, the defaults {self.defaults} among them: Variant.choices() lists them; the "
                             f"rule is in kernels/{self.source}'s header)")
        return full

    def expression(self, problem=None, **params) -> str:
        """The kernel's name expression for these parameters (and the problem's own, such as TRANS)."""
        fields = dict(self.resolve(**params))
        if self.problem_params is not None:
            fields.update(self.problem_params(problem if problem is not None else self.op()))
        return self.entry.format(**fields)

    def kernel(self, problem=None, **params):
        reason = self.unsupported(problem if problem is not None else self.op())    # (the default problem's form)
        if reason:
            raise hw.UnsupportedGPU(reason)
        return _load(self.source, self.options).get(self.expression(problem, **params))

    def unsupported(self, problem=None, profile=None) -> str | None:
        """Why the GPU in use (or ``profile``) cannot run this variant on ``problem``: one line naming the
        feature, the capability needed and the GPU; None when it can."""
        from .runtime import profiles
        p = profile or profiles.current()
        for n in self.needs:
            if n.applies(problem) and not n.met_by(p.capability):
                what = f" in {problem.precision.upper()}" if n.precisions and problem is not None else ""
                return n.lacking(f"{self.key}{what}", p)
        return None

    def does_not_fit(self, problem, params: dict, profile=None) -> str | None:
        """Why a launch of these parameters on ``problem`` exceeds the limits of the GPU in use (or
        ``profile``): its dynamic shared memory or its threads per block. None when it fits."""
        from .runtime import profiles
        p = profile or profiles.current()
        lim = p.limits
        _, block, shared = self.launch(problem, params)
        threads = block_threads(block)
        label = ",".join(f"{k}={v}" for k, v in params.items())
        if shared > lim.shared_per_block_optin:
            return (f"{self.key} [{label}] needs {shared / 1024:.0f} KiB of shared memory per block; this is "
                    f"{p.describe()}, which allows {lim.shared_per_block_optin // 1024} KiB")
        if threads > lim.max_threads_per_block:
            return (f"{self.key} [{label}] runs {threads} threads per block; this is {p.describe()}, which "
                    f"allows {lim.max_threads_per_block}")
        return None

    def _not_here(self, problem, full: dict, profile=None) -> str | None:
        """Why the backend or the GPU in use (or ``profile``) cannot run these parameters on ``problem``: the
        emulator and inline PTX, the capability, the device's limits; None when it can."""
        return self.unsupported(problem, profile) or self.does_not_fit(problem, full, profile)

    def skip_reason(self, problem, profile=None, **params) -> str | None:
        """Why a study skips this candidate on ``problem`` on the GPU in use: it cannot run here (the
        backend, the capability), refuses the problem, or does not fit the device; None when it runs."""
        full = self.resolve(**params)
        if not self.unsupported(problem, profile) and self.refuse is not None:
            reason = self.refuse(problem, full)
            if reason:
                return f"{self.key}: {reason}"
        return self._not_here(problem, full, profile)

    def awkward(self) -> list:
        """Problems of sizes that are not multiples of any tile, for tests, crosschecks and sanitizers (those
        of its operation that the variant takes: a tensor-core kernel for one precision, say)."""
        every = awkward_problems(self.op, self.layout)
        if self.refuse is None:
            return every
        base = self.resolve()
        return [p for p in every if not self.refuse(p, base)]

    def runner(self, problem, **params) -> Callable:
        """A function ``run(inputs, out)`` that launches this variant on ``problem``."""
        full = self.resolve(**params)
        if not isinstance(problem, self.op):
            raise ValueError(f"{self.key} computes {self.op.__name__}, not {type(problem).__name__}")
        if getattr(problem, "layout", self.layout) != self.layout:
            raise ValueError(f"{self.key} expects layout={self.layout!r}, the problem has {problem.layout!r}")
        reason = self.unsupported(problem)
        if reason:
            raise hw.UnsupportedGPU(reason)
        self._refused(problem, full)
        reason = self.does_not_fit(problem, full)
        if reason:
            raise hw.UnsupportedGPU(reason)
        kernel = self.kernel(problem, **full)
        grid, block, shared = self.launch(problem, full)
        prepare = self.prepare
        extra = self.workspace(problem, full) if self.workspace is not None else ()

        def run(inputs, out):
            if prepare is not None:
                prepare(problem, full, inputs, out)
            kernel(grid, block, self.args(problem, inputs, out) + extra, shared_mem=shared)
        run.__name__ = f"run_{self.key.replace('/', '_')}"
        return run

    def _refused(self, problem, full: dict) -> None:
        """A ValueError where the kernel refuses ``problem`` with these parameters (its sizes, say)."""
        reason = self.refuse(problem, full) if self.refuse is not None else None
        if reason:
            raise ValueError(f"{self.key} with {full}: {reason}")

    def verdict(self, problem, *, seed=None, **params) -> str:
        """A chapter's check line: the verdict of :meth:`check`. Where the GPU in use (or the profile the emulator
        runs as) cannot run this variant on ``problem``, the same check on the CPU emulator as the book's GPU, in
        a child process, with why on the same line; where that cannot run it either, one line saying it was
        skipped and why."""
        return self.verdicts([problem], seed=seed, **params)[0]

    def verdicts(self, problems, *, seed=None, **params) -> list:
        """:meth:`verdict` of each of ``problems``, those the GPU cannot run checked in one child process."""
        from .runtime import profiles
        full = self.resolve(**params)
        book = profiles.PROFILES[profiles.BOOK]
        lines, elsewhere = [], []                     # (elsewhere: where a line goes, its problem, why)
        for problem in problems:
            reason = self._not_here(problem, full)
            if not reason:
                lines.append(self.check(problem, seed=seed, **params).verdict())
            elif self._not_here(problem, full, book):
                lines.append(f"skipped here: {reason}")
            else:
                self._refused(problem, full)           # (as the check here would say it)
                elsewhere.append((len(lines), problem, reason))
                lines.append(None)
        if elsewhere:
            checked = _check_on_emulator(self.key, [problem for _, problem, _ in elsewhere], seed, params, book)
            for (at, _, reason), line in zip(elsewhere, checked):
                lines[at] = f"{line}, checked on {book.on_emulator()} ({reason})"
        return lines

    def check(self, problem, *, seed=None, **params):
        """Check this variant on ``problem`` against float64 (fresh random inputs, NaN-poisoned output)."""
        label = self.key + (" " + ",".join(f"{k}={v}" for k, v in self.resolve(**params).items())
                            if self.params else "")
        return check(self.runner(problem, **params), problem, label=label, tolerance=self.tolerance, seed=seed)


FLOOR = (7, 5)     # the oldest GPU the book runs on: compute capability 7.5 (Turing, Colab's T4)

# the child of _check_on_emulator: (key, problems, seed, params) pickled on its standard input, a verdict a line
_CHECK_CHILD = ("import pickle, sys\n"
                "import gemmlab as gl\n"
                "key, problems, seed, params = pickle.load(sys.stdin.buffer)\n"
                "for p in problems:\n"
                "    print(gl.registry.get(key).check(p, seed=seed, **params).verdict(), flush=True)\n")


class ElsewhereError(RuntimeError):
    """The check that ran on the emulator for a GPU that cannot run the kernel failed; its message is the child's."""


def _check_on_emulator(key: str, problems: list, seed, params: dict, profile) -> list:
    """Variant ``key``'s checks on ``problems`` in one child process on the CPU emulator as ``profile``: their
    verdicts."""
    from . import processes
    done = processes.python_on_emulator(_CHECK_CHILD, (key, problems, seed, params), profile.key)
    out = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(out) != len(problems):
        raise ElsewhereError(f"{key}'s check on {profile.on_emulator()} failed: {last_line(done)}")
    return out


def last_line(done) -> str:
    """The last line a finished child wrote to its standard error, or its exit status."""
    err = done.stderr.strip().splitlines()
    return err[-1] if err else f"exit status {done.returncode}"


def block_threads(block) -> int:
    """Threads in a block given as a number or a tuple of dimensions."""
    return math.prod(block) if isinstance(block, tuple) else block


def _load(source: str, options: tuple = ()):
    from .runtime.profiles import compile_arch, current
    return _load_for(source, options, current().key, compile_arch())


@functools.lru_cache(maxsize=None)
def _load_for(source: str, options: tuple, profile, arch):
    """A module per source, options and profile in use (a profile's kernels are compiled for its architecture)."""
    return load(source, options=options)
