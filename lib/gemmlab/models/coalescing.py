"""How a warp's loads map onto memory transactions (chapter 03, coalescing).

Global memory is read in 32-byte sectors. When the 32 lanes of a warp load one 4-byte value each,
the hardware fetches every distinct sector those addresses touch: 32 consecutive floats are 4 sectors,
32 floats N apart are 32 sectors, and 32 lanes reading one address are one sector (a broadcast).
"""
from __future__ import annotations

SECTOR = 32


def sectors(byte_addresses) -> int:
    """Distinct 32-byte sectors touched by a set of byte addresses."""
    return len({a // SECTOR for a in byte_addresses})


def naive_warp_traffic(mapping: str, block: int, n: int, k: int = 0, warp: int = 0) -> dict:
    """Sectors and distinct addresses one warp touches in step k of the naive SGEMM (square N, row-major).

    ``mapping`` is "x=col" (01_naive: threadIdx.x walks columns) or "x=row" (03_uncoalesced).
    The warp is warp number ``warp`` of block (0, 0), whose threads are numbered x fastest.
    """
    if mapping not in ("x=col", "x=row"):
        raise ValueError(f"mapping must be 'x=col' or 'x=row', got {mapping!r}")
    lanes = [warp * 32 + lane for lane in range(32) if warp * 32 + lane < block * block]
    coords = [(t % block, t // block) for t in lanes]              # (tx, ty)
    rc = [(ty, tx) if mapping == "x=col" else (tx, ty) for tx, ty in coords]   # (row, col)
    a = [4 * (row * n + k) for row, _ in rc]
    b = [4 * (k * n + col) for _, col in rc]
    c = [4 * (row * n + col) for row, col in rc]
    return {"A sectors": sectors(a), "B sectors": sectors(b), "C sectors": sectors(c),
            "A addresses": len(set(a)), "B addresses": len(set(b))}


BANKS = 32


def bank_conflict_degree(word_addresses) -> int:
    """How many passes shared memory needs for one warp request: the most distinct words in one bank.

    Word w sits in bank w % 32; lanes reading the same word share it (a broadcast), so only distinct
    words count.
    """
    per_bank = {}
    for w in set(word_addresses):
        per_bank.setdefault(w % BANKS, set()).add(w)
    return max(len(v) for v in per_bank.values())


def tiled_shared_accesses(tile: int, pad: int, at: int, k: int = 0, warp: int = 0) -> dict:
    """Bank-conflict degree of each shared access of 04_padded_tiling for one warp of a tile x tile block."""
    stride = tile + pad
    lanes = [warp * 32 + lane for lane in range(32) if warp * 32 + lane < tile * tile]
    coords = [(t % tile, t // tile) for t in lanes]                         # (tx, ty)
    as_store = [tx * stride + ty if at else ty * stride + tx for tx, ty in coords]
    as_read = [k * stride + ty if at else ty * stride + k for tx, ty in coords]
    bs_store = [ty * stride + tx for tx, ty in coords]
    bs_read = [k * stride + tx for tx, ty in coords]
    return {name: bank_conflict_degree(addr) for name, addr in
            (("As store", as_store), ("As read", as_read), ("Bs store", bs_store), ("Bs read", bs_read))}
