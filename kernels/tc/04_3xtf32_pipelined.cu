// tc/04_3xtf32_pipelined.cu — 3xTF32 (tc/02's FP32 accuracy from TF32 tensor cores)
// fed as tc/03.
//
// C (M x N) = A (M x K) * B (K x N), all FP32, row-major. What changed since
// 02_3xtf32: the operands come through tc/03's shared-memory pipeline and warp
// tiles (common/tc_pipeline.cuh with PREC = 3); each fragment of A and B is split
// into a TF32 head and tail once, and used for WN/16 (or WM/16) products of three
// MMAs each. Against cuBLAS's FP32 SGEMM it does three tensor-core products per
// step where the FP32 units do one FMA per element: the tensor cores are that much
// faster.
// Sizes: any M, N, K >= 1 (common/tc_pipeline.cuh zero-fills the edges and guards
// the stores).
//
// Where the step is: this file only instantiates it; the step is gl_tc_pipelined in
// common/tc_pipeline.cuh with PREC = 3, at these lines of that file (the rest is
// tc/03's pipeline):
//   line 68   "3xTF32 sums each tile's large products": why the large products go
//             to fresh accumulators
//   line 130  "gl_tc_split(a[i], at[i])": each fragment of A (and of B) split into
//             a TF32 head and tail
//   line 143  "tail x head, head x tail; head x head": the three products of each
//             pair of fragments

#include "common/tc_pipeline.cuh"

// [kernel]
template <int BM, int BN, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
gemm_3xtf32_pipelined(const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem[];
    // (common/tc_pipeline.cuh)
    gl_tc_pipelined<3, BM, BN, WM, WN, STAGES>(A, B, C, M, N, K, smem);
}
// [kernel]
