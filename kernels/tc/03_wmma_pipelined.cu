// tc/03_wmma_pipelined.cu — tensor cores fed as Part IV fed the FP32 units: block tiles in shared memory,
// a cp.async pipeline, warp tiles of several fragments.
//
// C (M x N, FP32) = A (M x K) * B (K x N), row-major; A and B in FP16, BF16 or FP32 rounded to TF32
// (PREC as in 01_wmma). What changed since 01_wmma: there, every warp read its tiles of A and B from
// global memory itself, so each element of A was read by every warp of its row of tiles, straight into
// fragments. Here the block stages its tiles in shared memory, several ahead, and each warp computes a
// WM x WN warp tile from them: the body is in common/tc_pipeline.cuh (shared with tc/04, 3xTF32).
// Sizes: M, N and K multiples of 16 (the registry refuses others: its tests cover those sizes).

#include "common/tc_pipeline.cuh"

// [kernel]
template <int PREC, int BM, int BN, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
wmma_pipelined(const typename gl_tc<PREC>::in* __restrict__ A, const typename gl_tc<PREC>::in* __restrict__ B,
               float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem[];
    gl_tc_pipelined<PREC, BM, BN, WM, WN, STAGES>(A, B, C, M, N, K, smem);      // (common/tc_pipeline.cuh)
}
// [kernel]
