"""Which machine runs the kernels (gl.backend, gl.xp): a CUDA GPU through CuPy, or the CPU emulator.

Chosen once, at import. ``GEMMLAB_BACKEND=cuda`` or ``=emulator`` overrides the automatic choice,
which takes the GPU when CuPy is installed and sees a working device, and the emulator otherwise.
Chapters never branch on the backend themselves; they call helpers such as :func:`size`.
"""
from __future__ import annotations

import os
import warnings

import numpy

BACKENDS = ("cuda", "emulator")


class BackendError(RuntimeError):
    """The requested backend cannot run on this machine."""


class MachineError(BackendError):
    """The machine failed, not the kernel: the disk holding a build cache is full, the cache is on a read-only
    file system or may not be written, the compiler was killed (out of memory). The message names the folder and
    what to do; a kernel's own errors are CompileError and the emulator's EmulatorError."""


class UnsupportedGPU(BackendError, ValueError):
    """The GPU in use (or the profile it runs as, GEMMLAB_DEVICE) cannot run this kernel: it needs a newer
    compute capability, or more of a resource (shared memory, threads) than the device has. The message is one
    line naming the kernel, the feature or resource, what is needed and the GPU ("tc/05_mma_sync needs compute
    capability 8.0 (mma.sync m16n8k16); this is a Tesla T4, 7.5"). A BackendError (what cannot run here) and
    a ValueError (what launch checks raise) both catch it."""


def _probe_cuda():
    """Return (cupy module, None) when a GPU is usable, else (None, reason in plain words)."""
    try:
        import cupy
    except ImportError:
        return None, ("CuPy is not installed, so no GPU can be used. On a machine with an NVIDIA GPU, "
                      "install the GPU extra: pip install 'gemmlab[gpu]' (CUDA 12 drivers), or "
                      "cupy-cuda13x for CUDA 13 drivers.")
    except Exception as exc:  # a broken CuPy install raises all sorts of things at import
        return None, f"CuPy is installed but failed to import ({type(exc).__name__}: {exc})."
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, ("CuPy is installed, but no usable NVIDIA GPU or driver was found "
                      f"({type(exc).__name__}: {exc}). Check `nvidia-smi`; on Colab choose "
                      "Runtime > Change runtime type > GPU.")
    if count < 1:
        return None, "CuPy is installed, but the CUDA driver reports no GPU."
    return cupy, None


def _choose():
    wanted = os.environ.get("GEMMLAB_BACKEND", "").strip().lower()
    if wanted not in ("",) + BACKENDS:
        raise BackendError(f"GEMMLAB_BACKEND={wanted!r} is not a backend; use one of {', '.join(BACKENDS)}, "
                           "or leave it unset to choose automatically.")
    if wanted == "emulator":
        return "emulator", numpy, "GEMMLAB_BACKEND=emulator was set."
    cupy, reason = _probe_cuda()
    if cupy is not None:
        return "cuda", cupy, "a CUDA GPU was found."
    if wanted == "cuda":
        raise BackendError("GEMMLAB_BACKEND=cuda asks for a GPU, but: " + reason)
    if "installed" in reason and "not installed" not in reason:
        # CuPy is there but cannot reach a GPU: worth saying out loud, the reader probably expected one.
        warnings.warn(reason + " Falling back to the CPU emulator.", RuntimeWarning, stacklevel=3)
    return "emulator", numpy, reason


backend, xp, backend_reason = _choose()
on_gpu = backend == "cuda"


def size(*, gpu, emulator):
    """Pick a problem size for the current backend: ``gl.size(gpu=4096, emulator=128)``."""
    return gpu if on_gpu else emulator


def to_host(array):
    """A NumPy copy of a device array (or the array itself on the emulator)."""
    return array.get() if hasattr(array, "get") and not isinstance(array, numpy.ndarray) else numpy.asarray(array)


def synchronize():
    """Wait for all queued GPU work; nothing to wait for on the emulator."""
    if on_gpu:
        xp.cuda.get_current_stream().synchronize()
