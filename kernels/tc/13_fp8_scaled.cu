// tc/13_fp8_scaled.cu — FP8 on Hopper: tc/09's persistent pipeline with 8-bit
// operands, and scales applied where the partial sums leave the tensor cores
// (sm_90a).
//
// C (M x N, row-major; OUT 1: BF16, 0: FP32) = (A x sa)(B x sb), where A (M x K) is
// given row-major and B (K x N) as its transpose Bt (N x K, row-major): both
// K-major, the only layout wgmma reads 8-bit operands in. Elements are E4M3 (KIND
// 0) or E5M2 (1), as their bytes.
//   SCALED 0: one scale each (sa[0], sb[0]): the tensor cores sum all of K into
//   the FP32 accumulators, and the epilogue multiplies by sa sb. Tiles of 128 x
//   256, 4 stages of 48 KiB, as tc/09.
//   SCALED 1: a scale per row of A and 128 of K (sa: M x K/128) and per 128 x 128
//   block of B (sb: K/128 x ceil(N/128)), as DeepSeek-V3 trains: the tensor cores
//   sum one 128-wide slice of K at a time into accumulators t that the slice's
//   first wgmma clears, and the consumer promotes them on the CUDA cores,
//   d += t x sa[row][slice] x sb[slice][n / 128], in FP32. Two sets, t0 and t1,
//   take turns: slice k + 1's wgmma run while slice k's sum is promoted, so a
//   consumer never waits for the instructions it has just issued. d, t0 and t1 are
//   64 registers each: tiles of 128 x 128 (a consumer's 64 x 128), 6 stages of
//   32 KiB.
// What it should buy: wgmma.m64nNk32 takes 32 k an instruction where FP16 takes 16,
// at the same rate in instructions: twice the FLOPs, half the bytes of A and B.
// Sizes: K a multiple of 16 (TMA's rows), of 128 with SCALED 1 (a scale's block);
// N a multiple of 8 (OUT 1) or 4 (C's rows: 16 bytes); M free.
// [kernel]
#include "common/fp8.cuh"
#include "common/wgmma.cuh"

template <int KIND, int SCALED, int OUT>
__global__ void __launch_bounds__(384, 1)
fp8_gemm(const __grid_constant__ gl_hopper::TensorMap mapA,
         const __grid_constant__ gl_hopper::TensorMap mapB,
         const __grid_constant__ gl_hopper::TensorMap mapC,
         const float* __restrict__ sa, const float* __restrict__ sb, int M, int N,
         int K)
{
    using namespace gl_hopper;
    using namespace gl_fp8;
    constexpr int BN = SCALED ? 128 : 256, STAGES = SCALED ? 6 : 4,
                  STAGE = A_BYTES + BN * BK, GROUP = 8;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int MT = (M + BM - 1) / BM, NT = (N + BN - 1) / BN,
              KT = (K + BK - 1) / BK;
    bar_init_stages(full, empty, 2);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0)
            load_tiles<STAGES, BN>(&mapA, &mapB, tiles, full, empty, MT, NT, KT,
                                   GROUP);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1, warp = tid / 32, lane = tid % 32;
    // this consumer's two boxes (8 KiB each in FP32 and in BF16)
    const unsigned out = tiles + STAGES * STAGE + c * (2 * gl_wgmma::BOX_BYTES);
    const float scale = SCALED ? 1.0f : sa[0] * sb[0];
    int it = 0;
    for (int tile = blockIdx.x; tile < MT * NT; tile += gridDim.x) {
        int mt, nt;
        gl_wgmma::grouped_tile(tile, MT, NT, GROUP, mt, nt);
        const int row0 = mt * BM + 64 * c, col0 = nt * BN;
        float d[BN / 2];
        #pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
        if (!SCALED) {
            // tc/09's main loop: a stage released once the slice after it is issued
            for (int kt = 0; kt < KT; ++kt, ++it) {
                const int s = it % STAGES;
                bar_wait(smem(&full[s]), (it / STAGES) & 1);
                const unsigned a = tiles + s * STAGE;
                mma_slice<KIND, 0>(d, a + c * (64 * BK), a + A_BYTES);
                gl_wgmma::wait_slices<1>();
                if (kt > 0 && tid == 0) bar_arrive(smem(&empty[(it - 1) % STAGES]));
            }
            gl_wgmma::wait_slices<0>();
            fence_registers(d);
            if (tid == 0) bar_arrive(smem(&empty[(it - 1) % STAGES]));
            #pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] *= scale;
        } else {
            // this thread's rows of C: 16 w + lane / 4, and 8 below
            const int r = row0 + 16 * warp + lane / 4;
            const float* sa0 = sa + (size_t)(r < M ? r : 0) * KT;
            const float* sa1 = sa + (size_t)(r + 8 < M ? r + 8 : 0) * KT;
            float t0[BN / 2], t1[BN / 2], p0, p1, q0, q1;
            // slice k's sum into u: its stage's wgmma, issued
            auto issue = [&](float (&u)[BN / 2], int k) {
                const int s = (it + k) % STAGES;
                bar_wait(smem(&full[s]), ((it + k) / STAGES) & 1);
                const unsigned a = tiles + s * STAGE;
                mma_slice<KIND, 1>(u, a + c * (64 * BK), a + A_BYTES);
            };
            // slice k's scales for rows r and r + 8, read a slice before use
            auto scales = [&](int k, float& x0, float& x1) {
                const float b = sb[(size_t)k * NT + nt];
                x0 = r < M ? sa0[k] * b : 0.0f;
                x1 = r + 8 < M ? sa1[k] * b : 0.0f;
            };
            // slice k's sum, complete: its stage released, u promoted into d
            auto promote = [&](float (&u)[BN / 2], int k, float x0, float x1) {
                fence_registers(u);
                if (tid == 0) bar_arrive(smem(&empty[(it + k) % STAGES]));
                #pragma unroll
                for (int i = 0; i < BN / 2; ++i)
                    d[i] += u[i] * (i % 4 < 2 ? x0 : x1);
            };
            // at the top of each pass slice kt is in flight in t0; one wait
            // count on every path, so the compiler keeps the wgmma asynchronous
            issue(t0, 0);
            scales(0, p0, p1);
            int kt = 0;
            for (; kt + 2 < KT; kt += 2) {
                issue(t1, kt + 1);
                scales(kt + 1, q0, q1);
                gl_wgmma::wait_slices<1>();
                promote(t0, kt, p0, p1);
                issue(t0, kt + 2);
                scales(kt + 2, p0, p1);
                gl_wgmma::wait_slices<1>();
                promote(t1, kt + 1, q0, q1);
            }
            if (kt + 1 < KT) {
                issue(t1, kt + 1);
                scales(kt + 1, q0, q1);
                gl_wgmma::wait_slices<1>();
                promote(t0, kt, p0, p1);
                gl_wgmma::wait_slices<0>();
                promote(t1, kt + 1, q0, q1);
            } else {
                gl_wgmma::wait_slices<0>();
                promote(t0, kt, p0, p1);
            }
            it += KT;
        }
        if (OUT)
            gl_wgmma::store_tile_16<1, BN / 64>(d, out, &mapC, row0, col0, 1 + c,
                                                tid);
        else
            gl_wgmma::store_tile<0, BN / 32>(d, out, &mapC, row0, col0, 1 + c,
                                             tid);
    }
    // every store done before the block ends
    if (tid == 0) bulk_wait<0>();
}
// [kernel]
