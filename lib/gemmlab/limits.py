"""Launch limits of a device: what a kernel launch is checked against before it is sent.

On a GPU they are read from the device's attributes; the emulator uses the limits common to every
CUDA GPU of compute capability 7.0 and later, so a launch the emulator accepts is legal on real hardware.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    name: str
    max_threads_per_block: int = 1024
    max_block_dim: tuple = (1024, 1024, 64)
    max_grid_dim: tuple = (2**31 - 1, 65535, 65535)
    shared_per_block: int = 48 * 1024          # without opting in
    shared_per_block_optin: int = 48 * 1024    # the most a kernel may opt in to
    registers_per_block: int = 65536
    warp_size: int = 32


EMULATOR = Limits(name="CPU emulator (limits of any CUDA GPU of compute capability >= 7.0)")


def cuda_limits(cupy, device_id: int | None = None) -> Limits:
    dev = cupy.cuda.Device(device_id) if device_id is not None else cupy.cuda.Device()
    a = dev.attributes
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return Limits(
        name=name,
        max_threads_per_block=a["MaxThreadsPerBlock"],
        max_block_dim=(a["MaxBlockDimX"], a["MaxBlockDimY"], a["MaxBlockDimZ"]),
        max_grid_dim=(a["MaxGridDimX"], a["MaxGridDimY"], a["MaxGridDimZ"]),
        shared_per_block=a["MaxSharedMemoryPerBlock"],
        shared_per_block_optin=a.get("MaxSharedMemoryPerBlockOptin", a["MaxSharedMemoryPerBlock"]),
        registers_per_block=a["MaxRegistersPerBlock"],
        warp_size=a["WarpSize"],
    )
