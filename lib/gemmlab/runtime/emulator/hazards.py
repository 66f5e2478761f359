"""What the emulator's racecheck reports: one shared-memory hazard, as the runtime records it and as it reads."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass


@dataclass(frozen=True)
class Hazard:
    """One shared-memory race found by the emulator's racecheck: two accesses with no barrier between them."""
    kind: str                 # read-after-write, write-after-read or write-after-write
    array: str                # the __shared__ array's name, or "dynamic shared memory"
    offset: int               # byte offset into it
    bytes: int
    block: tuple
    first_thread: tuple       # the earlier access's thread (x, y, z), then the later one's
    second_thread: tuple
    first_line: str           # file:line of each access
    second_line: str

    def describe(self) -> str:
        t1, t2 = (",".join(map(str, t)) for t in (self.first_thread, self.second_thread))
        return (f"{self.kind} hazard on {self.array} (byte {self.offset}, {self.bytes} bytes) in block "
                f"({','.join(map(str, self.block))}): thread ({t1}) at {self.first_line or '?'}, then thread ({t2}) "
                f"at {self.second_line or '?'}, with no barrier between them")



class _Hazard(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("block", ctypes.c_uint * 3), ("first", ctypes.c_uint * 3),
                ("second", ctypes.c_uint * 3), ("pc_first", ctypes.c_ulonglong), ("pc_second", ctypes.c_ulonglong),
                ("offset", ctypes.c_longlong), ("bytes", ctypes.c_uint), ("array", ctypes.c_char * 48)]


HAZARD_KINDS = {1: "read-after-write", 2: "write-after-read", 3: "write-after-write"}

