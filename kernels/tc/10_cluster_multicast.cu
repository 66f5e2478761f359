// tc/10_cluster_multicast.cu — tc/09 in clusters of two blocks that share B's
// slices by TMA multicast (sm_90a).
//
// C (M x N, FP32, row-major) = A (M x K) B (K x N), row-major, A and B in FP16
// (PREC 0) or BF16 (1).
// What changed since tc/09: there every block loaded its own 64 x 256 slice of B,
// 32 KiB a step, although the block holding the tile below needed the same slice at
// about the same time. Here the grid is made of clusters of two blocks
// (__cluster_dims__: the hardware runs them at once, on neighbouring SMs) that take
// two tiles one above the other, the same columns of B. Each block's producer loads
// its own A and *half* of the shared B slice, multicast: one TMA copy lands in both
// blocks' shared memory, at the same offset, and counts its bytes off both blocks'
// "full" barriers. A stage may be refilled only when the consumers of both blocks
// are done with it, so each consumer arrives on the "empty" barriers of both blocks
// (mapa: the peer's address of the same barrier; a release at the block's scope,
// not the cluster's: common/hopper.cuh says why), and a block's "empty" barrier
// waits for four consumers. The pairs of tiles are walked as tc/08 walks tiles, in
// bands of four pairs. The two blocks sync as a cluster after their barriers are
// set up and before either exits, so that no arrival or copy reaches a block that
// has not started or has already ended.
// What it should buy: a block reads 16 + 16 KiB a step from L2 instead of 16 + 32
// KiB, a third less.
// Sizes as tc/09: K and N multiples of 8, M free (with an odd number of rows of
// tiles, the last pair's second tile lies below C: its A is TMA's zeros and its
// stores write nothing).
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/wgmma.cuh"

namespace multicast {
// tc/09's tiles; bands of four pairs of tiles
constexpr int STAGES = 4, GROUP = 4;
}  // namespace multicast

template <int PREC>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
wgmma_multicast_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
                     const __grid_constant__ gl_hopper::TensorMap mapB,
                     const __grid_constant__ gl_hopper::TensorMap mapC, int M,
                     int N, int K)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using namespace multicast;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int rank = cluster_rank(), pair0 = blockIdx.x / 2,
              pairs_at_once = gridDim.x / 2;
    const int MT = (M + BM - 1) / BM, NT = (N + BN - 1) / BN,
              KT = (K + BK - 1) / BK, MP = (MT + 1) / 2;
    // two consumers in each of two blocks
    bar_init_stages(full, empty, 4);
    // the peer's barriers are ready too
    cluster_sync();

    // the producer
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            int it = 0;
            for (int p = pair0; p < MP * NT; p += pairs_at_once) {
                int mp, nt;
                gl_wgmma::grouped_tile(p, MP, NT, GROUP, mp, nt);
                const int mt = 2 * mp + rank;
                for (int kt = 0; kt < KT; ++kt, ++it) {
                    const int s = it % STAGES;
                    // both blocks' consumers are done with s
                    bar_wait(smem(&empty[s]), ((it / STAGES) & 1) ^ 1);
                    // own A, both halves of B
                    bar_expect_bytes(smem(&full[s]), STAGE_BYTES);
                    const unsigned a = tiles + s * STAGE_BYTES, b = a + A_BYTES;
                    tma_load(a, &mapA, kt * BK, mt * BM, smem(&full[s]));
                    // this block's half of B, to both blocks
                    #pragma unroll
                    for (int j = 2 * rank; j < 2 * rank + 2; ++j)
                        tma_load_multicast(b + j * (BK * 128), &mapB,
                                           nt * BN + 64 * j, kt * BK,
                                           smem(&full[s]), 0x3);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int c = wg - 1;
        const unsigned out =
            tiles + STAGES * STAGE_BYTES + c * (2 * gl_wgmma::BOX_BYTES);
        int it = 0;
        for (int p = pair0; p < MP * NT; p += pairs_at_once) {
            int mp, nt;
            gl_wgmma::grouped_tile(p, MP, NT, GROUP, mp, nt);
            const int mt = 2 * mp + rank;
            float d[128];
            // releases in both blocks
            gl_wgmma::multiply_tile<PREC, STAGES, 2>(d, it, KT, tiles, full, empty,
                                                     c, tid);
            // tc/09's epilogue
            gl_wgmma::store_tile(d, out, &mapC, mt * BM + 64 * c, nt * BN, 1 + c,
                                 tid);
        }
        if (tid == 0) bulk_wait<0>();
    }
    // no block ends while its peer may still arrive
    cluster_sync();
}
// [kernel]
