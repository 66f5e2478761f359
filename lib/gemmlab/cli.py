"""The command line, ``python -m gemmlab <command>``, made from two lists: every record producer
(:data:`gemmlab.studies.STUDIES`: ``python -m gemmlab <study> [--record]``) and the book's own commands below
(:data:`COMMANDS`: refresh and rehearse the chapters, workbook and lab for the reader's working copy, support
for the table of which GPU runs what, portability for every configuration compiled for every architecture).
A command is data: its name, help, options and the function that runs it; adding one is one entry."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable                  # (args, parser, rest) -> exit code
    options: tuple = ()            # ((flags...), argparse keyword arguments)
    takes_rest: bool = False       # unknown arguments go to the command (lab: to jupyter lab)


def _o(*flags, **kwargs):
    return (flags, kwargs)


def _whole(parser, name: str, value: int) -> None:
    if value < 1:
        parser.error(f"--{name} must be a whole number >= 1, got {value}")


def _notebooks(args, parser) -> None:
    missing = [p for p in args.notebooks if not Path(p).is_file()]
    if missing:
        parser.error("no such notebook: " + ", ".join(missing))
    if args.timeout < 1:
        parser.error(f"--timeout is seconds per cell: a whole number >= 1, got {args.timeout}")


def _merged(name: str, notebooks: list) -> list:
    """The notebooks of record ``name`` (a chapters run) with these runs' entries in place of theirs: chapters run
    in several goes each keep their latest. Sorted by notebook."""
    from . import record
    try:
        earlier = {n["notebook"]: n for n in record.load(name)["notebooks"]}
    except (FileNotFoundError, KeyError, ValueError):
        earlier = {}
    earlier.update({n["notebook"]: n for n in notebooks})
    return [earlier[k] for k in sorted(earlier)]


def _refresh(args, parser, rest) -> int:
    _notebooks(args, parser)
    from . import record, refresh
    from .runtime import backend as hardware
    try:
        done = refresh.run(args.notebooks, timeout=args.timeout, allow_cpu=args.allow_cpu)
    except refresh.RefreshError as exc:
        print(f"python -m gemmlab refresh: {exc}", file=sys.stderr)
        return 1
    if args.record and hardware.on_gpu:
        from .runtime import profiles
        name = f"chapters-{record.gpu_slug()}"
        notebooks = _merged(name, done)
        print("wrote", record.save(name, {
            "profile": profiles.emulated().key if profiles.emulated() else None,
            "notebooks": notebooks, "all_ran": all(n["error"] is None for n in notebooks),
            "command": "python -m gemmlab refresh --record chapters/*.ipynb"}))
    return 0


def _rehearse(args, parser, rest) -> int:
    _notebooks(args, parser)
    _whole(parser, "jobs", args.jobs)
    from . import record, refresh
    from .runtime import backend as hardware
    if args.record and not hardware.on_gpu:
        if args.profile:
            parser.error("--record without a GPU times the chapters on the emulator as a reader runs them: "
                         "without --profile")
        result = refresh.emulator_times(args.notebooks, jobs=args.jobs, timeout=args.timeout)
        notebooks = _merged("chapters-emulator", result["notebooks"])
        print("wrote", record.save("chapters-emulator", {
            **result, "notebooks": notebooks, "jobs": max(n.get("jobs", args.jobs) for n in notebooks),
            "all_ran": all(n["error"] is None for n in notebooks),
            "command": f"python -m gemmlab rehearse --jobs {args.jobs} --record chapters/*.ipynb "
                       "(without a GPU)"}))
        return 0 if result["all_ran"] else 1
    try:
        result = refresh.rehearse(args.notebooks, profile=args.profile, jobs=args.jobs, timeout=args.timeout)
    except ValueError as exc:
        parser.error(str(exc))
    if args.record:
        print("wrote", record.save(f"chapters-{record.gpu_slug()}", {
            **result, "command": f"python -m gemmlab rehearse --profile {args.profile} --record chapters/*.ipynb"}))
    return 0 if result["all_ran"] else 1


def _support(args, parser, rest) -> int:
    from . import support
    print(support.markdown() if args.full else support.short_markdown())
    return 0


def _generate(args, parser, rest) -> int:
    from . import colab, support
    try:
        changed = colab.write() + support.write()
    except FileNotFoundError as exc:
        parser.error(str(exc))
    for path in changed:
        print("wrote", path)
    if not changed:
        print("every generated text was current")
    return 0


def _portability(args, parser, rest) -> int:
    _whole(parser, "jobs", args.jobs)
    from .studies import portability
    result = portability.check(jobs=args.jobs, progress=True)
    print(f"{result['compiled']} compiled, {result['refused']} declared refusals, for "
          f"{', '.join(result['architectures'])}")
    for problem in result["problems"]:
        print("PROBLEM:", problem)
    return 1 if result["problems"] else 0


def _workbook(lab: bool):
    def run(args, parser, rest) -> int:
        from . import workbook
        replace = "all" if "all" in args.replace else tuple(args.replace)
        return workbook.main(replace=replace, lab=lab, lab_args=rest)
    return run


_REPLACE = _o("--replace", action="append", default=[], metavar="CHAPTER",
              help="replace this edited copy with the committed chapter (yours goes to workbook/.previous/); "
                   "'all' for every one")
_TIMEOUT = _o("--timeout", type=int, default=900, help="seconds per cell (default 900)")

COMMANDS = [
    Command("refresh", "re-execute chapter notebooks on a GPU and save their outputs", _refresh, (
        _o("notebooks", nargs="+"), _TIMEOUT,
        _o("--allow-cpu", action="store_true", help="run without a GPU (never commit the result)"),
        _o("--record", action="store_true", help="also write results/chapters-<gpu>.json: which chapters ran "
                                                 "to the end on this GPU, with their cell counts"))),
    Command("rehearse", "run chapter notebooks top to bottom in memory (never written), under a device profile "
                        "if given; fails if any cell fails", _rehearse, (
        _o("notebooks", nargs="+"),
        _o("--profile", help="GEMMLAB_DEVICE for the run: T4, L4, RTX 4090, A100, A6000, RTX 4060, H100 or H200"),
        _o("--jobs", type=int, default=1, help="notebooks run at once (default 1)"), _TIMEOUT,
        _o("--record", action="store_true", help="on a GPU, write results/chapters-<gpu>.json; without one, run "
                                                 "every notebook twice on the emulator (an empty build cache, then "
                                                 "a full one) and write results/chapters-emulator.json"))),
    Command("support", "which chapters run on a T4, on Ampere/Ada, on Hopper and on the emulator (the table README "
                       "and chapter 0 carry), from the registry", _support, (
        _o("--full", action="store_true", help="the appendix's tables: what each GPU skips and why, and what each "
                                               "kernel needs"),)),
    Command("generate", "make the generated text again: the support tables, the chapter count and the emulator's "
                        "times in README.md, chapter 0 and the appendix; every chapter's setup cell from "
                        "_config.yml's repository.url", _generate),
    Command("portability", "compile every configuration the book uses with nvcc for every architecture of the "
                           "profile table (no GPU needed)", _portability,
            (_o("--jobs", type=int, default=2, help="nvcc runs at once (default 2)"),)),
    Command("workbook", "copy the chapters into workbook/ (git-ignored), or bring the copies up to date; asks "
                        "before replacing a copy you have edited", _workbook(lab=False), (_REPLACE,)),
    Command("lab", "bring workbook/ up to date, then start JupyterLab on it (extra arguments go to jupyter lab)",
            _workbook(lab=True), (_REPLACE,), takes_rest=True),
]
BY_NAME = {c.name: c for c in COMMANDS}


def parser() -> argparse.ArgumentParser:
    from . import studies
    p = argparse.ArgumentParser(prog="python -m gemmlab")
    sub = p.add_subparsers(dest="command", required=True)
    studies.add_commands(sub)
    for c in COMMANDS:
        s = sub.add_parser(c.name, help=c.help)
        for flags, kwargs in c.options:
            s.add_argument(*flags, **kwargs)
    return p


# every environment setting gemmlab reads (the README's and the appendix's), and GEMMLAB_RECORD_CHAPTER, which
# refresh sets for the notebooks it runs
SETTINGS = ("GEMMLAB_BACKEND", "GEMMLAB_DEVICE", "GEMMLAB_CACHE_DIR", "GEMMLAB_EMULATOR_TIMEOUT",
            "GEMMLAB_EMULATOR_WORKERS", "GEMMLAB_EMULATOR_MEMCHECK", "GEMMLAB_EMULATOR_INTERLEAVE",
            "GEMMLAB_EMULATOR_RACECHECK", "GEMMLAB_GIT_COMMIT", "GEMMLAB_CHROMIUM", "GEMMLAB_RECORD_CHAPTER")


def check_settings() -> None:
    """Every GEMMLAB_* setting, checked before a command does any work: a name gemmlab does not read (a typo
    would be ignored) or a value it does not take is a ValueError naming it and what is legal.
    (GEMMLAB_DEVICE and GEMMLAB_BACKEND are checked as the library is imported.)"""
    import os
    for name in sorted(k for k in os.environ if k.startswith("GEMMLAB_")):
        if name not in SETTINGS:
            raise ValueError(f"{name} is not a gemmlab setting; the settings are: {', '.join(SETTINGS[:-1])}")
    from .runtime.emulator import build, launch
    launch.timeout_setting()
    launch.workers_setting()
    build._interleave_setting()
    build._racecheck_setting()
    build._memcheck_setting()


def main(argv=None) -> int:
    from . import studies
    p = parser()
    args, rest = p.parse_known_args(argv)
    command = BY_NAME.get(args.command)
    if rest and not (command and command.takes_rest):
        p.error("unrecognized arguments: " + " ".join(rest))
    if command is not None:
        return command.run(args, p, rest)
    return studies.main(studies.BY_NAME[args.command], args, p)
