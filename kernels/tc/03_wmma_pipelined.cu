// tc/03_wmma_pipelined.cu — tensor cores fed as Part IV fed the FP32 units: block
// tiles in shared memory, a cp.async pipeline, warp tiles of several fragments.
//
// C (M x N, FP32) = A (M x K) * B (K x N), row-major; A and B in FP16, BF16 or FP32
// rounded to TF32 (PREC as in 01_wmma). What changed since 01_wmma: there, every
// warp read its tiles of A and B from global memory itself, so each element of A
// was read by every warp of its row of tiles, straight into fragments. Here the
// block stages its tiles in shared memory, several ahead, and each warp computes a
// WM x WN warp tile from them: the body is in common/tc_pipeline.cuh (shared with
// tc/04, 3xTF32).
// Sizes: M, N and K multiples of 16 (the registry refuses others: its tests cover
// those sizes).
//
// Where the step is: this file only instantiates it; the step is gl_tc_pipelined in
// common/tc_pipeline.cuh (with PREC 0-2), at these lines of that file:
//   line 59   "the copies of tile t into stage s": cp.async copies of the block's
//             tiles, zero-filled at the edges
//   line 104  "issue(t, t)": STAGES - 1 tiles in flight before the first multiply
//   line 108  "__pipeline_wait_prior(STAGES - 2)": wait for tile t, one barrier,
//             then issue tile t + STAGES - 1
//   line 128  "wmma::load_matrix_sync(a[i]": each warp's FM fragments of A and FN
//             of B, from shared memory
//   line 177  "A fragment wholly inside C": the epilogue, direct stores inside C,
//             staged ones at its edges

#include "common/tc_pipeline.cuh"

// [kernel]
template <int PREC, int BM, int BN, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
wmma_pipelined(const typename gl_tc<PREC>::in* __restrict__ A,
               const typename gl_tc<PREC>::in* __restrict__ B,
               float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem[];
    // (common/tc_pipeline.cuh)
    gl_tc_pipelined<PREC, BM, BN, WM, WN, STAGES>(A, B, C, M, N, K, smem);
}
// [kernel]
