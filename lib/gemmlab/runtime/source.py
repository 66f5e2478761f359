"""The C++ source parser both backends share: comments, includes, kernel signatures, name expressions,
and compiler messages shown with the source around them. Text in, Python values out: no GPU, and the compiler
only asked once where its system headers are (a quoted include found nowhere else is one of them)."""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from .. import processes
from ..paths import EMULATOR, HOST_LIBRARIES, KERNELS, NVRTC_STD

class CompileError(RuntimeError):
    """A kernel failed to compile; the message shows file, line and the source around it."""


_STAND_INS = EMULATOR / "include"   # CUDA's system headers, as the emulator has them
# the libraries whose device code the emulator does not run, by the headers that include them: (name pattern,
# what they are); their includes are left to the compiler here and refused by name in the emulator's build
# (CUB's block and warp collectives are there: the emulator's cub/ headers, which the pattern leaves out)
_CUB_HERE = "|".join(re.escape(p.relative_to(_STAND_INS / "cub").with_suffix("").as_posix())
                     for p in sorted((_STAND_INS / "cub").rglob("*.cuh")))
LIBRARY_HEADERS = ((rf"cub/(?!(?:{_CUB_HERE})\.cuh(?:[>\"]|$))[^>\"\n]*",
                    "CUB's device-wide algorithms, iterators and grid-level pieces (cub::Device* and the rest run "
                    "from the host; the emulator has CUB's block and warp collectives: BlockReduce, BlockScan, "
                    "BlockLoad, BlockStore, BlockExchange, BlockRadixSort, WarpReduce, WarpScan)"),
                   (r"thrust/[^>\"\n]*", "Thrust (its device code is not emulated)"),
                   (r"curand_\w+\.h", "cuRAND's device API (its generators are not emulated)"),
                   (r"cuda/ptx", "libcu++'s PTX instructions (cuda::ptx is inline PTX)"))



_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"(?P<quoted>[^"]+)"|<(?P<angled>[^>]+)>)', re.M)
_ATTRIBUTE = r"(?:__launch_bounds__|__cluster_dims__|__maxnreg__)\s*\((?:[^()]|\([^()]*\))*\)\s*"
_KERNEL = re.compile(
    r"(?:template\s*<(?P<tpl>[^{};]*?)>\s*)?"
    rf"(?P<at0>(?:(?:static|inline|extern\s+\"C\")\s+|{_ATTRIBUTE})*)__global__\s+(?:(?:static|inline)\s+)*"
    rf"(?P<at1>(?:{_ATTRIBUTE})*)void\s+"
    rf"(?P<at2>(?:{_ATTRIBUTE})*)"
    r"(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)",
    re.S,
)
# a kernel's attributes before `__global__` or before or after `void`: __launch_bounds__ and __cluster_dims__ (their
# arguments are kept), and __maxnreg__, which a launch does not need to know here
_BOUNDS = re.compile(r"__launch_bounds__\s*\((?P<args>(?:[^()]|\([^()]*\))*)\)")
_CLUSTER = re.compile(r"__cluster_dims__\s*\((?P<args>(?:[^()]|\([^()]*\))*)\)")

_QUALIFIERS = {"const", "volatile", "__restrict__", "restrict", "__restrict", "__grid_constant__"}


_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def blank_directives(text: str) -> str:
    """Blank out preprocessor lines (with their continuations), keeping every newline: a kernel's signature is
    read from the code, never from a #define that happens to precede it."""
    return _DIRECTIVE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


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
    const: bool = False  # a pointer to const: "const float* x", "float const* x" (the kernel only reads it)


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
    cluster_dims: tuple = ()      # the __cluster_dims__ arguments as source text, if any
    param_text: str = ""          # the parameter list as written (names kept, defaults dropped)
    overloaded: bool = False      # another __global__ function has the same name

    def pointer_type(self) -> str:
        """``void(*)(...)``: names this one among overloads (a cast the compilers take as a name expression)."""
        return f"void(*)({self.param_text})"


def _parse_param(text: str) -> Param:
    text = re.sub(r"\s*=\s*[^,]*$", "", text)         # default arguments are not launchable anyway
    pointer = "*" in text or "&" in text
    const = pointer and re.search(r"\bconst\b", re.split(r"[*&]", text)[0]) is not None
    tokens = [t for t in re.split(r"[\s*&]+", text) if t and t not in _QUALIFIERS]
    if len(tokens) < 2:
        return Param(name=tokens[0] if tokens else "?", ctype="?", pointer=pointer, const=const)
    return Param(name=tokens[-1], ctype=" ".join(tokens[:-1]) + _pointee_stars(text), pointer=pointer, const=const)


def _pointee_stars(text: str) -> str:
    """'*' for each level of indirection past the first: a ``float**`` parameter points to ``float*`` values."""
    return "*" * max(text.count("*") - 1, 0)


_TYPE_WORDS = {"int", "float", "double", "char", "short", "long", "unsigned", "signed", "bool", "size_t", "void"}


def _param_type(text: str) -> tuple:
    """(base type, is pointer) of a parameter written with or without its name: "float* x", "float*",
    "unsigned int"."""
    text = original = re.sub(r"\s*=\s*[^,]*$", "", text)
    pointer = "*" in text or "&" in text
    if pointer:
        text = re.split(r"[*&]", text)[0] if not re.sub(r"^.*[*&]", "", text).strip() else text.rsplit(
            re.findall(r"[*&]", text)[-1], 1)[0]
    tokens = [t for t in re.split(r"[\s*&]+", text) if t and t not in _QUALIFIERS]
    if not pointer and len(tokens) >= 2 and tokens[-1] not in _TYPE_WORDS:
        tokens = tokens[:-1]                 # a name after the type
    return " ".join(tokens) + _pointee_stars(original), pointer


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
    for m in _KERNEL.finditer(blank_directives(clean)):
        params = tuple(_parse_param(p) for p in _split_top(m.group("params")) if p.strip() != "void")
        template = _parse_template(m.group("tpl")) if m.group("tpl") else ()
        bounds = _BOUNDS.search(m.group("at0") + m.group("at1") + m.group("at2"))
        bounds = tuple(_split_top(bounds.group("args"))) if bounds else ()
        cluster = _CLUSTER.search(m.group("at0") + m.group("at1") + m.group("at2"))
        cluster = tuple(_split_top(cluster.group("args"))) if cluster else ()
        where = m.start("name")
        outer = [name for start, end, name in sorted(spaces) if start < where < end and name]
        qualified = "::".join(outer + [m.group("name")])
        text = ", ".join(re.sub(r"\s*=\s*[^,]*$", "", p.strip()) for p in _split_top(m.group("params")))
        found.append(Signature(qualified, params, template, line=clean.count("\n", 0, where) + 1,
                               launch_bounds=bounds, cluster_dims=cluster, param_text=" ".join(text.split())))
    names = [sig.name for sig in found]
    return [replace(sig, overloaded=names.count(sig.name) > 1) for sig in found]


@dataclass(frozen=True)
class Variable:
    """A ``__device__`` or ``__constant__`` variable declared at namespace scope: what
    :meth:`gemmlab.Module.get_global` reads and writes."""
    name: str           # qualified by its named namespaces: "ns::table"
    ctype: str          # the element type as written, qualifiers removed: "float", "float4", "Params"
    pointer: bool       # a pointer variable (`__device__ float* p;`): its value is an address
    dims: tuple         # the array bounds as written ("4", "N * 2"); () for a scalar
    space: str          # "__device__" or "__constant__"
    const: bool         # declared const: its value is its initializer
    defined: bool       # False for an `extern` declaration that no definition in the source follows
    line: int


_SPACE = re.compile(r"\b(?:__device__|__constant__|__managed__)\b")
_DECL_WORDS = {"extern", "static", "const", "volatile", "__device__", "__constant__", "__managed__", "inline",
               "__shared__"}
_NOT_VARIABLE = re.compile(r"\b(?:__global__|__host__|__forceinline__|__noinline__|inline|template|operator|"
                           r"typedef|using|__shared__|return)\b|[()]")
_ALIGNED = re.compile(r"\b(?:__align__|alignas)\s*\((?:[^()]|\([^()]*\))*\)")
_BLOCK_OPENER = re.compile(r"(?:\bnamespace\s*(?:[A-Za-z_][\w:\s]*)?|\bextern\s*\"C(?:\+\+)?\"\s*)$")


def _outside_bodies(clean: str) -> list:
    """For each character, whether it lies at namespace scope (inside namespace and extern "C" blocks only,
    not in a function, class or initializer)."""
    flags, stack = [True] * len(clean), []
    for i, ch in enumerate(clean):
        if ch == "{":
            stack.append(bool(_BLOCK_OPENER.search(clean[max(0, i - 200):i])))
        elif ch == "}" and stack:
            stack.pop()
        flags[i] = all(stack)
    return flags


def parse_variables(source: str) -> dict:
    """The namespace-scope ``__device__`` and ``__constant__`` variables of a source: qualified name ->
    :class:`Variable` (a definition wins over an earlier ``extern`` declaration)."""
    clean = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), strip_comments(source))
    scope, spaces = _outside_bodies(clean), _namespaces(clean)
    found: dict = {}
    for m in _SPACE.finditer(clean):
        if not scope[m.start()] or m.group(0) == "__managed__":
            continue
        start = max(clean.rfind(c, 0, m.start()) for c in ";{}") + 1
        end = clean.find(";", m.end())
        if end < 0:
            continue
        text = clean[start:end]
        head = _ALIGNED.sub(" ", text.split("=", 1)[0])
        if _NOT_VARIABLE.search(head) or "{" in head:
            continue
        # `__device__ int a, b[3] = {...};`: each declarator without its initializer
        braced, blanked = text, None
        while blanked != braced:                                 # innermost braces first
            blanked, braced = braced, re.sub(r"\{[^{}]*\}", lambda b: "(" + " " * (len(b.group(0)) - 2) + ")", braced)
        declarators = [_ALIGNED.sub(" ", d.split("=", 1)[0]) for d in _split_top(braced)]
        first = declarators[0]
        qualifiers = re.findall(r"\b(?:extern|static|const|volatile|__device__|__constant__)\b", first)
        body = re.sub(r"\b(?:extern|static|const|volatile|__device__|__constant__|__restrict__)\b", " ", first)
        dm = re.match(r"\s*(?P<type>(?:(?:unsigned|signed|long|short|struct)\s+)*[A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?)"
                      r"(?P<rest>(?:\s|\*)[\s*]*[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*)$", body, re.S)
        if dm is None:
            continue
        ctype = " ".join(dm.group("type").replace("struct ", "").split())
        where = m.start()
        outer = [name for s0, e0, name in sorted(spaces) if s0 < where < e0 and name]
        rest = [dm.group("rest")] + [re.sub(r"\b(?:const|volatile|__restrict__)\b", " ", d) for d in declarators[1:]]
        for decl in rest:
            nm = re.match(r"\s*(?P<stars>[\s*]*)(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$", decl, re.S)
            if nm is None or nm.group("name") in _DECL_WORDS:
                continue
            name = "::".join(outer + [nm.group("name")])
            var = Variable(name=name, ctype=ctype, pointer="*" in nm.group("stars"),
                           dims=tuple(d.strip() for d in re.findall(r"\[([^\]]*)\]", nm.group("dims"))),
                           space="__constant__" if "__constant__" in qualifiers else "__device__",
                           const="const" in qualifiers and "*" not in nm.group("stars"),
                           defined="extern" not in qualifiers or "=" in text,
                           line=clean.count("\n", 0, where) + 1)
            if name not in found or (var.defined and not found[name].defined):
                found[name] = var
    return found


def _matching(text: str, at: int, open_: str, close: str) -> int:
    """The index just past the bracket that closes the one at ``at`` (len(text) when none does)."""
    depth = 0
    for i in range(at, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


_MOVED = re.compile(r"\s*(?:\+=|-=|\+\+|--)")
_WRITE_AFTER = re.compile(r"\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--|\.|->)")


def only_read(source: str, sig: Signature) -> list:
    """Per parameter of the kernel ``sig``: True for a pointer that its body only ever indexes to read
    (``p[...]`` not assigned to, incremented, decremented, a member of it taken or its address taken) and uses in
    no other way (passed on, copied, offset: then it may be written through). False otherwise, and for values."""
    clean = strip_comments(source)
    body = None
    for m in _KERNEL.finditer(clean):
        if m.group("name") == sig.name.split("::")[-1] and clean.count("\n", 0, m.start("name")) + 1 == sig.line:
            start = clean.find("{", m.end())
            if start >= 0 and not clean[m.end():start].strip().endswith(";"):
                body = clean[start:_matching(clean, start, "{", "}")]
            break
    out = []
    for p in sig.params:
        ok = p.pointer and body is not None
        if ok:
            for use in re.finditer(r"(?<![\w.>])" + re.escape(p.name) + r"\b", body):
                after = use.end() + len(body[use.end():]) - len(body[use.end():].lstrip())
                before = body[:use.start()].rstrip()
                if after < len(body) and body[after] == "[":
                    if before.endswith(("&", "++", "--")) or _WRITE_AFTER.match(body, _matching(body, after, "[", "]")):
                        ok = False
                        break
                elif _MOVED.match(body, use.end()) or (before.endswith(("++", "--")) and not before.endswith(
                        ("+++", "---"))):
                    continue                  # the pointer moved (p += n, p++): what it points at is not written
                elif before.endswith("*") and not before.endswith(("**", "*=")) and not _WRITE_AFTER.match(
                        body, use.end()):
                    continue                  # *p read
                else:
                    ok = False
                    break
        out.append(ok)
    return out


_CAST = re.compile(r"\(\s*void\s*\(\s*\*\s*\)\s*\((?P<params>.*)\)\s*\)\s*(?P<name>(?:::)?[A-Za-z_][\w:]*)", re.S)



def readonly_params(source: str, sig: Signature) -> list:
    """Per parameter of ``sig``: whether it is a pointer whose memory the kernel only reads (to const, or only
    read through, :func:`only_read`): what the emulator's memory check leaves off its writable arrays."""
    return [p.pointer and (p.const or r) for p, r in zip(sig.params, only_read(source, sig))]

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
            if (m.group("angled") or (_STAND_INS / name).is_file() or (HOST_LIBRARIES / name).is_file()
                    or _system_header(name)
                    or any(re.fullmatch(pattern, name) for pattern, _ in LIBRARY_HEADERS)):
                continue                      # a system header (CUDA's own, such as "cuda_fp16.h", too; a quoted
                                              # one found nowhere else: nvcc and g++ look on the system path; CUB's,
                                              # Thrust's and cuRAND's, which the emulator refuses by name)
            line = source.count("\n", 0, m.start()) + 1
            where = f"{origin}:{line}" if origin else f"line {line} of the given code"
            raise CompileError(f"{where}: #include \"{name}\" not found (looked in "
                               + ", ".join(str(c.parent) for c in candidates) + ")")
        if path not in seen:
            seen[path] = path.read_text()
            find_includes(seen[path], path, seen, search)
    return seen


@functools.lru_cache(maxsize=None)
def _system_include_dirs() -> tuple:
    """The host C++ compiler's system include folders (``c++ -E -v``), where nvcc and g++ look for a quoted
    header that is not beside the source: ``#include "assert.h"`` finds the C library's."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    dirs = []
    if cxx:
        try:
            log = processes.run([cxx, "-xc++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                                timeout=30).stderr
        except (OSError, subprocess.SubprocessError):
            log = ""
        inside = False
        for line in log.splitlines():
            if line.startswith("#include <...> search starts here"):
                inside = True
            elif line.startswith("End of search list"):
                break
            elif inside and line.strip():
                dirs.append(line.strip().split(" (")[0])
    return tuple(dirs) or ("/usr/include",)


def _system_header(name: str) -> bool:
    return any((Path(d) / name).is_file() for d in _system_include_dirs())


@functools.lru_cache(maxsize=None)
def _stand_in_headers(folder: Path) -> tuple:
    """The headers gemmlab stands in with in ``folder`` (their names as an include gives them, nvtx3/nvToolsExt.h
    too), and a hash of the folder."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    digest = hashlib.sha256(b"".join(p.relative_to(folder).as_posix().encode() + p.read_bytes() for p in files))
    return frozenset(p.relative_to(folder).as_posix() for p in files), digest.hexdigest()[:16]


# The CUDA toolkit's headers that NVRTC finds but that include C library headers of their own: the driver API's
# <cuda.h> (<stdlib.h>, <stdint.h>: flash-attention-minimal includes it for nothing) and <cudaTypedefs.h>, which
# includes it.
_TOOLKIT_HEADERS_WITH_STD = frozenset({"cuda.h", "cudaTypedefs.h"})


def nvrtc_std_include(texts) -> tuple:
    """``(options, key)`` for NVRTC, which has no C or C++ library headers: for a source that includes one
    (<stdio.h>, "assert.h", <cmath>, <cstdint>, <limits>, ...), the folder of gemmlab's stand-ins as an -I
    option to put last (a header of that name beside the source or in kernels/ still comes first), also for a
    toolkit header that includes them (<cuda.h>); the same for a host library's header (<cublas_v2.h>, <cufft.h>,
    <nvtx3/nvToolsExt.h>, ...: paths.HOST_LIBRARIES, which declare nothing); and a hash of the stand-ins for the
    compile cache's key. ``((), "")`` for any other source."""
    included = {(m["quoted"] or m["angled"]).strip() for text in texts for m in _INCLUDE.finditer(strip_comments(text))}
    options, key = (), ""
    for folder, needing in ((NVRTC_STD, _TOOLKIT_HEADERS_WITH_STD), (HOST_LIBRARIES, frozenset())):
        names, digest = _stand_in_headers(folder)
        if included & (names | needing):
            options, key = options + (f"-I{folder}",), key + digest
    return options, key


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
