"""Launch limits of a device: what a kernel launch is checked against before it is sent.

On a GPU they are read from the device's attributes (:func:`cuda_limits`); the emulator, and a GPU running as
another profile (GEMMLAB_DEVICE), use the limits of that profile (:mod:`gemmlab.runtime.profiles`, the one table of
GPUs: ``profiles.current().limits``). Above 48 KiB of dynamic shared memory a kernel must opt in, as
``cudaFuncSetAttribute`` does (gemmlab's launch does it), up to the device's opt-in limit.
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
    # per multiprocessor: what occupancy is computed from
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    shared_per_sm: int = 228 * 1024
    shared_reserved_per_block: int = 1024
    register_partitions: int = 4     # an SM's register file is split among its 4 warp schedulers
    sm_count: int = 1                # SMs on the device: how many blocks fill a wave


def cdiv(a: int, b: int) -> int:
    """Ceiling division: how many blocks of ``b`` cover ``a``."""
    return -(-a // b)


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
        max_threads_per_sm=a["MaxThreadsPerMultiProcessor"],
        max_blocks_per_sm=a.get("MaxBlocksPerMultiprocessor", 32),
        registers_per_sm=a["MaxRegistersPerMultiprocessor"],
        shared_per_sm=a["MaxSharedMemoryPerMultiprocessor"],
        shared_reserved_per_block=a.get("ReservedSharedMemoryPerBlock", 0),
        sm_count=a["MultiProcessorCount"],
    )


def occupancy(threads: int, registers: int, shared_bytes: int, limits: Limits) -> dict:
    """Resident blocks per SM for a kernel, and which resource limits them (chapter 06).

    Registers are allocated per warp in units of 256 (a thread's count rounded up to a multiple of 8),
    from one of the SM's four scheduler partitions (a warp's registers cannot straddle two); each block
    also reserves ``shared_reserved_per_block`` bytes of shared memory.
    """
    warps = cdiv(threads, limits.warp_size)
    regs_per_warp = cdiv(max(registers, 1) * limits.warp_size, 256) * 256
    by = {
        "threads": limits.max_threads_per_sm // (warps * limits.warp_size),
        "blocks": limits.max_blocks_per_sm,
        "registers": (limits.register_partitions
                      * (limits.registers_per_sm // limits.register_partitions // regs_per_warp)) // warps,
        "shared memory": (limits.shared_per_sm // (shared_bytes + limits.shared_reserved_per_block)
                          if shared_bytes else limits.max_blocks_per_sm),
    }
    blocks = min(by.values())
    limiter = min(by, key=lambda k: (by[k], k != "threads"))
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps * limits.warp_size / limits.max_threads_per_sm,
            "limited_by": limiter, "by": by}
