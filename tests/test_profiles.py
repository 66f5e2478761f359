"""Devices as data (gemmlab.profiles): the table, GEMMLAB_DEVICE, what each profile runs and refuses, and
the records a chapter shows for the reader's GPU."""
import json
import os
import subprocess
import sys

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops, profiles, record, registry
from gemmlab.paths import REPO

P = profiles.PROFILES


def test_the_table_holds_the_gpus_readers_have_and_is_consistent():
    assert set(P) >= {"T4", "L4", "RTX 4090", "A100", "H100", "H200"}
    for key, p in P.items():
        sheet = p.datasheet
        assert sheet is not None and sheet.part, key
        # the datasheet's FP32 peak is SMs x FP32 lanes x 2 FLOP x the boost clock it assumes
        assert sheet.fp32 == pytest.approx(p.sm_count * p.fp32_lanes_per_sm * 2 * sheet.boost_ghz * 1e9, rel=0.01), key
        assert p.shared_per_block <= p.shared_per_block_optin <= p.shared_per_sm - p.shared_reserved_per_block, key
        assert profiles.for_device(p.name) is p, key                  # the name a device reports finds it
        assert profiles.lookup(key.lower().replace(" ", "-")) is p
    t4 = P["T4"]
    assert (t4.capability, t4.sm_count, t4.shared_per_block_optin, t4.cuda_arch, t4.arch) == ((7, 5), 40, 64 * 1024,
                                                                                             750, "sm_75")
    assert P["A100"].shared_per_block_optin == 163 * 1024 and P["L4"].shared_per_block_optin == 99 * 1024
    assert profiles.for_device("NVIDIA A100-SXM4-40GB") is P["A100"] and profiles.for_device("Voodoo2") is None


def test_an_unknown_profile_is_refused_before_anything_runs_naming_the_legal_ones():
    with pytest.raises(ValueError, match=r"GEMMLAB_DEVICE='P100' is not a device profile; the profiles are: T4, L4"):
        profiles.lookup("P100")
    env = {**os.environ, "GEMMLAB_DEVICE": "Voodoo2", "GEMMLAB_BACKEND": "emulator"}
    proc = subprocess.run([sys.executable, "-c", "import gemmlab"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0 and "GEMMLAB_DEVICE='Voodoo2' is not a device profile" in proc.stderr


def test_a_profile_the_gpu_cannot_stand_in_for_is_refused_with_what_it_lacks():
    why = profiles.contradiction(P["H200"], P["T4"])
    assert "asks for compute capability 9.0 (this GPU has 7.5)" in why
    assert "227 KiB of shared memory per block (this GPU has 64)" in why
    assert "Tesla T4 cannot run as NVIDIA H200" in why and "Profiles it can run as: T4" in why
    assert profiles.contradiction(P["A100"], P["H200"]) is None and profiles.contradiction(P["T4"], P["H200"]) is None
    assert profiles.contradiction(P["L4"], P["A100"])               # 8.9 on an 8.0: newer code


def test_the_emulator_runs_as_the_profile_asked_for(monkeypatch):
    assert profiles.current().key == ("H200" if not gl.on_gpu else profiles.current().key)
    code = r'''
__global__ void arch(int* out) { out[0] = __CUDA_ARCH__; }
__global__ void big(float* out) { extern __shared__ float s[]; s[threadIdx.x] = 1.0f; out[threadIdx.x] = s[threadIdx.x]; }
'''
    if gl.on_gpu:
        pytest.skip("the GPU's own architecture decides here (test_gpu_profiles covers the GPU)")
    for key, want in (("T4", 750), ("A100", 800), ("RTX 4090", 890), ("H200", 900)):
        monkeypatch.setenv("GEMMLAB_DEVICE", key)
        out = numpy.zeros(1, dtype=numpy.int32)
        gl.load(code=code).get("arch")(1, 1, (out,))
        assert out[0] == want, key
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    big = gl.load(code=code).get("big")
    with pytest.raises(ValueError, match=r"over the limit of 65536 bytes \(Tesla T4\)"):
        big(1, 32, (numpy.zeros(32, dtype=numpy.float32),), shared_mem=65 * 1024)
    monkeypatch.setenv("GEMMLAB_DEVICE", "H200")
    out = numpy.zeros(32, dtype=numpy.float32)
    gl.load(code=code).get("big")(1, 32, (out,), shared_mem=65 * 1024)
    assert (out == 1).all()


def test_a_kernel_above_the_gpu_is_refused_in_one_line_of_one_type(monkeypatch):
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    five = registry.get("tc/05_mma_sync")
    fp16 = ops.TcGemm(m=64, n=64, k=64, precision="fp16")
    why = five.unsupported(fp16)
    assert why == ("tc/05_mma_sync needs compute capability 8.0 (mma.sync m16n8k16 and m16n8k8 with FP16, BF16 "
                   f"and TF32 operands); this is {profiles.current().describe()}")
    assert why.endswith("a Tesla T4, 7.5") and "\n" not in why
    one = registry.get("tc/01_wmma")
    assert one.unsupported(fp16) is None                                        # FP16 fragments: 7.0
    assert one.kernel() is not None                  # the default problem is FP16: it compiles for a T4
    bf16 = ops.TcGemm(m=48, n=80, k=32, precision="bf16")
    with pytest.raises(gl.UnsupportedGPU, match=r"tc/01_wmma in BF16 needs compute capability 8.0") as err:
        one.runner(bf16)
    assert isinstance(err.value, gl.BackendError) and isinstance(err.value, ValueError)
    assert one.verdict(bf16).endswith("checked on the CPU emulator as an NVIDIA H200, 9.0 (tc/01_wmma in BF16 needs "
                                      "compute capability 8.0 (WMMA fragments of BF16 and TF32); this is "
                                      f"{profiles.current().describe()})")
    assert one.verdict(ops.TcGemm(m=48, n=80, k=32, precision="fp16")) == "max rel. error < 1e-03: True" or \
        one.verdict(ops.TcGemm(m=48, n=80, k=32, precision="fp16")).endswith("True")
    monkeypatch.setenv("GEMMLAB_DEVICE", "A100")
    six = registry.get("tc/06_wgmma_tma")
    assert "needs compute capability 9.0 exactly (sm_90a" in six.unsupported(fp16)
    assert five.unsupported(fp16) is None


@pytest.mark.parametrize("where", ["T4", "A100"])
def test_a_check_the_gpu_cannot_run_runs_on_the_emulator_as_the_books_gpu(monkeypatch, where):
    monkeypatch.setenv("GEMMLAB_DEVICE", where)
    six = registry.get("tc/06_wgmma_tma")
    line = six.verdict(ops.TcGemm(m=136, n=264, k=72, precision="bf16"))
    assert line.startswith("tc/06_wgmma_tma: rel. error < 1e-05: True, checked on the CPU emulator as an NVIDIA "
                           "H200, 9.0 (tc/06_wgmma_tma needs compute capability 9.0 exactly") and "\n" not in line
    assert line.endswith(f"this is {profiles.current().describe()})") and where in profiles.current().describe()
    with pytest.raises(ValueError, match=r"tc/05_mma_sync with .*: M, N and K must be multiples of 16"):
        registry.get("tc/05_mma_sync").verdict(ops.TcGemm(m=200, n=136, k=72, precision="fp16"))  # (as on a GPU)


def test_a_check_on_the_emulator_that_fails_says_why_and_one_no_gpu_can_run_is_skipped(monkeypatch):
    from gemmlab import variant
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "several")          # (the child's launch refuses it)
    six, problem = registry.get("tc/06_wgmma_tma"), ops.TcGemm(m=64, n=64, k=64, precision="fp16")
    with pytest.raises(variant.ElsewhereError, match=r"tc/06_wgmma_tma's check on the CPU emulator as an NVIDIA "
                                                     r"H200, 9.0 failed: .*GEMMLAB_EMULATOR_WORKERS='several'"):
        six.verdict(problem)
    monkeypatch.setattr(profiles, "BOOK", "A100")                       # a book's GPU that cannot run it either
    assert six.verdict(problem).startswith("skipped here: tc/06_wgmma_tma needs compute capability 9.0 exactly")


def test_a_candidate_that_does_not_fit_the_gpu_is_skipped_with_the_reason(monkeypatch):
    v = registry.get("sgemm/11_cp_async")
    big = dict(BM=128, BN=256, BK=16, WM=64, WN=64, STAGES=4, AT=1, MINB=1)
    problem = ops.Gemm.square(4096)
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    why = v.skip_reason(problem, **big)
    assert "needs 97 KiB of shared memory per block" in why and "which allows 64 KiB" in why
    with pytest.raises(gl.UnsupportedGPU, match="which allows 64 KiB"):
        v.runner(problem, **big)
    monkeypatch.setenv("GEMMLAB_DEVICE", "A100")
    assert v.skip_reason(problem, **big) is None


def test_constants_come_from_the_profile_in_use(monkeypatch):
    for key, grid in (("T4", 264), ("A100", 528), ("H200", 1056)):
        monkeypatch.setenv("GEMMLAB_DEVICE", key)
        assert gl.blas._dot_params(1 << 20)["GRID"] == grid, key        # 8 blocks per SM, a legal grid
        assert gl.blas._sms() == P[key].sm_count
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    assert gl.blas._gemm_params(1536, 1536, 1536)["SPLITK"] == 1      # 72 large tiles fill 40 SMs ...
    monkeypatch.setenv("GEMMLAB_DEVICE", "H200")
    assert gl.blas._gemm_params(1536, 1536, 1536)["SPLITK"] > 1       # ... not 132: K is cut to fill them


def test_timings_carry_what_they_skipped():
    from gemmlab.timing import Row, Timings
    t = Timings("x", [Row("a", numpy.array([1.0, 2.0]), 1e9, 0)], 2, True, {"gpu": "Tesla T4"},
                skipped={"b": "needs 97 KiB"})
    back = Timings.from_dict(t.to_dict())
    assert back.skipped == {"b": "needs 97 KiB"} and "skipped on this GPU: b: needs 97 KiB" in repr(back)


def test_a_chapter_shows_the_record_of_the_readers_gpu_else_the_h200s(monkeypatch, tmp_path):
    for name in ("climb-nvidia-h200", "climb-tesla-t4", "ncu-climb-tesla-t4"):
        gpu = "Tesla T4" if "t4" in name else "NVIDIA H200"
        shape = {"ncu": "2025", "kernels": []} if name.startswith("ncu") else {"sizes": [], "dot": [], "gemv": [], "gemm": []}
        (tmp_path / f"{name}.json").write_text(json.dumps({"environment": {"gpu": gpu, "date": "2026-12-01"}, "x": name,
                                                           **shape}))
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    if gl.on_gpu:
        pytest.skip("on a GPU the record is the GPU's own")
    monkeypatch.delenv("GEMMLAB_DEVICE", raising=False)
    name, why = record.find("climb")
    assert name == "climb-nvidia-h200" and "no GPU in use" in why
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    assert record.find("climb")[0] == "climb-tesla-t4"
    assert record.shown("climb")["x"] == "climb-tesla-t4" and "the record of the T4" in record.shown("climb")["shown_as"]
    assert record.find("ncu")[0] == "ncu-nvidia-h200"            # ncu-climb-tesla-t4 is another study's
    monkeypatch.setenv("GEMMLAB_DEVICE", "A100")
    name, why = record.find("climb")
    assert name == "climb-nvidia-h200" and "there is none of the A100" in why


def test_readme_chapter_0_and_the_appendix_carry_the_tables_the_registry_gives():
    from gemmlab import support
    table = support.block()
    assert table in (REPO / "README.md").read_text()
    assert support.full_block() in (REPO / "appendix" / "gpus.md").read_text()
    nb = json.loads((REPO / "chapters" / "00-how-to-use.ipynb").read_text())
    assert any(table in "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    rows = dict(support.rows())
    t4, ampere, hopper = rows["15. Hopper's own pipeline: TMA, mbarriers and wgmma"]
    assert "tc/05_mma_sync (need 8.0" in t4 and "tc/06_wgmma_tma, tc/07_3xtf32_wgmma (need 9.0" in ampere
    assert hopper == "everything" and rows["2. Naive and tiled: one thread per element, then tiles in shared memory"] \
        == ["everything"] * 3
    short = dict(support.short_rows())
    # chapter 14 on a T4: tc/02, 04, 05, 06, 07 not at all; tc/01 and tc/03 in FP16 only; tc/03's big tiles
    assert short["14. What a tensor core computes"][0] == "all but 5 kernels, 2 in some precisions, some configurations"
    assert short["16. Past cuBLAS on Hopper, one technique at a time"][:3] == ["all but 5 kernels"] * 2 + ["all"]
    assert {cells[-1] for cells in short.values()} == {"checks all; timings recorded"}


def test_the_emulator_column_counts_what_the_emulator_cannot_run(monkeypatch):
    """The emulator's column is computed, not written: as a T4 (EMULATOR's profile changed) the same chapter
    reads like the T4's column."""
    from gemmlab import support
    monkeypatch.setattr(support, "EMULATOR", ("as a T4", ("T4",)))
    short = dict(support.short_rows())
    assert short["16. Past cuBLAS on Hopper, one technique at a time"][-1] == "checks all but 5 kernels; timings recorded"


@pytest.mark.gpu
def test_the_gpu_in_use_matches_its_table_entry():
    gpu = profiles._device_profile(gl.xp.cuda.Device().id)
    known = profiles.for_device(gpu.name)
    if known is None:
        pytest.skip(f"{gpu.name} is not in the profile table")
    for attr in ("capability", "sm_count", "shared_per_block", "shared_per_block_optin", "shared_per_sm",
                 "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm", "registers_per_block",
                 "shared_reserved_per_block", "l2_bytes"):
        assert getattr(gpu, attr) == getattr(known, attr), (attr, getattr(gpu, attr), getattr(known, attr))


@pytest.mark.gpu
@pytest.mark.parametrize("key", ["T4", "A100"])
def test_a_gpu_runs_as_an_older_profile_on_real_hardware(monkeypatch, key):
    gpu = profiles._device_profile(gl.xp.cuda.Device().id)
    want = P[key]
    if gpu.key == key or not profiles.contradiction_free(want, gpu):
        pytest.skip(f"{gpu.name} cannot stand in for the {key}, or is one")
    monkeypatch.setenv("GEMMLAB_DEVICE", key)
    assert profiles.compile_arch() == f"compute_{want.capability[0]}{want.capability[1]}"
    assert record.gpu_slug().endswith(f"-as-{key.lower()}") and "GEMMLAB_DEVICE" in record.environment()["runs_as"]
    out = gl.xp.zeros(1, dtype=numpy.int32)
    gl.load(code="__global__ void arch(int* out) { out[0] = __CUDA_ARCH__; }").get("arch")(1, 1, (out,))
    assert int(out.get()[0]) == want.cuda_arch                 # the driver ran PTX made for the older GPU
    big = gl.load(code="__global__ void big(float* o) { extern __shared__ float s[]; s[0] = 1; o[0] = s[0]; }")
    with pytest.raises(ValueError, match=f"over the limit of {want.shared_per_block_optin} bytes"):
        big.get("big")(1, 1, (gl.xp.zeros(1, dtype=numpy.float32),), shared_mem=want.shared_per_block_optin + 1024)
    assert registry.get("sgemm/11_cp_async").check(ops.Gemm(m=130, n=70, k=37), AT=1, STAGES=3).ok
    fp16 = ops.TcGemm(m=48, n=80, k=32, precision="fp16")
    assert registry.get("tc/03_wmma_pipelined").check(fp16).ok
    if key == "T4":
        with pytest.raises(gl.UnsupportedGPU, match="tc/05_mma_sync needs compute capability 8.0"):
            registry.get("tc/05_mma_sync").runner(fp16)
    else:
        assert registry.get("tc/05_mma_sync").check(fp16).ok
    with pytest.raises(gl.UnsupportedGPU, match="needs compute capability 9.0 exactly"):
        registry.get("tc/06_wgmma_tma").runner(fp16)


def test_the_checks_a_gpu_cannot_run_go_to_one_child_and_come_back_in_order(monkeypatch):
    from gemmlab import variant
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    calls, real = [], variant._check_on_emulator
    monkeypatch.setattr(variant, "_check_on_emulator", lambda *a: calls.append(a) or real(*a))
    one = registry.get("tc/01_wmma")
    lines = one.verdicts([ops.TcGemm(m=48, n=80, k=32, precision="bf16"), ops.TcGemm(m=48, n=80, k=32, precision="fp16"),
                          ops.TcGemm(m=112, n=48, k=208, precision="tf32")])
    assert len(calls) == 1 and [p.precision for p in calls[0][1]] == ["bf16", "tf32"]
    assert all(line.startswith("tc/01_wmma WARPS_M=2,WARPS_N=2: rel. error < ") and ": True" in line for line in lines)
    assert "in BF16 needs compute capability 8.0" in lines[0] and "in TF32 needs" in lines[2]
    assert "checked on" not in lines[1]                                  # (FP16 runs as a T4)


def test_without_a_gpu_a_chapter_shows_the_record_of_the_gpu_its_outputs_come_from(monkeypatch):
    """No GPU, no profile asked for: a study's record of the GPU that made the chapter's committed outputs, where
    there is one (chapter 2's run and its racecheck demo are the H100's); else the book's, the H200's."""
    if gl.on_gpu:
        pytest.skip("on a GPU the record is the GPU's own")
    monkeypatch.delenv("GEMMLAB_DEVICE", raising=False)
    monkeypatch.setitem(record._chapter, "name", "02-naive-and-tiled")
    gpu = record.load(record._committed_run("02-naive-and-tiled"))["environment"]["gpu"]
    name, why = record.find("racecheck-demo")
    assert name == f"racecheck-demo-{record.slug(gpu)}" and gpu in why and "no GPU in use" in why
    assert record.find("climb")[0] == "climb-nvidia-h200"              # none of that GPU: the book's
    monkeypatch.setitem(record._chapter, "name", None)
    assert record.find("racecheck-demo")[0] == "racecheck-demo-nvidia-h200"
