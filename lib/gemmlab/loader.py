"""Load a kernel source, compile one of its kernels, and check every launch before it is sent.

``gl.load("sgemm/01_naive.cu")`` (a path under ``kernels/``) or ``gl.load(code=...)`` gives a
:class:`Module`; ``module.get("name")``, ``module.get("name<16, 8>")`` or ``module.get("name", BM=16, BN=8)``
gives a :class:`Kernel`, called as CuPy's RawKernel is: ``kernel(grid, block, args, shared_mem=0)``.

The same front end serves both backends: the source is read once, its ``#include "..."`` files are
found under ``kernels/`` and hashed into the cache key (CuPy's own disk cache does not look at headers),
and the kernel's parameter list is parsed so that each launch can be checked in plain words before
anything reaches the device: thread and grid limits, shared memory, dtypes, contiguity, and Python
numbers converted to the C types the kernel declares (CuPy would pass a Python ``int`` as 64 bits).
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy

from . import hardware as hw
from .paths import KERNELS

_STAND_INS = Path(__file__).resolve().parent / "emulator" / "include"   # CUDA's system headers, as the emulator has them


class CompileError(RuntimeError):
    """A kernel failed to compile; the message shows file, line and the source around it."""


# ---------------------------------------------------------------------------------------------
# Parsing the source: comments, includes, kernel signatures
# ---------------------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"(?P<quoted>[^"]+)"|<(?P<angled>[^>]+)>)', re.M)
_KERNEL = re.compile(
    r"(?:template\s*<(?P<tpl>[^{};]*?)>\s*)?"
    r"(?:(?:static|extern\s+\"C\")\s+)?__global__\s+"
    r"(?:(?P<lb1>__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\))\s*)?void\s+"
    r"(?:(?P<lb2>__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\))\s*)?"
    r"(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)",
    re.S,
)

# C type -> (NumPy dtype of the elements, elements per value). Vector types point at plain arrays.
C_TYPES = {
    "float": (numpy.float32, 1), "double": (numpy.float64, 1), "__half": (numpy.float16, 1),
    "half": (numpy.float16, 1), "__half2": (numpy.float16, 2), "half2": (numpy.float16, 2), "int": (numpy.int32, 1), "int32_t": (numpy.int32, 1),
    # NumPy has no bfloat16: a __nv_bfloat16 array is passed as its bits, uint16 (gemmlab.ops.to_bf16_bits)
    "__nv_bfloat16": (numpy.uint16, 1), "nv_bfloat16": (numpy.uint16, 1), "__nv_bfloat162": (numpy.uint16, 2),
    "unsigned short": (numpy.uint16, 1), "short": (numpy.int16, 1), "uint16_t": (numpy.uint16, 1), "int16_t": (numpy.int16, 1),
    "unsigned": (numpy.uint32, 1), "unsigned int": (numpy.uint32, 1), "uint32_t": (numpy.uint32, 1),
    "long long": (numpy.int64, 1), "long long int": (numpy.int64, 1), "int64_t": (numpy.int64, 1),
    "long": (numpy.int64, 1), "unsigned long long": (numpy.uint64, 1), "uint64_t": (numpy.uint64, 1),
    "size_t": (numpy.uint64, 1), "char": (numpy.int8, 1), "unsigned char": (numpy.uint8, 1),
    "float2": (numpy.float32, 2), "float4": (numpy.float32, 4), "double2": (numpy.float64, 2),
    "int2": (numpy.int32, 2), "int4": (numpy.int32, 4),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__restrict", "__grid_constant__"}


def strip_comments(source: str) -> str:
    """Blank out comments, keeping every newline so that line numbers still match the file."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at separators that are not inside <>, () or []."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return [p for p in parts if p]


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str          # the base type, qualifiers removed: "float", "int", "T"
    pointer: bool


@dataclass(frozen=True)
class TemplateParam:
    kind: str           # "typename" or a value type such as "int"
    name: str
    default: str | None


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple
    template: tuple = ()
    line: int = 0
    launch_bounds: tuple = ()     # the __launch_bounds__ arguments as source text, if any
    param_text: str = ""          # the parameter list as written (names kept, defaults dropped)
    overloaded: bool = False      # another __global__ function has the same name

    def pointer_type(self) -> str:
        """``void(*)(...)``: names this one among overloads (a cast the compilers take as a name expression)."""
        return f"void(*)({self.param_text})"


def _parse_param(text: str) -> Param:
    text = re.sub(r"\s*=\s*[^,]*$", "", text)         # default arguments are not launchable anyway
    pointer = "*" in text or "&" in text
    tokens = [t for t in re.split(r"[\s*&]+", text) if t and t not in _QUALIFIERS]
    if len(tokens) < 2:
        return Param(name=tokens[0] if tokens else "?", ctype="?", pointer=pointer)
    return Param(name=tokens[-1], ctype=" ".join(tokens[:-1]), pointer=pointer)


_TYPE_WORDS = {"int", "float", "double", "char", "short", "long", "unsigned", "signed", "bool", "size_t", "void"}


def _param_type(text: str) -> tuple:
    """(base type, is pointer) of a parameter written with or without its name: "float* x", "float*",
    "unsigned int"."""
    text = re.sub(r"\s*=\s*[^,]*$", "", text)
    pointer = "*" in text or "&" in text
    if pointer:
        text = re.split(r"[*&]", text)[0] if not re.sub(r"^.*[*&]", "", text).strip() else text.rsplit(
            re.findall(r"[*&]", text)[-1], 1)[0]
    tokens = [t for t in re.split(r"[\s*&]+", text) if t and t not in _QUALIFIERS]
    if not pointer and len(tokens) >= 2 and tokens[-1] not in _TYPE_WORDS:
        tokens = tokens[:-1]                 # a name after the type
    return " ".join(tokens), pointer


def _parse_template(text: str) -> tuple:
    out = []
    for part in _split_top(text):
        default = None
        if "=" in part:
            part, default = (s.strip() for s in part.split("=", 1))
        words = part.split()
        out.append(TemplateParam(kind=" ".join(words[:-1]), name=words[-1], default=default))
    return tuple(out)


_NAMESPACE = re.compile(r"\bnamespace\s+((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)?\s*\{")


def _namespaces(clean: str) -> list:
    """(start, end, name) of every namespace block; name '' for an anonymous one."""
    spans = []
    for m in _NAMESPACE.finditer(clean):
        depth, i = 0, m.end() - 1
        while i < len(clean):
            if clean[i] == "{":
                depth += 1
            elif clean[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.start(), i, re.sub(r"\s+", "", m.group(1) or "")))
    return spans


def parse_kernels(source: str) -> dict:
    """Every ``__global__`` function of a source: qualified name (``ns::k``) -> :class:`Signature` (the last
    one, where a name is overloaded; :func:`parse_overloads` gives them all)."""
    return {sig.name: sig for sig in parse_overloads(source)}


def parse_overloads(source: str) -> list:
    """Every ``__global__`` function of a source, in order, overloads included (each marked as such)."""
    clean = strip_comments(source)
    spaces = _namespaces(clean)
    found = []
    for m in _KERNEL.finditer(clean):
        params = tuple(_parse_param(p) for p in _split_top(m.group("params")) if p.strip() != "void")
        template = _parse_template(m.group("tpl")) if m.group("tpl") else ()
        bounds = m.group("lb1") or m.group("lb2")
        bounds = tuple(_split_top(bounds[bounds.index("(") + 1:bounds.rindex(")")])) if bounds else ()
        where = m.start("name")
        outer = [name for start, end, name in sorted(spaces) if start < where < end and name]
        qualified = "::".join(outer + [m.group("name")])
        text = ", ".join(re.sub(r"\s*=\s*[^,]*$", "", p.strip()) for p in _split_top(m.group("params")))
        found.append(Signature(qualified, params, template, line=clean.count("\n", 0, where) + 1,
                               launch_bounds=bounds, param_text=" ".join(text.split())))
    names = [sig.name for sig in found]
    return [replace(sig, overloaded=names.count(sig.name) > 1) for sig in found]


_CAST = re.compile(r"\(\s*void\s*\(\s*\*\s*\)\s*\((?P<params>.*)\)\s*\)\s*(?P<name>(?:::)?[A-Za-z_][\w:]*)", re.S)


def parse_name_expression(expr: str) -> tuple:
    """``"k<16, float>"`` -> ``("k", ["16", "float"])``; ``"k"`` -> ``("k", [])``."""
    expr = expr.strip()
    m = re.fullmatch(r"(?:::)?((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*(?:<(.*)>)?", expr, re.S)
    if not m:
        raise ValueError(f"{expr!r} is not a kernel name or a template instance such as 'name<16, 16>' "
                         f"(or 'namespace::name<16>')")
    return re.sub(r"\s+", "", m.group(1)), _split_top(m.group(2)) if m.group(2) is not None else []


def find_includes(source: str, origin: Path | None, seen: dict | None = None, search: tuple = ()) -> dict:
    """All files a source includes from kernels/ or the given folders, transitively: resolved path -> text.

    ``#include "name"`` is looked up beside the including file first, then under ``kernels/`` and in
    ``search`` (the ``-I`` folders of the options); it must be found. ``#include <name>`` is looked up
    under ``kernels/`` and in ``search``; one found nowhere is a system header and is left to the
    compiler. Both forms count: editing any file found here changes the module's cache key.
    """
    seen = {} if seen is None else seen
    for m in _INCLUDE.finditer(strip_comments(source)):
        name = m.group("quoted") or m.group("angled")
        here = [origin.parent / name] if origin is not None and m.group("quoted") else []
        candidates = here + [KERNELS / name] + [Path(d) / name for d in search]
        path = next((c.resolve() for c in candidates if c.is_file()), None)
        if path is None:
            if m.group("angled") or (_STAND_INS / name).is_file():
                continue                      # a system header (CUDA's own, such as "cuda_fp16.h", too)
            line = source.count("\n", 0, m.start()) + 1
            where = f"{origin}:{line}" if origin else f"line {line} of the given code"
            raise CompileError(f"{where}: #include \"{name}\" not found (looked in "
                               + ", ".join(str(c.parent) for c in candidates) + ")")
        if path not in seen:
            seen[path] = path.read_text()
            find_includes(seen[path], path, seen, search)
    return seen


def include_dirs(options) -> tuple:
    """The folders named by ``-I`` options (``-Idir`` or ``-I dir``)."""
    dirs, options = [], list(options)
    for i, o in enumerate(options):
        if o.startswith("-I") and len(o) > 2:
            dirs.append(o[2:])
        elif o == "-I" and i + 1 < len(options):
            dirs.append(options[i + 1])
    return tuple(dirs)


# ---------------------------------------------------------------------------------------------
# Compiler messages
# ---------------------------------------------------------------------------------------------

_DIAG = re.compile(r"^(?P<file>[^\n]*?)\((?P<line>\d+)\):\s*(?P<kind>(?:catastrophic )?error|warning)"
                   r"[^:\n]*:\s*(?P<msg>.*)$", re.M)


def format_compile_log(log: str, main: tuple, headers: dict, context: int = 2) -> str:
    """Rewrite a compiler log so that each error names the real file and line and shows its source.

    ``main`` is (display name, text[, path]) of the compiled source; ``headers`` maps header paths to
    texts. A diagnostic in any other file that exists (a system or emulator header) is shown from it.
    """
    shown_main, main_text = main[0], main[1]
    main_path = Path(main[2]).resolve() if len(main) > 2 and main[2] else None
    out = []
    for m in _DIAG.finditer(log):
        if m.group("kind") == "warning":
            continue
        reported = m.group("file").strip()
        shown, text = shown_main, main_text
        rp = Path(reported)
        header = next((p for p in headers if rp.name == Path(p).name and reported.endswith(Path(p).name)), None)
        if header is not None:
            shown, text = str(header), headers[header]
        elif rp.is_absolute() and rp.is_file() and rp.resolve() != main_path:
            shown, text = reported, rp.read_text(errors="replace")
        line = int(m.group("line"))
        out.append(f"{shown}:{line}: {m.group('kind')}: {m.group('msg').strip()}")
        lines = text.splitlines()
        for i in range(max(1, line - context), min(len(lines), line + context) + 1):
            out.append(f"  {'>' if i == line else ' '} {i:4d} | {lines[i - 1]}")
    if not out:
        return log.strip()
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Kernels and modules
# ---------------------------------------------------------------------------------------------

def _dims(what: str, value) -> tuple:
    items = (value,) if isinstance(value, (int, numpy.integer)) else value
    if not isinstance(items, (tuple, list)) or not 1 <= len(items) <= 3:
        raise ValueError(f"{what} must be a positive whole number or a tuple of 1 to 3 of them, got {value!r}")
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, numpy.integer)) or v < 1:
            raise ValueError(f"{what} dimensions must be positive whole numbers, got {value!r}")
    return tuple(int(v) for v in items) + (1,) * (3 - len(items))


@dataclass
class Kernel:
    """One compiled kernel; call it as ``kernel(grid, block, args, shared_mem=0)``."""
    name: str
    signature: Signature
    impl: object                      # the backend's compiled function
    limits: object
    origin: str = ""
    array_type: type = numpy.ndarray  # what a pointer argument must be on this kernel's backend
    _arg_types: list = field(default_factory=list)
    module: object = None             # the Module it came from (gl.racecheck rebuilds it for the emulator)

    # Resources the compiler reported (None where the backend cannot say).
    @property
    def num_regs(self):
        return getattr(self.impl, "num_regs", None)

    @property
    def static_shared_bytes(self):
        return getattr(self.impl, "static_shared_bytes", 0) or 0

    @property
    def max_threads_per_block(self):
        return getattr(self.impl, "max_threads_per_block", None) or self.limits.max_threads_per_block

    def check_launch(self, grid, block, shared_mem=0) -> tuple:
        """Raise ``ValueError`` for a launch the device would refuse; return normalised (grid, block)."""
        grid, block = _dims("grid", grid), _dims("block", block)
        lim, who = self.limits, f"kernel {self.name}"
        threads = math.prod(block)
        if threads > lim.max_threads_per_block:
            raise ValueError(f"{who}: a block of {block[0]}x{block[1]}x{block[2]} = {threads} threads is over "
                             f"the limit of {lim.max_threads_per_block} threads per block ({lim.name})")
        for axis, n, top in zip("xyz", block, lim.max_block_dim):
            if n > top:
                raise ValueError(f"{who}: block.{axis} = {n} is over the limit of {top} ({lim.name})")
        for axis, n, top in zip("xyz", grid, lim.max_grid_dim):
            if n > top:
                raise ValueError(f"{who}: grid.{axis} = {n} blocks is over the limit of {top} ({lim.name})")
        if threads > self.max_threads_per_block:
            regs = self.num_regs
            why = (f"it uses {regs} registers per thread and a block has {lim.registers_per_block} registers"
                   if regs else "its __launch_bounds__")
            raise ValueError(f"{who}: a block of {threads} threads is more than this kernel can launch "
                             f"({self.max_threads_per_block} at most: {why})")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, numpy.integer)) or shared_mem < 0:
            raise ValueError(f"{who}: shared_mem must be a whole number of bytes >= 0, got {shared_mem!r}")
        total = int(shared_mem) + self.static_shared_bytes
        if total > lim.shared_per_block_optin:
            raise ValueError(f"{who}: {total} bytes of shared memory per block ({self.static_shared_bytes} static "
                             f"+ {int(shared_mem)} dynamic) is over the limit of {lim.shared_per_block_optin} "
                             f"bytes ({lim.name})")
        return grid, block

    def convert_args(self, args) -> tuple:
        """Check each argument against the kernel's parameter list; convert Python numbers to C types."""
        if not isinstance(args, (tuple, list)):
            raise ValueError(f"kernel {self.name}: args must be a tuple, got {type(args).__name__}")
        params = self.signature.params
        if len(args) != len(params):
            names = ", ".join(p.name for p in params)
            raise ValueError(f"kernel {self.name} takes {len(params)} arguments ({names}), got {len(args)}")
        return tuple(self._convert(p, ctype, a) for p, ctype, a in zip(params, self._arg_types, args))

    def _convert(self, p: Param, ctype: str, value):
        where = f"kernel {self.name}, argument {p.name!r}"
        known = C_TYPES.get(ctype)
        if p.pointer:
            if value is None:
                return None                   # a NULL pointer, as CUDA code passes for "no such array"
            if not isinstance(value, self.array_type):
                if isinstance(value, numpy.ndarray):
                    raise ValueError(f"{where} is a NumPy array in host memory; the kernel needs a device "
                                     f"array: pass gl.xp.asarray(...)")
                raise ValueError(f"{where} is a pointer ({ctype}*) and needs an array, "
                                 f"got {type(value).__name__}")
            if known is not None and value.dtype != known[0]:
                raise ValueError(f"{where} is {ctype}* and needs a {numpy.dtype(known[0]).name} array, "
                                 f"got {value.dtype.name}")
            if not value.flags.c_contiguous:
                layout = ("Fortran-ordered (column-major)" if value.flags.f_contiguous else
                          "not contiguous (a strided view)")
                raise ValueError(f"{where} is {layout}; a kernel sees raw memory in row-major order and would "
                                 f"read the wrong elements. Pass a C-contiguous array: gl.xp.ascontiguousarray(x), "
                                 f"or a C-contiguous view of the same memory (x.T of a Fortran-ordered x)")
            if known is not None and known[1] > 1:
                align = numpy.dtype(known[0]).itemsize * known[1]
                if data_address(value) % align:
                    raise ValueError(f"{where} is {ctype}* and must start on a {align}-byte boundary")
            return value
        if known is None and isinstance(value, numpy.ndarray) and value.dtype.fields and value.size == 1:
            return value              # a struct by value: a one-element NumPy array of a structured dtype (CuPy's form)
        if isinstance(value, (self.array_type, numpy.ndarray)):
            raise ValueError(f"{where} is a {ctype} value, not a pointer, but got an array")
        if known is None:
            return value              # a struct or a type we do not model: passed as given
        dtype = numpy.dtype(known[0])
        if isinstance(value, numpy.generic):
            if value.dtype != dtype:
                raise ValueError(f"{where} is {ctype} ({dtype.name}) but got numpy.{value.dtype.name}; pass a "
                                 f"Python number or numpy.{dtype.name}")
            return value
        if isinstance(value, bool):
            raise ValueError(f"{where} is {ctype}; pass a number, not a bool")
        if dtype.kind in "iu":
            if not isinstance(value, int):
                raise ValueError(f"{where} is {ctype} and needs a whole number, got {value!r}")
            info = numpy.iinfo(dtype)
            if not info.min <= value <= info.max:
                raise ValueError(f"{where} = {value} does not fit in {ctype} ({info.min}..{info.max})")
            return dtype.type(value)
        if not isinstance(value, (int, float)):
            raise ValueError(f"{where} is {ctype} and needs a number, got {type(value).__name__}")
        largest = float(numpy.finfo(dtype).max)
        if (isinstance(value, int) or math.isfinite(value)) and abs(value) > largest:
            raise ValueError(f"{where} = {value!r} is out of the range of {ctype} (largest {largest:.6g}); "
                             f"it would become inf")
        return dtype.type(value)

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        grid, block = self.check_launch(grid, block, shared_mem)
        converted = self.convert_args(args)
        self.impl.launch(grid, block, converted, int(shared_mem), stream)

    def __repr__(self):
        regs = f", {self.num_regs} registers/thread" if self.num_regs is not None else ""
        return f"<gemmlab.Kernel {self.name} from {self.origin}{regs}>"


def data_address(array) -> int:
    """The address of an array's first element, for a NumPy or a CuPy array."""
    data = getattr(array, "data", None)
    if hasattr(data, "ptr"):
        return int(data.ptr)
    return int(array.__array_interface__["data"][0])


class Module:
    """A kernel source, ready to compile any of its kernels on the current backend."""

    def __init__(self, source: str, path: Path | None = None, options: tuple = (), backend: str | None = None):
        backend = backend or hw.backend
        if backend not in hw.BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(hw.BACKENDS)}, got {backend!r}")
        if backend == "cuda" and not hw.on_gpu:
            raise hw.BackendError(f"backend='cuda' needs a GPU ({hw.backend_reason})")
        self.backend = backend
        self.source = source
        self.path = path
        self.display = str(path.relative_to(KERNELS)) if path is not None and path.is_relative_to(KERNELS) \
            else (str(path) if path is not None else "<code>")
        if isinstance(options, (str, bytes)):
            options = (options,)              # one option, not one per character
        options = tuple(options)
        bad = [o for o in options if not isinstance(o, str) or not o.strip()]
        if bad:
            raise ValueError(f"options must be compiler options as strings (such as '-DTILE=16'), got {bad[0]!r}")
        self.options = options
        self.headers = find_includes(source, path, search=include_dirs(self.options))
        digest = hashlib.sha256()
        for text in [source, *self.options, *(f"{p}\n{t}" for p, t in sorted(self.headers.items()))]:
            digest.update(text.encode())
        self.key = digest.hexdigest()[:16]
        self.kernels = parse_kernels(source)
        self.overloads = {}
        for sig in parse_overloads(source):
            self.overloads.setdefault(sig.name, []).append(sig)
        for text in self.headers.values():
            for name, sig in parse_kernels(text).items():
                self.kernels.setdefault(name, sig)
                self.overloads.setdefault(name, [sig])
        self._cache = {}

    @property
    def names(self) -> list:
        return sorted(self.kernels)

    def expression(self, name: str, **template_args) -> str:
        """The name expression for a kernel and its template arguments, given by keyword."""
        base, given = parse_name_expression(name)
        sig = self._signature(base)
        if not template_args:
            return name.strip()
        if given:
            raise ValueError(f"give {base}'s template arguments either in the name or as keywords, not both")
        known = [t.name for t in sig.template]
        unknown = set(template_args) - set(known)
        if unknown:
            raise ValueError(f"{base} has no template parameter {', '.join(sorted(unknown))}; "
                             f"its template parameters are {', '.join(known) or 'none'}")
        values = []
        for t in sig.template:
            if t.name in template_args:
                values.append(str(template_args[t.name]))
            elif t.default is not None:
                values.append(t.default)
            else:
                raise ValueError(f"{base} needs template parameter {t.name}")
        return f"{base}<{', '.join(values)}>"

    def _signature(self, base: str) -> Signature:
        """A kernel by its qualified name, or by its own name where only one namespace has it."""
        if base in self.kernels:
            return self.kernels[base]
        same = [q for q in self.kernels if q.rsplit("::", 1)[-1] == base]
        if len(same) == 1:
            return self.kernels[same[0]]
        have = ", ".join(self.names) or "none"
        if same:
            raise ValueError(f"{self.display} has {len(same)} __global__ functions named {base!r}, in different "
                             f"namespaces: name one ({', '.join(same)})")
        raise ValueError(f"{self.display} has no __global__ function {base!r} (it has: {have})")

    def _overload(self, expr: str):
        """(signature, expression for the compiler) of an overloaded kernel: chosen by a cast
        ``(void(*)(float*, int))k``, or by whether template arguments are given."""
        cast = _CAST.fullmatch(expr.strip())
        base = cast.group("name") if cast else parse_name_expression(expr)[0]
        sig = self._signature(base)
        choices = self.overloads.get(sig.name, [sig])
        if len(choices) == 1:
            return None
        if cast:
            wanted = [_param_type(t) for t in _split_top(cast.group("params")) if t.strip() != "void"]
            match = [c for c in choices if [(p.ctype, p.pointer) for p in c.params] == wanted]
        else:
            match = [c for c in choices if bool(c.template) == bool(parse_name_expression(expr)[1])]
        if len(match) != 1:
            listed = "; ".join(f"{c.name}({c.param_text})" + (" (a template)" if c.template else "") for c in choices)
            raise ValueError(f"{sig.name} is overloaded ({listed}): name the one you mean with a cast, such as "
                             f"get(\"({choices[0].pointer_type()}){sig.name}\")")
        chosen = match[0]
        if chosen.template:
            return chosen, expr.strip()
        return chosen, f"({chosen.pointer_type()}){chosen.name}"

    def get(self, name: str, **template_args) -> Kernel:
        """Compile (once) and return one kernel: ``get("k")``, ``get("k<16>")`` or ``get("k", TILE=16)``;
        among overloads, ``get("(void(*)(float*, int))k")``."""
        expr = name.strip() if _CAST.fullmatch(name.strip()) else self.expression(name, **template_args)
        if expr in self._cache:
            return self._cache[expr]
        overload = self._overload(expr)
        if overload is not None and not overload[0].template:
            sig, expr = overload
            return self._build(expr, sig, [])
        base, targs = parse_name_expression(expr)
        sig = overload[0] if overload is not None else self._signature(base)
        if sig.name != base:                    # qualified with its namespace, as the compiler needs it
            expr = f"{sig.name}<{', '.join(targs)}>" if targs else sig.name
            if expr in self._cache:
                return self._cache[expr]
        required = [t for t in sig.template if t.default is None]
        if sig.template and not (len(required) <= len(targs) <= len(sig.template)):
            raise ValueError(f"{base} takes template parameters <{', '.join(t.name for t in sig.template)}>, "
                             f"got <{', '.join(targs)}>")
        if not sig.template and targs:
            raise ValueError(f"{base} is not a template; call get({base!r})")
        return self._build(expr, sig, targs)

    def _build(self, expr: str, sig: Signature, targs: list) -> Kernel:
        if expr in self._cache:
            return self._cache[expr]
        substitution = {t.name: a for t, a in zip(sig.template, targs) if t.kind in ("typename", "class")}
        impl = _compiler(self.backend).compile(self, expr, sig)
        kernel = Kernel(name=expr, signature=sig, impl=impl, limits=impl.limits, origin=self.display,
                        array_type=hw.xp.ndarray if self.backend == "cuda" else numpy.ndarray, module=self)
        kernel._arg_types = [substitution.get(p.ctype, p.ctype) for p in sig.params]
        if hasattr(impl, "param_names"):
            impl.param_names = [p.name for p in sig.params]
        self._cache[expr] = kernel
        return kernel

    def compile_error(self, log: str, expr: str) -> CompileError:
        detail = format_compile_log(log, (self.display, self.source, self.path), self.headers)
        return CompileError(f"{self.display}: compiling {expr} failed\n{detail}")


def _compiler(backend: str):
    if backend == "cuda":
        from . import _cuda
        return _cuda
    from . import _emulator
    return _emulator


def load(path: str | Path | None = None, *, code: str | None = None, options: tuple = (),
         backend: str | None = None) -> Module:
    """Load a kernel source: a path under ``kernels/`` (``"sgemm/01_naive.cu"``) or ``code=`` text.

    ``backend="emulator"`` compiles for the CPU emulator even on a GPU machine (its kernels then take
    NumPy arrays); the default is the current backend, ``gl.backend``.
    """
    if (path is None) == (code is None):
        raise ValueError("give either a path under kernels/ or code=..., not both and not neither")
    if code is not None:
        return Module(code, None, options, backend)
    p = Path(path)
    full = p if p.is_absolute() else KERNELS / p
    if not full.is_file():
        near = sorted(str(q.relative_to(KERNELS)) for q in KERNELS.rglob("*.cu"))
        raise FileNotFoundError(f"no kernel source {path!r} under {KERNELS}; there are: {', '.join(near)}")
    return Module(full.read_text(), full.resolve(), options, backend)
