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

from . import hardware as hw
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
    return env


def slug(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': how a GPU's name appears in result file names."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def gpu_slug() -> str:
    return slug(environment()["gpu"] or "no-gpu")


def save(name: str, data: dict, directory: Path | None = None) -> Path:
    """Write ``results/<name>.json`` with the environment first."""
    path = (directory or RESULTS) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"environment": environment(), **data}, indent=2) + "\n")
    return path


def load(name: str) -> dict:
    """Read ``results/<name>.json``."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in RESULTS.glob("*.json"))) or "none"
        raise FileNotFoundError(f"no recorded result {name!r} in {RESULTS} (there are: {have})")
    return json.loads(path.read_text())


def _package_version():
    from . import __version__
    return __version__
