"""Third-party CUDA kernels as their authors wrote them (tests/third_party/, see its MANIFEST.md), run unchanged.

Each case loads one vendored file with gl.load, launches one kernel the way its author's host code does (grid,
block, dynamic shared memory) and checks the answer against NumPy in float64 (or exactly, for integers). The
sizes are not multiples of the kernel's tile wherever the kernel guards its edges; otherwise they are what its
author assumes. Every case runs on the backend in use: on a GPU it checks the kernels and the harness, on the
emulator it measures how much real-world CUDA the emulator runs correctly. A wrong answer is a failure.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy
import pytest

import gemmlab as gl

HERE = Path(__file__).parent / "third_party"
SGEMM, LLMC = HERE / "siboehm__SGEMM_CUDA", HERE / "karpathy__llm.c"
SAMPLES, BLOG = HERE / "NVIDIA__cuda-samples", HERE / "NVIDIA-developer-blog__code-samples"
i32, u32, f32 = numpy.int32, numpy.uint32, numpy.float32


@functools.lru_cache(maxsize=None)
def module(path: Path):
    return gl.load(str(path))


def kernel(path, name):
    return module(path).get(name)


def dev(a):
    return gl.xp.array(a)


def host(a):
    return gl.to_host(a)


def rng(seed=0):
    return numpy.random.default_rng(seed)


def cdiv(a, b):
    return (a + b - 1) // b


def close(got, ref, rtol=1e-4, atol=1e-5):
    got, ref = numpy.asarray(got, dtype=numpy.float64), numpy.asarray(ref, dtype=numpy.float64)
    assert got.shape == ref.shape
    err = numpy.abs(got - ref)
    bad = err > atol + rtol * numpy.abs(ref)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements wrong; first at {numpy.argwhere(bad)[0].tolist()}: "
                           f"got {got[bad][0]!r}, want {ref[bad][0]!r}; max error {err.max():.3g}")


# bf16 as uint16 bit patterns (NumPy has no bfloat16): round to nearest even, as __float2bfloat16 does
def to_bf16(x):
    u = numpy.asarray(x, dtype=numpy.float32).view(numpy.uint32).astype(numpy.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(numpy.uint16)


def from_bf16(b):
    return (numpy.asarray(b, dtype=numpy.uint16).astype(numpy.uint32) << 16).view(numpy.float32)


# ================================ siboehm/SGEMM_CUDA =================================================

# (file, kernel, grid(M, N), block, sizes M, N, K): grids as runner.cu computes them
SGEMM_CASES = [
    ("1_naive", "sgemm_naive", lambda M, N: (cdiv(M, 32), cdiv(N, 32)), (32, 32), (77, 45, 53)),
    ("2_kernel_global_mem_coalesce", "sgemm_global_mem_coalesce<32>", lambda M, N: (cdiv(M, 32), cdiv(N, 32)), 1024,
     (77, 45, 53)),
    ("3_kernel_shared_mem_blocking", "sgemm_shared_mem_block<32>", lambda M, N: (cdiv(M, 32), cdiv(N, 32)), 1024,
     (64, 96, 128)),
    ("4_kernel_1D_blocktiling", "sgemm1DBlocktiling<64, 64, 8, 8>", lambda M, N: (cdiv(N, 64), cdiv(M, 64)), 512,
     (128, 192, 64)),
    ("5_kernel_2D_blocktiling", "sgemm2DBlocktiling<64, 64, 8, 8, 8>", lambda M, N: (cdiv(N, 64), cdiv(M, 64)), 64,
     (64, 128, 64)),
    ("5_kernel_2D_blocktiling", "sgemm2DBlocktiling<128, 128, 8, 8, 8>", lambda M, N: (cdiv(N, 128), cdiv(M, 128)),
     256, (128, 256, 32)),
    # kernels 6-8 load a tile with one float4 per thread and no loop: only runner.cu's 128 x 128 configuration
    # (256 threads) covers its tiles; its 64 x 64 one (for M or N under 128) leaves rows unloaded
    ("6_kernel_vectorize", "sgemmVectorize<128, 128, 8, 8, 8>", lambda M, N: (cdiv(N, 128), cdiv(M, 128)), 256,
     (128, 256, 64)),
    ("7_kernel_resolve_bank_conflicts", "sgemmResolveBankConflicts<128, 128, 8, 8, 8>",
     lambda M, N: (cdiv(N, 128), cdiv(M, 128)), 256, (128, 256, 64)),
    ("8_kernel_bank_extra_col", "sgemmResolveBankExtraCol<128, 128, 8, 8, 8>",
     lambda M, N: (cdiv(N, 128), cdiv(M, 128)), 256, (128, 256, 64)),
    ("9_kernel_autotuned", "sgemmAutotuned<128, 128, 16, 8, 8>", lambda M, N: (cdiv(N, 128), cdiv(M, 128)), 256,
     (128, 256, 64)),
    ("10_kernel_warptiling", "sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>",
     lambda M, N: (cdiv(N, 128), cdiv(M, 128)), 128, (128, 256, 64)),
]


@pytest.mark.parametrize("case", SGEMM_CASES, ids=[c[1].split("<")[0] + ("_128" if "<128" in c[1] else "")
                                                    for c in SGEMM_CASES])
def test_sgemm_cuda(case):
    f, name, grid, block, (M, N, K) = case
    r = rng(1)
    A, B, C0 = (r.standard_normal(s).astype(f32) for s in ((M, K), (K, N), (M, N)))
    alpha, beta = 1.5, -0.5
    C = dev(C0)
    kernel(SGEMM / f"{f}.cu", name)(grid(M, N), block, (i32(M), i32(N), i32(K), f32(alpha), dev(A), dev(B),
                                                        f32(beta), C))
    close(host(C), alpha * (A.astype(numpy.float64) @ B) + beta * C0, rtol=1e-4, atol=1e-4)


# ==================================== karpathy/llm.c =================================================

def layernorm_ref(x, w, b):
    x = x.astype(numpy.float64)
    m = x.mean(-1)
    rs = 1 / numpy.sqrt(((x - m[:, None]) ** 2).mean(-1) + 1e-5)
    return (x - m[:, None]) * rs[:, None] * w + b, m, rs


def layernorm_inputs(N, C):
    r = rng(2)
    return (r.standard_normal((N, C)).astype(f32) + 0.5, r.standard_normal(C).astype(f32),
            r.standard_normal(C).astype(f32))


# kernel name -> (grid(N), block, shared_mem(C, block)), as layernorm_forward.cu's launchers set them
LAYERNORM = {
    "layernorm_forward_kernel1": (lambda N: cdiv(N, 128), 128, lambda C, b: 0),
    "layernorm_forward_kernel3": (lambda N: cdiv(N * 32, 256), 256, lambda C, b: 0),
    "layernorm_forward_kernel4": (lambda N: cdiv(N * 32, 256), 256, lambda C, b: 0),
    "layernorm_forward_kernel5": (lambda N: N, 256, lambda C, b: 0),
    "layernorm_forward_kernel6": (lambda N: cdiv(N, 4), (32, 4), lambda C, b: (2 + 4) * C * 4),
}


@pytest.mark.parametrize("name", list(LAYERNORM))
def test_llmc_layernorm_forward(name):
    grid, block, smem = LAYERNORM[name]
    N, C = 37, (100 if name != "layernorm_forward_kernel6" else 96)       # kernel 6 reads rows as float4s
    x, w, b = layernorm_inputs(N, C)
    out, mean, rstd = (gl.xp.zeros(s, dtype=f32) for s in ((N, C), N, N))
    kernel(LLMC / "layernorm_forward.cu", name)(grid(N), block, (out, mean, rstd, dev(x), dev(w), dev(b), i32(N),
                                                                 i32(C)), shared_mem=smem(C, block))
    ro, rm, rr = layernorm_ref(x, w, b)
    close(host(mean), rm, 1e-4, 1e-5)
    close(host(rstd), rr, 1e-3, 1e-5)
    close(host(out), ro, 1e-3, 1e-4)


@pytest.mark.parametrize("part", ["mean_kernel", "rstd_kernel", "normalization_kernel"])
def test_llmc_layernorm_forward_kernel2(part):
    B, T, C, bs = 4, 8, 96, 128                          # normalization_kernel has no bound: B*T*C a multiple of 256
    N = B * T
    x, w, b = layernorm_inputs(N, C)
    ro, rm, rr = layernorm_ref(x, w, b)
    path = LLMC / "layernorm_forward.cu"
    if part == "mean_kernel":
        mean = gl.xp.zeros(N, dtype=f32)
        kernel(path, part)(N, bs, (mean, dev(x), i32(N), i32(C), i32(bs)), shared_mem=bs * 4)
        close(host(mean), rm, 1e-4, 1e-5)
    elif part == "rstd_kernel":
        rstd = gl.xp.zeros(N, dtype=f32)
        kernel(path, part)(N, bs, (rstd, dev(x), dev(rm.astype(f32)), i32(N), i32(C), i32(bs)), shared_mem=bs * 4)
        close(host(rstd), rr, 1e-3, 1e-5)
    else:
        out = gl.xp.zeros((N, C), dtype=f32)
        kernel(path, part)(cdiv(N * C, 256), 256, (out, dev(x), dev(rm.astype(f32)), dev(rr.astype(f32)), dev(w),
                                                   dev(b), i32(B), i32(T), i32(C)))
        close(host(out), ro, 1e-4, 1e-4)


def softmax_ref(x):
    e = numpy.exp(x.astype(numpy.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# kernel -> (grid(N), block, shared_mem(block), C): launchers of softmax_forward.cu; kernels 7 and online 8 return
# before their barriers or warp shuffles in threads past C, so there C is at least the block
SOFTMAX = {
    "softmax_forward_kernel1": (lambda N: cdiv(N, 128), 128, lambda b: 0, 50),
    "softmax_forward_kernel2": (lambda N: N, 128, lambda b: b * 4, 50),
    "softmax_forward_kernel3": (lambda N: N, 32, lambda b: b * 4, 50),
    "softmax_forward_kernel4": (lambda N: N, 256, lambda b: 2 * b // 32 * 4, 300),
    "softmax_forward_online_kernel1": (lambda N: cdiv(N, 128), 128, lambda b: 0, 50),
    "softmax_forward_online_kernel2": (lambda N: cdiv(N * 32, 128), 128, lambda b: 0, 50),
    "softmax_forward_kernel7": (lambda N: N, 256, lambda b: 2 * b // 32 * 4, 300),
    "softmax_forward_online_kernel8": (lambda N: cdiv(N * 32, 256), 256, lambda b: 0, 300),
}


@pytest.mark.parametrize("name", list(SOFTMAX))
def test_llmc_softmax_forward(name):
    grid, block, smem, C = SOFTMAX[name]
    N = 19
    x = (rng(3).standard_normal((N, C)) * 3).astype(f32)
    out = gl.xp.zeros((N, C), dtype=f32)
    kernel(LLMC / "softmax_forward.cu", name)(grid(N), block, (out, dev(x), i32(N), i32(C)), shared_mem=smem(block))
    close(host(out), softmax_ref(x), 1e-4, 1e-7)


def gelu_ref(x):
    x = x.astype(numpy.float64)
    return 0.5 * x * (1 + numpy.tanh(numpy.sqrt(2 / numpy.pi) * (x + 0.044715 * x ** 3)))


def bf16_close(got_bits, ref):
    close(from_bf16(host(got_bits)), ref, rtol=2 ** -7, atol=1e-6)    # one bf16 rounding (8 bits of mantissa)


@pytest.mark.parametrize("name", ["gelu_forward_kernel1", "gelu_forward_kernel2"])
def test_llmc_gelu_forward_bf16(name):
    N = 1000 if name.endswith("1") else 1024                            # kernel 2 works in packs of 8
    x = to_bf16(rng(4).standard_normal(N) * 2)
    out = gl.xp.zeros(N, dtype=numpy.uint16)
    grid = cdiv(N, 128) if name.endswith("1") else cdiv(N, 128 * 8)
    kernel(LLMC / "gelu_forward.cu", name)(grid, 128, (out, dev(x), i32(N)))
    bf16_close(out, gelu_ref(from_bf16(x)))


@pytest.mark.parametrize("name", ["residual_forward_kernel1", "residual_forward_kernel2"])
def test_llmc_residual_forward_bf16(name):
    N = 1000 if name.endswith("1") else 1024
    r = rng(5)
    a, b = to_bf16(r.standard_normal(N)), to_bf16(r.standard_normal(N))
    out = gl.xp.zeros(N, dtype=numpy.uint16)
    grid = cdiv(N, 128) if name.endswith("1") else cdiv(N, 128 * 8)
    kernel(LLMC / "residual_forward.cu", name)(grid, 128, (out, dev(a), dev(b), i32(N)))
    bf16_close(out, from_bf16(a).astype(numpy.float64) + from_bf16(b))


@pytest.mark.parametrize("name", ["encoder_forward_kernel1", "encoder_forward_kernel2", "encoder_forward_kernel3"])
def test_llmc_encoder_forward_bf16(name):
    B, T, C, V = 3, 7, 40, 50
    r = rng(6)
    inp = r.integers(0, V, (B, T)).astype(i32)
    wte, wpe = to_bf16(r.standard_normal((V, C))), to_bf16(r.standard_normal((T, C)))
    out = gl.xp.zeros((B, T, C), dtype=numpy.uint16)
    grid = {"1": cdiv(B * T, 128), "2": cdiv(B * T * C, 128), "3": cdiv(B * T * C, 128 * 8)}[name[-1]]
    kernel(LLMC / "encoder_forward.cu", name)(grid, 128, (out, dev(inp), dev(wte), dev(wpe), i32(B), i32(T), i32(C)))
    ref = from_bf16(wte).astype(numpy.float64)[inp] + from_bf16(wpe)[None, :, :]
    bf16_close(out, ref)


def test_llmc_crossentropy_forward_kernel1():
    B, T, V = 3, 11, 37
    r = rng(7)
    probs = softmax_ref(r.standard_normal((B, T, V))).astype(f32)
    targets = r.integers(0, V, (B, T)).astype(i32)
    losses = gl.xp.zeros((B, T), dtype=f32)
    kernel(LLMC / "crossentropy_forward.cu", "crossentropy_forward_kernel1")(
        cdiv(B * T, 128), 128, (losses, dev(probs), dev(targets), i32(B), i32(T), i32(V)))
    ref = -numpy.log(numpy.take_along_axis(probs.astype(numpy.float64), targets[..., None], -1)[..., 0])
    close(host(losses), ref, 1e-5, 1e-6)


@pytest.mark.parametrize("name", ["adamw_kernel1", "adamw_kernel2"])
def test_llmc_adamw(name):
    n, r = 1000, rng(8)
    p, g = r.standard_normal(n).astype(f32), r.standard_normal(n).astype(f32)
    m, v = (r.standard_normal(n) * 0.1).astype(f32), (r.random(n) * 0.1).astype(f32)
    lr, b1, b2, eps, wd, t = 1e-3, 0.9, 0.999, 1e-8, 0.01, 3
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    P, M, Vv = dev(p), dev(m), dev(v)
    kernel(LLMC / "adamw.cu", name)(cdiv(n, 512), 512, (P, dev(g), M, Vv, numpy.int64(n), f32(lr), f32(b1), f32(b2),
                                                         f32(c1), f32(c2), f32(eps), f32(wd)))
    p64, g64 = p.astype(numpy.float64), g.astype(numpy.float64)
    rm = b1 * m + (1 - b1) * g64
    rv = b2 * v + (1 - b2) * g64 ** 2
    rp = p64 - lr * ((rm / c1) / (numpy.sqrt(rv / c2) + eps) + wd * p64)
    close(host(M), rm, 1e-5, 1e-6)
    close(host(Vv), rv, 1e-5, 1e-7)
    close(host(P), rp, 1e-5, 1e-6)


# ================================== NVIDIA/cuda-samples ==============================================

# kernel -> (grid(n), block): reduction_kernel.cu's reduce<T> wrapper, threads = 256, smem = threads * sizeof(T)
REDUCE = {
    "reduce0<int>": (lambda n: cdiv(n, 256), 256),
    "reduce1<int>": (lambda n: cdiv(n, 256), 256),
    "reduce2<int>": (lambda n: cdiv(n, 256), 256),
    "reduce3<int>": (lambda n: cdiv(n, 512), 256),
    "reduce4<int, 256>": (lambda n: cdiv(n, 512), 256),
    "reduce5<int, 256>": (lambda n: cdiv(n, 512), 256),
    "reduce6<int, 256, false>": (lambda n: 8, 256),
    "reduce6<int, 256, true>": (lambda n: 8, 256),
    "reduce7<int, 256, false>": (lambda n: 8, 256),
    "reduce7<int, 256, true>": (lambda n: 8, 256),
    "cg_reduce<int>": (lambda n: 8, 256),
    "multi_warp_cg_reduce<int, 256, 64>": (lambda n: 8, 256),
}


@pytest.mark.parametrize("name", list(REDUCE))
def test_samples_reduction(name):
    n = 8192 if "true" in name else 5000                                # nIsPow2 = true needs a power of two
    if name.startswith("multi_warp"):
        n = 4096                                                       # its power-of-two path; 5000 below
    grid, block = REDUCE[name]
    data = rng(9).integers(-1000, 1000, n).astype(i32)
    out = gl.xp.zeros(grid(n), dtype=i32)
    kernel(SAMPLES / "reduction_kernel.cu", name)(grid(n), block, (dev(data), out, u32(n)), shared_mem=block * 4)
    assert int(host(out).astype(numpy.int64).sum()) == int(data.astype(numpy.int64).sum())


def test_samples_reduction_multi_warp_any_n():
    n, data = 5000, rng(10).integers(-1000, 1000, 5000).astype(i32)
    out = gl.xp.zeros(8, dtype=i32)
    kernel(SAMPLES / "reduction_kernel.cu", "multi_warp_cg_reduce<int, 256, 64>")(8, 256, (dev(data), out, u32(n)),
                                                                                 shared_mem=256 * 4)
    assert int(host(out).astype(numpy.int64).sum()) == int(data.astype(numpy.int64).sum())


def transpose_ref(name, a, T=32):
    h, w = a.shape
    if name.startswith("copy"):
        return a
    if name == "transposeFineGrained":                   # each tile transposed in place
        return a.reshape(h // T, T, w // T, T).transpose(0, 3, 2, 1).reshape(h, w)
    if name == "transposeCoarseGrained":                 # tiles moved to their transposed place, not transposed
        return a.reshape(h // T, T, w // T, T).transpose(2, 1, 0, 3).reshape(w, h)
    return a.T


SAMPLES_TRANSPOSE = ["copy", "copySharedMem", "transposeNaive", "transposeCoalesced", "transposeNoBankConflicts",
                     "transposeDiagonal", "transposeFineGrained", "transposeCoarseGrained"]


@pytest.mark.parametrize("name", SAMPLES_TRANSPOSE)
def test_samples_transpose(name):
    # the sample assumes a square matrix (copySharedMem and the partial transposes need one); the full
    # transposes are also run on a wide one
    w, h = (96, 96) if name.endswith("Grained") or name == "copySharedMem" else (128, 64)
    a = rng(11).standard_normal((h, w)).astype(f32)
    out = gl.xp.zeros(w * h, dtype=f32)
    kernel(SAMPLES / "transpose.cu", name)((w // 32, h // 32), (32, 16), (out, dev(a), i32(w), i32(h)))
    ref = transpose_ref(name, a)
    numpy.testing.assert_array_equal(host(out).reshape(ref.shape), ref)


def test_samples_histogram256():
    words, blocks = 30011, 30
    data = rng(12).integers(0, 2 ** 32, words, dtype=numpy.uint64).astype(u32)
    partial = gl.xp.zeros(blocks * 256, dtype=u32)
    kernel(SAMPLES / "histogram256.cu", "histogram256Kernel")(blocks, 192, (partial, dev(data), u32(words)))
    ref = numpy.bincount(data.view(numpy.uint8), minlength=256)
    numpy.testing.assert_array_equal(host(partial).reshape(blocks, 256).sum(0), ref)


def test_samples_merge_histogram256():
    count = 240
    partial = rng(13).integers(0, 1000, (count, 256)).astype(u32)
    hist = gl.xp.zeros(256, dtype=u32)
    kernel(SAMPLES / "histogram256.cu", "mergeHistogram256Kernel")(256, 256, (hist, dev(partial), u32(count)))
    numpy.testing.assert_array_equal(host(hist), partial.sum(0))


def test_samples_shfl_scan():
    n, bs = 256 * 6, 256
    data = rng(14).integers(-100, 100, n).astype(i32)
    d, partial = dev(data), gl.xp.zeros(n // bs, dtype=i32)
    kernel(SAMPLES / "shfl_scan.cu", "shfl_scan_test")(n // bs, bs, (d, i32(32), partial), shared_mem=bs // 32 * 4)
    ref = numpy.cumsum(data.reshape(-1, bs), axis=1)
    numpy.testing.assert_array_equal(host(d).reshape(-1, bs), ref)
    numpy.testing.assert_array_equal(host(partial), ref[:, -1])


def test_samples_uniform_add():
    n, bs = 256 * 5, 256
    r = rng(15)
    data, partial = r.integers(-100, 100, n).astype(i32), r.integers(-100, 100, n // bs).astype(i32)
    d = dev(data)
    kernel(SAMPLES / "shfl_scan.cu", "uniform_add")(n // bs, bs, (d, dev(partial), i32(n)))
    numpy.testing.assert_array_equal(host(d), data + numpy.repeat(partial, bs))


@pytest.mark.parametrize("bs", [16, 32])
def test_samples_matrixMul(bs):
    hA, wA, wB = 2 * bs * 3, bs * 5, bs * 4                            # the sample needs multiples of the block
    r = rng(16)
    A, B = r.standard_normal((hA, wA)).astype(f32), r.standard_normal((wA, wB)).astype(f32)
    C = gl.xp.zeros((hA, wB), dtype=f32)
    kernel(SAMPLES / "matrixMul.cu", f"MatrixMulCUDA<{bs}>")((wB // bs, hA // bs), (bs, bs),
                                                               (C, dev(A), dev(B), i32(wA), i32(wB)))
    close(host(C), A.astype(numpy.float64) @ B, 1e-4, 1e-4)


def test_samples_filter_arr():
    n = 10007
    src = rng(17).integers(-50, 50, n).astype(i32)
    dst, nres = gl.xp.zeros(n, dtype=i32), gl.xp.zeros(1, dtype=i32)
    kernel(SAMPLES / "warpAggregatedAtomicsCG.cu", "filter_arr")(cdiv(n, 512), 512, (dst, nres, dev(src), i32(n)))
    k = int(host(nres)[0])
    assert k == int((src > 0).sum())
    numpy.testing.assert_array_equal(numpy.sort(host(dst)[:k]), numpy.sort(src[src > 0]))


def test_samples_mapToBuckets():
    n, nb = 5120, 7
    src = rng(18).integers(0, nb + 2, n).astype(i32)                 # some values past the buckets, left out
    counters = (numpy.arange(nb) * n).astype(i32)
    idx, cnt = gl.xp.zeros(n * nb, dtype=i32), dev(counters)
    kernel(SAMPLES / "warpAggregatedAtomicsCG.cu", "mapToBuckets")(n // 512, 512, (dev(src), idx, cnt, i32(n),
                                                                                   i32(nb)))
    got_cnt, got_idx = host(cnt), host(idx)
    for bkt in range(nb):
        want = numpy.flatnonzero(src == bkt)
        assert got_cnt[bkt] - bkt * n == want.size
        numpy.testing.assert_array_equal(numpy.sort(got_idx[bkt * n: bkt * n + want.size]), want)


def test_samples_calculateMaxInEachBuckets():
    n, nb = 5120, 7
    r = rng(19)
    src, val = r.integers(0, nb + 2, n).astype(i32), r.integers(0, 100000, n).astype(i32)
    mx = gl.xp.zeros(nb, dtype=i32)
    kernel(SAMPLES / "warpAggregatedAtomicsCG.cu", "calculateMaxInEachBuckets")(
        n // 512, 512, (dev(src), dev(val), mx, i32(n), i32(nb)))
    numpy.testing.assert_array_equal(host(mx), [val[src == b].max() for b in range(nb)])


# ============================ NVIDIA-developer-blog/code-samples =====================================

@pytest.mark.parametrize("name", ["copy", "copySharedMem", "transposeNaive", "transposeCoalesced",
                                  "transposeNoBankConflicts"])
def test_blog_transpose(name):
    n = 96                                               # the post's kernels take the width from the grid: square
    a = rng(20).standard_normal((n, n)).astype(f32)
    out = gl.xp.zeros((n, n), dtype=f32)
    kernel(BLOG / "transpose.cu", name)((n // 32, n // 32), (32, 8), (out, dev(a)))
    numpy.testing.assert_array_equal(host(out), a if name.startswith("copy") else a.T)


@pytest.mark.parametrize("name,n", [("staticReverse", 64), ("dynamicReverse", 64), ("dynamicReverse", 50)])
def test_blog_shared_memory_reverse(name, n):
    a = numpy.arange(n, dtype=i32) * 3 - 7
    d = dev(a)
    kernel(BLOG / "shared-memory.cu", name)(1, n, (d, i32(n)), shared_mem=n * 4 if name.startswith("dynamic") else 0)
    numpy.testing.assert_array_equal(host(d), a[::-1])


def test_blog_haxpy():
    n, r = 101, rng(21)                                  # odd: the first thread does the last element
    x, y = r.standard_normal(n).astype(numpy.float16), r.standard_normal(n).astype(numpy.float16)
    Y = dev(y)
    kernel(BLOG / "haxpy.cu", "haxpy")(2, 32, (i32(n), numpy.float16(2.0), dev(x), Y))
    ref = (2.0 * x.astype(numpy.float64) + y).astype(numpy.float16)    # one fma, rounded once to half
    numpy.testing.assert_array_equal(host(Y), ref)
