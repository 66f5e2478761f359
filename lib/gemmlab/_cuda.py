"""The CUDA backend of :mod:`gemmlab.loader`: NVRTC through CuPy's RawModule."""
from __future__ import annotations

import functools
import os

import cupy
import numpy

from .limits import cuda_limits
from .paths import KERNELS

OPTIONS = ("-std=c++17",)
_NULL = numpy.uint64(0)


@functools.lru_cache(maxsize=None)
def _limits(device_id: int):
    return cuda_limits(cupy, device_id)


class CudaFunction:
    """A compiled kernel on the current GPU, with the resources the compiler gave it."""

    def __init__(self, function, limits):
        self.function = function          # a cupy.RawKernel (what RawModule.get_function returns)
        self.limits = limits
        self.num_regs = function.num_regs
        self.static_shared_bytes = function.shared_size_bytes
        self.local_bytes = function.local_size_bytes
        self.max_threads_per_block = function.max_threads_per_block
        self._dynamic_allowed = limits.shared_per_block - self.static_shared_bytes

    def launch(self, grid, block, args, shared_mem, stream):
        if shared_mem > self._dynamic_allowed:
            # Over 48 KiB a kernel must opt in; check_launch already held it to the device's opt-in limit.
            self.function.max_dynamic_shared_size_bytes = shared_mem
            self._dynamic_allowed = shared_mem
        args = tuple(_NULL if a is None else a for a in args)     # a NULL pointer: 8 zero bytes
        self.function(grid, block, args, shared_mem=shared_mem, stream=stream)


@functools.lru_cache(maxsize=None)
def _crt_include() -> tuple:
    """CUDA 13's header wheels ship mma.h without the crt/ headers it includes (they are in a separate
    wheel): a toolkit's include folder that has them, as an -I option, or nothing."""
    roots = [os.environ.get("CUDA_PATH"), cupy.cuda.get_cuda_path(), "/usr/local/cuda"]
    for root in filter(None, roots):
        for sub in ("include", os.path.join("targets", "x86_64-linux", "include")):
            folder = os.path.join(root, sub)
            if os.path.isfile(os.path.join(folder, "crt", "mma.h")):
                return (f"-I{folder}",)
    return ()


def compile(module, expr: str, signature):
    options = OPTIONS + (f"-I{KERNELS}",)
    if module.path is not None:
        options += (f"-I{module.path.parent}",)
    if any("<mma.h>" in text for text in (module.source, *module.headers.values())):
        options += _crt_include()
    options += module.options
    # CuPy caches compiled code on disk by source and options only: the header hash goes into the source.
    code = module.source + f"\n// gemmlab cache key (source and headers): {module.key}\n"
    try:
        raw = cupy.RawModule(code=code, options=options, name_expressions=[expr])
        function = raw.get_function(expr)
    except cupy.cuda.compiler.CompileException as exc:
        text = str(exc)
        if "crt/mma.h" in text:
            text += ("\nThe CUDA headers CuPy uses lack crt/mma.h (CUDA 13 moved it to its own wheel): install "
                     "nvidia-cuda-crt for your CUDA, or set CUDA_PATH to a CUDA toolkit.")
        raise module.compile_error(text, expr) from None
    return CudaFunction(function, _limits(cupy.cuda.Device().id))
