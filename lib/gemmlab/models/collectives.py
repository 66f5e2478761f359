"""What moving a sharded GEMM's operands between the GPUs of one host costs, before any kernel runs: the model
the part on several GPUs starts from.

A *ring* collective over p GPUs passes p - 1 pieces of 1/p of the buffer around the ring, so each GPU sends (and
receives) (p - 1)/p of the whole buffer in an all-gather or a reduce-scatter, and twice that in an all-reduce (a
reduce-scatter, then an all-gather). At a link bandwidth of W bytes a second per GPU (what NCCL's tests call the
*bus* bandwidth), the collective takes that many bytes over W. (NCCL may choose other algorithms, such as trees;
no algorithm of point-to-point transfers moves less per GPU than the ring, so its count is the floor the book
compares with. A reduction inside the switch, NVLink SHARP, can move less; it stays off on the book's machines.)

Two ways to shard C = A B over p GPUs (:class:`ShardedGemm`):

- ``all-gather``: A split by rows (each GPU holds M/p x K), B by columns (K x N/p). Each GPU gathers all of A, then
  multiplies it by its columns of B: C's columns N/p, 2 M (N/p) K FLOPs; the all-gather moves A (M K elements).
- ``reduce-scatter``: A split by columns (M x K/p), B by rows (K/p x N). Each GPU multiplies its slices into a
  partial C (M x N, 2 M N K/p FLOPs), and a reduce-scatter sums the partials, leaving each GPU M/p rows of C; it
  moves C (M N elements, in C's type).

A step is *compute-bound* when the GEMM takes longer than the communication, so that a schedule which overlaps
them can hide all of it; :func:`hidden` and :func:`share_of_ideal` are the figures a measured step is judged by.
"""
from __future__ import annotations

from dataclasses import dataclass

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce")
PATTERNS = ("all-gather", "reduce-scatter")


def _count(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    return value


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def bytes_per_gpu(collective: str, total_bytes: float, gpus: int) -> float:
    """The bytes each GPU sends in a ring ``collective`` over ``gpus`` GPUs, ``total_bytes`` being the whole buffer
    (the gathered one of an all-gather, the full partial sum of a reduce-scatter or all-reduce): (p - 1)/p of it,
    twice that for an all-reduce. None at all on one GPU."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}, got {collective!r}")
    p = _count("gpus", gpus)
    if isinstance(total_bytes, bool) or not isinstance(total_bytes, (int, float)) or total_bytes < 0:
        raise ValueError(f"total_bytes must be a number of bytes, at least 0, got {total_bytes!r}")
    share = (p - 1) / p * total_bytes
    return 2 * share if collective == "all-reduce" else share


def collective_seconds(collective: str, total_bytes: float, gpus: int, bandwidth: float) -> float:
    """The least time of a ring ``collective`` at ``bandwidth`` bytes a second per GPU (bus bandwidth)."""
    return bytes_per_gpu(collective, total_bytes, gpus) / _positive("bandwidth", bandwidth)


def hidden(comm_s: float, gemm_s: float, step_s: float) -> float:
    """The share of the communication a step hid: (T_comm + T_gemm - T_step) / min(T_comm, T_gemm), with T_comm and
    T_gemm each timed alone. 0 when the step took as long as both one after the other, 1 when it took only the
    longer of the two; below 0 when overlapping them cost more than it saved."""
    comm_s, gemm_s, step_s = (_positive(n, v) for n, v in (("comm_s", comm_s), ("gemm_s", gemm_s),
                                                           ("step_s", step_s)))
    return (comm_s + gemm_s - step_s) / min(comm_s, gemm_s)


def share_of_ideal(local_s: float, step_s: float) -> float:
    """One GPU's time for its local GEMM (the same FLOPs, no communication) over the step's time: 1 is ideal."""
    return _positive("local_s", local_s) / _positive("step_s", step_s)


@dataclass(frozen=True)
class ShardedGemm:
    """C = A B (M x N x K) over ``gpus`` GPUs in one of :data:`PATTERNS`; operands of ``in_bytes`` an element, C of
    ``out_bytes`` (what a reduce-scatter moves). Shards of unequal shape are refused by name."""
    m: int
    n: int
    k: int
    gpus: int
    pattern: str = "all-gather"
    in_bytes: int = 2
    out_bytes: int = 2

    def __post_init__(self):
        for name in ("m", "n", "k", "gpus", "in_bytes", "out_bytes"):
            _count(name, getattr(self, name))
        if self.pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, got {self.pattern!r}")
        split = {"all-gather": (("M", self.m), ("N", self.n)), "reduce-scatter": (("K", self.k), ("M", self.m))}
        for name, size in split[self.pattern]:
            if size % self.gpus:
                raise ValueError(f"{self.pattern}: {name} = {size} does not split into {self.gpus} equal shards "
                                 f"({name} must be a multiple of the GPU count)")

    @property
    def label(self) -> str:
        return f"{self.pattern} GEMM {self.m} x {self.n} x {self.k} on {self.gpus} GPUs"

    @property
    def flops_per_gpu(self) -> float:
        """Each GPU's share of the 2 M N K FLOPs: every pattern splits them evenly."""
        return 2.0 * self.m * self.n * self.k / self.gpus

    @property
    def moved(self) -> float:
        """The whole buffer the collective handles, in bytes: A for an all-gather, C for a reduce-scatter."""
        if self.pattern == "all-gather":
            return float(self.m * self.k * self.in_bytes)
        return float(self.m * self.n * self.out_bytes)

    def comm_bytes(self) -> float:
        """Bytes each GPU sends in the step's collective (:func:`bytes_per_gpu`)."""
        return bytes_per_gpu(self.pattern, self.moved, self.gpus)

    def comm_seconds(self, bandwidth: float) -> float:
        return collective_seconds(self.pattern, self.moved, self.gpus, bandwidth)

    def gemm_seconds(self, rate: float) -> float:
        """Each GPU's GEMM at ``rate`` FLOP/s (a measured one: the book's GEMM at this shape on this GPU)."""
        return self.flops_per_gpu / _positive("rate", rate)

    def bound(self, bandwidth: float, rate: float) -> str:
        """'compute' where the GEMM takes at least as long as the collective (an overlapped schedule can hide all
        of it), else 'communication'."""
        return "compute" if self.gemm_seconds(rate) >= self.comm_seconds(bandwidth) else "communication"

    def intensity(self) -> float:
        """FLOPs each GPU computes per byte it sends: the bandwidth x intensity is the rate above which the step
        is bound by its links (the roofline of chapter 01, with the link for the memory)."""
        sent = self.comm_bytes()
        return float("inf") if sent == 0 else self.flops_per_gpu / sent

    def floor(self, bandwidth: float, rate: float) -> float:
        """The least time of the step: the longer of the GEMM and the collective, each at its ceiling (all of the
        shorter one hidden)."""
        return max(self.gemm_seconds(rate), self.comm_seconds(bandwidth))

    def serial(self, bandwidth: float, rate: float) -> float:
        """The step's time with nothing overlapped: the collective, then the GEMM (or the other way round)."""
        return self.gemm_seconds(rate) + self.comm_seconds(bandwidth)
