"""Part IV's recorded climb (results/climb-nvidia-h200.json): what it claims follows from what it measured."""
from __future__ import annotations

import pytest

import gemmlab as gl
from gemmlab import climb, ladder, record


@pytest.fixture(scope="module")
def recorded():
    return record.load("climb-nvidia-h200")


def test_the_targets_are_the_issues_bar():
    assert {label: target for label, _, target in climb.PROBLEMS} == {
        "4096": 0.90, "1024": 0.80, "2048": 0.80, "8192": 0.80, "4097": 0.75, "3000x5000x2000": 0.75}


def test_every_size_was_measured_on_the_h200_with_every_candidate(recorded):
    assert recorded["environment"]["gpu"] == "NVIDIA H200" and recorded["command"] == "python -m gemmlab climb --record"
    assert [s["size"] for s in recorded["sizes"]] == [label for label, _, _ in climb.PROBLEMS]
    names = {ladder.case_name(k, c) for k, c in climb.CANDIDATES}
    for s in recorded["sizes"]:
        rows = {r["name"] for r in s["timing"]["rows"]}
        assert rows == names | {"cuBLAS"}, s["size"]
        assert s["timing"]["flushed_l2"] and s["timing"]["environment"]["cupy_tf32"] == "0"
        assert all(e < 1e-4 for e in s["errors"].values()), "every kernel was checked before it was timed"


def test_best_ratio_and_verdict_follow_from_the_medians(recorded):
    for s in recorded["sizes"]:
        rows = {r["name"]: r for r in s["timing"]["rows"]}
        lib = rows.pop("cuBLAS")
        best = max(rows.values(), key=lambda r: r["gflops"])
        assert s["best"] == best["name"]
        assert s["ratio"] == pytest.approx(lib["median_ms"] / best["median_ms"])
        assert s["met"] == (s["ratio"] >= s["target"])


def test_dot_and_gemv_targets_are_the_issues_bar():
    assert climb.DOT_PROBLEMS == [(1 << 24, 0.80), (1 << 26, 0.90)]
    assert climb.GEMV_PROBLEMS == [(4096, "N", 0.90), (4096, "T", 0.90), (16384, "N", 0.90), (16384, "T", 0.90)]


def test_dot_ratio_is_to_the_copy_timed_beside_it(recorded):
    for d in recorded["dot"]:
        rows = {r["name"]: r for r in d["timing"]["rows"]}
        copy = rows.pop("copy (as many bytes as DOT reads)")
        rows.pop("cuBLAS")
        assert set(rows) == {ladder.case_name(k, c) for k, c in climb.DOT_CANDIDATES}
        best = max(rows.values(), key=lambda r: r["gbs"])
        assert d["best"] == best["name"]
        assert d["copy_gbs"] == pytest.approx(16 * d["n"] / (copy["median_ms"] * 1e-3) / 1e9)
        assert d["ratio"] == pytest.approx(best["gbs"] / d["copy_gbs"]) and d["met"] == (d["ratio"] >= d["target"])
        assert all(e < 1e-4 for e in d["errors"].values())


def test_gemv_ratio_follows_from_the_medians(recorded):
    assert [(g["m"], g["trans"]) for g in recorded["gemv"]] == [(m, t) for m, t, _ in climb.GEMV_PROBLEMS]
    for g in recorded["gemv"]:
        rows = {r["name"]: r for r in g["timing"]["rows"]}
        lib = rows.pop("cuBLAS")
        assert set(rows) == {ladder.case_name(k, c) for k, c in climb.GEMV_CANDIDATES}
        best = max(rows.values(), key=lambda r: r["gbs"])
        assert g["best"] == best["name"] and g["ratio"] == pytest.approx(lib["median_ms"] / best["median_ms"])
        assert g["met"] == (g["ratio"] >= g["target"])


def test_the_sass_record_shows_what_part_iv_kernels_claim():
    """results/sass-sm_90.json (python -m gemmlab sass --record): the instructions each header promises."""
    kernels = record.load("sass-sm_90")["kernels"]
    part4 = {k: v["instructions"] for k, v in kernels.items()
             if v["key"].startswith(("sgemm/10_", "sgemm/11_", "blas/dot/", "blas/gemv/"))}
    assert len(part4) == 12
    for name, ins in part4.items():
        if name.startswith(("10_", "11_")):
            assert ins.get("LDS.128", 0) > 0 and ins["FFMA"] >= 512, name         # 4 x 4 sub-tiles read 16 bytes at once
        if name.startswith("10_"):
            assert ins.get("LDG.E.128.CONSTANT", 0) > 0, name                      # float4 global loads
        if name.startswith("11_"):
            assert any(k.startswith("LDGSTS.E.BYPASS.128") for k in ins), name      # cp.async, 16 bytes
        if "CS=1" in name:
            assert ins.get("LDG.E.EF.128", 0) > 0, name                           # __ldcs: evict-first loads
    assert "LDG.E.EF.128" not in part4["dot[BLOCK=1024,UNROLL=2,GRID=1056,DET=0,CS=0]"]


def test_the_boustrophedon_changes_the_order_not_the_work():
    """Chapter 13: SNAKE=1 and 0 compile to the same FFMAs and loads; the reuse flags the text quotes."""
    kernels = record.load("sass-sm_90")["kernels"]
    big = "10_double_buffer[BM=128,BN=256,BK=16,WM=64,WN=64,GROUP=8,SPLITK=1,MINB=1,SNAKE={}]"
    snake, rows = kernels[big.format(1)], kernels[big.format(0)]
    assert snake["instructions"]["FFMA"] == rows["instructions"]["FFMA"] == 2048
    assert snake["instructions"]["LDS.128"] == rows["instructions"]["LDS.128"]
    assert (snake["ffma_reuse_operands"], rows["ffma_reuse_operands"]) == (1902, 1850)
    ncu = {k["case"]: k for k in record.load("ncu-climb-nvidia-h200")["kernels"]}
    s, r, c = ncu["sgemm/10, boustrophedon FMAs"], ncu["sgemm/10, FMAs row by row"], ncu["cuBLAS"]
    assert abs(s["instructions"] - r["instructions"]) < 1e-5 * r["instructions"] < c["instructions"]
    assert s["stall_dispatch_stall"] < r["stall_dispatch_stall"] and s["duration_ns"] < r["duration_ns"]
    assert c["issue_active_pct"] > s["issue_active_pct"] > r["issue_active_pct"]
    assert c["stall_no_instruction"] < s["stall_no_instruction"] / 5


def test_gemm_targets_are_the_issues_bar_and_the_candidates_exist():
    assert climb.GEMM_PROBLEMS == [("N", "N", 0.85), ("N", "T", 0.85), ("T", "N", 0.85), ("T", "T", 0.85)]
    from gemmlab import registry
    for key, params in climb.GEMM_CANDIDATES:
        registry.get(key).resolve(**params)


def test_the_sass_record_shows_sgemm_07s_wide_loads():
    kernels = record.load("sass-sm_90")["kernels"]
    seven = {k: v["instructions"] for k, v in kernels.items() if k.startswith("07_vectorized")}
    assert len(seven) == 4
    for name, ins in seven.items():
        assert ins.get("LDG.E.128.CONSTANT", 0) > 0 and ins.get("LDS.128", 0) >= 4 * 8, name   # 8 k x (2 + 2)
        assert ins["FFMA"] == 8 * 64, name                                                   # BK x (8 x 8)


def test_every_profiling_study_names_legal_configurations_and_checkable_problems():
    from gemmlab import profiling, registry
    for study, cases in profiling.STUDIES.items():
        labels = [c.shown for c in cases]
        assert len(set(labels)) == len(labels), study
        for c in cases:
            label, key, params, problem = c.shown, c.key, c.params, c.problem
            if key is None:
                continue
            v = registry.get(key)
            assert v.resolve(**params) is not None and isinstance(problem, v.op), label
            assert profiling.kernel_filter(key, params) == v.entry.split("<")[0]
            awkward = profiling._awkward(problem)
            assert type(awkward) is type(problem) and awkward != problem


def test_raw_page_parsing_keeps_the_named_metrics():
    from gemmlab import profiling
    text = ('"ID","Kernel Name","gpu__time_duration.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"\n'
            '"","","nsecond",""\n"0","sgemm_vectorized","3,919,700","1,048,576"\n')
    (k,) = profiling.parse_raw(text)
    assert k == {"kernel": "sgemm_vectorized", "duration_ns": 3919700.0, "shared_st_bank_conflicts": 1048576.0}


def test_now_or_recorded_names_what_it_can_show():
    """A chapter's timing cell: the recorded entries without a GPU, and a clear error for any other key."""
    entry, t = climb.now_or_recorded("sgemm", "4096")
    assert entry["size"] == "4096" and t.recorded != gl.on_gpu
    with pytest.raises(ValueError, match="one of"):
        climb.now_or_recorded("sgemm", "4095")
    with pytest.raises(ValueError, match="kind must be"):
        climb.now_or_recorded("axpy", 4096)
    if not gl.on_gpu:
        with pytest.raises(ValueError, match="only the recorded dot keys"):
            climb.now_or_recorded("dot", 12345)


def test_sgemm_12s_interior_loop_is_straight_line_code():
    """Chapter 13, step 12: step 10's main loop holds the edges' fall-back code (39 branches in 2,476
    instructions); step 12 adds a loop for the tiles inside C with no branch but its own; ncu sees the
    instruction fetch stalls fall (the record), and the 4 x 8 lanes came out ahead in the recorded climb."""
    kernels = record.load("sass-sm_90")["kernels"]
    ten = kernels["10_double_buffer[BM=128,BN=256,BK=16,WM=64,WN=64,GROUP=8,SPLITK=1,MINB=1,SNAKE=1]"]["loops"]
    twelve = kernels["12_interior[BM=128,BN=256,BK=16,WM=64,WN=64,LANES=4,GROUP=8,SPLITK=1,MINB=1]"]["loops"]
    assert ten == [[2476, 39]]
    assert len(twelve) == 2 and twelve[1] == [2233, 1] and twelve[0][1] == 39         # edges, interior
    ncu = {k["case"]: k for k in record.load("ncu-climb-nvidia-h200")["kernels"]}
    ten, four, eight = (ncu["sgemm/10, boustrophedon FMAs"], ncu["sgemm/12, lanes 4 x 8"],
                        ncu["sgemm/12, lanes 8 x 4"])
    for k in (four, eight):
        assert k["stall_no_instruction"] < ten["stall_no_instruction"] / 1.5
        assert k["stall_branch_resolving"] < ten["stall_branch_resolving"]
        assert k["stall_dispatch_stall"] > ten["stall_dispatch_stall"] and k["instructions"] < ten["instructions"]
    assert four["duration_ns"] < ten["duration_ns"] < eight["duration_ns"]
    sizes = {s["size"]: s for s in record.load("climb-nvidia-h200")["sizes"]}
    assert sizes["4096"]["best"].startswith("12_interior[") and "LANES=4" in sizes["4096"]["best"]
    assert sizes["4096"]["ratio"] >= 0.90 and sizes["4096"]["met"]


def test_sass_loops_finds_backward_branches():
    from gemmlab import sass
    block = "\n".join(["/*0000*/ MOV R1, c[0x0][0x28] ;"] + [f"/*{16 * i:04x}*/ FFMA R2, R3, R4, R2 ;" for i in range(1, 70)]
                      + ["/*0460*/ @P0 BRA 0x50 ;", "/*0470*/ @!P1 BRA 0x490 ;", "/*0480*/ BRA 0x0 ;", "/*0490*/ EXIT ;"])
    # 0x50..0x460 is a loop of 66 instructions with its closing branch; 0x0..0x480 holds it and 3 branches
    assert sass.loops(block) == [[66, 1], [73, 3]]


def test_a_study_profiles_the_library_calls_whole_and_one_kernel_of_each_registry_case(monkeypatch):
    """ncu profiles between cudaProfilerStart and Stop (not the kernels that made the inputs); a library
    case keeps every kernel its call launched, under the longest; a registry case that shows two is an error."""
    import subprocess
    import types
    from gemmlab import processes, profiling
    rows = {"lib": ['"1","dot_kernel","34,400"', '"2","reduce_1Block_kernel","5,536"'],
            "reg": ['"1","sgemm_vectorized","3,919,700"']}
    seen = []

    def fake_run(cmd, **kw):
        if cmd[-1] == "--version":
            return types.SimpleNamespace(stdout="NVIDIA (R) Nsight Compute\nVersion 2025.3\n", returncode=0)
        seen.append(cmd)
        which = "lib" if "-k" not in cmd else "reg"
        text = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n' + "\n".join(rows[which]) + "\n"
        return types.SimpleNamespace(stdout=text, stderr="", returncode=0)

    monkeypatch.setattr(processes, "run", fake_run)
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(profiling.shutil, "which", lambda name: "/usr/bin/ncu")
    from gemmlab.cases import Case, problem
    monkeypatch.setitem(profiling.STUDIES, "t", [Case(None, name="lib", problem=problem("dot", 1 << 20)),
                                                  Case("sgemm/07_vectorized", {}, name="reg", problem=problem("gemm", 256))])
    out = profiling.run_study("t", progress=False)
    lib, reg = out["kernels"]
    assert lib["kernel"] == "dot_kernel" and lib["other_kernels"] == [{"kernel": "reduce_1Block_kernel",
                                                                      "duration_ns": 5536.0}]
    assert reg["kernel"] == "sgemm_vectorized" and "other_kernels" not in reg
    assert all(c[c.index("--profile-from-start") + 1] == "off" for c in seen)
    assert "-k" not in seen[0] and seen[1][seen[1].index("-k") + 1] == "sgemm_vectorized"
    rows["reg"].append('"2","sgemm_vectorized","3,919,700"')
    with pytest.raises(SystemExit, match="profiled 2 kernels for reg, expected 1"):
        profiling.run_study("t", progress=False)


def test_evidence_prints_the_chosen_cases_and_metrics_and_names_what_it_cannot(capsys):
    from gemmlab import profiling
    profiling.evidence(("ch9 GEMM 3", "cuBLAS GEMM"), ["duration_ns", "registers", "stall_barrier"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Nsight Compute 2025.3.1.0, clocks not locked, NVIDIA H200, 2026-11-30")
    assert lines[0].endswith("; stalls: warp-cycles per issued instruction")
    assert lines[1].split() == ["time", "us", "regs", "barrier"] and len(lines) == 4
    assert lines[2].startswith("ch9 GEMM 3: 8 x 8 register tile") and lines[2].split()[-2:] == ["226", "0.25"]
    assert lines[3].startswith("cuBLAS GEMM 2048") and lines[3].split()[-3] == "347.04"
    with pytest.raises(ValueError, match="cases: no case of the ladder study starts with .*its cases are: ch2 naive"):
        profiling.evidence("ch99", ["duration_ns"])
    with pytest.raises(ValueError, match=r"unknown metrics \['gflops'\]"):
        profiling.evidence("ch2", ["gflops"])
