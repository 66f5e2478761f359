"""Where the kernel sources and the recorded results live: inside the wheel, or in the source tree."""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _locate(name: str) -> Path:
    bundled = PACKAGE / name            # installed from a wheel: carried next to the code
    if bundled.is_dir():
        return bundled
    return PACKAGE.parents[1] / name    # editable install or a checkout: <repo>/lib/gemmlab -> <repo>/name


KERNELS = _locate("kernels")
# the emulator's data: its runtime header and, under include/, CUDA's system headers as it has them
EMULATOR = PACKAGE / "emulator"
# stand-ins for the C and C++ library headers (<stdio.h>, "assert.h", <cmath>, ...), which NVRTC has none of
NVRTC_STD = PACKAGE / "nvrtc"
# stand-ins for host libraries' headers (<cublas_v2.h>, <cufft.h>, <nvtx3/nvToolsExt.h>, ...), which a kernel's file
# may include for its host code: on both backends they declare nothing
HOST_LIBRARIES = PACKAGE / "hostlibs"
RESULTS = _locate("results")
REPO = PACKAGE.parents[1] if (PACKAGE.parents[1] / "_toc.yml").is_file() else None


def atomic_write(path, data, *, mode: int | None = None) -> Path:
    """Write a file whole or not at all: into a temporary file beside it, flushed to disk, then renamed.

    Every file the library writes goes through here (notebooks written back by ``refresh``, everything
    under ``results/``, the emulator's cache manifests), so a full disk, an interrupt or a crash leaves
    the old file as it was. ``data`` is text (UTF-8) or bytes. The file keeps the old one's permissions.
    """
    import os
    import tempfile

    path = Path(path)
    payload = data.encode() if isinstance(data, str) else bytes(data)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def rewrite(path, change) -> bool:
    """Make a file's text again with ``change`` (its text -> the new text); write it (whole, through
    :func:`atomic_write`) only when that differs. True when it was written."""
    old = Path(path).read_text()
    new = change(old)
    if new == old:
        return False
    atomic_write(path, new)
    return True


def notebook_text(nb: dict) -> str:
    """A notebook's JSON as the repository keeps it (one-space indent, characters as written, a final newline)."""
    import json
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def writable(path: str) -> None:
    """Refuse, before any work, a path a result could not be written to: a folder, a missing or read-only folder."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise ValueError(f"{path!r} is a folder; give a file name")
    if not os.path.isdir(folder):
        raise ValueError(f"the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):     # (a file there is replaced by a rename: the folder decides)
        raise ValueError(f"{path!r} cannot be written: no permission to write in {folder!r}")
