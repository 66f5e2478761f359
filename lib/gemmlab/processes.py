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


def run(command, *, group: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose child is killed when this process dies (Linux); elsewhere it is the same.

    An interrupt (Ctrl-C) while waiting kills the child too, as ``subprocess.run`` does. ``group=True`` is for a
    child that starts children of its own (a compiler driver and its cc1plus and as): it runs in a process
    group of its own under a small shell, and the whole group is killed, on an interrupt here, on any error
    while waiting, and when this process dies (even by SIGKILL: the shell is told by PDEATHSIG and kills its
    group). The child gets no standard input."""
    linux = sys.platform.startswith("linux")
    if not linux or "preexec_fn" in kwargs:
        return subprocess.run(command, **kwargs)
    parent = os.getpid()
    signum = signal.SIGTERM if group else signal.SIGKILL

    def prepare():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:        # the parent died before prctl took effect
            os._exit(1)
    if not group:
        return subprocess.run(command, preexec_fn=prepare, **kwargs)
    if kwargs.get("input") is not None or kwargs.get("stdin") not in (None, subprocess.DEVNULL):
        raise ValueError("processes.run(group=True) gives its child no standard input")
    timeout = kwargs.pop("timeout", None)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    check = kwargs.pop("check", False)
    # the shell leads the group; on SIGTERM (this process died) it kills the group, itself included
    wrapped = ["/bin/sh", "-c", 'trap "kill -KILL 0" TERM; "$@" & wait $!', "gemmlab-group", *command]
    with subprocess.Popen(wrapped, preexec_fn=prepare, start_new_session=True, stdin=subprocess.DEVNULL,
                          **kwargs) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
