"""Child processes that die with their parent: the compiler, the emulator's half of the crosscheck,
``ncu`` and ``compute-sanitizer`` runs. A killed notebook kernel or a killed command leaves none behind.

(Emulated launches are forked children of their own, with the same rule: see ``gemmlab_emu.h``.)
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent():              # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def run(command, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose child is killed when this process dies (Linux); elsewhere it is the same.

    An interrupt (Ctrl-C) while waiting kills the child too, as ``subprocess.run`` does."""
    if sys.platform.startswith("linux") and "preexec_fn" not in kwargs:
        parent = os.getpid()

        def prepare():
            _die_with_parent()
            if os.getppid() != parent:    # the parent died before prctl took effect
                os._exit(1)
        kwargs["preexec_fn"] = prepare
    return subprocess.run(command, **kwargs)
