"""The library's old module names, each the very module that now lives under its new name.

``gemmlab.hardware`` is ``gemmlab.runtime.backend``, ``gemmlab.tensor`` is ``gemmlab.studies.tensor_cores``,
and so on: the same object, so a reader's ``gl.ladder.show(...)``, a test's ``monkeypatch.setattr(hardware,
"on_gpu", ...)`` and a module's own globals all see one thing. Installed by ``gemmlab/__init__.py``.

Two old modules were split, so their names are the part that offers their whole public surface: ``_emulator``
is the package ``runtime.emulator`` (its private build state, ``_ready``, ``_accepts``, ..., is in
``runtime.emulator.build``, and the benchmark is ``studies.emulator_bench``), and ``device`` is
``studies.ceilings``, which measures and offers every name of the model, ``models.device`` (patch the model
there).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old name -> where the module lives now (both under gemmlab.)
ALIASES = {
    "hardware": "runtime.backend", "limits": "runtime.limits", "profiles": "runtime.profiles",
    "loader": "runtime.loader", "_cuda": "runtime.cuda", "_emulator": "runtime.emulator",
    "racecheck": "runtime.racecheck", "tma": "runtime.tma",
    "device": "studies.ceilings", "roofline": "models.roofline", "memory": "models.coalescing",
    "demos": "studies.missing_barrier",
    "ladder": "studies.ladder", "climb": "studies.climb", "tensor": "studies.tensor_cores",
    "hopper": "studies.past_cublas", "fp8": "studies.fp8",
    "blasbench": "studies.blas_steps", "tune": "studies.tune", "profiling": "studies.profiling",
    "sanitize": "studies.sanitize", "crosscheck": "studies.crosscheck", "sass": "studies.sass",
    "portability": "studies.portability",
}
# old names the package binds to something else: gl.racecheck is the function (as it always was)
_NOT_ATTRIBUTES = {"racecheck"}


# imported when first named, not with the package: the CUDA backend needs CuPy
_LAZY = {"_cuda"}


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import gemmlab.<old name>`` for an alias not yet bound: hands over the module at its new place."""

    def __init__(self, package: str):
        self.package = package

    def find_spec(self, fullname, path=None, target=None):
        head, _, old = fullname.rpartition(".")
        if head == self.package and old in ALIASES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(f"{self.package}.{ALIASES[spec.name.rpartition('.')[2]]}")
        self._spec = module.__spec__           # the import system sets __spec__ to the alias's: put it back
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec


def install(package) -> None:
    """Register the old names: each in sys.modules (so ``import gemmlab.hardware`` works) and as an attribute of
    the package (so ``gl.hardware`` does), bound to the module at its new place; the lazy ones when first imported."""
    if not any(isinstance(f, _Finder) and f.package == package.__name__ for f in sys.meta_path):
        sys.meta_path.append(_Finder(package.__name__))
    for old, new in ALIASES.items():
        if old in _LAZY:
            continue
        module = importlib.import_module(f"{package.__name__}.{new}")
        sys.modules[f"{package.__name__}.{old}"] = module
        if old not in _NOT_ATTRIBUTES:
            setattr(package, old, module)
