"""Launching an emulated kernel: the forked child, its memory, its status, and what a failure means."""
from __future__ import annotations

import ctypes
import math
import os
import select
import signal
import threading
import time

from pathlib import Path

import numpy

from .hazards import Explains, _Hazard, allocation


_LAUNCHES = threading.RLock()        # emulated launches run one after another, as on a GPU stream


def _fresh_lock():                   # a process forked while another thread held the lock must not inherit it
    global _LAUNCHES
    _LAUNCHES = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock)


class EmulatorError(RuntimeError):
    """A kernel failed on the emulator: a deadlock at a barrier, a crash, an out-of-bounds access, a time-out."""


class EmulatorTimeout(EmulatorError):
    """A kernel ran past the emulator's time limit (GEMMLAB_EMULATOR_TIMEOUT) and was stopped."""


def timeout_setting():
    """GEMMLAB_EMULATOR_TIMEOUT in seconds (None: no limit), checked before anything is started."""
    text = os.environ.get("GEMMLAB_EMULATOR_TIMEOUT", "600").strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"GEMMLAB_EMULATOR_TIMEOUT={text!r} must be a number of seconds >= 0 (default 600; "
                         f"0 means no limit)")
    return None if value == 0 else value


def workers_setting():
    """GEMMLAB_EMULATOR_WORKERS: how many processes may run one launch's blocks at once (default: the CPUs this
    process may use, at most 8; 1 runs every grid in one process), checked before anything is started."""
    text = os.environ.get("GEMMLAB_EMULATOR_WORKERS", "").strip()
    if not text:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
        return max(1, min(cpus, 8))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"GEMMLAB_EMULATOR_WORKERS={text!r} must be a whole number of processes >= 1 (1 runs each "
                         f"grid in one process; unset, the CPUs this process may use, at most 8)")
    return int(text)


# A grid of fewer threads than this runs in one process: a second costs a fork (about a millisecond), more than
# such a grid's blocks take.
PARALLEL_THREADS = 16384



# The device heap: kernels' malloc and new (gemmlab_emu.h), one region for every module of the process, mapped
# shared so that every launch's processes see it where the first one left it, as a GPU's heap outlives its
# kernels. 8 MiB, CUDA's default (cudaLimitMallocHeapSize).
HEAP_BYTES = 8 << 20
_HEAP = None
_HEAP_LOCK = threading.Lock()


def _device_heap():
    """(address, bytes) of the process's device heap, mapped on first use (and again in a process that Python
    forked: each process is a GPU of its own, with its own heap)."""
    global _HEAP
    with _HEAP_LOCK:
        if _HEAP is None:
            import mmap
            region = mmap.mmap(-1, HEAP_BYTES)            # anonymous and shared with the forked children
            _HEAP = (region, ctypes.addressof(ctypes.c_char.from_buffer(region)))
        return _HEAP[1], HEAP_BYTES


def _forget_heap():
    global _HEAP, _HEAP_LOCK
    _HEAP, _HEAP_LOCK = None, threading.Lock()        # (the parent's region stays the parent's)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_heap)


class _Region(ctypes.Structure):
    _fields_ = [("data", ctypes.c_ulonglong), ("bytes", ctypes.c_ulonglong), ("touchable", ctypes.c_ulonglong),
                ("tracked", ctypes.c_ulonglong), ("written", ctypes.c_void_p), ("read", ctypes.c_void_p)]


def _bits(address, n):
    """n bytes at address, as a NumPy array over them (no copy)."""
    return numpy.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(address)) if n else numpy.zeros(0, numpy.uint8)


def _saw_each_other(maps, regions, table) -> bool:
    """Whether the blocks of one process could have seen another's: a byte one wrote that another read or wrote,
    or an argument that every kernel parameter reaching it declares const, changed (a kernel that writes its input:
    no process kept bits of it). maps holds, for each region the kernel may write, each process's (written, read)
    bitmaps (a bit a byte), their size, and the region's bytes now and before the launch (the launch's copy and
    the caller's array).

    The compiler checks a store that follows a load of the same address only once, at the load (y[i] += 1 reports
    a read and no write), so the writes the bitmaps hold are not all of them: a byte that changed was written by
    a process that touched it, and where two processes touched it, or none did (a copy the checks do not see),
    the blocks may have seen each other."""
    for per_process, n, _, now, before in maps:
        written = [_bits(w, n) for w, _ in per_process]
        anyone = numpy.zeros(n, dtype=numpy.uint8)
        for mine in written:
            if numpy.bitwise_and(anyone, mine).any():          # written by two processes
                return True
            anyone |= mine
        touched = numpy.zeros(n, dtype=numpy.uint8)
        twice = numpy.zeros(n, dtype=numpy.uint8)
        for mine, (_, r) in zip(written, per_process):
            read = _bits(r, n)
            if (read & anyone & ~mine).any():                  # read where another process wrote
                return True
            both = read | mine
            twice |= touched & both
            touched |= both
        if _changed_where(now, before, twice | ~touched):      # changed by one of several, or by none we saw
            return True
    return any(not r.tracked and _libc.memcmp(buf, start, size) for (start, size, buf, _), r in zip(regions, table))


def _changed_where(now, before, suspect, chunk: int = 1 << 24) -> bool:
    """Whether a byte that differs between the regions ``now`` and ``before`` ((address, bytes) each) has its bit
    set in ``suspect`` (a bit a byte); compared a chunk at a time, with memcmp first, so that an unchanged chunk
    costs no more than reading it."""
    (at, size), (was, _) = now, before
    for lo in range(0, size, chunk):
        n = min(chunk, size - lo)
        if not _libc.memcmp(at + lo, was + lo, n):
            continue
        changed = numpy.packbits(_bits(at + lo, n) != _bits(was + lo, n), bitorder="little")
        if (changed & suspect[lo // 8:lo // 8 + len(changed)]).any():
            return True
    return False


_libc = ctypes.CDLL(None)
_libc.memcmp.restype = ctypes.c_int
_libc.memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


class EmulatedFunction(Explains):
    """One kernel instance compiled for the CPU."""

    num_regs = None
    static_shared_bytes = 0
    last_switches = 0          # fiber switches of the last launch
    last_processes = 0         # the processes that ran the last launch's blocks (_ranges)
    last_rerun = False         # whether its blocks ran again in one process, having touched what another wrote

    @property
    def limits(self):
        """The launch limits of the emulated GPU (the profile in use: GEMMLAB_DEVICE, else the H200)."""
        from ..profiles import current
        return current().limits

    def __init__(self, lib, symbol: str, kernel_name: str, max_threads, library: Path, memcheck: bool):
        self.lib = lib
        self.name = kernel_name
        self.library = library
        self.memcheck = memcheck
        self.param_names = None    # set by the loader (describe_params): the kernel's parameter names, for messages,
        self.param_readonly = None  # which are pointers to const (their memory is only read)
        self.param_by_value = None  # and which are values (a struct as a one-element structured array: its bytes)
        sizes = getattr(lib, symbol + "_sizes", None)   # what each parameter takes, in bytes (sizeof)
        self.param_sizes = None
        if sizes is not None:
            sizes.restype = ctypes.c_uint
            out = (ctypes.c_ulonglong * 4096)()
            self.param_sizes = list(out[:sizes(out)])
        self._locations = {}       # code offset -> 'file:line' (see _location)
        self.max_threads_per_block = max_threads or self.limits.max_threads_per_block
        self.body = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p)
        self.fork_launch = lib.gl_emu_fork_launch
        self.fork_launch.restype = ctypes.c_long
        self.fork_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                                     ctypes.POINTER(ctypes.c_uint), ctypes.c_ulonglong,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.POINTER(_Region),
                                     ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_int]
        lib.gl_emu_shared_alloc.restype = ctypes.c_void_p
        lib.gl_emu_shared_alloc.argtypes = [ctypes.c_ulonglong]
        lib.gl_emu_shared_free.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
        lib.gl_emu_status_size.restype = ctypes.c_ulonglong
        lib.gl_emu_set_heap.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
        self.blocks_independent = bool(lib.gl_emu_blocks_independent())   # (gemmlab_emu.h, blocks_independent)
        self.module = None         # set by compile(): __device__ variables live as long as their module

    def describe_params(self, params, readonly):
        """The kernel's parameters (the loader's Signature.params) and which pointers are to const."""
        self.param_names = [p.name for p in params]
        self.param_readonly = readonly
        self.param_by_value = [not p.pointer for p in params]

    def _argument(self, i):
        names = self.param_names
        if names and i >= len(names):
            return "the matrix of a TMA tensor map"
        return f"argument {i} ({names[i]!r})" if names and i < len(names) else f"argument {i}"

    # -- arguments in shared memory ------------------------------------------------------------
    def _regions(self, args):
        """Array arguments grouped into non-overlapping byte ranges of host memory: each argument's whole
        allocation (a view's, the array it is a view of), which a kernel may reach as it may on a GPU (a pointer
        into the middle of an array, as stencils are passed, reading before it)."""
        spans = []
        by_value = self.param_by_value or ()
        for i, a in enumerate(args):
            if isinstance(a, numpy.ndarray) and not (i < len(by_value) and by_value[i]):
                start, end = allocation(a)
                spans.append([start, max(end, start + 1), [i]])
        spans.sort()
        merged = []
        for s in spans:
            if merged and s[0] < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], s[1])
                merged[-1][2] += s[2]
            else:
                merged.append(s)
        return merged

    def launch(self, grid, block, args, shared_mem, stream):
        timeout = timeout_setting()                 # a bad setting fails here, before anything starts
        workers = workers_setting()
        # One launch at a time in this process, as a GPU stream runs them: each launch copies its arrays in
        # and back whole, and __device__ variables too, so two at once would undo each other's writes.
        with _LAUNCHES:
            self._launch(grid, block, args, shared_mem, timeout, workers)

    def _ranges(self, grid, block, workers, device_vars, cluster=1):
        """The grid's blocks as consecutive ranges (first, count), one for each process that runs them. Several
        only where the blocks cannot see each other (blocks_independent: no atomics, fences or volatile memory,
        no __device__ variables, no device heap, no racecheck) and the grid is large enough to pay for another fork;
        the result is then the one process's, bit for bit: each block computes what it would, the output of each
        range is passed on in block order, and a failure is the lowest-numbered failing block's, as one process finds
        it. Blocks that do see each other through memory (a race between blocks: one reads or writes what another
        wrote) are found after the run (_saw_each_other), and the grid then runs again in one process."""
        blocks = grid[0] * grid[1] * grid[2]
        threads = blocks * block[0] * block[1] * block[2]
        units = blocks // cluster                      # (a cluster's blocks run together: whole clusters a process)
        if (workers < 2 or units < 2 or threads < PARALLEL_THREADS or device_vars is not None
                or getattr(self, "racecheck", False) or not self.blocks_independent):
            return [(0, blocks)]
        workers = min(workers, units)
        each, extra = divmod(units, workers)
        ranges, first = [], 0
        for w in range(workers):
            count = (each + (w < extra)) * cluster
            ranges.append((first, count))
            first += count
        return ranges

    def _tensor_maps(self, args):
        """The arrays that the TMA tensor maps among the by-value arguments describe (gemmlab.tma's maps for the
        emulator), in order, and for each by-value argument with maps [(offset of a map, index of its array)]."""
        from ..tma import emulated_arrays
        extra, where = [], {}
        by_value = self.param_by_value or ()
        for i, a in enumerate(args):
            if not (i < len(by_value) and by_value[i]) or not isinstance(a, (numpy.ndarray, numpy.generic)):
                continue
            for at, array in emulated_arrays(a.tobytes()):
                if array is None:
                    raise EmulatorError(f"kernel {self.name}: {self._argument(i)} holds a tensor map whose matrix "
                                        f"is gone (make the map again from an array that is still there)")
                k = next((j for j, b in enumerate(extra) if b is array), None)
                if k is None:
                    extra.append(array)
                    k = len(extra) - 1
                where.setdefault(i, []).append((at, len(args) + k))
        return extra, where

    def _clusters(self, grid):
        """The launch's clusters (the kernel's __cluster_dims__), checked as a GPU's launch checks them: a GPU of
        compute capability 9.0 or later, at most 8 blocks a cluster (the portable size), a grid of whole clusters."""
        dims = tuple(getattr(self, "cluster_dims", (1, 1, 1)))
        if dims == (1, 1, 1):
            return dims
        from ..profiles import current
        gpu, size = current(), dims[0] * dims[1] * dims[2]
        shape = " x ".join(str(d) for d in dims)
        if gpu.capability < (9, 0):
            raise EmulatorError(f"kernel {self.name}: clusters of {shape} blocks (__cluster_dims__) need a GPU of "
                                f"compute capability 9.0 or later; the emulated {gpu.name} is "
                                f"{gpu.capability[0]}.{gpu.capability[1]}")
        if min(dims) < 1 or size > 8:
            raise EmulatorError(f"kernel {self.name}: clusters of {shape} blocks: a cluster holds 1 to 8 blocks (more "
                                "needs cudaFuncAttributeNonPortableClusterSizeAllowed, which the emulator does not "
                                "model)")
        if any(g % d for g, d in zip(grid, dims)):
            raise EmulatorError(f"kernel {self.name}: a grid of {' x '.join(map(str, grid))} blocks is not made of "
                                f"whole clusters of {shape} (cudaErrorInvalidClusterSize on a GPU)")
        return dims

    def _launch(self, grid, block, args, shared_mem, timeout, workers):
        lib = self.lib
        cluster = self._clusters(tuple(grid))
        lib.gl_emu_set_cluster(*cluster)
        extra, maps = self._tensor_maps(args)
        called = len(args)
        args = list(args) + extra                      # a map's matrix: copied in (and back) as the arguments are
        regions, keep, pointers, bitmaps = [], [], [None] * len(args), []
        copied = [0] * len(args)                       # where the launch's copy of each array argument lies
        status_size = lib.gl_emu_status_size()
        lib.gl_emu_set_heap(*_device_heap())      # one heap for every module, as a GPU's context has one
        statuses, outputs, pids, codes = [], [], [], []
        try:
            for start, end, members in self._regions(args):
                size = end - start
                buf = lib.gl_emu_shared_alloc(size)
                if not buf:
                    raise MemoryError(f"the emulator could not map {size} bytes of shared memory")
                regions.append((start, size, buf, members))
                ctypes.memmove(buf, start, size)
                for i in members:
                    copied[i] = buf + args[i].__array_interface__["data"][0] - start
                    p = ctypes.c_void_p(copied[i])
                    keep.append(p)
                    pointers[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
            for i, a in enumerate(args[:called]):
                if pointers[i] is not None:
                    continue
                if a is None:                         # a NULL pointer argument
                    p = ctypes.c_void_p(0)
                    keep.append(p)
                    pointers[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
                    continue
                if not isinstance(a, (numpy.generic, numpy.ndarray)):
                    raise EmulatorError(f"kernel {self.name}: {self._argument(i)} of type {type(a).__name__} cannot "
                                        "be passed on the emulator, which takes arrays and numbers")
                if self.param_sizes is not None and i < len(self.param_sizes) and a.nbytes != self.param_sizes[i]:
                    raise EmulatorError(f"kernel {self.name}: {self._argument(i)} takes {self.param_sizes[i]} bytes "
                                        f"by value, but {a.nbytes} were given ({a.dtype}): a struct must be passed "
                                        "as a one-element NumPy array of a structured dtype laid out as the C++ "
                                        "struct is (numpy.dtype([...], align=True))")
                data = bytearray(a.tobytes())
                for at, k in maps.get(i, ()):          # each map names where the launch's copy of its matrix lies
                    data[at + 8:at + 16] = copied[k].to_bytes(8, "little")
                c = (ctypes.c_char * a.nbytes).from_buffer_copy(bytes(data))
                keep.append(c)
                pointers[i] = ctypes.cast(ctypes.pointer(c), ctypes.c_void_p)
            argv = (ctypes.c_void_p * max(called, 1))(*[p.value for p in pointers[:called]])
            table = (_Region * max(len(regions), 1))()
            for r, (start, size, buf, members) in zip(table, regions):
                # what may be touched: the arrays' allocations (an empty array of its own: none)
                touchable = max(allocation(args[i])[1] - start for i in members)
                r.data, r.bytes, r.touchable = buf, size, touchable
                # memory the kernel may write (an argument that is not a pointer to const): its warps' loads after
                # their stores are made in lockstep (gemmlab_emu.h, global_access)
                readonly = self.param_readonly
                r.tracked = int(readonly is None or not all(i < len(readonly) and readonly[i] for i in members))
            arguments = len(regions)
            device_vars = self._device_vars_in(regions)
            ranges = self._ranges(grid, block, workers, device_vars, cluster[0] * cluster[1] * cluster[2])
            whole = [(0, grid[0] * grid[1] * grid[2])]
            if len(ranges) > 1 and not self.memcheck:   # (no process could say what its blocks touched)
                ranges = whole
            maps = []
            if len(ranges) > 1:                        # each process's bits: what its blocks wrote and read
                for (start, size, buf, _), r in zip(regions, table[:arguments]):
                    n = (size + 7) // 8
                    if not r.tracked:
                        continue
                    per_process = []
                    for _ in ranges:
                        w, rd = lib.gl_emu_shared_alloc(n), lib.gl_emu_shared_alloc(n)
                        bitmaps.append((w, rd, n))
                        if not w or not rd:
                            raise MemoryError(f"the emulator could not map {2 * n} bytes of access bits")
                        per_process.append((w, rd))
                    maps.append((per_process, n, r, (buf, size), (start, size)))
            launch = (grid, block, shared_mem, argv, table, arguments, timeout, status_size)
            try:
                failed = self._start(ranges, maps, launch, statuses, outputs, pids, codes)
            except (EmulatorTimeout, KeyboardInterrupt):
                # what the ranges printed up to the one that was still running, as one process would have
                # printed it by then (a hang's printf-debugging works with any number of workers)
                if outputs:
                    _reap(pids, codes)
                    late = next((w for w, code in enumerate(codes) if code is None or not _ran(code, statuses[w])),
                                len(outputs) - 1)
                    self._pass_on(outputs[:late + 1])
                raise
            if len(ranges) > 1 and _saw_each_other(maps, regions, table[:arguments]):
                # Blocks in different processes touched what another wrote (a race between blocks, or a kernel
                # writing an input it declared const): their answer could depend on which process ran first and
                # on how many there were. The whole grid runs again in one process, blocks in order, as it does
                # with one worker: the same bits on every machine.
                self.last_rerun = True
                _reap(pids, codes)
                self._free(statuses, outputs, status_size)
                for start, size, buf, _ in regions[:arguments]:
                    ctypes.memmove(buf, start, size)
                ranges = whole
                failed = self._start(ranges, [], launch, statuses, outputs, pids, codes)
            else:
                self.last_rerun = False
            self.last_processes = len(ranges)
            self._pass_on(outputs[:len(ranges) if failed is None else failed + 1])
            self._outcome(failed, codes, statuses, regions, args)
            self._copy_back(regions, args, copied)
            self._device_vars_out(device_vars)
        finally:
            _reap(pids, codes)                         # (Ctrl-C, or any other exception: no child left behind)
            self._free(statuses, outputs, status_size)
            for _, size, buf, _ in regions:
                lib.gl_emu_shared_free(buf, size)
            for written, read, n in bitmaps:
                for address in (written, read):
                    if address:
                        lib.gl_emu_shared_free(address, n)

    def _free(self, statuses, outputs, status_size):
        """Close a run's outputs and free its status pages (the lists emptied)."""
        for fd in outputs:
            os.close(fd)
        for status_addr in statuses:
            self.lib.gl_emu_shared_free(status_addr, status_size)
        outputs.clear()
        statuses.clear()

    def _start(self, ranges, maps, launch, statuses, outputs, pids, codes):
        """Run the grid's blocks, a process for each range (first, count), and wait for them; returns the first
        that failed (None: all ran). With several, what each prints is kept for _pass_on, and maps gives each its
        bitmaps of the bytes it writes and reads."""
        grid, block, shared_mem, argv, table, arguments, timeout, status_size = launch
        lib = self.lib
        pids.clear()
        codes.clear()
        for w, (first, count) in enumerate(ranges):
            status_addr = lib.gl_emu_shared_alloc(status_size)
            if not status_addr:
                raise MemoryError("the emulator could not map its status page")
            statuses.append(status_addr)
            ctypes.memset(status_addr, 0, status_size)
            ctypes.c_int.from_address(status_addr).value = 3
            for r in table[:arguments]:
                r.written = r.read = None
            for per_process, _, r, _, _ in maps:
                r.written, r.read = per_process[w]
            out = -1
            if len(ranges) > 1:                        # printed in block order once all have run (_pass_on)
                out = os.memfd_create("gemmlab-emulator-output") if hasattr(os, "memfd_create") else \
                    _temporary_fd()
                outputs.append(out)
            pid = self.fork_launch(self.body, self.name.encode(), (ctypes.c_uint * 3)(*grid),
                                   (ctypes.c_uint * 3)(*block), shared_mem, argv, status_addr, table, arguments,
                                   first, count, out)
            if pid < 0:
                raise EmulatorError(f"kernel {self.name}: could not start the emulated launch (fork failed)")
            pids.append(pid)
            codes.append(None)
        return self._wait(pids, codes, statuses, timeout)


    def _device_vars_in(self, regions):
        """Give this library the module's __device__ and __constant__ variables as the last launch (or the host,
        through Module.get_global) left them; a shared buffer for the child to leave them in."""
        base, size = _section(self.lib)
        if not base or not size:
            return None
        whole, pieces = _pieces(self.module, self.lib, size) if self.module is not None else (False, [])
        if not whole:                             # none, or laid out otherwise in this build: variable by variable
            ctypes.memmove(base, _initial(self.lib), size)
        state = None if self.module is None else self.module._device_state
        for at, there, n in pieces:
            ctypes.memmove(base + at, state.ctypes.data + there, n)
        buf = self.lib.gl_emu_shared_alloc(size)
        if not buf:
            raise MemoryError("the emulator could not map room for the __device__ variables")
        regions.append((0, size, buf, []))     # freed with the arguments' regions
        self.lib.gl_emu_device_vars(ctypes.byref(ctypes.c_ulonglong()), ctypes.c_void_p(buf))
        return base, buf, size

    def _device_vars_out(self, device_vars):
        if device_vars is None:
            return
        base, buf, size = device_vars
        ctypes.memmove(base, buf, size)
        if self.module is not None:                # written in place: get_global's arrays see it
            state = self.module._device_state
            for at, there, n in _pieces(self.module, self.lib, size)[1]:
                ctypes.memmove(state.ctypes.data + there, buf + at, n)
        self.lib.gl_emu_device_vars(ctypes.byref(ctypes.c_ulonglong()), None)

    def _copy_back(self, regions, args, copied):
        """Write the launch's results into the caller's writable arrays; a read-only one must be unchanged.
        copied: where the launch's copy of each array argument lies."""
        located = {i: copied[i] for _, _, _, members in regions for i in members}
        writable = [i for i in located if args[i].flags.writeable]
        for i in located:
            a = args[i]
            if a.flags.writeable or a.nbytes == 0:
                continue
            lo = a.__array_interface__["data"][0]
            if any(_overlap(lo, a.nbytes, args[w].__array_interface__["data"][0], args[w].nbytes) for w in writable):
                continue                          # written through a writable alias: legal
            after = (ctypes.c_char * a.nbytes).from_address(located[i])
            if bytes(after) != a.view(numpy.uint8).reshape(-1).tobytes():
                raise EmulatorError(
                    f"kernel {self.name} wrote to {self._argument(i)}, a read-only array (its flags.writeable is "
                    f"False: a read-only memory map, a buffer over bytes, or setflags(write=False)); nothing was "
                    f"written back, to it or to any other argument. Pass a writable array for an output")
        for start, _, buf, members in regions:   # each writable array's whole allocation (a kernel may write past
            for lo, hi in {allocation(args[i]) for i in members if args[i].flags.writeable}:   # a view's ends), once
                ctypes.memmove(lo, buf + lo - start, hi - lo)

    def _wait(self, pids, codes, statuses, timeout):
        """Wait for the processes of a launch (their exit statuses land in codes). Returns None when every one
        ran its blocks, else the first (in block order) that failed, once every process before it has finished
        (the ones after it are stopped: one process running the whole grid would not have reached their
        blocks). Past the time limit every process is stopped and the first still running is named."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.0005
        # Woken the moment a child exits where the system can say so (a pidfd, Linux 5.3+); else polled,
        # with sleeps that grow from 0.5 ms (a short launch then waits up to a few ms longer than it ran).
        watches = []
        try:
            for pid in pids:
                try:
                    watches.append(os.pidfd_open(pid))
                except (AttributeError, OSError):
                    watches.append(None)
            while True:
                for w, pid in enumerate(pids):
                    if codes[w] is None:
                        done, code = os.waitpid(pid, os.WNOHANG)
                        if done:
                            codes[w] = code
                failed = next((w for w, code in enumerate(codes) if code is not None and not _ran(code, statuses[w])),
                              None)
                needed = len(pids) if failed is None else failed
                if all(code is not None for code in codes[:needed]):
                    _reap(pids, codes)
                    return failed
                if deadline is not None and time.monotonic() > deadline:
                    late = next(w for w in range(needed) if codes[w] is None)
                    _reap(pids, codes)
                    raise EmulatorTimeout(f"kernel {self.name} ran longer than {timeout:g} s on the emulator and "
                                          f"was stopped ({self._where(statuses[late])}); an endless loop? "
                                          f"(GEMMLAB_EMULATOR_TIMEOUT)")
                waiting = [watches[w] for w in range(needed) if codes[w] is None and watches[w] is not None]
                if len(waiting) == sum(code is None for code in codes[:needed]):
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    select.select(waiting, [], [], left)     # readable once a child has exited
                else:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
        finally:
            for watch in watches:
                if watch is not None:
                    os.close(watch)

    def _pass_on(self, outputs):
        """What the processes printed, in block order (one process prints as it runs, with no file between)."""
        for fd in outputs:
            os.lseek(fd, 0, os.SEEK_SET)
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                while data:
                    data = data[os.write(1, data):]

    def _outcome(self, failed, codes, statuses, regions, args):
        """Nothing when the launch ran; else the error its failing process (failed) reported."""
        if failed is None:
            self.last_switches = sum(_Status.from_address(a).switches for a in statuses)
            if getattr(self, "racecheck", False):               # (one process: _ranges)
                status = _Status.from_address(statuses[0])
                self.last_hazards = self._hazards(status, regions, args)
                if self.raise_hazards and self.last_hazards:
                    raise EmulatorError(f"kernel {self.name}: racecheck found {status.hazard_count} hazards "
                                        f"(GEMMLAB_EMULATOR_RACECHECK=1):\n"
                                        + "\n".join("  " + h.describe() for h in self.last_hazards))
            return
        status_addr, code = statuses[failed], codes[failed]
        status = _Status.from_address(status_addr)
        where = self._where(status_addr)
        at = self._source_line(status.pc)
        if status.code == 1:
            raise EmulatorError(status.message.decode(errors="replace"))
        if status.code == 4:
            what = status.message.decode(errors="replace") if status.in_shared else \
                self._explain_access(status, regions, args)
            raise EmulatorError(f"kernel {self.name}: out-of-bounds access in {where}{at}: {what}")
        if status.code == 6:
            raise EmulatorError(f"kernel {self.name} stopped in {where}{at}: the CPU emulator does not support "
                                f"{status.message.decode(errors='replace')} (this kernel needs a GPU; the module's "
                                f"kernels that do not reach it run here)")
        if status.code == 5:
            raise EmulatorError(
                f"kernel {self.name} overflowed a thread's stack (local memory) in {where}{at}: its local "
                f"variables need more than the {status.stack_size // 1024} KiB of stack the emulator gives each "
                f"thread. CUDA allows at most "
                f"512 KiB of local memory per thread; a large array belongs in global memory")
        if status.code == 3 and os.WIFEXITED(code):
            raise EmulatorError(f"kernel {self.name} ended the emulator's process (exit code "
                                f"{os.WEXITSTATUS(code)}) before the grid finished, in {where}: a kernel must "
                                f"not call exit() or _exit(); nothing was written back")
        sig = status.signal or (os.WTERMSIG(code) if os.WIFSIGNALED(code) else
                                max(os.WEXITSTATUS(code) - 128, 0))
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
        detail = ""
        if status.fault_address:
            detail = (status.message.decode(errors="replace") if status.message[:1] == b":" else
                      self._explain_address(status.fault_address, regions, args))
        kind = {"SIGSEGV": "an invalid memory access", "SIGBUS": "an invalid memory access",
                "SIGFPE": "an arithmetic fault (integer division by zero?)", "SIGABRT": "an abort"}.get(name, name)
        raise EmulatorError(f"kernel {self.name} crashed on the emulator with {kind} ({name}) in {where}{at}{detail}")

    def _where(self, status_addr):
        s = _Status.from_address(status_addr)
        return (f"block ({s.block[0]},{s.block[1]},{s.block[2]}), "
                f"thread ({s.thread[0]},{s.thread[1]},{s.thread[2]})")



# -- the module's variables -------------------------------------------------------------------------------
# A module's __device__ and __constant__ variables live in one section of each of its libraries (one a kernel
# instance); the module keeps their values in one buffer (module._device_state), laid out as the first of its
# libraries lays them out, which each launch copies into its library and back, and which get_global's arrays
# view. A library that lays them out otherwise (another build's flags) is copied variable by variable.

def _section(lib) -> tuple:
    """(address, bytes) of the library's section of variables; (None, 0) when it has none. Looked up before
    anything writes the section, and its initializers read then (_initial)."""
    have = getattr(lib, "_gl_section", None)
    if have is None:
        lib.gl_emu_device_vars.restype = ctypes.c_void_p
        lib.gl_emu_device_vars.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p]
        size = ctypes.c_ulonglong()
        base = lib.gl_emu_device_vars(ctypes.byref(size), None)
        have = (base or None, size.value if base else 0)
        lib._gl_initial_device_vars = ctypes.string_at(base, size.value) if base else b""
        lib._gl_section = have
    return have


def _initial(lib) -> bytes:
    """The section as the library was loaded: the variables' initializers."""
    _section(lib)
    return lib._gl_initial_device_vars


def _layout(lib) -> dict:
    """name -> (offset in the section, bytes) of each variable the library keeps in its section (the names its
    build gave gl_emu_symbols: build._library sets them)."""
    have = getattr(lib, "_gl_layout", None)
    if have is None:
        have, (base, size) = {}, _section(lib)
        symbols, names = getattr(lib, "gl_emu_symbols", None), getattr(lib, "_gl_names", ())
        if symbols is not None and names and base:
            where, sizes = (ctypes.c_void_p * len(names))(), (ctypes.c_ulonglong * len(names))()
            symbols.restype = ctypes.c_uint
            symbols(where, sizes)
            for name, w, n in zip(names, where, sizes):
                if w is not None and base <= w and w + n <= base + size:
                    have[name] = (w - base, n)
        lib._gl_layout = have
    return have


def module_state(module, lib):
    """The module's variables as one writable byte array, made from `lib`'s initializers at first use."""
    state = getattr(module, "_device_state", None)
    if state is None:
        state = module._device_state = numpy.frombuffer(_initial(lib), dtype=numpy.uint8).copy()
        module._device_layout = _layout(lib)
    return state


def _pieces(module, lib, size: int) -> tuple:
    """(whole, [(offset in lib's section, offset in the module's buffer, bytes), ...]): one block where lib lays
    the variables out as the module's buffer does; else each variable both hold, and whole False (the rest of
    the section keeps lib's initializers)."""
    state, layout, mine = module_state(module, lib), _layout(lib), module._device_layout
    if len(state) == size and layout == mine:
        return True, [(0, 0, size)]
    return False, [(at, mine[name][0], n) for name, (at, n) in layout.items() if mine.get(name, (0, -1))[1] == n]


def variable_bytes(module, lib, name):
    """A uint8 view of one variable's bytes in the module's buffer (None when the library does not keep it)."""
    state = module_state(module, lib)
    place = module._device_layout.get(name)
    if place is None:
        return None
    return state[place[0]:place[0] + place[1]]


def _overlap(a, n, b, m) -> bool:
    return a < b + m and b < a + n



def _ran(code, status_addr) -> bool:
    """Whether a launch's process ran its blocks to the end (its exit status, and the status it left)."""
    return os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0 and _Status.from_address(status_addr).code == 0


def _reap(pids, codes):
    """Stop and reap the processes not yet reaped (codes[i] None; a reaped one's pid may be another process's
    by now): no child is left behind."""
    for w, pid in enumerate(pids):
        if codes[w] is not None:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            codes[w] = os.waitpid(pid, 0)[1]
        except (ProcessLookupError, ChildProcessError):
            codes[w] = -1


def _temporary_fd():
    """A file descriptor of an unnamed temporary file (where os.memfd_create is missing: macOS)."""
    import tempfile
    fd, name = tempfile.mkstemp(prefix="gemmlab-emulator-output-")
    os.unlink(name)
    return fd


class _Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("signal", ctypes.c_int), ("block", ctypes.c_uint * 3),
                ("thread", ctypes.c_uint * 3), ("fault_address", ctypes.c_ulonglong), ("switches", ctypes.c_ulonglong),
                ("pc", ctypes.c_ulonglong), ("access_size", ctypes.c_ulonglong), ("access_write", ctypes.c_int),
                ("in_shared", ctypes.c_int), ("stack_size", ctypes.c_ulonglong), ("stack_used", ctypes.c_ulonglong),
                ("message", ctypes.c_char * 4096), ("hazard_count", ctypes.c_uint), ("hazards_kept", ctypes.c_uint),
                ("hazards", _Hazard * 32)]

