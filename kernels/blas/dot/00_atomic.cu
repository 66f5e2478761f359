// blas/dot/00_atomic.cu — DOT steps 0 and 1: every product added to the result with
// atomicAdd.
//
// result += sum_i x_i * y_i (the caller zeroes result). Grid-stride loop: thread t
// handles elements t, t + gridDim*blockDim, ... Each product is one atomicAdd on
// the same 4-byte address.
// Step 0 launched BLOCK = 768 threads (what the occupancy API suggested for the
// article's GPU); step 1 fixes BLOCK = 256. The kernel is the same; only the launch
// differs.
// Expected bottleneck: the atomics. n updates to one address are serialised in the
// memory system, whatever the occupancy. Accuracy suffers too: n single-precision
// additions into one running sum.
// Sizes: any n >= 0; any increments.

#include "common/blas.cuh"

// [kernel]
__global__ void dot_atomic(const float* __restrict__ x, int xoff, int incx,
                           const float* __restrict__ y, int yoff, int incy, int n,
                           float* result)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += stride)
        atomicAdd(result, x[gl_vec(xoff, incx, i)] * y[gl_vec(yoff, incy, i)]);
}
// [kernel]
