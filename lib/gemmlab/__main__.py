"""Command line: ``python -m gemmlab <study> [--record]`` for every record producer (gemmlab.studies, one entry
each), and the book's own commands: refresh and rehearse (chapters), workbook and lab (the reader's working
copy of the chapters, and JupyterLab on it), support (the table of which GPU runs what), portability (every
configuration compiled for every architecture)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    from . import studies
    parser = argparse.ArgumentParser(prog="python -m gemmlab")
    sub = parser.add_subparsers(dest="command", required=True)
    studies.add_commands(sub)
    r = sub.add_parser("refresh", help="re-execute chapter notebooks on a GPU and save their outputs")
    r.add_argument("notebooks", nargs="+")
    r.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    r.add_argument("--allow-cpu", action="store_true", help="run without a GPU (never commit the result)")
    r.add_argument("--record", action="store_true", help="also write results/chapters-<gpu>.json: which chapters ran "
                                                         "to the end on this GPU, with their cell counts")
    rh = sub.add_parser("rehearse", help="run chapter notebooks top to bottom in memory (never written), under a "
                                         "device profile if given; fails if any cell fails")
    rh.add_argument("notebooks", nargs="+")
    rh.add_argument("--profile", help="GEMMLAB_DEVICE for the run: T4, L4, RTX 4090, A100, A6000, RTX 4060, "
                                      "H100 or H200")
    rh.add_argument("--jobs", type=int, default=1, help="notebooks run at once (default 1)")
    rh.add_argument("--timeout", type=int, default=900, help="seconds per cell (default 900)")
    rh.add_argument("--record", action="store_true", help="write results/chapters-<gpu>.json (on a GPU)")
    sub.add_parser("support", help="which chapters and kernels run on a T4, on Ampere/Ada and on Hopper (the "
                                   "table README and chapter 0 carry), from the registry")
    pt = sub.add_parser("portability", help="compile every configuration the book uses with nvcc for every "
                                            "architecture of the profile table (no GPU needed)")
    pt.add_argument("--jobs", type=int, default=2, help="nvcc runs at once (default 2)")
    for name, text in (("workbook", "copy the chapters into workbook/ (git-ignored), or bring the copies up to date; "
                                    "asks before replacing a copy you have edited"),
                       ("lab", "bring workbook/ up to date, then start JupyterLab on it (extra arguments go to "
                               "jupyter lab)")):
        w = sub.add_parser(name, help=text)
        w.add_argument("--replace", action="append", default=[], metavar="CHAPTER",
                       help="replace this edited copy with the committed chapter (yours goes to workbook/.previous/); "
                            "'all' for every one")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "lab":
        parser.error("unrecognized arguments: " + " ".join(rest))
    if args.command in ("workbook", "lab"):
        from . import workbook
        replace = "all" if "all" in args.replace else tuple(args.replace)
        return workbook.main(replace=replace, lab=args.command == "lab", lab_args=rest)

    if args.command in studies.BY_NAME:
        return studies.main(studies.BY_NAME[args.command], args, parser)
    from .runtime import backend as hardware
    if args.command == "support":
        from . import support
        print(support.markdown())
        return 0
    if args.command == "portability":
        from .studies import portability
        if args.jobs < 1:
            parser.error(f"--jobs must be a whole number >= 1, got {args.jobs}")
        result = portability.check(jobs=args.jobs, progress=True)
        print(f"{result['compiled']} compiled, {result['refused']} declared refusals, for "
              f"{', '.join(result['architectures'])}")
        for problem in result["problems"]:
            print("PROBLEM:", problem)
        return 1 if result["problems"] else 0
    missing = [p for p in args.notebooks if not Path(p).is_file()]
    if missing:
        parser.error("no such notebook: " + ", ".join(missing))
    if args.timeout < 1:
        parser.error(f"--timeout is seconds per cell: a whole number >= 1, got {args.timeout}")
    from . import record, refresh
    if args.command == "rehearse":
        if args.jobs < 1:
            parser.error(f"--jobs must be a whole number >= 1, got {args.jobs}")
        try:
            result = refresh.rehearse(args.notebooks, profile=args.profile, jobs=args.jobs, timeout=args.timeout)
        except ValueError as exc:
            parser.error(str(exc))
        if args.record:
            if not hardware.on_gpu:
                parser.error("--record keeps what ran on a GPU; without one nothing is recorded")
            print("wrote", record.save(f"chapters-{record.gpu_slug()}", {
                **result, "command": f"python -m gemmlab rehearse --profile {args.profile} --record chapters/*.ipynb"}))
        return 0 if result["all_ran"] else 1
    try:
        done = refresh.run(args.notebooks, timeout=args.timeout, allow_cpu=args.allow_cpu)
    except refresh.RefreshError as exc:
        print(f"python -m gemmlab refresh: {exc}", file=sys.stderr)
        return 1
    if args.record and hardware.on_gpu:
        from .runtime import profiles
        name = f"chapters-{record.gpu_slug()}"
        try:                                  # notebooks refreshed in several runs: each keeps its latest
            earlier = {n["notebook"]: n for n in record.load(name)["notebooks"]}
        except (FileNotFoundError, KeyError, ValueError):
            earlier = {}
        earlier.update({n["notebook"]: n for n in done})
        print("wrote", record.save(name, {
            "profile": profiles.emulated().key if profiles.emulated() else None,
            "notebooks": [earlier[k] for k in sorted(earlier)],
            "all_ran": all(n["error"] is None for n in earlier.values()),
            "command": "python -m gemmlab refresh --record chapters/*.ipynb"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
