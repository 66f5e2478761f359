"""The CPU-emulator backend of :mod:`gemmlab.runtime.loader`: the same .cu files, compiled for the CPU.

Three parts: :mod:`.build` (translate the source, compile it with the host C++ compiler against the
runtime header ``gemmlab/emulator/gemmlab_emu.h``, keep the library in a checked disk cache), :mod:`.launch`
(run one launch in a forked child on guarded copies of its arguments, and say in plain words what went
wrong) and :mod:`.hazards` (the shared-memory races the racecheck finds). How each works is told at the top
of its module; chapter 00 tells the reader the short version. Timing on the emulator means nothing:
:func:`gemmlab.bench` refuses to do it.
"""
from .build import (FLAGS, HERE, RUNTIME, UNSUPPORTED, _cache_dir, _compiler, _compiler_version,
                    _memcheck_flags, compile, translate)
from .hazards import HAZARD_KINDS, Hazard
from .launch import EmulatedFunction, EmulatorError, EmulatorTimeout, timeout_setting

__all__ = ["FLAGS", "HERE", "RUNTIME", "UNSUPPORTED", "_cache_dir", "_compiler", "_compiler_version", "_memcheck_flags",
           "compile", "translate", "HAZARD_KINDS", "Hazard", "EmulatedFunction", "EmulatorError", "EmulatorTimeout",
           "timeout_setting"]
