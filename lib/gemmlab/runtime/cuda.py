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

    def __init__(self, function, limits, unit=None):
        self.function = function          # a cupy.RawKernel (what RawModule.get_function returns)
        self.limits = limits
        self.unit = unit                  # the _Unit it belongs to, for a source with variables (None: its own module)
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
        if self.unit is not None:
            return None                   # the unit may be compiled again, and its functions with it
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


def _options(module) -> tuple:
    """NVRTC's options for a module's source; the code with its cache key."""
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
    return options, code


def _with_crt_hint(exc) -> str:
    text = str(exc)
    if "crt/mma.h" in text:
        text += ("\nThe CUDA headers CuPy uses lack crt/mma.h (CUDA 13 moved it to its own wheel): install "
                 "nvidia-cuda-crt for your CUDA, or set CUDA_PATH to a CUDA toolkit.")
    return text


def compile(module, expr: str, signature):
    try:
        return _compile(module, expr)
    except OSError as exc:       # CuPy's kernel cache or a temporary file: the machine, not the kernel
        from .backend import MachineError
        cache = os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")
        raise MachineError(f"could not build {expr}: writing CuPy's kernel cache {cache} or a temporary file failed "
                           f"({exc.strerror or exc}). This is the machine, not your kernel: free some space, or set "
                           f"CUPY_CACHE_DIR (or TMPDIR) to a folder on another disk") from None


def _compile(module, expr: str):
    if module.variable_names:
        return _unit(module).function(expr)
    options, code = _options(module)
    from .profiles import compile_arch, current
    arch = compile_arch()
    try:
        if arch is not None and not any(o.startswith(("-arch", "--gpu-architecture")) for o in module.options):
            function = _ptx_function(code, options, expr, arch)
        else:
            raw = cupy.RawModule(code=code, options=options, name_expressions=[expr])
            function = raw.get_function(expr)
    except cupy.cuda.compiler.CompileException as exc:
        raise module.compile_error(_with_crt_hint(exc), expr) from None
    return CudaFunction(function, current().limits)


def _nvrtc(code: str, options: tuple, exprs: tuple, arch: str | None) -> tuple:
    """(binary, {expression: lowered name}, suffix): ``code`` compiled by NVRTC with CuPy's include folders and
    defaults (flush-to-zero, device code by default), as PTX for ``arch`` ('compute_75'), or for the
    architecture the options name (a cubin where that is a real one, sm_90a)."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(code, "gemmlab_kernel.cu", [], [])
    try:
        for expr in exprs:
            nvrtc.addNameExpression(prog, expr)
        try:
            from cupy._core.core import assemble_cupy_compiler_options
            options = tuple(assemble_cupy_compiler_options(tuple(options)))
        except ImportError:
            options = tuple(options) + tuple(f"-I{os.path.join(root, 'include')}" for root in
                                             filter(None, (cupy.cuda.get_cuda_path(),)))
        named = [o for o in options if o.startswith(("-arch", "--gpu-architecture"))]
        real = any("sm_" in o for o in named)
        try:
            nvrtc.compileProgram(prog, [*options, "-ftz=true", "--device-as-default-execution-space",
                                        *((f"--gpu-architecture={arch}",) if arch and not named else ())])
        except nvrtc.NVRTCError:
            raise cupy.cuda.compiler.CompileException(nvrtc.getProgramLog(prog), code, "gemmlab_kernel.cu",
                                                      options) from None
        binary = nvrtc.getCUBIN(prog) if real else nvrtc.getPTX(prog)
        lowered = {expr: nvrtc.getLoweredName(prog, expr) for expr in exprs}
    finally:
        nvrtc.destroyProgram(prog)
    binary = binary if isinstance(binary, bytes) else binary.encode()
    return binary, lowered, ".cubin" if real else ".ptx"


def _load(binary: bytes, suffix: str, lowered: dict, kernels) -> tuple:
    """A module of its own for ``binary`` (the driver compiles PTX for the GPU in use): (cupy.RawModule, its
    RawKernels by expression, loaded while the file is there)."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel" + suffix)
        with open(path, "wb") as f:
            f.write(binary)
        raw = cupy.RawModule(path=path)
        raw.module                          # loaded now, while the file exists
        return raw, {e: raw.get_function(lowered[e]) for e in kernels}


@functools.lru_cache(maxsize=256)
def _ptx_function(code: str, options: tuple, expr: str, arch: str):
    """``expr`` compiled by NVRTC as PTX for ``arch`` ('compute_75'), loaded (the driver compiles it for the GPU
    in use) and returned as a cupy.RawKernel."""
    binary, lowered, suffix = _nvrtc(code, options, (expr,), arch)
    return _load(binary, suffix, lowered, (expr,))[1][expr]


# -- a source with variables ----------------------------------------------------------------------------------
# On a GPU a source's kernels and its __device__/__constant__ variables are one module: every kernel reads and
# writes the same variables, and the host reaches them by name (cudaMemcpyToSymbol, Module.get_global). A
# source without variables compiles each kernel as a module of its own (above); one with them compiles all of
# its kernels that are not templates, and the template instances asked for so far, into one module of this
# gemmlab Module's own (a second gl.load of the same source has its own variables, as the emulator does). A new
# template instance compiles the module again; the variables' values are carried over, and the kernels already
# handed out are pointed at the new module.

def _unit(module):
    unit = getattr(module, "_cuda_unit", None)
    if unit is None:
        unit = module._cuda_unit = _Unit(module)
    return unit


class _Unit:
    def __init__(self, module):
        self.module = module
        self.raw = None                  # the cupy.RawModule
        self.lowered = {}
        self.functions = {}              # expression -> CudaFunction

    def function(self, expr: str) -> CudaFunction:
        if self.raw is None or expr not in self.functions:
            self._build(expr)
        return self.functions[expr]

    def _build(self, extra=None):
        from .profiles import compile_arch, current
        module = self.module
        options, code = _options(module)
        kernels = module.unit_expressions(extra)
        names = tuple("&" + n for n in module.variable_names)
        arch = compile_arch() or f"compute_{cupy.cuda.Device().compute_capability}"
        try:
            try:
                binary, lowered, suffix = _nvrtc(code, options, tuple(kernels) + names, arch)
            except cupy.cuda.compiler.CompileException:
                if not names:
                    raise
                # a variable the parser found that the compiler does not see (under an #if the build leaves
                # out): the module without its variables' names, which get_global then says it cannot reach
                names = ()
                binary, lowered, suffix = _nvrtc(code, options, tuple(kernels), arch)
        except cupy.cuda.compiler.CompileException as exc:
            raise module.compile_error(_with_crt_hint(exc), extra or "the module's variables") from None
        raw, functions = _load(binary, suffix, lowered, kernels)
        if self.raw is not None:         # the variables as the kernels left them, into the new module
            cupy.cuda.Device().synchronize()
            for n in names:
                if n not in self.lowered:
                    continue
                (old, size), (new, _) = self._global(n), _module_global(raw, lowered[n])
                cupy.cuda.runtime.memcpy(new, old, size, cupy.cuda.runtime.memcpyDeviceToDevice)
        self.raw, self.lowered = raw, lowered
        for expr, kernel in functions.items():
            if expr in self.functions:
                self.functions[expr].__init__(kernel, current().limits, self)
            else:
                self.functions[expr] = CudaFunction(kernel, current().limits, self)

    def _global(self, name: str) -> tuple:
        return _module_global(self.raw, self.lowered[name])

    def variable(self, name: str):
        if self.raw is None:
            self._build()
        if "&" + name not in self.lowered:
            var = self.module.variables[name]
            raise ValueError(f"{self.module.display}({var.line}): gemmlab cannot reach variable {name}: a variable of "
                             f"the source is under an #if that the build leaves out")
        ptr, size = self._global("&" + name)
        mem = cupy.cuda.UnownedMemory(ptr, size, self.raw, cupy.cuda.Device().id)
        return cupy.ndarray((size,), dtype=numpy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))


    def values(self) -> dict:
        """name -> the bytes (NumPy, on the host) of each variable this module holds; {} before it is built."""
        return {n[1:]: self._global_bytes(n) for n in self.lowered if n.startswith("&")} if self.raw else {}

    def _global_bytes(self, lowered_key: str):
        ptr, size = self._global(lowered_key)
        out = numpy.empty(size, dtype=numpy.uint8)
        cupy.cuda.runtime.memcpy(out.ctypes.data, ptr, size, cupy.cuda.runtime.memcpyDeviceToHost)
        return out


def _module_global(raw, lowered: str) -> tuple:
    """(device address, bytes) of a loaded module's global by its lowered name (cuModuleGetGlobal)."""
    import ctypes
    driver = _libcuda()
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = driver.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), ctypes.c_void_p(raw.module.ptr),
                                         lowered.encode())
    if status != 0:
        raise RuntimeError(f"cuModuleGetGlobal({lowered}) failed with CUDA error {status}")
    return int(ptr.value), int(size.value)


@functools.lru_cache(maxsize=None)
def _libcuda():
    import ctypes
    lib = ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
    lib.cuModuleGetGlobal_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                         ctypes.c_void_p, ctypes.c_char_p]
    return lib


def variable_bytes(module, name: str):
    """One variable of the module, as a uint8 CuPy array over its device memory."""
    return _unit(module).variable(name)
