// tc/07_3xtf32_wgmma.cu — 3xTF32 on Hopper's pipeline: FP32 SGEMM accuracy from
// TF32 wgmma (sm_90a).
//
// C (M x N, FP32) = A (M x K) B (K x N), FP32, row-major, any sizes. tc/04's method
// (each FP32 value as a TF32 head and a TF32 tail; head x head + head x tail +
// tail x head) on tc/06's machinery (TMA copies, mbarriers, a producer warpgroup
// and two consumers running wgmma). Two differences from tc/06:
//   - TF32 wgmma reads both operands K-major (it has no transpose for 32-bit
//     types), and the heads and tails are needed in shared memory, so two small
//     kernels run first: one splits A into heads and tails as it lies, one splits B
//     and transposes it (B^T: N rows of K). Their rows are padded to a multiple of
//     4 floats (16 bytes, as TMA needs); the padding is zero.
//   - the tensor cores add each product into the accumulator cut toward zero
//     (chapter 14), an error that grows with K; so the head x head products of each
//     32-wide k-slice go into a fresh accumulator (scale-d = 0 on the slice's first
//     wgmma) that is added into the FP32 result on the CUDA cores, rounded to
//     nearest. The two small products share one accumulator over all of K: their
//     errors are 2^-11 smaller.
// A block of 384 threads computes a 128 x 128 tile of C; BK = 32 floats (128 bytes,
// one swizzled row), 3 stages of four 16 KiB tiles (heads and tails of A and B^T).
// [kernel]
#include <cuda_runtime.h>

#include "common/wgmma.cuh"

namespace hopper3 {
using namespace gl_hopper;
constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3;
// A head, A tail, B^T head, B^T tail
constexpr int TILE_BYTES = 128 * BK * 4, STAGE_BYTES = 4 * TILE_BYTES;

// to nearest, ties away (cvt.rna)
__device__ __forceinline__ float tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}
// K-major, 128-byte swizzle, 8 rows = 1 KiB (common/wgmma.cuh's descriptor)
__device__ __forceinline__ unsigned long long desc(unsigned addr)
{
    return gl_wgmma::desc(addr, 16, 1024);
}
// d (64 x 128, FP32, 64 per thread) = A (64 x 8, TF32) B (8 x 128) + (accumulate ?
// d : 0)
__device__ __forceinline__ void mma_64x128x8(float (&d)[64], unsigned long long a,
                                             unsigned long long b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, "
                 "%8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, "
                 "%40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, "
                 "%56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1;\n}\n"
                 :
                 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
                 "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                 "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                 "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
                 "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                 "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                 "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                 "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                 "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                 "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),
                 "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                 "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                 "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b), "r"(accumulate));
}
}  // namespace hopper3

// heads and tails of a row-major rows x cols matrix, into rows x ld buffers
// (columns cols .. ld - 1 zero)
__global__ void split_tf32_rows(const float* __restrict__ X,
                                float* __restrict__ head, float* __restrict__ tail,
                                int rows, int cols, int ld)
{
    const size_t total = (size_t)rows * ld;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const int r = (int)(i / ld), c = (int)(i % ld);
        const float x = c < cols ? X[(size_t)r * cols + c] : 0.0f,
                    h = hopper3::tf32(x);
        head[i] = h;
        tail[i] = hopper3::tf32(x - h);
    }
}

// heads and tails of the transpose of a row-major K x N matrix, into N x ld buffers
// (columns K .. ld - 1 zero); 32 x 32 tiles through shared memory, blocks of 32 x 8
// threads
__global__ void split_tf32_transposed(const float* __restrict__ X,
                                      float* __restrict__ head,
                                      float* __restrict__ tail, int K, int N,
                                      int ld)
{
    __shared__ float tile[32][33];
    const int n = blockIdx.x * 32 + threadIdx.x, k0 = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += 8)
        tile[r][threadIdx.x] = (k0 + r < K && n < N) ? X[(size_t)(k0 + r) * N + n]
                                                     : 0.0f;
    __syncthreads();
    const int k = k0 + threadIdx.x;
    for (int r = threadIdx.y; r < 32; r += 8) {
        // a row of X^T: a column of X
        const int row = blockIdx.x * 32 + r;
        if (row < N && k < ld) {
            const float x = tile[threadIdx.x][r], h = hopper3::tf32(x);
            head[(size_t)row * ld + k] = h;
            tail[(size_t)row * ld + k] = hopper3::tf32(x - h);
        }
    }
}

// the four tensor maps, A head, A tail (M x K), B^T head, B^T tail (N x K), each in
// 128 x 32 boxes
struct SplitMaps { gl_hopper::TensorMap m[4]; };

__global__ void __launch_bounds__(384, 1)
gemm_3xtf32_wgmma(const __grid_constant__ SplitMaps maps, float* __restrict__ C,
                  int M, int N, int K)
{
    using namespace hopper3;
    extern __shared__ unsigned char tiles_raw[];
    __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
    const unsigned tiles = (smem(tiles_raw) + 1023u) & ~1023u;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, KT = (K + BK - 1) / BK;
    // two consumer warpgroups
    bar_init_stages(full, empty, 2);

    // the producer
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
        if (tid == 0) {
            for (int kt = 0; kt < KT; ++kt) {
                const int s = kt % STAGES;
                bar_wait(smem(&empty[s]), ((kt / STAGES) & 1) ^ 1);
                bar_expect_bytes(smem(&full[s]), STAGE_BYTES);
                const unsigned at = tiles + s * STAGE_BYTES;
                // A head, A tail, B^T head, B^T tail
                #pragma unroll
                for (int t = 0; t < 4; ++t)
                    tma_load(at + t * TILE_BYTES, &maps.m[t], kt * BK,
                             t < 2 ? m0 : n0, smem(&full[s]));
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
    const int c = wg - 1;
    float acc[64], big[64], small[64];
    #pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = small[i] = big[i] = 0.0f;
    for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        bar_wait(smem(&full[s]), (kt / STAGES) & 1);
        const unsigned at = tiles + s * STAGE_BYTES;
        const unsigned ah = at + c * (64 * 128), al = ah + TILE_BYTES,
                       bh = at + 2 * TILE_BYTES, bl = at + 3 * TILE_BYTES;
        fence_registers(big);
        fence_registers(small);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        // 8 values of k are 32 bytes of a row
        #pragma unroll
        for (int kk = 0; kk < BK / 8; ++kk) {
            mma_64x128x8(big, desc(ah + 32 * kk), desc(bh + 32 * kk), kk > 0);
            mma_64x128x8(small, desc(ah + 32 * kk), desc(bl + 32 * kk), 1);
            mma_64x128x8(small, desc(al + 32 * kk), desc(bh + 32 * kk), 1);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_registers(big);
        fence_registers(small);
        if (tid == 0) bar_arrive(smem(&empty[s]));
        // the slice's large products, to nearest
        #pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] += big[i];
    }
    const int warp = tid / 32, lane = tid % 32;
    const int r = m0 + 64 * c + 16 * warp + lane / 4;
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane % 4);
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = r + 8 * h;
            if (row < M) {
                if (col < N)
                    C[(size_t)row * N + col] =
                        acc[4 * j + 2 * h] + small[4 * j + 2 * h];
                if (col + 1 < N)
                    C[(size_t)row * N + col + 1] =
                        acc[4 * j + 2 * h + 1] + small[4 * j + 2 * h + 1];
            }
        }
    }
}
// [kernel]
