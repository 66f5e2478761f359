"""Which lane of a warp holds which element of an mma.sync tile (gemmlab.tilemap's fragment functions, drawn in
chapter 15): the index rules, the way tc/05 composes ldmatrix with them, and, on a GPU of compute capability
8.0 or later, what the hardware's ldmatrix and mma.sync really put in each lane's registers."""
import numpy
import pytest

import gemmlab as gl
from gemmlab import tilemap

SHAPES = tilemap.MMA_SHAPES


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_element_of_each_operand_is_held_by_exactly_one_lane(shape):
    m, n, k = SHAPES[shape]
    for op, (rows, cols) in {"a": (m, k), "b": (k, n), "c": (m, n)}.items():
        held = [rc for lane in range(32) for rc in tilemap.mma_fragment(op, lane, shape)]
        assert sorted(held) == [(r, c) for r in range(rows) for c in range(cols)], (shape, op)


def test_bad_arguments_are_refused():
    for bad in (dict(operand="d", lane=0), dict(operand="a", lane=32), dict(operand="a", lane=-1),
                dict(operand="a", lane=0, shape="m16n8k32")):
        with pytest.raises(ValueError):
            tilemap.mma_fragment(**bad)
    with pytest.raises(ValueError):
        tilemap.ldmatrix_rows(40)


def _ldmatrix(lane_address, trans):
    """What ldmatrix .x4 gives each lane (register i: its two 16-bit values), from the address rule of a
    kernel: lane_address(l) -> (row, col) of the first element of the row lane l points at."""
    rows = {tilemap.ldmatrix_rows(l): lane_address(l) for l in range(32)}         # (tile, row) -> (r, c)
    out = {}
    for lane in range(32):
        regs = []
        for tile in range(4):
            if not trans:
                r, c = rows[(tile, lane // 4)]
                regs += [(r, c + 2 * (lane % 4)), (r, c + 2 * (lane % 4) + 1)]
            else:
                regs += [(rows[(tile, 2 * (lane % 4) + e)][0], rows[(tile, 0)][1] + lane // 4) for e in (0, 1)]
        out[lane] = regs
    return out


def test_tc05s_ldmatrix_addresses_give_each_lane_its_mma_fragments():
    """tc/05's loads (FP16/BF16): A's four tiles, lanes 0-15 at rows 0-15 and lanes 16-31 eight values of k
    further; B's through .trans, lanes at rows k = l % 16, columns 8 (l / 16): two 8-column tiles of B at once."""
    a = _ldmatrix(lambda l: (l % 16, (l // 16) * 8), trans=False)
    b = _ldmatrix(lambda l: (l % 16, (l // 16) * 8), trans=True)
    for lane in range(32):
        assert a[lane] == tilemap.mma_fragment("a", lane), lane
        assert b[lane][:4] == tilemap.mma_fragment("b", lane), lane                  # tile j: registers 0, 1
        assert b[lane][4:] == [(r, c + 8) for r, c in tilemap.mma_fragment("b", lane)], lane   # tile j + 1: 2, 3


def test_tc05s_tf32_b_loads_take_even_and_odd_columns_of_a_band():
    """TF32: a lane reads B itself, one 8-byte load per k: tile j takes the band's even columns, tile j + 1 its
    odd ones, so the lane's two values for column g are neighbours (band columns 2g and 2g + 1), and its four
    results of C are band columns 4t .. 4t + 3 (one 16-byte store)."""
    for lane in range(32):
        g, t = lane // 4, lane % 4
        frag = tilemap.mma_fragment("b", lane, "m16n8k8")
        loads = [(t + 4 * h, 2 * g) for h in (0, 1)]                    # kernel: rows kk + l%4 + 4h, column 2 (l/4)
        assert [(k, 2 * c) for k, c in frag] == loads
        c = tilemap.mma_fragment("c", lane, "m16n8k8")[:2]
        band = sorted([2 * col for _, col in c] + [2 * col + 1 for _, col in c])
        assert band == [4 * t, 4 * t + 1, 4 * t + 2, 4 * t + 3]


PROBE = r'''
#include "tc/05_mma_sync.cu"
// each lane's registers after tc/05's ldmatrix loads, and an mma.sync's D, for tiles whose values name their
// positions: A[r][c] = 16 r + c, B[k][n] = 256 + 16 k + n (exact in FP16), D = I B (its rows of B)
extern "C" __global__ void fragment_probe(float* a_out, float* b_out, float* d_out, float* tf_a, float* tf_d)
{
    __shared__ __align__(16) __half A[16 * 16], B[16 * 16], I[16 * 16];
    __shared__ __align__(16) float At[16 * 8];
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) {
        A[i] = __float2half((float)i);
        B[i] = __float2half((float)(256 + i));
        I[i] = __float2half(i / 16 == i % 16 ? 1.0f : 0.0f);
        if (i < 128) At[i] = (float)i;                                   // TF32's A: 16 x 8, At[r][c] = 8 r + c
    }
    __syncwarp();
    unsigned a[4], b[4], id[4];
    gl_ldmatrix_x4(a, A + (lane % 16) * 16 + (lane / 16) * 8, false);
    gl_ldmatrix_x4(b, B + (lane % 16) * 16 + (lane / 16) * 8, true);
    gl_ldmatrix_x4(id, I + (lane % 16) * 16 + (lane / 16) * 8, false);
    for (int i = 0; i < 4; ++i) {
        const __half2 pa = *reinterpret_cast<const __half2*>(&a[i]), pb = *reinterpret_cast<const __half2*>(&b[i]);
        a_out[lane * 8 + 2 * i] = __low2float(pa);  a_out[lane * 8 + 2 * i + 1] = __high2float(pa);
        b_out[lane * 8 + 2 * i] = __low2float(pb);  b_out[lane * 8 + 2 * i + 1] = __high2float(pb);
    }
    float d[4] = {0, 0, 0, 0};
    const unsigned b0[2] = {b[0], b[1]};
    gl_mma<0>(d, id, b0);
    for (int i = 0; i < 4; ++i) d_out[lane * 4 + i] = d[i];
    // TF32: A's 16 x 8 tile by ldmatrix (16 bytes a row: four values), then D = A I (B = I built by the lane
    // from its fragment rule: b0 = I[t][g], b1 = I[t + 4][g])
    unsigned ta[4];
    gl_ldmatrix_x4(ta, At + (lane % 16) * 8 + (lane / 16) * 4, false);
    for (int i = 0; i < 4; ++i) tf_a[lane * 4 + i] = __uint_as_float(ta[i]);
    const int g = lane / 4, t = lane % 4;
    const unsigned tb[2] = {__float_as_uint(t == g ? 1.0f : 0.0f), __float_as_uint(t + 4 == g ? 1.0f : 0.0f)};
    float td[4] = {0, 0, 0, 0};
    gl_mma<2>(td, ta, tb);
    for (int i = 0; i < 4; ++i) tf_d[lane * 4 + i] = td[i];
}
'''


@pytest.mark.gpu
def test_the_gpu_puts_each_element_where_the_fragment_rules_say():
    gpu = gl.profiles.current()
    if gpu.capability < (8, 0):
        pytest.skip(f"mma.sync m16n8k16 and TF32 need compute capability 8.0; this is {gpu.name}, {gpu.cc}")
    xp = gl.xp
    outs = [xp.full(32 * w, numpy.nan, dtype=numpy.float32) for w in (8, 8, 4, 4, 4)]
    gl.load(code=PROBE).get("fragment_probe")(1, 32, tuple(outs))
    a_out, b_out, d_out, tf_a, tf_d = (gl.to_host(o).reshape(32, -1) for o in outs)
    for lane in range(32):
        a = [divmod(int(v), 16) for v in a_out[lane]]
        assert a == tilemap.mma_fragment("a", lane), ("A", lane, a)
        b = [divmod(int(v) - 256, 16) for v in b_out[lane]]
        frag = tilemap.mma_fragment("b", lane)
        assert b == frag + [(r, c + 8) for r, c in frag], ("B", lane, b)
        d = [divmod(int(v) - 256, 16) for v in d_out[lane]]
        assert d == tilemap.mma_fragment("c", lane), ("C", lane, d)
        ta = [divmod(int(v), 8) for v in tf_a[lane]]
        assert ta == tilemap.mma_fragment("a", lane, "m16n8k8"), ("TF32 A", lane, ta)
        td = [divmod(int(v), 8) for v in tf_d[lane]]
        assert td == tilemap.mma_fragment("c", lane, "m16n8k8"), ("TF32 C", lane, td)
