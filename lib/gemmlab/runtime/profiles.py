"""Devices as data: the one table of GPU profiles, and the profile in use (every chapter, study and kernel).

    gl.profiles.current()          # the GPU in use (its limits read from the device), or the emulated one
    gl.profiles.PROFILES["T4"]     # a Colab T4: capability 7.5, 40 SMs, 64 KiB of shared memory per block
    GEMMLAB_DEVICE=T4              # run as that GPU (below)

A profile holds what the book needs to know of a GPU: its compute capability, SMs, shared memory per block
by default and after opt-in, per SM, registers, threads and blocks per SM, L2, and the vendor's datasheet
peaks (marked as such: leads, not measurements). This table is the only place a GPU's numbers are written.

Which profile is in use:
- on a GPU, the GPU itself: its limits are read from the device (its table entry, when it has one, adds the
  datasheet peaks); a GPU the table does not know still runs everything, with no datasheet figures;
- on the CPU emulator, the H200 (the GPU the book's records come from);
- ``GEMMLAB_DEVICE=<profile>`` (T4, L4, RTX 4090, A100, A6000, RTX 4060, H100, H200; any spelling of the
  key) chooses one. On the emulator, kernels then see that GPU's limits, SM count and ``__CUDA_ARCH__``, so
  they take the code paths they take there. On a GPU, kernels are compiled for that profile's architecture as
  PTX (the driver compiles it for the GPU in use) and held to its limits, so an H200 runs a T4's code paths
  and refusals on real hardware. A profile the GPU in use cannot stand in for (a newer architecture, or
  larger limits, than the GPU has) is refused before anything runs.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from . import backend as hw
from .limits import Limits

KiB, MiB, TFLOP, GBS = 1024, 1024 * 1024, 1e12, 1e9

# FP32 lanes ("CUDA cores") per SM by compute capability (CUDA C++ Programming Guide, arithmetic instruction
# throughput): with the SM count and the clock, a GPU's FP32 peak (gemmlab.models.device, for a GPU the table lacks).
FP32_LANES = {(6, 0): 64, (6, 1): 128, (6, 2): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64,
              (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


@dataclass(frozen=True)
class Datasheet:
    """The vendor's figures, FLOP/s and bytes/s (dense: without structured sparsity). Leads, not measurements;
    None where the datasheet gives none."""
    part: str                      # the datasheet's part ("H200 SXM", "T4, 70 W")
    fp32: float
    bandwidth: float
    fp64: float | None = None
    tf32: float | None = None      # tensor cores, FP32 accumulation
    fp16: float | None = None      # FP16 and BF16 tensor cores, FP32 accumulation
    boost_ghz: float | None = None # the SM clock the peaks assume (fp32 = SMs x FP32 lanes x 2 x this)

    @property
    def tensor(self) -> dict:
        """The tensor-core peaks the roofline calculator shows ({'TF32': ..., 'FP16/BF16': ...})."""
        return {k: v for k, v in (("TF32", self.tf32), ("FP16/BF16", self.fp16)) if v}


@dataclass(frozen=True)
class Profile:
    key: str | None                # the table's key ("T4"); None for a GPU the table does not know
    name: str                      # as the device names itself ("Tesla T4")
    capability: tuple              # (7, 5)
    sm_count: int
    shared_per_block_optin: int    # the most dynamic shared memory a kernel may opt in to
    shared_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    fp32_lanes_per_sm: int
    datasheet: Datasheet | None = None
    shared_per_block: int = 48 * KiB          # without opting in
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    shared_reserved_per_block: int = 1024     # what CUDA keeps of each block's shared memory (0 before 8.0)
    match: str = ""                           # a regular expression on device names that this profile is
    source: str = "the profile table"         # "the profile table", or "this GPU's attributes"
    live_limits: Limits | None = field(default=None, compare=False)   # read from the device, when it is one

    @property
    def arch(self) -> str:
        """'sm_75': the architecture nvcc and NVRTC compile for."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    @property
    def cuda_arch(self) -> int:
        """__CUDA_ARCH__ as device code sees it (750)."""
        return 100 * self.capability[0] + 10 * self.capability[1]

    @property
    def cc(self) -> str:
        """'7.5'"""
        return f"{self.capability[0]}.{self.capability[1]}"

    @property
    def limits(self) -> Limits:
        """What a launch is checked against: the device's own when this is a GPU in use, else the table's."""
        if self.live_limits is not None:
            return self.live_limits
        return Limits(
            name=self.name, shared_per_block=self.shared_per_block,
            shared_per_block_optin=self.shared_per_block_optin, registers_per_block=self.registers_per_block,
            max_threads_per_sm=self.max_threads_per_sm, max_blocks_per_sm=self.max_blocks_per_sm,
            registers_per_sm=self.registers_per_sm, shared_per_sm=self.shared_per_sm,
            shared_reserved_per_block=self.shared_reserved_per_block, sm_count=self.sm_count)

    def describe(self) -> str:
        """'a Tesla T4, 7.5' (the GPU in use), 'an NVIDIA H200 running as a Tesla T4, 7.5' (GEMMLAB_DEVICE on
        a GPU) or 'the CPU emulator as an NVIDIA H200, 9.0'."""
        this = f"{_article(self.name)} {self.name}, {self.cc}"
        if not hw.on_gpu:
            return self.on_emulator()
        gpu = device_name()
        return this if gpu == self.name else f"{_article(gpu)} {gpu} running as {this}"

    def on_emulator(self) -> str:
        """'the CPU emulator as an NVIDIA H200, 9.0', whatever the backend in use."""
        return f"the CPU emulator as {_article(self.name)} {self.name}, {self.cc}"

    def matches(self, device: str) -> bool:
        return bool(self.match) and re.search(self.match, device, re.I) is not None


def _article(name: str) -> str:
    return "an" if name[:1] in "AEIOU" or name.startswith("NVIDIA") else "a"


def _p(key, name, match, capability, sms, optin_kib, per_sm_kib, threads, blocks, l2_mib, lanes, sheet,
       reserved=1024):
    return Profile(key=key, name=name, match=match, capability=capability, sm_count=sms,
                   shared_per_block_optin=optin_kib * KiB, shared_per_sm=per_sm_kib * KiB,
                   max_threads_per_sm=threads, max_blocks_per_sm=blocks, l2_bytes=l2_mib * MiB,
                   fp32_lanes_per_sm=lanes, datasheet=sheet, shared_reserved_per_block=reserved)


# Limits: the CUDA C++ Programming Guide's table of technical specifications per compute capability (shared
# memory per SM and per block after opt-in, threads and blocks per SM, CUDA's reserve per block) and each
# GPU's SM count and L2 (the H200's as it reports itself, 60 MiB; tests/test_profiles.py holds the GPU in use
# to its entry). Peaks: each vendor datasheet named in the Datasheet (dense tensor-core rates).
PROFILES = {p.key: p for p in (
    _p("T4", "Tesla T4", r"\bT4\b", (7, 5), 40, 64, 64, 1024, 16, 4, 64,
       Datasheet("T4, 70 W", 8.1 * TFLOP, 320 * GBS, fp64=0.25 * TFLOP, fp16=65 * TFLOP, boost_ghz=1.59), reserved=0),
    _p("L4", "NVIDIA L4", r"\bL4\b", (8, 9), 58, 99, 100, 1536, 24, 48, 128,
       Datasheet("L4", 30.3 * TFLOP, 300 * GBS, fp64=0.49 * TFLOP, tf32=60 * TFLOP, fp16=121 * TFLOP, boost_ghz=2.04)),
    _p("RTX 4090", "NVIDIA GeForce RTX 4090", r"RTX 4090", (8, 9), 128, 99, 100, 1536, 24, 72, 128,
       Datasheet("GeForce RTX 4090 (Ada whitepaper)", 82.6 * TFLOP, 1008 * GBS, fp64=1.29 * TFLOP,
                 tf32=82.6 * TFLOP, fp16=165.2 * TFLOP, boost_ghz=2.52)),
    _p("A100", "NVIDIA A100-SXM4-80GB", r"A100", (8, 0), 108, 163, 164, 2048, 32, 40, 64,
       Datasheet("A100 SXM4 80 GB", 19.5 * TFLOP, 2039 * GBS, fp64=9.7 * TFLOP, tf32=156 * TFLOP,
                 fp16=312 * TFLOP, boost_ghz=1.41)),
    _p("A6000", "NVIDIA RTX A6000", r"A6000", (8, 6), 84, 99, 100, 1536, 16, 6, 128,
       Datasheet("RTX A6000", 38.7 * TFLOP, 768 * GBS, fp64=1.21 * TFLOP, boost_ghz=1.8)),
    _p("RTX 4060", "NVIDIA GeForce RTX 4060", r"RTX 4060", (8, 9), 24, 99, 100, 1536, 24, 24, 128,
       Datasheet("GeForce RTX 4060 desktop", 15.11 * TFLOP, 272 * GBS, fp64=0.24 * TFLOP, boost_ghz=2.46)),
    _p("H100", "NVIDIA H100 80GB HBM3", r"H100", (9, 0), 132, 227, 228, 2048, 32, 50, 128,
       Datasheet("H100 SXM5", 66.9 * TFLOP, 3350 * GBS, fp64=34 * TFLOP, tf32=494.7 * TFLOP, fp16=989.4 * TFLOP, boost_ghz=1.98)),
    _p("H200", "NVIDIA H200", r"H200", (9, 0), 132, 227, 228, 2048, 32, 60, 128,      # L2: as the device reports
       Datasheet("H200 SXM", 66.9 * TFLOP, 4800 * GBS, fp64=34 * TFLOP, tf32=494.7 * TFLOP, fp16=989.4 * TFLOP, boost_ghz=1.98)),
)}

BOOK = "H200"          # the GPU whose records the book shows where the reader's GPU has none; the emulator's default


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def lookup(name: str) -> Profile:
    """A profile by its key in any spelling ('t4', 'RTX4090', 'rtx-4090'); a ValueError naming the legal keys."""
    for key, p in PROFILES.items():
        if _norm(name) == _norm(key):
            return p
    raise ValueError(f"GEMMLAB_DEVICE={name!r} is not a device profile; the profiles are: "
                     f"{', '.join(PROFILES)} (or leave it unset: the GPU in use, or the H200 on the emulator)")


def for_device(device: str) -> Profile | None:
    """The table's profile of a GPU by the name it reports ('Tesla T4', 'NVIDIA A100-SXM4-40GB'), or None."""
    return next((p for p in PROFILES.values() if p.matches(device)), None)


@functools.lru_cache(maxsize=None)
def _device_profile(device_id: int) -> Profile:
    """The GPU in use as a profile: its attributes (limits, SMs, L2, capability) and, when the table knows
    it, the datasheet."""
    from .limits import cuda_limits
    cp = hw.xp
    dev = cp.cuda.Device(device_id)
    a = dev.attributes
    lim = cuda_limits(cp, device_id)
    cc = tuple(int(c) for c in dev.compute_capability)
    known = for_device(lim.name)
    lanes = known.fp32_lanes_per_sm if known else FP32_LANES.get(cc, 128)
    return Profile(key=known.key if known else None, name=lim.name, capability=(cc[0], cc[1]),
                   sm_count=lim.sm_count, shared_per_block=lim.shared_per_block,
                   shared_per_block_optin=lim.shared_per_block_optin, shared_per_sm=lim.shared_per_sm,
                   max_threads_per_sm=lim.max_threads_per_sm, max_blocks_per_sm=lim.max_blocks_per_sm,
                   registers_per_sm=lim.registers_per_sm, registers_per_block=lim.registers_per_block,
                   shared_reserved_per_block=lim.shared_reserved_per_block, l2_bytes=a.get("L2CacheSize", 0),
                   fp32_lanes_per_sm=lanes, datasheet=known.datasheet if known else None,
                   match=known.match if known else re.escape(lim.name), source="this GPU's attributes",
                   live_limits=lim)


def device_name() -> str | None:
    """The name of the GPU in use, or None on the emulator."""
    return _device_profile(hw.xp.cuda.Device().id).name if hw.on_gpu else None


def _requested() -> Profile | None:
    text = os.environ.get("GEMMLAB_DEVICE", "").strip()
    return lookup(text) if text else None


def _lacks(wanted: Profile, gpu: Profile) -> list:
    """What ``gpu`` lacks to stand in for ``wanted``: a newer architecture, or larger limits, in words."""
    why = []
    if wanted.capability > gpu.capability:
        why.append(f"compute capability {wanted.cc} (this GPU has {gpu.cc})")
    for what, attr, unit in (("KiB of shared memory per block", "shared_per_block_optin", KiB),
                             ("KiB of shared memory per SM", "shared_per_sm", KiB),
                             ("threads per SM", "max_threads_per_sm", 1), ("registers per SM", "registers_per_sm", 1)):
        if getattr(wanted, attr) > getattr(gpu, attr):
            why.append(f"{getattr(wanted, attr) // unit} {what} (this GPU has {getattr(gpu, attr) // unit})")
    return why


def contradiction(wanted: Profile, gpu: Profile) -> str | None:
    """Why ``gpu`` cannot stand in for ``wanted`` (a newer architecture, or larger limits), or None."""
    why = _lacks(wanted, gpu)
    if not why:
        return None
    return (f"GEMMLAB_DEVICE={wanted.key} asks for {'; '.join(why)}: {gpu.name} cannot run as {wanted.name}. "
            f"Profiles it can run as: {', '.join(k for k, p in PROFILES.items() if contradiction_free(p, gpu))}")


def contradiction_free(wanted: Profile, gpu: Profile) -> bool:
    return not _lacks(wanted, gpu)


def emulated() -> Profile | None:
    """The profile GEMMLAB_DEVICE asks for, when it is not simply the GPU in use; None otherwise."""
    wanted = _requested()
    if wanted is None:
        return None
    if hw.on_gpu:
        gpu = _device_profile(hw.xp.cuda.Device().id)
        if gpu.key == wanted.key:
            return None                    # the GPU itself: nothing to emulate
    return wanted


def current() -> Profile:
    """The profile in use: GEMMLAB_DEVICE's, else the GPU's own, else (the emulator) the H200's."""
    wanted = _requested()
    if hw.on_gpu:
        gpu = _device_profile(hw.xp.cuda.Device().id)
        if wanted is None or wanted.key == gpu.key:
            return gpu
        reason = contradiction(wanted, gpu)
        if reason:
            raise hw.BackendError(reason)
        return wanted
    return wanted or PROFILES[BOOK]


def compile_arch() -> str | None:
    """On a GPU running as an older profile: the virtual architecture to compile PTX for ('compute_75'),
    which the driver then compiles for the GPU in use. None when kernels are compiled for the GPU itself."""
    p = emulated()
    if not hw.on_gpu or p is None:
        return None
    return f"compute_{p.capability[0]}{p.capability[1]}"


def check_setting():
    """GEMMLAB_DEVICE checked at import: an unknown name, or a profile the GPU cannot stand in for, stops
    everything before it starts, with the legal profiles named."""
    current()
