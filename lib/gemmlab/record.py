"""Recorded measurements under ``results/``: every file says on which GPU, when, and with what software."""
from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

from .runtime import backend as hw
from .paths import RESULTS, atomic_write


def _version(pkg: str):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _git_commit():
    """GEMMLAB_GIT_COMMIT when the run is told (a copy of the tree on a remote GPU machine, whose .git,
    if it has one, need not be this tree's), else the checkout's own commit."""
    if os.environ.get("GEMMLAB_GIT_COMMIT"):
        return os.environ["GEMMLAB_GIT_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=5).stdout.strip() or None
    except Exception:
        return None


def environment() -> dict:
    """GPU name, date and versions: what every recorded result carries."""
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "backend": hw.backend,
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "gemmlab": _version("gemmlab") or _package_version(),
    }
    env["git_commit"] = _git_commit()
    if hw.on_gpu:
        cp = hw.xp
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        env.update({
            "gpu": name.decode() if isinstance(name, bytes) else str(name),
            "compute_capability": dev.compute_capability,
            "sm_count": dev.attributes["MultiProcessorCount"],
            "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
            "cuda_driver": cp.cuda.runtime.driverGetVersion(),
            # CuPy runs FP32 matmul in plain FP32 unless CUPY_TF32=1; the book's cuBLAS column is plain FP32.
            "cupy_tf32": os.environ.get("CUPY_TF32", "0"),
        })
    else:
        env["gpu"] = None
    from .runtime.profiles import current, emulated
    if emulated() is not None:
        # GEMMLAB_DEVICE: the kernels ran as another GPU (its architecture's code, its limits)
        env["runs_as"] = f"{current().name} (GEMMLAB_DEVICE={current().key}, compute capability {current().cc})"
    return env


def cuda_version(env: dict) -> str:
    """'13.2': the CUDA runtime a record's environment names (CUDA's 1000 x major + 10 x minor)."""
    rt = env.get("cuda_runtime")
    return f"{rt // 1000}.{rt % 1000 // 10}" if rt else "?"


def slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': how a GPU's name appears in result file names."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def gpu_slug() -> str:
    """The name of records made on the GPU in use: 'nvidia-h200'; a GPU running as another profile
    (GEMMLAB_DEVICE=T4 on an H200) writes 'nvidia-h200-as-t4', never over its own records."""
    from .runtime.profiles import current, device_name, emulated
    name = slug(device_name() or "no-gpu")
    return name + (f"-as-{slug(current().key)}" if hw.on_gpu and emulated() is not None else "")


def _gpu_of(path: Path):
    try:
        return (json.loads(path.read_text()).get("environment") or {}).get("gpu")
    except (OSError, ValueError):
        return None


def find(study: str) -> tuple:
    """Which record of ``study`` a chapter shows the reader, and why: (name, provenance).

    The reader's GPU is the one in use, or the profile GEMMLAB_DEVICE names; its own record,
    ``results/<study>-<gpu>.json``, when one exists (on the emulator: a record of any GPU of that profile).
    With no GPU in use and no profile asked for, the record of the GPU the chapter's committed outputs come
    from, when there is one; else the book's, recorded on the H200. The provenance says which, and why."""
    from .runtime.profiles import BOOK, PROFILES, current, emulated, for_device
    book = f"{study}-{slug(PROFILES[BOOK].name)}"
    if not hw.on_gpu and emulated() is None:
        run = _chapter["name"] and _committed_run(_chapter["name"])   # the GPU this chapter's outputs come from
        if run:
            gpu = _gpu_of(RESULTS / f"{run}.json")
            name = f"{study}-{slug(gpu)}" if gpu else None
            if name and name != book and (RESULTS / f"{name}.json").is_file():
                return name, (f"the record of the {gpu}, on which this chapter's outputs were made "
                              f"(results/{name}.json): no GPU in use")
        other = _in_place_of(book, study, "no GPU in use")
        if other:
            return other
        return book, f"the book's record, made on the H200 (results/{book}.json): no GPU in use"
    profile = current()
    if hw.on_gpu:
        mine = gpu_slug()
        who, own = f"this GPU ({mine})", [f"{study}-{mine}"]
    else:
        who = f"the {profile.key} (GEMMLAB_DEVICE={profile.key})"
        own = sorted(p.stem for p in RESULTS.glob(f"{study}-*.json")
                     if (gpu := _gpu_of(p)) and p.stem == f"{study}-{slug(gpu)}" and for_device(gpu) is profile)
    for name in own:
        if (RESULTS / f"{name}.json").is_file():
            return name, f"the record of {who}, results/{name}.json"
    other = _in_place_of(book, study, f"there is none of {who} or of the {PROFILES[BOOK].name} yet")
    if other:
        return other
    return book, f"the book's record, made on the H200 (results/{book}.json): there is none of {who} yet"


def _in_place_of(book: str, study: str, why: str) -> tuple | None:
    """Where the book's record of ``study`` does not exist (a study not yet recorded on the book's GPU): (the
    newest record of it made on a GPU as itself, its provenance), or None."""
    if (RESULTS / f"{book}.json").is_file():
        return None
    found = []
    for path in RESULTS.glob(f"{study}-*.json"):
        try:
            env = json.loads(path.read_text()).get("environment") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if env.get("gpu") and path.stem == f"{study}-{slug(env['gpu'])}":
            found.append((env.get("date", ""), path.stem, env["gpu"]))
    if not found:
        return None
    _, name, gpu = max(found)
    return name, f"the {gpu}'s record (results/{name}.json), the only GPU this study has been recorded on: {why}"


def shown(study: str) -> dict:
    """The record of ``study`` a chapter shows (see :func:`find`), with ``"shown_as"``: its provenance."""
    name, why = find(study)
    return {**load(name), "shown_as": why}


def save(name: str, data: dict, directory: Path | None = None) -> Path:
    """Write ``results/<name>.json`` with the environment first."""
    path = (directory or RESULTS) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"environment": environment(), **data}, indent=2) + "\n")
    return path


# What each kind of record must hold at its top level (name prefix -> key -> type); every record has its
# environment (the GPU, the date). A record that lacks one is refused, the file named, before a reader of it
# fails somewhere else with a KeyError.
SHAPES = {
    "chapter-": {"chapter": str, "run": str, "figures": dict},
    "chapters-": {"notebooks": list},
    "blas-": {"timings": list, "errors": dict},
    "blas-shapes-": {"calls": list, "grid": list, "winners": dict, "classes": dict},
    "ceilings-": {"measured_copy": (int, float), "peak_fp32": (int, float), "bandwidth": (int, float)},
    "climb-": {"sizes": list, "dot": list, "gemv": list, "gemm": list},
    "ladder-": {"N": int, "steps": list, "timings": list},
    "ncu-": {"ncu": str, "kernels": list},
    "sanitizer-": {"tools": dict},
    "sass-": {"arch": str, "kernels": dict},
    "tensor-": {"tc": list, "hopper": list, "split": dict, "accumulation": dict},
    "hopper-": {"points": list},
    "fp8-": {"points": list, "accumulation": list},
    "emulator-vs-": {"cases": list},
    "tune-": {"key": str, "sizes": list},
}


def _shape_problem(name: str, data) -> str | None:
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not the object a record is"
    env = data.get("environment")
    if not isinstance(env, dict) or not isinstance(env.get("gpu"), (str, type(None))) or not isinstance(env.get("date"), str):
        return "has no environment (the GPU and date it was made on)"
    prefix = max((p for p in SHAPES if name.startswith(p)), key=len, default=None)
    for key, kind in (SHAPES[prefix] if prefix else {}).items():
        if key not in data:
            return f"lacks its {key!r}"
        if isinstance(data[key], bool) or not isinstance(data[key], kind):
            return f"has {key!r} as a {type(data[key]).__name__}, not a {getattr(kind, '__name__', 'number')}"
    return None


def load(name: str) -> dict:
    """Read ``results/<name>.json``, checked: valid JSON, an object with its environment and the top-level
    fields its kind of record has (``SHAPES``). A truncated, empty or wrong-shaped file is refused with
    its name and how to make it again."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in RESULTS.glob("*.json"))) or "none"
        raise FileNotFoundError(f"no recorded result {name!r} in {RESULTS} (there are: {have})")
    again = "restore it (git checkout) or make it again with its study's --record command"
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        what = "is empty" if not path.read_bytes().strip() else f"is not valid JSON ({exc})"
        raise ValueError(f"{path} {what}: a truncated or hand-edited record? {again}") from None
    problem = _shape_problem(name, data)
    if problem:
        raise ValueError(f"{path} {problem}: {again}")
    return data


def previous(name: str) -> dict | None:
    """``results/<name>.json`` as :func:`load` reads it, or None where there is none yet: the record a partial run
    is put into."""
    return load(name) if (RESULTS / f"{name}.json").is_file() else None


def runs(old: dict, new: dict, describe) -> list:
    """The runs a record holds once the partial run ``new`` is put into ``old``: old's own list of them (or old
    itself, as one run), then new; each {date, command, **describe(run)}."""
    earlier = old.get("runs") or [{"date": old["environment"]["date"], "command": old.get("command"),
                                   **describe(old)}]
    return earlier + [{"date": environment()["date"], "command": new["command"], **describe(new)}]


def merged_only(old: dict, new: dict) -> list:
    """The key prefixes a record covers once the partial run ``new`` (its ``only``) is put into ``old``: none (the
    whole registry) where old covered all of it, else both runs' prefixes."""
    return [] if not old["only"] else sorted(set(old["only"]) | set(new["only"]))


def _package_version():
    from ._version import __version__
    return __version__


# --- a chapter's own record: the figures its cells measured in the run its outputs were committed from -----

RECORD_CHAPTER = "GEMMLAB_RECORD_CHAPTER"      # set by `refresh` (to the run's token): keep what the cells measure
_chapter = {"name": None, "figures": None, "token": None, "shown": None}


def chapter_record_name(name: str, gpu: str | None = None) -> str:
    """'chapter-05-cache-blocking-nvidia-h200': the record of a chapter's run on a GPU (default: the one in use)."""
    return f"chapter-{name}-{gpu or gpu_slug()}"


def chapter(name: str) -> None:
    """A chapter's setup cell: names the chapter and says, in one line, what this run is.

    Run by ``refresh`` on a GPU (``GEMMLAB_RECORD_CHAPTER`` set), every figure the chapter's cells measure is
    kept in ``results/chapter-<name>-<gpu>.json``, the chapter's own record. The emulator shows that record
    where a cell would measure (and so does a GPU that cannot run Part V's kernels, for their tables), so a
    reader who runs the chapter without a GPU sees the figures of the committed outputs, each saying where
    it comes from."""
    if not isinstance(name, str) or not re.fullmatch(r"[0-9]{2}-[a-z0-9-]+", name):
        raise ValueError(f"a chapter is named by its notebook's name, like '05-cache-blocking'; got {name!r}")
    _chapter.update(name=name, figures=None, token=None, shown=None)
    env = environment()
    when = env["date"].replace("T", " ")[:16] + " UTC"
    if hw.on_gpu:
        cuda = f"CUDA {cuda_version(env)}"
        line = f"This run: {env['gpu']}, CUDA backend (CuPy {env.get('cupy')}, {cuda}), {when}"
        if env.get("runs_as"):
            line += f", running as the {env['runs_as']}"
        token = os.environ.get(RECORD_CHAPTER)
        if token:
            if token.split(" ")[0] != name:
                raise ValueError(f"this notebook is being refreshed as {token.split(' ')[0]!r}, but its setup cell "
                                 f"names the chapter {name!r}: gl.chapter takes the notebook's own name")
            _chapter.update(figures={}, token=token)
            _write_chapter()
        print(line + ".")
        return
    line = f"This run: the CPU emulator ({hw.backend_reason.rstrip('.')}), {when}."
    rec = _chapter_record()
    if rec is not None and rec.get("figures"):
        line += (f" Cells that time a kernel show {_run_of(rec)}, the run the chapter's committed outputs "
                 f"come from.")
    else:
        line += " Cells that time a kernel show figures recorded on a GPU, each saying which."
    print(line)


def _run_of(rec: dict) -> str:
    e = rec["environment"]
    return f"this chapter's run on {e['gpu']} of {e['date'][:10]} ({rec['shown_as']})"


def source_of(study: str) -> str:
    """'results/<study>-<gpu>.json': the study record a chapter shows (:func:`find`), as a figure's source."""
    return f"results/{find(study)[0]}.json"


def _write_chapter():
    save(chapter_record_name(_chapter["name"]), {"chapter": _chapter["name"], "run": _chapter["token"],
                                                 "figures": _chapter["figures"],
                                                 "command": "python -m gemmlab refresh chapters/*.ipynb"})


def _chapter_record():
    """The chapter record a backend that cannot measure shows (the reader's GPU's, else the H200's), or None."""
    if _chapter["name"] is None:
        return None
    if _chapter["shown"] is None:
        name, why = find(f"chapter-{_chapter['name']}")
        if not (RESULTS / f"{name}.json").is_file():
            # no record of the reader's GPU, and the chapter's committed outputs come from another GPU's run
            name = _committed_run(_chapter["name"]) or name
        try:
            data = load(name)
        except FileNotFoundError:
            data = {}
        _chapter["shown"] = {**data, "shown_as": f"results/{name}.json"} if data else {}
    return _chapter["shown"] or None


def _committed_run(name: str):
    """The newest record of a chapter's run on a GPU as itself (not running as another profile): the run its
    committed outputs come from when that was not the H200's. None if there is none."""
    runs = []
    for path in RESULTS.glob(f"chapter-{name}-*.json"):
        try:
            env = json.loads(path.read_text()).get("environment") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if env.get("gpu") and path.stem == chapter_record_name(name, slug(env["gpu"])):
            runs.append((env.get("date", ""), path.stem))
    return max(runs)[1] if runs else None


def keep(kind: str, key: str, data) -> None:
    """In a chapter run by ``refresh`` on a GPU: keep a figure a cell measured (JSON), under ``kind`` and ``key``."""
    if _chapter["figures"] is None:
        return
    name = f"{kind}: {key}"
    old = _chapter["figures"].get(name)
    if old is not None and kind == "timing" and [r["name"] for r in old["rows"]] != [r["name"] for r in data["rows"]]:
        import warnings                     # the record keeps the last; the book's tests fail on the first
        warnings.warn(f"chapter {_chapter['name']} times {key!r} twice with different cases; give them two labels",
                      RuntimeWarning, stacklevel=3)
    _chapter["figures"][name] = json.loads(json.dumps(data))
    _write_chapter()


def kept(kind: str, key: str):
    """The figure ``kept`` under ``kind`` and ``key`` in this chapter's record, with ``"shown_as"`` (where it
    comes from), or None: no chapter named, no record, or a figure the run did not measure."""
    rec = _chapter_record()
    if rec is None or hw.on_gpu and _chapter["figures"] is not None:
        return None
    data = rec.get("figures", {}).get(f"{kind}: {key}")
    if data is None:
        return None
    return data, _run_of(rec)
