// tc/06_wgmma_tma.cu — Hopper's own pipeline: TMA copies, mbarriers and warpgroup
// MMA (sm_90a).
//
// C (M x N, FP32, row-major) = A (M x K) B (K x N), row-major, A and B in FP16
// (PREC 0) or BF16 (1).
// What changed since tc/05: there every thread copied its part of each tile
// (cp.async) and every warp multiplied its own 16 x 8 pieces (mma.sync). Here a
// block of three warpgroups (384 threads) computes a 128 x 256 tile of C and the
// work is split by role:
//   - warpgroup 0 produces: one of its threads asks the Tensor Memory Accelerator
//     (TMA) to copy each 64-wide k-slice of A (128 x 64) and B (64 x 256) into
//     shared memory, STAGES slices ahead. A copy is described by a tensor map
//     (built on the host, gemmlab.tma) and lands 128-byte swizzled; it announces
//     its bytes to the stage's "full" mbarrier, and fills zeros outside the
//     matrices;
//   - warpgroups 1 and 2 consume: each waits on the stage's barrier, then
//     multiplies its 64 rows by the 256 columns with four wgmma.m64n256k16,
//     straight from shared memory (no ldmatrix, no registers for the operands), and
//     tells the stage's "empty" mbarrier when the slice may be overwritten.
// The producer gives up registers (setmaxnreg) so that the consumers can hold 128
// FP32 accumulators each. wgmma reads A K-major (rows of A) and B MN-major (rows of
// B), as they lie in memory: no transposes.
// Sizes: K and N multiples of 8 (TMA needs 16-byte row strides; the registry
// refuses others); M, N, K otherwise free (TMA zero-fills, the stores are guarded).
// [kernel]
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// the wgmma descriptor and m64n256k16, one k-slice of them (mma_slice)
#include "common/wgmma.cuh"

namespace hopper {
// the tiles: gl_wgmma's BM x BN = 128 x 256, BK = 64
constexpr int STAGES = 4;
}  // namespace hopper

template <int PREC>
__global__ void __launch_bounds__(384, 1)
wgmma_tma_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
               const __grid_constant__ gl_hopper::TensorMap mapB,
               float* __restrict__ C, int M, int N, int K)
{
    using namespace gl_hopper;
    using namespace gl_wgmma;
    using namespace hopper;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    // the swizzle repeats every 1024 bytes
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, KT = (K + BK - 1) / BK;
    // two consumer warpgroups
    bar_init_stages(full, empty, 2);

    // the producer
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                // the first round passes at once
                bar_wait(smem(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                bar_expect_bytes(smem(&full[s]), STAGE_BYTES);
                const unsigned a = tiles + s * STAGE_BYTES, b = a + A_BYTES;
                // A: 128 rows x 64 k
                tma_load(a, &mapA, kt * BK, m0, smem(&full[s]));
                // B: 64 k x 256 columns, in four boxes
                #pragma unroll
                for (int j = 0; j < BN / 64; ++j)
                    tma_load(b + j * (BK * 128), &mapB, n0 + 64 * j, kt * BK,
                             smem(&full[s]));
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    // rows 64 c .. 64 c + 63 of the tile
    const int c = wg - 1;
    float d[128];
    #pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        bar_wait(smem(&full[s]), (kt / STAGES) & 1);
        const unsigned a = tiles + s * STAGE_BYTES;
        // four m64n256k16, one commit group
        gl_wgmma::mma_slice<PREC>(d, a + c * (64 * 128), a + A_BYTES);
        // the previous slice's are done:
        gl_wgmma::wait_slices<1>();
        // its stage may be refilled
        if (kt > 0 && tid == 0) bar_arrive(smem(&empty[(kt - 1) % STAGES]));
    }
    gl_wgmma::wait_slices<0>();
    // every read of d below comes after the wait
    fence_registers(d);
    // the accumulators of m64nNk16: warp w of the warpgroup holds rows 16 w + lane
    // / 4 (d[4 j], d[4 j + 1]) and 8 rows below (d[4 j + 2], d[4 j + 3]), columns 8
    // j + 2 (lane % 4) + {0, 1}
    const int warp = tid / 32, lane = tid % 32;
    const int r = m0 + 64 * c + 16 * warp + lane / 4;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        // N is even: col + 1 < N too
        if (col < N) {
            if (r < M)
                *reinterpret_cast<float2*>(&C[(size_t)r * N + col]) =
                    make_float2(d[4 * j], d[4 * j + 1]);
            if (r + 8 < M)
                *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + col]) =
                    make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}
// [kernel]
