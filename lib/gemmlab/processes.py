"""Child processes that die with their parent: the compiler, the emulator's half of the crosscheck,
``ncu`` and ``compute-sanitizer`` runs. A killed notebook kernel or a killed command leaves none behind.

(Emulated launches are forked children of their own, with the same rule: see ``gemmlab_emu.h``.)
"""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import subprocess
import sys
import threading

_PR_SET_PDEATHSIG = 1
_LINUX = sys.platform.startswith("linux")
# looked up once here: the child, between fork and exec, must not load libraries (another thread of the
# parent may have held the loader's lock at the fork)
_LIBC = ctypes.CDLL(None, use_errno=True) if _LINUX else None
_PRCTL = _LIBC.prctl if _LIBC is not None else None
_SIGNAL = _LIBC.signal if _LIBC is not None else None
if _SIGNAL is not None:
    _SIGNAL.argtypes = (ctypes.c_int, ctypes.c_void_p)
    _SIGNAL.restype = ctypes.c_void_p

# The shell that leads a group (group=True). On SIGTERM (PDEATHSIG: this process died) it kills its whole
# group, itself included. Otherwise it waits for the child and ends as the child did: with its exit status,
# or killed by the same signal (so the caller sees a negative return code, and no "Killed" line is added to
# the child's stderr). A child that exits with a status above 128 is indistinguishable from one killed by a
# signal, as in any POSIX shell.
_LEADER = ('trap "kill -KILL 0" TERM\n'
           '"$@" &\n'
           'wait $! 2>/dev/null\n'
           's=$?\n'
           'if [ "$s" -gt 128 ]; then trap - TERM; kill -s "$(kill -l "$s")" $$ 2>/dev/null; fi\n'
           'exit "$s"\n')

_groups: set = set()               # process groups started by run(group=True) and still running
_groups_lock = threading.Lock()


def kill_groups() -> None:
    """Kill every process group that run(group=True) started and that is still running (from any thread):
    what a caller that runs them from worker threads does when it is interrupted."""
    with _groups_lock:
        live = list(_groups)
    for pgid in live:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run(command, *, group: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose child is killed when this process dies (Linux); elsewhere it is the same.

    An interrupt (Ctrl-C) while waiting kills the child too, as ``subprocess.run`` does. ``group=True`` is for a
    child that starts children of its own (a compiler driver and its cc1plus and as): it runs in a process
    group of its own under a small shell, and the whole group is killed, on an interrupt here, on any error
    while waiting, by :func:`kill_groups`, and when this process dies (even by SIGKILL: the shell is told by
    PDEATHSIG and kills its group). The child gets no standard input. Elsewhere than on Linux the group is
    made and killed on an interrupt, but nothing is told when this process dies."""
    if "preexec_fn" in kwargs or (not group and not _LINUX):
        return subprocess.run(command, **kwargs)
    parent = os.getpid()
    signum = signal.SIGTERM if group else signal.SIGKILL

    def prepare():                       # in the child, between fork and exec: no imports, no library loads
        if _PRCTL is None:
            return
        _SIGNAL(signal.SIGTERM, None)    # the default action: an ignored SIGTERM would be ignored in the shell too
        _PRCTL(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:       # the parent died before prctl took effect
            os._exit(1)
    if not group:
        return subprocess.run(command, preexec_fn=prepare, **kwargs)
    if kwargs.pop("input", None) is not None or kwargs.pop("stdin", None) not in (None, subprocess.DEVNULL):
        raise ValueError("processes.run(group=True) gives its child no standard input")
    if kwargs.pop("start_new_session", True) is False:
        raise ValueError("processes.run(group=True) always starts a session of its own")
    timeout = kwargs.pop("timeout", None)
    check = kwargs.pop("check", False)
    if kwargs.pop("capture_output", False):
        if "stdout" in kwargs or "stderr" in kwargs:
            raise ValueError("stdout and stderr arguments may not be used with capture_output.")
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    command = [str(c) for c in command]
    if shutil.which(command[0]) is None:  # as subprocess.run would say it, not as the shell's exit status 127
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command[0])
    wrapped = ["/bin/sh", "-c", _LEADER, "gemmlab-group", *command]
    with subprocess.Popen(wrapped, preexec_fn=prepare, start_new_session=True, stdin=subprocess.DEVNULL,
                          **kwargs) as proc:
        with _groups_lock:
            _groups.add(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException as exc:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                exc.cmd = command
            raise
        finally:
            with _groups_lock:
                _groups.discard(proc.pid)
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def python_on_emulator(script: str, payload, profile: str) -> subprocess.CompletedProcess:
    """``script`` run by a child Python on the CPU emulator as GPU profile ``profile`` (GEMMLAB_BACKEND=emulator,
    GEMMLAB_DEVICE=profile): ``payload`` pickled on its standard input, its standard output and error captured
    as text. What a GPU cannot run (a kernel above its capability) is checked this way, in a process of its own,
    since the backend is chosen once per process."""
    import pickle
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_DEVICE": profile}
    done = run([sys.executable, "-c", script], input=pickle.dumps(payload), stdout=subprocess.PIPE,
               stderr=subprocess.PIPE, env=env)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(errors="replace"),
                                       done.stderr.decode(errors="replace"))
