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
