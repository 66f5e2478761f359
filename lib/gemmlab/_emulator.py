"""The CPU-emulator backend of :mod:`gemmlab.loader`: the same .cu files, compiled for the CPU.

How it works (the book's chapter 00 tells the reader the short version):

- **Compiling.** The kernel source is compiled by the host C++ compiler (``$CXX``, else g++, clang++
  or c++) after ``emulator/gemmlab_emu.h``, a CUDA-compatibility header, with a ``#line`` directive so
  that errors name the real file and line. One small shared library per kernel instance, cached on disk
  under ``~/.cache/gemmlab/emulator`` (``GEMMLAB_CACHE_DIR``), keyed by the source, its headers, the
  runtime header, the compiler and its options. Each entry records a checksum of its library and of
  every file the compiler read (``#include "..."`` and ``<...>`` alike); a damaged entry or a changed
  header is rebuilt, never loaded. An unwritable cache directory falls back to a private temporary one.
- **Running.** Blocks run one after another; the threads of a block are fibers that switch only at
  ``__syncthreads()``, at warp operations and at exit, always in the same order. So results are
  deterministic, and a missing barrier gives the same wrong answer every time.
- **Safety.** Each launch runs in a forked child process, on copies of the array arguments placed in
  shared memory with an inaccessible page on each side. With g++ on x86-64 Linux every load and store
  of the kernel is checked against the bounds of its arguments and of its shared memory (the memory
  check, see gemmlab_emu.h), so an access one element past an array, or before it, is an error naming
  the argument and the element. A crash becomes a Python exception that names the kernel, block and
  thread; barrier divergence is an error, never a hang; a kernel that runs too long
  (``GEMMLAB_EMULATOR_TIMEOUT`` seconds, default 600; 0 for no limit) is stopped, and the child dies
  with its parent. The Python process and its arrays are untouched by a failed launch, and an array
  that is read-only is never written.

Timing on the emulator means nothing; :func:`gemmlab.bench` refuses to do it.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import json
import math
import os
import re
import shutil
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy

from . import processes
from .hardware import BackendError
from .paths import KERNELS, atomic_write

HERE = Path(__file__).resolve().parent / "emulator"
RUNTIME = HERE / "gemmlab_emu.h"
FLAGS = ("-std=c++17", "-O2", "-g1", "-fPIC", "-shared", "-fno-strict-aliasing", "-fvisibility=hidden",
         "-fno-exceptions", "-fno-threadsafe-statics", "-Wno-unknown-pragmas", "-Wno-attributes", "-pipe")
# C++ lets a compiler delete a loop that has no side effects and never ends; a GPU runs it for ever (a kernel
# that hangs must hang here too, and be stopped by the time limit, not pass): where the compiler takes it
NO_FINITE_LOOPS = ("-fno-finite-loops",)
# On Linux: a big local array probes its stack page by page (so it meets the guard page and is named, not
# silently spilled into the next thread's stack); every symbol must resolve when the library is built;
# and the kernel's exit() comes to the runtime, which stops the launch with an error.
LINUX_FLAGS = ("-fstack-clash-protection", "-Wl,-z,defs", "-Wl,--wrap=exit")
# The memory check: the compiler tests each load and store against a shadow map that the runtime
# header keeps (gemmlab_emu.h); g++ on x86-64 Linux (the shadow's place in the address space is fixed).
MEMCHECK_FLAGS = ("-DGL_EMU_MEMCHECK=1", "-fsanitize=kernel-address", "-fasan-shadow-offset=0x7fff8000",
                  "--param", "asan-stack=0", "--param", "asan-globals=0",
                  "--param", "asan-instrumentation-with-call-threshold=1000000")

# A kernel that uses volatile memory is built with ThreadSanitizer's instrumentation instead (g++), so that
# the runtime sees its volatile accesses apart and runs each warp in lockstep through them (see
# GL_EMU_LOCKSTEP in gemmlab_emu.h); the memory check then rides on the same calls. No runtime is linked.
LOCKSTEP_FLAGS = ("-DGL_EMU_LOCKSTEP=1", "-fsanitize=thread", "--param", "tsan-distinguish-volatile=1",
                  "--param", "tsan-instrument-func-entry-exit=0")
_VOLATILE = re.compile(r"\bvolatile\b")


_LAUNCHES = threading.RLock()        # emulated launches run one after another, as on a GPU stream


def _fresh_lock():                   # a process forked while another thread held the lock must not inherit it
    global _LAUNCHES
    _LAUNCHES = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock)


class EmulatorError(RuntimeError):
    """A kernel failed on the emulator: barrier divergence, a crash, an out-of-bounds access, a time-out."""


class EmulatorTimeout(EmulatorError):
    """A kernel ran past the emulator's time limit (GEMMLAB_EMULATOR_TIMEOUT) and was stopped."""


# Features the emulator does not model, found before the compiler sees them: (pattern, name).
UNSUPPORTED = [
    (r"\basm\s*(?:volatile\s*)?\(", "inline PTX assembly (asm)"),
    (r"<<<", "launching kernels from a kernel (dynamic parallelism)"),
    (r"\btex[123]D\w*\b|\bsurf[123]D\w*\b|\btex1Dfetch\b", "texture and surface fetches"),
    (r"\bcudaMemcpyToSymbol\b|\b__cudaMemcpy\w*\b", "host-side CUDA API calls"),
]


def _compiler() -> str:
    chosen = os.environ.get("CXX")
    if chosen:
        if shutil.which(chosen) is None:        # a named compiler that is not there: said, not replaced by another
            extra = (" (CXX names one program here: no launcher such as ccache, no flags)"
                     if len(chosen.split()) > 1 else " (not found on the PATH)")
            raise BackendError(f"CXX={chosen!r} names no compiler on this machine{extra}; set CXX to a C++17 "
                               "compiler that is installed (g++, clang++), or unset it to use g++")
        return shutil.which(chosen)
    for candidate in ("g++", "clang++", "c++"):
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


_private_cache = None


def _cache_dir() -> Path:
    """The emulator's build cache; a private temporary one (removed at exit) when it cannot be written."""
    global _private_cache
    base = os.environ.get("GEMMLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gemmlab")
    path = Path(base) / "emulator"
    try:
        path.mkdir(parents=True, exist_ok=True)        # (again each time: someone may have cleared the cache)
        if path in _ready:
            return path
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
        _sweep(path)
        _ready.add(path)
        return path
    except OSError as exc:
        if _private_cache is None:
            _private_cache = Path(tempfile.mkdtemp(prefix="gemmlab-cache-"))
            atexit.register(shutil.rmtree, _private_cache, True)
            print(f"gemmlab: the kernel cache {path} cannot be written ({exc.strerror or exc}); using a private "
                  f"temporary cache {_private_cache} until this process ends (set GEMMLAB_CACHE_DIR to keep "
                  f"builds)", file=sys.stderr)
        return _private_cache


_ready = set()          # cache folders found writable (and swept) by this process


def _sweep(cache: Path, age: float = 3600.0):
    """Remove what a killed process left in the cache: build folders and temporary files over an hour old."""
    now = time.time()
    for leftover in [*cache.glob(".build-*"), *cache.glob(".*.tmp")]:
        try:
            if now - leftover.stat().st_mtime > age:
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        except OSError:
            pass


def _racecheck_setting() -> bool:
    """GEMMLAB_EMULATOR_RACECHECK=1: every emulated launch checks for shared-memory races (slower)."""
    value = os.environ.get("GEMMLAB_EMULATOR_RACECHECK", "0").strip()
    if value not in ("0", "1"):
        raise ValueError(f"GEMMLAB_EMULATOR_RACECHECK={value!r} must be 0 (the default) or 1 (report "
                         f"shared-memory races as errors)")
    return value == "1"


def timeout_setting():
    """GEMMLAB_EMULATOR_TIMEOUT in seconds (None: no limit), checked before anything is started."""
    text = os.environ.get("GEMMLAB_EMULATOR_TIMEOUT", "600").strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"GEMMLAB_EMULATOR_TIMEOUT={text!r} must be a number of seconds >= 0 (default 600; "
                         f"0 means no limit)")
    return None if value == 0 else value


_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<type>[A-Za-z_][\w:<>, ]*?)\s+"
    r"(?:__align__\s*\(\s*\d+\s*\)\s+)?(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;")


# `__shared__ T name[N]...;` (one array, one line): becomes a reference into the runtime's shared arena,
# so that the memory check knows its bounds. Other forms (scalars, several names) stay plain statics.
_SHARED_ARRAY = re.compile(
    r"(?<![\w.])(?:static\s+)?__shared__\s+"
    r"(?:__align__\s*\(\s*(?P<n1>\d+)\s*\)\s+)?"
    r"(?P<type>(?:(?:const|volatile|unsigned|signed|short|long)\s+)*[A-Za-z_][\w:]*(?:\s*<[^<>;{}\n]*>)?)[ \t]+"
    r"(?:__align__\s*\(\s*(?P<n2>\d+)\s*\)\s+)?"
    r"(?P<name>[A-Za-z_]\w*)[ \t]*(?P<dims>(?:\[[^\[\];{}\n]+\][ \t]*)+);")


_STATIC_QUALIFIED = re.compile(r"\bstatic(\s+)(?=__shared__|__constant__)")
# A __device__ variable (not a function, not const): kept in one section of the library, which the
# launch copies back, so that its value lasts from one launch of the module to the next, as on a GPU.
_DEVICE_VARIABLE = re.compile(r"\b__device__(?=\s+(?:(?:static|volatile|unsigned|signed|long|short|struct)\s+)*"
                              r"[A-Za-z_][\w:]*(?:\s*<[^<>;{}()]*>)?[\s*]+[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*"
                              r"(?:=\s*(?:\{[^;]*\}|[^;{}]*))?;)")


def translate(source: str) -> str:
    """Rewrite what the compatibility header cannot express; every line keeps its number."""
    source = _STATIC_QUALIFIED.sub(r"\1", source)        # __shared__ and __constant__ are statics already
    source = _DEVICE_VARIABLE.sub("GL_DEVICE_VARIABLE", source)
    source = _EXTERN_SHARED.sub(
        lambda m: f"{m.group('type')}* const {m.group('name')} = "
                  f"reinterpret_cast<{m.group('type')}*>(::gl_emu::dynamic_shared);", source)

    def shared(m):
        if "\n" in m.group(0):
            return m.group(0)
        t, name, dims = m.group("type"), m.group("name"), m.group("dims").strip()
        align = m.group("n1") or m.group("n2") or "0"
        return (f"static {t} (&{name}){dims} = *::gl_emu::shared_array<{t}{dims}>"
                f"(\"{name}\", __FILE__, __LINE__, {align});")
    return _SHARED_ARRAY.sub(shared, source)


def _find_unsupported(module, preprocess=None):
    """Refuse, by name, a feature the emulator cannot run. The scan reads the source as written; where it
    finds something, ``preprocess()`` (the compiler's preprocessor, with __CUDA_ARCH__ and the rest
    defined) confirms it is really compiled, so code under ``#if`` that the build leaves out is no reason."""
    from .loader import strip_comments
    texts = [(module.display, module.source)] + [(str(p), t) for p, t in module.headers.items()]
    hits = []
    for name, text in texts:
        clean = strip_comments(text)
        for pattern, what in UNSUPPORTED:
            for m in re.finditer(pattern, clean):
                hits.append((name, clean.count("\n", 0, m.start()) + 1, m.group(0).rstrip("(").strip(), what, pattern))
    if not hits:
        return
    compiled = preprocess() if preprocess is not None else None
    for name, line, found, what, pattern in hits:
        if compiled is not None:
            text = compiled.get(name, {}).get(line)
            if text is None or not re.search(pattern, text):
                continue                      # not in what the compiler sees
        raise module.compile_error(
            f"{name}({line}): error: the CPU emulator does not support {what}: {found}\n", "the kernel")


def _preprocessed(command, unit: str, origin: str, module, cache: Path) -> dict:
    """{file: {line: text}} of the user's files as the compiler's preprocessor leaves them."""
    # (the preprocessor's line markers write a name as a C string: escaped as the #line directives are)
    names = {_c_string(origin): module.display, **{_c_string(str(p)): str(p) for p in module.headers}}
    build = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
    try:
        src = build / "unit.cpp"
        src.write_text(unit)
        flags = [c for c in command[1:] if c not in ("-shared",) and not c.startswith("-Wl,")]
        proc = processes.run([command[0], *flags, "-E", "unit.cpp"], capture_output=True, text=True, cwd=build,
                             group=True, env={**os.environ, "TMPDIR": str(build)})
    finally:
        shutil.rmtree(build, ignore_errors=True)
    out, file, line = {}, None, 0
    for text in proc.stdout.splitlines():
        m = re.match(r'^#\s*(\d+)\s+"([^"]*)"', text)
        if m:
            line, file = int(m.group(1)), names.get(m.group(2))
            continue
        if file is not None:
            out.setdefault(file, {})[line] = out.get(file, {}).get(line, "") + text
        line += 1
    return out


def _launch_bounds_function(signature, expr: str, symbol: str) -> str:
    """C++ that returns the first __launch_bounds__ argument of this instance, for the compiler to evaluate
    (constants, macros, constexpr expressions and template arguments alike); '' without launch bounds."""
    if not signature.launch_bounds:
        return ""
    from .loader import parse_name_expression
    _, args = parse_name_expression(expr) if not expr.startswith("(") else (None, [])
    text = signature.launch_bounds[0]
    for t, value in zip(signature.template, args):
        text = re.sub(rf"\b{re.escape(t.name)}\b", f"({value})", text)
    for t in signature.template[len(args):]:
        if t.default is not None:
            text = re.sub(rf"\b{re.escape(t.name)}\b", f"({t.default})", text)
    space = signature.name.rsplit("::", 1)[0] if "::" in signature.name else ""
    using = f"using namespace {space}; " if space else ""
    return f"GL_EXPORT long {symbol}_max_threads() {{ {using}return (long)({text}); }}"


class _Region(ctypes.Structure):
    _fields_ = [("data", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong), ("touchable", ctypes.c_ulonglong)]


class EmulatedFunction:
    """One kernel instance compiled for the CPU."""

    num_regs = None
    static_shared_bytes = 0
    last_switches = 0          # fiber switches of the last launch

    @property
    def limits(self):
        """The launch limits of the emulated GPU (the profile in use: GEMMLAB_DEVICE, else the H200)."""
        from .profiles import current
        return current().limits

    def __init__(self, lib, symbol: str, kernel_name: str, max_threads, library: Path, memcheck: bool):
        self.lib = lib
        self.name = kernel_name
        self.library = library
        self.memcheck = memcheck
        self.param_names = None    # set by the loader: the kernel's parameter names, for messages
        self._locations = {}       # code offset -> 'file:line' (see _location)
        self.max_threads_per_block = max_threads or self.limits.max_threads_per_block
        self.body = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
        self.fork_launch = lib.gl_emu_fork_launch
        self.fork_launch.restype = ctypes.c_long
        self.fork_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                                     ctypes.POINTER(ctypes.c_uint), ctypes.c_ulonglong,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(_Region),
                                     ctypes.c_uint]
        lib.gl_emu_shared_alloc.restype = ctypes.c_void_p
        lib.gl_emu_shared_alloc.argtypes = [ctypes.c_ulonglong]
        lib.gl_emu_shared_free.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
        lib.gl_emu_status_size.restype = ctypes.c_ulonglong
        lib.gl_emu_device_vars.restype = ctypes.c_void_p
        lib.gl_emu_device_vars.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p]
        self.module = None         # set by compile(): __device__ variables live as long as their module

    def _argument(self, i):
        names = self.param_names
        return f"argument {i} ({names[i]!r})" if names and i < len(names) else f"argument {i}"

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
        timeout = timeout_setting()                 # a bad setting fails here, before anything starts
        # One launch at a time in this process, as a GPU stream runs them: each launch copies its arrays in
        # and back whole, and __device__ variables too, so two at once would undo each other's writes.
        with _LAUNCHES:
            self._launch(grid, block, args, shared_mem, timeout)

    def _launch(self, grid, block, args, shared_mem, timeout):
        lib = self.lib
        regions, keep, pointers = [], [], [None] * len(args)
        status_size = lib.gl_emu_status_size()
        status_addr = lib.gl_emu_shared_alloc(status_size)
        if not status_addr:
            raise MemoryError("the emulator could not map its status page")
        try:
            for start, end, members in self._regions(args):
                size = end - start
                buf = lib.gl_emu_shared_alloc(size)
                if not buf:
                    raise MemoryError(f"the emulator could not map {size} bytes of shared memory")
                regions.append((start, size, buf, members))
                ctypes.memmove(buf, start, size)
                for i in members:
                    p = ctypes.c_void_p(buf + args[i].__array_interface__["data"][0] - start)
                    keep.append(p)
                    pointers[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
            for i, a in enumerate(args):
                if pointers[i] is not None:
                    continue
                if a is None:                         # a NULL pointer argument
                    p = ctypes.c_void_p(0)
                    keep.append(p)
                    pointers[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
                    continue
                if not isinstance(a, numpy.generic):
                    raise EmulatorError(f"kernel {self.name}: {self._argument(i)} of type {type(a).__name__} cannot "
                                        "be passed on the emulator, which takes arrays and numbers")
                c = (ctypes.c_char * a.nbytes).from_buffer_copy(a.tobytes())
                keep.append(c)
                pointers[i] = ctypes.cast(ctypes.pointer(c), ctypes.c_void_p)
            argv = (ctypes.c_void_p * max(len(args), 1))(*[p.value for p in pointers])
            table = (_Region * max(len(regions), 1))()
            for r, (start, size, buf, members) in zip(table, regions):
                # what may be touched: the arrays' bytes (an empty array: none)
                touchable = max(args[i].__array_interface__["data"][0] - start + args[i].nbytes for i in members)
                r.data, r.bytes, r.touchable = buf, size, touchable
            arguments = len(regions)
            device_vars = self._device_vars_in(regions)
            ctypes.memset(status_addr, 0, status_size)
            ctypes.c_int.from_address(status_addr).value = 3
            pid = self.fork_launch(self.body, self.name.encode(), (ctypes.c_uint * 3)(*grid),
                                   (ctypes.c_uint * 3)(*block), shared_mem, argv, status_addr, table, arguments)
            if pid < 0:
                raise EmulatorError(f"kernel {self.name}: could not start the emulated launch (fork failed)")
            self._wait(pid, status_addr, regions, args, timeout)
            self._copy_back(regions, args)
            self._device_vars_out(device_vars)
        finally:
            for _, size, buf, _ in regions:
                lib.gl_emu_shared_free(buf, size)
            lib.gl_emu_shared_free(status_addr, status_size)

    def _device_vars_in(self, regions):
        """Give this library the module's __device__ variables as the last launch left them; a shared buffer
        for the child to leave them in. (Each kernel instance is its own library, with the same layout of
        the module's variables.)"""
        size = ctypes.c_ulonglong()
        base = self.lib.gl_emu_device_vars(ctypes.byref(size), None)
        if not base or not size.value:
            return None
        initial = getattr(self.lib, "_gl_initial_device_vars", None)
        if initial is None:                       # as the library was loaded: the variables' initializers
            initial = self.lib._gl_initial_device_vars = ctypes.string_at(base, size.value)
        state = getattr(self.module, "_device_state", None)
        ctypes.memmove(base, state if state is not None and len(state) == size.value else initial, size.value)
        buf = self.lib.gl_emu_shared_alloc(size.value)
        if not buf:
            raise MemoryError("the emulator could not map room for the __device__ variables")
        regions.append((0, size.value, buf, []))     # freed with the arguments' regions
        self.lib.gl_emu_device_vars(ctypes.byref(size), ctypes.c_void_p(buf))
        return base, buf, size.value

    def _device_vars_out(self, device_vars):
        if device_vars is None:
            return
        base, buf, size = device_vars
        ctypes.memmove(base, buf, size)
        if self.module is not None:
            self.module._device_state = ctypes.string_at(buf, size)
        self.lib.gl_emu_device_vars(ctypes.byref(ctypes.c_ulonglong()), None)

    def _copy_back(self, regions, args):
        """Write the launch's results into the caller's writable arrays; a read-only one must be unchanged."""
        located = {}
        for start, _, buf, members in regions:
            for i in members:
                located[i] = buf + args[i].__array_interface__["data"][0] - start
        writable = [i for i in located if args[i].flags.writeable]
        for i in located:
            a = args[i]
            if a.flags.writeable or a.nbytes == 0:
                continue
            lo = a.__array_interface__["data"][0]
            if any(_overlap(lo, a.nbytes, args[w].__array_interface__["data"][0], args[w].nbytes) for w in writable):
                continue                          # written through a writable alias: legal
            after = (ctypes.c_char * a.nbytes).from_address(located[i])
            if bytes(after) != a.view(numpy.uint8).reshape(-1).tobytes():
                raise EmulatorError(
                    f"kernel {self.name} wrote to {self._argument(i)}, a read-only array (its flags.writeable is "
                    f"False: a read-only memory map, a buffer over bytes, or setflags(write=False)); nothing was "
                    f"written back, to it or to any other argument. Pass a writable array for an output")
        for i in writable:
            a = args[i]
            ctypes.memmove(a.__array_interface__["data"][0], located[i], a.nbytes)

    def _wait(self, pid, status_addr, regions, args, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        reaped = False
        # Woken the moment the child exits where the system can say so (a pidfd, Linux 5.3+); else polled,
        # with sleeps that grow from 0.5 ms (a short launch then waits up to a few ms longer than it ran).
        try:
            watch = os.pidfd_open(pid)
        except (AttributeError, OSError):
            watch = None
        try:
            while True:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:
                    reaped = True
                    break
                if deadline is not None and time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    reaped = True
                    where = self._where(status_addr)
                    raise EmulatorTimeout(f"kernel {self.name} ran longer than {timeout:g} s on the emulator and "
                                        f"was stopped ({where}); an endless loop? (GEMMLAB_EMULATOR_TIMEOUT)")
                if watch is not None:
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    select.select([watch], [], [], left)      # readable once the child has exited
                else:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
        finally:
            if watch is not None:
                os.close(watch)
            if not reaped:                            # Ctrl-C, or any other exception: no child left behind
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
        status = _Status.from_address(status_addr)
        if os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0 and status.code == 0:
            self.last_switches = status.switches
            if getattr(self, "racecheck", False):
                self.last_hazards = self._hazards(status)
                if self.raise_hazards and self.last_hazards:
                    raise EmulatorError(f"kernel {self.name}: racecheck found {status.hazard_count} shared-memory "
                                        f"hazards (GEMMLAB_EMULATOR_RACECHECK=1):\n"
                                        + "\n".join("  " + h.describe() for h in self.last_hazards))
            return
        where = self._where(status_addr)
        at = self._source_line(status.pc)
        if status.code == 1:
            raise EmulatorError(status.message.decode(errors="replace"))
        if status.code == 4:
            what = status.message.decode(errors="replace") if status.in_shared else \
                self._explain_access(status, regions, args)
            raise EmulatorError(f"kernel {self.name}: out-of-bounds access in {where}{at}: {what}")
        if status.code == 5:
            raise EmulatorError(
                f"kernel {self.name} overflowed a thread's stack (local memory) in {where}{at}: its local "
                f"variables need more than the {status.stack_size // 1024} KiB of stack the emulator gives each "
                f"thread. CUDA allows at most "
                f"512 KiB of local memory per thread; a large array belongs in global memory")
        if status.code == 3 and os.WIFEXITED(code):
            raise EmulatorError(f"kernel {self.name} ended the emulator's process (exit code "
                                f"{os.WEXITSTATUS(code)}) before the grid finished, in {where}: a kernel must "
                                f"not call exit() or _exit(); nothing was written back")
        sig = status.signal or (os.WTERMSIG(code) if os.WIFSIGNALED(code) else
                                max(os.WEXITSTATUS(code) - 128, 0))
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        detail = ""
        if status.fault_address:
            detail = self._explain_address(status.fault_address, regions, args)
        kind = {"SIGSEGV": "an invalid memory access", "SIGBUS": "an invalid memory access",
                "SIGFPE": "an arithmetic fault (integer division by zero?)", "SIGABRT": "an abort"}.get(name, name)
        raise EmulatorError(f"kernel {self.name} crashed on the emulator with {kind} ({name}) in {where}{at}{detail}")

    def _hazards(self, status) -> list:
        out = []
        for h in status.hazards[:status.hazards_kept]:
            out.append(Hazard(kind=HAZARD_KINDS.get(h.kind, "hazard"), array=h.array.decode(errors="replace"),
                              offset=h.offset, bytes=h.bytes, block=tuple(h.block), first_thread=tuple(h.first),
                              second_thread=tuple(h.second), first_line=self._location(h.pc_first),
                              second_line=self._location(h.pc_second)))
        self.hazard_total = status.hazard_count
        return out

    def _where(self, status_addr):
        s = _Status.from_address(status_addr)
        return (f"block ({s.block[0]},{s.block[1]},{s.block[2]}), "
                f"thread ({s.thread[0]},{s.thread[1]},{s.thread[2]})")

    def _source_line(self, pc):
        """' at file:line' of a code offset in this kernel's library, or ''."""
        where = self._location(pc)
        return f" at {where}" if where else ""

    def _location(self, pc) -> str:
        """'file:line' of a code offset in this kernel's library (from its line table), or ''; each offset is
        looked up once (a racecheck report names the same few lines many times)."""
        if pc in self._locations:
            return self._locations[pc]
        tool = shutil.which("addr2line")
        where = ""
        if pc and tool:
            try:
                out = subprocess.run([tool, "-e", str(self.library), "-i", hex(pc - 1)], capture_output=True,
                                     text=True, timeout=10).stdout.split("\n")
            except (OSError, subprocess.SubprocessError):
                out = []
            lines = [x.strip() for x in out if x.strip() and not x.startswith("??") and "gemmlab_emu.h" not in x]
            if lines:
                where = re.sub(r"^.*/\.build-[^/]+/", "", lines[0].split(" (discriminator")[0])
        self._locations[pc] = where
        return where

    @staticmethod
    def _nearest_argument(address, regions, args):
        """(argument index, address of its copy's first byte) of the argument nearest ``address``, or None."""
        best = None
        for start, _, buf, members in regions:
            for i in members:
                lo = buf + args[i].__array_interface__["data"][0] - start
                hi = lo + args[i].nbytes
                distance = 0 if lo <= address < hi else min(abs(address - lo), abs(address - hi))
                if best is None or distance < best[0]:
                    best = (distance, i, lo)
        return best[1:] if best is not None else None

    def _explain_access(self, status, regions, args):
        """An out-of-bounds access to an argument, in the argument's elements."""
        verb = "writes" if status.access_write else "reads"
        address, n = status.fault_address, status.access_size
        nearest = self._nearest_argument(address, regions, args)
        if nearest is None:
            return f"{verb} {n} bytes at address {address:#x}, outside every argument"
        i, lo = nearest
        a = args[i]
        offset = address - lo
        item = a.itemsize or 1
        element = offset // item if offset >= 0 else -((-offset + item - 1) // item)
        if offset < 0:
            side = f"{-offset} bytes before its start"
        else:
            side = f"{offset + n - a.nbytes} bytes past its end" if offset + n > a.nbytes else "inside it"
        return (f"{verb} {n} bytes at element {element} of {self._argument(i)} ({a.dtype.name}, {a.size} "
                f"elements): {side}")

    @classmethod
    def _explain_address(cls, address, regions, args):
        """A crash's address, placed beside the argument it missed by less than two pages, if any."""
        nearest = cls._nearest_argument(address, regions, args)
        if nearest is not None:
            i, lo = nearest
            a = args[i]
            hi = lo + a.nbytes
            if hi <= address < hi + 8192:
                return (f": address {address:#x} is {address - hi} bytes past the end of argument {i} "
                        f"({a.dtype.name}, {a.size} elements)")
            if lo - 8192 <= address < lo:
                return (f": address {address:#x} is {lo - address} bytes before the start of argument {i} "
                        f"({a.dtype.name}, {a.size} elements)")
        return f": address {address:#x}"


@dataclass(frozen=True)
class Hazard:
    """One shared-memory race found by the emulator's racecheck: two accesses with no barrier between them."""
    kind: str                 # read-after-write, write-after-read or write-after-write
    array: str                # the __shared__ array's name, or "dynamic shared memory"
    offset: int               # byte offset into it
    bytes: int
    block: tuple
    first_thread: tuple       # the earlier access's thread (x, y, z), then the later one's
    second_thread: tuple
    first_line: str           # file:line of each access
    second_line: str

    def describe(self) -> str:
        t1, t2 = (",".join(map(str, t)) for t in (self.first_thread, self.second_thread))
        return (f"{self.kind} hazard on {self.array} (byte {self.offset}, {self.bytes} bytes) in block "
                f"({','.join(map(str, self.block))}): thread ({t1}) at {self.first_line or '?'}, then thread ({t2}) "
                f"at {self.second_line or '?'}, with no barrier between them")


def _overlap(a, n, b, m) -> bool:
    return a < b + m and b < a + n


class _Hazard(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("block", ctypes.c_uint * 3), ("first", ctypes.c_uint * 3),
                ("second", ctypes.c_uint * 3), ("pc_first", ctypes.c_ulonglong), ("pc_second", ctypes.c_ulonglong),
                ("offset", ctypes.c_longlong), ("bytes", ctypes.c_uint), ("array", ctypes.c_char * 48)]


HAZARD_KINDS = {1: "read-after-write", 2: "write-after-read", 3: "write-after-write"}


class _Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("signal", ctypes.c_int), ("block", ctypes.c_uint * 3),
                ("thread", ctypes.c_uint * 3), ("fault_address", ctypes.c_ulonglong), ("switches", ctypes.c_ulonglong),
                ("pc", ctypes.c_ulonglong), ("access_size", ctypes.c_ulonglong), ("access_write", ctypes.c_int),
                ("in_shared", ctypes.c_int), ("stack_size", ctypes.c_ulonglong), ("stack_used", ctypes.c_ulonglong),
                ("message", ctypes.c_char * 4096), ("hazard_count", ctypes.c_uint), ("hazards_kept", ctypes.c_uint),
                ("hazards", _Hazard * 32)]


_loaded = {}


def _memcheck_flags(cxx: str) -> tuple:
    """The memory check's flags where this compiler and machine support it (g++, x86-64 Linux), else ()."""
    import platform
    setting = os.environ.get("GEMMLAB_EMULATOR_MEMCHECK", "1").strip()
    if setting not in ("0", "1"):
        raise ValueError(f"GEMMLAB_EMULATOR_MEMCHECK={setting!r} must be 1 (check every memory access, the "
                         f"default) or 0 (do not)")
    if setting == "0":
        return ()
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    version = _compiler_version(cxx)
    if "clang" in version.lower() or "Free Software Foundation" not in version:
        return ()
    return MEMCHECK_FLAGS


def compile(module, expr: str, signature, racecheck: bool = False):
    """Build one kernel instance for the emulator; ``racecheck=True`` records every shared-memory access
    and reports hazards between threads (needs the memory check: g++ on x86-64 Linux)."""
    _check_platform()
    cxx = _compiler()
    origin = str(module.path) if module.path is not None else "<code>"
    symbol = "gl_emu_kernel_" + hashlib.sha256(expr.encode()).hexdigest()[:12]
    unit = "\n".join([
        '#include "gemmlab_emu.h"',
        f'#line 1 "{_c_string(origin)}"',
        translate(module.source),
        "",
        f"#line {LAUNCHER_LINE} \"<gemmlab emulator launcher>\"",
        f"GL_EXPORT void {symbol}(void** args) {{ ::gl_emu::invoke({expr if expr.startswith('(') else '&' + expr}, args); }}",
        _launch_bounds_function(signature, expr, symbol),
        "GL_EXPORT long gl_emu_fork_launch(void (*body)(void**), const char* kernel, const unsigned* grid,",
        "                                  const unsigned* block, unsigned long long shared, void** args,",
        "                                  ::gl_emu::Status* status, const ::gl_emu::Region* regions,",
        "                                  unsigned region_count)",
        "{ return ::gl_emu::fork_launch(body, kernel, grid, block, shared, args, status, regions, region_count); }",
        "",
    ])
    includes = [f"-I{HERE}", f"-I{HERE / 'include'}", f"-I{KERNELS}"]
    if module.path is not None:
        includes.append(f"-I{module.path.parent}")
    memcheck = _memcheck_flags(cxx)
    if racecheck or _racecheck_setting():
        if not memcheck:
            raise BackendError("the emulator's racecheck rides on its memory check, which needs g++ on x86-64 "
                               "Linux (and GEMMLAB_EMULATOR_MEMCHECK not 0)")
        memcheck = (*memcheck, "-DGL_EMU_RACECHECK=1")
    if any(_VOLATILE.search(text) for text in (module.source, *module.headers.values())):
        if "Free Software Foundation" not in _compiler_version(cxx) or not _accepts(cxx, LOCKSTEP_FLAGS):
            raise BackendError(f"{expr} uses volatile memory (warp-synchronous code): the emulator runs such code "
                               f"in lockstep warps, as a GPU does, only when it compiles with g++ 11 or later "
                               f"(ThreadSanitizer's tsan-distinguish-volatile); {cxx} is not that: install it "
                               f"and set CXX=g++")
        memcheck = (*(f for f in memcheck if f.startswith("-D")), *LOCKSTEP_FLAGS)
    link = LINUX_FLAGS if sys.platform.startswith("linux") else ()
    flags = FLAGS
    if "-DGL_EMU_RACECHECK=1" in memcheck:
        # unoptimised: the optimiser drops a check that an earlier one of the same address dominates, and
        # racecheck must see every access (a read, then a write of the same word, are two events)
        flags = tuple("-O0" if f == "-O2" else f for f in FLAGS)
    from .profiles import current
    # the emulated GPU's __CUDA_ARCH__ (GEMMLAB_DEVICE's profile; the header's default is the H200's 900), for
    # code that asks for it (its own text, its headers, or <mma.h>, whose fragments depend on it): other
    # kernels build once for every profile
    texts = (module.source, *module.headers.values())
    asks = any("__CUDA_ARCH__" in t or _MMA_INCLUDE.search(t) for t in texts)
    arch = (f"-D__CUDA_ARCH__={current().cuda_arch}",) if asks else ()
    loops = NO_FINITE_LOOPS if _takes_no_finite_loops(cxx) else ()
    command = [cxx, *flags, *loops, *memcheck, *link, *arch, *includes, *module.options]
    digest = hashlib.sha256()
    for part in (RUNTIME.read_text(), unit, "\0".join(command), _compiler_version(cxx), repr(UNSUPPORTED),
                 *(f"{p}\n{t}" for p, t in sorted(module.headers.items()))):
        digest.update(part.encode())
    key = digest.hexdigest()[:24]
    for attempt in range(3):
        cache = _cache_dir()
        library = _valid_entry(cache, key)
        if library is None:
            # (a cache entry passed this scan when it was built: the scan's patterns are in its key)
            _find_unsupported(module, lambda: _preprocessed(command, unit, origin, module, cache))
            library = _build(cache, key, command, unit, module, expr, origin, signature.line)
        try:
            lib = _loaded.get(library)
            if lib is None:
                lib = _loaded[library] = ctypes.CDLL(str(library))
            bound = getattr(lib, f"{symbol}_max_threads", None) if signature.launch_bounds else None
            if bound is not None:
                bound.restype = ctypes.c_long
            fn = EmulatedFunction(lib, symbol, expr, bound() if bound is not None else None, library,
                                  "-DGL_EMU_MEMCHECK=1" in memcheck)
            fn.racecheck = "-DGL_EMU_RACECHECK=1" in memcheck
            fn.module = module
            fn.raise_hazards = fn.racecheck and not racecheck      # the setting: hazards are errors
            return fn
        except OSError:
            # removed or replaced by another process between the check and the load: check again
            _loaded.pop(library, None)
            if attempt == 2:
                raise


LAUNCHER_LINE = 100000
_MMA_INCLUDE = re.compile(r'#\s*include\s*[<"]mma\.h[>"]')


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid_entry(cache: Path, key: str):
    """The library of a cache entry if it is whole and every file it was built from is unchanged, else None."""
    try:
        manifest = json.loads((cache / f"{key}.json").read_text())
        library = cache / manifest["library"]
        if _sha256(library) != manifest["sha256"]:
            return None
        for path, size, mtime_ns, sha in manifest["dependencies"]:
            st = os.stat(path)
            if st.st_size != size or (st.st_mtime_ns != mtime_ns and _sha256(Path(path)) != sha):
                return None
        return library
    except (OSError, ValueError, KeyError, TypeError):
        return None                            # missing, damaged or foreign: rebuilt


def _c_string(text: str) -> str:
    """A file name as the inside of a C string literal (a #line directive's): backslashes, quotes and newlines
    escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _plain_paths(build: Path, command) -> list:
    """The compiler's include folders as names it can write into a dependency file unescaped: a folder inside
    the build folder by its relative path, any other through a symbolic link in it (I0, I1, ...). A make
    rule cannot hold a newline, and writes a $ or a # escaped, so a cache or kernel folder with one of them
    in its path would otherwise come back from the -MD output as names of files that do not exist."""
    out, links = [], 0
    for arg in command:
        if arg.startswith("-I") and len(arg) > 2:
            folder = Path(arg[2:]).resolve()
            if folder == build or build in folder.parents:
                arg = "-I" + str(folder.relative_to(build))
            else:
                link = build / f"I{links}"
                links += 1
                link.symlink_to(folder, target_is_directory=True)
                arg = f"-I{link.name}"
        out.append(arg)
    return out


def _dependencies(depfile: Path, build: Path) -> list:
    """Every file the compiler read (from its -MD output, whose names are plain: _plain_paths), with size,
    time and checksum."""
    text = depfile.read_text().replace("\\\n", " ")
    text = text.split(":", 1)[1] if ":" in text else ""
    text = text.replace("$$", "$").replace("\\#", "#")
    names = [t.replace("\0", " ") for t in text.replace("\\ ", "\0").split()]
    out = []
    for name in names:
        path = Path(name)
        if not path.is_absolute():
            path = (build / path)
        path = path.resolve()
        if build in path.parents:
            continue                           # the generated unit itself
        st = path.stat()
        out.append([str(path), st.st_size, st.st_mtime_ns, _sha256(path)])
    return out


def _mirror_headers(build: Path, module) -> Path | None:
    """The user's headers as the emulator compiles them: translate() (extern __shared__, __shared__ arrays,
    __device__ variables) applies to a header as to the kernel's own file. When any header needs it, every
    header found under a search root (the kernel's folder, kernels/, the -I folders) is copied, translated,
    to the same relative place under build/hdr, which goes first on the include path; a #line keeps the
    original name for messages. None when no header needs translating."""
    from .loader import include_dirs
    translated = {Path(path): translate(text) for path, text in module.headers.items()}
    if all(translated[Path(path)] == text for path, text in module.headers.items()):
        return None
    roots = [r.resolve() for r in ([module.path.parent] if module.path is not None else []) + [KERNELS] +
             [Path(d) for d in include_dirs(module.options)]]
    mirror = build / "hdr"
    for path, text in translated.items():
        root = next((r for r in roots if path.is_relative_to(r)), None)
        if root is None:
            continue
        target = mirror / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'#line 1 "{_c_string(str(path))}"\n' + text)
    return mirror


def _build(cache: Path, key: str, command, unit, module, expr, origin, kernel_line=1) -> Path:
    """Compile into a private folder inside the cache (one filesystem: the renames are atomic), then publish
    the library under a name that carries its checksum, and last the manifest that vouches for it."""
    build = Path(tempfile.mkdtemp(prefix=".build-", dir=cache)).resolve()
    try:
        mirror = _mirror_headers(build, module)
        if mirror is not None:
            command = [command[0], f"-I{mirror}", *command[1:]]
        command = _plain_paths(build, command)
        (build / "unit.cpp").write_text(unit)
        out, dep = build / "unit.so", build / "unit.d"
        src, rel_out, rel_dep = "unit.cpp", "unit.so", "unit.d"       # the compiler runs in build
        full = [*command, "-MD", "-MF", rel_dep, src, "-o", rel_out]
        # the compiler's own temporary files go into the build folder (removed below, or swept if this process
        # is killed), and the compiler and everything it starts die with this process (processes.run's group)
        scratch = {**os.environ, "TMPDIR": str(build)}
        try:
            if "-fsanitize=thread" in command:
                # compiled with the instrumentation, linked without it (its runtime library stays out)
                proc = processes.run([*command, "-c", "-MD", "-MF", rel_dep, src, "-o", "unit.o"],
                                     capture_output=True, text=True, cwd=build, group=True, env=scratch)
                if proc.returncode == 0:
                    proc = processes.run([c for c in command if c != "-fsanitize=thread"] + ["unit.o", "-o", rel_out],
                                         capture_output=True, text=True, cwd=build, group=True, env=scratch)
            else:
                proc = processes.run(full, capture_output=True, text=True, cwd=build, group=True, env=scratch)
        except OSError as exc:
            raise module.compile_error(f"the C++ compiler {command[0]} could not be run: {exc}", expr) from None
        if proc.returncode != 0 or not out.is_file():
            log = _gcc_to_nvrtc(proc.stderr, origin, expr, kernel_line)
            if not _DIAGNOSTIC.search(proc.stderr):
                printed = (proc.stdout + proc.stderr).strip() or "(it printed nothing)"
                log = (f"the C++ compiler {command[0]} failed with exit code {proc.returncode} while compiling "
                       f"{expr} for the CPU emulator; it printed:\n{printed}")
            raise module.compile_error(log, expr)
        sha = _sha256(out)
        library = cache / f"{key}-{sha[:16]}.so"
        manifest = {"library": library.name, "sha256": sha, "kernel": expr, "source": origin,
                    "dependencies": _dependencies(dep, build)}
        try:
            os.replace(out, library)
            atomic_write(cache / f"{key}.json", json.dumps(manifest, indent=1) + "\n")
        except OSError as exc:
            if not (cache / f"{key}.json").is_file():
                library.unlink(missing_ok=True)   # no manifest vouches for it: leave nothing behind
            raise BackendError(f"the emulator could not write its build cache {cache} ({exc.strerror or exc}); "
                               f"free some space there, or set GEMMLAB_CACHE_DIR to another folder") from None
        for old in cache.glob(f"{key}-*.so"):
            if old != library:
                old.unlink(missing_ok=True)     # an earlier build of this key (a header changed since)
        return library
    finally:
        shutil.rmtree(build, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def _accepts(cxx: str, flags: tuple) -> bool:
    """Whether the compiler takes these flags (compiling a one-line unit, once per process)."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            return processes.run([cxx, "-x", "c++", "-c", *flags, "-o", os.path.join(tmp, "probe.o"), "-"],
                                 input="int gl_probe;\n", capture_output=True, text=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _takes_no_finite_loops(cxx: str) -> bool:
    """Whether the compiler has -fno-finite-loops (g++ 10 and clang 12 on), read from the version text every
    build already asks for, so that no extra compiler run is made."""
    text = _compiler_version(cxx)
    m = re.search(r"clang version (\d+)", text)
    if m:
        return int(m.group(1)) >= 12
    m = re.search(r"\) (\d+)\.\d+", text) if "Free Software Foundation" in text else None
    return m is not None and int(m.group(1)) >= 10


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return cxx


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:\d+:)?\s*(?P<kind>fatal error|error):\s*(?P<msg>.*)$",
                         re.M)


def _gcc_to_nvrtc(log: str, origin: str, expr: str = "", kernel_line: int = 1) -> str:
    """gcc/clang diagnostics (``file:line:col: error: msg``) in the form the loader formats for both backends.

    An error that the compiler places in the generated launcher or in the emulator's own header (a
    template instance whose arguments do not fit its kernel, a parameter type the emulator cannot pass)
    is moved to the user's line that the instantiation notes point at, else to the kernel's declaration."""
    out = []
    user_line = None
    for m in re.finditer(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:\d+:)?\s*(?:required from|note|In instantiation)",
                         log, re.M):
        if m.group("file") == origin and user_line is None:
            user_line = m.group("line")
    for m in _DIAGNOSTIC.finditer(log):
        file, line, msg = m.group("file"), m.group("line"), m.group("msg")
        if file == "<gemmlab emulator launcher>" or Path(file).name == RUNTIME.name:
            file, line = origin, user_line or str(kernel_line)
            msg = f"{msg} (while instantiating {expr} for the emulator: do its template arguments fit?)"
        out.append(f"{file}({line}): error: {msg}")
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


def baseline_commit(revision: str) -> str:
    """The commit ``revision`` names in this checkout, or a ValueError saying why there is none."""
    from .paths import REPO
    if REPO is None or not (REPO / ".git").exists():
        raise ValueError("comparing with a commit needs a git checkout of gemmlab")
    if not isinstance(revision, str) or not revision or revision.startswith("-"):
        raise ValueError(f"a commit, a branch or a tag, got {revision!r}")
    proc = processes.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                         capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"{revision!r} names no commit in {REPO}")
    return proc.stdout.strip()


def compare_with(revision: str, rounds: int = 3) -> dict:
    """This tree's emulator benchmark beside an earlier commit's, measured in turns on this machine.

    The earlier commit is checked out into a temporary git worktree and benchmarked in a child process
    (its own build cache); the two alternate ``rounds`` times so that the machine's drift hits both alike.
    Returns this tree's result with ``baseline`` (the commit's medians) and ``ratio`` (this / baseline,
    below 1 is faster) for each timed figure.
    """
    import statistics

    from .paths import REPO
    try:
        revision = baseline_commit(revision)
    except ValueError as exc:
        raise BackendError(str(exc)) from None
    work = Path(tempfile.mkdtemp(prefix="gemmlab-baseline-"))
    tree = work / "tree"
    try:
        proc = processes.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), revision],
                             capture_output=True, text=True)
        if proc.returncode != 0:
            raise BackendError(f"git could not check out {revision!r}: {proc.stderr.strip()}")
        env = {**os.environ, "PYTHONPATH": str(tree / "lib"), "GEMMLAB_CACHE_DIR": str(work / "cache"),
               "GEMMLAB_BACKEND": "emulator"}

        def theirs():
            out = processes.run([sys.executable, "-m", "gemmlab", "emulator-bench"], env=env, capture_output=True, group=True,
                                text=True, cwd=str(work))
            if out.returncode != 0:
                raise BackendError(f"the benchmark of {revision} failed: {out.stderr.strip()[-2000:]}")
            return json.loads(out.stdout)
        ours, base = [], []
        for _ in range(rounds):
            base.append(theirs())
            ours.append(benchmark())
    finally:
        processes.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)

    def medians(results):
        figures = {f"{k} seconds": [r["kernels"][k]["seconds"] for r in results] for k in results[0]["kernels"]}
        figures["launch_overhead_ms"] = [r["launch_overhead_ms"] for r in results]
        figures["switch_cost_ns"] = [r["switch_cost_ns"] for r in results]
        return {k: statistics.median(v) for k, v in figures.items()}
    result = ours[-1]
    mine, theirs_ = medians(ours), medians(base)
    result["medians"] = mine
    result["baseline"] = {"commit": revision, "medians": theirs_, "rounds": rounds}
    result["ratio"] = {k: mine[k] / theirs_[k] for k in mine if k in theirs_ and theirs_[k]}
    result["command"] = (f"GEMMLAB_BACKEND=emulator python -m gemmlab emulator-bench --record --baseline {revision} "
                         f"--rounds {rounds}")
    return result


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()
