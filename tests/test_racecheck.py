"""gl.racecheck: shared-memory races found on the CPU emulator, with both source lines."""
from __future__ import annotations

import numpy
import pytest

import gemmlab as gl
from gemmlab import _emulator, demos, registry

needs_memcheck = pytest.mark.skipif(not _emulator._memcheck_flags(_emulator._compiler()) if gl.backend == "emulator"
                                    else False, reason="racecheck needs g++ on x86-64 Linux")

RACES = r'''
__global__ void reverse(float* y, int fix)
{
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    if (fix) __syncthreads();
    y[threadIdx.x] = s[63 - threadIdx.x];
}
__global__ void warp_synchronous(float* y)                // pre-Volta style: no __syncwarp
{
    __shared__ float s[64];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x < 32) {
        volatile float* v = s;
        v[threadIdx.x] += v[threadIdx.x + 32];
        v[threadIdx.x] += v[threadIdx.x + 16];
    }
    __syncthreads();
    y[threadIdx.x] = s[0];
}
__global__ void with_syncwarp(float* y)
{
    __shared__ float s[64];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x < 32) {
        float a = s[threadIdx.x] + s[threadIdx.x + 32];
        __syncwarp();
        s[threadIdx.x] = a;
        __syncwarp();
        if (threadIdx.x < 16) a += s[threadIdx.x + 16];
        __syncwarp();
        if (threadIdx.x < 16) s[threadIdx.x] = a;
    }
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x % 16];
}
__global__ void dynamic_race(float* y, int n)
{
    extern __shared__ float d[];
    d[threadIdx.x] = threadIdx.x;
    y[threadIdx.x] = d[(threadIdx.x + 1) % n];
}
'''


@pytest.fixture(scope="module")
def races():
    return gl.load(code=RACES)


@needs_memcheck
def test_a_missing_barrier_is_two_hazards_with_both_lines(races):
    y = gl.xp.zeros(64, dtype=numpy.float32)
    report = gl.racecheck(races.get("reverse"), 1, 64, (y, 0))
    assert not report.clean and report.total == 64
    kinds = {(h.kind, h.first_line, h.second_line) for h in report.hazards}
    assert ("read-after-write", "<code>:5", "<code>:7") in kinds and ("write-after-read", "<code>:7", "<code>:5") in kinds
    assert all(h.array == "s" for h in report.hazards)
    assert "read-after-write hazard on s" in str(report) and "with no barrier between them" in str(report)
    assert not gl.to_host(y).any(), "racecheck runs on copies: the caller's arrays are untouched"
    assert gl.racecheck(races.get("reverse"), 1, 64, (y, 1)).clean


@needs_memcheck
def test_warp_synchronous_code_without_syncwarp_is_reported_and_syncwarp_makes_it_clean(races):
    y = gl.xp.zeros(64, dtype=numpy.float32)
    report = gl.racecheck(races.get("warp_synchronous"), 1, 64, (y,))
    # the warp runs its volatile accesses in lockstep (the GPU's answer), and each step's words are read by
    # one lane and written by another with no __syncwarp between: hazards, as on a GPU under racecheck
    assert report.hazards and {h.kind for h in report.hazards} <= {"write-after-read", "read-after-write"}
    assert gl.to_host(y)[0] == 0, "racecheck runs on copies"
    races.get("warp_synchronous")(1, 64, (y,))
    assert (gl.to_host(y) == 4).all(), "the GPU's sum: 1 + 1, then + (1 + 1)"
    assert {h.first_line for h in report.hazards} | {h.second_line for h in report.hazards} <= {"<code>:16", "<code>:17"}
    assert gl.racecheck(races.get("with_syncwarp"), 1, 64, (y,)).clean


@needs_memcheck
def test_dynamic_shared_memory_races_too(races):
    report = gl.racecheck(races.get("dynamic_race"), 1, 32, (gl.xp.zeros(32, dtype=numpy.float32), 32), shared_mem=128)
    assert not report.clean and report.hazards[0].array == "dynamic shared memory"


@needs_memcheck
@pytest.mark.parametrize("barrier", [1, 2])
def test_chapter_2s_missing_barriers_are_caught(barrier):
    m, n, k = 40, 36, 50
    rng = numpy.random.default_rng(0)
    A, B = (rng.standard_normal(s).astype(numpy.float32) for s in ((m, k), (k, n)))
    C = numpy.zeros((m, n), dtype=numpy.float32)
    kernel = demos.without_barrier(barrier, "emulator").get("sgemm_shared_tiling<16>")
    report = gl.racecheck(kernel, (3, 3), (16, 16), (A, B, C, m, n, k))
    assert {h.array for h in report.hazards} == {"As", "Bs"}
    assert {h.kind for h in report.hazards} == {"read-after-write", "write-after-read"}


@needs_memcheck
@pytest.mark.parametrize("key", [v.key for v in registry.VARIANTS])
def test_every_registry_kernel_is_race_free(key):
    v = registry.get(key)
    problems = sorted(v.awkward(), key=lambda p: p.flops)
    problem = problems[len(problems) // 2]
    params = v.resolve()
    grid, block, shared = v.launch(problem, params)
    inputs, out = problem.inputs(numpy.random.default_rng(0)), problem.output()
    if v.prepare is not None:
        v.prepare(problem, params, inputs, out)
    extra = tuple(v.workspace(problem, params)) if v.workspace is not None else ()
    report = gl.racecheck(v.kernel(problem, **params), grid, block, v.args(problem, inputs, out) + extra,
                          shared_mem=shared)
    assert report.clean, str(report)


@needs_memcheck
def test_the_racecheck_setting_makes_every_hazard_an_error(monkeypatch, tmp_path):
    if gl.backend != "emulator":
        pytest.skip("an emulator setting")
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GEMMLAB_EMULATOR_RACECHECK", "1")
    k = gl.load(code=RACES).get("reverse")
    with pytest.raises(gl.EmulatorError, match=r"racecheck found 64 hazards"):
        k(1, 64, (numpy.zeros(64, dtype=numpy.float32), 0))
    y = numpy.zeros(64, dtype=numpy.float32)
    k(1, 64, (y, 1))
    assert (y == numpy.arange(63, -1, -1)).all()
    monkeypatch.setenv("GEMMLAB_EMULATOR_RACECHECK", "maybe")
    with pytest.raises(ValueError, match="GEMMLAB_EMULATOR_RACECHECK='maybe' must be 0"):
        gl.load(code=RACES + "\n").get("reverse")


def test_racecheck_wants_a_kernel():
    with pytest.raises(ValueError, match="racecheck takes a kernel"):
        gl.racecheck(lambda: None, 1, 1, ())


def test_the_sanitizer_records_launched_every_configuration_of_every_variant_clean():
    """``python -m gemmlab sanitize --record`` launches each variant's covering configurations at each of its
    problems (``sanitize.problems``: every precision; tensor-core kernels also deep) under every tool. Every GPU's
    record must be clean in every tool, a record that counts per variant (a part put in with --only) must count
    what the registry asks for now, and a record from before per-variant counts (the H200's, of the whole registry
    of its day) must have launched all the rest: a variant added since the records makes this fail until it is
    recorded."""
    from gemmlab import record, sanitize
    from gemmlab.paths import RESULTS
    want = sanitize.configurations()
    covered, whole = {}, []
    names = sorted(p.stem for p in RESULTS.glob("sanitizer-*.json"))
    assert names
    for name in names:
        data = record.load(name)
        assert set(data["tools"]) == set(sanitize.TOOLS) and data.get("pool") == "off", name
        for tool, t in data["tools"].items():
            assert t["clean"] and t["exit_code"] == 0, (name, tool, t["summary"])
        if "variants" in data:
            assert all(t["configurations"] == sum(data["variants"].values()) for t in data["tools"].values()), name
            for key, n in data["variants"].items():
                assert n == want[key], (name, key, n, want[key])
            covered.update(data["variants"])
        else:
            whole.append(data)
    rest = sum(n for key, n in want.items() if key not in covered)
    for data in whole:
        assert all(t["configurations"] == rest for t in data["tools"].values()), (data["environment"]["gpu"], rest)
    assert whole or set(covered) == set(want)


def _sanitizer_run(only, variants, clean=True, date="2026-12-01T00:00:00Z"):
    tools = {t: {"clean": clean, "exit_code": 0 if clean else 1, "summary": [f"{t}: 0 errors"],
                 "configurations": sum(variants.values())} for t in ("memcheck", "racecheck")}
    return {"environment": {"gpu": "a GPU", "date": date}, "tools": tools, "variants": variants, "only": list(only),
            "sanitizer": "2026.1", "pool": "off", "problems": "", "command": "python -m gemmlab sanitize --record"}


def test_a_part_of_the_registry_sanitized_replaces_only_its_own_variants():
    from gemmlab import sanitize
    old = _sanitizer_run((), {"a/1": 3, "tc/13": 2})
    new = _sanitizer_run(("tc/13",), {"tc/13": 6}, date="2026-12-07T00:00:00Z")
    got = sanitize.merged(new, old)
    assert got["variants"] == {"a/1": 3, "tc/13": 6} and got["only"] == []
    assert all(t["clean"] and t["configurations"] == 9 for t in got["tools"].values())
    assert [r["date"] for r in got["runs"]][0] == "2026-12-01T00:00:00Z" and len(got["runs"]) == 2
    dirty = sanitize.merged(_sanitizer_run(("tc/13",), {"tc/13": 6}, clean=False), old)
    assert not any(t["clean"] for t in dirty["tools"].values())
    assert all(t["configurations"] == 0 and t["exit_code"] == 1 for t in dirty["tools"].values())
    assert sanitize.merged(old, new) is old                     # a whole run replaces the record
    assert sanitize.merged(new, None) is new
    legacy = {k: v for k, v in old.items() if k != "variants"}
    with pytest.raises(ValueError, match="whole registry"):
        sanitize.merged(new, legacy)


def test_sanitize_refuses_a_prefix_that_names_no_variant():
    from gemmlab import sanitize
    with pytest.raises(ValueError, match="'nope/'"):
        sanitize.configurations(("nope/",))
    assert set(sanitize.configurations(("tc/12",))) == {"tc/12_pingpong"}


GLOBAL_LANES = r'''
__global__ void neighbours(float* buf, float* out)          // lanes read what their neighbours just stored
{
    const int i = threadIdx.x;
    buf[i] = i * 2.0f;
    out[i] = buf[(i + 1) % 32 + (i & ~31)];
}
__global__ void neighbours_synced(float* buf, float* out)
{
    const int i = threadIdx.x;
    buf[i] = i * 2.0f;
    __syncwarp();
    out[i] = buf[(i + 1) % 32 + (i & ~31)];
}
__global__ void own_words(float* buf, float* out)          // each lane its own word: nothing shared
{
    const int i = threadIdx.x;
    buf[i] = i * 2.0f;
    buf[i] += 1.0f;
    out[i] = buf[i];
}
__global__ void across_blocks(float* buf, float* out)      // block 1 reads what block 0 wrote: not followed
{
    if (blockIdx.x == 0) buf[threadIdx.x] = 1.0f;
    else out[threadIdx.x] = buf[(threadIdx.x + 1) % 32];
}
'''


@needs_memcheck
def test_lanes_of_a_warp_that_read_each_others_global_writes_are_a_hazard_and_syncwarp_makes_them_clean():
    m = gl.load(code=GLOBAL_LANES)
    buf, out = numpy.zeros(64, dtype=numpy.float32), numpy.zeros(64, dtype=numpy.float32)
    report = gl.racecheck(m.get("neighbours"), 1, 64, (buf, out))
    assert not report.clean and {h.kind for h in report.hazards} == {"read-after-write"}
    h = report.hazards[0]
    assert h.array == "argument 0 ('buf')" and h.memory == "global" and 0 <= h.offset < 64 * 4 and h.bytes == 4
    assert (h.first_line, h.second_line) == ("<code>:5", "<code>:6")
    assert h.first_thread[0] // 32 == h.second_thread[0] // 32, "two lanes of one warp"
    assert "no __syncwarp (two lanes of one warp) between them" in str(report)
    assert report.total == 64                      # every lane's read, in both warps
    for name in ("neighbours_synced", "own_words"):
        assert gl.racecheck(m.get(name), 1, 64, (buf, out)).clean, name
    assert gl.racecheck(m.get("across_blocks"), 2, 32, (buf, out)).clean
    assert str(gl.racecheck(m.get("own_words"), 1, 64, (buf, out))).endswith("no hazards (shared memory, and global "
                                                                            "memory between the lanes of a warp)")


def test_every_problem_the_sanitizer_launches_is_one_its_variant_takes():
    """A problem the variant refuses would stop the sanitized process at that launch and record nothing: every
    problem of ``sanitize.problems`` must pass the variant's own refusal rules (N and K multiples of 8 for the
    TMA kernels, say), for every configuration it is launched with."""
    from gemmlab import registry, sanitize
    for v in registry.VARIANTS:
        for p in sanitize.problems(v):
            for c in v.covering():
                assert v.refuse is None or not v.refuse(p, v.resolve(**c)), (v.key, p, c, v.refuse(p, v.resolve(**c)))


# What compute-sanitizer's racecheck reports on the H200 for the same code (`compute-sanitizer --tool
# racecheck`; the values come from a parameter, so that the compiler cannot fold the shared variable away): a
# write after a write is a hazard only when it changes the word, and threads that write their own bytes of one
# word do not race. A read and a write are reported whatever the values (there, warp 1 stored the same 5 before
# warp 0 read it in one run of two, and that was reported; here warp 0 reads first, a write-after-read).
VALUES = r"""
#include <cuda_fp16.h>
__global__ void same_flag(int* out, int v)          // every lane of a warp sets one flag to the same value
{
    __shared__ int flag;
    if (threadIdx.x < 32) flag = v;
    __syncthreads();
    out[threadIdx.x] = flag;
}
__global__ void lane_flag(int* out)                 // ... to its own lane number: the last one wins
{
    __shared__ int flag;
    if (threadIdx.x < 32) flag = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = flag;
}
__global__ void warps_same_flag(int* out, int v)    // every thread of two warps, the same value
{
    __shared__ int flag;
    flag = v;
    __syncthreads();
    out[threadIdx.x] = flag;
}
__global__ void warps_own_flag(int* out)            // two warps, two values
{
    __shared__ int flag;
    flag = threadIdx.x / 32;
    __syncthreads();
    out[threadIdx.x] = flag;
}
__global__ void same_byte(int* out, int v)          // two warps store the same value in one byte
{
    __shared__ unsigned char b[4];
    if (threadIdx.x < 4) b[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0 || threadIdx.x == 32) b[1] = v;
    __syncthreads();
    out[threadIdx.x] = b[threadIdx.x & 3];
}
__global__ void rewrite_after_read(int* out, int v) // warp 1 stores v where warp 0 reads a 5
{
    __shared__ int s;
    if (threadIdx.x == 0) s = 5;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = s;
    if (threadIdx.x == 32) s = v;
}
__global__ void halves(const float* in, float* out) // each thread its own half of a shared word
{
    __shared__ __half h[64];
    h[threadIdx.x] = __float2half(in[threadIdx.x]);
    __syncthreads();
    out[threadIdx.x] = __half2float(h[63 - threadIdx.x]);
}
__global__ void bytes_no_barrier(int* out)          // each thread its own byte, read by a neighbour: a race
{
    __shared__ unsigned char b[8];
    if (threadIdx.x < 8) b[threadIdx.x] = threadIdx.x + 1;
    out[threadIdx.x] = b[(threadIdx.x + 1) & 7];
}
"""


@needs_memcheck
def test_a_write_of_the_value_already_there_is_no_hazard_and_threads_own_bytes_of_a_word_do_not_race():
    m = gl.load(code=VALUES)
    out = numpy.zeros(64, dtype=numpy.int32)

    def check(name, *args):
        return gl.racecheck(m.get(name), 1, 64, args)

    for name in ("same_flag", "warps_same_flag", "same_byte"):
        assert check(name, out, 7).clean, name
    report = check("lane_flag", out)
    assert {h.kind for h in report.hazards} == {"write-after-write"} and report.total == 31
    report = check("warps_own_flag", out)
    assert {h.kind for h in report.hazards} == {"write-after-write"} and report.total == 1
    assert report.hazards[0].first_thread[0] // 32 != report.hazards[0].second_thread[0] // 32
    for value in (5, 6):                           # the same value or another: a read and a write race
        report = check("rewrite_after_read", out, value)
        assert [h.kind for h in report.hazards] == ["write-after-read"] and report.total == 1, value
    x, y = numpy.arange(64, dtype=numpy.float32), numpy.zeros(64, dtype=numpy.float32)
    assert check("halves", x, y).clean
    report = check("bytes_no_barrier", out)
    assert {h.kind for h in report.hazards} == {"read-after-write", "write-after-read"}, str(report)
    assert all(h.bytes == 1 for h in report.hazards)


CLUSTER_RACE = r'''
// a cluster of two: rank 1 reverses its shared array without a barrier between the write and the read (a
// hazard in block (1,0,0) only); both blocks sync as a cluster, and rank 0's copy is barrier-ordered
__global__ void __cluster_dims__(2, 1, 1) reverse_in_rank_one(float* out)
{
    __shared__ float s[64];
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    s[threadIdx.x] = threadIdx.x;
    if (rank == 0) __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
    asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
'''


@needs_memcheck
def test_racecheck_follows_each_block_of_a_cluster_in_its_own_shared_memory():
    """Each block of a cluster runs with its own shared memory, and racecheck with it: the race of rank 1 is
    reported in block (1,0,0) of each cluster, never in rank 0's, whose accesses are ordered by its barrier."""
    if gl.backend != "emulator":
        pytest.skip("the emulator's racecheck")
    kernel = gl.load(code=CLUSTER_RACE, options=("-arch=sm_90a",)).get("reverse_in_rank_one")
    out = numpy.zeros(4 * 64, dtype=numpy.float32)
    report = gl.racecheck(kernel, (4,), (64,), (out,))
    assert report.hazards and {h.block for h in report.hazards} <= {(1, 0, 0), (3, 0, 0)}
    assert {h.kind for h in report.hazards} <= {"read-after-write", "write-after-read"}
