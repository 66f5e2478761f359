"""The CUDA backend of :mod:`gemmlab.loader`: NVRTC through CuPy's RawModule."""
from __future__ import annotations

import functools

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


def compile(module, expr: str, signature):
    options = OPTIONS + (f"-I{KERNELS}",)
    if module.path is not None:
        options += (f"-I{module.path.parent}",)
    options += module.options
    # CuPy caches compiled code on disk by source and options only: the header hash goes into the source.
    code = module.source + f"\n// gemmlab cache key (source and headers): {module.key}\n"
    try:
        raw = cupy.RawModule(code=code, options=options, name_expressions=[expr])
        function = raw.get_function(expr)
    except cupy.cuda.compiler.CompileException as exc:
        raise module.compile_error(str(exc), expr) from None
    return CudaFunction(function, _limits(cupy.cuda.Device().id))
