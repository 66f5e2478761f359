"""sgemm/07_vectorized's shared-memory layouts, modelled bank by bank: what its header claims of PAD, SWZ
and SPLIT, checked with the kernel's own index arithmetic (the H200's ncu counters are the measurement;
this is the prediction, on any machine)."""
from __future__ import annotations

import pytest

BANKS = 32


def col(k, m, swz, bk, bm):
    return m ^ ((k // 4) * (128 // bk) % bm) if swz else m


def store_degree(bm, bk, pad, swz):
    """The worst bank conflict of warp 0's transposing stores of A: distinct words per bank, per store."""
    ap = bm + (4 if pad else 0)
    worst = 1
    for q in range(4):
        banks = {}
        for lane in range(32):
            r, c = lane // (bk // 4), (lane % (bk // 4)) * 4
            word = (c + q) * ap + col(c + q, r, swz, bk, bm)
            banks.setdefault(word % BANKS, set()).add(word)
        worst = max(worst, max(len(w) for w in banks.values()))
    return worst


def read_wavefronts(bn, tn, split):
    """Wavefronts of warp 0's first LDS.128 of B: 8 lanes (128 bytes) per wavefront when their 16-byte
    groups fall in different banks; every extra distinct group in one bank costs another."""
    total = 0
    for phase in range(4):
        banks = {}
        for lane in range(8 * phase, 8 * phase + 8):
            tx = lane % (bn // tn)
            first = (0 // (tn // 2)) * (bn // 2) + tx * (tn // 2) if split else tx * tn
            group = first // 4                                  # 16-byte group (4 banks)
            banks.setdefault(group % (BANKS // 4), set()).add(group)
        total += max(len(g) for g in banks.values())
    return total


@pytest.mark.parametrize("bk, plain, padded", [(8, 2, 1), (16, 4, 2)])
def test_transposing_stores_conflict_unless_padded_or_swizzled(bk, plain, padded):
    assert store_degree(128, bk, pad=False, swz=False) == plain        # "the same bank 2 or 4 times"
    assert store_degree(128, bk, pad=True, swz=False) == padded        # BK = 16: halved, not removed
    assert store_degree(128, bk, pad=False, swz=True) == 1


def test_split_thread_tiles_read_b_in_one_wavefront_per_eight_lanes():
    assert read_wavefronts(128, 8, split=False) == 8                   # TN floats apart: two per eight lanes
    assert read_wavefronts(128, 8, split=True) == 4


def test_swizzle_keeps_sixteen_byte_groups_whole():
    for bk in (8, 16, 32):
        for k in range(bk):
            for m in range(0, 128, 4):
                base = col(k, m, True, bk, 128)
                assert base % 4 == 0 and [col(k, m + q, True, bk, 128) for q in range(4)] == [base + q for q in range(4)]
