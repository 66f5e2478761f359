"""Chapter 17's FP8 study, in one run: ``python -m gemmlab fp8 --record``.

At each shape of :data:`SHAPES` the same normal values (rows of A and columns of B differing in size by up to 2^4
either way) are quantized to E4M3 three ways: per 128-block (DeepSeek-V3's scales, which tc/13 applies as each
128-wide slice of K leaves the tensor cores), per tensor (one scale each: tc/13 without promotion, and cuBLASLt as
``torch._scaled_mm`` calls it) and per row of A and column of B (cuBLASLt's row-wise form). Each computation is
checked against float64 on the values it multiplies, its error against the product of the unquantized values is
kept, and all of them, with a Triton matmul of the per-tensor form, are timed in one round-robin
(:func:`gemmlab.bench`: CUDA events, medians, L2 flushed, SM clock and power sampled), C in BF16.

The accumulation sweep (:func:`accumulation`): the same FP8 values, scales of 1, multiplied with the promotion
(tc/13 SCALED 1: the tensor cores sum 128 of K at a time, the CUDA cores add those sums in FP32) and without it
(SCALED 0: the tensor cores sum all of K), C in FP32, against float64, per K.
"""
from __future__ import annotations

import numpy

from .. import ops, record, registry
from ..check import rel_error
from ..runtime import backend as hw
from ..table import Table
from ..timing import Timings, bench, rank
from . import past_cublas

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
# the bars, each tc/13 form against cuBLASLt's form of the same work and the same accumulation, at every shape:
# per-128-block scales, each slice promoted (cuBLASLt's 1 x 128 / 128 x 128 form), and one scale each with all of K
# summed in the tensor cores (cuBLASLt's fast accumulation)
TARGET = 1.00
BARS = (("tc/13 block", "cuBLASLt block"), ("tc/13 tensor", "cuBLASLt tensor, fast"))
ACCUMULATION_K = (256, 1024, 4096, 16384)
ACCUMULATION_MN = 512
KERNEL = "tc/13_fp8_scaled"
# the rows of a point, in the table's order: (name in the record, heading)
ROWS = [("tc/13 block", "tc/13 block"), ("cuBLASLt block", "cuBLASLt block"), ("tc/13 tensor", "tc/13 tensor"),
        ("cuBLASLt tensor, fast", "cuBLASLt tensor, fast"), ("cuBLASLt tensor", "cuBLASLt tensor"),
        ("cuBLASLt row-wise", "cuBLASLt row"), (past_cublas.TRITON, "Triton tensor")]
# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps): a 128-byte row of K a slice, as tc/13's
TRITON_CONFIGS = [(128, 256, 128, 8, 3, 8), (128, 128, 128, 8, 4, 4), (256, 128, 128, 8, 3, 8),
                  (128, 256, 128, 8, 4, 8)]
SETTLE_US = past_cublas.SETTLE_US


def _torch_fp8(bits, kind: str = "e4m3"):
    import torch
    return torch.from_dlpack(bits).view(torch.float8_e4m3fn if kind == "e4m3" else torch.float8_e5m2)


def scaled_mm(a8, bt8, sa, sb, fast: bool = False):
    """A zero-argument callable returning cuBLASLt's FP8 product as ``torch._scaled_mm`` computes it: A (m x k,
    row-major) times B (k x n, column-major: B^T's rows), BF16 C, with scales per tensor (one element each), per row
    of A (m x 1) and column of B (1 x n), or per block (sa: m x k/128 and sb: k/128 x n/128, as tc/13 takes them;
    cuBLASLt reads them column-major, copied here once). ``fast``: cuBLASLt's fast accumulation (all of K summed in
    the tensor cores) instead of its default, which promotes the partial sums into FP32. Raises ImportError without
    torch."""
    import torch
    A, B = _torch_fp8(a8), _torch_fp8(bt8).t()
    scale_a, scale_b = torch.from_dlpack(sa), torch.from_dlpack(sb)
    if scale_a.numel() == 1:
        scale_a, scale_b = scale_a.reshape(()), scale_b.reshape(())
    elif scale_a.shape[1] != 1:
        # blocks: cuBLASLt wants each scale matrix column-major, B's with K/128 rounded up to a multiple of 4
        kt, nt = scale_b.shape
        scale_a = scale_a.t().contiguous().t()
        padded = torch.zeros((nt, -(-kt // 4) * 4), dtype=torch.float32, device=scale_b.device)
        padded[:, :kt] = scale_b.t()
        scale_b = padded.t()[:kt]
    return lambda: torch._scaled_mm(A, B, scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)


def _triton_fp8(problem, inputs, out, config):
    """The Triton matmul (chapter 16's) on per-tensor-scaled E4M3 inputs, the scales' product as alpha, C BF16."""
    import torch
    a8, bt8, sa, sb = inputs
    alpha = float(hw.to_host(sa)[0]) * float(hw.to_host(sb)[0])
    return past_cublas.triton_call(_torch_fp8(a8), _torch_fp8(bt8).t(), torch.from_dlpack(out).view(torch.bfloat16),
                                   alpha, config)


def _values_of(c) -> numpy.ndarray:
    """A torch result (BF16) as float64 on the host."""
    return c.float().cpu().numpy().astype(numpy.float64)


def _row_wise(values_a, values_b):
    """(a8, bt8, sa (m x 1), sb (1 x n)) on the device: A quantized per row, B per column (cuBLASLt's row-wise)."""
    k = values_a.shape[1]
    a8, sa = ops.fp8_quantize(values_a, "e4m3", "block", 1, k)
    b8, sb = ops.fp8_quantize(values_b.T, "e4m3", "block", 1, k)
    return tuple(hw.xp.asarray(x) for x in (a8, b8, sa, numpy.ascontiguousarray(sb.T)))


def _row_wise_seen(a8, b8, sa, sb):
    """A and B as cuBLASLt's row-wise call multiplies them, in float64 (sa: m x 1; sb: 1 x n)."""
    a8, b8, sa, sb = (hw.to_host(x) for x in (a8, b8, sa, sb))
    k = a8.shape[1]
    return ops.fp8_dequantize(a8, sa, "e4m3", 1, k), ops.fp8_dequantize(b8, sb.T, "e4m3", 1, k).T


def measure_shape(shape, reps: int = 10, progress: bool = True) -> dict:
    """One point of the study: the three quantizations of the same values, each checked and its end-to-end error
    kept, then every computation timed in one round-robin."""
    import importlib
    importlib.import_module("torch")                   # cuBLASLt's FP8 is reached through torch: the study needs it
    m, n, k = shape
    rng = numpy.random.default_rng(1)
    va = rng.standard_normal((m, k)) * 2.0 ** rng.uniform(-4, 4, (m, 1))
    vb = rng.standard_normal((k, n)) * 2.0 ** rng.uniform(-4, 4, (1, n))
    exact = hw.to_host(hw.xp.asarray(va) @ hw.xp.asarray(vb))
    v = registry.get(KERNEL)
    calls, errors = {}, {}
    for scaling in ("block", "tensor"):
        p = ops.Fp8Gemm(m=m, n=n, k=k, scaling=scaling)
        inputs = p.quantized(va, vb)
        out = p.output()
        run = v.runner(p)
        run(inputs, out)
        got = p.values(hw.to_host(out))
        errors[f"tc/13 {scaling}"] = {"check": rel_error(got, p.reference(inputs)), "end_to_end": rel_error(got, exact),
                                      "tolerance": p.tolerance(v.tolerance)}
        if errors[f"tc/13 {scaling}"]["check"] > errors[f"tc/13 {scaling}"]["tolerance"]:
            raise AssertionError(f"tc/13 {scaling}-scaled at {m} x {n} x {k}: error {errors[f'tc/13 {scaling}']} "
                                 "against float64: not timing it")
        calls[f"tc/13 {scaling}"] = (lambda r=run, i=inputs, o=out: r(i, o))
        if scaling == "tensor":
            tensor_problem, tensor_inputs = p, inputs
        else:
            block_problem, block_inputs = p, inputs
    forms = {"cuBLASLt block": (block_problem, block_inputs, False), "cuBLASLt tensor": (tensor_problem, tensor_inputs,
                                                                                        False),
             "cuBLASLt tensor, fast": (tensor_problem, tensor_inputs, True),
             "cuBLASLt row-wise": (None, _row_wise(va, vb), False)}
    refused = {}
    for name, (problem, inputs, fast) in forms.items():
        try:
            call = scaled_mm(*inputs, fast=fast)
            got = _values_of(call())
        except RuntimeError as e:                   # a form this torch or cuBLASLt does not offer: said, not timed
            refused[name] = str(e).splitlines()[0][:200]
            continue
        A, B = problem.seen(inputs) if problem else _row_wise_seen(*inputs)
        ref = hw.to_host(hw.xp.asarray(A) @ hw.xp.asarray(B))
        errors[name] = {"check": rel_error(got, ref), "end_to_end": rel_error(got, exact)}
        if errors[name]["check"] > 1e-2:
            raise AssertionError(f"{name} at {m} x {n} x {k}: error {errors[name]['check']:.2e} against float64 on "
                                 "its own values: its inputs were given wrongly")
        calls[name] = call
    tri = past_cublas.pick_triton(tensor_problem, tensor_inputs, make=_triton_fp8, configs=TRITON_CONFIGS)
    if "config" in tri:
        out = tensor_problem.output()
        calls[past_cublas.TRITON] = _triton_fp8(tensor_problem, tensor_inputs, out, tuple(tri["config"]))
        calls[past_cublas.TRITON]()
        hw.synchronize()
        got = tensor_problem.values(hw.to_host(out))
        errors[past_cublas.TRITON] = {"check": tri["error"], "end_to_end": rel_error(got, exact)}
    label = f"fp8 E4M3 {m} x {n} x {k}, BF16 C"
    t = bench(calls, ops.Fp8Gemm(m=m, n=n, k=k), library=False, reps=reps, progress=progress, label=label,
              warmup=2, settle_us=SETTLE_US)
    rows = {r["name"]: r for r in t.records()}
    bars = {}
    for ours, theirs in BARS:
        if theirs in rows:
            ratio = rows[theirs]["median_ms"] / rows[ours]["median_ms"]
            bars[ours] = {"against": theirs, "ratio": ratio, "ranked": rank(rows[ours], rows[theirs])[0],
                          "error_no_worse": errors[ours]["check"] <= errors[theirs]["check"],
                          "met": ratio >= TARGET and errors[ours]["check"] <= errors[theirs]["check"]}
    return {"shape": list(shape), "errors": errors, "triton": tri, "timing": t.to_dict(), "bars": bars,
            "refused": refused, "target": TARGET, "met": len(bars) == len(BARS) and all(b["met"] for b in bars.values()),
            "settle_us": SETTLE_US, "versions": {"torch": past_cublas._version("torch"),
                                                   "triton": past_cublas._version("triton")}}


def accumulation(ks=ACCUMULATION_K, mn: int = ACCUMULATION_MN, seed: int = 3) -> list:
    """The error of tc/13 against float64 with the promotion (a slice of 128 at a time in the tensor cores) and
    without it (all of K), on the same E4M3 values with scales of 1, C in FP32, at each K: [{k, promoted,
    tensor_cores, mn}]. Runs wherever tc/13 runs (a Hopper GPU, or the emulator)."""
    v = registry.get(KERNEL)
    out = []
    for k in ks:
        rng = numpy.random.default_rng(seed)
        a8 = ops.to_fp8_bits(rng.standard_normal((mn, k)) * 64)
        b8 = ops.to_fp8_bits(rng.standard_normal((mn, k)) * 64)
        ref = ops.fp8_values(a8) @ ops.fp8_values(b8).T
        row = {"k": k, "mn": mn}
        for scaling, name in (("block", "promoted"), ("tensor", "tensor_cores")):
            p = ops.Fp8Gemm(m=mn, n=mn, k=k, scaling=scaling, out="fp32")
            sa, sb = (numpy.ones(s, dtype=numpy.float32) for s in p.scale_shapes())
            inputs = tuple(hw.xp.asarray(x) for x in (a8, b8, sa, sb))
            c = p.output()
            v.runner(p)(inputs, c)
            row[name] = rel_error(hw.to_host(c), ref)
        out.append(row)
    return out


def accumulation_now(ks=(256, 1024, 4096), mn: int = 128) -> None:
    """The accumulation sweep measured here (on a Hopper GPU, or on the emulator as one: it adds FP8 products as
    the H100 does, to the probe's fit) and shown; where tc/13 cannot run, one line that says why, and the
    record's table instead."""
    v = registry.get(KERNEL)
    why = v.skip_reason(ops.Fp8Gemm(m=mn, n=mn, k=ks[0]))
    if why:
        print(f"not measured here: {why}")
        accumulation_table()
        return
    accumulation_table(data=accumulation(ks=ks, mn=mn))


def run_all(reps: int = 10, shapes=None) -> dict:
    if not hw.on_gpu:
        raise SystemExit(f"chapter 17's FP8 study is measured on a GPU ({hw.backend_reason})")
    from .climb import _warm_up
    _warm_up()
    points = []
    for shape in shapes or SHAPES:
        points.append(measure_shape(shape, reps=reps))
        print(Timings.from_dict(points[-1]["timing"], recorded=False), flush=True)
        print(_line(points[-1]), flush=True)
    acc = accumulation()
    return {"points": points, "accumulation": acc, "command": "python -m gemmlab fp8 --record"}


def _line(p) -> str:
    m, n, k = p["shape"]
    parts = [f"{ours} {past_cublas._tf(p, ours)}, {b['ratio']:.1%} of {b['against']} ({past_cublas._tf(p, b['against'])}"
             f"{'' if b['ranked'] else ', within the spread'}; error {'no worse' if b['error_no_worse'] else 'worse'})"
             for ours, b in p["bars"].items()]
    parts += [f"{name} not offered here: {why}" for name, why in p.get("refused", {}).items()]
    return f"E4M3 {m} x {n} x {k} (target {p['target']:.0%}: {'met' if p['met'] else 'missed'}): " + "; ".join(parts)


def summary(result) -> str:
    lines = [_line(p) for p in result["points"]]
    lines += [f"K = {a['k']}: error {a['promoted']:.2e} promoted, {a['tensor_cores']:.2e} in the tensor cores"
              for a in result["accumulation"]]
    return "\n".join(lines)


def save(result: dict):
    return record.save(f"fp8-{record.gpu_slug()}", result)


def table(result: dict | None = None) -> None:
    """The run's points: each computation's TFLOP/s, its share of cuBLASLt's per-tensor call as torch makes it by
    default, tc/13's forms against cuBLASLt's form of the same work and accumulation ('~': within the run's spread,
    or at clocks further apart than the margin), each one's error against float64 on its own values and end to end
    (against the unquantized product), and the SM clock it ran at."""
    result = result or record.shown("fp8")
    env = result["environment"]
    print(f"shown: {result.get('shown_as', 'a record given by the caller')}")
    for p in result["points"]:
        timed = {r["name"]: r for r in p["timing"]["rows"]}
        base = timed["cuBLASLt tensor"]

        def share(r, of):
            return f"{of['median_ms'] / r['median_ms']:.1%}" + ("" if r is of or rank(r, of)[0] else "~")
        body = []
        for name, heading in ROWS:
            if name not in timed:
                why = p.get("refused", {}).get(name, "not timed")
                body.append([heading, "-", "-", "-", "-", "-", "-"])
                print(f"{heading}: {why}")
                continue
            r, e = timed[name], p["errors"].get(name, {})
            bar = p.get("bars", {}).get(name)
            body.append([heading, f"{r['gflops'] / 1e3:.0f}", share(r, base),
                         f"{share(r, timed[bar['against']])} of {bar['against'].removeprefix('cuBLASLt ')}" if bar
                         else "", f"{e.get('check', float('nan')):.2e}", f"{e.get('end_to_end', float('nan')):.1e}",
                         f"{r['clock']['median']:.0f}" if r.get("clock") else "-"])
        m, n, k = p["shape"]
        Table(["computation", "TFLOP/s", "of cuBLASLt tensor", "of cuBLASLt, same form", "error (own values)",
               "error (end to end)", "SM MHz"], body, align="lrrrrrr",
              title=f"E4M3, {m} x {n} x {k}, BF16 C: {env['gpu']}, {p['timing']['environment']['date'][:10]}").show()


def accumulation_table(result: dict | None = None, data: list | None = None) -> None:
    """The accumulation sweep: tc/13's error against float64 with and without the promotion, per K (the run's
    record, or ``data`` measured now)."""
    if data is None:
        result = result or record.shown("fp8")
        data, where = result["accumulation"], f"{result['environment']['gpu']}, {result['environment']['date'][:10]}"
    else:
        where = "measured now"
    Table(["K", "promoted every 128", "in the tensor cores", "ratio"],
          [[f"{a['k']}", f"{a['promoted']:.2e}", f"{a['tensor_cores']:.2e}", f"{a['tensor_cores'] / a['promoted']:.1f}x"]
           for a in data], align="rrrr",
          title=f"E4M3 values, scales of 1, C in FP32, {data[0].get('mn', ACCUMULATION_MN)} x "
                f"{data[0].get('mn', ACCUMULATION_MN)} x K: relative error against float64 ({where})").show()


# --- what chapter 17 shows besides the record ----------------------------------------------------------

CHECK_SIZES = ((200, 136, 256), (3000, 2600, 512), (2430, 1784, 1152))


def check(scaling: str = "block", out: str = "bf16", sizes=CHECK_SIZES) -> None:
    """Print tc/13's float64 check at each of ``sizes``, a line per size as it is done: on the GPU in use, or on
    the CPU emulator as the book's GPU where this one cannot run it (the line says so and why)."""
    v = registry.get(KERNEL)
    for m, n, k in sizes:
        p = ops.Fp8Gemm(m=m, n=n, k=k, scaling=scaling, out=out)
        print(f"E4M3 {scaling}-scaled {m} x {n} x {k}, {out.upper()} C: {v.verdict(p).strip()}", flush=True)


def formats() -> None:
    """The two 8-bit formats, every figure computed from their 256 bit patterns (gl.ops.fp8_values)."""
    rows = []
    for kind, (largest, mb, bias) in ops.FP8_KINDS.items():
        v = ops.fp8_values(numpy.arange(256, dtype=numpy.uint8), kind)
        positive = v[numpy.isfinite(v) & (v > 0)]
        rows.append([kind.upper(), f"{7 - mb}", f"{mb}", f"{bias}", f"{positive.max():g}", f"2^{1 - bias}",
                     f"2^{int(numpy.log2(positive.min()))}", f"2^-{mb + 1}", f"{int(numpy.isfinite(v).sum())}",
                     "none" if kind == "e4m3" else "±inf"])
    Table(["format", "exponent bits", "mantissa bits", "bias", "largest", "smallest normal", "smallest subnormal",
           "rounding error (relative, at most)", "finite values", "infinity"], rows, align="lrrrrrrrrl").show()


def quantization(m: int = 256, n: int = 256, k: int = 1024, seed: int = 0) -> None:
    """The error that quantizing alone costs, per scaling: A and B of normal values whose rows (A) and columns (B)
    differ in size by up to 2^8 either way, quantized to E4M3; the product of the quantized values in float64
    against the product of the unquantized ones, each row of C judged against its own size (the median and the
    largest of the rows' relative errors); then the same with one row of A 2^12 times the largest of the rest, and
    with sizes that change along K (A's first 128 columns 2^16 larger, B's first 128 rows as much smaller: the same
    product, which only scales that follow K keep)."""
    rng = numpy.random.default_rng(seed)
    A = rng.standard_normal((m, k)) * 2.0 ** rng.uniform(-8, 8, (m, 1))
    B = rng.standard_normal((k, n)) * 2.0 ** rng.uniform(-8, 8, (1, n))
    outlier = A.copy()
    outlier[7] *= 2.0 ** 12 * numpy.abs(A).max() / numpy.abs(A[7]).max()
    # sizes that change along K: A's first 128 columns 2^16 larger and B's first 128 rows 2^16 smaller, the same
    # product
    along = numpy.ones(k)
    along[:ops.FP8_BLOCK] = 2.0 ** 16
    rows = []
    for name, a, b in (("rows 2^-8 to 2^8", A, B), ("and one row 2^12 times the largest", outlier, B),
                       ("A's first 128 of K 2^16 larger, B's 2^16 smaller", A * along, B / along[:, None])):
        exact = a @ b
        cells = []
        for scaling, width in (("tensor", 0), ("row", k), ("block", 0)):
            kind = "tensor" if scaling == "tensor" else "block"
            b_rows = 1 if scaling == "row" else ops.FP8_BLOCK
            a8, sa = ops.fp8_quantize(a, "e4m3", kind, 1, width)
            b8, sb = ops.fp8_quantize(b.T, "e4m3", kind, b_rows, width)
            qa, qb = ops.fp8_dequantize(a8, sa, "e4m3", 1, width), ops.fp8_dequantize(b8, sb, "e4m3", b_rows, width)
            per_row = numpy.linalg.norm(qa @ qb.T - exact, axis=1) / numpy.linalg.norm(exact, axis=1)
            cells.append(f"{numpy.median(per_row):.1e} / {per_row.max():.1e}")
        rows.append([name] + cells)
    Table(["values", "per tensor", "per row of A, column of B", "per 128-block (A: 1 x 128, B: 128 x 128)"], rows,
          align="lrrr", title=f"E4M3, {m} x {n} x {k}: each row of C's relative error against the unquantized "
                              "product, median / largest (no arithmetic error: products and sums in float64)").show()
