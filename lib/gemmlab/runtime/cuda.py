"""The CUDA backend of :mod:`gemmlab.runtime.loader`: NVRTC through CuPy's RawModule.

A GPU running as an older profile (GEMMLAB_DEVICE=T4 on an H200) compiles each kernel as PTX for that
profile's virtual architecture (compute_75) with NVRTC, and the driver compiles the PTX for the GPU in use
when the module is loaded: the kernel takes the older GPU's code paths (``__CUDA_ARCH__`` 750) on real
hardware, and its launches are held to that profile's limits."""
from __future__ import annotations

import functools
import os

import cupy
import numpy

from ..paths import KERNELS
from .source import nvrtc_std_include

OPTIONS = ("-std=c++17",)
_NULL = numpy.uint64(0)


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

    def launcher(self, grid: tuple, block: tuple, shared_mem: int, formats: str):
        """``send(args)``: this kernel launched on (grid, block, shared_mem) on the stream current now, already
        checked by the caller, with ``args`` given as Python numbers in the order of the kernel's parameters and
        laid out by ``formats`` (one struct character each: 'Q' for a pointer, given as its address, 'i', 'f',
        ...): packed into a buffer of this launch and handed to cuLaunchKernel, with nothing else in front of
        it. For a caller that checks a launch once and makes it many times (gemmlab.blas's plans). Each thread
        packs into a buffer of its own (the driver reads it during the launch, with the GIL released)."""
        import ctypes
        import struct
        import threading
        from cupy_backends.cuda.api import driver
        if shared_mem > self._dynamic_allowed:
            self.function.max_dynamic_shared_size_bytes = shared_mem
            self._dynamic_allowed = shared_mem
        layout, offsets, at = "=", [], 0
        for f in formats:
            code, size, align = ("128s", 128, 64) if f == "m" else (f, struct.calcsize("=" + f), None)
            pad = -at % (align or size)
            layout += "x" * pad + code
            at += pad
            offsets.append(at)
            at += size
        packer = struct.Struct(layout)
        function = self.function.kernel.ptr          # the CUfunction of the current device
        stream = cupy.cuda.get_current_stream().ptr
        (gx, gy, gz), (bx, by, bz) = grid, block
        buffers = {}

        def buffer():
            buf = ctypes.create_string_buffer(max(packer.size, 8))
            base = ctypes.addressof(buf)
            pointers = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
            have = buffers[threading.get_ident()] = (buf, pointers, ctypes.addressof(pointers))
            return have

        pack_into, launch, ident = packer.pack_into, driver.launchKernel, threading.get_ident

        def send(args):
            buf, _, pointers = buffers.get(ident()) or buffer()
            pack_into(buf, 0, *args)
            launch(function, gx, gy, gz, bx, by, bz, shared_mem, stream, pointers, 0)
        return send


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
    texts = (module.source, *module.headers.values())
    if any("<mma.h>" in text for text in texts):
        options += _crt_include()
    std, std_key = nvrtc_std_include(texts)
    options += module.options + std
    # CuPy caches compiled code on disk by source and options only: the header hash goes into the source.
    code = module.source + f"\n// gemmlab cache key (source and headers): {module.key}{std_key}\n"
    from .profiles import compile_arch, current
    arch = compile_arch()
    try:
        if arch is not None and not any(o.startswith(("-arch", "--gpu-architecture")) for o in module.options):
            function = _ptx_function(code, options, expr, arch)
        else:
            raw = cupy.RawModule(code=code, options=options, name_expressions=[expr])
            function = raw.get_function(expr)
    except cupy.cuda.compiler.CompileException as exc:
        text = str(exc)
        if "crt/mma.h" in text:
            text += ("\nThe CUDA headers CuPy uses lack crt/mma.h (CUDA 13 moved it to its own wheel): install "
                     "nvidia-cuda-crt for your CUDA, or set CUDA_PATH to a CUDA toolkit.")
        raise module.compile_error(text, expr) from None
    return CudaFunction(function, current().limits)


@functools.lru_cache(maxsize=256)
def _ptx_function(code: str, options: tuple, expr: str, arch: str):
    """``expr`` compiled by NVRTC as PTX for ``arch`` ('compute_75'), loaded (the driver compiles it for the GPU
    in use) and returned as a cupy.RawKernel. -ftz=true as CuPy compiles its own."""
    import tempfile

    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(code, "gemmlab_kernel.cu", [], [])
    try:
        nvrtc.addNameExpression(prog, expr)
        # the include folders and flags CuPy's own compile uses (its headers, the CUDA toolkit's), and its
        # defaults: flush-to-zero, device code by default
        try:
            from cupy._core.core import assemble_cupy_compiler_options
            options = tuple(assemble_cupy_compiler_options(tuple(options)))
        except ImportError:
            options = tuple(options) + tuple(f"-I{os.path.join(root, 'include')}" for root in
                                             filter(None, (cupy.cuda.get_cuda_path(),)))
        try:
            nvrtc.compileProgram(prog, [*options, "-ftz=true", "--device-as-default-execution-space",
                                        f"--gpu-architecture={arch}"])
        except nvrtc.NVRTCError:
            raise cupy.cuda.compiler.CompileException(nvrtc.getProgramLog(prog), code, "gemmlab_kernel.cu",
                                                      options) from None
        ptx, lowered = nvrtc.getPTX(prog), nvrtc.getLoweredName(prog, expr)
    finally:
        nvrtc.destroyProgram(prog)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ptx")
        with open(path, "wb") as f:
            f.write(ptx if isinstance(ptx, bytes) else ptx.encode())
        return cupy.RawModule(path=path).get_function(lowered)
