"""The library's house: layers that import only downwards, no import cycles (hidden in functions or not), and
the old module names bound to the very modules at their new places."""
import ast
import functools
import importlib
import sys
from pathlib import Path

import pytest

import gemmlab

LIB = Path(gemmlab.__file__).resolve().parent

# lowest first; a module may import from its own layer and the layers below it, never above
LAYERS = [
    ("base", lambda m: m in {"paths", "processes", "_version", "table", "progress"}),
    ("runtime", lambda m: m == "runtime" or m.startswith("runtime.")),
    ("core", lambda m: m in {"ops", "cases", "variant", "registry", "check", "timing", "record", "blas", "gpu_state"}),
    ("models", lambda m: m == "models" or m.startswith("models.")),
    ("studies", lambda m: m == "studies" or m.startswith("studies.")),
    ("book", lambda m: m in {"listing", "tilemap", "pictures", "exercises", "support", "refresh", "workbook", "colab"}
     or m == "explorers" or m.startswith("explorers.")),
    ("package", lambda m: m in {"", "__main__", "_aliases", "cli"}),
]


def _modules() -> dict:
    """Every module of the library: dotted name under gemmlab ('' for the package) -> its file."""
    out = {}
    for path in LIB.rglob("*.py"):
        parts = list(path.relative_to(LIB).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    hits = [i for i, (_, test) in enumerate(LAYERS) if test(module)]
    assert len(hits) == 1, f"gemmlab.{module or '__init__'} belongs to {len(hits)} layers: give it one in LAYERS"
    return hits[0]


def _target(package: str, level: int, name: str | None, alias: str | None = None) -> str:
    """The library module an import names: 'from .x import y' is module x.y when that is a module, else x."""
    base = package.split(".") if package else []
    if level > 1:
        base = base[:len(base) - (level - 1)]
    parts = [p for p in base + (name.split(".") if name else []) if p]
    if alias is not None and ".".join(parts + [alias]) in MODULES:
        parts.append(alias)
    return ".".join(parts)


@functools.lru_cache(maxsize=1)
def edges() -> dict:
    """module -> {imported library module: first line}, function-level imports included (read once)."""
    graph = {}
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    if node.module and (node.module == "gemmlab" or node.module.startswith("gemmlab.")):
                        rest = node.module[len("gemmlab"):].lstrip(".")
                        targets = [_target("", 1, rest, a.name) for a in node.names]
                else:
                    targets = [_target(package, node.level, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name[len("gemmlab."):] for a in node.names if a.name.startswith("gemmlab.")]
            for t in targets:
                if t != module and t in MODULES:
                    found.setdefault(t, node.lineno)
    return graph


def test_every_module_has_one_layer():
    for module in MODULES:
        _layer(module)


def test_no_module_imports_from_a_layer_above_its_own():
    wrong = [f"gemmlab.{m or '__init__'} ({LAYERS[_layer(m)][0]}) imports gemmlab.{t} ({LAYERS[_layer(t)][0]}) "
             f"at line {line}"
             for m, targets in edges().items() for t, line in targets.items() if _layer(t) > _layer(m)]
    assert not wrong, "\n".join(wrong)


def test_nothing_in_runtime_imports_from_above_it():
    """The machine knows nothing of kernels, studies or the book: only base modules and itself."""
    allowed = {"paths", "processes", "_version"}
    wrong = [(m, t) for m, targets in edges().items() if m.startswith("runtime")
             for t in targets if not (t.startswith("runtime") or t in allowed)]
    assert not wrong


def test_no_import_cycles():
    """Strongly connected components of the import graph, function-level imports counted: all of size one.
    (A package importing its own submodules, and those importing siblings, is not a cycle unless it closes.)"""
    graph = {m: set(t) for m, t in edges().items()}
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    # the package's own __init__ importing everything is the top of the house; a module that imports the
    # package back would close a cycle through it, and is reported like any other
    assert not cycles, cycles


def test_the_check_sees_a_violation(tmp_path, monkeypatch):
    """The graph is read from the source: an import inside a function counts (so a cycle cannot hide there)."""
    graph = edges()
    assert "runtime.source" in graph["runtime.emulator.build"]          # a module-level import
    assert "runtime.profiles" in graph["runtime.emulator.launch"]       # one inside a method
    assert "studies.ladder" in graph["studies"]                         # one inside the study entries


@pytest.mark.parametrize("old", sorted(__import__("gemmlab._aliases", fromlist=["ALIASES"]).ALIASES))
def test_old_module_names_are_the_modules_themselves(old):
    from gemmlab import _aliases
    if old == "_cuda":
        pytest.importorskip("cupy", reason="the CUDA backend's module needs CuPy to import")
    new = importlib.import_module(f"gemmlab.{_aliases.ALIASES[old]}")
    assert importlib.import_module(f"gemmlab.{old}") is new
    assert sys.modules[f"gemmlab.{old}"] is new
    assert new.__spec__.name == f"gemmlab.{_aliases.ALIASES[old]}"      # the module keeps its own name
    if old != "racecheck":
        assert getattr(gemmlab, old) is new
    else:
        assert callable(gemmlab.racecheck) and gemmlab.racecheck is new.racecheck   # gl.racecheck stays the function


def test_no_flat_file_is_left_behind_an_alias():
    from gemmlab import _aliases
    for old in _aliases.ALIASES:
        assert not (LIB / f"{old}.py").exists(), f"{old}.py and its alias both exist"
