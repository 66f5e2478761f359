"""Re-execute chapter notebooks on a GPU and write them back with their outputs.

    python -m gemmlab refresh chapters/01-roofline.ipynb [more.ipynb ...]

The book is built from committed outputs (``execute_notebooks: off``), so those outputs must come from
a real GPU run: this command refuses to run without one unless ``--allow-cpu`` is given (for trying a
notebook out; never commit what that produces). Widget state is saved into the notebook, so saved
widgets can be drawn in the static book. Needs nbclient and ipykernel (the ``dev`` extra).
"""
from __future__ import annotations

import os
import time
from pathlib import Path


def run(paths, *, timeout: int = 900, allow_cpu: bool = False, kernel_name: str = "python3") -> list:
    import nbformat
    from nbclient import NotebookClient

    from . import hardware as hw
    from . import record
    if not hw.on_gpu and not allow_cpu:
        raise SystemExit(f"refusing to refresh notebooks without a GPU ({hw.backend_reason}); "
                         "committed outputs must come from a GPU run. --allow-cpu runs them anyway.")
    # The kernel inherits this environment: a non-interactive MPLBACKEND (Agg, set for command-line
    # runs) would keep every figure out of the notebook. The kernel must use its own inline backend.
    os.environ.pop("MPLBACKEND", None)
    done = []
    for path in map(Path, paths):
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=True,
                                resources={"metadata": {"path": str(path.parent.resolve())}})
        client.execute()
        env = record.environment()
        nb.metadata["gemmlab"] = {k: env.get(k) for k in ("gpu", "date", "cupy", "cuda_runtime", "cuda_driver",
                                                          "git_commit")}
        nb.metadata["gemmlab"]["executed_on"] = env.get("gpu") or f"no GPU ({hw.backend})"
        nbformat.write(nb, path)
        took = time.perf_counter() - start
        print(f"{path}: executed in {took:.0f} s", flush=True)
        done.append((str(path), took))
    return done
