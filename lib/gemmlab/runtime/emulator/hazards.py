"""What went wrong in an emulated launch, in words: the hazards racecheck found, and where a bad
access or a crash happened (the source line of a code address, the argument an address belongs to)."""
from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass

import numpy


@functools.lru_cache(maxsize=None)
def _emulator_header_names() -> tuple:
    """The emulator's own headers (gemmlab_emu.h and its CUDA stand-ins), as paths relative to their folder."""
    from ..source import _STAND_INS
    return tuple(sorted(str(p.relative_to(_STAND_INS)) for p in _STAND_INS.rglob("*") if p.is_file())) + ("gemmlab_emu.h",)


def _in_emulator_headers(line: str) -> bool:
    """Whether addr2line's 'file:line' names one of the emulator's headers."""
    path = line.split(" (discriminator")[0].rsplit(":", 1)[0]
    return any(path == name or path.endswith("/" + name) for name in _emulator_header_names())


def _emulator_header_line(line: str) -> str:
    """'the emulator's <cub/cub.cuh>:74' for addr2line's 'I1/cub/cub.cuh:74' (the build's link to its folder)."""
    path, _, number = line.split(" (discriminator")[0].rpartition(":")
    name = max((n for n in _emulator_header_names() if path == n or path.endswith("/" + n)), key=len, default=path)
    return f"the emulator's <{name}>:{number}"


@dataclass(frozen=True)
class Hazard:
    """One race found by the emulator's racecheck: two accesses to shared memory with no barrier between them, or
    to global memory by two lanes of a warp with no __syncwarp between them."""
    kind: str                 # read-after-write, write-after-read or write-after-write
    array: str                # the __shared__ array's name, "dynamic shared memory", or an argument ("argument 0 ('y')")
    offset: int               # byte offset into it
    bytes: int
    block: tuple
    first_thread: tuple       # the earlier access's thread (x, y, z), then the later one's
    second_thread: tuple
    first_line: str           # file:line of each access
    second_line: str
    memory: str = "shared"    # or "global" (two lanes of one warp)

    def describe(self) -> str:
        t1, t2 = (",".join(map(str, t)) for t in (self.first_thread, self.second_thread))
        between = "no barrier" if self.memory == "shared" else "no __syncwarp (two lanes of one warp)"
        return (f"{self.kind} hazard on {self.array} (byte {self.offset}, {self.bytes} bytes) in block "
                f"({','.join(map(str, self.block))}): thread ({t1}) at {self.first_line or '?'}, then thread ({t2}) "
                f"at {self.second_line or '?'}, with {between} between them")



class _Hazard(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("block", ctypes.c_uint * 3), ("first", ctypes.c_uint * 3),
                ("second", ctypes.c_uint * 3), ("pc_first", ctypes.c_ulonglong), ("pc_second", ctypes.c_ulonglong),
                ("offset", ctypes.c_longlong), ("bytes", ctypes.c_uint), ("array", ctypes.c_char * 48)]


HAZARD_KINDS = {1: "read-after-write", 2: "write-after-read", 3: "write-after-write"}


def allocation(a: numpy.ndarray) -> tuple:
    """The bytes [low, high) of the memory an array lies in: for a view, the array it is a view of (the first in
    its chain of bases that owns its memory, or lies over a buffer that is not an array), as a GPU pointer into
    the middle of an allocation may reach the whole of it."""
    root = a
    while isinstance(root.base, numpy.ndarray):
        root = root.base
    low = high = root.__array_interface__["data"][0]
    if root.size:
        for n, stride in zip(root.shape, root.strides):
            (low, high) = (low + stride * (n - 1), high) if stride < 0 else (low, high + stride * (n - 1))
        high += root.itemsize
    return low, high


class Explains:
    """The part of :class:`~gemmlab.runtime.emulator.launch.EmulatedFunction` that turns a launch's status into
    words; it needs the kernel's ``library`` (for its line table), ``_locations`` (a cache) and ``_argument``."""

    def _hazards(self, status, regions=(), args=()) -> list:
        out = []
        for h in status.hazards[:status.hazards_kept]:
            array, offset, memory = h.array.decode(errors="replace"), h.offset, "shared"
            if array == "global memory":                 # offset: the address in the argument's copy
                memory = "global"
                nearest = self._nearest_argument(offset, regions, args)
                if nearest is not None:
                    array, offset = self._argument(nearest[0]), offset - nearest[1]
            out.append(Hazard(kind=HAZARD_KINDS.get(h.kind, "hazard"), array=array, offset=offset, bytes=h.bytes,
                              block=tuple(h.block), first_thread=tuple(h.first), second_thread=tuple(h.second),
                              first_line=self._location(h.pc_first), second_line=self._location(h.pc_second),
                              memory=memory))
        self.hazard_total = status.hazard_count
        return out

    def _source_line(self, pc):
        """' at file:line' of a code offset in this kernel's library, or ''."""
        where = self._location(pc)
        return f" at {where}" if where else ""

    def _location(self, pc) -> str:
        """'file:line' of a code offset in this kernel's library (from its line table), or ''; each offset is
        looked up once (a racecheck report names the same few lines many times)."""
        if pc in self._locations:
            return self._locations[pc]
        tool = shutil.which("addr2line")
        where = ""
        if pc and tool:
            try:
                out = subprocess.run([tool, "-e", str(self.library), "-i", hex(pc - 1)], capture_output=True,
                                     text=True, timeout=10).stdout.split("\n")
            except (OSError, subprocess.SubprocessError):
                out = []
            known = [x.strip() for x in out if x.strip() and not x.startswith("??")]
            # (the innermost frame of the user's code: an access inside the emulator's own headers, a bf16
            # conversion or a fragment load, is named at the user's line that made it)
            lines = [x for x in known if not _in_emulator_headers(x)]
            if lines:
                where = re.sub(r"^.*/\.build-[^/]+/", "", lines[0].split(" (discriminator")[0])
            elif known:                       # a function of the emulator's headers that was not inlined
                where = _emulator_header_line(known[0])
        self._locations[pc] = where
        return where

    @staticmethod
    def _nearest_argument(address, regions, args):
        """(argument index, address of its copy's first byte) of the argument nearest ``address``, or None."""
        best = None
        for start, _, buf, members in regions:
            for i in members:
                lo = buf + args[i].__array_interface__["data"][0] - start
                hi = lo + args[i].nbytes
                distance = 0 if lo <= address < hi else min(abs(address - lo), abs(address - hi))
                if best is None or distance < best[0]:
                    best = (distance, i, lo)
        return best[1:] if best is not None else None

    def _explain_access(self, status, regions, args):
        """An out-of-bounds access to an argument, in the argument's elements."""
        verb = "writes" if status.access_write else "reads"
        address, n = status.fault_address, status.access_size
        nearest = self._nearest_argument(address, regions, args)
        if nearest is None:
            return f"{verb} {n} bytes at address {address:#x}, outside every argument"
        i, lo = nearest
        a = args[i]
        offset = address - lo
        item = a.itemsize or 1
        element = offset // item if offset >= 0 else -((-offset + item - 1) // item)
        if offset < 0:
            side = f"{-offset} bytes before its start"
        else:
            side = f"{offset + n - a.nbytes} bytes past its end" if offset + n > a.nbytes else "inside it"
        low, high = allocation(a)
        if (low, high) != (a.__array_interface__["data"][0], a.__array_interface__["data"][0] + a.nbytes):
            side += f", and outside the {high - low} bytes of the array it is a view of"
        return (f"{verb} {n} bytes at element {element} of {self._argument(i)} ({a.dtype.name}, {a.size} "
                f"elements): {side}")

    @classmethod
    def _explain_address(cls, address, regions, args):
        """A crash's address, placed beside the argument it missed by less than two pages, if any, or named
        as an unsigned 32-bit index below 0 that wrapped (threadIdx.x - 1 in thread 0) past one."""
        for start, _, buf, members in regions:
            for i in members:
                a = args[i]
                lo = buf + a.__array_interface__["data"][0] - start
                item = a.itemsize or 1
                wrapped = lo + (item << 32) - address
                if 0 < wrapped <= 65536 * item:
                    index = 2**32 - (wrapped + item - 1) // item
                    return (f": address {address:#x} is element {index} of argument {i} ({a.dtype.name}, "
                            f"{a.size} elements), an unsigned 32-bit index that went below 0 and wrapped "
                            f"(-{2**32 - index} as an int); compute indexes that can go below 0 as int")
        nearest = cls._nearest_argument(address, regions, args)
        if nearest is not None:
            i, lo = nearest
            a = args[i]
            hi = lo + a.nbytes
            if hi <= address < hi + 8192:
                return (f": address {address:#x} is {address - hi} bytes past the end of argument {i} "
                        f"({a.dtype.name}, {a.size} elements)")
            if lo - 8192 <= address < lo:
                return (f": address {address:#x} is {lo - address} bytes before the start of argument {i} "
                        f"({a.dtype.name}, {a.size} elements)")
        return f": address {address:#x}"
