// blas/dot/07_bandwidth.cu — DOT step 7: enough bytes in flight to keep the whole
// HBM busy.
//
// What changed since 06_warp_shuffle: DOT reads 8 bytes per FMA, so it can only be
// as fast as memory delivers them, and memory delivers only what is asked for ahead
// of time: on the H200, about 4 TB/s times the ~0.6 us a load takes to come back is
// some 2.5 MB that must be in flight at every moment, about 19 KB per SM. Step 6
// asks for 8 bytes per thread at a time. Here, with unit increments and
// 16-byte-aligned vectors (offsets multiples of 4), each thread issues UNROLL
// independent 16-byte loads (LDG.128) of x and as many of y before it adds
// anything: UNROLL * 32 bytes per thread in flight. The grid is sized to the GPU
// (GRID blocks of BLOCK threads, a few per SM), not to n, and each thread strides
// through the vectors. Other increments or offsets take a scalar grid-stride loop.
// CS = 1 loads x and y with __ldcs (ld.global.cs, "streaming": the lines go into
// the L2 cache marked to be evicted first). DOT reads each byte once; so marked,
// its lines make room for each other instead of pushing out what else the L2 holds,
// such as dirty lines that would then have to be written back to DRAM while DOT
// reads (after the timing's L2 flush, tens of megabytes of them).
// The block sums go one of two ways:
//   DET = 0  one atomicAdd per block into the result (zeroed first): the order of
//            those additions differs from run to run, and so may the last bits of
//            the result;
//   DET = 1  deterministic, in two passes within one launch: every block writes its
//            sum to work[1 + blockIdx.x]; the last block to finish (a counter in
//            work[0], advanced with atomicAdd after a __threadfence) adds the
//            partials in block order and writes the result, then resets the
//            counter. Every run gives the same bits. work holds 1 + gridDim.x
//            words, zeroed once when allocated (one launch at a time may use it).
// Expected bottleneck: DRAM bandwidth (8n bytes).
// Sizes: any n >= 0.

#include "common/blas.cuh"

__device__ __forceinline__ float warp_total(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The sum of v over the block, in thread 0 (the others get an unspecified value).
template <int BLOCK>
__device__ __forceinline__ float block_total(float v)
{
    __shared__ float partial[BLOCK / 32];
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_total(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) v = warp_total(lane < BLOCK / 32 ? partial[lane] : 0.0f);
    return v;
}

// [kernel]
template <int BLOCK, int UNROLL, int DET, int CS>
__global__ void __launch_bounds__(BLOCK)
dot_bandwidth(const float* __restrict__ x, int xoff, int incx,
              const float* __restrict__ y, int yoff, int incy, int n,
              float* result, float* work)
{
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024,
                  "whole warps, at most 32 of them");
    const long long threads = (long long)gridDim.x * BLOCK;
    const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
    float sum = 0.0f;
    if (incx == 1 && incy == 1 && xoff % 4 == 0 && yoff % 4 == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(x + xoff);
        const float4* y4 = reinterpret_cast<const float4*>(y + yoff);
        const long long n4 = n / 4;
        long long i = t;
        // UNROLL loads of each vector in flight per thread, then their FMAs
        for (; i + (UNROLL - 1) * threads < n4; i += UNROLL * threads) {
            float4 a[UNROLL], b[UNROLL];
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                a[u] = CS ? __ldcs(x4 + i + u * threads) : x4[i + u * threads];
                b[u] = CS ? __ldcs(y4 + i + u * threads) : y4[i + u * threads];
            }
            #pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                sum += a[u].x * b[u].x + a[u].y * b[u].y + a[u].z * b[u].z
                       + a[u].w * b[u].w;
        }
        for (; i < n4; i += threads) {
            const float4 a = CS ? __ldcs(x4 + i) : x4[i],
                         b = CS ? __ldcs(y4 + i) : y4[i];
            sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
        }
        // the last n % 4 elements
        if (t < n % 4) sum += x[xoff + n4 * 4 + t] * y[yoff + n4 * 4 + t];
    } else {
        for (long long i = t; i < n; i += threads)
            sum += x[gl_vec(xoff, incx, i)] * y[gl_vec(yoff, incy, i)];
    }
    sum = block_total<BLOCK>(sum);

    if (DET == 0) {
        if (threadIdx.x == 0) atomicAdd(result, sum);
        return;
    }
    __shared__ bool last;
    unsigned int* done = reinterpret_cast<unsigned int*>(work);
    if (threadIdx.x == 0) {
        work[1 + blockIdx.x] = sum;
        // the partial is visible before the count says so
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // the last block: the partials in block order, a fixed tree (the same bits
    // every run)
    float total = 0.0f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += BLOCK)
        // from L2, where the other blocks' writes are
        total += __ldcg(work + 1 + b);
    total = block_total<BLOCK>(total);
    if (threadIdx.x == 0) {
        *result = total;
        *done = 0u;                                    // ready for the next launch
    }
}
// [kernel]
