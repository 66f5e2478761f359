"""Command line: ``python -m gemmlab ceilings [--record]`` and ``python -m gemmlab refresh NOTEBOOK...``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemmlab")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("ceilings", help="measure this GPU's ceilings: copy bandwidth, cuBLAS SGEMM, DOT, GEMV")
    c.add_argument("--record", action="store_true", help="write results/ceilings-<gpu>.json")
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
    x = sub.add_parser("crosscheck", help="run every registry kernel on the GPU and on the emulator; compare")
    x.add_argument("--record", action="store_true", help="write results/emulator-vs-<gpu>.json")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--emit", help=argparse.SUPPRESS)    # internal: the emulator half, written to a .npz
    x.add_argument("--emulator-outputs", metavar="NPZ",
                   help="compare with what GEMMLAB_BACKEND=emulator python -m gemmlab crosscheck --emit NPZ wrote "
                        "on another machine, instead of running the emulator here")
    e = sub.add_parser("emulator-bench", help="the CPU emulator's speed on this machine")
    e.add_argument("--record", action="store_true", help="write results/emulator-benchmark.json")
    e.add_argument("--baseline", metavar="COMMIT", help="also measure COMMIT's emulator, in turns, and give the "
                                                        "ratios (needs a git checkout)")
    e.add_argument("--rounds", type=int, default=3, help="turns of each with --baseline (default 3)")
    lad = sub.add_parser("ladder", help="check and time every SGEMM step and sweep at N=4096 in one run")
    lad.add_argument("--record", action="store_true", help="write results/ladder-<gpu>.json")
    lad.add_argument("--reps", type=int, default=10)
    cl = sub.add_parser("climb", help="Part IV: check and time the tuned SGEMM kernels against cuBLAS at every target size")
    cl.add_argument("--record", action="store_true", help="write results/climb-<gpu>.json")
    cl.add_argument("--reps", type=int, default=10)
    te = sub.add_parser("tensor", help="Part V: check and time the tensor-core kernels against cuBLAS in the same "
                                       "precision, and 3xTF32's speed and accuracy against cuBLAS SGEMM")
    te.add_argument("--record", action="store_true", help="write results/tensor-<gpu>.json")
    te.add_argument("--reps", type=int, default=10)
    tu = sub.add_parser("tune", help="search a variant's parameter space on the GPU within a time budget")
    tu.add_argument("key", help="a registry variant, e.g. sgemm/10_double_buffer")
    tu.add_argument("--sizes", default="1024,2048,4096", help="comma-separated: N (square) or MxNxK")
    tu.add_argument("--budget", type=float, default=600.0, help="seconds in all, shared among the sizes")
    tu.add_argument("--seed", type=int, default=0)
    tu.add_argument("--record", action="store_true", help="write results/tune-<variant>-<gpu>.json")
    san = sub.add_parser("sanitize", help="every registry kernel under compute-sanitizer memcheck and racecheck")
    san.add_argument("--record", action="store_true", help="write results/sanitizer-<gpu>.json")
    san.add_argument("--launch", action="store_true", help=argparse.SUPPRESS)   # internal: the sanitized half
    san.add_argument("--demo", action="store_true",
                     help="racecheck chapter 2's tiled kernel without each barrier (writes racecheck-demo-<gpu>.json)")
    san.add_argument("--launch-demo", type=int, help=argparse.SUPPRESS)   # internal: one broken launch
    sa = sub.add_parser("sass", help="count the machine instructions nvcc makes of chosen kernels (no GPU needed)")
    sa.add_argument("--record", action="store_true", help="write results/sass-sm_90.json")
    bl = sub.add_parser("blas", help="check and time every DOT, GEMV and GEMM step, sweeps and the scaling study")
    bl.add_argument("--record", action="store_true", help="write results/blas-<gpu>.json and blas-scaling-<gpu>.csv")
    bl.add_argument("--passes", type=int, default=3)
    pf = sub.add_parser("profile", help="Nsight Compute metrics of each DOT and GEMM step (needs ncu and a GPU)")
    pf.add_argument("--record", action="store_true", help="write results/ncu-<gpu>.json")
    pf.add_argument("--launch", action="store_true", help=argparse.SUPPRESS)   # internal: the profiled half
    pf.add_argument("--study", help="a study of chosen kernels, each in its own ncu run: climb (the best SGEMM at "
                                    "4096, its row-by-row ablation, cuBLAS), ladder (chapters 2-9), part4, part5 "
                                    "(ncu-<study>-<gpu>.json)")
    pf.add_argument("--climb", action="store_true", help="the same as --study climb")
    pf.add_argument("--launch-case", nargs=2, metavar=("STUDY", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    from . import device, hardware
    if args.command == "support":
        from . import support
        print(support.markdown())
        return 0
    if args.command == "portability":
        from . import portability
        if args.jobs < 1:
            parser.error(f"--jobs must be a whole number >= 1, got {args.jobs}")
        result = portability.check(jobs=args.jobs, progress=True)
        print(f"{result['compiled']} compiled, {result['refused']} declared refusals, for "
              f"{', '.join(result['architectures'])}")
        for problem in result["problems"]:
            print("PROBLEM:", problem)
        return 1 if result["problems"] else 0
    if args.command == "ceilings":
        if not hardware.on_gpu:
            parser.error(f"ceilings needs a CUDA GPU ({hardware.backend_reason})")
        model = device.measure()
        print(device.describe(model))
        if args.record:
            print("wrote", device.save(model))
        return 0
    if args.command == "crosscheck":
        from . import crosscheck
        if args.emit:
            crosscheck.emit(args.emit, args.seed)
            return 0
        result = crosscheck.compare(args.seed, args.emulator_outputs)
        print(crosscheck.report(result))
        if args.record:
            print("wrote", crosscheck.save(result))
        return 0 if result["all_agree"] else 1
    if args.command == "ladder":
        from . import ladder
        result = ladder.run_all(reps=args.reps)
        print(f"checked and timed {sum(len(t['rows']) for t in result['timings'])} cases")
        if args.record:
            print("wrote", ladder.save(result))
        ladder.show("06-register-tiling")
        return 0
    if args.command in ("tensor", "climb"):                 # one run of a part's targets, a summary, a record
        from . import climb, tensor
        part = {"tensor": tensor, "climb": climb}[args.command]
        result = part.run_all(reps=args.reps)
        print(part.summary(result))
        if args.record:
            print("wrote", part.save(result))
        return 0
    if args.command == "tune":
        from . import tune
        if args.budget <= 0:
            raise SystemExit(f"--budget must be a positive number of seconds, got {args.budget:g}")
        result = tune.run(args.key, [x for x in args.sizes.split(",") if x], args.budget, args.seed)
        if args.record:
            print("wrote", tune.save(result))
        return 0
    if args.command == "sanitize":
        from . import sanitize
        if args.launch:
            sanitize.launch_all()
            return 0
        if args.launch_demo:
            from . import demos
            demos.launch_without_barrier(args.launch_demo, options=("-lineinfo",))
            return 0
        if args.demo:
            result = sanitize.run_demo()
            for barrier, r in result["barriers"].items():
                print(f"without barrier {barrier}: {r['summary']}", *r["pairs"], sep="\n  ")
            if args.record:
                print("wrote", sanitize.save_demo(result))
            return 0
        result = sanitize.run()
        for tool, r in result["tools"].items():
            print(f"{tool}: exit {r['exit_code']}, {r['configurations']} configurations, clean={r['clean']}; "
                  + " / ".join(r["summary"]))
        if args.record:
            print("wrote", sanitize.save(result))
        return 0 if all(r["clean"] for r in result["tools"].values()) else 1
    if args.command == "blas":
        from . import blasbench
        steps, scaling = blasbench.run_all(passes=args.passes)
        for t in steps["timings"]:
            print(t["label"])
            for r in t["rows"]:
                print(f"  {r['name']:<48} {r['median_ms']:10.4f} ms {r['gflops']:10.1f} GFLOP/s {r['gbs'] or 0:8.1f} GB/s"
                      f" {r['vs_library']:7.1%}")
        if args.record:
            print("wrote", *blasbench.save(steps, scaling))
        return 0
    if args.command == "profile":
        from . import blasbench, profiling
        if args.launch:
            blasbench.run_once(("DOT", "GEMM"))
            return 0
        if args.launch_case:
            profiling.launch_case(args.launch_case[0], int(args.launch_case[1]))
            return 0
        if args.study or args.climb:
            result = profiling.run_study(args.study or "climb")
            if args.record:
                print("wrote", profiling.save_study(result))
            profiling.climb_table({**result, "environment": __import__("gemmlab").record.environment()})
            return 0
        result = profiling.run()
        if args.record:
            print("wrote", profiling.save(result))
        profiling.table({**result, "environment": __import__("gemmlab").record.environment()})
        return 0
    if args.command == "sass":
        from . import sass
        result = sass.run()
        for name, r in result["kernels"].items():
            print(f"{name:<80} {r['registers']:>4} regs  {r['instructions']}")
        if args.record:
            print("wrote", sass.save(result))
        return 0
    if args.command == "emulator-bench":
        import json

        from . import _emulator, record
        if hardware.backend != "emulator":
            parser.error("emulator-bench measures the emulator: run it with GEMMLAB_BACKEND=emulator")
        if args.rounds < 1:
            parser.error(f"--rounds must be a whole number >= 1, got {args.rounds}")
        result = _emulator.compare_with(args.baseline, args.rounds) if args.baseline else _emulator.benchmark()
        print(json.dumps(result, indent=2))
        if args.record:
            print("wrote", record.save("emulator-benchmark", result))
        return 0
    missing = [p for p in args.notebooks if not Path(p).is_file()]
    if missing:
        parser.error("no such notebook: " + ", ".join(missing))
    from . import refresh
    if args.command == "rehearse":
        if args.jobs < 1:
            parser.error(f"--jobs must be a whole number >= 1, got {args.jobs}")
        try:
            result = refresh.rehearse(args.notebooks, profile=args.profile, jobs=args.jobs, timeout=args.timeout)
        except ValueError as exc:
            parser.error(str(exc))
        if args.record:
            from . import record
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
        from . import profiles, record
        name = f"chapters-{record.gpu_slug()}"
        try:                                  # notebooks refreshed in several runs: each keeps its latest
            earlier = {n["notebook"]: n for n in record.load(name)["notebooks"]}
        except (FileNotFoundError, KeyError, ValueError):
            earlier = {}
        earlier.update({n["notebook"]: n for n in done})
        print("wrote", record.save(name, {
            "profile": profiles.emulated().key if profiles.emulated() else None,
            "notebooks": [earlier[k] for k in sorted(earlier)], "all_ran": all(n["error"] is None for n in earlier.values()),
            "command": "python -m gemmlab refresh --record chapters/*.ipynb"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
