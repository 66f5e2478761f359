"""Numbers the chapters state in prose, checked against the recorded results they come from.

A figure in a chapter's text is a claim about a recorded run (results/); when the run is re-recorded
and the figure no longer holds, this fails and the text must change with it.
"""
from __future__ import annotations

import json
import math

import pytest

from gemmlab import record
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def prose(name: str) -> str:
    nb = json.loads((CHAPTERS / name).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def rows(results: str, label_start: str) -> dict:
    t = next(t for t in record.load(results)["timings"] if t["label"].startswith(label_start))
    return {r["name"]: r for r in t["rows"]}


def test_chapter_8_launch_geometry_rows_per_thread_not_sms():
    """GEMV 1-2's sweep: the time follows the rows each thread walks, not how many SMs get a row."""
    m = 4096
    sweep = rows("blas-nvidia-h200", "GEMV launch geometry")
    for block in (128, 256, 512, 1024):
        two_rows = sweep[f"grid ceil(M/2B) x block {block}"]["median_ms"]
        assert 0.95 <= two_rows <= 1.05, (block, two_rows)
        for grid in (128, 512, 2048):
            one_row = sweep[f"grid {grid} x block {block}"]["median_ms"]
            assert 0.48 <= one_row <= 0.55, (grid, block, one_row)
            # more threads than rows: one row each, and only ceil(m / block) blocks get one
            assert grid * block >= m
    with_rows = {block: min(128, math.ceil(m / block)) for block in (128, 1024)}
    assert with_rows == {128: 32, 1024: 4}
    text = prose("08-gemv.ipynb")
    for claim in ("about\n0.5 ms against 1.0 ms", "only 4 get work", "128 blocks of 128 threads, 32",
                  "(2 to 16 in the first group, 4 to 32 in the second)", "2048 threads"):
        assert claim in text, claim


def test_chapter_8_step_0_is_eight_blocks_of_eight_warps():
    m, per_block = 4096, 256
    blocks = math.ceil(m / 512)
    assert (blocks, blocks * per_block, blocks * per_block // 32, per_block // 32) == (8, 2048, 64, 8)
    steps = rows("blas-nvidia-h200", "GEMV steps")
    first = steps["GEMV 0: a thread per row, ceil(M/512) blocks"]
    assert abs(100 * first["vs_library"] - 2.5) < 0.2 and abs(first["gbs"] - 70) < 5
    text = prose("08-gemv.ipynb")
    assert "2048 threads,\n64 warps" in text and "(about 2.5% of cuBLAS's speed, about 70 GB/s)" in text
    assert "16 warps each" not in text and "gives each thread one row" not in text
