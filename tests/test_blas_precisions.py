"""gl.blas.gemm and gemm_strided_batched on the tensor cores (GEMM 6): FP16 and BF16 inputs, float32 inputs with
compute='tf32' or '3xtf32', against NumPy in float64 over the BLAS contract's cases (both backends: the emulator
runs tc/03 and tc/04, a GPU tc/05 or tc/06)."""
import itertools

import numpy
import pytest

import gemmlab as gl
from gemmlab.blas import BlasError
from gemmlab.ops import from_bf16_bits, to_bf16_bits

xp = gl.xp
RNG = numpy.random.default_rng(2027)

# (mode, C's type) -> the error allowed, relative to the norm of sum_k |alpha a b| + |beta c| (gl.blas.gemm's
# docstring states the bounds per element): products exact and sums in FP32 for 16-bit inputs; TF32 rounds each
# input to 10 mantissa bits; C in a 16-bit type adds its rounding (2^-11 for FP16, 2^-8 for BF16)
MODES = {("fp16", "fp32"): 2e-5, ("fp16", "fp16"): 1e-3, ("bf16", "fp32"): 2e-5, ("bf16", "bf16"): 8e-3,
         ("tf32", "fp32"): 2e-3, ("3xtf32", "fp32"): 2e-5}
needs_tc = pytest.mark.skipif(gl.profiles.current().capability < (8, 0),
                              reason="the tensor-core modes need compute capability 8.0")


def encode(values, kind):
    """float64 values as an array of ``kind``'s storage: float32, float16, or BF16 bits (uint16)."""
    if kind == "bf16":
        return to_bf16_bits(values.astype(numpy.float32))
    return values.astype({"fp16": numpy.float16}.get(kind, numpy.float32))


def decode(a, kind):
    a = gl.to_host(a)
    return (from_bf16_bits(a) if kind == "bf16" else a).astype(numpy.float64)


def mat(rows, cols, kind, extra=0, fill=None, batch=None):
    """A column-major device matrix of ``kind`` (a batch of them: a 3-D view, matrix first), its leading dimension
    rows + extra, as a view into a larger array."""
    ld = rows + extra
    shape = (cols, ld) if batch is None else (batch, cols, ld)
    host = RNG.standard_normal(shape) if fill is None else numpy.full(shape, fill)
    dev = xp.asarray(encode(host, kind))
    view = dev.swapaxes(-1, -2)                          # each matrix column-major
    return view[..., :rows, :]


def inputs_kind(mode):
    return "fp32" if mode in ("tf32", "3xtf32") else mode


def call_kw(mode):
    return {"compute": mode if mode in ("tf32", "3xtf32") else None,
            "input_type": "bfloat16" if mode == "bf16" else None}


def expect(ta, tb, alpha, A, B, beta, C, mode, out):
    """(want, size) in float64: alpha op(A) op(B) + beta C, and the sum of the terms' magnitudes."""
    kind = inputs_kind(mode)
    a, b, c = decode(A, kind), decode(B, kind), decode(C, out)
    op = lambda x, t: x if t == "N" else numpy.swapaxes(x, -1, -2)      # noqa: E731
    a, b = op(a, ta), op(b, tb)
    want = alpha * a @ b + (beta * c if beta else 0.0)
    size = abs(alpha) * numpy.abs(a) @ numpy.abs(b) + (abs(beta) * numpy.abs(c) if beta else 0.0)
    if (alpha == 0.0 or a.shape[-1] == 0) and beta == 1.0:
        want = c
    return want, size


def assert_close(got, want, size, tol):
    assert numpy.isfinite(got).all(), "NaN or inf in C"
    scale = max(numpy.linalg.norm(size), 1e-30)
    assert numpy.linalg.norm(got - want) / scale < tol, numpy.linalg.norm(got - want) / scale


CASES = [(mode, out, ta, tb, ab) for (mode, out), ta, tb, ab in itertools.product(
    MODES, "NT", "NT", ((-1.25, 0.0), (-1.25, 0.75)))]


@needs_tc
@pytest.mark.parametrize("mode, out, ta, tb, alpha_beta", CASES)
def test_gemm_on_the_tensor_cores(mode, out, ta, tb, alpha_beta):
    """33 x 17 x 65 (no size a multiple of any tile), leading dimensions 2 past the rows; beta = 0 over a C of NaN."""
    alpha, beta = alpha_beta
    m, n, k = 33, 17, 65
    kind = inputs_kind(mode)
    A = mat(m, k, kind, 2) if ta == "N" else mat(k, m, kind, 2)
    B = mat(k, n, kind, 2) if tb == "N" else mat(n, k, kind, 2)
    C = mat(m, n, out, 2, fill=numpy.nan if beta == 0.0 else None)
    want, size = expect(ta, tb, alpha, A, B, beta, C, mode, out)
    assert gl.blas.gemm(ta, tb, alpha, A, B, beta, C, **call_kw(mode)) is C
    assert_close(decode(C, out), want, size, MODES[mode, out])


@needs_tc
@pytest.mark.parametrize("mode, out", list(MODES))
def test_alpha_zero_and_k_zero_never_read_a_or_b_and_beta_zero_never_reads_c(mode, out):
    kind = inputs_kind(mode)
    kw = call_kw(mode)
    C = mat(6, 5, out, 1)
    before = decode(C, out)
    poisoned_a, poisoned_b = mat(6, 7, kind, fill=numpy.nan), mat(7, 5, kind, fill=numpy.nan)
    gl.blas.gemm("N", "N", 0.0, poisoned_a, poisoned_b, 1.0, C, **kw)            # quick return
    assert numpy.array_equal(decode(C, out), before)
    gl.blas.gemm("N", "N", 0.0, poisoned_a, poisoned_b, 0.5, C, **kw)            # C = 0.5 C, A and B unread
    assert_close(decode(C, out), 0.5 * before, numpy.abs(before), MODES[mode, out])
    empty_a, empty_b = mat(6, 0, kind), mat(0, 5, kind)
    gl.blas.gemm("N", "N", 2.0, empty_a, empty_b, -1.0, C, **kw)                 # k = 0: C = beta C
    assert_close(decode(C, out), -0.5 * before, numpy.abs(before), MODES[mode, out])
    nan_c = mat(6, 5, out, 1, fill=numpy.nan)
    gl.blas.gemm("N", "N", 2.0, empty_a, empty_b, 0.0, nan_c, **kw)              # k = 0, beta = 0: zeros
    assert numpy.array_equal(decode(nan_c, out), numpy.zeros((6, 5)))
    gl.blas.gemm("N", "N", 2.0, mat(0, 7, kind), mat(7, 5, kind), 0.0, mat(0, 5, out), **kw)   # m = 0


@needs_tc
@pytest.mark.parametrize("mode, out", list(MODES))
@pytest.mark.parametrize("shared", ["none", "A", "B"])
@pytest.mark.parametrize("workspace", [256 << 20, 1])
def test_gemm_strided_batched(mode, out, shared, workspace, monkeypatch):
    """Three products, matrices a stride apart (0 for an operand the products share), C's beta honoured; packed
    and finished three a launch, or one (a workspace too small for more)."""
    monkeypatch.setattr(gl.blas, "TC_BATCH_BYTES", workspace)
    gl.blas.clear_plans()
    kind, batch, (m, n, k) = inputs_kind(mode), 3, (21, 18, 35)
    A = mat(k, m, kind, 1, batch=1 if shared == "A" else batch)          # op(A) = A^T
    B = mat(k, n, kind, 3, batch=1 if shared == "B" else batch)
    if shared == "A":
        A = xp.broadcast_to(A, (batch,) + A.shape[1:])
    if shared == "B":
        B = xp.broadcast_to(B, (batch,) + B.shape[1:])
    C = mat(m, n, out, 2, batch=batch)
    want, size = expect("T", "N", 0.5, A, B, -2.0, C, mode, out)
    assert gl.blas.gemm_strided_batched("T", "N", 0.5, A, B, -2.0, C, **call_kw(mode)) is C
    for i in range(batch):
        assert_close(decode(C, out)[i], want[i], size[i], MODES[mode, out])
    steps = gl.blas.plan_of("gemm_strided_batched", "T", "N", 0.5, A, B, -2.0, C, **call_kw(mode)).steps
    assert steps.per == (3 if workspace > 1 else 1)
    gl.blas.clear_plans()


@needs_tc
@pytest.mark.parametrize("mode", ["fp16", "bf16", "tf32", "3xtf32"])
def test_a_batch_of_operands_that_already_are_the_kernels(mode, monkeypatch):
    """Five dense 48 x 32 x 64 products, 'N', 'N': every operand read in place and C taking the products (alpha 1,
    beta 0), or in place and finished by the epilogue (beta 0.5), in groups of two (a small workspace): the
    groups' last is shorter."""
    kind, kw, batch, (m, n, k) = inputs_kind(mode), call_kw(mode), 5, (48, 32, 64)
    A, B = mat(m, k, kind, batch=batch), mat(k, n, kind, batch=batch)
    one = gl.blas.plan_of("gemm", "N", "N", 1.0, A[0], B[0], 0.0, mat(m, n, "fp32"), **kw).steps
    monkeypatch.setattr(gl.blas, "TC_BATCH_BYTES", 2 * sum(one.sizes))
    gl.blas.clear_plans()
    try:
        for alpha, beta in ((1.0, 0.0), (0.75, 0.5)):
            C = mat(m, n, "fp32", batch=batch, fill=numpy.nan if beta == 0.0 else None)
            want, size = expect("N", "N", alpha, A, B, beta, C, mode, "fp32")
            gl.blas.gemm_strided_batched("N", "N", alpha, A, B, beta, C, **kw)
            for i in range(batch):
                assert_close(decode(C, "fp32")[i], want[i], size[i], MODES[mode, "fp32"])
        steps = gl.blas.plan_of("gemm_strided_batched", "N", "N", 1.0, A, B, 0.0, C, **kw).steps
        assert steps.direct == (True, True, True) and steps.per == 2
    finally:
        gl.blas.clear_plans()


@needs_tc
@pytest.mark.parametrize("mode", ["fp16", "bf16", "tf32", "3xtf32"])
@pytest.mark.parametrize("ta, tb", [("N", "N"), ("T", "N"), ("N", "T")])
def test_operands_that_already_are_the_kernels_are_not_copied(mode, ta, tb):
    """48 x 32 x 64, every array dense (multiples of every kernel's tile): an operand that is not transposed is
    the kernel's operand as it lies, and C takes the product itself when alpha = 1 and beta = 0; a view that
    starts one element into its array is copied instead (unaligned), with the same answer."""
    kind, kw, (m, n, k) = inputs_kind(mode), call_kw(mode), (48, 32, 64)
    A = mat(m, k, kind) if ta == "N" else mat(k, m, kind)
    B = mat(k, n, kind) if tb == "N" else mat(n, k, kind)
    flat = xp.asarray(encode(RNG.standard_normal(m * k + 1), kind))
    shifted = flat[1:].reshape(k, m).T if ta == "N" else flat[1:].reshape(m, k).T     # lda as A's, one element in
    for a in (A, shifted):
        for alpha, beta in ((1.0, 0.0), (0.5, 0.25)):
            C = mat(m, n, "fp32", fill=numpy.nan if beta == 0.0 else None)
            want, size = expect(ta, tb, alpha, a, B, beta, C, mode, "fp32")
            gl.blas.gemm(ta, tb, alpha, a, B, beta, C, **kw)
            assert_close(decode(C, "fp32"), want, size, MODES[mode, "fp32"])
    steps = gl.blas.plan_of("gemm", ta, tb, 1.0, A, B, 0.0, C, **kw).steps
    assert steps.direct == (tb == "N", ta == "N", True)
    C16 = mat(m, n, kind if mode in ("fp16", "bf16") else "fp32", 2)
    assert gl.blas.plan_of("gemm", ta, tb, 1.0, A, B, 0.0, C16, **kw).steps.direct[2] is False   # ldc > m


@pytest.mark.gpu
@pytest.mark.skipif(not gl.on_gpu or gl.profiles.current().capability != (9, 0), reason="tc/09 runs on Hopper")
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
@pytest.mark.parametrize("out", ["fp32", "same"])
@pytest.mark.parametrize("m, n, k", [(33, 17, 65), (300, 200, 170), (1000, 520, 264)])
def test_on_hopper_tc09_writes_c_itself_in_its_type(mode, out, m, n, k):
    """An ordinary call (no transposes, alpha 1, beta 0) on Hopper is one launch of tc/09 storing straight into C, in
    FP32 or the inputs' type, with C's own leading dimension (16 bytes' multiples, past m) at sizes that are
    multiples of no tile: the answer as float64's, and the rows between C's columns (m .. ld) untouched; with beta
    0.5, or a leading dimension TMA cannot take (m + 1), the product goes through the workspace and the epilogue."""
    kind = mode if out == "same" else "fp32"
    A, B = mat(m, k, mode, -m % 8), mat(k, n, mode, -k % 8 + 8)      # columns 16 bytes' multiples apart: read in place
    kw = call_kw(mode)
    for ld, beta in (((m // 8 + 2) * 8, 0.0), ((m // 8 + 2) * 8, 0.5), (m + 1, 0.0)):
        owner = xp.asarray(encode(RNG.standard_normal((n, ld)), kind))
        if beta == 0.0:
            owner[:, :m] = xp.asarray(encode(numpy.full((n, m), numpy.nan), kind))
        C = owner.T[:m, :]                                   # column-major m x n, leading dimension ld
        pad = gl.to_host(owner)[:, m:].copy()
        want, size = expect("N", "N", 1.0, A, B, beta, C, mode, kind)
        plan = gl.blas.plan_of("gemm", "N", "N", 1.0, A, B, beta, C, **kw)
        assert plan.key == "tc/09_tma_store" and plan.steps.direct == (True, True, ld != m + 1)
        gl.blas.gemm("N", "N", 1.0, A, B, beta, C, **kw)
        assert_close(decode(C, kind), want, size, MODES[mode, kind])
        assert numpy.array_equal(gl.to_host(owner)[:, m:].view(numpy.uint8), pad.view(numpy.uint8)), \
            "wrote past C's rows"
    gl.blas.clear_plans()


@pytest.mark.parametrize("shared", ["none", "A", "B"])
@pytest.mark.parametrize("per_launch", [65535, 2])
def test_fp32_strided_batched_on_the_cuda_cores(shared, per_launch, monkeypatch):
    """The s routine batched: GEMM 5 in one launch, blockIdx.z the product (or as many launches as the grid's z
    needs), each matrix's own 16-byte alignment (odd leading dimensions: some are aligned, some not); beta = 0
    over a C of NaN; K long enough that one product alone would be split, which a batch is not."""
    monkeypatch.setattr(gl.blas, "BATCH_PER_LAUNCH", per_launch)
    gl.blas.clear_plans()
    batch, (m, n, k) = 5, (9, 11, 600)
    A = mat(m, k, "fp32", 1, batch=1 if shared == "A" else batch)
    B = mat(k, n, "fp32", 0, batch=1 if shared == "B" else batch)
    if shared == "A":
        A = xp.broadcast_to(A, (batch,) + A.shape[1:])
    if shared == "B":
        B = xp.broadcast_to(B, (batch,) + B.shape[1:])
    try:
        for beta in (0.25, 0.0):
            C = mat(m, n, "fp32", 3, batch=batch, fill=numpy.nan if beta == 0.0 else None)
            want, size = expect("N", "N", 1.5, A, B, beta, C, "fp32", "fp32")
            gl.blas.gemm_strided_batched("N", "N", 1.5, A, B, beta, C)
            assert_close(decode(C, "fp32"), want, size, 2e-5)
        plan = gl.blas.plan_of("gemm_strided_batched", "N", "N", 1.5, A, B, 0.25, C)
        assert plan.key == gl.blas.GEMM and plan.params["SPLITK"] == 1 and plan.grid[2] == min(batch, per_launch)
        if not gl.on_gpu:             # (by rule: a GPU's shape record may not split this product either)
            assert gl.blas.plan_of("gemm", "N", "N", 1.5, A[0], B[0], 0.25, C[0]).params["SPLITK"] > 1
    finally:
        gl.blas.clear_plans()


@pytest.mark.parametrize("call, match", [
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp16"), mat(2, 2, "fp32"), 0.0, mat(2, 2, "fp32")),
     r"gemm_ex: argument 5 \(B\) must be float16 as A is, it is float32"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp16"), mat(2, 2, "fp16"), 0.0, mat(2, 2, "bf16"),
                          input_type=None), r"gemm_ex: argument 7 \(C\) must be float32 or float16"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "bf16"), mat(2, 2, "bf16"), 0.0, mat(2, 2, "fp32")),
     r"argument 4 \(A\) is uint16: if it holds BF16 values as their bits .* input_type='bfloat16'"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp32"), mat(2, 2, "fp32"), 0.0, mat(2, 2, "fp32"),
                          compute="fp64"), r"argument 8 \(compute\) must be None \(FP32\), 'tf32' or '3xtf32'"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp16"), mat(2, 2, "fp16"), 0.0, mat(2, 2, "fp32"),
                          compute="tf32"), r"argument 8 \(compute\) applies to float32 inputs"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp16"), mat(2, 2, "fp16"), 0.0, mat(2, 2, "fp32"),
                          input_type="bfloat16"), r"argument 4 \(A\) must hold BF16 values as their bits"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(2, 2, "fp32"), mat(2, 2, "fp32"), 0.0, mat(2, 2, "fp32"),
                          input_type="half"), r"argument 9 \(input_type\) must be None"),
    (lambda: gl.blas.gemm_strided_batched("N", "N", 1.0, mat(2, 2, "fp32", batch=2), mat(2, 2, "fp32", batch=3), 0.0,
                                          mat(2, 2, "fp32", batch=2)), r"argument 5 \(B\) holds 3 matrices; C holds 2"),
    (lambda: gl.blas.gemm_strided_batched("N", "N", 1.0, mat(2, 2, "fp32", batch=2), mat(2, 2, "fp32", batch=2), 0.0,
                                          xp.lib.stride_tricks.as_strided(xp.zeros(8, dtype="float32"), (2, 2, 2),
                                                                          (4, 4, 8))),
     r"argument 7 \(C\) has its matrices 1 elements apart with leading dimension 2: matrices 0 and 1 share"),
    (lambda: gl.blas.gemm_strided_batched("N", "N", 1.0, mat(2, 2, "fp32"), mat(2, 2, "fp32"), 0.0, mat(2, 2, "fp32")),
     r"argument 4 \(A\) must have 3 dimensions"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises(BlasError, match=match):
        call()


def test_below_compute_capability_8_the_tensor_core_modes_are_refused_by_name(monkeypatch):
    monkeypatch.setenv("GEMMLAB_DEVICE", "T4")
    gl.blas.clear_plans()
    try:
        with pytest.raises(gl.UnsupportedGPU, match=r"gl.blas.gemm in FP16 needs compute capability 8.0 .*T4"):
            gl.blas.gemm("N", "N", 1.0, mat(4, 4, "fp16"), mat(4, 4, "fp16"), 0.0, mat(4, 4, "fp32"))
    finally:
        gl.blas.clear_plans()


@needs_tc
def test_each_mode_plans_the_kernel_its_gpu_runs():
    A, B, C = mat(40, 40, "fp16"), mat(40, 40, "fp16"), mat(40, 40, "fp32")
    key = gl.blas.plan_of("gemm", "N", "N", 1.0, A, B, 0.0, C).key
    gpu = gl.profiles.current()
    want = ("tc/03_wmma_pipelined" if not gl.on_gpu else "tc/09_tma_store" if gpu.capability[0] == 9 else
            "tc/05_mma_sync")
    assert key == want
    F = mat(40, 40, "fp32")
    assert gl.blas.plan_of("gemm", "N", "N", 1.0, F, F, 0.0, C, compute="3xtf32").key == "tc/04_3xtf32_pipelined"
    assert gl.blas.plan_of("gemm", "N", "N", 1.0, F, F, 0.0, C).key == gl.blas.GEMM


@pytest.mark.gpu
@pytest.mark.parametrize("key, mode", [("tc/03_wmma_pipelined", "fp16"), ("tc/03_wmma_pipelined", "bf16"),
                                       ("tc/05_mma_sync", "fp16"), ("tc/05_mma_sync", "bf16"),
                                       ("tc/05_mma_sync", "tf32"), ("tc/06_wgmma_tma", "fp16"),
                                       ("tc/06_wgmma_tma", "bf16"), ("tc/09_tma_store", "fp16"),
                                       ("tc/09_tma_store", "bf16"), ("tc/04_3xtf32_pipelined", "3xtf32")])
@pytest.mark.parametrize("ta, tb", [("N", "N"), ("T", "T")])
def test_every_kernel_gemm_6_can_run_behind_the_contract(key, mode, ta, tb):
    """Each of Part V's kernels that GEMM 6 may run on some GPU, configured on this one (where it can run it), at
    sizes that are multiples of none of their tiles: 300 x 200 x 170, 129 x 257 x 72, and 200 x 136 x 70 with
    leading dimensions of 16 bytes' multiples (208, 72), which tc/06 reads in place through its tensor maps."""
    v = gl.registry.get(key)
    problem = gl.ops.TcGemm(m=16, n=16, k=16, precision=mode) if mode != "3xtf32" else gl.ops.Gemm(m=16, n=16, k=16)
    if v.unsupported(problem):
        pytest.skip(v.unsupported(problem))
    kind = inputs_kind(mode)
    for m, n, k, ea, eb in ((300, 200, 170, 3, 1), (129, 257, 72, 3, 1), (200, 136, 70, 8, 2)):
        A = mat(m, k, kind, ea) if ta == "N" else mat(k, m, kind, ea)
        B = mat(k, n, kind, eb) if tb == "N" else mat(n, k, kind, eb)
        C = mat(m, n, "fp32", 2)
        want, size = expect(ta, tb, 0.75, A, B, 0.5, C, mode, "fp32")
        args = (ta, tb, 0.75, A, B, 0.5, C)
        plan = gl.blas.configure("gemm", key, {}, *args, **call_kw(mode))
        gl.blas.use(plan)
        try:
            gl.blas.gemm(*args, **call_kw(mode))
        finally:
            gl.blas.clear_plans()
        assert_close(decode(C, "fp32"), want, size, MODES[mode, "fp32"])


@pytest.mark.parametrize("trans", [0, 1])
def test_the_pack_kernel_loops_over_rows_past_its_grid(trans):
    """GEMM 6's pack, launched with fewer row blocks than rows need (a grid's y is at most 65535 blocks of 32
    rows): every row of the padded copy is written, zeros past the operand."""
    rows_in, cols_in, rows, cols, ld = 70, 37, 96, 40, 75
    src = RNG.standard_normal(ld * (cols_in if trans else rows_in)).astype(numpy.float32)
    dst = xp.full(rows * cols, numpy.nan, dtype=numpy.float32)
    kernel = gl.load("blas/gemm/06_tensor_cores.cu").get(f"gemm_pack<float, {trans}>")
    kernel((2, 1), (32, 8), (xp.asarray(src), 3, ld, rows_in, cols_in, dst, rows, cols, 0))
    X = numpy.zeros((rows, cols))
    for r in range(rows_in):
        for c in range(cols_in):
            X[r, c] = src[3 + (r + c * ld if trans else c + r * ld)]
    assert (gl.to_host(dst).reshape(rows, cols) == X).all()
