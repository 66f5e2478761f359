"""Chapter 17's FP8 GEMM (tc/13): the 8-bit formats' encoding, the quantization's scales, the kernel against
float64 on the emulator (and on a Hopper GPU) at sizes that are multiples of none of its tiles, and every bad input
refused by name."""
import re
from pathlib import Path

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops
from gemmlab.runtime import backend as hw

KERNEL = "tc/13_fp8_scaled"


# (M, N, K): a partial tile; several, none whole; more tiles than the emulated H200's 132 SMs in either form (266
# of 128 x 128, 140 of 128 x 256: blocks walk several, carrying their stages' phases from tile to tile); K of one
# slice and of several
SIZES = [(1, 8, 128), (200, 136, 256), (300, 264, 384), (1700, 2312, 256)]


@pytest.mark.parametrize("scaling", list(ops.FP8_SCALINGS))
@pytest.mark.parametrize("out", ["bf16", "fp32"])
@pytest.mark.parametrize("kind", list(ops.FP8_KINDS))
def test_tc13_agrees_with_float64(scaling, out, kind):
    v = gl.registry.get(KERNEL)
    sizes = SIZES if kind == "e4m3" and out == "bf16" else SIZES[1:2]
    for m, n, k in sizes:
        p = ops.Fp8Gemm(m=m, n=n, k=k, scaling=scaling, kind=kind, out=out)
        if v.skip_reason(p):
            pytest.skip(v.skip_reason(p))
        result = v.check(p)
        assert result.ok, str(result)


def test_tc13_per_tensor_takes_k_a_multiple_of_16():
    v = gl.registry.get(KERNEL)
    p = ops.Fp8Gemm(m=70, n=72, k=48, scaling="tensor")
    if v.skip_reason(p):
        pytest.skip(v.skip_reason(p))
    assert v.check(p).ok


def test_the_promotion_keeps_each_slices_scales():
    """Scales that differ by powers of two from slice to slice and from row to row: a kernel that applied one
    slice's scales to another's sum, or one row's to another, would be off by those factors."""
    v = gl.registry.get(KERNEL)
    p = ops.Fp8Gemm(m=130, n=264, k=512, scaling="block", out="fp32")
    if v.skip_reason(p):
        pytest.skip(v.skip_reason(p))
    rng = numpy.random.default_rng(5)
    a8, b8 = ops.to_fp8_bits(rng.standard_normal((130, 512))), ops.to_fp8_bits(rng.standard_normal((264, 512)))
    sa = (2.0 ** rng.integers(-6, 6, (130, 4))).astype(numpy.float32)
    sb = (2.0 ** rng.integers(-6, 6, (4, 3))).astype(numpy.float32)
    inputs = tuple(gl.xp.asarray(x) for x in (a8, b8, sa, sb))
    c = p.output()
    v.runner(p)(inputs, c)
    from gemmlab.check import rel_error
    assert rel_error(gl.to_host(c), p.reference(inputs)) < p.tolerance(1e-5)


def _inputs(p):
    return list(p.inputs(numpy.random.default_rng(0)))


@pytest.mark.parametrize("change, match", [
    (lambda i: i.__setitem__(2, i[2][:, :1].copy()), r"sa must be a C-contiguous 64 x 2 array \(a row of A and 128 of K\)"),
    (lambda i: i.__setitem__(3, i[3].T.copy()), r"sb must be a C-contiguous 2 x 1 array \(128 x 128 of B\)"),
    (lambda i: i.__setitem__(2, i[2].astype(numpy.float64)), r"the scales sa must be float32; got float64"),
    (lambda i: i.__setitem__(0, i[0].view(numpy.int8)), r"A must hold E4M3 values as their bytes \(uint8"),
    (lambda i: i.__setitem__(1, gl.xp.ascontiguousarray(i[1].T)), r"B\^T must be a C-contiguous 56 x 256 array .* "
                                                                     r"K-major\); got 256 x 56"),
    (lambda i: i.pop(), r"takes four inputs \(A, B\^T, sa, sb\); got 3"),
])
def test_bad_inputs_are_refused_by_name(change, match):
    p = ops.Fp8Gemm(m=64, n=56, k=256, scaling="block")
    v = gl.registry.get(KERNEL)
    inputs = _inputs(p)
    change(inputs)
    with pytest.raises((ValueError, TypeError), match=match):
        gl.registry._fp8_operands(p, tuple(inputs), p.output())
    if not v.skip_reason(p):
        with pytest.raises((ValueError, TypeError), match=match):
            v.runner(p)(tuple(inputs), p.output())


@pytest.mark.parametrize("scaling", list(ops.FP8_SCALINGS))
def test_a_nan_or_infinite_scale_spoils_the_elements_it_scales_and_no_others(scaling):
    """The rule chapter 17 states: scales are not read before the launch; a NaN or infinite one makes exactly the
    elements of C it scales non-finite (a row of A's block scale: its row of C; a block of B's: its 128 columns;
    a per-tensor scale: all of C)."""
    v = gl.registry.get(KERNEL)
    p = ops.Fp8Gemm(m=130, n=264, k=256, scaling=scaling, out="fp32")
    if v.skip_reason(p):
        pytest.skip(v.skip_reason(p))
    for which, at, value in ((2, (3, 1), numpy.nan), (3, (0, 1), numpy.inf)):
        inputs = _inputs(p)
        host = gl.to_host(inputs[which]).copy()
        host[at if scaling == "block" else (0,)] = value
        inputs[which] = gl.xp.asarray(host)
        c = p.output()
        v.runner(p)(tuple(inputs), c)
        bad = ~numpy.isfinite(gl.to_host(c))
        want = numpy.zeros_like(bad)
        if scaling == "tensor":
            want[:] = True
        elif which == 2:
            want[3, :] = True
        else:
            want[:, 128:256] = True
        assert numpy.array_equal(bad, want), (scaling, which)


def test_sizes_the_kernel_cannot_take_are_refused_by_name():
    v = gl.registry.get(KERNEL)
    with pytest.raises(ValueError, match="K must be a multiple of 128, the scales' block along K"):
        v.runner(ops.Fp8Gemm(m=64, n=64, k=208, scaling="block"))
    with pytest.raises(ValueError, match="K must be a multiple of 16"):
        v.runner(ops.Fp8Gemm(m=64, n=64, k=200, scaling="tensor"))
    with pytest.raises(ValueError, match="N must be a multiple of 8"):
        v.runner(ops.Fp8Gemm(m=64, n=60, k=128, scaling="tensor"))
    with pytest.raises(ValueError, match="scaling is one of block, tensor"):
        ops.Fp8Gemm(m=64, n=64, k=128, scaling="row")
    with pytest.raises(ValueError, match="out is C's type"):
        ops.Fp8Gemm(m=64, n=64, k=128, out="fp16")
    assert any(n.capability == (9, 0) and n.only for n in v.needs)


def test_the_emulators_fp8_accumulator_is_the_one_the_tolerance_assumes():
    header = (Path(gl.__file__).parent / "emulator" / "include" / "gl_emu_tensor.h").read_text()
    bits = int(re.search(r"GL_TC_ALIGN_BITS_FP8 = (\d+)", header).group(1))
    assert bits == ops.FP8_ACCUMULATOR_BITS


@pytest.mark.gpu
@pytest.mark.skipif(not hw.on_gpu, reason="needs a GPU")
@pytest.mark.parametrize("scaling", list(ops.FP8_SCALINGS))
@pytest.mark.parametrize("out", ["bf16", "fp32"])
@pytest.mark.parametrize("shape", [(1, 8, 128), (200, 136, 256), (3000, 2600, 512), (3900, 4104, 1024),
                                   (2430, 1784, 1152)], ids=lambda s: "x".join(map(str, s)))
def test_tc13_on_the_gpu(scaling, out, shape):
    v = gl.registry.get(KERNEL)
    p = ops.Fp8Gemm(m=shape[0], n=shape[1], k=shape[2], scaling=scaling, out=out)
    if v.skip_reason(p):
        pytest.skip(v.skip_reason(p))
    result = v.check(p)
    assert result.ok, str(result)


def _chapter_17():
    """(the fp8 record of the GPU chapter 17's outputs come from, the chapter's prose on one line, the GPU's short
    name: H100 of NVIDIA H100 80GB HBM3)."""
    import json
    from pathlib import Path
    from gemmlab import record
    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "17-fp8.ipynb").read_text())
    gpu = nb["metadata"]["gemmlab"]["gpu"]
    text = " ".join("\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown").split())
    return record.load(f"fp8-{record.slug(gpu)}"), text, gpu.split()[1]


def test_chapter_17_reads_the_accumulation_record():
    """Chapter 17's reading of the accumulation sweep quotes the record of the GPU its outputs come from: the
    promoted error at every K, the tensor cores' at three, and their ratio at the largest K."""
    rec, text, gpu = _chapter_17()
    acc = {a["k"]: a for a in rec["accumulation"]}
    assert f"In the {gpu}'s record" in text
    promoted = sorted(f"{a['promoted']:.2e}" for a in acc.values())
    spread = max(a["promoted"] for a in acc.values()) / min(a["promoted"] for a in acc.values())
    assert spread < 1.05, promoted                                    # "stays ... at every K"
    last = max(acc)
    for phrase in (f"the error stays between {promoted[0]} and {promoted[-1]} at every $K$ up to {last}",
                   f"{acc[256]['tensor_cores']:.2e} at $K$ = 256, {acc[4096]['tensor_cores']:.2e} at 4096 and "
                   f"{acc[last]['tensor_cores']:.2e} at {last}, "
                   f"{acc[last]['tensor_cores'] / acc[last]['promoted']:.1f} times the promoted error"):
        assert phrase in text, phrase


def test_chapter_17_reads_the_measured_record():
    """Chapter 17's reading of the timed points quotes the record its table shows: each computation's TF/s, tc/13's
    share of cuBLASLt's call of the same form (ahead only where the record ranks it), what each form's promotion
    costs, the errors and the SM clock."""
    rec, text, gpu = _chapter_17()
    pts = {p["shape"][0]: p for p in rec["points"]}
    assert set(pts) == {4096, 8192}
    row = {n: {r["name"]: r for r in p["timing"]["rows"]} for n, p in pts.items()}
    tf = {n: {name: f"{r['gflops'] / 1e3:.0f}" for name, r in rows.items()} for n, rows in row.items()}

    def share(n, a, b):                              # a's rate as a share of b's, from the medians
        return f"{row[n][b]['median_ms'] / row[n][a]['median_ms']:.1%}"

    def err(n, name, kind="check"):
        return f"{pts[n]['errors'][name][kind]:.2e}" if kind == "check" else f"{pts[n]['errors'][name][kind]:.1e}"
    clocks = {r["clock"]["median"] for rows in row.values() for r in rows.values()}
    assert len(clocks) == 1
    bar = {n: pts[n]["bars"] for n in pts}
    assert bar[4096]["tc/13 tensor"]["ranked"] and not bar[8192]["tc/13 tensor"]["ranked"]
    assert all(bar[n]["tc/13 block"]["ranked"] and not bar[n]["tc/13 block"]["met"] for n in pts)
    slower = [f"{row[n]['cuBLASLt tensor']['median_ms'] / row[n]['cuBLASLt tensor, fast']['median_ms'] - 1:.1%}"
              for n in (4096, 8192)]
    ends = sorted({err(n, name, "end_to_end") for n in pts for name in pts[n]["errors"]})
    assert {err(n, "tc/13 block") for n in pts} == {err(n, "cuBLASLt block") for n in pts} == \
        {err(n, "cuBLASLt tensor") for n in pts}
    for n in pts:
        assert err(n, "tc/13 tensor") == err(n, "cuBLASLt tensor, fast") == err(n, "Triton matmul")
    for phrase in (
            f"In the {gpu}'s record, every row at {clocks.pop():.0f} MHz",
            f"{tf[4096]['tc/13 tensor']} TF/s at 4096³, {share(4096, 'tc/13 tensor', 'cuBLASLt tensor, fast')} of "
            f"cuBLASLt's fast accumulation ({tf[4096]['cuBLASLt tensor, fast']}), a margin beyond the run's spread",
            f"{tf[8192]['tc/13 tensor']} at 8192³, {share(8192, 'tc/13 tensor', 'cuBLASLt tensor, fast')} of it "
            f"({tf[8192]['cuBLASLt tensor, fast']}), within the spread: level, not ahead",
            f"off by the same {err(4096, 'tc/13 tensor')} and {err(8192, 'tc/13 tensor')} against float64",
            f"is off by {err(4096, 'cuBLASLt tensor')} (what rounding $C$ to BF16 leaves) and runs at "
            f"{tf[4096]['cuBLASLt tensor']} and {tf[8192]['cuBLASLt tensor']} TF/s",
            f"takes {slower[0]} and {slower[1]} longer for that accuracy",
            f"reaches {tf[4096]['Triton matmul']} and {tf[8192]['Triton matmul']} TF/s; it too sums all of $K$ in the "
            f"tensor cores (its error is the fast call's), and against that call it runs at "
            f"{share(4096, 'Triton matmul', 'cuBLASLt tensor, fast')} and "
            f"{share(8192, 'Triton matmul', 'cuBLASLt tensor, fast')}",
            f"{tf[4096]['tc/13 block']} and {tf[8192]['tc/13 block']} TF/s, "
            f"{share(4096, 'tc/13 block', 'cuBLASLt block')} and {share(8192, 'tc/13 block', 'cuBLASLt block')} of "
            f"cuBLASLt's 1 × 128 / 128 × 128 call ({tf[4096]['cuBLASLt block']} and {tf[8192]['cuBLASLt block']}), "
            f"with the same error, {err(4096, 'tc/13 block')}",
            f"cuBLASLt's block call runs at {share(4096, 'cuBLASLt block', 'cuBLASLt tensor, fast')} and "
            f"{share(8192, 'cuBLASLt block', 'cuBLASLt tensor, fast')} of its fast per-tensor one; `tc/13`'s at "
            f"{share(4096, 'tc/13 block', 'tc/13 tensor')} and {share(8192, 'tc/13 block', 'tc/13 tensor')} of its own",
            f"every form is off by {ends[0]} to {ends[-1]}"):
        assert phrase in text, phrase
