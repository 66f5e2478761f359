// tc/09_tma_store.cu — tc/08 with its stores handed to the copy engine: the
// epilogue off the tensor cores' critical path (sm_90a).
//
// C (M x N, FP32, row-major; OUT 1: in A's type) = A (M x K) B (K x N), row-major,
// A and B in FP16 (PREC 0) or BF16 (1).
// What changed since tc/08: there each consumer thread stored its 128 accumulators
// itself, 64 eight-byte stores to eight rows of C at once, and the warpgroup could
// start the next tile only once the last of them had left. Here each consumer
// writes its 64 x 256 part of C into shared memory, 64 x 32 at a time (8 KiB, the
// layout TMA's 128-byte swizzle reads: no two lanes of a quarter-warp in one bank),
// and one of its threads hands each box to the Tensor Memory Accelerator
// (cp.async.bulk.tensor, a TMA store), which writes it to C while the warpgroup
// goes on: two boxes a consumer, alternating, so that it waits only for the copy
// engine to have *read* the box before last. After its eighth box the consumer
// starts the next tile's main loop at once; the copies finish behind it. A TMA
// store writes only what lies inside C, so the edges need no checks. Accumulators
// are FP32, so they go out as pairs of floats (stmatrix moves 16-bit values only).
// What it should buy: a consumer's epilogue becomes 16 shared-memory stores and two
// barriers a box instead of 64 global stores waiting on the memory system; the
// bytes cross to L2 as whole 128-byte lines. Two knobs of the schedule (chapter 16
// measures each alone): STAGES, the pipeline's depth (4 fill the shared memory
// beside the epilogue's boxes; 3 leave 48 KiB free), and REGS, the registers the
// producer warpgroup keeps (setmaxnreg: the consumers take the rest of the 64 K, to
// a multiple of 8: 40 leaves them 232 a thread).
// Sizes as tc/06: K and N multiples of 8 (N also for C's tensor map: rows of
// 16-byte multiples), M free.
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/wgmma.cuh"

namespace tma_store_gemm {
constexpr int GROUP = 8;                          // as tc/08
}  // namespace tma_store_gemm

template <int PREC, int STAGES, int REGS, int OUT = 0>
__global__ void __launch_bounds__(384, 1)
wgmma_tma_store_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                     const __grid_constant__ gl_hopper::TensorMap mapB,
                     const __grid_constant__ gl_hopper::TensorMap mapC, int M,
                     int N, int K)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using namespace tma_store_gemm;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int MT = (M + BM - 1) / BM, NT = (N + BN - 1) / BN,
              KT = (K + BK - 1) / BK;
    bar_init_stages(full, empty, 2);

    // the producer, as tc/08's
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
        if (tid == 0)
            gl_wgmma::load_tiles<STAGES>(&mapA, &mapB, tiles, full, empty, MT, NT,
                                         KT, GROUP);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n"
                 ::"n"((65536 / 128 - REGS) / 2 / 8 * 8));
    const int c = wg - 1;
    // this consumer's two boxes
    const unsigned out =
        tiles + STAGES * STAGE_BYTES + c * (2 * gl_wgmma::BOX_BYTES);
    int it = 0;
    for (int t = blockIdx.x; t < MT * NT; t += gridDim.x) {
        int mt, nt;
        gl_wgmma::grouped_tile(t, MT, NT, GROUP, mt, nt);
        float d[128];
        gl_wgmma::multiply_tile<PREC, STAGES, 1>(d, it, KT, tiles, full, empty, c,
                                                 tid);
        const int row0 = mt * BM + 64 * c, col0 = nt * BN;
        // C in FP32, or (OUT 1) in the inputs' 16-bit type
        if (OUT)
            gl_wgmma::store_tile_16<PREC>(d, out, &mapC, row0, col0, 1 + c, tid);
        else
            gl_wgmma::store_tile(d, out, &mapC, row0, col0, 1 + c, tid);
    }
    // every store done before the block ends
    if (tid == 0) bulk_wait<0>();
}
// [kernel]
