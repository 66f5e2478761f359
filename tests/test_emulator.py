"""The CUDA features the book's kernels use, checked against NumPy on whichever backend is in use.

Each feature test fails if the feature is missing or wrong: on the emulator that tests the emulator,
on a GPU it checks that the test kernels themselves are right. The fault tests at the end are the
emulator's own (on a GPU these faults hang, corrupt memory or are undefined).
"""
import re

import numpy
import pytest

import gemmlab as gl

xp = gl.xp
emulator_only = pytest.mark.skipif(gl.on_gpu, reason="emulator behaviour")

FEATURES = r'''
__global__ void indices(int* out)
{
    const int tpb = blockDim.x * blockDim.y * blockDim.z;
    const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int* o = out + 8 * (block * tpb + t);
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z; o[6] = warpSize; o[7] = gridDim.z;
}

__global__ void reverse_static(const float* in, float* out)
{
    __shared__ float buf[256];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[blockDim.x - 1 - t];
}

__global__ void reverse_dynamic(const float* in, float* out)
{
    extern __shared__ float buf[];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[blockDim.x - 1 - t];
}

__global__ void warp_neighbour(const int* in, int* out)
{
    __shared__ int buf[64];
    const int t = threadIdx.x;
    buf[t] = in[t];
    __syncwarp();
    out[t] = buf[(t & ~31) + ((t + 1) & 31)];
}

__global__ void shuffles(const float* in, float* out, int* ballots)
{
    const int t = threadIdx.x;
    float v = in[t];
    out[4 * t + 0] = __shfl_sync(0xffffffff, v, 3);
    out[4 * t + 1] = __shfl_up_sync(0xffffffff, v, 2);
    out[4 * t + 2] = __shfl_down_sync(0xffffffff, v, 5, 16);
    float s = v;
    for (int m = 8; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffff, s, m, 16);
    out[4 * t + 3] = s;
    unsigned b = __ballot_sync(0xffffffff, t % 3 == 0);
    if ((t & 31) == 0) ballots[t / 32] = (int)b;
}

__device__ float atomic_max_float(float* address, float value)
{
    int* bits = reinterpret_cast<int*>(address);
    int old = *bits, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= value) break;
        old = atomicCAS(bits, assumed, __float_as_int(value));
    } while (old != assumed);
    return __int_as_float(old);
}

__global__ void atomics(const float* x, float* fsum, int* icount, int* imax, int* imin, float* fmax, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(fsum, x[i]);
    atomicAdd(icount, 1);
    atomicMax(imax, (int)(x[i] * 1000));
    atomicMin(imin, (int)(x[i] * 1000));
    atomic_max_float(fmax, x[i]);
}

__forceinline__ __device__ float twice(float v) { return 2.0f * v; }

template <int UNROLL, typename T>
__global__ void __launch_bounds__(128) vectors(const T* __restrict__ in, T* __restrict__ out, int n4)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = reinterpret_cast<const float4*>(in)[i];
    float2 lo = make_float2(v.x, v.y);
    int4 k = make_int4(1, 2, 3, 4);
    float acc = 0.0f;
    #pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc += __ldg(in + 4 * i + u);
    reinterpret_cast<float4*>(out)[i] = make_float4(twice(lo.x) + k.x, lo.y + k.y, v.z + k.z, acc + k.w);
}

__global__ void maths(const float* a, const float* b, float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    out[9 * i + 0] = min(x, y);
    out[9 * i + 1] = max(x, y);
    out[9 * i + 2] = fminf(x, y);
    out[9 * i + 3] = fmaxf(x, y);
    out[9 * i + 4] = fmaf(x, y, 1.0f);
    out[9 * i + 5] = __fmaf_rn(x, y, -1.0f);
    out[9 * i + 6] = rsqrtf(fabsf(x) + 1.0f);
    out[9 * i + 7] = expf(-fabsf(y));
    out[9 * i + 8] = sqrtf(fabsf(x)) + (float)min(i, 3) + (float)max(i, 5);
}
'''

@pytest.fixture(scope="module")
def mod():
    return gl.load(code=FEATURES)


def rnd(*shape, seed=None):
    return numpy.random.default_rng(seed).standard_normal(shape).astype(numpy.float32)


def test_3d_indices_and_warp_size(mod):
    grid, block = (2, 3, 2), (4, 2, 3)
    nthreads = 12 * 24
    out = xp.full(8 * nthreads, -1, dtype=numpy.int32)
    mod.get("indices")(grid, block, (out,))
    got = gl.to_host(out).reshape(12, 24, 8)
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                b = bx + 2 * (by + 3 * bz)
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            t = tx + 4 * (ty + 2 * tz)
                            assert list(got[b, t]) == [tx, ty, tz, bx, by, bz, 32, 2]


@pytest.mark.parametrize("kernel, shared", [("reverse_static", 0), ("reverse_dynamic", 256 * 4)])
def test_shared_memory_and_barrier(mod, kernel, shared):
    x = rnd(3 * 256)
    out = xp.full(3 * 256, numpy.nan, dtype=numpy.float32)
    mod.get(kernel)(3, 256, (xp.asarray(x), out), shared_mem=shared)
    assert (gl.to_host(out) == x.reshape(3, 256)[:, ::-1].ravel()).all()


def test_syncwarp(mod):
    x = numpy.arange(64, dtype=numpy.int32) * 7
    out = xp.zeros(64, dtype=numpy.int32)
    mod.get("warp_neighbour")(1, 64, (xp.asarray(x), out))
    expect = [x[(t & ~31) + ((t + 1) & 31)] for t in range(64)]
    assert list(gl.to_host(out)) == expect


def test_shuffles_and_ballot(mod):
    x = rnd(64)
    out = xp.zeros(4 * 64, dtype=numpy.float32)
    ballots = xp.zeros(2, dtype=numpy.int32)
    mod.get("shuffles")(1, 64, (xp.asarray(x), out, ballots))
    got = gl.to_host(out).reshape(64, 4)
    for t in range(64):
        w, lane, seg = t & ~31, t & 31, t & ~15
        assert got[t, 0] == x[w + 3]
        assert got[t, 1] == (x[t - 2] if lane >= 2 else x[t])
        assert got[t, 2] == (x[t + 5] if (t - seg) + 5 < 16 else x[t])
        # the XOR butterfly: every lane of a 16-lane segment ends with the same bits (each step adds the
        # same two values, in either order), the segment's sum to float32 accuracy. The bound scales with
        # sum(|x|), not with the sum itself: 16 normals can cancel to almost nothing.
        assert got[t, 3] == got[seg, 3]
        part = x[seg:seg + 16].astype(numpy.float64)
        assert abs(got[t, 3] - part.sum()) <= 1e-6 * numpy.abs(part).sum()
    expect = sum(1 << lane for lane in range(32) if lane % 3 == 0)
    assert list(gl.to_host(ballots).view(numpy.uint32)) == [expect, sum(1 << l for l in range(32) if (32 + l) % 3 == 0)]


def test_atomics(mod):
    n = 1000
    x = rnd(n)
    fsum = xp.zeros(1, dtype=numpy.float32)
    count = xp.zeros(1, dtype=numpy.int32)
    imax = xp.full(1, -2**31, dtype=numpy.int32)
    imin = xp.full(1, 2**31 - 1, dtype=numpy.int32)
    fmax = xp.full(1, -numpy.inf, dtype=numpy.float32)
    mod.get("atomics")(4, 256, (xp.asarray(x), fsum, count, imax, imin, fmax, n))
    assert gl.to_host(count)[0] == n
    assert gl.to_host(fsum)[0] == pytest.approx(float(x.astype(numpy.float64).sum()), abs=1e-3)
    assert gl.to_host(imax)[0] == (x * 1000).astype(numpy.int32).max()
    assert gl.to_host(imin)[0] == (x * 1000).astype(numpy.int32).min()
    assert gl.to_host(fmax)[0] == x.max()


def test_vector_types_templates_and_qualifiers(mod):
    x = rnd(4 * 300)
    out = xp.full(4 * 300, numpy.nan, dtype=numpy.float32)
    k = mod.get("vectors", UNROLL=4, T="float")
    assert k.name == "vectors<4, float>"
    k(3, 128, (xp.asarray(x), out, 300))
    v = x.reshape(300, 4)
    expect = numpy.stack([2 * v[:, 0] + 1, v[:, 1] + 2, v[:, 2] + 3, v.sum(axis=1) + 4], axis=1)
    numpy.testing.assert_allclose(gl.to_host(out).reshape(300, 4), expect, rtol=1e-6, atol=1e-6)


def test_launch_bounds_are_enforced(mod):
    k = mod.get("vectors<2, float>")
    with pytest.raises(ValueError, match=r"more than this kernel can launch \(128 at most"):
        k(1, 256, (xp.zeros(1024, dtype=numpy.float32), xp.zeros(1024, dtype=numpy.float32), 256))


def test_math_functions(mod):
    n = 200
    a, b = rnd(n), rnd(n)
    out = xp.zeros(9 * n, dtype=numpy.float32)
    mod.get("maths")(1, 256, (xp.asarray(a), xp.asarray(b), out, n))
    got = gl.to_host(out).reshape(n, 9)
    i = numpy.arange(n)
    expect = numpy.stack([numpy.minimum(a, b), numpy.maximum(a, b), numpy.minimum(a, b), numpy.maximum(a, b),
                          a * b + 1, a * b - 1, 1 / numpy.sqrt(numpy.abs(a) + 1), numpy.exp(-numpy.abs(b)),
                          numpy.sqrt(numpy.abs(a)) + numpy.minimum(i, 3) + numpy.maximum(i, 5)], axis=1)
    numpy.testing.assert_allclose(got, expect, rtol=2e-6, atol=1e-6)


# --- determinism and the missing barrier -------------------------------------------------------

@pytest.mark.parametrize("barrier", [1, 2])
def test_a_missing_barrier_gives_the_same_wrong_answer_every_time_on_the_emulator(barrier):
    rows = gl.demos.missing_barrier(barrier, runs=2)
    emulated = [r for r in rows if r[0] == "emulator"]
    assert all(err > 1e-3 for _, _, err, _ in emulated)          # wrong,
    assert emulated[1][3]                                        # and the same bits both runs
    op = gl.ops.Gemm(m=200, n=184, k=240)
    full = gl.registry.get("sgemm/02_shared_tiling").check(op)
    assert full.ok, str(full)                                    # with both barriers: right


@emulator_only
def test_same_inputs_same_bits(mod):
    x = rnd(5000, seed=1)
    sums = []
    for _ in range(3):
        s = xp.zeros(1, dtype=numpy.float32)
        mod.get("atomics")(20, 256, (xp.asarray(x), s, xp.zeros(1, dtype=numpy.int32),
                                     xp.zeros(1, dtype=numpy.int32), xp.zeros(1, dtype=numpy.int32),
                                     xp.zeros(1, dtype=numpy.float32), 5000))
        sums.append(gl.to_host(s).tobytes())
    assert sums[0] == sums[1] == sums[2]


# --- faults: errors, never hangs or dead processes -----------------------------------------------

FAULTS = r'''
__global__ void early_exit_then_barrier(float* out)
{
    if (threadIdx.x >= 16) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}
__global__ void two_barriers(float* out)
{
    if (threadIdx.x < 8) { __syncthreads(); out[threadIdx.x] = 1.0f; }
    else { __syncthreads(); out[threadIdx.x] = 2.0f; }
}
__global__ void shuffle_after_exit(float* out)
{
    if (threadIdx.x >= 16) return;
    out[threadIdx.x] = __shfl_down_sync(0xffffffff, 1.0f, 1);
}
__global__ void past_the_end(float* out, int n)
{
    out[n + threadIdx.x] = 1.0f;
}
__global__ void null_pointer(float* out)
{
    float* p = nullptr;
    out[0] = p[threadIdx.x];
}
__global__ void divide(int* out, int d)
{
    out[threadIdx.x] = 100 / d;
}
__global__ void forever(int* out)
{
    volatile int* p = out;
    while (p[0] == 0) { }
}
'''


@pytest.fixture(scope="module")
def faults():
    return gl.load(code=FAULTS)


def test_threads_that_have_exited_do_not_hold_up_a_barrier(faults):
    """PTX's exit releases a barrier that only exited threads hold up, and bar.sync waits for the threads that have
    not exited: an early return before a __syncthreads() (a bounds check, warps with nothing to do) runs on a GPU,
    and so it does here."""
    out = gl.xp.zeros(32, dtype=numpy.float32)
    faults.get("early_exit_then_barrier")((2, 1), 32, (out,))
    assert (gl.to_host(out) == (numpy.arange(32) < 16)).all()


def test_threads_may_meet_at_different_barrier_calls(faults):
    # bar.sync counts arrivals: a __syncthreads() in each branch of an if is one barrier on a GPU
    out = gl.xp.zeros(64, dtype=numpy.float32)
    faults.get("two_barriers")(1, 64, (out,))
    assert (gl.to_host(out) == numpy.where(numpy.arange(64) < 8, 1.0, 2.0)).all()


@emulator_only
def test_shuffle_with_an_exited_lane_in_the_mask(faults):
    with pytest.raises(gl.EmulatorError, match=r"__shfl_down_sync at <code>:16 .* lane 16 is in the mask "
                                               r"0xffffffff but its thread \(16,0,0\) has exited"):
        faults.get("shuffle_after_exit")(1, 32, (numpy.zeros(32, dtype=numpy.float32),))


@emulator_only
def test_out_of_bounds_write_is_caught_and_located(faults):
    out = numpy.arange(1024, dtype=numpy.float32)
    before = out.copy()
    with pytest.raises(gl.EmulatorError, match=r"kernel past_the_end: out-of-bounds access in block \(0,0,0\), "
                                               r"thread \(0,0,0\) at <code>:20: writes 4 bytes at element 1024 of "
                                               r"argument 0 \('out'\) \(float32, 1024 elements\): 4 bytes past its end"):
        faults.get("past_the_end")(1, 32, (out, 1024))
    assert numpy.array_equal(out, before)


@emulator_only
def test_null_pointer_and_division_by_zero(faults):
    with pytest.raises(gl.EmulatorError, match="SIGSEGV"):
        faults.get("null_pointer")(1, 4, (numpy.zeros(4, dtype=numpy.float32),))
    with pytest.raises(gl.EmulatorError, match=r"arithmetic fault .*SIGFPE"):
        faults.get("divide")(1, 4, (numpy.zeros(4, dtype=numpy.int32), 0))
    # and the process is fine afterwards
    out = numpy.zeros(4, dtype=numpy.int32)
    faults.get("divide")(1, 4, (out, 7))
    assert (out == 14).all()


@emulator_only
def test_endless_kernel_is_stopped(faults, monkeypatch):
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", "1")
    with pytest.raises(gl.EmulatorError, match=r"ran longer than 1 s .* an endless loop"):
        faults.get("forever")(1, 1, (numpy.zeros(1, dtype=numpy.int32),))


@emulator_only
@pytest.mark.parametrize("code, names", [
    ('asm(".version 8.0");\n__global__ void k(int* x) { x[0] = 1; }', "inline PTX assembly"),
    ('texture<float, 1, cudaReadModeElementType> t;\n__global__ void k(float* x) { x[0] = 1; }',
     "texture and surface references"),
])
def test_unsupported_features_fail_at_compile_time_by_name(code, names):
    with pytest.raises(gl.CompileError, match=names.replace("(", r"\(").replace(")", r"\)")):
        gl.load(code=code).get("k")


@emulator_only
@pytest.mark.parametrize("code, names", [
    ('__global__ void k(int* x) { if (x[0]) asm volatile("red.global.add.u32 [%0], 1;" :: "l"(x)); }',
     r"inline PTX assembly \(asm\): asm\(\"red.global.add.u32 ...\"\)"),
    ('__global__ void k(int* x) { if (x[0]) { __asm__ __volatile__("{ .reg .u32 t;\\n\\t"\n "popc.b32 t, 1; }" :: "l"(x)); } }',
     r"inline PTX assembly \(asm\): asm\(\"popc.b32 ...\"\)"),
    ('__global__ void k(int* x) { if (x[0]) x[1] = tex1Dfetch<int>(0, 1); }', "texture and surface fetches: tex1Dfetch"),
    ('__global__ void k(int* x) { if (x[0]) surf2Dwrite(x[0], 0, 0, 0); }', "texture and surface fetches: surf2Dwrite"),
])
def test_unsupported_features_stop_the_launch_that_reaches_them_by_name_and_line(code, names):
    """Inline PTX in a function and texture or surface fetches build; a thread that reaches one stops the launch,
    naming it and its line, and a launch where no thread reaches it runs (as the file's other kernels do)."""
    k = gl.load(code=code).get("k")
    x = numpy.zeros(2, dtype=numpy.int32)
    k(1, 32, (x,))
    assert (x == 0).all()
    x[0] = 1
    with pytest.raises(gl.EmulatorError, match=r"kernel k stopped in block \(0,0,0\), thread \(0,0,0\) at "
                                               r"<code>:1: the CPU emulator does not support " + names):
        k(1, 32, (x,))


@emulator_only
def test_a_launch_in_device_code_stops_by_name_and_one_in_host_code_builds():
    """<<<...>>> in a kernel (dynamic parallelism) stops the thread that reaches it, by name and line; a launcher left
    in a kernel's file for its host code (a template over a stream, as llm.c's headers have) builds, and the
    file's kernels run."""
    code = ('template <class T> __global__ void c(T* x) { x[0] = 2; }\n'
            'template <class T> void host_launcher(T* x, cudaStream_t s) { c<T> <<<dim3(1, 1), 32, 0, s>>> (x); }\n'
            '__global__ void k(int* x) { if (x[0]) ::c<int><<<1, 1>>>(x); else x[1] = 1; }\n'
            '#define LAUNCH(x) \\\n    c<int><<<1, 1>>>( \\\n        x)\n'          # (over continued lines)
            'void host_macro(int* x) { LAUNCH(x); }\n')
    m = gl.load(code=code)
    x = numpy.zeros(2, dtype=numpy.int32)
    m.get("k")(1, 32, (x,))
    assert list(x) == [0, 1]
    x[0] = 1
    with pytest.raises(gl.EmulatorError, match=r"kernel k stopped .* at <code>:3: the CPU emulator does not support "
                                               r"launching kernels from a kernel \(dynamic parallelism\): <<<...>>>"):
        m.get("k")(1, 32, (x,))
    m.get("c<int>")(1, 1, (x,))
    assert x[0] == 2


def test_compile_errors_show_file_line_and_source(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x)\n{\n    x[0] = undefined_name;\n}\n")
    with pytest.raises(gl.CompileError) as info:
        gl.load(bad).get("k")
    text = str(info.value)
    assert f"{bad}:3: error" in text and "undefined_name" in text and ">    3 |     x[0] = undefined_name;" in text


@emulator_only
def test_compiled_kernels_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    entries = lambda: sorted(p.name for p in (tmp_path / "emulator").iterdir() if p.name != "pch")   # noqa: E731
    gl.load(code="__global__ void k(int* x) { x[0] = 1; }").get("k")
    first = entries()
    assert len(first) == 2 and {p.rsplit(".", 1)[1] for p in first} == {"so", "json"}   # a library and its manifest
    gl.load(code="__global__ void k(int* x) { x[0] = 1; }").get("k")
    assert entries() == first
    gl.load(code="__global__ void k(int* x) { x[0] = 2; }").get("k")
    assert len(entries()) == 4
    pch = list((tmp_path / "emulator" / "pch").iterdir())
    assert len(pch) == 1, "one precompiled runtime header for builds with the same flags"


@emulator_only
def test_the_runtime_header_is_precompiled_once_per_set_of_flags_and_a_changed_header_is_read_again(tmp_path, monkeypatch):
    """Builds with g++ take the runtime header precompiled (the manifest says so, and lists the header's files
    among what the build read); builds with other flags (inline PTX, racecheck) get their own; without it the
    header is read as text."""
    import json
    from gemmlab import _emulator
    build = _emulator.build
    if not build._is_gcc(build._compiler()):
        pytest.skip("precompiled headers are made with g++ only")
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    cache = tmp_path / "emulator"
    plain = "__global__ void k(int* x) { x[threadIdx.x] = threadIdx.x * 3; }"
    ptx = ('__global__ void k(int* x) { unsigned v; asm("mov.u32 %0, %1;" : "=r"(v) : "r"(threadIdx.x * 3)); '
           'x[threadIdx.x] = v; }')
    for code in (plain, ptx):
        x = gl.xp.zeros(32, dtype=gl.xp.int32)
        gl.load(code=code).get("k")((1,), (32,), (x,))
        assert (gl.to_host(x) == numpy.arange(32) * 3).all()
    gl.racecheck(gl.load(code=plain).get("k"), (1,), (32,), (gl.xp.zeros(32, dtype=gl.xp.int32),))
    manifests = [json.loads(p.read_text()) for p in cache.glob("*.json")]
    assert len(manifests) == 3 and all(m["precompiled"] for m in manifests)
    assert all(any(d[0].endswith("gemmlab_emu.h") for d in m["dependencies"]) for m in manifests)
    assert any(d[0].endswith("gemmlab_ptx.h") for m in manifests for d in m["dependencies"])
    assert len(list((cache / "pch").iterdir())) == 3                     # plain, inline PTX, racecheck's -O0
    # a file the precompiled header was made from that has changed since: the header is made again, not used
    for folder in (cache / "pch").iterdir():
        deps = json.loads((folder / "dependencies.json").read_text())
        deps[0][1] += 1                                               # its size, as if the file had changed
        (folder / "dependencies.json").write_text(json.dumps(deps))
    gl.load(code=plain.replace("* 3", "* 5")).get("k")
    made_again = [json.loads((f / "dependencies.json").read_text()) for f in (cache / "pch").iterdir()]
    assert sum(build._unchanged(d) for d in made_again) == 1          # the plain build's, and only it
    monkeypatch.setattr(build, "_precompiled", lambda *a: None)
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "without"))
    gl.load(code=plain).get("k")
    without = [json.loads(p.read_text()) for p in (tmp_path / "without" / "emulator").glob("*.json")]
    assert not without[0]["precompiled"] and not (tmp_path / "without" / "emulator" / "pch").exists()


@emulator_only
def test_no_compiler_says_what_to_install(monkeypatch):
    from gemmlab import _emulator
    monkeypatch.setenv("CXX", "")
    monkeypatch.setattr(_emulator.build.shutil, "which", lambda name: None)
    with pytest.raises(gl.BackendError, match="install g\\+\\+"):
        gl.load(code="__global__ void k2(int* x) { }").get("k2")


SMEM_HEADER = r'''
#pragma once
// the shared-memory forms people write in headers: dynamic (extern) and static arrays
__global__ void reverse_dynamic(const float* x, float* y, int n)
{
    extern __shared__ float buf[];
    const int i = threadIdx.x;
    if (i < n) buf[i] = x[i];
    __syncthreads();
    if (i < n) y[i] = buf[n - 1 - i];
}

__global__ void reverse_static(const float* x, float* y, int n)
{
    __shared__ float tile[64];
    const int i = threadIdx.x;
    if (i < n) tile[i] = x[i];
    __syncthreads();
    if (i < n) y[i] = tile[n - 1 - i];
}
'''


def test_shared_memory_declared_in_an_included_header(tmp_path):
    """Kernels that live in a header (or a .cu included by another) with extern __shared__ and __shared__
    arrays: they compile and run on every backend, and the emulator's memory check names the header."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "smem_kernels.cuh").write_text(SMEM_HEADER)
    (tmp_path / "wrapper.cuh").write_text('#pragma once\n#include "sub/smem_kernels.cuh"\n')
    m = gl.load(code='#include "wrapper.cuh"\n', options=(f"-I{tmp_path}",))
    x = gl.xp.asarray(numpy.arange(40, dtype=numpy.float32))
    for name, shared in (("reverse_dynamic", 40 * 4), ("reverse_static", 0)):
        y = gl.xp.zeros(40, dtype=numpy.float32)
        m.get(name)(1, 64, (x, y, 40), shared_mem=shared)
        assert gl.to_host(y).tolist() == list(range(39, -1, -1)), name
    if not gl.on_gpu:
        with pytest.raises(Exception, match=r"smem_kernels\.cuh:8: writes 4 bytes of dynamic shared memory"):
            m.get("reverse_dynamic")(1, 64, (x, gl.xp.zeros(40, dtype=numpy.float32), 40), shared_mem=16)


def test_launches_from_several_threads_give_a_streams_answer():
    """A GPU stream runs launches one after another; so does the emulator, whichever threads launch them:
    no launch undoes another's writes to the same array or to a __device__ variable."""
    if gl.on_gpu:
        pytest.skip("the emulator's launches")
    import threading
    m = gl.load(code=r'''
__device__ int counter;
__global__ void bump() { if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&counter, 1); }
__global__ void read_counter(int* out) { *out = counter; }
__global__ void fill_part(float* a, int part, float value) { a[part * 64 + threadIdx.x] = value; }
''')
    bump, read, fill = m.get("bump"), m.get("read_counter"), m.get("fill_part")
    a = numpy.zeros(64 * 8, dtype=numpy.float32)
    errors = []

    def work(i):
        try:
            bump(1, 32, ())
            fill(1, 64, (a, numpy.int32(i % 8), numpy.float32(i + 1)))
        except Exception as exc:                       # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    out = numpy.zeros(1, dtype=numpy.int32)
    read(1, 1, (out,))
    assert out[0] == 60
    parts = a.reshape(8, 64)
    assert (parts == parts[:, :1]).all() and (parts[:, 0] > 0).all()     # every part written whole by one launch
    assert sorted(int(v - 1) % 8 for v in parts[:, 0]) == list(range(8))


def test_a_cxx_that_names_no_compiler_is_an_error_not_a_fallback(monkeypatch):
    from gemmlab import _emulator
    from gemmlab.hardware import BackendError
    for missing in ("/no/such/g++", "g++-no-such-version"):
        monkeypatch.setenv("CXX", missing)
        with pytest.raises(BackendError, match=rf"CXX='{re.escape(missing)}' names no compiler on this machine"):
            _emulator._compiler()
    monkeypatch.delenv("CXX")
    assert _emulator._compiler()                                  # unset: the first compiler found


# --- a large grid's blocks in several processes ------------------------------------------------------------

BLOCKS_APART = r'''
__global__ void stencil(const float* in, float* out, int n)
{
    __shared__ float tile[258];
    const int i = blockIdx.x * blockDim.x + threadIdx.x, t = threadIdx.x + 1;
    tile[t] = i < n ? in[i] : 0.0f;
    if (threadIdx.x == 0) tile[0] = i > 0 ? in[i - 1] : 0.0f;
    if (threadIdx.x == blockDim.x - 1) tile[t + 1] = i + 1 < n ? in[i + 1] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = 0.25f * tile[t - 1] + 0.5f * tile[t] + 0.25f * tile[t + 1];
    if (threadIdx.x == 0 && blockIdx.x % 37 == 0) printf("block %d of %d\n", blockIdx.x, gridDim.x);
}

__global__ void fails_in(const int* which, float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0 && blockIdx.x % 50 == 0) printf("reached %d\n", blockIdx.x);
    if ((int)blockIdx.x == which[0] || (int)blockIdx.x == which[1]) out[n + threadIdx.x] = 1.0f;
    else if (i < n) out[i] = 2.0f;
}

template <class T> __device__ T unused_total(T* p, T v) { return atomicAdd(p, v); }   // never instantiated

__global__ void leftover(int* out, float* dynamic_out)
{
    __shared__ int s[2];
    extern __shared__ float d[];
    if (threadIdx.x == 0) {
        out[blockIdx.x] = s[1];
        dynamic_out[blockIdx.x] = d[3];
        s[1] = blockIdx.x + 1;
        d[3] = 1.0f;
    }
}
'''

ACROSS_BLOCKS = r'''
__device__ int bump(int* c) { return atomicAdd(c, 1); }
__global__ void count(int* c, int* order, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) order[i] = bump(c);
}

__global__ void flag(int* f) { f[blockIdx.x] = 1; __threadfence(); }
'''


@pytest.fixture
def apart():
    return gl.load(code=BLOCKS_APART)


def _stencil(apart, n, capfd):
    x = numpy.random.default_rng(5).standard_normal(n).astype(numpy.float32)
    y = numpy.zeros(n, dtype=numpy.float32)
    k = apart.get("stencil")
    k(((n + 255) // 256,), (256,), (x, y, numpy.int32(n)))
    return y, k.impl.last_switches, capfd.readouterr().out


@emulator_only
@pytest.mark.parametrize("workers", ["2", "3", "8"])
def test_a_large_grid_runs_in_several_processes_with_one_processes_answer(apart, capfd, monkeypatch, workers):
    """Blocks that cannot see each other (no atomics, fences, volatile memory or __device__ variables) run in
    consecutive ranges, one process each: the outputs, the switch count and the printed lines in block order are
    those of one process."""
    n = 300 * 256 + 17                               # 301 blocks: ranges of unequal length
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "1")
    one, switches, printed = _stencil(apart, n, capfd)
    assert apart.get("stencil").impl.last_processes == 1
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", workers)
    several, switches_several, printed_several = _stencil(apart, n, capfd)
    assert apart.get("stencil").impl.last_processes == int(workers)
    assert several.tobytes() == one.tobytes()
    assert switches_several == switches
    assert printed_several == printed == "".join(f"block {b} of 301\n" for b in range(0, 301, 37))
    x = numpy.random.default_rng(5).standard_normal(n).astype(numpy.float32)
    padded = numpy.concatenate([[0.0], x.astype(numpy.float64), [0.0]])
    assert numpy.allclose(several, 0.25 * padded[:-2] + 0.5 * padded[1:-1] + 0.25 * padded[2:], atol=1e-6)
    _stencil(apart, 16 * 256, capfd)                 # a small grid: not worth a second fork
    assert apart.get("stencil").impl.last_processes == 1


@emulator_only
@pytest.mark.parametrize("which, block", [((120, 250), 120), ((250, 1000), 250), ((3, 290), 3)])
def test_in_several_processes_the_first_failing_block_is_named_and_only_the_output_before_it_is_printed(
        apart, capfd, monkeypatch, which, block):
    n = 300 * 256
    outcomes = []
    for workers in ("1", "4"):
        monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", workers)
        out = numpy.zeros(n, dtype=numpy.float32)
        with pytest.raises(gl.EmulatorError) as info:
            apart.get("fails_in")((300,), (256,), (numpy.array(which, dtype=numpy.int32), out, numpy.int32(n)))
        outcomes.append((str(info.value), capfd.readouterr().out))
        assert (out == 0).all()                       # nothing written back
    assert outcomes[0] == outcomes[1]
    assert f"out-of-bounds access in block ({block},0,0), thread (0,0,0)" in outcomes[0][0]
    assert outcomes[0][1] == "".join(f"reached {b}\n" for b in range(0, block + 1, 50))


@emulator_only
def test_in_several_processes_a_hang_before_a_failure_is_the_hang(monkeypatch):
    k = gl.load(code=r'''
__global__ void k(int* x, int n)
{
    if (blockIdx.x == 1) while (x[0] == 0) { }
    if (blockIdx.x == gridDim.x - 1) x[n + threadIdx.x] = 1;
}''').get("k")
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "2")
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", "1")
    with pytest.raises(gl.EmulatorError, match=r"ran longer than 1 s .*block \(1,0,0\)"):
        k((128,), (256,), (numpy.zeros(4, dtype=numpy.int32), numpy.int32(4)))



RACES = r"""
#include <cstdio>
__global__ void chain(float* y, int n)                 // block b reads what block b - 1 writes: a race between blocks
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float before = blockIdx.x ? y[i - blockDim.x] : 0.0f;
    if (i < n) y[i] = before + 1.0f;
    if (threadIdx.x == 0 && blockIdx.x % 50 == 0) printf("block %d\n", blockIdx.x);
}
__global__ void last_wins(const int* to, float* y, int n) // many blocks write one element: which is last?
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[to[i]] = (float)i;
}
__global__ void writes_its_input(const float* x, float* y, int n)   // a const input written through a cast
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = x[(i + 256) % n]; const_cast<float*>(x)[i] = -1.0f; }
}
__global__ void histogram(float* y, int n)            // y[b % 4] += 1 in every block: a read-modify-write race
{
    if (blockIdx.x * blockDim.x + threadIdx.x < n) y[blockIdx.x % 4] += 1.0f;
}
__global__ void copies(const float* x, float* y, int n) // every block copies into y (memcpy): the last block wins
{
    if (threadIdx.x == 0) memcpy(y, x + blockIdx.x, 32 * sizeof(float));
}
__global__ void index_from_earlier(int* y, int n)     // an index another block wrote: out of bounds in one order
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (blockIdx.x == 3) y[0] = 1 << 30;
    else if (blockIdx.x == 100) y[i] = y[y[0] == 1 << 30 ? n + 5 : i];
    else y[i] = i;
}
"""


@emulator_only
@pytest.mark.parametrize("kernel", ["chain", "last_wins", "writes_its_input", "index_from_earlier", "histogram",
                                    "copies"])
def test_blocks_that_see_each_other_give_one_processs_bits_whatever_the_worker_count(capfd, monkeypatch, kernel):
    """A race between blocks (one reads or writes what another writes, even an input declared const) gives the
    answer of one process running the blocks in order, with any number of workers, every run; its printed lines
    come once, in block order, and a failure it leads to is the one that process meets."""
    m, n = gl.load(code=RACES), 200 * 256
    seen = {}
    for workers in ["1", "2", "3", "8", "2"]:
        monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", workers)
        x = numpy.arange(n, dtype=numpy.float32)
        y = numpy.zeros(n, dtype=numpy.int32 if kernel == "index_from_earlier" else numpy.float32)
        args = {"chain": (y, n), "last_wins": ((numpy.arange(n) % 1000).astype(numpy.int32), y, n),
                "writes_its_input": (x, y, n), "index_from_earlier": (y, n), "histogram": (y, n),
                "copies": (x, y, n)}[kernel]
        k = m.get(kernel)
        try:
            k((200,), (256,), args)
            outcome = (y.tobytes(), x.tobytes())
        except gl.EmulatorError as e:
            outcome = str(e)
        seen.setdefault((outcome, capfd.readouterr().out), []).append(workers)
        assert k.impl.last_processes == 1
        assert k.impl.last_rerun == (workers != "1")
    assert len(seen) == 1, seen
    (outcome, printed), = seen
    if kernel == "chain":
        assert (numpy.frombuffer(outcome[0], numpy.float32).reshape(200, 256) == numpy.arange(1, 201)[:, None]).all()
        assert printed == "block 0\nblock 50\nblock 100\nblock 150\n"
    if kernel == "index_from_earlier":
        assert "out-of-bounds access in block (100,0,0)" in outcome
    if kernel == "histogram":
        assert numpy.frombuffer(outcome[0], numpy.float32)[:4].tolist() == [50 * 256.0] * 4
    if kernel == "copies":
        assert numpy.frombuffer(outcome[0], numpy.float32)[:32].tolist() == list(range(199, 231))


@emulator_only
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_hang_prints_what_one_process_would_have_printed_by_then(capfd, monkeypatch, workers):
    """printf-debugging of a hang: the lines of the blocks before the one that hangs come out with any number of
    workers, in block order, and none of the blocks after it."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", workers)
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", "2")
    k = gl.load(code=r"""
#include <cstdio>
__global__ void k(int* x)
{
    if (threadIdx.x == 0 && blockIdx.x % 32 == 0) printf("block %d\n", blockIdx.x);
    if (blockIdx.x == 100) while (x[0] == 0) { }
}""").get("k")
    with pytest.raises(gl.EmulatorError, match=r"ran longer than 2 s .*block \(100,0,0\)"):
        k((128,), (256,), (numpy.zeros(4, dtype=numpy.int32),))
    assert capfd.readouterr().out == "block 0\nblock 32\nblock 64\nblock 96\n"


@emulator_only
def test_without_the_memory_check_a_grid_runs_in_one_process(apart, capfd, monkeypatch):
    """Without the memory check no process can say what its blocks touched, so none can share a grid."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_MEMCHECK", "0")
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "4")
    m = gl.load(code=RACES)
    y = numpy.zeros(200 * 256, dtype=numpy.float32)
    m.get("chain")((200,), (256,), (y, y.size))
    assert m.get("chain").impl.last_processes == 1
    assert (y.reshape(200, 256) == numpy.arange(1, 201)[:, None]).all()


@emulator_only
def test_code_that_reaches_across_blocks_keeps_the_grid_in_one_process(monkeypatch):
    """An atomic (here in a device function) or a fence marks its module: its launches run block after block in
    one process, so the atomics' order is the block order every run."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "4")
    m = gl.load(code=ACROSS_BLOCKS)
    n = 200 * 256
    c, order = numpy.zeros(1, dtype=numpy.int32), numpy.zeros(n, dtype=numpy.int32)
    k = m.get("count")
    k((200,), (256,), (c, order, numpy.int32(n)))
    assert k.impl.last_processes == 1
    assert not k.impl.blocks_independent and not m.get("flag").impl.blocks_independent
    assert c[0] == n and (order == numpy.arange(n)).all()
    # an atomic in a template no kernel instantiates does not mark its module
    assert gl.load(code=BLOCKS_APART).get("fails_in").impl.blocks_independent


@emulator_only
def test_a_module_with_device_variables_runs_in_one_process(monkeypatch):
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "4")
    m = gl.load(code=r'''
__device__ int last_block;
__global__ void k(float* x) { x[blockIdx.x * blockDim.x + threadIdx.x] = 1; if (threadIdx.x == 0) last_block = blockIdx.x; }''')
    x = numpy.zeros(200 * 256, dtype=numpy.float32)
    m.get("k")((200,), (256,), (x,))
    assert m.get("k").impl.last_processes == 1
    assert (x == 1).all() and int(m.get_global("last_block")) == 199


@emulator_only
@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_workers_setting_is_refused_before_anything_runs(apart, monkeypatch, value):
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", value)
    with pytest.raises(ValueError, match="GEMMLAB_EMULATOR_WORKERS"):
        apart.get("stencil")((1,), (256,), (numpy.zeros(256, dtype=numpy.float32),
                                            numpy.zeros(256, dtype=numpy.float32), numpy.int32(256)))


@emulator_only
@pytest.mark.parametrize("workers", ["1", "3"])
def test_a_block_never_finds_what_an_earlier_block_left_in_shared_memory(apart, monkeypatch, workers):
    """Every block starts from shared memory as the launch's first block finds it (static: zeros, dynamic: 0xff
    bytes, a NaN), in one process or several: a block's result does not depend on which blocks ran before it."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", workers)
    out, dyn = numpy.full(64, -1, dtype=numpy.int32), numpy.zeros(64, dtype=numpy.float32)
    k = apart.get("leftover")
    k((64,), (256,), (out, dyn), shared_mem=64)
    assert k.impl.last_processes == int(workers)
    assert (out == 0).all() and numpy.isnan(dyn).all()


@emulator_only
def test_an_error_inside_one_of_the_emulators_cuda_headers_is_named_at_the_users_line():
    """A tile of 64 threads has no shuffle (nvcc refuses it too): the error stands at the line that asks for one,
    saying which of the emulator's headers refused it, not at the header's own line number."""
    code = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n__global__ void k(int* o)\n{\n"
            "    auto t = cg::tiled_partition<64>(cg::this_thread_block());\n    o[0] = t.shfl(1, 0);\n}\n")
    with pytest.raises(gl.CompileError, match=r"<code>:6: error: static assertion failed: only tiles of at most 32 "
                                              r"threads have warp operations \(in the emulator's <cooperative_groups.h>\)"):
        gl.load(code=code).get("k")


# --- the device heap: it outlives a launch and a module, and the memory check watches its blocks ---------------

HEAP = r'''
__global__ void keep(unsigned long long* box, int n)           // a block of n ints from malloc, 0 .. n-1
{
    int* p = static_cast<int*>(malloc(n * sizeof(int)));
    for (int i = 0; i < n; ++i) p[i] = i;
    *box = reinterpret_cast<unsigned long long>(p);
}
__global__ void read_at(const unsigned long long* box, int i, int* out)
{ out[0] = reinterpret_cast<const int*>(*box)[i]; }
__global__ void write_at(const unsigned long long* box, int i) { reinterpret_cast<int*>(*box)[i] = 7; }
__global__ void release(const unsigned long long* box) { free(reinterpret_cast<void*>(*box)); }
'''
needs_memcheck = pytest.mark.skipif(
    gl.backend != "emulator" or not __import__("gemmlab")._emulator._memcheck_flags(
        __import__("gemmlab")._emulator._compiler()), reason="the emulator's memory check (g++ on x86-64 Linux)")


@emulator_only
def test_the_device_heap_is_one_for_every_module_and_outlives_launches():
    box, out = numpy.zeros(1, dtype=numpy.uint64), numpy.zeros(1, dtype=numpy.int32)
    gl.load(code=HEAP).get("keep")(1, 1, (box, 10))
    other = gl.load(code=HEAP + "\n// another module\n")
    other.get("read_at")(1, 1, (box, 9, out))
    assert out[0] == 9
    other.get("release")(1, 1, (box,))


@emulator_only
@needs_memcheck
@pytest.mark.parametrize("kernel,index,what", [
    ("read_at", 10, r"reads 4 bytes at byte 40 of a 40-byte block of the device heap \(malloc or new\): 4 bytes "
                    r"past its end"),
    ("write_at", -1, r"writes 4 bytes 4 bytes before the start of a 40-byte block of the device heap"),
])
def test_an_access_outside_a_heap_block_names_the_block(kernel, index, what):
    m = gl.load(code=HEAP)
    box = numpy.zeros(1, dtype=numpy.uint64)
    m.get("keep")(1, 1, (box, 10))
    args = (box, index, numpy.zeros(1, dtype=numpy.int32)) if kernel == "read_at" else (box, index)
    with pytest.raises(gl.EmulatorError, match=what):
        m.get(kernel)(1, 1, args)
    m.get("release")(1, 1, (box,))


@emulator_only
@needs_memcheck
def test_a_read_of_a_freed_heap_block_is_named():
    m = gl.load(code=HEAP)
    box, out = numpy.zeros(1, dtype=numpy.uint64), numpy.zeros(1, dtype=numpy.int32)
    m.get("keep")(1, 1, (box, 10))
    m.get("release")(1, 1, (box,))
    with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes of the device heap that no block holds \(a block "
                                               r"freed with free or delete"):
        m.get("read_at")(1, 1, (box, 3, out))


@emulator_only
def test_a_module_that_allocates_runs_in_one_process(monkeypatch):
    """Its blocks never run in several processes: the addresses, and which request finds the heap full, would
    depend on how they interleave."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "4")
    code = r'''
    __global__ void own_blocks(int* bad, unsigned long long* where, int words)
    {
        const int id = blockIdx.x * blockDim.x + threadIdx.x;
        int* p = static_cast<int*>(malloc(words * sizeof(int)));
        where[id] = reinterpret_cast<unsigned long long>(p);
        if (p == nullptr) { bad[id] = -1; return; }
        for (int i = 0; i < words; ++i) p[i] = id;
        __syncthreads();                                   // every thread of the block holds its block now
        int wrong = 0;
        for (int i = 0; i < words; ++i) wrong += p[i] != id;
        bad[id] = wrong;
        free(p);
    }
    '''
    k = gl.load(code=code).get("own_blocks")
    runs = []
    for _ in range(2):
        bad, where = numpy.full(128 * 256, 99, dtype=numpy.int32), numpy.zeros(128 * 256, dtype=numpy.uint64)
        k(128, 256, (bad, where, 6))
        assert (bad == 0).all(), numpy.unique(bad, return_counts=True)
        assert k.impl.last_processes == 1
        assert (where % 16 == 0).all() and numpy.unique(where).size == where.size
        runs.append(where)


HEAP_FORMS = r'''
#include <cstring>
struct alignas(64) Wide { double v[3]; };
// allocations of several alignments, sizes and forms: each in its own bytes, each aligned as asked
__global__ void many_forms(unsigned long long* where, unsigned long long* sizes, int* zero_ok)
{
    const int t = threadIdx.x;
    void* p;
    unsigned long long n;
    switch (t % 4) {
    case 0: n = 8 + 8 * t; p = malloc(n); break;
    case 1: n = sizeof(Wide) * (1 + t % 3); p = new Wide[1 + t % 3]; break;
    case 2: n = 24 + t; p = __nv_aligned_device_malloc(n, 256); break;
    default: {
        n = 4 * (t + 1);
        int* q = static_cast<int*>(malloc(n));             // malloc and then memset: GCC may make it a calloc
        if (q) std::memset(q, 0, n);
        int ok = 1;
        for (int i = 0; q && i < t + 1; ++i) ok &= q[i] == 0;
        zero_ok[t] = ok;
        p = q;
    }
    }
    where[t] = reinterpret_cast<unsigned long long>(p);
    sizes[t] = n;
    if (p) std::memset(p, 0x5a, n);                         // all of what was asked for is usable
}
__global__ void release_forms(const unsigned long long* where)
{
    const int t = threadIdx.x;
    if (t % 4 == 1) delete[] reinterpret_cast<Wide*>(where[t]);
    else free(reinterpret_cast<void*>(where[t]));
}
__global__ void two_and_past(int i, int* out)           // two blocks of 64 bytes; a read of the first's a[i]
{
    int* a = static_cast<int*>(malloc(64));
    int* b = static_cast<int*>(malloc(64));
    out[0] = a[i];
    free(a);
    free(b);
}
__global__ void free_twice(unsigned long long* out)
{
    void* p = malloc(32);
    free(p);
    out[0] = 1;
    free(p);
}
__global__ void scribble(unsigned long long* out)       // a write over the header in front of a block
{
    int* p = static_cast<int*>(malloc(64));
    p[-2] = 12345;
    out[0] = reinterpret_cast<unsigned long long>(p);
}
__global__ void release(const unsigned long long* box) { free(reinterpret_cast<void*>(box[0])); }
__global__ void allocate_once(unsigned long long* out) { out[0] = reinterpret_cast<unsigned long long>(malloc(40)); }
'''


@emulator_only
def test_allocations_of_every_form_and_alignment_get_their_own_aligned_bytes():
    m = gl.load(code=HEAP_FORMS)
    where, sizes, zero_ok = (numpy.zeros(96, dtype=numpy.uint64), numpy.zeros(96, dtype=numpy.uint64),
                             numpy.zeros(96, dtype=numpy.int32))
    m.get("many_forms")(1, 96, (where, sizes, zero_ok))
    assert (where != 0).all()
    t = numpy.arange(96)
    assert (where[t % 4 == 1] % 64 == 0).all() and (where[t % 4 == 2] % 256 == 0).all() and (where % 16 == 0).all()
    order = numpy.argsort(where)
    ends = where[order] + sizes[order]
    assert (ends[:-1] <= where[order][1:]).all()                  # no two overlap
    assert (zero_ok[t % 4 == 3] == 1).all()
    m.get("release_forms")(1, 96, (where,))                        # freed in a later launch: the same heap


@emulator_only
@needs_memcheck
def test_a_read_past_a_block_into_the_next_blocks_header_names_the_first_block():
    with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes at byte 64 of a 64-byte block of the device heap "
                                               r"\(malloc or new\): 4 bytes past its end"):
        gl.load(code=HEAP_FORMS).get("two_and_past")(1, 1, (16, numpy.zeros(1, dtype=numpy.int32)))


@emulator_only
@needs_memcheck
def test_the_memory_check_watches_the_heap_in_the_launch_that_lays_it_out_too():
    """A fresh process's first allocation lays the heap out: its bounds are checked from then on."""
    import subprocess
    import sys
    script = ("import numpy, gemmlab as gl\n"
              "m = gl.load(code=" + repr(HEAP_FORMS) + ")\n"
              "try:\n    m.get('two_and_past')(1, 1, (16, numpy.zeros(1, dtype=numpy.int32)))\n"
              "except gl.EmulatorError as e:\n    print('caught:', e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "caught:" in out.stdout and "past its end" in out.stdout, out.stdout + out.stderr


@emulator_only
def test_a_block_freed_twice_is_named():
    with pytest.raises(gl.EmulatorError, match=r"free or delete of a block of the device heap that is free already"):
        gl.load(code=HEAP_FORMS).get("free_twice")(1, 1, (numpy.zeros(1, dtype=numpy.uint64),))


@emulator_only
def test_overwritten_bookkeeping_stops_the_launch_and_clears_the_heap(monkeypatch):
    """Without the memory check a write over a block's header goes through, as on a GPU: the next walk of the heap
    finds it, says what it means, and starts the heap afresh (every object on it is gone)."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_MEMCHECK", "0")
    m = gl.load(code=HEAP_FORMS + "\n// no memory check\n")
    box = numpy.zeros(1, dtype=numpy.uint64)
    m.get("scribble")(1, 1, (box,))
    with pytest.raises(gl.EmulatorError, match=r"the device heap's bookkeeping at byte \d+ is overwritten .*has "
                                               r"been cleared"):
        m.get("release")(1, 1, (box,))
    out = numpy.zeros(1, dtype=numpy.uint64)
    m.get("allocate_once")(1, 1, (out,))
    assert out[0] != 0                              # a fresh heap


@emulator_only
def test_the_librarys_operators_new_and_delete_are_its_own():
    """Not in its dynamic symbols: an allocator in the global scope (preloaded, or another library's) cannot
    take a kernel's new."""
    import shutil
    import subprocess
    nm = shutil.which("nm")
    if nm is None or not __import__("sys").platform.startswith("linux"):
        pytest.skip("nm on Linux")
    k = gl.load(code=HEAP_FORMS).get("release_forms")
    symbols = subprocess.run([nm, "-D", "--defined-only", str(k.impl.library)], capture_output=True,
                             text=True).stdout.split()
    assert "gl_emu_set_heap" in symbols
    assert not [s for s in symbols if s.startswith(("_Znw", "_Zna", "_Zdl", "_Zda"))]
