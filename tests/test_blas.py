"""gemmlab.blas against NumPy in float64, over a grid of the BLAS contract's cases (both backends)."""
import itertools

import numpy
import pytest

import gemmlab as gl
from gemmlab.blas import BlasError

xp = gl.xp
RNG = numpy.random.default_rng(2026)


def vec(n, inc, fill=None):
    """A device vector view of n elements with increment inc (negative allowed) inside a larger array."""
    base = RNG.standard_normal(max(1, 1 + (n - 1) * abs(inc)) + 5).astype(numpy.float32) if fill is None else \
        numpy.full(max(1, 1 + (n - 1) * abs(inc)) + 5, fill, dtype=numpy.float32)
    dev = xp.asarray(base)
    view = dev[2:2 + max(0, (n - 1) * abs(inc) + 1):abs(inc)] if n else dev[2:2]
    return view[::-1] if inc < 0 else view


def mat(rows, cols, extra_ld=0, fill=None):
    """A column-major device matrix view whose leading dimension is rows + extra_ld."""
    ld = rows + extra_ld
    host = (RNG.standard_normal((ld, cols)) if fill is None else numpy.full((ld, cols), fill)).astype(numpy.float32)
    return xp.asfortranarray(xp.asarray(host))[:rows, :]


def host(a):
    return gl.to_host(a).astype(numpy.float64)


def close(got, want, tol=2e-5, size=None):
    """got within tol of want, relative to want's norm, or to ``size`` (the norm of the sum of the terms'
    magnitudes: where the terms nearly cancel, float32's rounding of each is what the error is measured by)."""
    got, want = numpy.asarray(got, dtype=numpy.float64), numpy.asarray(want, dtype=numpy.float64)
    assert got.shape == want.shape and numpy.isfinite(got).all()
    scale = max(numpy.linalg.norm(want), 0.0 if size is None else numpy.linalg.norm(size), 1e-30)
    assert numpy.linalg.norm(got - want) / scale < tol, (got, want)


@pytest.mark.parametrize("n, incx, incy", list(itertools.product((0, 1, 7, 1000), (1, 2, -1, -3), (1, -2))))
def test_dot(n, incx, incy):
    x, y = vec(n, incx), vec(n, incy)
    got = gl.blas.dot(x, y)
    want = float(host(x) @ host(y)) if n else 0.0
    assert abs(got - want) <= 2e-5 * max(1.0, float(numpy.abs(host(x)) @ numpy.abs(host(y))) if n else 1.0)


GEMV_CASES = [c for c in itertools.product(
    ("N", "t"), ((1, 1), (37, 28), (5, 64)), (0, 3), (1, -2), (1, 3, -1), (0.0, 1.5), (0.0, 1.0, 0.5))]


@pytest.mark.parametrize("trans, shape, extra, incx, incy, alpha, beta", GEMV_CASES)
def test_gemv(trans, shape, extra, incx, incy, alpha, beta):
    m, n = shape
    A = mat(m, n, extra)
    nx, ny = (n, m) if trans.upper() == "N" else (m, n)
    x = vec(nx, incx)
    y = vec(ny, incy, fill=numpy.nan) if beta == 0.0 else vec(ny, incy)
    y_before = host(y)
    opA = host(A) if trans.upper() == "N" else host(A).T
    want = alpha * opA @ host(x) + (beta * y_before if beta else 0.0)
    size = abs(alpha) * numpy.abs(opA) @ numpy.abs(host(x)) + (abs(beta) * numpy.abs(y_before) if beta else 0.0)
    if alpha == 0.0 and beta == 1.0:
        want = y_before
    out = gl.blas.gemv(trans, alpha, A, x, beta, y)
    assert out is y
    close(host(y), want, size=size)


@pytest.mark.parametrize("trans, m, n", [("N", 0, 5), ("T", 5, 0), ("N", 5, 0)])
def test_gemv_quick_return_leaves_y_alone(trans, m, n):
    A = mat(m, n)
    nx, ny = (n, m) if trans == "N" else (m, n)
    y = vec(ny, 1)
    before = host(y).copy()
    gl.blas.gemv(trans, 2.0, A, vec(nx, 1), 3.0, y)
    assert numpy.array_equal(host(y), before)


GEMM_CASES = list(itertools.product(("N", "T"), ("n", "T"), ((1, 1, 1), (33, 17, 65), (3, 4, 0), (32, 24, 36)),
                                    (0, 2), (0.0, -1.25), (0.0, 1.0, 0.75)))
# configurations of GEMM 5 that gl.blas.gemm chooses among (16-byte paths where ld is a multiple of 4), split
# over K too: the partial tiles meet in the kernel, beta and the NaN-poisoned C as without a split
GEMM_KERNELS = {"small": gl.blas.GEMM_SMALL, "large": gl.blas.GEMM_LARGE,
                "small, K in 3 slices": {**gl.blas.GEMM_SMALL, "SPLITK": 3},
                "skinny, K in 32 slices": {**gl.blas.GEMM_SKINNY, "SPLITK": 32}, "short": gl.blas.GEMM_SHORT}


@pytest.fixture
def fresh_plans():
    gl.blas.clear_plans()
    yield
    gl.blas.clear_plans()


@pytest.mark.parametrize("kernel", list(GEMM_KERNELS))
@pytest.mark.parametrize("ta, tb, shape, extra, alpha, beta", GEMM_CASES)
def test_gemm(ta, tb, shape, extra, alpha, beta, kernel, monkeypatch, fresh_plans):
    monkeypatch.setattr(gl.blas, "_tuning", lambda: None)
    monkeypatch.setattr(gl.blas, "_gemm_params", lambda m, n, k, sms=None: GEMM_KERNELS[kernel])
    m, n, k = shape
    A = mat(m, k, extra) if ta.upper() == "N" else mat(k, m, extra)
    B = mat(k, n, extra) if tb.upper() == "N" else mat(n, k, extra)
    C = mat(m, n, extra, fill=numpy.nan) if beta == 0.0 else mat(m, n, extra)
    before = host(C)
    opA = host(A) if ta.upper() == "N" else host(A).T
    opB = host(B) if tb.upper() == "N" else host(B).T
    want = alpha * opA @ opB + (beta * before if beta else 0.0)
    size = abs(alpha) * numpy.abs(opA) @ numpy.abs(opB) + (abs(beta) * numpy.abs(before) if beta else 0.0)
    if (alpha == 0.0 or k == 0) and beta == 1.0:
        want = before
    assert gl.blas.gemm(ta, tb, alpha, A, B, beta, C) is C
    close(host(C), want, size=size)


def test_gemm_quick_returns_and_alpha_zero_never_reads_a_or_b():
    C = mat(4, 3)
    before = host(C).copy()
    gl.blas.gemm("N", "N", 2.0, mat(0, 5), mat(5, 3), 1.0, C[:0])       # m = 0
    gl.blas.gemm("N", "N", 0.0, mat(4, 5), mat(5, 3), 1.0, C)           # alpha = 0, beta = 1
    assert numpy.array_equal(host(C), before)
    poisoned = mat(4, 5, fill=numpy.nan)
    gl.blas.gemm("N", "N", 0.0, poisoned, mat(5, 3, fill=numpy.nan), 0.5, C)
    close(host(C), 0.5 * before)


@pytest.mark.parametrize("call, match", [
    (lambda: gl.blas.gemv("X", 1.0, mat(3, 3), vec(3, 1), 0.0, vec(3, 1)), r"sgemv: argument 1 \(trans\)"),
    (lambda: gl.blas.gemv("N", 1.0, mat(3, 4), vec(3, 1), 0.0, vec(3, 1)), r"argument 4 \(x\) has 3 elements; op\(A\) has 4"),
    (lambda: gl.blas.gemv("N", 1.0, mat(3, 4), vec(4, 1), 0.0, vec(4, 1)), r"argument 6 \(y\) has 4 elements"),
    (lambda: gl.blas.gemv("N", 1.0, xp.zeros((3, 4), dtype=numpy.float32), vec(4, 1), 0.0, vec(3, 1)),
     r"argument 3 \(A\) must be column-major"),
    (lambda: gl.blas.gemv("N", 1.0, mat(3, 4), xp.broadcast_to(xp.ones(1, dtype=numpy.float32), (4,)), 0.0,
                          vec(3, 1)), r"argument 4 \(x\) has increment 0"),
    (lambda: gl.blas.gemv("N", "one", mat(3, 4), vec(4, 1), 0.0, vec(3, 1)), r"argument 2 \(alpha\) must be a real"),
    (lambda: gl.blas.dot(vec(3, 1), xp.ones(3, dtype=numpy.float64)), r"sdot: argument 2 \(y\) must be float32"),
    (lambda: gl.blas.dot(vec(3, 1), vec(4, 1)), r"sdot: argument 2 \(y\) has 4 elements, x has 3"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(3, 4), mat(5, 2), 0.0, mat(3, 2)), r"argument 5 \(B\) gives op\(B\) 5 rows"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(3, 4), mat(4, 2), 0.0, mat(2, 2)), r"argument 4 \(A\) gives op\(A\) 3 rows"),
    (lambda: gl.blas.gemm("N", "Q", 1.0, mat(3, 4), mat(4, 2), 0.0, mat(3, 2)), r"sgemm: argument 2 \(transb\)"),
    (lambda: gl.blas.gemm("N", "N", 1.0, mat(3, 4), mat(4, 2), 0.0, xp.zeros(6, dtype=numpy.float32)),
     r"argument 7 \(C\) must have 2 dimensions"),
])
def test_bad_arguments_are_named_like_xerbla(call, match):
    with pytest.raises(BlasError, match=match):
        call()


def test_leading_dimension_smaller_than_rows_is_refused():
    base = xp.zeros(64, dtype=numpy.float32)
    bad = xp.lib.stride_tricks.as_strided(base, shape=(4, 3), strides=(4, 8))   # ld = 2 < 4 rows
    with pytest.raises(BlasError, match=r"argument 3 \(A\) has leading dimension 2 < rows = 4"):
        gl.blas.gemv("N", 1.0, bad, vec(3, 1), 0.0, vec(4, 1))


@pytest.mark.gpu
def test_host_arrays_are_refused_on_the_gpu():
    with pytest.raises(BlasError, match="NumPy array in host memory"):
        gl.blas.dot(numpy.ones(3, dtype=numpy.float32), vec(3, 1))


def test_dot_gives_the_same_bits_on_every_run():
    """gl.blas.dot uses DOT 7's deterministic form: block partials added in block order, no atomics."""
    rng = numpy.random.default_rng(5)
    x, y = (gl.xp.asarray(rng.standard_normal(300001).astype(numpy.float32)) for _ in range(2))
    first = gl.blas.dot(x, y)
    assert all(gl.blas.dot(x, y) == first for _ in range(4))
    exact = float(gl.to_host(x).astype(numpy.float64) @ gl.to_host(y).astype(numpy.float64))
    assert abs(first - exact) <= 1e-5 * float(numpy.abs(gl.to_host(x)) @ numpy.abs(gl.to_host(y)))


@pytest.mark.parametrize("m, n, trans", [(4100, 37, "N"), (129, 5000, "N"), (5000, 129, "T"), (1, 70000, "N")])
def test_gemv_split_and_vector_paths_agree_with_float64(m, n, trans):
    rng = numpy.random.default_rng(6)
    A = numpy.asfortranarray(rng.standard_normal((m, n)).astype(numpy.float32))
    x = rng.standard_normal(n if trans == "N" else m).astype(numpy.float32)
    y0 = rng.standard_normal(m if trans == "N" else n).astype(numpy.float32)
    y = gl.xp.asarray(y0.copy())          # (on the emulator asarray would not copy: y0 must stay as it was)
    gl.blas.gemv(trans, 1.5, gl.xp.asarray(A), gl.xp.asarray(x), -0.5, y)
    op = A.astype(numpy.float64) if trans == "N" else A.T.astype(numpy.float64)
    expect = 1.5 * op @ x + -0.5 * y0
    scale = 1.5 * numpy.abs(op) @ numpy.abs(x) + 0.5 * numpy.abs(y0)
    assert (numpy.abs(gl.to_host(y) - expect) <= 1e-5 * scale + 1e-30).all()


def test_gemm_rules_choose_by_waves_on_the_sms_in_use():
    """Without a shape record: the large tile where C has waves of them, split-K where C has too few tiles for
    the SMs and K is long, no split for a short K; every choice a legal configuration."""
    rule = gl.blas._gemm_params
    assert rule(4096, 4096, 4096, 132) == {**gl.blas.GEMM_LARGE, "SPLITK": 1}       # 512 large tiles on 132 SMs
    assert rule(8192, 8192, 8192, 40) == {**gl.blas.GEMM_LARGE, "SPLITK": 1}
    for m, n in ((64, 4096), (4096, 64)):                                            # 64 small tiles of C
        assert rule(m, n, 4096, 132)["SPLITK"] > 1
        assert rule(m, n, 64, 132)["SPLITK"] == 1                                    # K too short to cut
    assert rule(1024, 1024, 16384, 132)["SPLITK"] > 1 and rule(1024, 1024, 16384, 40)["SPLITK"] > 1   # a long K
    for shape in itertools.product((1, 64, 700, 4096), (1, 100, 2048), (1, 300, 20000)):
        for sms in (40, 108, 132):
            params = rule(*shape, sms)
            assert gl.registry.get(gl.blas.GEMM).resolve(**params) == params
            assert params["SPLITK"] <= gl.blas._gemm_split_limit(shape[0], shape[1], params)


def test_gemv_rules_fill_the_sms_for_tall_and_wide_matrices():
    rule = gl.blas._gemv_params
    assert rule(64, 100000, "N", 132)["SPLIT"] >= 64                 # 64 rows: the long rows are cut instead
    assert rule(100000, 64, "T", 132)["SPLIT"] >= 16                 # 64 long columns: cut along their length
    assert rule(64, 100000, "T", 132)["LANES"] == 4                  # 100000 short columns: 8 per warp
    assert rule(64, 100000, "N", 40)["SPLIT"] < rule(64, 100000, "N", 132)["SPLIT"]
    for m, n, t in itertools.product((1, 5, 64, 4097, 100000), (1, 7, 64, 100000), ("N", "T")):
        params = rule(m, n, t, 132)
        key = gl.blas.GEMV if t == "N" else gl.blas.GEMV_T
        assert gl.registry.get(key).resolve(**params) == params


def _shared_views():
    """Pairs (output, input) that share at least one element, in the ways a caller can build them."""
    a = xp.asfortranarray(xp.asarray(RNG.standard_normal((6, 6)).astype(numpy.float32)))
    flat = xp.asarray(RNG.standard_normal(40).astype(numpy.float32))
    return a, flat


def test_an_output_sharing_memory_with_an_input_is_refused_naming_both():
    a, flat = _shared_views()
    x = xp.asarray(RNG.standard_normal(6).astype(numpy.float32))
    for trans in ("N", "T"):
        with pytest.raises(BlasError, match=r"sgemv: argument 6 \(y\) shares memory with argument 4 \(x\)"):
            gl.blas.gemv(trans, 1.0, a, x, 0.0, x)                          # y is x
        with pytest.raises(BlasError, match=r"argument 6 \(y\) shares memory with argument 3 \(A\)"):
            gl.blas.gemv(trans, 1.0, a, x, 1.0, a[:, 2])                     # y is a column of A
        with pytest.raises(BlasError, match=r"argument 6 \(y\) shares memory with argument 4 \(x\)"):
            gl.blas.gemv(trans, 1.0, a, flat[3:9], 0.0, flat[5:11])        # partly: two elements in common
        with pytest.raises(BlasError, match=r"argument 6 \(y\) shares memory with argument 4 \(x\)"):
            gl.blas.gemv(trans, 1.0, a, flat[0:12:2], 0.0, flat[10:4:-1][::-1][::-1])   # reversed, crossing
    b = xp.asfortranarray(xp.asarray(RNG.standard_normal((6, 6)).astype(numpy.float32)))
    with pytest.raises(BlasError, match=r"sgemm: argument 7 \(C\) shares memory with argument 4 \(A\)"):
        gl.blas.gemm("N", "N", 1.0, a, b, 0.0, a)
    with pytest.raises(BlasError, match=r"argument 7 \(C\) shares memory with argument 5 \(B\)"):
        gl.blas.gemm("N", "T", 1.0, a, b, 1.0, b)
    with pytest.raises(BlasError, match=r"argument 7 \(C\) shares memory with argument 5 \(B\)"):
        gl.blas.gemm("N", "N", 1.0, a[:3, :3], b[:3, :3], 0.0, b[2:5, 1:4])   # a block inside B
    with pytest.raises(BlasError, match=r"argument 7 \(C\) shares memory with argument 4 \(A\)"):
        gl.blas.gemm("N", "N", 0.0, a, b, 0.0, a)                             # even when A is not read


def test_views_of_one_array_that_share_no_element_are_taken():
    """Interleaved or disjoint views of the same memory are legal: the exact test, not the byte ranges, decides."""
    a, flat = _shared_views()
    x, y = flat[0:12:2], flat[1:12:2]                                   # even and odd elements: ranges meet
    want = host(a) @ host(x)
    close(host(gl.blas.gemv("N", 1.0, a, x, 0.0, y)), want)
    big = xp.asfortranarray(xp.asarray(RNG.standard_normal((6, 12)).astype(numpy.float32)))
    A, C = big[:, :6], big[:, 6:]                                       # side by side in one allocation
    B = xp.asfortranarray(xp.asarray(RNG.standard_normal((6, 6)).astype(numpy.float32)))
    want = host(A) @ host(B)
    close(host(gl.blas.gemm("N", "N", 1.0, A, B, 0.0, C)), want)
    rows = xp.asfortranarray(xp.asarray(RNG.standard_normal((12, 6)).astype(numpy.float32)))
    A2, C2 = rows[:6], rows[6:]                                         # interleaved columns of one matrix
    want = host(A2) @ host(B)
    close(host(gl.blas.gemm("N", "N", 1.0, A2, B, 0.0, C2)), want)


def test_a_view_far_into_a_large_array_is_passed_from_near_its_first_element():
    """The kernels take 32-bit offsets from the memory they are given: gl.blas gives them the memory from the
    view's lowest element on (rounded down to 256 bytes, so 16-byte alignment reads the same), so a view far
    into an array needs only a small offset; the results are those of the view."""
    from gemmlab import blas
    from gemmlab.loader import data_address
    flat = xp.asarray(RNG.standard_normal(3_000_000).astype(numpy.float32))
    for view in (flat[2_999_000:2_999_100], flat[2_999_100:2_999_000:-1], flat[2_500_001:2_500_301:3]):
        mem, off, _ = blas._root("sdot", 1, "x", view)
        assert 0 <= off < 64 + 300 * 3 and (data_address(mem) - data_address(flat)) % 256 == 0
        assert data_address(mem) + 4 * off == data_address(view)
        lo, hi = blas._extent(view)
        assert mem.nbytes <= hi - lo + 256          # only the bytes the view spans (what the emulator copies)
        assert off % 4 == (data_address(view) - data_address(flat)) // 4 % 4        # alignment reads the same
    x, y = flat[2_999_000:2_999_100], flat[1_000_000:999_900:-1]
    close(gl.blas.dot(x, y), host(x) @ host(y), tol=1e-5, size=numpy.abs(host(x)) @ numpy.abs(host(y)))
    A = xp.asfortranarray(flat[:2_000_000].reshape(1000, 2000, order="F"))[500:600, 1900:1950]
    close(host(gl.blas.gemv("N", 1.0, A, x[:50], 0.0, xp.zeros(100, dtype=numpy.float32))), host(A) @ host(x[:50]))


def test_arguments_a_kernel_cannot_take_are_refused_in_the_routines_words():
    """A scalar beyond float32, or sizes past 32 bits, are named as the routine's arguments, not as a kernel's
    internal parameters."""
    a = mat(4, 4)
    x, y = vec(4, 1), vec(4, 1)
    for bad in (1e39, -3.5e38, 10 ** 40):
        with pytest.raises(BlasError, match=r"sgemv: argument 2 \(alpha\) = .* beyond float32's range"):
            gl.blas.gemv("N", bad, a, x, 0.0, y)
        with pytest.raises(BlasError, match=r"sgemm: argument 6 \(beta\) = .* beyond float32's range"):
            gl.blas.gemm("N", "N", 1.0, a, a.copy(order="F"), bad, mat(4, 4))
    for fine in (float("inf"), float("nan"), 3.4e38):                  # passed on, as the reference BLAS does
        gl.blas.gemv("N", fine, a, x, 0.0, vec(4, 1))


def test_a_small_view_of_a_large_memory_map_hands_over_only_its_own_bytes(tmp_path):
    """On the emulator a launch copies its arrays in and back: a few elements of a large memory map must not
    bring the whole map in, nor write it all back (rewriting the file)."""
    if gl.on_gpu:
        pytest.skip("a memory map is host memory: the emulator's case")
    from gemmlab import blas
    big = numpy.lib.format.open_memmap(tmp_path / "big.npy", mode="w+", dtype=numpy.float32, shape=(16 << 20,))
    big[1000:1012] = numpy.arange(12, dtype=numpy.float32)
    x = big[1000:1012]
    mem, off, _ = blas._root("sdot", 1, "x", x)
    assert mem.nbytes <= 12 * 4 + 256
    assert gl.blas.dot(x, x) == float((numpy.arange(12.0) ** 2).sum())


def test_scalars_are_taken_as_float32_takes_them():
    """Rounded to float32 as the s routines compute: the largest float32 is taken, a value that rounds to
    zero is a zero (A is then not read, as alpha = 0 promises), an int past any float is refused by name."""
    a = mat(4, 4, fill=numpy.nan)
    y = vec(4, 1, fill=2.0)
    out = host(gl.blas.gemv("N", 1e-46, a, vec(4, 1), 0.5, y))            # 1e-46 is 0 in float32
    assert (out == 1.0).all()
    gl.blas.gemv("N", 3.4028235e38, mat(4, 4), vec(4, 1), 0.0, vec(4, 1))  # float32's largest, as NumPy prints it
    with pytest.raises(BlasError, match=r"argument 2 \(alpha\) = 10{400}|argument 2 \(alpha\) = 1000"):
        gl.blas.gemv("N", 10 ** 400, mat(4, 4), vec(4, 1), 0.0, vec(4, 1))


def test_sizes_increments_and_leading_dimensions_past_32_bits_are_refused_by_name():
    """Checked before any memory is touched: views that only claim such sizes (never read) are enough."""
    from numpy.lib.stride_tricks import as_strided
    if gl.on_gpu:
        pytest.skip("the claimed views are host memory")
    base = numpy.zeros(8, dtype=numpy.float32)
    wide_inc = as_strided(base, shape=(2,), strides=(4 * 2 ** 31,))
    with pytest.raises(BlasError, match=r"sdot: argument 1 \(x\) has increment 2,147,483,648, past the 2\^31 - 1"):
        gl.blas.dot(wide_inc, wide_inc)
    long = as_strided(base, shape=(2 ** 31,), strides=(4,))
    with pytest.raises(BlasError, match=r"sdot: argument 2 \(y\) has 2,147,483,648 elements"):
        gl.blas.dot(base[:2], long)
    wide_ld = as_strided(base, shape=(2, 2), strides=(4, 4 * 2 ** 31))
    with pytest.raises(BlasError, match=r"sgemv: argument 3 \(A\) is 2 x 2 with leading dimension 2,147,483,648"):
        gl.blas.gemv("N", 1.0, wide_ld, base[:2], 0.0, base[2:4])


def test_a_call_is_planned_once_per_form(fresh_plans, monkeypatch):
    """The second call of one form takes the first's plan (no new checks of shapes, no new kernel look-up);
    another shape, stride or transpose gets its own; plan_of says what was chosen and why (here the rules: a
    GPU's shape record is the dispatch test's)."""
    monkeypatch.setattr(gl.blas, "_tuning", lambda: None)
    A, x, y = mat(40, 30, 2), vec(30, 1), vec(40, -2)
    gl.blas.gemv("N", 1.0, A, x, 0.0, y)
    first = gl.blas.plan_of("gemv", "N", 1.0, A, x, 0.0, y)
    gl.blas.gemv("n", 2.0, mat(40, 30, 2), vec(30, 1), 0.5, vec(40, -2))        # same form, new arrays and scalars
    assert gl.blas.plan_of("gemv", "N", 1.0, A, x, 0.0, y) is first
    assert first.key == gl.blas.GEMV and first.why == "rule"
    assert gl.blas.plan_of("gemv", "T", 1.0, A, vec(40, 1), 0.0, vec(30, 1)).key == gl.blas.GEMV_T
    assert gl.blas.plan_of("gemv", "N", 1.0, mat(40, 30, 3), x, 0.0, y) is not first     # another ld
    assert gl.blas.plan_of("gemv", "N", 1.0, A, vec(30, 2), 0.0, y) is not first         # another increment
    assert "blas/gemv/04_bandwidth" in repr(first)
    with pytest.raises(BlasError, match=r"argument 6 \(y\) has 39 elements"):
        gl.blas.gemv("N", 1.0, A, x, 0.0, vec(39, 1))                                 # a new form is checked


def test_a_planned_call_still_checks_what_can_differ(fresh_plans):
    """Scalars and overlaps are checked on every call, planned or not."""
    a, flat = _shared_views()
    x = xp.asarray(RNG.standard_normal(6).astype(numpy.float32))
    gl.blas.gemv("N", 1.0, a, flat[0:6], 0.0, flat[6:12])                          # planned: disjoint
    with pytest.raises(BlasError, match=r"argument 6 \(y\) shares memory with argument 4 \(x\)"):
        gl.blas.gemv("N", 1.0, a, flat[0:6], 0.0, flat[3:9])                       # same form, overlapping
    with pytest.raises(BlasError, match=r"argument 2 \(alpha\) = .* beyond float32's range"):
        gl.blas.gemv("N", 1e39, a, x, 0.0, flat[6:12])
    with pytest.raises(BlasError, match=r"argument 5 \(beta\) must be a real number"):
        gl.blas.gemv("N", 1.0, a, x, "0", flat[6:12])


def test_dot_into_a_device_array_leaves_the_sum_there(fresh_plans):
    x, y = vec(1000, 3), vec(1000, -1)
    r = xp.full(1, numpy.nan, dtype=numpy.float32)
    assert gl.blas.dot(x, y, out=r) is r
    want = float(host(x) @ host(y))
    assert abs(float(gl.to_host(r)[0]) - want) <= 2e-5 * float(numpy.abs(host(x)) @ numpy.abs(host(y)))
    assert float(gl.to_host(r)[0]) == gl.blas.dot(x, y)                             # the same bits either way
    z = xp.full(1, numpy.nan, dtype=numpy.float32)
    assert float(gl.to_host(gl.blas.dot(vec(0, 1), vec(0, 1), out=z))[0]) == 0.0
    with pytest.raises(BlasError, match=r"sdot: argument 3 \(out\) must be a contiguous float32 array of one"):
        gl.blas.dot(x, y, out=xp.zeros(2, dtype=numpy.float32))
    with pytest.raises(BlasError, match=r"sdot: argument 3 \(out\) must be float32"):
        gl.blas.dot(x, y, out=xp.zeros(1, dtype=numpy.float64))
    flat = xp.asarray(RNG.standard_normal(20).astype(numpy.float32))
    with pytest.raises(BlasError, match=r"argument 3 \(out\) shares memory with argument 1 \(x\)"):
        gl.blas.dot(flat[:10], flat[10:], out=flat[4:5])


@pytest.mark.parametrize("m, n, trans", [(100000, 64, "T"), (64, 100000, "T"), (64, 100000, "N"), (3001, 37, "T"),
                                         (7, 50001, "N"), (50001, 7, "T")])
def test_gemv_on_tall_and_wide_matrices(m, n, trans, fresh_plans, monkeypatch):
    monkeypatch.setattr(gl.blas, "_tuning", lambda: None)         # the rules' choice (a record's: tested apart)
    rng = numpy.random.default_rng(8)
    A = numpy.asfortranarray(rng.standard_normal((m, n)).astype(numpy.float32))
    x = rng.standard_normal(n if trans == "N" else m).astype(numpy.float32)
    y0 = rng.standard_normal(m if trans == "N" else n).astype(numpy.float32)
    y = gl.xp.asarray(y0.copy())
    plan = gl.blas.plan_of("gemv", trans, 1.0, gl.xp.asarray(A), gl.xp.asarray(x), 1.0, y)
    assert plan.params["SPLIT"] > 1 or plan.params.get("LANES", 32) < 32 or min(m, n) > 64
    gl.blas.gemv(trans, -0.75, gl.xp.asarray(A), gl.xp.asarray(x), 2.0, y)
    op = A.astype(numpy.float64) if trans == "N" else A.T.astype(numpy.float64)
    expect = -0.75 * op @ x + 2.0 * y0
    scale = 0.75 * numpy.abs(op) @ numpy.abs(x) + 2.0 * numpy.abs(y0)
    assert (numpy.abs(gl.to_host(y) - expect) <= 1e-5 * scale + 1e-30).all()


@pytest.mark.gpu
@pytest.mark.parametrize("routine, shape", [("gemm", (333, 257, 515, "NT")), ("gemm", (64, 1000, 2000, "TN")),
                                            ("gemv", (5000, 129, "T")), ("gemv", (129, 5000, "N")),
                                            ("gemv", (100000, 64, "T")), ("dot", (300001,))])
def test_the_direct_launch_gives_the_checked_launchs_bits(routine, shape, fresh_plans):
    """A planned call on a GPU launches through CuPy with its arguments laid out by the plan; the same kernel
    and configuration through the loader's checked call must give the same bits."""
    rng = numpy.random.default_rng(9)
    if routine == "gemm":
        m, n, k, form = shape
        problem = gl.ops.Gemm(m=m, n=n, k=k, transa=form[0], transb=form[1], layout="col")
        (A, B), C = problem.inputs(rng), problem.output()
        C.fill(0.5)
        direct = C.copy(order="F")
        plan = gl.blas.plan_of("gemm", form[0], form[1], 1.5, A, B, -1.0, direct)
        gl.blas.gemm(form[0], form[1], 1.5, A, B, -1.0, direct)
        v = gl.registry.get(plan.key)
        grid, block, shared = v.launch(problem, plan.params)
        v.kernel(problem, **plan.params)(grid, block, (A.ravel(order="K"), 0, A.shape[0], B.ravel(order="K"), 0,
                                                       B.shape[0], C.ravel(order="K"), 0, m, m, n, k, 1.5, -1.0, 0, 0, 0,
                                                       *v.workspace(problem, plan.params)), shared_mem=shared)
        assert plan.params["SPLITK"] > 1 or shape[0] != 64
        assert numpy.array_equal(gl.to_host(direct), gl.to_host(C))
    elif routine == "gemv":
        m, n, t = shape
        problem = gl.ops.Gemv(m=m, n=n, trans=t, layout="col")
        (A, x), y = problem.inputs(rng), problem.output()
        y.fill(0.25)
        direct = y.copy()
        plan = gl.blas.plan_of("gemv", t, 0.5, A, x, 2.0, direct)
        gl.blas.gemv(t, 0.5, A, x, 2.0, direct)
        v = gl.registry.get(plan.key)
        grid, block, shared = v.launch(problem, plan.params)
        v.kernel(problem, **plan.params)(grid, block, (A.ravel(order="K"), 0, m, x, 0, 1, y, 0, 1, problem.out_len,
                                                       problem.in_len, 0.5, 2.0, *v.workspace(problem, plan.params)),
                                         shared_mem=shared)
        assert numpy.array_equal(gl.to_host(direct), gl.to_host(y))
    else:
        (n,) = shape
        x, y = gl.ops.Dot(n=n).inputs(rng)
        r = gl.xp.zeros(1, dtype=numpy.float32)
        plan = gl.blas.plan_of("dot", x, y)
        v = gl.registry.get(plan.key)
        grid, block, shared = v.launch(gl.ops.Dot(n=n), plan.params)
        v.kernel(gl.ops.Dot(n=n), **plan.params)(grid, block, (x, 0, 1, y, 0, 1, n, r, *v.workspace(None, plan.params)),
                                                  shared_mem=shared)
        assert gl.blas.dot(x, y) == float(gl.to_host(r)[0])


@pytest.mark.gpu
def test_a_call_costs_little_host_time_and_never_waits_for_the_gpu(fresh_plans):
    """Planned calls queue their kernel and return: a GEMM of milliseconds returns in microseconds, and a loop
    of GEMV calls costs a few tens of microseconds of host time each."""
    import time
    A, B, C = (xp.asfortranarray(xp.asarray(RNG.standard_normal((4096, 4096)).astype(numpy.float32))) for _ in range(3))
    gl.blas.gemm("N", "N", 1.0, A, B, 0.0, C)
    gl.synchronize()
    start = time.perf_counter()
    gl.blas.gemm("N", "N", 1.0, A, B, 0.0, C)
    host = time.perf_counter() - start
    gl.synchronize()
    gpu = time.perf_counter() - start
    assert host < 0.2 * gpu, (host, gpu)                          # 137 GFLOP: milliseconds on any GPU
    x, y = xp.ones(4096, dtype=numpy.float32), xp.zeros(4096, dtype=numpy.float32)
    gl.blas.gemv("T", 1.0, A, x, 0.0, y)
    gl.synchronize()
    start = time.perf_counter()
    for _ in range(100):
        gl.blas.gemv("T", 1.0, A, x, 0.5, y)
    host = (time.perf_counter() - start) / 100
    gl.synchronize()
    assert host < 40e-6, host


def test_dispatch_takes_the_nearest_recorded_shape_of_the_gpu(monkeypatch, fresh_plans):
    """With a shape record for the GPU in use, each call takes the winner recorded nearest its shape (sizes as
    logarithms; GEMM prefers its own transposes, GEMV's 'N' and 'T' never mix); SPLITK is held to the
    workspace; without a record the rules choose."""
    small = {**gl.blas.GEMM_SMALL, "SPLITK": 4}
    large = {**gl.blas.GEMM_LARGE, "SPLITK": 1}
    table = {"gemm": [((64, 4096, 4096, "NN"), small), ((4096, 4096, 4096, "NN"), large),
                      ((4096, 4096, 4096, "TT"), {**large, "GROUP": 1})],
             "gemv": [((4096, 4096, "N"), {"WARPS": 8, "UNROLL": 4, "SPLIT": 4, "VEC": 4, "CS": 0}),
                      ((100000, 64, "T"), {"WARPS": 8, "LANES": 32, "UNROLL": 4, "SPLIT": 64, "CS": 0})]}
    monkeypatch.setattr(gl.blas, "_tuning", lambda: table)
    key, params, why = gl.blas.choose("gemm", 70, 5000, 3000, "NN")
    assert (key, params, why) == (gl.blas.GEMM, small, "recorded at [64, 4096, 4096, 'NN']")
    assert gl.blas.choose("gemm", 3000, 5000, 4000, "NN")[1] == large
    assert gl.blas.choose("gemm", 4096, 4096, 4096, "TT")[1]["GROUP"] == 1              # its own transposes
    assert gl.blas.choose("gemm", 64, 4096, 4096, "TT")[1] == small                     # nearer in size
    huge = gl.blas.choose("gemm", 64, 400000, 4096, "NN")[1]                            # partials past the cap
    assert huge["SPLITK"] < 4 and huge["SPLITK"] <= gl.blas._gemm_split_limit(64, 400000, huge)
    key, params, _ = gl.blas.choose("gemv", 50000, 100, "T")
    assert key == gl.blas.GEMV_T and params["SPLIT"] == 64 and params["CS"] == 1          # CS by its own size
    assert gl.blas.choose("gemv", 50000, 100, "N")[1]["SPLIT"] == 4                       # 'N' from 'N' only
    monkeypatch.setattr(gl.blas, "_tuning", lambda: None)
    assert gl.blas.choose("gemm", 70, 5000, 3000, "NN") == (gl.blas.GEMM, gl.blas._gemm_params(70, 5000, 3000), "rule")


def test_the_shape_record_is_one_gl_blas_can_dispatch_from():
    """The committed record: every winner a legal configuration of its kernel, every point checked before it
    was timed, and the classes' verdicts what the grid's ratios say."""
    from gemmlab import record
    from gemmlab.studies import blas_shapes
    data = record.load("blas-shapes-nvidia-h200")
    assert data["environment"]["gpu"] == "NVIDIA H200"
    for routine, rows in data["winners"].items():
        for row in rows:
            shape, params = row["shape"], row["params"]
            key = gl.blas.GEMM if routine == "gemm" else (gl.blas.GEMV if shape[-1] == "N" else gl.blas.GEMV_T)
            assert gl.registry.get(key).resolve(**params) == params
    assert all(not g.get("failed") for g in data["grid"])
    summary = blas_shapes.summarize(data["grid"])
    assert summary["classes"] == data["classes"] and summary["winners"] == data["winners"]


def test_the_shape_study_tries_legal_candidates_and_shows_its_grid(tmp_path):
    from gemmlab.studies import blas_shapes
    for m, n, k in ((64, 4096, 4096), (4096, 4096, 64), (511, 513, 257), (100, 100000, 1000)):
        cands = blas_shapes.gemm_candidates(m, n, k, 132)
        assert cands and all(gl.registry.get(gl.blas.GEMM).resolve(**c) == c for c in cands)
        assert {c["SPLITK"] for c in cands} >= {1}
    for m, n, t in ((100000, 64, "T"), (64, 100000, "N"), (32, 1000000, "N"), (4096, 4096, "T")):
        key = gl.blas.GEMV if t == "N" else gl.blas.GEMV_T
        cands = blas_shapes.gemv_candidates(m, n, t, 132)
        assert cands and all(gl.registry.get(key).resolve(**c) == c for c in cands)
    import matplotlib
    matplotlib.use("Agg")
    axes = blas_shapes.plot(blas_shapes.load())
    assert len(axes) == len(blas_shapes.GEMM_GRID) + len(blas_shapes.GEMV_GRID)
    assert "NVIDIA H200" in axes[0].figure._suptitle.get_text()


# ---- batched layouts: every array that meets the documented contract is taken ----------------------------------

def _documented(rng, batch, rows, cols):
    """The documented form: x.transpose(0, 2, 1) of a C-ordered (batch, cols, rows) array."""
    return xp.ascontiguousarray(xp.asarray(rng.standard_normal((batch, cols, rows)).astype(numpy.float32))
                                ).transpose(0, 2, 1)


def _filled(like, rng):
    like[...] = xp.asarray(rng.standard_normal(like.shape).astype(numpy.float32))
    return like


BATCHED_C = {
    "documented": lambda rng: _documented(rng, 3, 5, 4),
    "zeros_like": lambda rng: _filled(xp.zeros_like(_documented(rng, 3, 5, 4)), rng),
    "empty_like": lambda rng: _filled(xp.empty_like(_documented(rng, 3, 5, 4)), rng),
    "copy in its own order": lambda rng: _documented(rng, 3, 5, 4).copy(order="K"),
    "every other matrix of a larger batch": lambda rng: _documented(rng, 6, 5, 4)[::2],
    "the first rows of taller matrices": lambda rng: _documented(rng, 3, 8, 4)[:, :5, :],
    "a 4-D batch reshaped": lambda rng: _filled(xp.zeros((1, 3, 4, 5), dtype=numpy.float32), rng)
    .reshape(3, 4, 5).transpose(0, 2, 1),
}


@pytest.mark.parametrize("form", list(BATCHED_C))
def test_every_batched_output_of_the_documented_layout_is_taken(form):
    rng = numpy.random.default_rng(11)
    A = _documented(rng, 3, 5, 6)
    B = xp.zeros_like(_documented(rng, 3, 6, 4))                 # an input of the same form as zeros_like makes
    B[...] = xp.asarray(rng.standard_normal(B.shape).astype(numpy.float32))
    C = BATCHED_C[form](rng)
    before = gl.to_host(C).astype(numpy.float64)
    assert gl.blas.gemm_strided_batched("N", "N", 0.5, A, B, -1.0, C) is C
    want = 0.5 * numpy.einsum("bik,bkj->bij", gl.to_host(A).astype(numpy.float64),
                              gl.to_host(B).astype(numpy.float64)) - before
    assert numpy.abs(gl.to_host(C) - want).max() < 1e-5


def test_a_matrix_or_vector_inside_a_batch_made_by_zeros_like_is_taken():
    rng = numpy.random.default_rng(12)
    Z = _filled(xp.zeros_like(_documented(rng, 3, 5, 4)), rng)
    A, B = _documented(rng, 1, 5, 6)[0], _documented(rng, 1, 6, 4)[0]
    gl.blas.gemm("N", "N", 1.0, A, B, 0.0, Z[1])
    want = gl.to_host(A).astype(numpy.float64) @ gl.to_host(B).astype(numpy.float64)
    assert numpy.abs(gl.to_host(Z[1]) - want).max() < 1e-5
    x = Z[2, :, 0]                                              # a column of one of them: a vector
    y = xp.zeros(5, dtype=numpy.float32)
    assert abs(gl.blas.dot(x, x) - float((gl.to_host(x).astype(numpy.float64) ** 2).sum())) < 1e-4
    gl.blas.gemv("T", 1.0, Z[0], xp.ones(5, dtype=numpy.float32)[:5], 0.0, y[:4])
    assert numpy.abs(gl.to_host(y[:4]) - gl.to_host(Z[0]).astype(numpy.float64).sum(axis=0)).max() < 1e-5


@pytest.mark.parametrize("form, says", [
    ("row-major", r"argument 7 \(C\) must hold column-major matrices .* x\.transpose\(0, 2, 1\) of a C-ordered "
                  r"\(batch, cols, rows\) array"),
    ("Fortran-ordered 3-D", r"argument 7 \(C\) must hold column-major matrices"),
    ("overlapping", r"argument 7 \(C\) has its matrices 10 elements apart with leading dimension 5: matrices 0 and 1 "
                    r"share elements"),
    ("reversed", r"argument 7 \(C\) has a stride between matrices of -80 bytes; it must be a whole number of "
                 r"elements, zero or more"),
])
def test_a_refused_batched_output_is_told_the_rule_and_the_suggested_fix_is_taken(form, says):
    rng = numpy.random.default_rng(13)
    A, B = _documented(rng, 3, 5, 6), _documented(rng, 3, 6, 4)
    C = {"row-major": lambda: xp.zeros((3, 5, 4), dtype=numpy.float32),
         "Fortran-ordered 3-D": lambda: xp.zeros((3, 5, 4), dtype=numpy.float32, order="F"),
         "overlapping": _overlapping,
         "reversed": lambda: _documented(rng, 3, 5, 4)[::-1]}[form]()
    with pytest.raises(BlasError, match=says):
        gl.blas.gemm_strided_batched("N", "N", 1.0, A, B, 0.0, C)
    if form in ("row-major", "Fortran-ordered 3-D"):               # the fix the message gives
        fixed = xp.ascontiguousarray(C.transpose(0, 2, 1)).transpose(0, 2, 1)
        gl.blas.gemm_strided_batched("N", "N", 1.0, A, B, 0.0, fixed)


def _overlapping():
    """Three 5 x 4 column-major matrices 10 elements apart: each overlaps the next."""
    base = xp.zeros(100, dtype=numpy.float32)
    return xp.lib.stride_tricks.as_strided(base, shape=(3, 5, 4), strides=(40, 4, 20))


def test_interleaved_matrices_that_share_no_element_are_a_legal_batched_output():
    """Matrices closer together than one of them spans, interleaved column by column, but never on one element
    (zeros((n, batch, m)).transpose(1, 2, 0)): the contract forbids overlap only."""
    rng = numpy.random.default_rng(14)
    A, B = _documented(rng, 3, 5, 6), _documented(rng, 3, 6, 4)
    C = xp.zeros((4, 3, 5), dtype=numpy.float32).transpose(1, 2, 0)
    assert C.strides[0] < C.strides[-1]
    gl.blas.gemm_strided_batched("N", "N", 1.0, A, B, 0.0, C)
    want = numpy.einsum("bik,bkj->bij", gl.to_host(A).astype(numpy.float64), gl.to_host(B).astype(numpy.float64))
    assert numpy.abs(gl.to_host(C) - want).max() < 1e-5
