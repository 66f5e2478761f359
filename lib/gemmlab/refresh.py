"""Re-execute chapter notebooks on a GPU and write them back with their outputs.

    python -m gemmlab refresh chapters/01-roofline.ipynb [more.ipynb ...]

The book is built from committed outputs (``execute_notebooks: off``), so those outputs must come from
a real GPU run: this command refuses to run without one unless ``--allow-cpu`` is given (for trying a
notebook out; never commit what that produces). Widget views are not kept: an output that is a widget
keeps its ``text/html`` form (the explorers give one), and no widget state is saved, so the book draws
what is in the page and asks no CDN for a widget manager. Each chapter's own record,
``results/chapter-<chapter>-<gpu>.json``, is written by the same run (``gemmlab.record.chapter``): the figures its
cells measured, which a backend that cannot measure shows instead. Needs nbclient and ipykernel (the ``dev`` extra).
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(nb) -> list:
    """Keep widget outputs in their other forms only; a widget with no HTML form (a progress bar) is left out
    whole, since its text is a snapshot of a moment of the run ("0%| 0/10"). Returns the cells that had one."""
    nb.metadata.pop("widgets", None)
    bare = []
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if data.pop(WIDGET_VIEW, None) is not None and "text/html" not in data:
                bare.append(cell.get("id"))
                continue
            kept.append(out)
        if "outputs" in cell:
            cell["outputs"] = kept
    return bare


def _cells(nb) -> dict:
    """How many code cells a notebook has, and how many of them ran."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    return {"code_cells": len(code), "cells_run": sum(1 for c in code if c.get("execution_count"))}


def _put_back(path: Path, data) -> None:
    from .paths import atomic_write
    if data is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write(path, data)


class RefreshError(RuntimeError):
    """A notebook could not be refreshed; the message is one line naming the notebook (and the cell)."""


def _read(path: Path):
    import nbformat
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, UnicodeDecodeError) as exc:
        raise RefreshError(f"{path}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    except Exception as exc:                      # not JSON, or JSON that is not a notebook
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise RefreshError(f"{path}: not a Jupyter notebook ({first[:200]})") from None


def _failed_cell(nb, exc) -> str:
    """'cell N (id ...)' of the first cell whose output is an error, with the error's name and value."""
    for number, cell in enumerate(nb.cells, start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return (f"cell {number} (id {cell.get('id', '?')}) failed: {out.get('ename', 'Error')}: "
                        f"{str(out.get('evalue', '')).splitlines()[0] if out.get('evalue') else ''}").rstrip(": ")
    name = getattr(exc, "ename", None) or exc.__class__.__name__
    value = getattr(exc, "evalue", None) or (str(exc).strip().splitlines() or [""])[-1]
    return f"a cell failed: {name}: {value}"


def run(paths, *, timeout: int = 900, allow_cpu: bool = False, kernel_name: str = "python3") -> list:
    """Execute each notebook and write it back (whole or not at all). A notebook that cannot be read or
    whose cell fails is left as it was; the others go on, and :class:`RefreshError` lists the failures."""
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as exc:
        raise RefreshError(f"refresh needs nbclient, nbformat and ipykernel (the dev extra: pip install "
                           f"'gemmlab[dev]'); {exc}") from None

    from .runtime import backend as hw
    from . import record
    from .paths import RESULTS, atomic_write
    if not hw.on_gpu and not allow_cpu:
        raise SystemExit(f"refusing to refresh notebooks without a GPU ({hw.backend_reason}); "
                         "committed outputs must come from a GPU run. --allow-cpu runs them anyway.")
    # The kernel inherits this environment: a non-interactive MPLBACKEND (Agg, set for command-line
    # runs) would keep every figure out of the notebook. The kernel must use its own inline backend.
    os.environ.pop("MPLBACKEND", None)
    done, failures = [], []
    for path in map(Path, paths):
        try:
            nb = _read(path)
            start = time.perf_counter()
            # the chapter's own record (results/chapter-<name>-<gpu>.json): what its cells measure in this run,
            # which a backend that cannot measure shows; put back as it was if the run fails
            token = f"{path.stem} {record.environment()['date']}"
            kept = RESULTS / f"{record.chapter_record_name(path.stem)}.json"
            before = kept.read_bytes() if kept.is_file() else None
            os.environ[record.RECORD_CHAPTER] = token
            client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=False,
                                    resources={"metadata": {"path": str(path.parent.resolve())}})
            try:
                client.execute()
            except BaseException as exc:
                _put_back(kept, before)            # the record and the notebook stay one run
                if not isinstance(exc, Exception):
                    raise
                raise RefreshError(f"{path}: {_failed_cell(nb, exc)}; the notebook was not written") from None
            finally:
                os.environ.pop(record.RECORD_CHAPTER, None)
            for cell_id in drop_widget_views(nb):
                print(f"{path}: cell {cell_id} displayed a widget with no HTML form (a progress bar): left out")
            env = record.environment()
            nb.metadata["gemmlab"] = {k: env.get(k) for k in ("gpu", "date", "cupy", "cuda_runtime", "cuda_driver",
                                                              "git_commit")}
            nb.metadata["gemmlab"]["executed_on"] = env.get("gpu") or f"no GPU ({hw.backend})"
            nb.metadata["gemmlab"]["run"] = token          # the same in the chapter's record, if it measured
            try:
                text = nbformat.writes(nb)
                atomic_write(path, text if text.endswith("\n") else text + "\n")
            except OSError as exc:
                _put_back(kept, before)
                raise RefreshError(f"{path}: could not be written ({exc.strerror or exc}); the old notebook is "
                                   f"unchanged") from None
        except RefreshError as exc:
            print(exc, flush=True)
            failures.append(str(exc))
            continue
        took = time.perf_counter() - start
        print(f"{path}: executed in {took:.0f} s", flush=True)
        done.append({"notebook": str(path), **_cells(nb), "error": None, "seconds": round(took, 1)})
    if failures:
        raise RefreshError(f"{len(failures)} of {len(done) + len(failures)} notebooks were not refreshed")
    return done


def _joined(text) -> str:
    """A notebook output's text, stored as one string or as a list of lines."""
    return text if isinstance(text, str) else "".join(text)


# what a cell prints when it shows a recorded figure instead of one measured in this run
_RECORDED = ("RECORDED earlier", "the book's record", "shown: the record", "recorded on", "no GPU in use")


# what a reader sees move in a running cell: printed lines, displays and their updates, widgets' (tqdm's bar)
_ACTIVITY = {"stream", "display_data", "update_display_data", "execute_result", "error", "comm_msg", "comm_open"}


@functools.cache
def _activity_client():
    """The notebook client class of rehearse (made once, when first needed: nbclient is the dev extra's)."""
    from nbclient import NotebookClient

    class ActivityClient(NotebookClient):
        """A notebook client that notes when each cell starts, ends and shows something: the longest time a
        running cell showed nothing new is what a reader waits without a sign that anything happens."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._seen = {}
            self.on_cell_execute = lambda cell, cell_index: self._note(cell_index)
            self.on_cell_executed = lambda cell, cell_index, execute_reply: self._note(cell_index)

        def _note(self, cell_index):
            self._seen.setdefault(cell_index, []).append(time.monotonic())

        def process_message(self, msg, cell, cell_index):
            if msg.get("msg_type") in _ACTIVITY:
                self._note(cell_index)
            return super().process_message(msg, cell, cell_index)

        def longest_silence(self) -> tuple:
            """(cell number, of all cells from 1, and seconds) of the longest wait with nothing new shown."""
            best = (None, 0.0)
            for index, times in self._seen.items():
                gap = max((b - a for a, b in zip(times, times[1:])), default=0.0)
                if gap > best[1]:
                    best = (index + 1, gap)
            return best
    return ActivityClient


def rehearse(paths, *, profile: str | None = None, jobs: int = 1, timeout: int = 900,
             kernel_name: str = "python3") -> dict:
    """Run each notebook top to bottom in memory, as a reader would, and never write it: under ``profile``
    (GEMMLAB_DEVICE: the emulator, or this GPU, runs as that GPU) when given. Returns, per notebook, the cells
    run, the failing cell if any (its error in one line), the seconds, and the cells whose output shows a
    recorded figure instead of a live one (cell number and the line that says so), and the longest time a cell
    showed nothing new."""
    import concurrent.futures

    from .runtime import profiles
    if profile is not None:
        profiles.lookup(profile)                       # an unknown profile stops here, naming the legal ones
        os.environ["GEMMLAB_DEVICE"] = profile
    os.environ.pop("MPLBACKEND", None)
    from .record import RECORD_CHAPTER
    os.environ.pop(RECORD_CHAPTER, None)               # a rehearsal keeps nothing

    def one(path: Path) -> dict:
        nb = _read(path)
        for cell in nb.cells:                  # what this run does, not what the committed notebook did
            if cell.cell_type == "code":
                cell.execution_count, cell.outputs = None, []
        start = time.perf_counter()
        client = _activity_client()(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=False,
                                    resources={"metadata": {"path": str(path.parent.resolve())}})
        error = None
        try:
            client.execute()
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            error = _failed_cell(nb, exc)
        shows_record = []
        for number, cell in enumerate(nb.cells, start=1):
            # printed lines, and the text form of what a cell displays (a gl.Table's title says "RECORDED ...")
            text = "\n".join(_joined(o.get("text", "")) + _joined(o.get("data", {}).get("text/plain", ""))
                             for o in cell.get("outputs", []))
            line = next((l.strip() for l in text.splitlines() if any(m in l for m in _RECORDED)), None)
            if cell.cell_type == "code" and line:
                shows_record.append([number, line[:200]])
        cell, quiet = client.longest_silence()
        return {"notebook": str(path), **_cells(nb), "error": error,
                "seconds": round(time.perf_counter() - start, 1), "shows_record": shows_record,
                "longest_silence": {"cell": cell, "seconds": round(quiet, 1)}}

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        results = list(pool.map(one, map(Path, paths)))
    for r in results:
        status = f"FAILED at {r['error']}" if r["error"] else "ran to the end"
        quiet = r["longest_silence"]
        print(f"{r['notebook']} [{profile or 'default'}]: {r['cells_run']} of {r['code_cells']} code cells, "
              f"{status} ({r['seconds']:.0f} s; {len(r['shows_record'])} show a record; longest wait with "
              f"nothing new shown: {quiet['seconds']:.0f} s, cell {quiet['cell']})", flush=True)
    return {"profile": profile, "notebooks": results, "all_ran": all(r["error"] is None for r in results)}


def emulator_times(paths, *, jobs: int = 1, timeout: int = 900) -> dict:
    """Without a GPU: every notebook rehearsed twice on the emulator, the first time with an empty build cache
    (a temporary one: each kernel is compiled as a reader's first run compiles it), then again with the
    kernels built. Returns the machine, and per notebook the seconds of each run (the README's figures)."""
    import shutil
    import tempfile

    from .runtime import backend as hardware
    from .runtime.emulator.build import _compiler, _compiler_version
    from .studies.emulator_bench import _cpu_name
    if hardware.on_gpu:
        raise ValueError("the emulator's times are measured without a GPU (GEMMLAB_BACKEND=emulator)")
    cache = tempfile.mkdtemp(prefix="gemmlab-cold-cache-")
    before = os.environ.get("GEMMLAB_CACHE_DIR")
    os.environ["GEMMLAB_CACHE_DIR"] = cache
    try:
        cold = rehearse(paths, jobs=jobs, timeout=timeout)
        warm = rehearse(paths, jobs=jobs, timeout=timeout)
    finally:
        if before is None:
            os.environ.pop("GEMMLAB_CACHE_DIR", None)
        else:
            os.environ["GEMMLAB_CACHE_DIR"] = before
        shutil.rmtree(cache, ignore_errors=True)
    by_name = {r["notebook"]: r for r in warm["notebooks"]}
    notebooks = [{"notebook": c["notebook"], "cold_seconds": c["seconds"],
                  "warm_seconds": by_name[c["notebook"]]["seconds"],
                  "jobs": jobs, "cold_longest_silence": c["longest_silence"],
                  "warm_longest_silence": by_name[c["notebook"]]["longest_silence"],
                  "error": c["error"] or by_name[c["notebook"]]["error"]} for c in cold["notebooks"]]
    return {"cpu": _cpu_name(), "cores": os.cpu_count(), "compiler": _compiler_version(_compiler()).splitlines()[0],
            "jobs": jobs, "notebooks": notebooks, "all_ran": cold["all_ran"] and warm["all_ran"]}
