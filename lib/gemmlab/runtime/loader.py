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
from dataclasses import dataclass, field
from pathlib import Path

import numpy

from . import backend as hw
from ..paths import KERNELS
from .source import (_CAST, CompileError, Param, Signature, TemplateParam, _param_type, _split_top,
                     find_includes, format_compile_log, include_dirs, parse_kernels, parse_name_expression,
                     parse_overloads, parse_variables, readonly_params, strip_comments)

# the front end, and the parser's names as the loader has always offered them (the parser is .source)
__all__ = ["load", "Module", "Kernel", "CompileError", "C_TYPES", "data_address", "Param", "Signature",
           "TemplateParam", "find_includes", "format_compile_log", "include_dirs", "parse_kernels",
           "parse_name_expression", "parse_overloads", "strip_comments"]


# C type -> (NumPy dtype of the elements, elements per value). Vector types point at plain arrays.
def _c_types() -> dict:
    i1, u1, i2, u2, i4, u4, i8, u8 = (numpy.int8, numpy.uint8, numpy.int16, numpy.uint16, numpy.int32, numpy.uint32,
                                      numpy.int64, numpy.uint64)
    f2, f4, f8 = numpy.float16, numpy.float32, numpy.float64
    table = {
        "float": (f4, 1), "double": (f8, 1), "__half": (f2, 1), "half": (f2, 1), "__half2": (f2, 2), "half2": (f2, 2),
        "bool": (numpy.bool_, 1), "char": (i1, 1), "signed char": (i1, 1), "unsigned char": (u1, 1),
        "short": (i2, 1), "unsigned short": (u2, 1), "int": (i4, 1), "unsigned int": (u4, 1),
        "long": (i8, 1), "unsigned long": (u8, 1), "long long": (i8, 1), "unsigned long long": (u8, 1),
        "wchar_t": (i4, 1), "char16_t": (u2, 1), "char32_t": (u4, 1),
        "size_t": (u8, 1), "ptrdiff_t": (i8, 1), "intptr_t": (i8, 1), "uintptr_t": (u8, 1), "ssize_t": (i8, 1),
        # NumPy has no bfloat16: a __nv_bfloat16 array is passed as its bits, uint16 (gemmlab.ops.to_bf16_bits)
        "__nv_bfloat16": (u2, 1), "nv_bfloat16": (u2, 1), "__nv_bfloat162": (u2, 2), "nv_bfloat162": (u2, 2),
        # FP8 (cuda_fp8.h): passed as their bits, uint8
        "__nv_fp8_e4m3": (u1, 1), "__nv_fp8_e5m2": (u1, 1), "__nv_fp8_storage_t": (u1, 1),
        "__nv_fp8x2_e4m3": (u1, 2), "__nv_fp8x2_e5m2": (u1, 2), "__nv_fp8x4_e4m3": (u1, 4), "__nv_fp8x4_e5m2": (u1, 4),
    }
    for bits, (signed, unsigned) in {8: (i1, u1), 16: (i2, u2), 32: (i4, u4), 64: (i8, u8)}.items():
        table[f"int{bits}_t"], table[f"uint{bits}_t"] = (signed, 1), (unsigned, 1)
    # the vector types of vector_types.h: char1 .. double4, and CUDA 13's 4-vectors of 8-byte fields by alignment
    for base, dtype in {"char": i1, "uchar": u1, "short": i2, "ushort": u2, "int": i4, "uint": u4, "long": i8,
                        "ulong": u8, "longlong": i8, "ulonglong": u8, "float": f4, "double": f8}.items():
        for n in (1, 2, 3, 4):
            table[f"{base}{n}"] = (dtype, n)
        if numpy.dtype(dtype).itemsize == 8:
            table[f"{base}4_16a"] = table[f"{base}4_32a"] = (dtype, 4)
    for name in list(table):                          # std::uint32_t, std::size_t, ...
        if name.endswith("_t") and " " not in name and not name.startswith("__"):
            table["std::" + name] = table[name]
    return table


C_TYPES = _c_types()
_INTEGER_WORDS = frozenset(("signed", "unsigned", "short", "long", "int", "char"))


def c_type(ctype: str) -> str:
    """A C type's name as C_TYPES spells it: the words of an integer type in any order and with ``int`` or
    ``signed`` where C allows them (``long unsigned int`` is ``unsigned long``, ``signed`` is ``int``)."""
    words = ctype.split()
    if not words or not set(words) <= _INTEGER_WORDS:
        return " ".join(words)
    longs, unsigned = words.count("long"), "unsigned" in words
    if "char" in words:
        return "unsigned char" if unsigned else ("signed char" if "signed" in words else "char")
    size = "short" if "short" in words else ("long long" if longs >= 2 else ("long" if longs else "int"))
    return f"unsigned {size}" if unsigned else size


def c_alignment(ctype: str) -> int:
    """The alignment in bytes of a type of C_TYPES: a vector of 1, 2 or 4 fields is aligned to its size (of 3, to
    a field's), as vector_types.h declares them; a 4-vector of 8-byte fields to 16 bytes (32 for its _32a form)."""
    dtype, n = C_TYPES[ctype]
    item = numpy.dtype(dtype).itemsize
    if n == 3:
        return item
    if n == 4 and item == 8:
        return 32 if ctype.endswith("_32a") else 16
    return item * n


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
    _converters: list = field(default=None, repr=False)    # one check per parameter (convert_args), made once

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
        converters = self._converters
        if converters is None:
            converters = self._converters = [self._converter(p, ctype) for p, ctype in
                                             zip(self.signature.params, self._arg_types)]
        if len(args) != len(converters):
            params = self.signature.params
            names = ", ".join(p.name for p in params)
            raise ValueError(f"kernel {self.name} takes {len(params)} arguments ({names}), got {len(args)}")
        return tuple([convert(a) for convert, a in zip(converters, args)])

    def _converter(self, p: Param, ctype: str):
        """The check and conversion of one parameter, made once per kernel: the common cases (an array of the
        right dtype for a pointer, a number for a scalar) cost a few type tests; every refusal is worded by
        :meth:`_convert`."""
        known = C_TYPES.get(c_type(ctype))
        array_type, slow = self.array_type, (lambda value: self._convert(p, ctype, value))
        if p.pointer:
            dtype = None if known is None else numpy.dtype(known[0])
            if ctype.endswith("*"):                            # an array of pointers: uint64 (or int64) only
                return slow
            if known is not None and known[1] > 1:
                return slow                                    # vector types: the alignment is checked too

            def pointer(value):
                if type(value) is array_type and (dtype is None or value.dtype == dtype) and value.flags.c_contiguous:
                    return value
                return slow(value)
            return pointer
        if known is None or known[1] > 1:             # a struct, or a vector type by value: its form is checked
            return slow
        dtype = numpy.dtype(known[0])
        make = dtype.type
        if dtype.kind == "b":
            def flag(value):
                if type(value) is bool:
                    return make(value)
                return slow(value)
            return flag
        if dtype.kind in "iu":
            info = numpy.iinfo(dtype)
            low, high = int(info.min), int(info.max)

            def integer(value):
                if type(value) is int and low <= value <= high:
                    return make(value)
                return slow(value)
            return integer
        largest = float(numpy.finfo(dtype).max)

        def real(value):
            if type(value) is float and -largest <= value <= largest:
                return make(value)
            return slow(value)
        return real

    def _convert(self, p: Param, ctype: str, value):
        where = f"kernel {self.name}, argument {p.name!r}"
        known = C_TYPES.get(c_type(ctype))
        if p.pointer:
            if value is None:
                return None                   # a NULL pointer, as CUDA code passes for "no such array"
            if not isinstance(value, self.array_type):
                if isinstance(value, numpy.ndarray):
                    raise ValueError(f"{where} is a NumPy array in host memory; the kernel needs a device "
                                     f"array: pass gl.xp.asarray(...)")
                raise ValueError(f"{where} is a pointer ({ctype}*) and needs an array, "
                                 f"got {type(value).__name__}")
            if ctype.endswith("*") and value.dtype not in (numpy.uint64, numpy.int64):
                raise ValueError(f"{where} is {ctype}*, an array of pointers, and needs a uint64 array (device "
                                 f"addresses), got {value.dtype.name}")
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
                align = c_alignment(c_type(ctype))
                if data_address(value) % align:
                    raise ValueError(f"{where} is {ctype}* and must start on a {align}-byte boundary")
            return value
        if isinstance(value, numpy.void) and value.dtype.fields:
            value = numpy.array([value], dtype=value.dtype)    # a struct scalar: as the one-element array form
        struct = isinstance(value, numpy.ndarray) and value.dtype.fields and value.size == 1
        vector = known is not None and known[1] > 1            # a vector type by value (float2, int4, ...)
        if struct and vector:
            size = numpy.dtype(known[0]).itemsize * known[1]
            if value.dtype.itemsize != size:
                raise ValueError(f"{where} is a {ctype} value ({size} bytes), but the structured value given "
                                 f"has {value.dtype.itemsize}")
            return value
        if struct and known is None:
            return value              # a struct by value: a one-element NumPy array of a structured dtype (CuPy's form)
        if isinstance(value, (self.array_type, numpy.ndarray)):
            extra = (f" (a {ctype} by value is a one-element NumPy array of a structured dtype, as for a struct)"
                     if vector else "")
            raise ValueError(f"{where} is a {ctype} value, not a pointer, but got an array{extra}")
        if known is None:
            return value              # a struct or a type we do not model: passed as given
        if vector:
            raise ValueError(f"{where} is a {ctype} value: pass a one-element NumPy array of a structured dtype "
                             f"with its {known[1]} fields (as for a struct), got {type(value).__name__}")
        dtype = numpy.dtype(known[0])
        if isinstance(value, numpy.generic):
            if value.dtype != dtype:
                raise ValueError(f"{where} is {ctype} ({dtype.name}) but got numpy.{value.dtype.name}; pass a "
                                 f"Python number or numpy.{dtype.name}")
            return value
        if dtype.kind == "b":
            if isinstance(value, bool):
                return dtype.type(value)
            raise ValueError(f"{where} is bool: pass True or False (or numpy.bool_), got {value!r}")
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

    def launcher(self, grid, block, shared_mem=0):
        """``send(args)`` for a launch checked here once and made many times, on the stream current now, with
        ``args`` as plain Python numbers in the kernel's parameter order (a pointer as its address, 0 for NULL):
        the CUDA backend's direct launch (:meth:`gemmlab.runtime.cuda.CudaFunction.launcher`). None on the
        emulator (whose launches copy arrays in and out and so take the checked call), for a kernel taking a
        value this layout does not model (a vector type, or a struct by value other than a tensor map), and on a
        GPU for a kernel of a source with variables (its module may be compiled again: see get_global)."""
        grid, block = self.check_launch(grid, block, shared_mem)
        make = getattr(self.impl, "launcher", None)
        formats = ""
        for p, ctype in zip(self.signature.params, self._arg_types):
            known = C_TYPES.get(c_type(ctype))
            if p.pointer:
                formats += "Q"
            elif ctype in ("gl_hopper::TensorMap", "TensorMap", "CUtensorMap"):
                formats += "m"                          # a TMA tensor map by value: its 128 bytes (tma.py)
            elif known is None or known[1] != 1:
                return None
            else:
                formats += numpy.dtype(known[0]).char if numpy.dtype(known[0]).char in "bBhHiIlLqQfd" else "?"
        if make is None or "?" in formats:
            return None
        return make(grid, block, int(shared_mem), formats.replace("l", "q").replace("L", "Q"))

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
        self.variables = {}               # namespace-scope __device__ and __constant__ variables (get_global)
        for text in (*self.headers.values(), source):
            for name, var in parse_variables(text).items():
                if name not in self.variables or var.defined:
                    self.variables[name] = var
        self._cache = {}
        self._templates = []              # template instances compiled so far, in order (unit_expressions)
        self._globals_given = False       # get_global has handed out a variable's memory

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
        if sig.template and self.variable_names:
            if self._globals_given:
                raise ValueError(
                    f"{self.display}: {expr} is compiled after get_global handed out this module's variables. On a "
                    f"GPU its kernels and variables are one module, which a new template instance compiles again, "
                    f"with new variables, and the arrays get_global returned would no longer be the kernels' "
                    f"(on either backend this is refused): get every template instance you need first, then call "
                    f"get_global")
        substitution = {t.name: a for t, a in zip(sig.template, targs) if t.kind in ("typename", "class")}
        impl = _compiler(self.backend).compile(self, expr, sig)
        if sig.template and expr not in self._templates:
            self._templates.append(expr)
        kernel = Kernel(name=expr, signature=sig, impl=impl, limits=impl.limits, origin=self.display,
                        array_type=hw.xp.ndarray if self.backend == "cuda" else numpy.ndarray, module=self)
        kernel._arg_types = [substitution.get(p.ctype, p.ctype) for p in sig.params]
        if hasattr(impl, "describe_params"):
            impl.describe_params(sig.params, readonly_params(self.source, sig))
        self._cache[expr] = kernel
        return kernel

    @property
    def variable_names(self) -> list:
        """The variables a kernel may change or the host may set (not const, and defined in the source), in the
        order of the source: what get_global gives, and what makes the module's kernels one module on a GPU."""
        return [n for n, v in self.variables.items() if v.defined and not v.const]

    def unit_expressions(self, extra: str | None = None) -> list:
        """The kernels one CUDA module of this source holds: every kernel that is not a template (an overload by
        its cast), then the template instances compiled so far, and ``extra``."""
        plain = []
        for name, sigs in self.overloads.items():
            chosen = [c for c in sigs if not c.template]
            plain += [f"({c.pointer_type()}){c.name}" for c in chosen] if len(sigs) > 1 else \
                [c.name for c in chosen]
        out = plain + [t for t in self._templates if t not in plain]
        if extra is not None and extra not in out:
            out.append(extra)
        return out

    def get_global(self, name: str, dtype=None):
        """A namespace-scope ``__device__`` or ``__constant__`` variable of this module as a device array over its
        memory (a CuPy array on a GPU, a NumPy array on the emulator), as CUDA's ``cudaMemcpyToSymbol`` and
        ``cudaMemcpyFromSymbol`` reach it: what is written into the array is what the module's kernels read at
        their next launch, and after a launch the array holds what they left there. Every kernel of the module
        sees the same variable (a second ``gl.load`` of the same source has its own). The array has the
        variable's element type and, where its bounds are numbers, its shape: every scalar, fixed-width and vector
        type of CUDA (and a typedef of one) has its own dtype, a vector type such as float3 adding an axis of
        its fields; a pointer variable is uint64 addresses; bfloat16 and FP8 are their bits (uint16, uint8), as
        kernels take them. A struct, an enum or another type with no dtype is refused unless ``dtype`` says how
        to read it (a structured dtype on the emulator, since CuPy has none; numpy.uint8 for its bytes);
        ``dtype`` views the bytes as that type instead, one axis. Template instances of the
        module must be compiled before (see the error that says why)."""
        var = self._variable(name)
        if self.backend == "cuda":
            from . import cuda as _cuda
            raw = _cuda.variable_bytes(self, var.name)
        else:
            from .emulator.build import variables_library
            from .emulator.launch import variable_bytes
            built = [k.impl.lib for k in self._cache.values() if hasattr(k.impl, "lib")]
            lib = built[0] if built else getattr(self, "_variables_lib", None)
            if lib is None:
                lib = self._variables_lib = variables_library(self)
            raw = variable_bytes(self, lib, var.name)
            if raw is None:
                raise ValueError(f"{self.display}({var.line}): the emulator cannot reach variable {var.name}: it is "
                                 f"declared in a form the emulator does not keep with the module's variables, or "
                                 f"a variable of the source is under an #if that the build leaves out")
        self._globals_given = True
        return _typed(raw, var, dtype, self.display, type_aliases("\n".join([self.source, *self.headers.values()])))

    def _variable(self, name: str):
        if not isinstance(name, str):
            raise ValueError(f"a variable's name is a string, got {type(name).__name__}")
        key = name.strip().lstrip(":")
        var = self.variables.get(key)
        if var is None:
            same = [v for q, v in self.variables.items() if q.rsplit("::", 1)[-1] == key]
            if len(same) == 1:
                var = same[0]
            else:
                have = ", ".join(self.variables) or "none"
                what = (f"has {len(same)} variables named {key!r}, in different namespaces: name one" if same else
                        f"has no __device__ or __constant__ variable {key!r} at namespace scope")
                raise ValueError(f"{self.display} {what} (it has: {have})")
        if not var.defined:
            raise ValueError(f"{self.display}({var.line}): {var.name} is declared extern and defined nowhere in this "
                             f"source")
        if var.const:
            raise ValueError(f"{self.display}({var.line}): {var.name} is const: its value is its initializer, which "
                             f"the compiler may have folded into the code; declare it without const to set it")
        return var

    def compile_error(self, log: str, expr: str) -> CompileError:
        detail = format_compile_log(log, (self.display, self.source, self.path), self.headers)
        return CompileError(f"{self.display}: compiling {expr} failed\n{detail}")


def type_aliases(source: str) -> dict:
    """The source's ``typedef T name;`` and ``using name = T;`` whose T is a type of C_TYPES (or another such
    name): name -> the type as C_TYPES spells it, or None for a name defined as two different types."""
    text = strip_comments(source)
    found, twice = {}, set()

    def define(name, target):
        if found.get(name, target) != target:
            twice.add(name)                       # two definitions (each side of an #if): which one holds is unknown
        found[name] = target
    for m in re.finditer(r"\btypedef\s+([A-Za-z_][\w:\s]*?)\s+([A-Za-z_]\w*)\s*;", text):
        define(m.group(2), c_type(m.group(1)))
    for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w:\s]*?)\s*;", text):
        define(m.group(1), c_type(m.group(2)))
    resolved = {name: None for name in twice}     # (None: defined more than once, refused by _typed)
    for name, target in found.items():
        if name in twice:
            continue
        for _ in range(len(found)):                 # a chain of aliases, without looping on a cycle
            if target in C_TYPES or target not in found:
                break
            target = found[target]
        if target in C_TYPES:
            resolved[name] = target
    return resolved


def _typed(raw, var, dtype, display, aliases=None):
    """The variable's bytes (a one-axis uint8 array) viewed as its elements, in its shape where known."""
    size = raw.size
    ctype = c_type(var.ctype)
    # a typedef's type ("" where there is none; None where the source defines the name twice)
    alias = "" if ctype in C_TYPES else (aliases or {}).get(ctype.rsplit("::", 1)[-1], "")
    if alias is None and dtype is None:
        raise ValueError(f"{display}({var.line}): {var.name} is a {var.ctype}, which the source defines as two "
                         f"different types (each side of an #if?): say how to read its bytes with dtype=")
    known = C_TYPES.get(alias or ctype)
    if dtype is not None:
        dt = numpy.dtype(dtype)
        if dt.itemsize == 0 or size % dt.itemsize:
            raise ValueError(f"{display}: {var.name} has {size} bytes, not a whole number of {dt} ({dt.itemsize} bytes)")
        return raw.view(dt)
    if var.pointer:
        dt, fields = numpy.dtype(numpy.uint64), 1
    elif known is not None:
        dt, fields = numpy.dtype(known[0]), known[1]
    else:                                 # a struct, an enum, long double: no dtype says what its bytes mean
        raise ValueError(f"{display}({var.line}): {var.name} is a {var.ctype}, which has no NumPy element type "
                         f"here (a struct, a class, an enum or a type this library does not model): say how to read "
                         f"its {size} bytes with dtype=, a structured dtype laid out as the type is "
                         f"(numpy.dtype([...], align=True), on the emulator), or numpy.uint8 for the bytes")
    shape = ()
    one = dt.itemsize * fields
    known_dims = all(d.strip().isdigit() for d in var.dims)
    want = math.prod(int(d) for d in var.dims) * one if known_dims else None
    if (want is not None and want != size) or size % one:
        what = "a pointer" if var.pointer else f"a {var.ctype}"
        raise ValueError(f"{display}({var.line}): {var.name} holds {size} bytes, which is not what {what} of "
                         f"{one} bytes{' x ' + ' x '.join(var.dims) if var.dims else ''} takes (a typedef chosen "
                         f"under an #if, or a type of another size here?): say how to read it with dtype=")
    if known_dims:
        shape = tuple(int(d) for d in var.dims) + ((fields,) if fields > 1 else ())
    elif var.dims or fields > 1:
        shape = (size // dt.itemsize,)
    view = raw.view(dt)
    return view.reshape(shape) if shape else view.reshape(())


def _compiler(backend: str):
    if backend == "cuda":
        from . import cuda as _cuda
        return _cuda
    from . import emulator as _emulator
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
