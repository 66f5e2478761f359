"""The emulator and the GPU agree on every registry kernel (run on a GPU machine with a C++ compiler)."""
import pytest

from gemmlab import crosscheck


@pytest.mark.gpu
def test_every_registry_kernel_agrees_between_gpu_and_emulator():
    result = crosscheck.compare(seed=123)
    bad = [r for r in result["cases"] if not r["agree"]]
    assert not bad, crosscheck.report(result)
    assert all(r["gpu_error"] < 1e-5 and r["emulator_error"] < 1e-5 for r in result["cases"])


# variants added after the recorded runs (python -m gemmlab crosscheck --record), to be recorded at the next GPU
# session; once one is, it must leave this set (the first assertion below)
PENDING: set = set()


def test_the_records_cover_every_registry_variant_and_agree():
    """Every variant the emulator runs is in some GPU's record (each GPU's record is its own: the H200's, the
    H100's, ...), and every recorded case agreed."""
    from gemmlab import record, registry
    from gemmlab.paths import RESULTS
    names = sorted(p.stem for p in RESULTS.glob("emulator-vs-*.json"))
    assert names, "no emulator-vs-<gpu> record"
    recorded = set()
    for name in names:
        data = record.load(name)
        recorded |= {c["case"].split("|")[0] for c in data["cases"]}
        assert data["all_agree"] and all(c["agree"] for c in data["cases"]), name
    assert not PENDING & recorded, "the records cover them now: take them out of PENDING"
    assert recorded == {v.key for v in registry.VARIANTS} - PENDING


def _crosscheck_run(only, cases, date="2026-12-01T00:00:00Z", seed=0):
    rows = [{"case": f"{key}|fp16", "gpu_vs_emulator": 0.0, "gpu_error": 1e-7, "emulator_error": 1e-7,
             "bitwise_equal": True, "agree": agree} for key, agree in cases]
    return {"environment": {"gpu": "a GPU", "date": date}, "seed": seed, "tolerance": 1e-5, "emulator_ran_on": "here",
            "cases": rows, "only": list(only), "bitwise_equal": len(rows), "all_agree": all(a for _, a in cases),
            "command": "python -m gemmlab crosscheck --record"}


def test_a_part_of_the_registry_crosschecked_replaces_only_its_own_cases():
    old = _crosscheck_run(("tc/",), [("tc/06_wgmma", True), ("tc/13_fp8", True)])
    new = _crosscheck_run(("tc/13",), [("tc/13_fp8", False), ("tc/13_fp8", True)], date="2026-12-07T00:00:00Z", seed=4)
    got = crosscheck.merged(new, old)
    assert [c["case"] for c in got["cases"]] == ["tc/06_wgmma|fp16", "tc/13_fp8|fp16", "tc/13_fp8|fp16"]
    assert got["only"] == ["tc/", "tc/13"] and not got["all_agree"] and got["bitwise_equal"] == 3
    assert [(r["seed"], r["cases"]) for r in got["runs"]] == [(0, 2), (4, 2)]
    everything = _crosscheck_run((), [("a/1", True)])
    assert crosscheck.merged(new, everything)["only"] == []
    assert crosscheck.merged(everything, old) is everything        # a whole run replaces the record
    assert crosscheck.merged(new, None) is new


def test_ulps_from_the_reference_give_the_output_back_bit_for_bit():
    import numpy
    rng = numpy.random.default_rng(5)
    ref = rng.standard_normal(1000)
    out = (ref * (1 + 1e-6 * rng.standard_normal(1000))).astype(numpy.float32)
    out[:6] = [numpy.inf, -numpy.inf, numpy.nan, 0.0, -0.0, -1e-30]          # and what crosses zero
    anchor = ref.astype(numpy.float32)
    d = crosscheck._delta(out, anchor)
    back = crosscheck._undelta(d, anchor)
    assert back.view(numpy.int32).tolist() == out.view(numpy.int32).tolist()
    near = crosscheck._delta(anchor * numpy.float32(1 + 2 ** -22), anchor)   # a few ulps: one byte each
    assert near.dtype == numpy.int8 and numpy.abs(near).max() <= 4
    assert crosscheck._delta(numpy.zeros(0, numpy.float32), numpy.zeros(0, numpy.float32)).size == 0


def test_emitted_file_restores_every_output(tmp_path, monkeypatch):
    """emit, then what compare reads of it, on a few cases of the backend in use: the outputs come back bit
    for bit, and the file is a fraction of the outputs' size."""
    import numpy
    from gemmlab import registry
    cases = [c for c in crosscheck._cases() if c[0].key in ("sgemm/02_shared_tiling", "blas/dot/06_warp_shuffle")][:6]
    monkeypatch.setattr(crosscheck, "_cases", lambda only=(): iter(cases))
    direct = crosscheck.outputs(seed=7)
    path = tmp_path / "emu.npz"
    crosscheck.emit(str(path), seed=7)
    stored, ran_on, packed = crosscheck._load(str(path), "unknown")
    assert ran_on != "unknown" and packed and stored.keys() == direct.keys()
    for v, choice, problem, key, inputs in crosscheck._seeded(7):
        back = crosscheck._emulated(stored, packed, key, problem.reference(inputs))
        assert back.view(numpy.int32).tolist() == direct[key].view(numpy.int32).tolist(), key
    assert path.stat().st_size < 0.5 * sum(v.nbytes for v in direct.values())
    assert registry.get("sgemm/02_shared_tiling")


def test_a_damaged_emulator_outputs_file_is_refused_with_its_name(tmp_path):
    import numpy
    good = tmp_path / "good.npz"
    numpy.savez_compressed(good, __machine__=numpy.array("here"), __format__=numpy.array(crosscheck.FORMAT),
                           case=numpy.zeros(3, numpy.int8))
    assert crosscheck._load(str(good), "x")[1] == "here"
    data = good.read_bytes()
    for name, content in (("truncated.npz", data[: len(data) // 2]), ("empty.npz", b""), ("text.npz", b"not a zip")):
        bad = tmp_path / name
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=rf"{bad} is not a file that crosscheck --emit wrote"):
            crosscheck._load(str(bad), "x")


def test_a_case_draws_its_inputs_from_its_key_not_its_place(tmp_path, monkeypatch):
    """Reordering the registry changes no case's inputs; a file from another format is refused by name."""
    import numpy
    first = {key: [x.copy() for x in inputs] for *_, key, inputs in crosscheck._seeded(3)}
    cases = list(crosscheck._cases())
    monkeypatch.setattr(crosscheck, "_cases", lambda only=(): iter(cases[::-1]))
    again = {key: inputs for *_, key, inputs in crosscheck._seeded(3)}
    assert first.keys() == again.keys()
    assert all(all(numpy.array_equal(a, b) for a, b in zip(first[k], again[k])) for k in first)
    old = tmp_path / "old.npz"
    numpy.savez_compressed(old, __machine__=numpy.array("here"),
                           __format__=numpy.array("ulps from the FP32-rounded float64 reference"))
    with pytest.raises(ValueError, match="another version of crosscheck --emit"):
        crosscheck._load(str(old), "x")


def test_only_selects_variants_by_key_prefix_and_refuses_one_that_names_none():
    keys = {v.key for v in crosscheck._selected(("tc/",))}
    assert keys and all(k.startswith("tc/") for k in keys)
    assert {v.key for v, _, _ in crosscheck._cases(("tc/05",))} == {"tc/05_mma_sync"}
    with pytest.raises(SystemExit, match=r"--only: no variant has a key that starts with 'tx/'"):
        crosscheck._selected(("tx/",))


def test_every_type_of_output_a_kernel_writes_is_compared_as_numbers():
    """tc/09 and tc/12 write C in FP32 and in their inputs' 16-bit type: both forms are cases; other tensor-core
    kernels only FP32; a BF16 C (kept as its bits) is compared as its values."""
    import numpy
    from gemmlab import ops
    outs = {}
    for v, _, p in crosscheck._cases(("tc/0", "tc/12")):
        outs.setdefault(v.key, set()).add(getattr(p, "out", "fp32"))
    assert outs["tc/09_tma_store"] == outs["tc/12_pingpong"] == {"fp32", "fp16", "bf16"}
    assert outs["tc/06_wgmma_tma"] == {"fp32"}
    p = ops.TcGemm(m=16, n=16, k=16, precision="bf16", out="bf16")
    bits = numpy.array([[0x3F80, 0xC000]], dtype=numpy.uint16)                  # 1.0, -2.0 as BF16
    assert p.values(bits).tolist() == [[1.0, -2.0]]


def test_a_fitted_or_16_bit_output_agrees_within_the_smaller_of_the_two_errors():
    from gemmlab import ops, registry
    exact = registry.get("tc/09_tma_store")
    fp32 = ops.TcGemm(m=16, n=16, k=16, precision="fp16")
    half = ops.TcGemm(m=16, n=16, k=16, precision="fp16", out="fp16")
    assert crosscheck.agree(exact, fp32, 0.9e-5, 1e-3, 1e-3) and not crosscheck.agree(exact, fp32, 5e-5, 1e-3, 1e-3)
    assert crosscheck.agree(exact, half, 5e-5, 1e-3, 2e-3) and not crosscheck.agree(exact, half, 1.5e-3, 1e-3, 2e-3)
