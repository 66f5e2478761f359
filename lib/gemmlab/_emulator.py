"""The CPU-emulator backend of :mod:`gemmlab.loader` (see the design brief, 'The CPU emulator').

Not built yet: kernels can only be launched on a CUDA GPU for now. Everything that does not launch a
kernel (loading, parsing, launch checks, the device model, recorded results) works without one.
"""
from __future__ import annotations

from .hardware import BackendError, backend_reason


def compile(module, expr, signature):
    raise BackendError(
        f"cannot compile {expr} from {module.display}: no GPU is in use ({backend_reason}) and the CPU "
        "emulator that runs kernels without one is not part of this version of gemmlab yet. "
        "Run this on a machine with an NVIDIA GPU (Colab: Runtime > Change runtime type > GPU).")
