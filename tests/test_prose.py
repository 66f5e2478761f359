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
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


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


def _scaling(kernel_start: str) -> dict:
    import csv
    lines = [l for l in (RESULTS_DIR / "blas-scaling-nvidia-h200.csv").read_text().splitlines() if not l.startswith("#")]
    return {int(r["size"]): float(r["gbs"]) for r in csv.DictReader(lines)
            if r["family"] == "DOT" and r["kernel"].startswith(kernel_start)}


def test_chapters_7_and_10_dot_bandwidth_levels_off_instead_of_climbing():
    dot6 = _scaling("DOT 6")
    assert [round(dot6[2 ** e]) for e in (24, 25, 26)] == [1966, 2013, 1841]
    assert dot6[2 ** 26] < dot6[2 ** 24] < 2 * dot6[2 ** 24]          # four times the length, no more bandwidth
    for k in ("DOT 2", "DOT 3", "DOT 4"):
        tree = _scaling(k)
        assert tree[2 ** 26] < tree[2 ** 25] < tree[2 ** 24]
        assert [round(tree[2 ** e], -1) for e in (24, 25, 26)] == pytest.approx([1080, 1030, 995], abs=15)
    assert "1,966 GB/s at $2^{24}$, 2,013 at $2^{25}$ and\n1,841 at $2^{26}$" in prose("07-dot.ipynb")
    assert "weigh as much as the streaming" not in prose("07-dot.ipynb")
    text = prose("10-scaling.ipynb")
    assert "1,966, 2,013 and 1,841 GB/s" in text and "The bandwidth climbs with $n$ for every" not in text


def test_chapter_6_quarter_bound_scope_and_eight_by_eight_registers():
    text = prose("06-register-tiling.ipynb")
    # one 32-wide shared load per clock against 128 FMAs per clock: 1/4 at one load per FMA, 1/8 at two
    assert 32 / 128 == 1 / 4 and 32 / 2 / 128 == 1 / 8
    assert "one-quarter-of-peak bound" in text and "same one-eighth-of-peak bound" not in text
    assert "warp-level tiling" in text and "tensor cores" in text
    ladder = record.load("ladder-nvidia-h200")["resources"]["05_cache_blocking[TM=8,TN=8]"]
    assert (ladder["registers"], ladder["local_bytes"]) == (94, 0)
    climb = record.load("climb-nvidia-h200")["resources"]
    big = [v for k, v in climb.items() if k.startswith("10_double_buffer") and "MINB=1" in k]
    assert big and all(v["local_bytes"] == 0 for v in big)
    eight_rows = [v["registers"] for k, v in climb.items() if k.startswith("10_") and "WM=64" in k]   # 8 x 8, 8 x 16
    assert (min(eight_rows), max(eight_rows)) == (128, 255)
    spills = {k: v for k, v in climb.items() if v["local_bytes"]}
    capped = [v["local_bytes"] for v in spills.values() if v["registers"] <= 128]
    assert capped and (min(capped), max(capped)) == (8, 112)
    full = [(k, v["local_bytes"]) for k, v in spills.items() if v["registers"] > 128]
    assert full == [("12_interior[BM=128,BN=256,BK=16,WM=64,WN=64,LANES=8,GROUP=8,SPLITK=1,MINB=1]", 32)]
    assert "spilling 8 to 112 bytes where" in text and "32 bytes in one configuration at 255" in text
    assert "94 registers and no spill" in text and "in 128 to 255 registers" in text


def test_chapter_3_slowdowns_exceed_the_sector_ratios():
    t = rows("ladder-nvidia-h200", "coalescing")
    for block, (good, bad) in ((16, (4, 17)), (32, (5, 33))):
        slowdown = t[f"03_uncoalesced[BLOCK={block}]"]["median_ms"] / t[f"01_naive[BLOCK={block}]"]["median_ms"]
        assert slowdown > bad / good, (block, slowdown)
    assert 5 < t["03_uncoalesced[BLOCK=16]"]["median_ms"] / t["01_naive[BLOCK=16]"]["median_ms"] < 6
    assert 11 < t["03_uncoalesced[BLOCK=32]"]["median_ms"] / t["01_naive[BLOCK=32]"]["median_ms"] < 12
    text = prose("03-coalescing.ipynb")
    assert "exceeds it" in text and "not\nevery sector comes from DRAM" not in text


def test_chapter_9_scheduler_counters_as_ncu_recorded():
    kernels = {k["kernel"].split("(")[0]: k for k in record.load("ncu-nvidia-h200")["kernels"]}
    before = kernels["void gemm_register_tiling<8, 0, 0>"]["no_eligible_pct"]
    after = kernels["void gemm_double_buffer<8, 0, 0>"]["no_eligible_pct"]
    assert f"falls from {before:.1f}% to {after:.1f}%" in prose("09-gemm.ipynb")


def test_chapter_10_gemv_gap_and_the_partial_wave():
    import csv
    lines = [l for l in (RESULTS_DIR / "blas-scaling-nvidia-h200.csv").read_text().splitlines() if not l.startswith("#")]
    gap = {int(r["size"]): 1 / float(r["vs_cublas"]) for r in csv.DictReader(lines)
           if r["family"] == "GEMV" and r["kernel"].startswith("GEMV 3")}
    assert round(gap[2048], 1) == round(gap[4096], 1) == 2.7 and round(gap[8192], 1) == 1.6
    blocks, sms = (4096 // 128) ** 2, 132
    assert (blocks // sms, blocks % sms, sms - blocks % sms) == (7, 100, 32)
    text = prose("10-scaling.ipynb")
    assert "2.7 times slower at 2048 and 4096, 1.6 times at 8192" in text
    assert "leaves 32 of the 132 SMs idle" in text and "two to three times behind" not in text


def test_chapter_2_answer_on_1024_thread_blocks():
    text = prose("02-naive-and-tiled.ipynb")
    assert "a third of the SM's threads stay unused" in text and "a third or half" not in text


def test_chapter_5_against_the_handbooks_kernel_as_printed():
    """The figures chapter 5 quotes from the recorded ladder (kernel without checks in its k loop)."""
    t = rows("ladder-nvidia-h200", "cache blocking: TM x TN")
    rate = {k: round(v["gflops"] / 1000, 1) for k, v in t.items()}
    assert (rate["05_cache_blocking[TM=8,TN=4]"], rate["05_cache_blocking[TM=1,TN=1]"],
            rate["05_cache_blocking[TM=8,TN=8]"]) == (14.5, 4.6, 15.8)
    assert max(t, key=lambda k: t[k]["gflops"] if k.startswith("05") else 0) == "05_cache_blocking[TM=8,TN=8]"
    res = record.load("ladder-nvidia-h200")["resources"]["05_cache_blocking[TM=8,TN=4]"]
    assert res["registers"] == 48
    assert 0.15 < 1 - 14.5 / 17.9 < 0.25                                  # "about a fifth slower"
    text = prose("05-cache-blocking.ipynb")
    assert "8 × 4 went from 8.5 to 14.5 TFLOP/s" in text and "from 14.9 to 15.8" in text
    assert "where 48 do now" in text and "uses 94 registers" in text


def test_chapter_14_states_the_recorded_tensor_core_results():
    t = record.load("tensor-nvidia-h200")
    ratio = {r["precision"]: r["ratio"] for r in t["tc"]}
    assert (round(100 * ratio["fp16"]), round(100 * ratio["bf16"]), round(100 * ratio["tf32"])) == (26, 25, 14)
    assert not any(r["met"] for r in t["tc"])
    s = t["split"]
    assert round(s["error_factor"], 2) == 0.27 and s["accurate"] and round(s["ratio_to_sgemm"], 1) == 0.5
    acc = t["accumulation"]["errors"]
    for p in ("fp16", "bf16", "tf32"):
        e = acc[p]["tc/01"]
        assert 3.5 < e[1] / e[0] < 4.5 and 3.5 < e[2] / e[1] < 4.5            # like K (x4 per step of ks)
    for p in ("fp16", "bf16"):
        assert acc[p]["cuBLAS"][:2] == acc[p]["tc/01"][:2] and 2.5 < acc[p]["tc/01"][2] / acc[p]["cuBLAS"][2] < 3.5
    text = prose("14-tensor-cores.ipynb")
    assert "FP16 at 26% of cuBLAS, BF16 at 25% and TF32 at 14%" in text and "missed" in text
    assert "max error 0.27 times its" in text and "half its speed" in text


def test_chapter_15s_figures_are_the_records():
    """Chapter 15 (Hopper): the recorded tc/06 run against cuBLAS, and the part5 study's tensor-pipe and
    instruction counts it quotes."""
    from gemmlab import record
    rec = record.load("tensor-nvidia-h200")
    hopper = {t["precision"]: t for t in rec["hopper"]}
    assert round(100 * hopper["fp16"]["ratio"], 1) == 93.1 and round(100 * hopper["bf16"]["ratio"], 1) == 93.3
    assert all(t["met"] and t["target"] == 0.80 for t in hopper.values())
    rows = {t["precision"]: {r["name"]: r for r in t["timing"]["rows"]} for t in rec["hopper"]}
    assert [round(rows[p]["06_wgmma_tma[]"]["gflops"] / 1000) for p in ("fp16", "bf16")] == [675, 696]
    assert [round(rows[p]["cuBLAS"]["gflops"] / 1000) for p in ("fp16", "bf16")] == [725, 746]
    assert f"{hopper['fp16']['errors']['06_wgmma_tma[]']:.1e}" == "4.9e-06"
    assert f"{hopper['bf16']['errors']['06_wgmma_tma[]']:.1e}" == "4.4e-06"
    tc = {t["precision"]: round(100 * t["ratio"]) for t in rec["tc"]}
    assert tc["fp16"] == 26 and tc["bf16"] == 25
    ncu = {k["case"]: k for k in record.load("ncu-part5-nvidia-h200")["kernels"]}
    assert round(ncu["cuBLAS fp16"]["tensor_pipe_pct"]) == 92 and round(ncu["cuBLAS bf16"]["tensor_pipe_pct"]) == 91
    assert 23 <= min(ncu[c]["tensor_pipe_pct"] for c in ("WMMA pipelined fp16", "WMMA pipelined bf16",
                                                         "WMMA pipelined tf32", "mma.sync fp16", "mma.sync bf16"))
    assert max(ncu[c]["tensor_pipe_pct"] for c in ("WMMA pipelined fp16", "mma.sync fp16", "mma.sync bf16")) < 30
    assert round(ncu["cuBLAS fp16"]["instructions"] / 1e6, 1) == 17.6
    assert round(ncu["mma.sync fp16"]["instructions"] / 1e6) == 339
    assert round(ncu["mma.sync fp16"]["instructions"] / ncu["cuBLAS fp16"]["instructions"]) == 19
    assert 2.5 < ncu["mma.sync fp16"]["stall_wait"] < 3.5 and round(ncu["cuBLAS fp16"]["issue_active_pct"]) == 12


def test_the_appendix_states_the_sanitizer_record():
    from gemmlab import record
    data = record.load("sanitizer-nvidia-h200")
    assert data["environment"]["date"].startswith("2026-11-30") and data["environment"]["gpu"] == "NVIDIA H200"
    for tool in ("memcheck", "racecheck"):
        assert data["tools"][tool]["clean"] and data["tools"][tool]["configurations"] == 278
    text = " ".join(prose("11-profiling.ipynb").split())
    assert "launched 278 configurations" in text and "made on the H200 on 2026-11-30" in text


def test_chapter_15_names_cublas_s_kernel_as_recorded():
    from gemmlab import record
    ncu = {k["case"]: k for k in record.load("ncu-part5-nvidia-h200")["kernels"]}
    assert ncu["cuBLAS fp16"]["kernel"] == "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert "`nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT`" in prose("15-hopper.ipynb")


def test_chapter_15s_account_of_the_compiled_loops_is_the_sass_record():
    from gemmlab import record
    k = record.load("sass-sm_90")["kernels"]
    five = k["05_mma_sync[BM=128,BN=128,WM=64,WN=32,STAGES=3,PREC=fp16]"]
    three = k["03_wmma_pipelined[BM=128,BN=128,WM=64,WN=32,STAGES=4,PREC=fp16]"]
    six = k["06_wgmma_tma[PREC=fp16]"]
    main5 = max(zip(five["loops"], five["loop_mix"]), key=lambda x: x[0][0])
    assert main5[0] == [994, 134]
    mix = main5[1]
    assert (mix["HMMA.16816.F32"], mix["LDSM.16.M88.4"] + mix["LDSM.16.MT88.4"]) == (32, 12)
    assert (mix["LDGSTS.E.BYPASS.128"] + mix["LDGSTS.E.BYPASS.128.ZFILL"], mix["LDGSTS.E.BYPASS.128.ZFILL"]) == (54, 42)
    assert mix["never executed"] == 162 and "LDS" not in mix
    main3 = max(zip(three["loops"], three["loop_mix"]), key=lambda x: x[0][0])
    assert main3[0][0] == 507 and main3[1]["HMMA.16816.F32"] == 32
    loop6 = [l for l, m in zip(six["loops"], six["loop_mix"]) if m == {"HGMMA.64x256x16.F32": 4}]
    assert loop6 == [[92, 3]]
    text = " ".join(prose("15-hopper.ipynb").split())
    for phrase in ("994 instructions for 32 `HMMA.16816` and 12 `LDSM`", "54 copy instructions", "42 of them",
                   "134 branches", "162 placeholders", "507 instructions", "92 instructions for four"):
        assert phrase in text, phrase
