"""Building a kernel for the CPU emulator, and how the emulator works as a whole: the same .cu files, compiled for the CPU.

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
  deterministic, and a missing barrier gives the same wrong answer every time. A large grid whose blocks
  cannot see each other (no atomics, fences, volatile memory or module variables: launch.py's ``_ranges``)
  runs as consecutive ranges of blocks, one process each, with the one process's answer.
- **Safety.** Each launch runs in a forked child process, on copies of the array arguments placed in
  shared memory with an inaccessible page on each side. With g++ on x86-64 Linux every load and store
  of the kernel is checked against the bounds of its arguments and of its shared memory (the memory
  check, see gemmlab_emu.h), so an access one element past an array, or before it, is an error naming
  the argument and the element. A crash becomes a Python exception that names the kernel, block and
  thread; a deadlock at a barrier is an error, never a hang; a kernel that runs too long
  (``GEMMLAB_EMULATOR_TIMEOUT`` seconds, default 600; 0 for no limit) is stopped, and the child dies
  with its parent. The Python process and its arrays are untouched by a failed launch, and an array
  that is read-only is never written.

Timing on the emulator means nothing; :func:`gemmlab.bench` refuses to do it.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ... import processes
from ...paths import EMULATOR, HOST_LIBRARIES, KERNELS, atomic_write
from ..backend import BackendError, MachineError
from ..source import _STAND_INS, LIBRARY_HEADERS, CompileError, include_dirs, parse_name_expression, strip_comments
from .launch import EmulatedFunction

HERE = EMULATOR                      # the runtime header and the CUDA headers the emulator provides (data)
RUNTIME = HERE / "gemmlab_emu.h"
# (-fno-builtin-malloc and the rest: the kernel's malloc is the device heap's, which the host compiler must not
# reason about as the C library's: no pair of malloc and free elided, no malloc and memset made a calloc)
FLAGS = ("-std=c++17", "-O2", "-g1", "-fPIC", "-shared", "-fno-strict-aliasing", "-fvisibility=hidden",
         "-fno-exceptions", "-fno-threadsafe-statics", "-Wno-unknown-pragmas", "-Wno-attributes", "-pipe",
         "-fno-builtin-malloc", "-fno-builtin-calloc", "-fno-builtin-free")
# C++ lets a compiler delete a loop that has no side effects and never ends; a GPU runs it for ever (a kernel
# that hangs must hang here too, and be stopped by the time limit, not pass): where the compiler takes it
NO_FINITE_LOOPS = ("-fno-finite-loops",)
# On Linux: a big local array probes its stack page by page (so it meets the guard page and is named, not
# silently spilled into the next thread's stack); every symbol must resolve when the library is built;
# and the kernel's exit() comes to the runtime, which stops the launch with an error.
# The kernel's malloc, calloc and free come to the runtime's device heap (gemmlab_emu.h), which outlives a launch;
# its operators new and delete stay the library's own (a version script keeps them out of the dynamic symbols).
LINUX_FLAGS = ("-fstack-clash-protection", "-Wl,-z,defs", "-Wl,--wrap=exit", "-Wl,--wrap=malloc",
               "-Wl,--wrap=calloc", "-Wl,--wrap=free", f"-Wl,--version-script={HERE / 'own-operators.map'}")
# Device code's new gives a null pointer where the heap is full: the compiler must not take it to be non-null
CHECK_NEW = ("-fcheck-new",)
# The memory check: the compiler tests each load and store against a shadow map that the runtime
# header keeps (gemmlab_emu.h); g++ on x86-64 Linux (the shadow's place in the address space is fixed).
MEMCHECK_FLAGS = ("-DGL_EMU_MEMCHECK=1", "-fsanitize=kernel-address", "-fasan-shadow-offset=0x7fff8000",
                  "--param", "asan-stack=1", "--param", "asan-globals=0",
                  "--param", "asan-instrumentation-with-call-threshold=1000000")

# A kernel that uses volatile memory is built with ThreadSanitizer's instrumentation instead (g++), so that
# the runtime sees its volatile accesses apart and runs each warp in lockstep through them (see
# GL_EMU_LOCKSTEP in gemmlab_emu.h); the memory check then rides on the same calls. No runtime is linked.
LOCKSTEP_FLAGS = ("-DGL_EMU_LOCKSTEP=1", "-fsanitize=thread", "--param", "tsan-distinguish-volatile=1",
                  "--param", "tsan-instrument-func-entry-exit=0")
_VOLATILE = re.compile(r"\bvolatile\b")



# Features the emulator does not model, found before the compiler sees them: (pattern, name).
UNSUPPORTED = [
    (r"\basm\s*(?:volatile\s*)?\(", "inline PTX assembly (asm)"),
    (r"\b(?:texture|surface)\s*<", "texture and surface references (texture<...>, removed in CUDA 12)"),
    (r"\bcudaMemcpyToSymbol\b|\b__cudaMemcpy\w*\b", "host-side CUDA API calls"),
] + [(rf"#\s*include\s*[<\"]{name}[>\"]", what) for name, what in LIBRARY_HEADERS]


@functools.lru_cache(maxsize=None)
def _runtime_digest() -> str:
    """A hash of the runtime header and every header the emulator stands in with (include/, and the host
    libraries'): a build made with other versions of them (an older gemmlab, an edited header) is not reused."""
    digest = hashlib.sha256()
    for folder in (HERE, HOST_LIBRARIES):
        for path in sorted(p for p in folder.rglob("*")
                           if p.is_file() and p.suffix in (".h", ".cuh", ".hpp", ".map", "")):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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
    base = os.environ.get("GEMMLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gemmlab")
    path = Path(base) / "emulator"
    if path in _given_up:
        return _private_cache or _fall_back(path, _given_up[path])
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
        return _private_cache or _fall_back(path, _machine_words(exc))


_ready = set()          # cache folders found writable (and swept) by this process
_given_up = {}          # cache folder -> why this process builds elsewhere (it failed to take a build)


def _fall_back(path: Path, why: str) -> Path:
    """This process's private temporary cache, made (with a notice) the first time the cache at path fails."""
    global _private_cache
    _given_up.setdefault(path, why)
    if _private_cache is None:
        try:
            made = Path(tempfile.mkdtemp(prefix="gemmlab-cache-"))
        except OSError as exc:
            raise MachineError(f"the emulator's build cache {path} cannot be written ({why}), nor a temporary "
                               f"folder in {tempfile.gettempdir()} ({_machine_words(exc)}): this is the machine, "
                               f"not your kernel; free some space, or set GEMMLAB_CACHE_DIR (or TMPDIR) to a "
                               f"folder that can be written") from None
        _private_cache = made
        atexit.register(shutil.rmtree, _private_cache, True)
        print(f"gemmlab: the kernel cache {path} cannot be written ({why}); using a private temporary cache "
              f"{_private_cache} until this process ends (set GEMMLAB_CACHE_DIR to keep builds)", file=sys.stderr)
    return _private_cache


# what the system says when the machine, not the code, stops a build (the compiler's and the linker's words too)
_MACHINE_ERRNOS = {28: "the disk is full", 122: "the disk quota is used up", 30: "a read-only file system",
                   13: "no permission to write there", 1: "no permission to write there", 5: "a disk read or write "
                   "failed", 2: "the folder is gone", 20: "a file stands where a folder should be"}
# (only in the tools' own lines, "cc1plus: fatal error: ...", never in a line of the kernel's source that the
# compiler quotes beside an error)
_MACHINE_SAYS = re.compile(r"^\s*(?:(?:\S*/)?(?:[\w.]+-)*(?:cc1plus|cc1|[gc]\+\+(?:-\d+)?|gcc(?:-\d+)?|"
                           r"clang(?:\+\+)?(?:-\d+)?|collect2|ld(?:\.\w+)?|as|lto1|lto-wrapper)(?:\.exe)?|"
                           r"\{standard input\}|\S+\.s:\d+|LLVM ERROR)"          # (the assembler's, LLVM's)
                           r": .*(?:No space left on device|Disk quota exceeded|Read-only file system|"
                           r"Input/output error|cannot create temporary file|error writing to|virtual memory "
                           r"exhausted|Cannot allocate memory|out of memory|Killed signal terminated program|"
                           r"terminated with signal \d+|unable to execute command: Killed)", re.I)


def _machine_words(exc: OSError) -> str:
    """An OSError of the machine in plain words: what failed and the system's own message."""
    what = _MACHINE_ERRNOS.get(exc.errno)
    said = exc.strerror or str(exc)
    return f"{what}: {said}" if what else said


def _machine_failure(build: Path, stderr: str, returncode: int) -> str | None:
    """Why a failed compile is the machine's doing (a full disk, a read-only folder, memory), or None: the
    compiler's messages with the build folder's name, or a compiler killed by a signal."""
    if returncode < 0:
        import signal as _signal
        try:
            name = _signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the C++ compiler was killed by {name} (out of memory, or stopped from outside)"
    lines = [line.strip() for line in stderr.splitlines() if _MACHINE_SAYS.search(line)]
    if not lines:
        return None
    said = "; ".join(dict.fromkeys(line.replace(str(build), "<build folder>") for line in lines[:3]))
    for words, plain in (("No space left", 28), ("Disk quota", 122), ("Read-only", 30), ("Input/output", 5)):
        if words in said:
            return f"{_MACHINE_ERRNOS[plain]}: {said}"
    if re.search(r"Killed signal|terminated with signal|command: Killed", said):
        return f"out of memory, or stopped from outside: {said}"
    return f"out of memory: {said}" if re.search(r"memory|exhausted", said, re.I) else said


@functools.lru_cache(maxsize=None)
def _this_host() -> str:
    """Eight hex digits naming where this process's numbers mean something: the machine and its boot, and the
    process-number namespace (two containers on one machine number their processes apart)."""
    import socket
    parts = [socket.gethostname()]
    for name, read in (("/proc/sys/kernel/random/boot_id", lambda q: Path(q).read_text().strip()),
                       ("/proc/self/ns/pid", lambda q: str(os.stat(q).st_ino))):
        try:
            parts.append(read(name))
        except OSError:
            pass
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def _build_folder(cache: Path) -> Path:
    """A new build folder in the cache, named for this machine and process (.build-<host>-<pid>-...), so that what a
    killed process leaves is known for its own (_sweep)."""
    return Path(tempfile.mkdtemp(prefix=f".build-{_this_host()}-{os.getpid()}-", dir=cache))


def _unit_folder(cache: Path, unit: str, what: str) -> Path:
    """A new build folder (_build_folder) holding the unit to compile, unit.cpp; a MachineError naming the cache
    (and nothing left behind) where the cache cannot take them."""
    build = None
    try:
        build = _build_folder(cache).resolve()
        (build / "unit.cpp").write_text(unit)
        return build
    except OSError as exc:
        if build is not None:
            shutil.rmtree(build, ignore_errors=True)
        raise _cache_failure(cache, what, _machine_words(exc)) from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                 # (another user's: alive)
        pass
    return True


def _sweep(cache: Path, age: float = 3600.0):
    """Remove what a killed process left in the cache: the build folders of a process of this machine that has
    ended, and any build folder or temporary file over an hour old (another machine's, or one of a process
    whose number has been given to another since)."""
    now, host = time.time(), _this_host()
    for leftover in [*cache.glob(".build-*"), *cache.glob(".*.tmp")]:
        try:
            parts = leftover.name.split("-")
            dead = (leftover.name.startswith(".build-") and len(parts) >= 4 and parts[1] == host
                    and parts[2].isdigit() and not _alive(int(parts[2])))
            if dead or now - leftover.stat().st_mtime > age:
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        except OSError:
            pass


def _interleave_setting() -> bool:
    """GEMMLAB_EMULATOR_INTERLEAVE=1: every memory access outside a thread's stack is made in lockstep with its
    warp and the warps take turns, one access each, between barriers (slower: for code whose answer depends on
    warps running side by side, as a GPU runs them)."""
    value = os.environ.get("GEMMLAB_EMULATOR_INTERLEAVE", "0").strip()
    if value not in ("0", "1"):
        raise ValueError(f"GEMMLAB_EMULATOR_INTERLEAVE={value!r} must be 0 (the default) or 1 (warps interleaved, "
                         f"access by access)")
    return value == "1"


def _racecheck_setting() -> bool:
    """GEMMLAB_EMULATOR_RACECHECK=1: every emulated launch checks for shared-memory races (slower)."""
    value = os.environ.get("GEMMLAB_EMULATOR_RACECHECK", "0").strip()
    if value not in ("0", "1"):
        raise ValueError(f"GEMMLAB_EMULATOR_RACECHECK={value!r} must be 0 (the default) or 1 (report "
                         f"shared-memory races as errors)")
    return value == "1"



# (an alignment may be any constant expression: __align__(sizeof(T)), as CUDA's samples write it)
# or a type (alignas(float4)); written __align__(n) or alignas(n), before or after __shared__ or the type
_ALIGN = r"(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)\s*"
# `extern __shared__ T name[];` in any order of its words (`extern double __shared__ s[]`, `extern volatile
# __shared__ float s[]`, an alignment anywhere) and with more bounds after the open one (`extern __shared__ half
# s[][K + SKEW]`, as CUDA's tensor-core samples write it): a pointer to the launch's dynamic shared memory
_EXTERN_SHARED = re.compile(
    r"(?<![\w.])(?P<words>(?:(?:extern|__shared__|volatile|const)\b\s*|" + _ALIGN + r")*"
    r"(?P<type>(?:(?:const|volatile|unsigned|signed|short|long)\s+)*[A-Za-z_][\w:]*(?:\s*<[^<>;{}]*>)?)"
    r"(?P<stars>(?:\s*\*)+\s*|\s+)"                   # (an array of pointers: `extern __shared__ char* p[]`)
    r"(?:(?:extern|__shared__|volatile|const)\b\s*|" + _ALIGN + r")*)"
    r"(?P<name>[A-Za-z_]\w*)\s*\[\s*\](?P<dims>(?:\s*\[[^\[\];{}]+\])*)\s*;")


def _extern_shared(m):
    words = m.group("words")
    if not (re.search(r"\bextern\b", words) and re.search(r"\b__shared__\b", words)):
        return m.group(0)
    t = m.group("type")
    others = words[:m.start("type") - m.start("words")] + words[m.end("type") - m.start("words"):]
    t = " ".join([q for q in ("const", "volatile") if re.search(rf"\b{q}\b", others)] + [t]) + "*" * m.group("stars").count("*")
    dims = re.sub(r"\s+", " ", m.group("dims")).strip()
    name = m.group("name")
    pointer = f"{t} (* const {name}){dims}" if dims else f"{t}* const {name}"
    cast = f"{t} (*){dims}" if dims else f"{t}*"
    return (f"{pointer} = reinterpret_cast<{cast}>(::gl_emu::dynamic_shared);" + "\n" * m.group(0).count("\n"))


_ALIGNMENT = r"(?:__align__|alignas)\s*\((?P<{}>(?:[^()]|\([^()]*\))*)\)\s*"


# the type of a __shared__ declaration: `float`, `unsigned int`, `float4`, `Tile<T, 4>`, a qualified one with
# template arguments a level deep (`typename cub::BlockReduce<float, 256>::TempStorage`)
_TEMPLATE_ARGS = r"(?:\s*<(?:[^<>;{}\n]|<[^<>;{}\n]*>)*>)?"
_SHARED_TYPE = (r"(?:typename\s+|(?:struct|class|union)\s+)?(?:(?:const|volatile|unsigned|signed|short|long)\s+)*"
                r"(?:::)?[A-Za-z_]\w*"
                + _TEMPLATE_ARGS + r"(?:::[A-Za-z_]\w*" + _TEMPLATE_ARGS + r")*")


# `__shared__ T name[N]...;` (one array, one line): becomes a reference into the runtime's shared arena,
# so that the memory check knows its bounds. Other forms (scalars, several names) stay plain statics.
_SHARED_ARRAY = re.compile(
    r"(?<![\w.])(?:" + _ALIGNMENT.format("n0") + r")?(?:static\s+)?__shared__\s+"
    r"(?:" + _ALIGNMENT.format("n1") + r")?"
    r"(?P<type>" + _SHARED_TYPE + r"(?:[ \t]*\*+)?)[ \t]*(?<=[ \t*])"
    r"(?:" + _ALIGNMENT.format("n2") + r")?"
    r"(?P<name>[A-Za-z_]\w*)[ \t]*(?P<dims>(?:\[[^\[\];{}\n]+\][ \t]*)+);")


# `__shared__ T name;` (one scalar, one line): a reference to a one-element array of the arena, so that racecheck
# sees its accesses as it sees an array's
_SHARED_SCALAR = re.compile(
    r"(?<![\w.])(?:" + _ALIGNMENT.format("n0") + r")?(?:static\s+)?__shared__\s+"
    r"(?:" + _ALIGNMENT.format("n1") + r")?"
    r"(?P<type>" + _SHARED_TYPE + r"(?:[ \t]*\*+)?)[ \t]*(?<=[ \t*])"
    r"(?:" + _ALIGNMENT.format("n2") + r")?"
    r"(?P<name>[A-Za-z_]\w*)[ \t]*;")


# `__shared__ T a[N], b[M];` (several declarators on one line): one declaration each, so that every array is one of
# the arena's (the memory check's bounds, racecheck, shared-window addresses) as a declaration of its own is
_SHARED_MULTI = re.compile(
    r"(?P<head>(?<![\w.])(?:" + _ALIGNMENT.format("m0") + r")?(?:static\s+)?__shared__\s+"
    r"(?:" + _ALIGNMENT.format("m1") + r")?" + r"(?:" + _SHARED_TYPE + r")[ \t]+"
    r"(?:" + _ALIGNMENT.format("m2") + r")?)"
    r"(?P<decls>[A-Za-z_]\w*[ \t]*(?:\[[^\[\];{}\n]+\][ \t]*)*"
    r"(?:,[ \t]*[A-Za-z_]\w*[ \t]*(?:\[[^\[\];{}\n]+\][ \t]*)*)+);")


def _split_shared(source: str) -> str:
    def one(m):
        head = m.group("head")
        return " ".join(f"{head}{d.strip()};" for d in _split_top(m.group("decls"), ","))
    return _SHARED_MULTI.sub(one, source) if "__shared__" in source else source


def _alignment(m, name):
    """The alignment a __shared__ declaration asks for, as code: 0 for none; a number or an expression as
    written; a type through a probe struct declared just before (alignas(float4) is alignas(alignof(float4)))."""
    for group in ("n0", "n1", "n2"):
        spec = m.group(group)
        if spec is not None and spec.strip():
            spec = spec.strip()
            return (f"struct alignas({spec}) gl_alignment_of_{name} {{}}; ",
                    f"alignof(gl_alignment_of_{name})")
    return "", "0"


_STATIC_QUALIFIED = re.compile(r"\bstatic(\s+)(?=__shared__|__constant__)")
# CUDA's __noinline__ as a declaration's specifier; not where it names the attribute itself, as libstdc++ writes it
# (__attribute__((__noinline__)), [[__gnu__::__noinline__]]), which a macro for it would break (<bits/stdc++.h>)
_NOINLINE = re.compile(r"\b__noinline__\b")
# A __device__ or __constant__ variable (not a function, not const): kept in one section of the library, which
# the launch copies in and back, so that its value lasts from one launch of the module to the next, as on a
# GPU, and the host can read and write it between launches (Module.get_global).
_DEVICE_VARIABLE = re.compile(r"\b(?:__device__|__constant__)(?=\s+(?:(?:static|volatile|unsigned|signed|long|short|struct)\s+|"
                              r"(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)\s*)*"
                              r"[A-Za-z_][\w:]*(?:\s*<[^<>;{}()]*>)?[\s*]+[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*"
                              r"(?:=\s*(?:\{[^;]*\}|[^;{}]*))?"
                              r"(?:\s*,[\s*]*[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*(?:=\s*(?:\{[^;{}]*\}|[^;{},]*))?)*\s*;)")


# The one inline-PTX form the emulator runs: a special register read into a variable,
# `asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));` (laneid, warpid, smid, nsmid, the lane masks, the clocks,
# dynamic_smem_size), rewritten into a call of the runtime's ptx_sreg_<name>(); any other asm is refused by name.
_PTX_SREGS = ("laneid", "warpid", "nwarpid", "smid", "nsmid", "lanemask_eq", "lanemask_lt", "lanemask_le",
              "lanemask_gt", "lanemask_ge", "clock64", "clock_hi", "clock", "globaltimer_lo", "globaltimer",
              "dynamic_smem_size")
_PTX_SREG = re.compile(
    r"\basm\s*(?:volatile\s*|__volatile__\s*)?\(\s*\"\s*mov\.[bsu](?:32|64)\s+%0\s*,\s*%%(?P<reg>"
    + "|".join(_PTX_SREGS) + r")\s*;?\s*(?:\\n)?\s*\"\s*:\s*\"=[rl]\"\s*\(\s*(?P<out>[^()]+?)\s*\)\s*\)")


def _special_registers(source: str) -> str:
    return _PTX_SREG.sub(lambda m: f"(void)(({m.group('out')}) = ::gl_emu::ptx_sreg_{m.group('reg')}())", source)


# Any other asm statement inside a function becomes a stop when a thread reaches it (gl_emu::unsupported names
# its first instruction and the line), so that the file's other kernels still build and run; asm at namespace
# scope is refused when the file is built (UNSUPPORTED).
_ASM = r"\b(?:asm|__asm__|__asm)\b\s*(?:(?:volatile|__volatile__|inline|goto)\b\s*)*\("
_ASM_SCAN = re.compile(r'"(?:\\.|[^"\\\n])*"|' + r"'(?:\\.|[^'\\\n])*'|" + _ASM + r"|[{}():]")


def _asm_statements(source: str) -> list:
    """[(start, end, its template: the PTX, or None)] of the asm statements inside a function body (brace depth
    > 0), each span from `asm` to its closing parenthesis; comments are not searched."""
    found, depth, start, level, head, operands, macro = [], 0, None, 0, None, False, False
    text = strip_comments(source)
    defines = [(m.start(), m.end()) for m in _DEFINE.finditer(text)]
    for t in _ASM_SCAN.finditer(text):
        tok = t.group(0)
        if start is None:                             # outside an asm statement: count the braces
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth = max(depth - 1, 0)
            elif tok[0] not in "\"'():":                  # asm ... (
                start, level, head, operands = t.start(), 1, None, False
                macro = any(lo <= start < hi for lo, hi in defines)
            continue
        if tok[0] == '"' and not operands:            # (adjacent literals before the first `:` make the template)
            head = (head or "") + tok[1:-1]
        elif tok == ":":
            operands = True
        elif tok in ("(", "{"):
            level += 1
        elif tok in (")", "}"):
            level -= 1
            if level == 0:
                if depth > 0 or macro:                # (a macro's asm is a statement where the macro is used)
                    found.append((start, t.end(), head))
                start = None
    return found


# a #define directive, its continued lines included
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define\b(?:\\\n|[^\n])*", re.M)


# the asm statements whose meaning the emulator has (by their PTX, spaces and a final `;` aside): a compiler barrier,
# the memory fences, a trap
_ASM_KNOWN = {"": '__asm__("" ::: "memory")', "trap": "__trap()",
              "membar.cta": "__threadfence_block()", "membar.gl": "__threadfence()", "membar.sys": "__threadfence_system()",
              "fence.acq_rel.cta": "__threadfence_block()", "fence.sc.cta": "__threadfence_block()",
              "fence.acq_rel.gpu": "__threadfence()", "fence.sc.gpu": "__threadfence()",
              "fence.acq_rel.sys": "__threadfence_system()", "fence.sc.sys": "__threadfence_system()"}


_PTX_FIRST = re.compile(r"(?:^|[;{}])\s*(?:@!?\w+\s+)?([A-Za-z_][\w.]*)")


def _newlines(source: str, start: int, end: int) -> str:
    """The newlines of source[start:end], for what replaces it to keep every line's number: each continued as it
    was (inside a macro's definition a newline has its backslash)."""
    return "".join(" \\\n" if source[k - 1] == "\\" else "\n" for k in range(start, end) if source[k] == "\n")


# The instructions the emulator runs from the asm statement itself (gemmlab_ptx.h): a statement made of these
# alone becomes a call of gl_emu::ptx::run with its PTX text and its operands
_PTX_RUNS = ("mma.sync.", "ldmatrix.", "mbarrier.", "fence.", "membar.", "setmaxnreg.", "wgmma.", "mov.", "setp.",
             "selp.", "cvt.rna.tf32.f32", "cp.async.", "cp.reduce.async.bulk.tensor.", "bar.sync", "bar.arrive",
             "barrier.sync", "barrier.arrive", "barrier.cluster.", "mapa.", "elect.sync", "ld.shared", "ld.global", "ld.acquire", "ld.relaxed", "ld.weak",
             "ld.volatile", "st.shared", "st.global", "st.release", "st.relaxed", "st.weak", "st.volatile")


# PTX by which one block reaches another's results: a TMA reduction into global memory, GPU- or system-scoped
# loads, stores and fences (a block's blocks then run in one process, as with atomics: blocks_independent)
_PTX_ACROSS = re.compile(r"cp\.reduce\.async\.bulk|\.(?:acquire|release|relaxed|acq_rel|sc)\.(?:gpu|sys)\b|"
                         r"membar\.(?:gl|sys)\b|fence\.(?:sc|acq_rel)\.(?:gpu|sys)\b")


def _ptx_instructions(ptx: str) -> list:
    """The instructions of an asm template (its string literals joined): each statement's opcode, declarations,
    scopes and predicates aside."""
    found = []
    for statement in re.sub(r"\\[nt]", " ", ptx).split(";"):
        statement = re.sub(r"^@!?\w+\s+", "", statement.strip().lstrip("{} \t"))   # (a scope's braces before it)
        if statement and not statement.startswith(".reg"):
            found.append(statement.split()[0])
    return found


def runs_ptx(text: str) -> bool:
    """Whether a source has asm that gemmlab_ptx.h runs (the build then includes it: GL_EMU_PTX)."""
    return any(ptx is not None and _ptx_runs(ptx) for _, _, ptx in _asm_statements(text))


def _ptx_runs(ptx: str) -> bool:
    ops = _ptx_instructions(ptx)
    return bool(ops) and all(op.startswith(_PTX_RUNS) for op in ops)


_ASM_PIECES = re.compile(r'"(?:\\.|[^"\\\n])*"|' + r"'(?:\\.|[^'\\\n])*'|[()\[\]{}:,]|\\\n|\n")


def _split_top(text: str, sep: str) -> list:
    """text split at the separators outside strings and brackets (a backslash-newline or a newline is a space)."""
    parts, depth, last, out = [], 0, 0, []
    for m in _ASM_PIECES.finditer(text):
        tok = m.group(0)
        if tok in ("(", "[", "{"):
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        elif tok == sep and depth == 0:
            parts.append(text[last:m.start()])
            last = m.end()
    parts.append(text[last:])
    for part in parts:
        out.append(re.sub(r"\\\n|\n", " ", part))
    return out


_OPERAND = re.compile(r'\s*("(?:\\.|[^"\\])*")\s*\((.*)\)\s*$', re.S)


_ELEMENT = re.compile(r"^([A-Za-z_][\w.]*(?:->[A-Za-z_]\w*)*)\s*\[\s*(\d+)\s*\]$")
_RUN_LEAST = 8


def _element_run(pieces, i):
    """How many output operands from pieces[i] on are one array's elements in order (`"+f"(d[4]), "+f"(d[5]),
    ...`) with the same constraint: 0 where pieces[i] is not such an element."""
    out, constraint, expression = pieces[i]
    m = _ELEMENT.match(expression)
    if not out or m is None:
        return 0
    base, first = m.group(1), int(m.group(2))
    n = 1
    while i + n < len(pieces):
        o, c, e = pieces[i + n]
        k = _ELEMENT.match(e)
        if not o or c != constraint or k is None or k.group(1) != base or int(k.group(2)) != first + n:
            break
        n += 1
    return n


def _ptx_call(statement: str):
    """An asm statement (`asm volatile ( template : outputs : inputs : clobbers )`) as a call of gl_emu::ptx::run
    on one line, or None where its operands are in a form the runtime does not take (named operands)."""
    head = re.match(_ASM, statement)
    inner = statement[head.end():statement.rstrip().rfind(")")]
    sections = _split_top(inner, ":")
    template = sections[0].strip()
    pieces = []                                  # (out?, constraint, expression)
    for k, section in enumerate(sections[1:3]):
        for piece in _split_top(section, ","):
            if not piece.strip():
                continue
            m = _OPERAND.match(piece)
            if m is None:
                return None
            pieces.append((k == 0, m.group(1), m.group(2).strip()))
    operands, i = [], 0
    while i < len(pieces):
        out, constraint, expression = pieces[i]
        run = _element_run(pieces, i)
        if run >= _RUN_LEAST:                    # x[j], x[j + 1], ...: one entry for them all (wgmma's accumulators)
            base, first = _ELEMENT.match(expression).groups()
            operands.append(f"::gl_emu::ptx::outs({constraint}, &({base})[{first}], {run})")
            i += run
            continue
        operands.append(f"::gl_emu::ptx::{'out' if out else 'in'}({constraint}, ({expression}))")
        i += 1
    call = f"::gl_emu::ptx::run({template}, __FILE__, __LINE__, {{{', '.join(operands)}}})"
    # PTX that reaches other blocks marks the module where the code holding it is compiled in (GL_ACROSS_BLOCKS):
    # a helper the kernels never call leaves their blocks free to run in several processes
    return f"(::gl_emu::across_blocks(), {call})" if _PTX_ACROSS.search(strip_comments(template)) else call


def _asm_stops(source: str, blank: bool = False) -> str:
    """The source with each asm statement in a function replaced by what it does (_ASM_KNOWN), by a call of the
    PTX runtime (_PTX_RUNS) or by a call of gl_emu::unsupported naming its first instruction (with blank=True, by
    spaces: the feature scan's view), every newline kept."""
    out, last = [], 0
    for start, end, ptx in _asm_statements(source):
        lines = _newlines(source, start, end)
        out.append(source[last:start])
        known = None if ptx is None else _ASM_KNOWN.get(re.sub(r"\\n|\\t|;", " ", ptx).strip())
        call = None if blank or ptx is None or not _ptx_runs(ptx) else _ptx_call(source[start:end])
        if blank:
            out.append(" " * (end - start - len(lines)) + lines)
        elif known is not None:
            out.append(known + lines)
        elif call is not None:
            out.append(call + lines)
        else:
            first = _PTX_FIRST.search(re.sub(r"\\[nt]", " ", ptx or ""))     # (its first instruction, not a .reg)
            out.append(f'::gl_emu::unsupported("inline PTX assembly (asm)", "asm(\\"{first.group(1) if first else ""} '
                       f'...\\")"){lines}')
        last = end
    out.append(source[last:])
    return "".join(out)


_SPACES = re.compile(r"\s*")


def _launch_stops(source: str) -> str:
    """Each kernel launch written in the source (``name<T><<<grid, block, shared, stream>>>(args)``) replaced by a
    call of gl_emu::unsupported: one in a kernel or device function (dynamic parallelism) stops the thread that
    reaches it, by name; one in host code left in a kernel's file (a launcher in a header) builds and never runs,
    as gemmlab launches the kernels from Python. Every newline is kept."""
    if "<<<" not in source:
        return source
    text = strip_comments(source)
    out, last, at = [], 0, 0
    while (start := text.find("<<<", at)) >= 0:
        close = text.find(">>>", start + 3)
        paren = _SPACES.match(text, close + 3).end() if close >= 0 else -1
        if close < 0 or paren >= len(text) or text[paren] != "(":
            at = start + 3
            continue
        depth, end = 0, paren
        for end in range(paren, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        begin = start                            # back over the kernel's name: `ns::k<T, 4>`
        while begin > 0 and text[begin - 1].isspace():
            begin -= 1
        if begin > 0 and text[begin - 1] == ">":
            level = 0
            while begin > 0:
                begin -= 1
                level += {">": 1, "<": -1}.get(text[begin], 0)
                if level == 0:
                    break
        while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "_:"):
            begin -= 1
        lines = _newlines(source, begin, end + 1)
        out.append(source[last:begin])
        out.append(f'::gl_emu::unsupported("launching kernels from a kernel (dynamic parallelism)", "<<<...>>>")'
                   f'{lines}')
        last = at = end + 1
    out.append(source[last:])
    return "".join(out)


def _noinline(source: str) -> str:
    """``__noinline__`` as a specifier becomes ``__attribute__((noinline))``; inside an attribute's list it is left."""
    def one(m):
        before = source[max(0, m.start() - 200):m.start()].rstrip()
        return m.group(0) if before.endswith(("(", ",", "::")) else "__attribute__((noinline))"
    return _NOINLINE.sub(one, source) if "__noinline__" in source else source


def translate(source: str) -> str:
    """Rewrite what the compatibility header cannot express; every line keeps its number."""
    source = _launch_stops(_asm_stops(_special_registers(source)))
    source = _STATIC_QUALIFIED.sub(r"\1", source)        # __shared__ is static already; __constant__ is global
    source = _noinline(source)
    source = _DEVICE_VARIABLE.sub("GL_DEVICE_VARIABLE", source)
    source = _EXTERN_SHARED.sub(_extern_shared, source)
    source = _split_shared(source)

    def shared(m):
        if "\n" in m.group(0):
            return m.group(0)
        t, name, dims = m.group("type"), m.group("name"), m.group("dims").strip()
        probe, align = _alignment(m, name)
        return (f"{probe}static {t} (&{name}){dims} = *::gl_emu::shared_array<{t}{dims}>"
                f"(\"{name}\", __FILE__, __LINE__, {align});")
    source = _SHARED_ARRAY.sub(shared, source)

    def scalar(m):
        t, name = m.group("type"), m.group("name")
        if t in ("const", "volatile"):
            return m.group(0)                 # (no type: not C++, left for the compiler to say so)
        probe, align = _alignment(m, name)
        return (f"{probe}static {t}& {name} = (*::gl_emu::shared_array<{t}[1]>(\"{name}\", __FILE__, __LINE__, "
                f"{align}))[0];")
    return _SHARED_SCALAR.sub(scalar, source)


def _find_unsupported(module, preprocess=None):
    """Refuse, by name, a feature the emulator cannot run. The scan reads the source as written; where it
    finds something, ``preprocess()`` (the compiler's preprocessor, with __CUDA_ARCH__ and the rest
    defined) confirms it is really compiled, so code under ``#if`` that the build leaves out is no reason."""
    texts = [(module.display, module.source)] + [(str(p), t) for p, t in module.headers.items()]
    hits = []
    for name, text in texts:
        clean = _PTX_SREG.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), strip_comments(text))   # (it runs)
        clean = _asm_stops(clean, blank=True)         # (a stop when reached: the file builds)
        for pattern, what in UNSUPPORTED:
            for m in re.finditer(pattern, clean):
                hits.append((name, clean.count("\n", 0, m.start()) + 1, m.group(0).rstrip("(").strip(), what, pattern))
    if not hits:
        return
    # (an #include is gone from the preprocessor's output, and a header that is not there stops it: such a hit
    # is refused as the source has it)
    compiled = preprocess() if preprocess is not None and any(not h[4].startswith("#") for h in hits) else None
    for name, line, found, what, pattern in hits:
        if compiled is not None and not pattern.startswith("#"):
            text = compiled.get(name, {}).get(line)
            if text is None or not re.search(pattern, text):
                continue                      # not in what the compiler sees
        raise module.compile_error(
            f"{name}({line}): error: the CPU emulator does not support {what}: {found}\n", "the kernel")


def _preprocessed(command, unit: str, origin: str, module, cache: Path) -> dict:
    """{file: {line: text}} of the user's files as the compiler's preprocessor leaves them."""
    # (the preprocessor's line markers write a name as a C string: escaped as the #line directives are)
    names = {_c_string(origin): module.display, **{_c_string(str(p)): str(p) for p in module.headers}}
    build = _unit_folder(cache, unit, module.display)
    try:
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


def _instance_text(signature, expr: str, text: str) -> str:
    """An attribute's argument of a kernel template, with this instance's template arguments in place."""
    _, args = parse_name_expression(expr) if not expr.startswith("(") else (None, [])
    for t, value in zip(signature.template, args):
        text = re.sub(rf"\b{re.escape(t.name)}\b", f"({value})", text)
    for t in signature.template[len(args):]:
        if t.default is not None:
            text = re.sub(rf"\b{re.escape(t.name)}\b", f"({t.default})", text)
    return text


def _using(signature) -> str:
    space = signature.name.rsplit("::", 1)[0] if "::" in signature.name else ""
    return f"using namespace {space}; " if space else ""


def _launch_bounds_function(signature, expr: str, symbol: str) -> str:
    """C++ that returns the first __launch_bounds__ argument of this instance, for the compiler to evaluate
    (constants, macros, constexpr expressions and template arguments alike); '' without launch bounds."""
    if not signature.launch_bounds:
        return ""
    text = _instance_text(signature, expr, signature.launch_bounds[0])
    return f"GL_EXPORT long {symbol}_max_threads() {{ {_using(signature)}return (long)({text}); }}"


def _cluster_function(signature, expr: str, symbol: str) -> str:
    """C++ that gives this instance's __cluster_dims__ (x, y, z; 1 where not given), for the compiler to evaluate;
    '' without them."""
    if not signature.cluster_dims:
        return ""
    dims = [_instance_text(signature, expr, d) for d in signature.cluster_dims][:3]
    dims += ["1"] * (3 - len(dims))
    body = " ".join(f"d[{i}] = (unsigned long long)({d});" for i, d in enumerate(dims))
    return f"GL_EXPORT GL_NOSAN void {symbol}_cluster(unsigned long long* d) {{ {_using(signature)}{body} }}"







_loaded = {}


def _memcheck_setting() -> bool:
    """GEMMLAB_EMULATOR_MEMCHECK: 1 (the default) checks every memory access where the compiler can, 0 does not."""
    setting = os.environ.get("GEMMLAB_EMULATOR_MEMCHECK", "1").strip()
    if setting not in ("0", "1"):
        raise ValueError(f"GEMMLAB_EMULATOR_MEMCHECK={setting!r} must be 1 (check every memory access, the "
                         f"default) or 0 (do not)")
    return setting == "1"


def _memcheck_flags(cxx: str) -> tuple:
    """The memory check's flags where this compiler and machine support it (g++, x86-64 Linux), else ()."""
    import platform
    if not _memcheck_setting():
        return ()
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    if not _is_gcc(cxx):
        return ()
    return MEMCHECK_FLAGS


def _symbols_function(names) -> list:
    """gl_emu_symbols(where, sizes): the address and size of each of the module's namespace-scope variables
    (module.variable_names order), so that the host can find each one in the library's section of them."""
    if not names:
        return []
    where = ", ".join(f"(const void*)&::{n}" for n in names)
    sizes = ", ".join(f"sizeof(::{n})" for n in names)
    return ["GL_EXPORT GL_NOSAN unsigned gl_emu_symbols(const void** where, unsigned long long* sizes) {",
            f"    const void* w[] = {{{where}}}; const unsigned long long z[] = {{{sizes}}};",
            f"    for (unsigned i = 0; i < {len(names)}; ++i) {{ where[i] = w[i]; sizes[i] = z[i]; }}",
            f"    return {len(names)}u; }}"]


def compile(module, expr: str, signature, racecheck: bool = False):
    """Build one kernel instance for the emulator; ``racecheck=True`` records every shared-memory access
    and reports hazards between threads (needs the memory check: g++ on x86-64 Linux)."""
    symbol = "gl_emu_kernel_" + hashlib.sha256(expr.encode()).hexdigest()[:12]
    function = expr if expr.startswith("(") else "&" + expr        # the kernel's address, as invoke takes it
    launcher = [
        f"GL_EXPORT void {symbol}(void** args) {{ ::gl_emu::invoke({function}, args); }}",
        f"GL_EXPORT GL_NOSAN unsigned {symbol}_sizes(unsigned long long* out) {{ return ::gl_emu::param_sizes({function}, out); }}",
        _launch_bounds_function(signature, expr, symbol),
        _cluster_function(signature, expr, symbol),
        "GL_EXPORT long gl_emu_fork_launch(void (*body)(void**), const char* kernel, const unsigned* grid,",
        "                                  const unsigned* block, unsigned long long shared, void** args,",
        "                                  ::gl_emu::Status* status, const ::gl_emu::Region* regions,",
        "                                  unsigned region_count, unsigned long long first,",
        "                                  unsigned long long count, int out)",
        "{ return ::gl_emu::fork_launch(body, kernel, grid, block, shared, args, status, regions, region_count,",
        "                               first, count, out); }",
    ]
    library, lib, memcheck = _library(module, launcher, expr, signature.line, racecheck)
    bound = getattr(lib, f"{symbol}_max_threads", None) if signature.launch_bounds else None
    if bound is not None:
        bound.restype = ctypes.c_long
    fn = EmulatedFunction(lib, symbol, expr, bound() if bound is not None else None, library,
                          "-DGL_EMU_MEMCHECK=1" in memcheck)
    fn.racecheck = "-DGL_EMU_RACECHECK=1" in memcheck
    cluster = getattr(lib, f"{symbol}_cluster", None) if signature.cluster_dims else None
    if cluster is not None:
        dims = (ctypes.c_ulonglong * 3)()
        cluster(dims)
        fn.cluster_dims = tuple(int(d) for d in dims)
    fn.module = module
    fn.raise_hazards = fn.racecheck and not racecheck      # the setting: hazards are errors
    return fn


def variables_library(module):
    """The module's source built with no kernel, for its variables alone (Module.get_global before any of its
    kernels is built): the loaded library."""
    return _library(module, [], "the module's variables", 1, False)[1]


def _library(module, launcher: list, expr: str, kernel_line: int, racecheck: bool):
    """(path, loaded library, memcheck flags) of the module's source with `launcher` after it, built (or found
    in the cache) with the flags this machine and the settings ask for. The module's variables are named after
    it (gl_emu_symbols); where that does not compile (a variable the parser found under an #if the build leaves
    out), the library is built without them, and get_global says it cannot reach them."""
    names = module.variable_names
    try:
        built = _library_with(module, launcher, expr, kernel_line, racecheck, names)
    except CompileError:
        if not names:
            raise
        built = _library_with(module, launcher, expr, kernel_line, racecheck, [])
        names = []
    built[1]._gl_names = names
    return built


def _library_with(module, launcher: list, expr: str, kernel_line: int, racecheck: bool, names: list):
    _check_platform()
    cxx = _compiler()
    origin = str(module.path) if module.path is not None else "<code>"
    # a source that declares memcpy, memmove or memset itself keeps its own (the emulator's checked ones are
    # macros of those names: gemmlab_emu.h)
    texts = (module.source, *module.headers.values())
    own = [name for name in ("memcpy", "memmove", "memset")
           if any(re.search(rf"\bvoid\s*\*\s*(?:__\w+\s+)*{name}\s*\(", strip_comments(t)) for t in texts)]
    unit = "\n".join([
        '#include "gemmlab_emu.h"',
        *(f"#undef {name}" for name in own),
        f'#line 1 "{_c_string(origin)}"',
        translate(module.source),
        "",
        f"#line {LAUNCHER_LINE} \"<gemmlab emulator launcher>\"",
        *launcher,
        *_symbols_function(names),
        "",
    ])
    includes = [f"-I{HERE}", f"-I{_STAND_INS}", f"-I{HOST_LIBRARIES}", f"-I{KERNELS}"]
    if module.path is not None:
        includes.append(f"-I{module.path.parent}")
    memcheck = _memcheck_flags(cxx)
    if racecheck or _racecheck_setting():
        if not memcheck:
            raise BackendError("the emulator's racecheck rides on its memory check, which needs g++ on x86-64 "
                               "Linux (and GEMMLAB_EMULATOR_MEMCHECK not 0)")
        memcheck = (*memcheck, "-DGL_EMU_RACECHECK=1")
    interleave = _interleave_setting()
    if interleave or any(_VOLATILE.search(_asm_stops(_special_registers(strip_comments(text)), blank=True))
                         for text in (module.source, *module.headers.values())):    # (not `asm volatile`)
        if not _is_gcc(cxx) or not _accepts(cxx, LOCKSTEP_FLAGS):
            why = ("GEMMLAB_EMULATOR_INTERLEAVE=1 (warps interleaved access by access)" if interleave else
                   "uses volatile memory (warp-synchronous code): the emulator runs such code in lockstep warps, "
                   "as a GPU does,")
            raise BackendError(f"{expr} {why} only when it compiles with g++ 11 or later "
                               f"(ThreadSanitizer's tsan-distinguish-volatile); {cxx} is not that: install it "
                               f"and set CXX=g++")
        memcheck = (*(f for f in memcheck if f.startswith("-D")), *LOCKSTEP_FLAGS,
                    *(("-DGL_EMU_INTERLEAVE=1",) if interleave else ()))
    link = LINUX_FLAGS if sys.platform.startswith("linux") else ()
    flags = FLAGS
    if "-DGL_EMU_RACECHECK=1" in memcheck:
        # unoptimised: the optimiser drops a check that an earlier one of the same address dominates, and
        # racecheck must see every access (a read, then a write of the same word, are two events)
        flags = tuple("-O0" if f == "-O2" else f for f in FLAGS)
    from ..profiles import current
    # the emulated GPU's __CUDA_ARCH__ (GEMMLAB_DEVICE's profile; the header's default is the H200's 900), for
    # code that asks for it (its own text, its headers, or <mma.h>, whose fragments depend on it): other
    # kernels build once for every profile
    asks = any("__CUDA_ARCH__" in t or _MMA_INCLUDE.search(t) for t in texts)
    arch = (f"-D__CUDA_ARCH__={current().cuda_arch}",) if asks else ()
    if any("%%smid" in t or "%%nsmid" in t for t in texts):        # what those special registers give
        arch += (f"-DGL_EMU_SM_COUNT={current().sm_count}",)
    if any(_clusters_of_more_than_one(strip_comments(t)) for t in texts):   # (cooperative_groups.h's this_cluster)
        arch += ("-DGL_EMU_CLUSTERS=1",)
        _one_static_per_block(module)
    if any(_HEAP_USE.search(strip_comments(t)) for t in texts):      # its blocks in one process (blocks_independent)
        arch += ("-DGL_EMU_HEAP_USER=1",)
    if any(runs_ptx(t) for t in texts):                               # the inline-PTX runtime (gemmlab_ptx.h)
        arch += ("-DGL_EMU_PTX=1",)
    loops = NO_FINITE_LOOPS if _takes_no_finite_loops(cxx) else ()
    loops += CHECK_NEW if _takes_check_new(cxx) else ()
    # the module's compiler options but the GPU architecture it is compiled for (-arch=sm_90a: the emulator's
    # architecture is the profile's, given above)
    options = [o for o in module.options if not o.startswith(("-arch=", "--gpu-architecture=", "-gencode"))]
    command = [cxx, *flags, *loops, *memcheck, *link, *arch, *includes, *options]
    digest = hashlib.sha256()
    for part in (_runtime_digest(), unit, "\0".join(command), _compiler_version(cxx), repr(UNSUPPORTED),
                 *(f"{p}\n{t}" for p, t in sorted(module.headers.items()))):
        digest.update(part.encode())
    key = digest.hexdigest()[:24]
    for attempt in range(3):
        cache = _cache_dir()
        library = _valid_entry(cache, key)
        if library is None:
            try:
                with _building(cache, key):          # one process builds a key at a time; the others wait and load it
                    library = _valid_entry(cache, key)
                    if library is None:
                        # (a cache entry passed this scan when it was built: the scan's patterns are in its key)
                        _find_unsupported(module, lambda: _preprocessed(command, unit, origin, module, cache))
                        library = _build(cache, key, command, unit, module, expr, origin, kernel_line,
                                         _precompiled(cache, cxx, command))
            except MachineError as exc:
                if cache == _private_cache or not getattr(exc, "disk", False):
                    raise
                # the cache failed (full, read-only): this process builds in a private one from now on, with a
                # notice, and says so in an error only when that fails too
                _fall_back(cache, exc.why)
                continue
        try:
            lib = _loaded.get(library)
            if lib is None:
                lib = _loaded[library] = ctypes.CDLL(str(library))
            return library, lib, memcheck
        except OSError:
            # removed or replaced by another process between the check and the load: check again
            _loaded.pop(library, None)
            if attempt == 2:
                raise


LAUNCHER_LINE = 100000
_MMA_INCLUDE = re.compile(r'#\s*include\s*[<"]mma\.h[>"]')
_CLUSTER_DIMS = re.compile(r"\b__cluster_dims__\s*\(([^()]*)\)")


def _one_static_per_block(module):
    """In a module with clusters, every __shared__ variable must be one of the arena's (translate): a cluster's
    blocks run at once, and a plain static would be one variable for all of them. A form translate leaves (a
    declaration over several lines) is refused by name."""
    for name, text in [(module.display, module.source), *((str(p), t) for p, t in module.headers.items())]:
        clean = strip_comments(translate(text))
        for m in re.finditer(r"\b__shared__\b", clean):
            line = clean.count("\n", 0, m.start()) + 1
            raise CompileError(f"{name}:{line}: a __shared__ declaration the emulator can give each block of a "
                               f"cluster its own copy of only when it is written on one line (this module declares "
                               f"clusters of more than one block)")


def _clusters_of_more_than_one(text: str) -> bool:
    """Whether a source declares a kernel's clusters of more than one block (__cluster_dims__(2, 1, 1); dimensions
    that are not plain numbers count as more)."""
    for m in _CLUSTER_DIMS.finditer(text):
        dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
        if not all(d.isdigit() for d in dims) or any(int(d) > 1 for d in dims):
            return True
    return False


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
        return library if _unchanged(manifest["dependencies"]) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None                            # missing, damaged or foreign: rebuilt


def _unchanged(dependencies) -> bool:
    """Whether every file of a build's list (path, size, time, checksum) is as it was; raises OSError for one
    that is gone."""
    for path, size, mtime_ns, sha in dependencies:
        st = os.stat(path)
        if st.st_size != size or (st.st_mtime_ns != mtime_ns and _sha256(Path(path)) != sha):
            return False
    return True


def _c_string(text: str) -> str:
    """A file name as the inside of a C string literal (a #line directive's): backslashes, quotes and newlines
    escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _precompiled(cache: Path, cxx: str, command) -> tuple | None:
    """(folder, dependencies): the runtime header (gemmlab_emu.h, and gemmlab_ptx.h where the build defines
    GL_EMU_PTX) precompiled by g++ with exactly this build's compile flags, made once into the cache and shared
    by every kernel built with them: a build then parses none of it (about 0.2 s of a small kernel's 0.9 s, and
    0.6 to 1.3 s of an inline-PTX kernel's 3 to 4 s, measured on two cores). None where the compiler is not g++
    or it fails: the header is then read as text, as before."""
    if not _is_gcc(cxx):
        return None
    flags = [c for c in command[1:] if c != "-shared" and not c.startswith("-Wl,")]      # (the compile's own)
    digest = hashlib.sha256("\0".join([_runtime_digest(), _compiler_version(cxx), *flags]).encode()).hexdigest()[:24]
    folder = cache / "pch" / digest
    done = folder / "dependencies.json"

    def current():                   # its list of files, if it is there and none of them has changed since
        try:
            deps = json.loads(done.read_text())
            return deps if (folder / "gemmlab_emu.h.gch").is_file() and _unchanged(deps) else None
        except (OSError, ValueError, TypeError):
            return None
    deps = current()
    if deps is None:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        with _building(cache, f"pch-{digest}"):
            deps = current()
            if deps is None:
                _precompile(folder, cxx, flags)      # (made again when a system header it read has changed)
                deps = current()
    return (folder, deps) if deps is not None else None


def _precompile(folder: Path, cxx: str, flags: list) -> None:
    """Make folder/gemmlab_emu.h.gch and its list of dependencies (published last); nothing on failure."""
    try:
        build = _build_folder(folder.parent.parent).resolve()              # (swept if left)
    except OSError:
        return                                     # (no room: the header is read as text)
    try:
        (build / "runtime").symlink_to(HERE, target_is_directory=True)      # (plain names, as _build's)
        for header in ("gemmlab_emu.h", "gemmlab_ptx.h"):   # an include after the first finds the text here
            (build / header).symlink_to(HERE / header)
        proc = processes.run([cxx, *_plain_paths(build, flags), "-x", "c++-header", "runtime/gemmlab_emu.h",
                              "-MD", "-MF", "pch.d", "-o", "gemmlab_emu.h.gch"], capture_output=True, text=True,
                             cwd=build, group=True, env={**os.environ, "TMPDIR": str(build)})
        if proc.returncode != 0 or not (build / "gemmlab_emu.h.gch").is_file():
            return
        deps = _dependencies(build / "pch.d", build)
        (build / "pch.d").unlink()
        shutil.rmtree(folder, ignore_errors=True)   # (a half-made one: this process holds the key's lock)
        try:
            os.rename(build, folder)
        except OSError:                            # made by another process meanwhile: keep that one
            return
        atomic_write(folder / "dependencies.json", json.dumps(deps))
    except OSError:
        return
    finally:
        shutil.rmtree(build, ignore_errors=True)


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


def _real_folders(log: str, build: Path) -> str:
    """The compiler's messages with each include folder named by its path again, not by its link (I0/, I1/, ...)."""
    def real(m):
        link = build / f"I{m.group(1)}"
        return f"{link.resolve()}/" if link.is_symlink() else m.group(0)
    return re.sub(r"(?<![\w/.])I(\d+)/", real, log)


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
    translated = {Path(path): translate(text) for path, text in module.headers.items()}
    if all(translated[Path(path)] == text for path, text in module.headers.items()):
        return None
    roots = [r.resolve() for r in ([module.path.parent] if module.path is not None else []) + [KERNELS] +
             [Path(d) for d in include_dirs(module.options)]]
    # A header outside every root (#include "../common/scan.cu") keeps its place relative to the first root;
    # the mirror's root lies as many folders deep as such a path climbs, so that it stays under build/hdr.
    placed = {}
    for path in translated:
        root = next((r for r in roots if path.is_relative_to(r)), None)
        placed[path] = Path(path.relative_to(root)) if root is not None else Path(os.path.relpath(path, roots[0]))
    depth = max((len(rel.parts) - len(Path(*[q for q in rel.parts if q != ".."]).parts) for rel in placed.values()),
                default=0)
    mirror = build / "hdr" / Path(*(["_"] * depth)) if depth else build / "hdr"
    for path, text in translated.items():
        target = mirror / placed[path]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f'#line 1 "{_c_string(str(path))}"\n' + text)
    return mirror


@contextlib.contextmanager
def _building(cache: Path, key: str):
    """An exclusive lock on one cache key, across processes and threads (flock on a small file of its own, in the
    folder beside the cache, ``emulator-locks``): two builds of one kernel at once would each publish a library
    and remove the other's, which the other is about to load (tests on every core build the same kernels).
    A private cache is this process's alone, and takes no lock."""
    import fcntl
    handle = None
    if cache != _private_cache:
        try:
            locks = cache.with_name(cache.name + "-locks")
            locks.mkdir(exist_ok=True)
            handle = open(locks / key, "a")
        except OSError:                             # no room for a lock file: build unlocked, as before
            handle = None
    if handle is None:
        yield
        return
    with handle:
        # (a process killed while it holds the lock lets go of it as it dies: flock belongs to the open file)
        waited, told = time.monotonic(), False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and time.monotonic() - waited > 10:
                    told = True
                    try:
                        holder = Path(handle.name).read_text().strip() or "another process"
                    except OSError:
                        holder = "another process"
                    print(f"gemmlab: waiting for {holder}, which is building the same kernel in {cache}",
                          file=sys.stderr)
                time.sleep(0.05)
        try:
            try:
                handle.truncate(0)
                handle.write(f"process {os.getpid()}")
                handle.flush()
            except OSError:                         # (a full disk: the name is only for a waiting process's notice)
                pass
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(cache: Path, key: str, command, unit, module, expr, origin, kernel_line=1, pch=None) -> Path:
    """Compile into a private folder inside the cache (one filesystem: the renames are atomic), then publish
    the library under a name that carries its checksum, and last the manifest that vouches for it. ``pch``:
    the runtime header precompiled with these flags (:func:`_precompiled`), or None."""
    build = _unit_folder(cache, unit, expr)
    try:
        if pch is not None:                       # found first: the compiler takes it for the header
            at = command.index(f"-I{HERE}")
            command = [*command[:at], f"-I{pch[0]}", "-Winvalid-pch", *command[at:]]
        mirror = _mirror_headers(build, module)
        if mirror is not None:
            command = [command[0], f"-I{mirror}", *command[1:]]
        command = _plain_paths(build, command)
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
                said = proc.stderr
                if proc.returncode == 0:
                    proc = processes.run([c for c in command if c != "-fsanitize=thread"] + ["unit.o", "-o", rel_out],
                                         capture_output=True, text=True, cwd=build, group=True, env=scratch)
            else:
                proc = processes.run(full, capture_output=True, text=True, cwd=build, group=True, env=scratch)
                said = proc.stderr
        except OSError as exc:
            raise module.compile_error(f"the C++ compiler {command[0]} could not be run: {exc}", expr) from None
        if proc.returncode != 0 or not out.is_file():
            machine = _machine_failure(build, proc.stdout + proc.stderr, proc.returncode)
            if machine is not None:
                raise _cache_failure(cache, expr, machine)
            stderr = _real_folders(proc.stderr, build)
            log = _gcc_to_nvrtc(stderr, origin, expr, kernel_line)
            missing = _undefined(stderr, module.source, origin)
            if missing:
                log = missing
            elif not _DIAGNOSTIC.search(stderr):
                printed = (proc.stdout + stderr).strip() or "(it printed nothing)"
                log = (f"the C++ compiler {command[0]} failed with exit code {proc.returncode} while compiling "
                       f"{expr} for the CPU emulator; it printed:\n{printed}")
            raise module.compile_error(log, expr)
        sha = _sha256(out)
        library = cache / f"{key}-{sha[:16]}.so"
        # (with the header precompiled, the compiler names neither it nor what it includes: the precompiled
        # header's own list stands in for them)
        manifest = {"library": library.name, "sha256": sha, "kernel": expr, "source": origin,
                    "dependencies": _dependencies(dep, build) + (pch[1] if pch is not None else []),
                    "precompiled": pch is not None and "gemmlab_emu.h.gch" not in said}   # (-Winvalid-pch)
        try:
            os.replace(out, library)
            atomic_write(cache / f"{key}.json", json.dumps(manifest, indent=1) + "\n")
        except OSError as exc:
            if not (cache / f"{key}.json").is_file():
                library.unlink(missing_ok=True)   # no manifest vouches for it: leave nothing behind
            raise _cache_failure(cache, expr, _machine_words(exc)) from None
        for old in cache.glob(f"{key}-*.so"):
            if old != library:
                old.unlink(missing_ok=True)     # an earlier build of this key (a header changed since)
        return library
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _cache_failure(cache: Path, expr: str, why: str) -> MachineError:
    """The error of a build that the machine stopped (the build folder is removed by the caller): its disk (the
    error's ``disk`` is then True: another cache may do), or its memory, or a signal from outside."""
    disk = not why.startswith(("out of memory", "the C++ compiler was killed"))
    error = MachineError(f"the emulator could not build {expr}: its build cache {cache} could not be written "
                         f"({why}). This is the machine, not your kernel: free some space there, or set "
                         f"GEMMLAB_CACHE_DIR to a folder on another disk" if disk else
                         f"the emulator could not build {expr}: {why}. This is the machine, not your kernel: "
                         f"close what else uses memory, or build it again")
    error.disk, error.why = disk, why
    return error


@functools.lru_cache(maxsize=None)
def _undefined(log: str, source: str, origin: str) -> str | None:
    """The linker's "undefined reference" errors as one error at the declaration of each symbol: a function or
    variable declared (extern) in the source and defined nowhere in it. On a GPU its definition would come
    from another translation unit, which CUDA links only as relocatable device code (nvcc -rdc=true and a
    device link); a module here is one source."""
    names = []
    for m in re.finditer(r"undefined reference to [`'\u2018](?P<name>[^'`\u2019]+)['\u2019]", log):
        if m.group("name") not in names:
            names.append(m.group("name"))
    if not names:
        return None
    clean = strip_comments(source)
    out = []
    for name in names:
        bare = re.sub(r"\(.*$", "", name).split("::")[-1]
        found = re.search(r"\b" + re.escape(bare) + r"\b", clean)
        line = clean.count("\n", 0, found.start()) + 1 if found else 1
        out.append(f"{origin}({line}): error: {name} is declared but defined nowhere in this source: on a GPU its "
                   f"definition would come from another translation unit, which CUDA links only as relocatable "
                   f"device code (nvcc -rdc=true and a device link). A module here is one source: put the "
                   f"definition in it, or #include the file that has it")
    return "\n".join(out)


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


# A source that may take memory from the device heap (placement new included: a cheap over-estimate)
_HEAP_USE = re.compile(r"\bnew\b|\b(?:malloc|calloc)\s*\(|__nv_aligned_device_malloc")


def _takes_check_new(cxx: str) -> bool:
    """Whether the compiler has -fcheck-new (every g++; clang from 17), from the same version text."""
    text = _compiler_version(cxx)
    m = re.search(r"clang version (\d+)", text)
    return int(m.group(1)) >= 17 if m else "Free Software Foundation" in text


def _is_gcc(cxx: str) -> bool:
    """Whether the compiler is g++ (GCC's version text; a clang that calls itself g++ is not)."""
    version = _compiler_version(cxx)
    return "Free Software Foundation" in version and "clang" not in version.lower()


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except Exception:
        return cxx


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:\d+:)?\s*(?P<kind>fatal error|error):\s*(?P<msg>.*)$",
                         re.M)


def _emulator_header(file: str) -> str | None:
    """The name a kernel includes one of the emulator's CUDA headers by (cooperative_groups.h), or None."""
    try:
        return Path(file).resolve().relative_to(Path(_STAND_INS).resolve()).as_posix()
    except (ValueError, OSError):
        return None


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
        header = _emulator_header(file)
        if header:
            # in one of the emulator's CUDA headers (<cooperative_groups.h>): at the user's line that reached it
            file, line, msg = origin, user_line or str(kernel_line), f"{msg} (in the emulator's <{header}>)"
        elif file == "<gemmlab emulator launcher>" or Path(file).name == RUNTIME.name:
            file, line = origin, user_line or str(kernel_line)
            base = re.sub(r"<.*$", "", expr, flags=re.S).split("::")[-1].strip()
            hidden = re.fullmatch(r"[`'\u2018](?P<name>[^'`\u2019]+)['\u2019] was not declared in this scope.*", msg)
            if "the CPU emulator does not support" in msg:
                msg = re.sub(r"^static assertion failed:\s*", "", msg)
            elif base and hidden and hidden.group("name") == base:
                msg = (f"{base} is not in this build: its definition is under an #if (or #ifdef) that leaves it out "
                       f"as the compiler reads the source (the macros it is given, __CUDA_ARCH__ that of the emulated "
                       f"GPU)")
            else:
                msg = f"{msg} (while instantiating {expr} for the emulator: do its template arguments fit?)"
        out.append(f"{file}({line}): error: {msg}")
    return "\n".join(out) if out else log
