// tc/12_pingpong.cu — tc/09 with consumers of 128 x 128, taking turns on the
// block's tiles (ping-pong) or sharing 256 x 128 ones (sm_90a).
//
// C (M x N, FP32, row-major; OUT 1: in A's type) = A (M x K) B (K x N), row-major,
// A and B in FP16 (PREC 0) or BF16 (1).
// What changed since tc/09: there both consumers work on one 128 x 256 tile, 64
// rows each, and both store it at once: while they write their accumulators to
// shared memory the tensor cores wait (the producer has loaded the next tile's
// first slices, but nobody multiplies them). Here each consumer holds a 128 x 128
// product (two 64 x 128 halves, wgmma m64n128k16: the same 128 accumulator
// registers a thread) and, with PINGPONG 1, the two take turns: the block's tiles
// (128 x 128 now) go to consumer 0, 1, 0, 1, ..., each with its own slices in one
// ring of six 32 KiB stages, so that one stores its tile while the other multiplies
// the next. The two consumers' main loops are ordered (each waits on a named
// barrier until the other has issued its tile's last slice; CUTLASS's ping-pong
// kernel orders its math warpgroups so too, with mbarriers): without that, a
// consumer a whole tile ahead of the other could wait on a stage one phase ahead of
// its barrier, whose parity bit then reads as complete. With PINGPONG 0 the two
// share each 256 x 128 tile, 128 rows each, in four 48 KiB stages: tc/09's tile
// turned on its side.
// What it should buy: with PINGPONG 1, the epilogue off the tensor cores' path (a
// tile's stores behind the other consumer's main loop), which pays most where a
// tile has few k-slices to hide it behind. Its price: wgmma half as wide (twice as
// many, B's slice read from shared memory once per 64-row half) and a third more
// bytes from L2 per output (a 128 x 128 tile loads 256 rows and columns for 16,384
// outputs; 128 x 256, 384 for 32,768); and, in the same 192 KiB, six stages where
// tc/09 has four.
// Sizes as tc/06: K and N multiples of 8, M free.
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/wgmma.cuh"

namespace pingpong {
constexpr int GROUP = 8;
// ping-pong: 128 x 128 tiles, six stages of A 128 x 64 and B 64 x 128; shared:
// 256 x 128, four of 256 x 64 and 64 x 128. Both 192 KiB of stages, then two
// 64 x 32 FP32 boxes of C per consumer, as tc/09
template <int PINGPONG>
struct Shape {
    static constexpr int MB = PINGPONG ? 1 : 2, STAGES = PINGPONG ? 6 : 4;
    static constexpr int TM = 128 * MB, TN = 128,
                         STAGE = MB * 128 * 64 * 2 + 64 * 128 * 2;
};
}  // namespace pingpong

template <int PREC, int PINGPONG, int OUT = 0>
__global__ void __launch_bounds__(384, 1)
wgmma_pingpong_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                    const __grid_constant__ gl_hopper::TensorMap mapB,
                    const __grid_constant__ gl_hopper::TensorMap mapC, int M,
                    int N, int K)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using S = pingpong::Shape<PINGPONG>;
    constexpr int STAGES = S::STAGES;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int MT = (M + S::TM - 1) / S::TM, NT = (N + S::TN - 1) / S::TN,
              KT = (K + BK - 1) / BK;
    // a stage is read by one consumer, or by both
    bar_init_stages(full, empty, PINGPONG ? 1 : 2);

    // the producer, as tc/09's
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0)
            load_tiles<STAGES, S::MB, 2>(&mapA, &mapB, tiles, full, empty, MT, NT,
                                         KT, pingpong::GROUP);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;
    const unsigned out = tiles + STAGES * S::STAGE + c * (2 * BOX_BYTES);
    const unsigned a_off = PINGPONG ? 0 : c * (128 * 128),
                   b_off = S::MB * (128 * 128);
    // of the block's tiles: every other one
    const int mine = PINGPONG ? 2 : 1;
    // the block's j-th tile
    int j = PINGPONG ? c : 0;
    for (int t = blockIdx.x + j * gridDim.x; t < MT * NT;
         t += mine * gridDim.x, j += mine) {
        int mt, nt;
        grouped_tile(t, MT, NT, pingpong::GROUP, mt, nt);
        // its slices in the block's ring
        int it = j * KT;
        // the other consumer has issued tile j - 1
        if (PINGPONG && j > 0) named_sync(4 - c, 256);
        // the other consumer has a tile j + 1
        const bool next = t + gridDim.x < MT * NT;
        float d0[64], d1[64];
        multiply_tile_128<PREC, STAGES, S::STAGE>(
            d0, d1, it, KT, tiles, full, empty, a_off, b_off, tid, [&] {
                // ... and may start it
                if (PINGPONG && next) named_arrive(3 + c, 256);
            });
        const int row0 = mt * S::TM + (PINGPONG ? 0 : 128 * c);
        // C in FP32, or (OUT 1) in the inputs' 16-bit type
        if (OUT) {
            store_tile_16<PREC, 2>(d0, out, &mapC, row0, nt * S::TN, 1 + c, tid);
            store_tile_16<PREC, 2>(d1, out, &mapC, row0 + 64, nt * S::TN, 1 + c,
                                   tid);
        } else {
            store_tile<0, 4>(d0, out, &mapC, row0, nt * S::TN, 1 + c, tid);
            store_tile<0, 4>(d1, out, &mapC, row0 + 64, nt * S::TN, 1 + c, tid);
        }
    }
    // every store done before the block ends
    if (tid == 0) bulk_wait<0>();
}
// [kernel]
