// blas/dot/02_block_reduction.cu — DOT steps 2-5: a private sum per thread, a tree
// in shared memory per block, one atomicAdd per block.
//
// What changed since 00_atomic: each thread accumulates its grid-stride elements
// privately; the block then combines its BLOCK partial sums in shared memory,
// log2(BLOCK) levels, and thread 0 adds the block's sum to the result: gridDim
// atomics instead of n. TREE picks the shape of the tree:
//   TREE = 0  interleaved, divergent: at stride s, threads whose index is a
//             multiple of 2s add sdata[t + s]; the active threads are scattered
//             across every warp (step 2 of Harris's reduction sequence, which the
//             article follows);
//   TREE = 1  interleaved, contiguous threads: thread t adds sdata[2st + s] to
//             sdata[2st], so the active threads are the first ones (step 3), at the
//             price of strided shared addresses (2s words apart: bank conflicts);
//   TREE = 2  sequential addressing: at stride s = BLOCK/2, BLOCK/4, ..., thread t
//             < s adds sdata[t + s] to sdata[t]: contiguous threads, consecutive
//             words, no conflicts (step 4).
// Step 5 (two elements per thread) is TREE = 2 launched with half the blocks (the
// launch, not the kernel, changes: the grid-stride loop then visits two elements
// per thread).
// Expected bottleneck: DRAM bandwidth once the tree is cheap; the tree's barriers
// and shared traffic before that.
// Sizes: any n >= 0; every thread takes part in every barrier (the loop bound, not
// an early return, skips work).

#include "common/blas.cuh"

// [kernel]
template <int BLOCK, int TREE>
__global__ void dot_block_reduction(const float* __restrict__ x, int xoff, int incx,
                                    const float* __restrict__ y, int yoff, int incy,
                                    int n, float* result)
{
    __shared__ float sdata[BLOCK];
    const unsigned t = threadIdx.x;

    float sum = 0.0f;
    const long long stride = (long long)gridDim.x * BLOCK;
    for (long long i = blockIdx.x * (long long)BLOCK + t; i < n; i += stride)
        sum += x[gl_vec(xoff, incx, i)] * y[gl_vec(yoff, incy, i)];
    sdata[t] = sum;
    __syncthreads();

    if (TREE == 0) {
        for (unsigned s = 1; s < BLOCK; s *= 2) {
            if (t % (2 * s) == 0) sdata[t] += sdata[t + s];
            __syncthreads();
        }
    } else if (TREE == 1) {
        for (unsigned s = 1; s < BLOCK; s *= 2) {
            const unsigned index = 2 * s * t;
            if (index < BLOCK) sdata[index] += sdata[index + s];
            __syncthreads();
        }
    } else {
        for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
            if (t < s) sdata[t] += sdata[t + s];
            __syncthreads();
        }
    }
    if (t == 0) atomicAdd(result, sdata[0]);
}
// [kernel]
