// blas/dot/06_warp_shuffle.cu — DOT step 6: the reduction tree in registers, with
// warp shuffles.
//
// What changed since 02_block_reduction (TREE = 2, two elements per thread): the
// first five levels of the tree run inside each warp with __shfl_down_sync,
// register to register, with no shared memory and no barrier; lane 0 of each warp
// writes one partial sum to shared memory; after one barrier the first warp reduces
// those BLOCK/32 partials the same way, and its lane 0 does the block's atomicAdd.
// Expected bottleneck: DRAM bandwidth (2n floats read); the reduction is now a
// small fraction.
// Sizes: any n >= 0; BLOCK a multiple of 32, at most 1024.

#include "common/blas.cuh"

__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// [kernel]
template <int BLOCK>
__global__ void dot_warp_shuffle(const float* __restrict__ x, int xoff, int incx,
                                 const float* __restrict__ y, int yoff, int incy,
                                 int n, float* result)
{
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024,
                  "whole warps, at most 32 of them");
    __shared__ float partial[BLOCK / 32];
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    float sum = 0.0f;
    const long long stride = (long long)gridDim.x * BLOCK;
    for (long long i = blockIdx.x * (long long)BLOCK + threadIdx.x; i < n;
         i += stride)
        sum += x[gl_vec(xoff, incx, i)] * y[gl_vec(yoff, incy, i)];

    sum = warp_sum(sum);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = warp_sum(lane < BLOCK / 32 ? partial[lane] : 0.0f);
        if (lane == 0) atomicAdd(result, sum);
    }
}
// [kernel]
