"""The CPU-emulator backend of :mod:`gemmlab.loader`: the same .cu files, compiled for the CPU.

How it works (the book's chapter 00 tells the reader the short version):

- **Compiling.** The kernel source is compiled by the host C++ compiler (``$CXX``, else g++, clang++
  or c++) after ``emulator/gemmlab_emu.h``, a CUDA-compatibility header, with a ``#line`` directive so
  that errors name the real file and line. One small shared library per kernel instance, cached on disk
  under ``~/.cache/gemmlab/emulator`` (``GEMMLAB_CACHE_DIR``), keyed by the source, its headers, the
  runtime header, the compiler and its options.
- **Running.** Blocks run one after another; the threads of a block are fibers that switch only at
  ``__syncthreads()``, at warp operations and at exit, always in the same order. So results are
  deterministic, and a missing barrier gives the same wrong answer every time.
- **Safety.** Each launch runs in a forked child process, on copies of the array arguments placed in
  shared memory with an inaccessible page on each side. A crash or an access just past an array
  becomes a Python exception that names the kernel, block and thread; barrier divergence is an error,
  never a hang; a kernel that runs too long (``GEMMLAB_EMULATOR_TIMEOUT`` seconds, default 600) is
  stopped. The Python process and its arrays are untouched by a failed launch.

Timing on the emulator means nothing; :func:`gemmlab.bench` refuses to do it.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy

from .hardware import BackendError
from .limits import EMULATOR
from .paths import KERNELS

HERE = Path(__file__).resolve().parent / "emulator"
RUNTIME = HERE / "gemmlab_emu.h"
FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-fno-strict-aliasing", "-fvisibility=hidden",
         "-fno-exceptions", "-Wno-unknown-pragmas", "-Wno-attributes")


class EmulatorError(RuntimeError):
    """A kernel failed on the emulator: barrier divergence, a crash, an out-of-bounds access, a time-out."""


# Features the emulator does not model, found before the compiler sees them: (pattern, name).
UNSUPPORTED = [
    (r"\basm\s*(?:volatile\s*)?\(", "inline PTX assembly (asm)"),
    (r"<<<", "launching kernels from a kernel (dynamic parallelism)"),
    (r"\b__syncthreads_(?:count|and|or)\b", "__syncthreads_count/_and/_or"),
    (r"\b(?:clock|clock64|__nanosleep|__activemask|__match_(?:any|all)_sync|__reduce_\w+_sync)\s*\(",
     "this intrinsic"),
    (r"\btex[123]D\w*\b|\bsurf[123]D\w*\b|\btex1Dfetch\b", "texture and surface fetches"),
    (r"\bcudaMemcpyToSymbol\b|\b__cudaMemcpy\w*\b", "host-side CUDA API calls"),
]


def _compiler() -> str:
    for candidate in (os.environ.get("CXX"), "g++", "clang++", "c++"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    raise BackendError("the CPU emulator compiles kernels with a C++17 compiler and found none: install g++ "
                       "(Debian/Ubuntu: apt install g++; Fedora: dnf install gcc-c++; macOS: xcode-select "
                       "--install), or set CXX to one.")


def _check_platform():
    if os.name != "posix" or not hasattr(os, "fork"):
        raise BackendError("the CPU emulator needs Linux or macOS (it runs kernels in a forked process); on "
                           "Windows use WSL.")
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        raise BackendError(f"the CPU emulator supports x86-64 and AArch64 processors, not {platform.machine()}")


def _cache_dir() -> Path:
    base = os.environ.get("GEMMLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gemmlab")
    path = Path(base) / "emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<type>[A-Za-z_][\w:<>, ]*?)\s+"
    r"(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;")


def translate(source: str) -> str:
    """Rewrite what the compatibility header cannot express; every line keeps its number."""
    return _EXTERN_SHARED.sub(
        lambda m: f"{m.group('type')}* const {m.group('name')} = "
                  f"reinterpret_cast<{m.group('type')}*>(::gl_emu::dynamic_shared);", source)


def _find_unsupported(module):
    from .loader import strip_comments
    texts = [(module.display, module.source)] + [(str(p), t) for p, t in module.headers.items()]
    for name, text in texts:
        clean = strip_comments(text)
        for pattern, what in UNSUPPORTED:
            m = re.search(pattern, clean)
            if m:
                line = clean.count("\n", 0, m.start()) + 1
                found = m.group(0).rstrip("(").strip()
                raise module.compile_error(
                    f"{name}({line}): error: the CPU emulator does not support {what}: {found}\n", "the kernel")


def _max_threads(signature, expr: str):
    """The first __launch_bounds__ argument, evaluated with the instance's template arguments."""
    if not signature.launch_bounds:
        return None
    from .loader import parse_name_expression
    _, args = parse_name_expression(expr)
    text = signature.launch_bounds[0]
    for t, value in zip(signature.template, args):
        text = re.sub(rf"\b{re.escape(t.name)}\b", f"({value})", text)
    if not re.fullmatch(r"[\d\s()+\-*/%]+", text):
        raise BackendError(f"cannot evaluate __launch_bounds__({signature.launch_bounds[0]}) of {expr}")
    return int(eval(text.replace("/", "//"), {"__builtins__": {}}))   # integer arithmetic only, checked above


class EmulatedFunction:
    """One kernel instance compiled for the CPU."""

    num_regs = None
    static_shared_bytes = 0
    last_switches = 0          # fiber switches of the last launch
    limits = EMULATOR

    def __init__(self, lib, symbol: str, kernel_name: str, max_threads):
        self.lib = lib
        self.name = kernel_name
        self.max_threads_per_block = max_threads or EMULATOR.max_threads_per_block
        self.body = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
        self.fork_launch = lib.gl_emu_fork_launch
        self.fork_launch.restype = ctypes.c_long
        self.fork_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                                     ctypes.POINTER(ctypes.c_uint), ctypes.c_ulonglong,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        lib.gl_emu_shared_alloc.restype = ctypes.c_void_p
        lib.gl_emu_shared_alloc.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_ulonglong)]
        lib.gl_emu_shared_free.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_ulonglong]
        lib.gl_emu_status_size.restype = ctypes.c_ulonglong

    # -- arguments in shared memory ------------------------------------------------------------
    def _regions(self, args):
        """Array arguments grouped into non-overlapping byte ranges of host memory."""
        spans = []
        for i, a in enumerate(args):
            if isinstance(a, numpy.ndarray):
                start = a.__array_interface__["data"][0]
                spans.append([start, start + max(a.nbytes, 1), [i]])
        spans.sort()
        merged = []
        for s in spans:
            if merged and s[0] < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], s[1])
                merged[-1][2] += s[2]
            else:
                merged.append(s)
        return merged

    def launch(self, grid, block, args, shared_mem, stream):
        lib = self.lib
        regions, keep, pointers = [], [], [None] * len(args)
        status_size = lib.gl_emu_status_size()
        mapped = ctypes.c_ulonglong()
        status_addr = lib.gl_emu_shared_alloc(status_size, ctypes.byref(mapped))
        status_mapped = mapped.value
        try:
            for start, end, members in self._regions(args):
                size = end - start
                buf = lib.gl_emu_shared_alloc(size, ctypes.byref(mapped))
                if not buf:
                    raise MemoryError(f"the emulator could not map {size} bytes of shared memory")
                regions.append((start, size, buf, mapped.value, members))
                ctypes.memmove(buf, start, size)
                for i in members:
                    p = ctypes.c_void_p(buf + args[i].__array_interface__["data"][0] - start)
                    keep.append(p)
                    pointers[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
            for i, a in enumerate(args):
                if pointers[i] is not None:
                    continue
                if not isinstance(a, numpy.generic):
                    raise EmulatorError(f"kernel {self.name}: argument {i} of type {type(a).__name__} cannot be "
                                        "passed on the emulator, which takes arrays and numbers")
                c = (ctypes.c_char * a.nbytes).from_buffer_copy(a.tobytes())
                keep.append(c)
                pointers[i] = ctypes.cast(ctypes.pointer(c), ctypes.c_void_p)
            argv = (ctypes.c_void_p * max(len(args), 1))(*[p.value for p in pointers])
            ctypes.memset(status_addr, 0, status_size)
            ctypes.c_int.from_address(status_addr).value = 3
            pid = self.fork_launch(self.body, self.name.encode(), (ctypes.c_uint * 3)(*grid),
                                   (ctypes.c_uint * 3)(*block), shared_mem, argv, status_addr)
            if pid < 0:
                raise EmulatorError(f"kernel {self.name}: could not start the emulated launch (fork failed)")
            self._wait(pid, status_addr, regions, args)
            for start, size, buf, _, _ in regions:
                ctypes.memmove(start, buf, size)
        finally:
            for _, size, buf, m, _ in regions:
                lib.gl_emu_shared_free(buf, size, m)
            lib.gl_emu_shared_free(status_addr, status_size, status_mapped)

    def _wait(self, pid, status_addr, regions, args):
        timeout = float(os.environ.get("GEMMLAB_EMULATOR_TIMEOUT", "600"))
        deadline = time.monotonic() + timeout
        delay = 0.0005
        try:
            while True:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    where = self._where(status_addr)
                    raise EmulatorError(f"kernel {self.name} ran longer than {timeout:g} s on the emulator and "
                                        f"was stopped ({where}); an endless loop? (GEMMLAB_EMULATOR_TIMEOUT)")
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        except KeyboardInterrupt:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        if os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0:
            self.last_switches = _Status.from_address(status_addr).switches
            return
        status = _Status.from_address(status_addr)
        where = self._where(status_addr)
        if status.code == 1:
            raise EmulatorError(status.message.decode(errors="replace"))
        sig = status.signal or (os.WTERMSIG(code) if os.WIFSIGNALED(code) else
                                max(os.WEXITSTATUS(code) - 128, 0))
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        detail = ""
        if status.fault_address:
            detail = self._explain_address(status.fault_address, regions, args)
        kind = {"SIGSEGV": "an invalid memory access", "SIGBUS": "an invalid memory access",
                "SIGFPE": "an arithmetic fault (integer division by zero?)", "SIGABRT": "an abort"}.get(name, name)
        raise EmulatorError(f"kernel {self.name} crashed on the emulator with {kind} ({name}) in {where}{detail}")

    def _where(self, status_addr):
        s = _Status.from_address(status_addr)
        return (f"block ({s.block[0]},{s.block[1]},{s.block[2]}), "
                f"thread ({s.thread[0]},{s.thread[1]},{s.thread[2]})")

    @staticmethod
    def _explain_address(address, regions, args):
        for start, size, buf, _, members in regions:
            for i in members:
                a = args[i]
                lo = buf + a.__array_interface__["data"][0] - start
                hi = lo + a.nbytes
                if hi <= address < hi + 8192:
                    return (f": address {address:#x} is {address - hi} bytes past the end of argument {i} "
                            f"({a.dtype.name}, {a.size} elements)")
                if lo - 8192 <= address < lo:
                    return (f": address {address:#x} is {lo - address} bytes before the start of argument {i} "
                            f"({a.dtype.name}, {a.size} elements)")
        return f": address {address:#x}"


class _Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("signal", ctypes.c_int), ("block", ctypes.c_uint * 3),
                ("thread", ctypes.c_uint * 3), ("fault_address", ctypes.c_ulonglong), ("switches", ctypes.c_ulonglong),
                ("message", ctypes.c_char * 4096)]


_loaded = {}


def compile(module, expr: str, signature):
    _check_platform()
    _find_unsupported(module)
    cxx = _compiler()
    origin = str(module.path) if module.path is not None else "<code>"
    symbol = "gl_emu_kernel_" + hashlib.sha256(expr.encode()).hexdigest()[:12]
    unit = "\n".join([
        '#include "gemmlab_emu.h"',
        f'#line 1 "{origin}"',
        translate(module.source),
        "",
        "#line 100000 \"<gemmlab emulator launcher>\"",
        f"GL_EXPORT void {symbol}(void** args) {{ ::gl_emu::invoke(&{expr}, args); }}",
        "GL_EXPORT long gl_emu_fork_launch(void (*body)(void**), const char* kernel, const unsigned* grid,",
        "                                  const unsigned* block, unsigned long long shared, void** args,",
        "                                  ::gl_emu::Status* status)",
        "{ return ::gl_emu::fork_launch(body, kernel, grid, block, shared, args, status); }",
        "",
    ])
    includes = [f"-I{HERE}", f"-I{HERE / 'include'}", f"-I{KERNELS}"]
    if module.path is not None:
        includes.append(f"-I{module.path.parent}")
    command = [cxx, *FLAGS, *includes, *module.options]
    digest = hashlib.sha256()
    for part in (RUNTIME.read_text(), unit, " ".join(command), _compiler_version(cxx),
                 *(f"{p}\n{t}" for p, t in sorted(module.headers.items()))):
        digest.update(part.encode())
    target = _cache_dir() / f"{digest.hexdigest()[:24]}.so"
    if not target.exists():
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "unit.cpp"
            src.write_text(unit)
            out = Path(tmp) / "unit.so"
            proc = subprocess.run([*command, str(src), "-o", str(out)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise module.compile_error(_gcc_to_nvrtc(proc.stderr, origin), expr)
            os.replace(out, target)          # atomic: a concurrent compile never sees half a file
    lib = _loaded.get(target)
    if lib is None:
        lib = _loaded[target] = ctypes.CDLL(str(target))
    return EmulatedFunction(lib, symbol, expr, _max_threads(signature, expr))


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return cxx


def _gcc_to_nvrtc(log: str, origin: str) -> str:
    """gcc/clang diagnostics (``file:line:col: error: msg``) in the form the loader formats for both backends."""
    out = []
    for m in re.finditer(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:\d+:)?\s*(?P<kind>fatal error|error):\s*(?P<msg>.*)$",
                         log, re.M):
        kind = "error"
        out.append(f"{m.group('file')}({m.group('line')}): {kind}: {m.group('msg')}")
    return "\n".join(out) if out else log


BARRIERS_ONLY = r'''
__global__ void barriers_only(float* out, int rounds)
{
    for (int r = 0; r < rounds; ++r) __syncthreads();
    if (threadIdx.x == 0) out[0] = (float)rounds;
}
'''


def benchmark(repeats: int = 3) -> dict:
    """The emulator's speed on this machine: the book's budget is a 16x16 tiled SGEMM at N=256 in 2 s."""
    import platform
    import statistics

    from . import ops, registry
    if not hasattr(os, "fork"):
        raise BackendError("the emulator benchmark needs the emulator (Linux or macOS)")

    def timed(fn):
        fn()                                              # compile, reserve stacks: not timed
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    out = {"cpu": _cpu_name(), "cores": os.cpu_count(), "machine": platform.machine(),
           "compiler": _compiler_version(_compiler()).splitlines()[0], "repeats": repeats, "kernels": {}}
    op = ops.Gemm.square(256)
    inputs, result = op.inputs(numpy.random.default_rng(0)), op.output()
    for key, params in (("sgemm/01_naive", {"BLOCK": 16}), ("sgemm/02_shared_tiling", {"TILE": 16})):
        v = registry.get(key)
        run = v.runner(op, **params)
        seconds = timed(lambda: run(inputs, result))
        impl = v.kernel(**params).impl
        out["kernels"][key] = {"params": params, "N": 256, "seconds": seconds, "switches": impl.last_switches,
                               "correct": v.check(op, **params).ok}
    from .loader import load
    k = load(code=BARRIERS_ONLY).get("barriers_only")
    buf = numpy.zeros(1, dtype=numpy.float32)
    empty = timed(lambda: k(1, 256, (buf, 0)))
    rounds = 4000
    full = timed(lambda: k(1, 256, (buf, rounds)))
    switches = k.impl.last_switches
    out["launch_overhead_ms"] = empty * 1e3
    out["switch_cost_ns"] = (full - empty) / switches * 1e9
    out["switch_probe"] = {"threads": 256, "barriers": rounds, "switches": switches, "seconds": full}
    out["budget"] = {"what": "sgemm/02_shared_tiling TILE=16 at N=256", "seconds": 2.0,
                     "met": out["kernels"]["sgemm/02_shared_tiling"]["seconds"] <= 2.0}
    out["command"] = "python -m gemmlab emulator-bench --record"
    return out


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()
