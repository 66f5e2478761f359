"""Inline PTX that the emulator runs from the asm statement itself (lib/gemmlab/emulator/gemmlab_ptx.h).

The kernels below write mma.sync and ldmatrix as the book's kernels do, with each lane's fragments placed as the
PTX ISA lays them out. On a GPU the tests check that reading of the ISA (and the expected values); on the emulator
the same expectations check the emulator. The faults at the end are the emulator's own messages.
"""
from __future__ import annotations

import numpy
import pytest

import gemmlab as gl
from gemmlab import ops

xp = gl.xp
f32, f64 = numpy.float32, numpy.float64
emulator_only = pytest.mark.skipif(gl.on_gpu, reason="the emulator's own messages")
needs_sm80 = pytest.mark.skipif(gl.on_gpu and gl.profiles.current().capability < (8, 0),
                                reason="mma.sync with BF16 or TF32 operands and ldmatrix need compute capability 8.0")

MMA = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// one warp: D (16 x 8, FP32, row-major) = A (16 x K, row-major) B (K x 8, row-major) + C, K = 16 (16-bit
// operands, two a register) or 8 (TF32, one a register); group g = lane / 4, t = lane % 4
template <int PREC>
__device__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    if (PREC == 0)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else if (PREC == 1)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A, B as 16-bit bits (PREC 0, 1) or FP32 bits (2); C, D floats
template <int PREC>
__global__ void one_tile(const unsigned short* a16, const unsigned short* b16, const unsigned* a32, const unsigned* b32,
                         const float* c, float* d)
{
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    unsigned a[4], b[2];
    if (PREC < 2) {                                 // two 16-bit values a register, the lower column low
        auto pair = [&](const unsigned short* m, int ld, int r, int col) {
            return (unsigned)m[r * ld + col] | ((unsigned)m[r * ld + col + 1] << 16);
        };
        a[0] = pair(a16, 16, g, 2 * t);
        a[1] = pair(a16, 16, g + 8, 2 * t);
        a[2] = pair(a16, 16, g, 2 * t + 8);
        a[3] = pair(a16, 16, g + 8, 2 * t + 8);
        // B (16 x 8 row-major): b0 holds rows 2t, 2t + 1 of column g; b1 rows 2t + 8, 2t + 9
        b[0] = (unsigned)b16[(2 * t) * 8 + g] | ((unsigned)b16[(2 * t + 1) * 8 + g] << 16);
        b[1] = (unsigned)b16[(2 * t + 8) * 8 + g] | ((unsigned)b16[(2 * t + 9) * 8 + g] << 16);
    } else {
        a[0] = a32[g * 8 + t];
        a[1] = a32[(g + 8) * 8 + t];
        a[2] = a32[g * 8 + t + 4];
        a[3] = a32[(g + 8) * 8 + t + 4];
        b[0] = b32[t * 8 + g];
        b[1] = b32[(t + 4) * 8 + g];
    }
    float acc[4] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1], c[(g + 8) * 8 + 2 * t], c[(g + 8) * 8 + 2 * t + 1]};
    mma<PREC>(acc, a, b);
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
    d[(g + 8) * 8 + 2 * t] = acc[2];
    d[(g + 8) * 8 + 2 * t + 1] = acc[3];
}
'''


@pytest.fixture(scope="module")
def mma():
    return gl.load(code=MMA)


@pytest.mark.parametrize("prec,name", [(0, "fp16"), (1, "bf16"), (2, "tf32")])
def test_mma_sync_multiplies_fragments_laid_out_as_the_isa_gives_them(mma, prec, name):
    if prec and gl.on_gpu and gl.profiles.current().capability < (8, 0):
        pytest.skip("BF16 and TF32 mma.sync need compute capability 8.0")
    r = numpy.random.default_rng(prec)
    K = 8 if prec == 2 else 16
    A, B, C = r.standard_normal((16, K)), r.standard_normal((K, 8)), r.standard_normal((16, 8)).astype(f32)
    z16, z32 = numpy.zeros(1, numpy.uint16), numpy.zeros(1, numpy.uint32)
    if prec == 0:
        a, b = A.astype(numpy.float16), B.astype(numpy.float16)
        args, (Av, Bv) = (a.view(numpy.uint16), b.view(numpy.uint16), z32, z32), (a.astype(f64), b.astype(f64))
    elif prec == 1:
        a, b = ops.to_bf16_bits(A.astype(f32)), ops.to_bf16_bits(B.astype(f32))
        args, (Av, Bv) = (a, b, z32, z32), (ops.from_bf16_bits(a).astype(f64), ops.from_bf16_bits(b).astype(f64))
    else:
        a, b = ops.tf32_round(A.astype(f32)), ops.tf32_round(B.astype(f32))     # exact in TF32: no truncation
        args, (Av, Bv) = (z16, z16, a.view(numpy.uint32), b.view(numpy.uint32)), (a.astype(f64), b.astype(f64))
    d = xp.zeros((16, 8), dtype=f32)
    mma.get(f"one_tile<{prec}>")(1, 32, tuple(xp.asarray(x) for x in args) + (xp.asarray(C), d))
    want = Av @ Bv + C
    bound = 2 ** -22 * (numpy.abs(Av) @ numpy.abs(Bv) + numpy.abs(C))     # FP32 sums of exact products
    err = numpy.abs(gl.to_host(d) - want)
    assert (err <= bound).all(), (name, err.max(), bound.min())


LDMATRIX = r'''
// x 8 x 8 matrices of 16-bit values in shared memory (matrix i at rows 8i .. 8i + 7 of a 32 x 8 array); lane
// 8i + r gives the address of row r of matrix i; every lane stores its x registers
template <int X, bool TRANS>
__global__ void load_matrices(const unsigned short* m, unsigned* out)
{
    __shared__ __align__(16) unsigned short s[32][8];
    const int lane = threadIdx.x;
    for (int e = lane; e < 32 * 8; e += 32) s[e / 8][e % 8] = m[e];
    __syncwarp();
    const unsigned row = static_cast<unsigned>(__cvta_generic_to_shared(&s[lane % (8 * X)][0]));
    unsigned r[4] = {0, 0, 0, 0};
    if (X == 1 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(row));
    if (X == 1 && TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(row));
    if (X == 2 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(row));
    if (X == 2 && TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(row));
    if (X == 4 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared::cta.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(row));
    if (X == 4 && TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(row));
    for (int i = 0; i < 4; ++i) out[lane * 4 + i] = r[i];
}
'''


@needs_sm80
@pytest.mark.parametrize("x", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_gives_each_lane_its_pairs_of_each_matrix(x, trans):
    m = numpy.arange(32 * 8, dtype=numpy.uint16) * 7 + 3
    out = xp.zeros(32 * 4, dtype=numpy.uint32)
    gl.load(code=LDMATRIX).get(f"load_matrices<{x}, {str(trans).lower()}>")(1, 32, (xp.asarray(m), out))
    got = gl.to_host(out).reshape(32, 4)
    mats = m.reshape(4, 8, 8).astype(numpy.uint32)
    for lane in range(32):
        for i in range(4):
            if i >= x:
                assert got[lane, i] == 0
                continue
            a, b = lane // 4, 2 * (lane % 4)
            lo, hi = (mats[i, b, a], mats[i, b + 1, a]) if trans else (mats[i, a, b], mats[i, a, b + 1])
            assert got[lane, i] == lo | (hi << 16), (lane, i)


# --- what the emulator says where a GPU would misbehave ------------------------------------------------------

FAULTS = r'''
__global__ void misaligned(unsigned* out)
{
    __shared__ __align__(16) unsigned short s[8 * 8 + 8];
    for (int e = threadIdx.x; e < 72; e += 32) s[e] = e;
    __syncwarp();
    const unsigned row = static_cast<unsigned>(__cvta_generic_to_shared(&s[1 + 8 * (threadIdx.x % 8)]));
    unsigned r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(row));
    out[threadIdx.x] = r;
}
__global__ void half_a_warp(float* out)              // a block of 48 threads: its second warp is 16 lanes
{
    float d[4] = {0, 0, 0, 0};
    const unsigned a = 0x3c003c00u, b = 0x3c003c00u;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, "
                 "{%0,%1,%2,%3};\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a), "r"(b));
    out[threadIdx.x] = d[0];
}
__global__ void one_lane_leaves(float* out)
{
    if (threadIdx.x == 5) return;
    float d[4] = {0, 0, 0, 0};
    const unsigned a = 0x3c003c00u, b = 0x3c003c00u;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, "
                 "{%0,%1,%2,%3};\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a), "r"(b));
    out[threadIdx.x] = d[0];
}
__global__ void other_ptx(float* x) { asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%0,%0,%0}, "
    "{%1,%1,%1,%1}, {%1,%1}, {%0,%0,%0,%0};\nadd.f32 %0, %0, %0;\n" : "+f"(x[0]) : "r"(0u)); }
__global__ void all_ones(float* out)                 // ones times ones, k = 16: every element of D is 16
{
    float d[4] = {0, 0, 0, 0};
    const unsigned one2 = 0x3c003c00u;                // two FP16 ones
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%4,%4}, "
                 "{%0,%1,%2,%3};\n" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(one2));
    for (int i = 0; i < 4; ++i) out[4 * threadIdx.x + i] = d[i];
}
'''


def test_an_operand_used_twice_and_a_constant_register_everywhere():
    out = xp.zeros(128, dtype=f32)
    gl.load(code=FAULTS).get("all_ones")(1, 32, (out,))
    assert (gl.to_host(out) == 16).all()


@emulator_only
def test_a_misaligned_ldmatrix_row_is_named():
    with pytest.raises(gl.EmulatorError, match=r"inline PTX at .*: an ldmatrix row address that is not 16-byte "
                                               r"aligned"):
        gl.load(code=FAULTS).get("misaligned")(1, 32, (numpy.zeros(32, dtype=numpy.uint32),))


@emulator_only
def test_a_warp_instruction_in_a_warp_of_fewer_than_32_threads_is_named():
    with pytest.raises(gl.EmulatorError, match=r"a warp instruction \(.sync.aligned\) in a warp of fewer than 32 "
                                               r"threads"):
        gl.load(code=FAULTS).get("half_a_warp")(1, 48, (numpy.zeros(48, dtype=f32),))


@emulator_only
def test_a_lane_that_left_before_a_warp_instruction_is_named():
    with pytest.raises(gl.EmulatorError, match=r"a warp's inline PTX instruction \(mma.sync, ldmatrix\) .* lane 5 "
                                               r".*has exited"):
        gl.load(code=FAULTS).get("one_lane_leaves")(1, 32, (numpy.zeros(32, dtype=f32),))


@emulator_only
def test_a_statement_with_an_instruction_the_emulator_does_not_run_stops_by_its_name():
    with pytest.raises(gl.EmulatorError, match=r"does not support inline PTX assembly \(asm\): asm\(\"mma.sync"):
        gl.load(code=FAULTS).get("other_ptx")(1, 32, (numpy.zeros(1, dtype=f32),))


@emulator_only
def test_the_emulator_runs_the_ptx_as_written():
    """The text decides: the same kernel with `.trans` taken out of its PTX string loads untransposed."""
    edited = LDMATRIX.replace("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                              "ldmatrix.sync.aligned.m8n8.x2.shared.b16")
    m = numpy.arange(32 * 8, dtype=numpy.uint16)
    outs = []
    for code in (LDMATRIX, edited):
        out = numpy.zeros(128, dtype=numpy.uint32)
        gl.load(code=code).get("load_matrices<2, true>")(1, 32, (m, out))
        outs.append(out)
    plain = numpy.zeros(128, dtype=numpy.uint32)
    gl.load(code=LDMATRIX).get("load_matrices<2, false>")(1, 32, (m, plain))
    assert (outs[1] == plain).all() and (outs[0] != plain).any()


@emulator_only
def test_ptx_in_a_macro_with_its_type_pasted_in_runs():
    code = r'''
    #define MMA16(TYPE, d, a, b)                                                                     \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, " \
                     "{%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};\n"                                    \
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a), "r"(b))
    __global__ void both(float* out)
    {
        float h[4] = {0, 0, 0, 0}, z[4] = {0, 0, 0, 0};
        MMA16("f16", h, 0x40004000u, 0x3c003c00u);   // FP16 2 x 1, sixteen times: 32
        MMA16("bf16", z, 0x40004000u, 0x3f803f80u);  // BF16 2 x 1, sixteen times: 32
        out[threadIdx.x] = h[0] + 1000 * z[3];
    }
    '''
    out = numpy.zeros(32, dtype=f32)
    gl.load(code=code).get("both")(1, 32, (out,))
    assert (out == 32 + 32000).all()


# ---- Hopper: mbarriers, named barriers, ld/st, TMA copies (sm_90a) ------------------------------------------------
needs_memcheck = pytest.mark.skipif(
    gl.backend != "emulator" or not __import__("gemmlab")._emulator._memcheck_flags(
        __import__("gemmlab")._emulator._compiler()), reason="the emulator's memory check (g++ on x86-64 Linux)")
needs_sm90 = pytest.mark.skipif(gl.on_gpu and gl.profiles.current().capability < (9, 0),
                                reason="mbarriers with transaction counts and TMA copies need compute capability 9.0")
SM90 = ("-arch=sm_90a",)

HOPPER = r'''
#include "common/hopper.cuh"
using namespace gl_hopper;

// two warps hand a box of 32 values back and forth through two mbarriers, round after round: the producer waits
// until the consumer has read the last round's values (empty), the consumer until the next ones are written (full)
__global__ void ping_pong(float* out, int rounds)
{
    __shared__ float box[32];
    __shared__ unsigned long long full, empty;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (threadIdx.x == 0) {
        bar_init(smem(&full), 32);
        bar_init(smem(&empty), 32);
    }
    __syncthreads();
    for (int r = 0; r < rounds; ++r) {
        if (warp == 0) {
            if (r > 0) bar_wait(smem(&empty), (r - 1) & 1);
            box[lane] = 100.0f * r + lane;
            bar_arrive(smem(&full));
        } else {
            bar_wait(smem(&full), r & 1);
            out[32 * r + lane] = 2.0f * box[lane];
            bar_arrive(smem(&empty));
        }
    }
}

// warps 0-1 write and arrive on named barrier 1 (128 threads), warps 2-3 wait on it and read
__global__ void hand_over(float* out)
{
    __shared__ float v[64];
    const int t = threadIdx.x;
    if (t < 64) {
        v[t] = 3.0f * t;
        named_arrive(1, 128);
    } else {
        named_sync(1, 128);
        out[t - 64] = v[127 - t];
    }
}

// vector loads and stores in PTX: four floats a thread from global memory into shared memory in reversed groups,
// two a thread back out
__global__ void vectors(const float* in, float* out)
{
    __shared__ __align__(16) float s[128];
    const unsigned t = threadIdx.x;
    float a, b, c, d, x, y;
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "l"(in + 4 * t));
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(smem(s + 4 * (31 - t))), "f"(a), "f"(b), "f"(c),
                 "f"(d) : "memory");
    __syncthreads();
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "r"(smem(s + 2 * t)));
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(out + 2 * t), "f"(x), "f"(y) : "memory");
}

// one TMA load of the 128 x 64 FP16 box at (c0, c1) into 1024-aligned shared memory; the raw bytes, as the copy
// swizzled them, go to out
__global__ void tma_box(const __grid_constant__ TensorMap map, unsigned short* out, int c0, int c1, int extra)
{
    __shared__ __align__(1024) unsigned short tile[128 * 64];
    __shared__ unsigned long long full;
    if (threadIdx.x == 0) {
        bar_init(smem(&full), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        bar_expect_bytes(smem(&full), 128 * 64 * 2 + extra);
        tma_load(smem(tile), &map, c0, c1, smem(&full));
    }
    out[threadIdx.x] = 0;                    // (a store to global memory before the wait: the copy's reads of
    bar_wait(smem(&full), 0);                // the matrix are the copy engine's, not this warp's next load)
    for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) out[i] = tile[i];
}

// a TMA store (or reduce-add) of a 32 x 64 FP32 box written by the block's threads, at (c0, c1)
template <bool ADD>
__global__ void tma_out(const __grid_constant__ TensorMap map, int c0, int c1)
{
    __shared__ __align__(1024) float tile[32 * 64];
    for (int i = threadIdx.x; i < 32 * 64; i += blockDim.x) {
        const int r = i / 32, c = i % 32;                  // 128-byte rows: chunk c / 4 swizzled with r % 8
        tile[r * 32 + ((((c / 4) ^ (r % 8)) * 4) | (c % 4))] = 1000.0f * r + c;
    }
    fence_proxy_async();
    __syncthreads();
    if (threadIdx.x == 0) {
        if (ADD) asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group "
                              "[%0, {%1, %2}], [%3];\n"
                              ::"l"(&map), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        else tma_store(&map, c0, c1, smem(tile));
        bulk_commit();
        bulk_wait<0>();
    }
}
'''


@pytest.fixture(scope="module")
def hopper():
    return gl.load(code=HOPPER, options=SM90)


@needs_sm90
def test_two_warps_hand_values_through_mbarrier_phases(hopper):
    rounds = 5
    out = xp.zeros(32 * rounds, dtype=f32)
    hopper.get("ping_pong")(1, 64, (out, numpy.int32(rounds)))
    want = 2 * (100 * numpy.arange(rounds)[:, None] + numpy.arange(32)[None, :])
    assert (gl.to_host(out).reshape(rounds, 32) == want).all()


@needs_sm90
def test_a_named_barrier_orders_two_warps_writes_before_two_others_reads(hopper):
    out = xp.zeros(64, dtype=f32)
    hopper.get("hand_over")(1, 128, (out,))
    assert (gl.to_host(out) == 3 * (63 - numpy.arange(64))).all()


@needs_sm90
def test_vector_loads_and_stores_in_ptx(hopper):
    x = numpy.arange(128, dtype=f32) + 0.5
    out = xp.zeros(64, dtype=f32)
    hopper.get("vectors")(1, 32, (xp.asarray(x), out))
    i = numpy.arange(64)
    assert (gl.to_host(out) == x[4 * (31 - i // 4) + i % 4]).all()


def _swizzled_128(box: numpy.ndarray) -> numpy.ndarray:
    """A box of 128-byte rows as a 128-byte swizzle lays it out from a 1024-byte aligned address: 16-byte chunk j
    of row r where gl.pictures.swizzle128_chunk says (chapter 15's picture: j ^ (r % 8)), so that every TMA test
    here also holds the picture to what the copy writes."""
    from gemmlab import pictures
    rows = box.shape[0]
    chunks = box.reshape(rows, 8, -1)
    out = numpy.empty_like(chunks)
    for r in range(rows):
        out[r, [pictures.swizzle128_chunk(r, j) for j in range(8)]] = chunks[r]
    return out.reshape(box.shape)


@needs_sm90
@pytest.mark.parametrize("c0, c1", [(0, 0), (32, 50), (-16, -3)])
def test_a_tma_load_swizzles_its_box_and_fills_zeros_outside_the_matrix(hopper, c0, c1):
    from gemmlab.runtime import tma
    rows, cols = 100, 72                                 # (rows of 144 bytes: a multiple of 16)
    a = (numpy.arange(rows * cols) % 4093).astype(numpy.float16).reshape(rows, cols)
    A = xp.asarray(a)
    out = xp.zeros(128 * 64, dtype=numpy.uint16)
    hopper.get("tma_box")(1, 128, (tma.tensor_map(A, "fp16", 128, 64), out, numpy.int32(c0), numpy.int32(c1),
                                   numpy.int32(0)))
    box = numpy.zeros((128, 64), dtype=numpy.float16)
    r0, r1, k0, k1 = max(c1, 0), min(c1 + 128, rows), max(c0, 0), min(c0 + 64, cols)
    box[r0 - c1:r1 - c1, k0 - c0:k1 - c0] = a[r0:r1, k0:k1]
    assert (gl.to_host(out).reshape(128, 64) == _swizzled_128(box.view(numpy.uint16))).all()


@needs_sm90
@pytest.mark.parametrize("add", [False, True])
def test_a_tma_store_or_reduction_writes_only_inside_the_matrix(hopper, add):
    from gemmlab.runtime import tma
    rows, cols, c0, c1 = 40, 52, 20, 17                  # the box (32 x 64 at column 20, row 17) crosses both edges
    start = numpy.full((rows, cols), 0.25, dtype=f32)
    C = xp.asarray(start)
    hopper.get(f"tma_out<{'true' if add else 'false'}>")(1, 128, (tma.tensor_map(C, "fp32", 64, 32, cols=cols),
                                                                  numpy.int32(c0), numpy.int32(c1)))
    want = start.copy()
    r, c = numpy.meshgrid(numpy.arange(c1, rows), numpy.arange(c0, cols), indexing="ij")
    box = 1000.0 * (r - c1) + (c - c0)
    want[c1:, c0:] = box + (0.25 if add else 0)
    assert (gl.to_host(C) == want).all()


@emulator_only
def test_an_expect_tx_the_copies_never_meet_is_a_deadlock_naming_the_barrier_and_its_bytes():
    from gemmlab.runtime import tma
    A = numpy.zeros((128, 64), dtype=numpy.float16)
    k = gl.load(code=HOPPER, options=SM90).get("tma_box")
    with pytest.raises(gl.EmulatorError, match=r"(?s)wait at .* on the mbarrier at shared address \d+ for the phase "
                                               r"of parity 0 \(its current phase has parity 0: 0 of its 1 arrivals "
                                               r"and 16 transaction bytes still due\)"):
        k(1, 128, (tma.tensor_map(A, "fp16", 128, 64), numpy.zeros(128 * 64, dtype=numpy.uint16), numpy.int32(0),
                   numpy.int32(0), numpy.int32(16)))


FAULTS_SM90 = r'''
#include "common/hopper.cuh"
using namespace gl_hopper;
__global__ void short_named(float* out)            // 64 threads arrive at a barrier that counts 96
{
    if (threadIdx.x < 64) named_sync(2, 96);
    out[threadIdx.x] = 1.0f;
}
__global__ void too_few_arrivals(float* out)       // a barrier of 64 arrivals, one warp of 32 arrives
{
    __shared__ unsigned long long bar;
    if (threadIdx.x == 0) bar_init(smem(&bar), 64);
    __syncthreads();
    if (threadIdx.x < 32) bar_arrive(smem(&bar));
    bar_wait(smem(&bar), 0);
    out[threadIdx.x] = 1.0f;
}
__global__ void crossed(float* out)               // each warp waits for the other's arrival, at the same line
{
    __shared__ unsigned long long bars[2];
    if (threadIdx.x == 0) {
        bar_init(smem(&bars[0]), 32);
        bar_init(smem(&bars[1]), 32);
    }
    __syncthreads();
    const int warp = threadIdx.x / 32;
    bar_wait(smem(&bars[warp]), 0);
    bar_arrive(smem(&bars[1 - warp]));
    out[threadIdx.x] = 1.0f;
}
__global__ void never_initialised(float* out)
{
    __shared__ unsigned long long bar;
    bar_arrive(smem(&bar));
    out[threadIdx.x] = 1.0f;
}
__global__ void bad_setmaxnreg(float* out)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 236;\n" ::: "memory");
    out[threadIdx.x] = 1.0f;
}
__global__ void good_setmaxnreg(float* out)
{
    if (threadIdx.x < 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    out[threadIdx.x] = 1.0f;
}
'''


@emulator_only
@pytest.mark.parametrize("kernel, threads, message", [
    ("short_named", 128, r"(?s)deadlock.*wait at .* on named barrier 2 \(bar.sync: 64 of its 96 threads have "
                         r"arrived\)"),
    ("too_few_arrivals", 64, r"(?s)deadlock.*on the mbarrier at shared address \d+ for the phase of parity 0 \(its "
                             r"current phase has parity 0: 32 of its 64 arrivals and 0 transaction bytes still due\)"),
    ("never_initialised", 32, r"an arrival on an mbarrier that mbarrier.init has not set up"),
    ("crossed", 64, r"(?s)deadlock.*\n  threads \(0,0,0\), \(1,0,0\), \(2,0,0\), \(3,0,0\), \.\.\. \(32 threads\) "
                    r"wait at "
                    r".*hopper.cuh:\d+ on the mbarrier at shared address (\d+) for the phase of parity 0 .*\n  threads "
                    r"\(32,0,0\), .* \(32 threads\) wait at .*hopper.cuh:\d+ on the mbarrier at shared address "
                    r"(?!\1)\d+ "),
    ("bad_setmaxnreg", 128, r"setmaxnreg with 236 registers: the count must be a multiple of 8 from 24 to 256"),
])
def test_hopper_faults_are_named(kernel, threads, message):
    with pytest.raises(gl.EmulatorError, match=message):
        gl.load(code=FAULTS_SM90, options=SM90).get(kernel)(1, threads, (numpy.zeros(threads, dtype=f32),))


@emulator_only
def test_a_legal_setmaxnreg_runs():
    out = numpy.zeros(256, dtype=f32)
    gl.load(code=FAULTS_SM90, options=SM90).get("good_setmaxnreg")(1, 256, (out,))
    assert (out == 1).all()


CP_ASYNC = r'''
// Ampere's cp.async in PTX: each thread copies 16 bytes (and a last, partial copy of 8 given bytes zero-filled to
// 16) from global to shared memory, commits, waits, and writes the block's shared memory back out reversed
__global__ void staged(const float* in, float* out, int n)
{
    __shared__ __align__(16) float s[128];
    const unsigned t = threadIdx.x, dst = static_cast<unsigned>(__cvta_generic_to_shared(s + 4 * t));
    const int given = 4 * (int)t + 4 <= n ? 16 : 4 * (int)t < n ? 4 * (n - 4 * (int)t) : 0;
    const float* src = in + (given ? 4 * t : 0);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(given) : "memory");
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();
    out[t] = s[127 - t];
    out[t + 32] = s[95 - t];
    out[t + 64] = s[63 - t];
    out[t + 96] = s[31 - t];
}
'''


@needs_sm80
def test_cp_async_copies_with_a_source_size_zero_fill_the_rest():
    n = 122                                            # thread 30 copies 8 bytes, 31 none
    x = numpy.arange(1, 129, dtype=f32)
    out = xp.zeros(128, dtype=f32)
    gl.load(code=CP_ASYNC).get("staged")(1, 32, (xp.asarray(x), out, numpy.int32(n)))
    s = numpy.where(numpy.arange(128) < n, x, 0)
    assert (gl.to_host(out) == s[::-1]).all()


# ---- wgmma, and what the emulator does with Hopper's asynchrony ---------------------------------------------------
WGMMA = r'''
#include "common/hopper.cuh"
using namespace gl_hopper;
// a shared-memory matrix descriptor without a swizzle: start, LBO and SBO in 16-byte units
__device__ __forceinline__ unsigned long long plain_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32);
}
// where element (r, k) of a K-major 16-deep FP16 tile lies in it, in 16-bit units: core matrices of 8 rows of k's 8
// values (16 bytes), the next 8 values of k 128 bytes on (LBO), the next 8 rows 256 bytes on (SBO)
__device__ __forceinline__ int core_at(int r, int k) { return (r / 8) * 128 + (k / 8) * 64 + (r % 8) * 8 + k % 8; }

// one warpgroup: D (64 x 8, FP32) = A (64 x 16) B (16 x 8), FP16, both K-major without a swizzle: core matrices of
// 8 rows x 16 bytes, 128 bytes apart along K (LBO) and 256 along M or N (SBO). MODE 0: as it should be; 1: an
// accumulator read before wgmma.wait_group; 2: no wait at all; 3: B's descriptor 64 KiB past the tile; 4: no
// fence.proxy.async between the tiles' ordinary stores and the wgmma that reads them; 5: the wgmma, its commit and
// its wait in one asm statement
template <int MODE>
__global__ void wgmma_tile(const unsigned short* a, const unsigned short* b, float* out)
{
    __shared__ __align__(128) unsigned short As[64 * 16], Bs[8 * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += 128) As[core_at(i / 16, i % 16)] = a[i];
    Bs[core_at(t % 8, t / 8)] = b[t];                    // (128 threads: B's 16 x 8, row k = t / 8, column n = t % 8)
    if (MODE != 4) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");   // stores, then wgmma's reads
    __syncthreads();
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const unsigned long long da = plain_desc(smem(As), 128, 256);
    const unsigned long long db = plain_desc(smem(Bs) + (MODE == 3 ? 65536 : 0), 128, 256);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    float early = 0.0f;
    if (MODE == 5) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
                     "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db) : "memory");
    } else {
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        early = d[0];
        if (MODE != 2) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    const int r = 16 * (t / 32) + (t % 32) / 4, c = 2 * (t % 4);
    out[r * 8 + c] = MODE == 1 ? early : d[0];
    out[r * 8 + c + 1] = d[1];
    out[(r + 8) * 8 + c] = d[2];
    out[(r + 8) * 8 + c + 1] = d[3];
}

// three wgmma m64n16k16 in flight at once, each onto the accumulators of the one before (A 64 x 16 and B 16 x 16, as
// wgmma_tile lays them out), waited for together; a thread writes its 12 registers e[0..11]. MODE 0: all three into
// e[0..7], listed in order (one array's elements: the loader passes them as one); 1: the same, listed from e[7] down
// to e[0] (the fragment's element i in e[7 - i]); 2: the first into e[0..7], the second into e[4..11] (its first
// four take the first's last four), the third into e[0..7] again
template <int MODE>
__global__ void wgmma_chain(const unsigned short* a, const unsigned short* b, float* out)
{
    __shared__ __align__(128) unsigned short As[64 * 16], Bs[16 * 16];
    const int t = threadIdx.x;
    for (int i = t; i < 64 * 16; i += 128) As[core_at(i / 16, i % 16)] = a[i];
    for (int i = t; i < 16 * 16; i += 128) Bs[core_at(i % 16, i / 16)] = b[i];      // (row k = i / 16, column n)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    float e[12] = {};
    const unsigned long long da = plain_desc(smem(As), 128, 256), db = plain_desc(smem(Bs), 128, 256);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    for (int r = 0; r < 3; ++r) {
        if (MODE == 1)
            asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                         "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\n"
                         : "+f"(e[7]), "+f"(e[6]), "+f"(e[5]), "+f"(e[4]), "+f"(e[3]), "+f"(e[2]), "+f"(e[1]),
                           "+f"(e[0]) : "l"(da), "l"(db));
        else if (MODE == 2 && r == 1)
            asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                         "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\n"
                         : "+f"(e[4]), "+f"(e[5]), "+f"(e[6]), "+f"(e[7]), "+f"(e[8]), "+f"(e[9]), "+f"(e[10]),
                           "+f"(e[11]) : "l"(da), "l"(db));
        else
            asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                         "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, 1, 1, 1, 0, 0;\n"
                         : "+f"(e[0]), "+f"(e[1]), "+f"(e[2]), "+f"(e[3]), "+f"(e[4]), "+f"(e[5]), "+f"(e[6]),
                           "+f"(e[7]) : "l"(da), "l"(db));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    for (int j = 0; j < 12; ++j) out[12 * t + j] = e[j];
}

// thread 0 sets up the barrier full (the block waits for it), then loads the 128 x 64 FP16 box at row `row` into tile
__device__ void load_box(unsigned short* tile, const TensorMap* map, unsigned long long* full, int row)
{
    if (threadIdx.x == 0) bar_init(smem(full), 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        bar_expect_bytes(smem(full), 128 * 64 * 2);
        tma_load(smem(tile), map, 0, row, smem(full));
    }
}

// a TMA load into the tile a wgmma issued from it may still be reading
__global__ void overwrite_in_flight(const __grid_constant__ TensorMap map, float* out)
{
    __shared__ __align__(1024) unsigned short tile[128 * 64];
    __shared__ unsigned long long full;
    load_box(tile, &map, &full, 0);
    bar_wait(smem(&full), 0);
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const unsigned long long da = plain_desc(smem(tile), 128, 256), db = plain_desc(smem(tile) + 4096, 128, 256);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    if (threadIdx.x == 0) {                              // the next slice, too early
        bar_expect_bytes(smem(&full), 128 * 64 * 2);
        tma_load(smem(tile), &map, 0, 64, smem(&full));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    out[threadIdx.x] = d[0];
}

// warp 1 loads two boxes (lane 0 expects both boxes' bytes, then lanes 0 and 1 issue one each) while warp 0, which
// runs first, is already waiting on the barrier
__global__ void two_issuers(const __grid_constant__ TensorMap map, unsigned short* out)
{
    __shared__ __align__(1024) unsigned short tile[2][128 * 64];
    __shared__ unsigned long long full;
    if (threadIdx.x == 0) bar_init(smem(&full), 1);
    __syncthreads();
    if (threadIdx.x >= 32) {
        if (threadIdx.x == 32) bar_expect_bytes(smem(&full), 2 * 128 * 64 * 2);
        __syncwarp();
        if (threadIdx.x < 34) tma_load(smem(tile[threadIdx.x - 32]), &map, 0, 128 * (threadIdx.x - 32), smem(&full));
        return;
    }
    bar_wait(smem(&full), 0);
    for (int i = threadIdx.x; i < 2 * 128 * 64; i += 32) out[i] = tile[i / (128 * 64)][i % (128 * 64)];
}

// the box read without waiting on its barrier
// (WAIT: and waits for it afterwards; else no thread ever does, and the block ends with the copy in flight)
template <bool WAIT>
__global__ void read_before_landing(const __grid_constant__ TensorMap map, unsigned short* out)
{
    __shared__ __align__(1024) unsigned short tile[128 * 64];
    __shared__ unsigned long long full;
    load_box(tile, &map, &full, 0);
    for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) out[i] = tile[i];
    if (!WAIT) return;
    __syncthreads();                                     // (every thread has read before one waits)
    bar_wait(smem(&full), 0);
}

// a TMA store whose thread never waits for it (FENCE), or of a tile written with no fence.proxy.async (!FENCE)
template <bool FENCE>
__global__ void store_unwaited(const __grid_constant__ TensorMap map)
{
    __shared__ __align__(1024) float tile[32 * 64];
    for (int i = threadIdx.x; i < 32 * 64; i += blockDim.x) tile[i] = 1.0f;
    if (FENCE) fence_proxy_async();
    __syncthreads();
    if (threadIdx.x == 0) {
        tma_store(&map, 0, 0, smem(tile));
        bulk_commit();
    }
}
'''


@pytest.fixture(scope="module")
def wgmma():
    return gl.load(code=WGMMA, options=SM90)


def _tile_inputs():
    rng = numpy.random.default_rng(11)
    a = rng.integers(-4, 5, (64, 16)).astype(numpy.float16)
    b = rng.integers(-4, 5, (16, 8)).astype(numpy.float16)
    return a, b, a.astype(f64) @ b.astype(f64)


@needs_sm90
@pytest.mark.parametrize("mode", [0, 5])
def test_a_wgmma_from_unswizzled_k_major_tiles(wgmma, mode):
    a, b, want = _tile_inputs()
    out = xp.zeros(64 * 8, dtype=f32)
    wgmma.get(f"wgmma_tile<{mode}>")(1, 128, (xp.asarray(a.view(numpy.uint16)), xp.asarray(b.view(numpy.uint16)),
                                              out))
    assert (gl.to_host(out).reshape(64, 8) == want).all()


@needs_sm90
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_wgmma_in_flight_onto_each_others_accumulators(wgmma, mode):
    rng = numpy.random.default_rng(5)
    a = rng.integers(-4, 5, (64, 16)).astype(numpy.float16)
    b = rng.integers(-4, 5, (16, 16)).astype(numpy.float16)
    product = a.astype(f64) @ b.astype(f64)
    t = numpy.arange(128)[:, None]
    i = numpy.arange(8)[None, :]                         # a thread's fragment element i: its row and column
    rows = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i % 4) // 2)
    cols = 8 * (i // 4) + 2 * (t % 4) + i % 2
    p = product[rows, cols]                              # (128, 8): thread t's element i of A B
    want = numpy.zeros((128, 12))
    if mode == 0:
        want[:, :8] = 3 * p
    elif mode == 1:
        want[:, :8] = 3 * p[:, ::-1]
    else:                                                # e[0..7] += p, e[4..11] += p, e[0..7] += p
        want[:, :8] += 2 * p
        want[:, 4:12] += p
    out = xp.zeros(128 * 12, dtype=f32)
    wgmma.get(f"wgmma_chain<{mode}>")(1, 128, (xp.asarray(a.view(numpy.uint16)), xp.asarray(b.view(numpy.uint16)),
                                               out))
    assert (gl.to_host(out).reshape(128, 12) == want).all()


def test_the_loader_passes_an_arrays_elements_in_order_as_one_operand():
    from gemmlab.runtime.emulator.build import _ptx_call
    ordered = ", ".join(f'"+f"(acc.d[{j}])' for j in range(4, 16))
    call = _ptx_call(f'asm volatile("wgmma ..." : {ordered}, "+f"(x[0]) : "l"(a));')
    assert '::gl_emu::ptx::outs("+f", &(acc.d)[4], 12)' in call and 'out("+f", (x[0]))' in call
    def listed(order, constraint=lambda j: '"+f"', base=lambda j: "d"):
        return ", ".join(f"{constraint(j)}({base(j)}[{j}])" for j in order)
    for broken in (listed([0, 1, 2, 3, 5, 4, 6, 7, 8, 9]),                 # out of order
                   listed(range(10), constraint=lambda j: '"+f"' if j < 5 else '"=f"'),
                   listed(range(10), base=lambda j: "d" if j % 2 else "e"),
                   listed(range(7))):                                      # too few to be worth it
        assert "outs(" not in _ptx_call(f'asm volatile("x" : {broken} : "l"(a));')


@needs_sm90
def test_boxes_issued_after_their_waiters_went_to_sleep_still_land(wgmma):
    from gemmlab.runtime import tma
    a = (numpy.arange(256 * 64) % 2039).astype(numpy.float16).reshape(256, 64)
    out = xp.zeros(2 * 128 * 64, dtype=numpy.uint16)
    wgmma.get("two_issuers")(1, 64, (tma.tensor_map(xp.asarray(a), "fp16", 128, 64), out))
    got = gl.to_host(out).reshape(2, 128, 64)
    for h in range(2):
        assert (got[h] == _swizzled_128(a[128 * h:128 * (h + 1)].view(numpy.uint16))).all()


@emulator_only
def test_accumulators_read_before_wait_group_are_not_the_results(wgmma):
    a, b, want = _tile_inputs()
    out = numpy.zeros(64 * 8, dtype=f32)
    wgmma.get("wgmma_tile<1>")(1, 128, (a.view(numpy.uint16), b.view(numpy.uint16), out))
    early = out.reshape(64, 8)[:, 0::2][numpy.arange(64) % 16 < 8]      # the d[0] of each thread
    assert numpy.isnan(early).all()
    rest = out.reshape(64, 8)
    assert (rest[:, 1::2] == want[:, 1::2]).all()


@emulator_only
@pytest.mark.parametrize("mode, message", [
    (2, r"kernel wgmma_tile<2>, block \(0,0,0\): inline PTX at <code>:\d+: a wgmma whose results 128 of its "
        r"warpgroup's 128 threads never waited for \(wgmma.commit_group, then wgmma.wait_group\) before the block "
        r"ended"),
    (3, r"a wgmma whose descriptor for B \(start \d+, LBO 128, SBO 256, no swizzle\) reaches shared address \d+ for "
        r"its element \(0, 0\), outside the block's shared arrays and the dynamic shared memory its launch gave"),
])
def test_a_wgmma_never_waited_for_or_outside_shared_memory_is_named(wgmma, mode, message):
    a, b, _ = _tile_inputs()
    with pytest.raises(gl.EmulatorError, match=message):
        wgmma.get(f"wgmma_tile<{mode}>")(1, 128, (a.view(numpy.uint16), b.view(numpy.uint16),
                                                  numpy.zeros(512, dtype=f32)))


@emulator_only
def test_a_tma_load_over_a_tile_a_wgmma_may_still_read_is_named(wgmma):
    from gemmlab.runtime import tma
    A = numpy.ones((256, 64), dtype=numpy.float16)
    with pytest.raises(gl.EmulatorError, match=r"a TMA load into shared memory \d+-\d+, which the wgmma issued at "
                                               r"<code>:\d+ may still be reading \(its A operand; no thread of its "
                                               r"warpgroup has waited for it with wgmma.wait_group\)"):
        wgmma.get("overwrite_in_flight")(1, 128, (tma.tensor_map(A, "fp16", 128, 64), numpy.zeros(128, dtype=f32)))


@emulator_only
def test_a_box_read_before_its_barrier_completes_is_not_there_yet(wgmma):
    from gemmlab.runtime import tma
    A = numpy.ones((128, 64), dtype=numpy.float16)
    out = numpy.full(128 * 64, 7, dtype=numpy.uint16)
    wgmma.get("read_before_landing<true>")(1, 128, (tma.tensor_map(A, "fp16", 128, 64), out))
    assert (out == 0).all()                              # what the block's shared memory held, not the box
    with pytest.raises(gl.EmulatorError, match=r"a TMA load into this block's shared memory that no thread of the "
                                               r"block waited for \(mbarrier.try_wait on its barrier\) before the "
                                               r"block ended: the copy may write shared memory the block no longer "
                                               r"has"):
        wgmma.get("read_before_landing<false>")(1, 128, (tma.tensor_map(A, "fp16", 128, 64), out))


@emulator_only
def test_a_tma_store_never_waited_for_is_named(wgmma):
    from gemmlab.runtime import tma
    C = numpy.zeros((32, 64), dtype=f32)
    with pytest.raises(gl.EmulatorError, match=r"a TMA store that its thread never waited for "
                                               r"\(cp.async.bulk.commit_group, then cp.async.bulk.wait_group\) before "
                                               r"the block ended"):
        wgmma.get("store_unwaited<true>")(1, 128, (tma.tensor_map(C, "fp32", 64, 32),))


@needs_memcheck
def test_a_copy_or_wgmma_reading_ordinary_stores_with_no_proxy_fence_is_named(wgmma):
    """Shared memory written with ordinary stores and read by the asynchronous proxy (a TMA store, a wgmma) needs a
    fence.proxy.async by each writing thread in between; without it, the thread is named."""
    from gemmlab.runtime import tma
    a, b, _ = _tile_inputs()
    with pytest.raises(gl.EmulatorError, match=r"a wgmma whose A operand's element \(0, 0\), at shared address \d+: "
                                               r"thread \(\d+,0,0\) wrote it with an ordinary store and has run no "
                                               r"fence.proxy.async since"):
        wgmma.get("wgmma_tile<4>")(1, 128, (a.view(numpy.uint16), b.view(numpy.uint16), numpy.zeros(512, dtype=f32)))
    C = numpy.zeros((32, 64), dtype=f32)
    with pytest.raises(gl.EmulatorError, match=r"a TMA store from shared address \d+: thread \(\d+,0,0\) wrote it "
                                               r"with an ordinary store and has run no fence.proxy.async since"):
        wgmma.get("store_unwaited<false>")(1, 128, (tma.tensor_map(C, "fp32", 64, 32),))


@needs_sm90
def test_tma_reductions_from_many_blocks_into_one_tile_all_land(hopper):
    """256 blocks add the same box into one tile of C: every addition lands (on the emulator the module's blocks
    run in one process, as a reduction reaches across blocks)."""
    from gemmlab.runtime import tma
    rows, cols, blocks = 64, 32, 256                     # (the kernel's box: 64 rows of 32 floats; sums < 2^24)
    C = xp.asarray(numpy.zeros((rows, cols), dtype=f32))
    hopper.get("tma_out<true>")(blocks, 128, (tma.tensor_map(C, "fp32", 64, 32), numpy.int32(0), numpy.int32(0)))
    r, c = numpy.meshgrid(numpy.arange(rows), numpy.arange(cols), indexing="ij")
    assert (gl.to_host(C) == blocks * (1000.0 * r + c)).all()


REDUCE_HELPER = r'''
__device__ __forceinline__ void add_box(unsigned long long map, unsigned src)
{
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(map), "r"(0), "r"(0), "r"(src) : "memory");
}
template <int ADD>
__global__ void k(float* x, unsigned long long map)
{
    if (ADD) add_box(map, 0);
    x[blockIdx.x] = 1.0f;
}
'''


@emulator_only
def test_a_reduction_no_kernel_reaches_leaves_the_blocks_free_to_run_apart(monkeypatch):
    """A helper with a TMA reduction in a module marks it (its blocks in one process) only where a kernel the
    module compiles can reach the helper: k<0> never adds (tc/09 and its common header), k<1> does (tc/11)."""
    monkeypatch.setenv("GEMMLAB_EMULATOR_WORKERS", "2")
    apart = gl.load(code=REDUCE_HELPER, options=SM90).get("k<0>")
    x = numpy.zeros(3000, dtype=f32)
    apart((3000,), (32,), (x, numpy.uint64(0)))
    assert apart.impl.blocks_independent and apart.impl.last_processes == 2 and (x == 1).all()
    both = gl.load(code=REDUCE_HELPER + "template __global__ void k<1>(float*, unsigned long long);\n", options=SM90)
    assert not both.get("k<0>").impl.blocks_independent


CLUSTERS = r'''
#include "common/hopper.cuh"
using namespace gl_hopper;

__device__ __forceinline__ float ld_cluster(unsigned a, unsigned cta)      // distributed shared memory: a float
{                                                                          // of the block of rank cta
    float v;
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %1, %2;\nld.shared::cluster.f32 %0, [remote];\n}\n"
                 : "=f"(v) : "r"(a), "r"(cta) : "memory");
    return v;
}
__device__ __forceinline__ unsigned cluster_blocks()
{
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
    return n;
}

// each block of a cluster of four fills its shared memory with its rank and block number, then reads its right
// neighbour's (distributed shared memory), between two cluster barriers
__global__ void __cluster_dims__(4, 1, 1) neighbours(float* out)
{
    __shared__ float mine[64];
    const unsigned rank = cluster_rank(), n = cluster_blocks();
    mine[threadIdx.x] = 1000.0f * blockIdx.x + 10.0f * rank + n;
    cluster_sync();
    out[blockIdx.x * 64 + threadIdx.x] = ld_cluster(smem(&mine[threadIdx.x]), (rank + 1) % n);
    cluster_sync();                                // (no block leaves while its neighbour may still read it)
}

// rank 1's warp hands `rounds` rounds to rank 0's: each round it arrives `arrivals` times a thread on rank 0's
// "full" barrier (mapa, a remote arrival), and waits before the next until rank 0's warp, having seen the round,
// has arrived on its "empty" one. WAIT_AT_END 0: neither waits for the other at the end
template <int WAIT_AT_END>
__global__ void __cluster_dims__(2, 1, 1) remote_arrivals(int* out, int rounds, int arrivals)
{
    __shared__ unsigned long long full, empty;
    if (threadIdx.x == 0) {
        bar_init(smem(&full), 32);
        bar_init(smem(&empty), 32);
    }
    cluster_sync();
    if (cluster_rank() == 1) {
        for (int r = 0; r < rounds; ++r) {
            if (r > 0) bar_wait(smem(&empty), (r - 1) & 1);
            for (int a = 0; a < arrivals; ++a) bar_arrive_cluster(smem(&full), 0);
        }
    } else {
        for (int r = 0; r < rounds; ++r) {
            bar_wait(smem(&full), r & 1);
            bar_arrive_cluster(smem(&empty), 1);
        }
        if (threadIdx.x == 0) out[blockIdx.x / 2] = rounds;
    }
    if (WAIT_AT_END) cluster_sync();
}

// one TMA copy of a 64 x 64 FP16 box multicast to every block in `mask` (issued by rank `from`), each block
// waiting on its own barrier, then writing what landed. INIT_SYNC 0: no cluster barrier between the barriers'
// set-up and the copy; 2: rank 1 never waits for its copy (and ends with it in flight)
template <int INIT_SYNC>
__global__ void __cluster_dims__(2, 1, 1) multicast_box(const __grid_constant__ TensorMap map, unsigned short* out,
                                                         int from, int mask)
{
    __shared__ __align__(1024) unsigned short tile[64 * 64];          // (as the 128-byte swizzle lays it out)
    __shared__ unsigned long long full;
    const unsigned rank = cluster_rank();
    if (threadIdx.x == 0) {
        bar_init(smem(&full), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (INIT_SYNC) cluster_sync();
    else __syncthreads();
    if (INIT_SYNC == 2 && rank == 1) mask &= ~2;
    if (threadIdx.x == 0) bar_expect_bytes(smem(&full), (mask >> rank) & 1 ? 64 * 64 * 2 : 0);
    if (threadIdx.x == 0 && (int)rank == from) tma_load_multicast(smem(tile), &map, 0, 0, smem(&full), mask);
    if ((mask >> rank) & 1) {
        bar_wait(smem(&full), 0);
        for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) out[rank * 64 * 64 + i] = tile[i];
    }
    cluster_sync();
}
'''


@pytest.fixture(scope="module")
def clusters():
    return gl.load(code=CLUSTERS, options=SM90)


@needs_sm90
def test_a_cluster_reads_its_neighbours_shared_memory(clusters):
    """Distributed shared memory: block b of a cluster of four reads what its right neighbour wrote, at the same
    offset; %cluster_ctarank and %cluster_nctarank say where a block is."""
    blocks = 12
    out = xp.zeros(blocks * 64, dtype=f32)
    clusters.get("neighbours")(blocks, 64, (out,))
    b = numpy.arange(blocks)
    right = 4 * (b // 4) + (b % 4 + 1) % 4
    want = 1000.0 * right + 10.0 * (right % 4) + 4
    assert (gl.to_host(out).reshape(blocks, 64) == want[:, None]).all()


@needs_sm90
def test_remote_arrivals_complete_another_blocks_phases(clusters):
    """A warp of rank 1 arrives on rank 0's mbarrier (mapa, mbarrier.arrive.shared::cluster): rank 0 sees each
    phase complete, in every cluster of the grid."""
    out = xp.zeros(3, dtype=numpy.int32)
    clusters.get("remote_arrivals<1>")(6, 32, (out, numpy.int32(5), numpy.int32(1)))
    assert (gl.to_host(out) == 5).all()


@needs_sm90
@pytest.mark.parametrize("from_rank, mask", [(0, 0b11), (1, 0b11), (1, 0b01), (0, 0b10)])
def test_a_multicast_copy_lands_in_every_block_of_its_mask(clusters, from_rank, mask):
    from gemmlab.runtime import tma
    box = (numpy.arange(64 * 64) % 2048).astype(numpy.float16).reshape(64, 64)
    out = xp.zeros(2 * 64 * 64, dtype=numpy.uint16)
    clusters.get("multicast_box<1>")(2, 128, (tma.tensor_map(xp.asarray(box), "fp16", 64, 64), out,
                                                numpy.int32(from_rank), numpy.int32(mask)))
    got = gl.to_host(out).reshape(2, 64 * 64)
    for rank in (0, 1):
        if (mask >> rank) & 1:
            assert (got[rank] == _swizzled_128(box.view(numpy.uint16)).ravel()).all()
        else:
            assert (got[rank] == 0).all()


@emulator_only
def test_cluster_faults_are_named(clusters):
    """What would hang, fault or read garbage on a GPU is stopped by name: an arrival on a block that has exited
    (no cluster barrier before the exit), a multicast onto a barrier its block has not set up yet (no cluster
    barrier after the set-up), a mask naming a block outside the cluster, arrivals that never complete a phase
    (a deadlock of the cluster), a grid that is not whole clusters, a cluster larger than 8 blocks, a GPU
    without clusters."""
    from gemmlab.runtime import tma
    ints = xp.zeros(4, dtype=numpy.int32)
    with pytest.raises(gl.EmulatorError, match=r"an mbarrier arrival in the shared memory of block \(1,0,0\), rank 1 "
                                               r"of the cluster, whose threads have all exited"):
        clusters.get("remote_arrivals<0>")(2, 32, (ints, numpy.int32(2), numpy.int32(1)))
    box = xp.asarray(numpy.ones((64, 64), dtype=numpy.float16))
    out = xp.zeros(2 * 64 * 64, dtype=numpy.uint16)
    with pytest.raises(gl.EmulatorError, match="a multicast TMA load that completes on an mbarrier another block of "
                                               "the cluster has not set up"):
        clusters.get("multicast_box<0>")(2, 128, (tma.tensor_map(box, "fp16", 64, 64), out, numpy.int32(0),
                                                   numpy.int32(3)))
    with pytest.raises(gl.EmulatorError, match=r"block \(1,0,0\).*a TMA load into this block's shared memory that no "
                                               r"thread of the block waited for"):
        clusters.get("multicast_box<2>")(2, 128, (tma.tensor_map(box, "fp16", 64, 64), out, numpy.int32(0),
                                                   numpy.int32(3)))
    with pytest.raises(gl.EmulatorError, match=r"whose mask 0x4 names a block outside of its cluster of 2"):
        clusters.get("multicast_box<1>")(2, 128, (tma.tensor_map(box, "fp16", 64, 64), out, numpy.int32(0),
                                                   numpy.int32(4)))
    with pytest.raises(gl.EmulatorError, match=r"(?s)deadlock: no thread of the cluster can go on.*block \(0,0,0\).*"
                                               r"mbarrier at shared address 0 for the phase of parity 0.*"
                                               r"and in block \(1,0,0\), rank 1 of its cluster, 32 threads wait"):
        clusters.get("remote_arrivals<1>")(2, 32, (ints, numpy.int32(3), numpy.int32(0)))   # (no arrivals at all)
    with pytest.raises(gl.EmulatorError, match=r"a grid of 3 x 1 x 1 blocks is not made of whole clusters of 2"):
        clusters.get("remote_arrivals<1>")(3, 32, (ints, numpy.int32(1), numpy.int32(1)))
    big = gl.load(code="__global__ void __cluster_dims__(16, 1, 1) k(int* x) { x[blockIdx.x] = 1; }", options=SM90)
    with pytest.raises(gl.EmulatorError, match="a cluster holds 1 to 8 blocks"):
        big.get("k")(16, 32, (ints,))


@emulator_only
def test_clusters_need_a_hopper_profile(monkeypatch):
    from gemmlab.runtime import profiles
    monkeypatch.setattr(profiles, "current", lambda: profiles.PROFILES["A100"])
    k = gl.load(code="__global__ void __cluster_dims__(2, 1, 1) k(int* x) { x[blockIdx.x] = 1; }").get("k")
    with pytest.raises(gl.EmulatorError, match=r"clusters of 2 x 1 x 1 blocks .* need a GPU of compute capability "
                                               r"9.0 or later; the emulated .* is 8.0"):
        k(2, 32, (numpy.zeros(2, dtype=numpy.int32),))


CLUSTER_CORNERS = r'''
#include "common/hopper.cuh"
using namespace gl_hopper;

// the upper half of each block leaves at once (LOW 0) or the lower half does (LOW 1); the others sync as a
// cluster, whose barrier waits for the threads that have not exited, whichever exit first
template <int LOW>
__global__ void __cluster_dims__(2, 1, 1) half_leaves(int* out)
{
    if ((threadIdx.x < 32) == (LOW == 1)) return;
    cluster_sync();
    out[blockIdx.x * 64 + threadIdx.x] = 1;
}

// each block of a cluster adds rank + 1 from every thread into a one-line __shared__ scalar of a type that is a
// lone keyword, and into a pointer's target: each block has its own
__global__ void __cluster_dims__(2, 1, 1) own_scalars(unsigned* out)
{
    __shared__ unsigned total;
    __shared__ unsigned* where;
    if (threadIdx.x == 0) {
        total = 0;
        where = &total;
    }
    cluster_sync();
    atomicAdd(where, cluster_rank() + 1);
    cluster_sync();
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// rank 0 raises a flag in rank 1's shared memory; rank 1's thread 0 polls it, sleeping between looks (the
// blocks of a cluster run at once on a GPU, so this ends)
__global__ void __cluster_dims__(2, 1, 1) polls_a_peer(int* out)
{
    __shared__ unsigned flag;
    if (threadIdx.x == 0) flag = 0;
    cluster_sync();
    if (threadIdx.x == 0 && cluster_rank() == 1) {
        unsigned v = 0;
        while (!v) {
            asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];\n" : "=r"(v) : "r"(smem(&flag)) : "memory");
            if (!v) __nanosleep(100);
        }
        out[blockIdx.x] = (int)v;
    } else if (threadIdx.x == 0) {
        asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, 1;\n"
                     "st.relaxed.cluster.shared::cluster.u32 [remote], 7;\n}\n" ::"r"(smem(&flag)) : "memory");
    }
    cluster_sync();
}

// each thread writes its word and, after a cluster barrier, reads another's: ordered, no hazard
__global__ void __cluster_dims__(2, 1, 1) ordered_by_the_cluster(float* out)
{
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    cluster_sync();
    out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
    cluster_sync();
}
'''


@pytest.fixture(scope="module")
def corners():
    return gl.load(code=CLUSTER_CORNERS, options=SM90)


@needs_sm90
@pytest.mark.parametrize("low", [0, 1])
def test_the_cluster_barrier_waits_for_the_threads_that_have_not_exited(corners, low):
    out = xp.zeros(4 * 64, dtype=numpy.int32)
    corners.get(f"half_leaves<{low}>")(4, 64, (out,))
    half = numpy.arange(64) < 32
    assert (gl.to_host(out).reshape(4, 64) == (half if low == 0 else ~half)).all()


@needs_sm90
def test_each_block_of_a_cluster_has_its_own_shared_scalars(corners):
    out = xp.zeros(4, dtype=numpy.uint32)
    corners.get("own_scalars")(4, 64, (out,))
    assert gl.to_host(out).tolist() == [64, 128, 64, 128]


@needs_sm90
def test_a_block_polling_for_its_peers_store_sees_it(corners):
    out = xp.zeros(2, dtype=numpy.int32)
    corners.get("polls_a_peer")(2, 32, (out,))
    assert gl.to_host(out).tolist() == [0, 7]


@emulator_only
def test_a_cluster_barrier_orders_every_blocks_accesses_for_racecheck(corners):
    out = numpy.zeros(2 * 64, dtype=f32)
    report = gl.racecheck(corners.get("ordered_by_the_cluster"), (2,), (64,), (out,))
    assert report.clean, str(report)


@emulator_only
def test_a_shared_declaration_over_two_lines_is_refused_in_a_module_with_clusters():
    src = ("__global__ void __cluster_dims__(2, 1, 1) k(float* x)\n{\n    __shared__\n        float s[32];\n"
           "    s[threadIdx.x] = 1.0f;\n    x[threadIdx.x] = s[threadIdx.x];\n}\n")
    with pytest.raises(gl.CompileError, match=r"<code>:3: a __shared__ declaration the emulator can give each block "
                                              r"of a cluster its own copy of only when it is written on one line"):
        gl.load(code=src, options=SM90).get("k")(2, 32, (numpy.zeros(32, dtype=f32),))


ELECT = r'''
// each warp elects one leader (elect.sync over the whole warp), which counts the warp in; every lane writes the
// leader's lane and whether it was elected
__global__ void elect(int* leader, int* elected, int* warps)
{
    unsigned who, me;
    asm volatile("{\n.reg .pred p;\nelect.sync %0|p, 0xffffffff;\nselp.u32 %1, 1, 0, p;\n}\n" : "=r"(who), "=r"(me));
    leader[threadIdx.x] = (int)who;
    elected[threadIdx.x] = (int)me;
    if (me) atomicAdd(warps, 1);
}
'''


@needs_sm90
def test_elect_sync_chooses_one_leader_a_warp():
    m = gl.load(code=ELECT, options=SM90)
    leader, elected, warps = (xp.zeros(n, dtype=numpy.int32) for n in (96, 96, 1))
    m.get("elect")(1, 96, (leader, elected, warps))
    assert (gl.to_host(leader) == 0).all() and int(gl.to_host(warps)[0]) == 3
    assert gl.to_host(elected).reshape(3, 32).sum(axis=1).tolist() == [1, 1, 1]
    assert (gl.to_host(elected).reshape(3, 32)[:, 0] == 1).all()


# one wgmma.m64n8k32 on FP8 operands from shared memory (K-major, no swizzle: 8 x 16-byte core matrices, LBO 128
# bytes along K, SBO 256 along M), D given and returned in the fragment layout
FP8_WGMMA = r"""
template <int KIND>
__global__ void fp8_k32(const unsigned char* A, const unsigned char* B, const float* D, float* out)
{
    __shared__ __align__(128) unsigned char sa[64 * 32], sb[8 * 32];
    const int l = threadIdx.x;
    for (int i = l; i < 64 * 32; i += 128) {
        const int m = i / 32, k = i % 32;
        sa[(m / 8) * 256 + (k / 16) * 128 + (m % 8) * 16 + k % 16] = A[i];
        if (i < 8 * 32) sb[(k / 16) * 128 + m * 16 + k % 16] = B[i];
    }
    const int r = 16 * (l / 32) + (l % 32) / 4, c = 2 * (l % 4);
    float d0 = D[r * 8 + c], d1 = D[r * 8 + c + 1], d2 = D[(r + 8) * 8 + c], d3 = D[(r + 8) * 8 + c + 1];
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const unsigned a = (unsigned)__cvta_generic_to_shared(sa), b = (unsigned)__cvta_generic_to_shared(sb);
    const unsigned long long da = (a >> 4) | (8ull << 16) | (16ull << 32),
                             db = (b >> 4) | (8ull << 16) | (16ull << 32);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    if (KIND == 0)
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, 1, 1, 1;\n"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db));
    else
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2 {%0, %1, %2, %3}, %4, %5, 1, 1, 1;\n"
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    out[r * 8 + c] = d0; out[r * 8 + c + 1] = d1; out[(r + 8) * 8 + c] = d2; out[(r + 8) * 8 + c + 1] = d3;
}
"""


def _fp8_sum(acc, products, bits=14):
    """The FP8 adder chapter 17 measured: the accumulator and all 32 products at once, each cut toward zero ``bits``
    below the largest term's leading bit, the sum rounded toward zero to FP32 (float64 arrays, the terms last)."""
    terms = numpy.concatenate([acc[..., None], products], axis=-1)
    big = numpy.abs(terms).max(axis=-1)
    _, e = numpy.frexp(numpy.where(big > 0, big, 1.0))
    q = numpy.ldexp(1.0, e - bits)[..., None]
    s = (numpy.trunc(terms / q).sum(axis=-1) * q[..., 0])
    f = s.astype(f32)
    away = numpy.abs(f.astype(f64)) > numpy.abs(s)
    return numpy.where(away, numpy.nextafter(f, f32(0)), f).astype(f64)


@needs_sm90
@pytest.mark.parametrize("kind", list(ops.FP8_KINDS))
def test_an_fp8_wgmma_adds_as_the_tensor_cores_were_measured_to(kind):
    """wgmma.m64n8k32 on E4M3 or E5M2 bytes: on the emulator, bit for bit the adder its header states (32 products
    and the accumulator at once, cut 14 bits below the largest term); on a GPU, within one such cut a term of the
    exact sum at every output (the adder's fit gives a GPU's bits for most outputs, not all)."""
    rng = numpy.random.default_rng(3)
    module = gl.load(code=FP8_WGMMA, options=SM90)
    a8 = ops.to_fp8_bits(rng.standard_normal((64, 32)) * 2.0 ** rng.integers(-3, 4, (64, 1)), kind)
    b8 = ops.to_fp8_bits(rng.standard_normal((8, 32)) * 2.0 ** rng.integers(-3, 4, (8, 1)), kind)
    d = (rng.standard_normal((64, 8)) * 2.0 ** rng.integers(-4, 10, (64, 8))).astype(f32)
    out = xp.zeros((64, 8), dtype=f32)
    kernel = module.get(f"fp8_k32<{list(ops.FP8_KINDS).index(kind)}>")
    kernel(1, 128, (xp.asarray(a8), xp.asarray(b8), xp.asarray(d), out))
    products = ops.fp8_values(a8, kind)[:, None, :] * ops.fp8_values(b8, kind)[None, :, :]
    got, want = gl.to_host(out).astype(f64), _fp8_sum(d.astype(f64), products)
    if not gl.on_gpu:
        assert numpy.array_equal(got, want)
        return
    terms = numpy.concatenate([d.astype(f64)[..., None], products], axis=-1)
    cut = numpy.ldexp(1.0, numpy.frexp(numpy.abs(terms).max(axis=-1))[1] - 14)
    assert (numpy.abs(got - terms.sum(axis=-1)) <= 33 * cut).all()


@needs_sm90
@pytest.mark.parametrize("kind", list(ops.FP8_KINDS))
@pytest.mark.parametrize("big", ["product", "accumulator"])
def test_an_fp8_wgmma_keeps_a_term_down_to_13_bits_below_the_largest_and_drops_one_further(kind, big):
    """Chapter 17's 14 bits, on inputs that tell 13, 14 and 15 apart: each output of wgmma.m64n8k32 adds 1 (a
    product 1 x 1, or the accumulator) and one small product 2^-j, j from 6 to 16 over the 64 x 8 outputs (A's
    row r holds 2^-(r % 8), B's column c 2^-(6 + c % 4), every other value 0). Cut toward zero 14 bits below the
    largest term's leading bit (2^0: the cut is 2^-13), 2^-j survives for j <= 13 and is lost beyond: exactly, on
    the emulator and on a GPU."""
    r, c = numpy.arange(64)[:, None], numpy.arange(8)[None, :]
    a, b = numpy.zeros((64, 32)), numpy.zeros((8, 32))
    a[:, 1], b[:, 1] = 2.0 ** -(numpy.arange(64) % 8), 2.0 ** -(6 + numpy.arange(8) % 4)
    d = numpy.zeros((64, 8), dtype=f32)
    if big == "product":
        a[:, 0], b[:, 0] = 1.0, 1.0
    else:
        d[:] = 1.0
    a8, b8 = ops.to_fp8_bits(a, kind), ops.to_fp8_bits(b, kind)
    assert numpy.array_equal(ops.fp8_values(a8, kind), a) and numpy.array_equal(ops.fp8_values(b8, kind), b)
    out = xp.zeros((64, 8), dtype=f32)
    kernel = gl.load(code=FP8_WGMMA, options=SM90).get(f"fp8_k32<{list(ops.FP8_KINDS).index(kind)}>")
    kernel(1, 128, (xp.asarray(a8), xp.asarray(b8), xp.asarray(d), out))
    j = r % 8 + 6 + c % 4
    assert (j.min(), j.max()) == (6, 16)
    want = 1.0 + numpy.where(j <= 13, 2.0 ** -j.astype(f64), 0.0)
    assert numpy.array_equal(gl.to_host(out).astype(f64), want)
