// blas/gemm/06_tensor_cores.cu — GEMM 6: Part V's tensor-core kernels behind the
// BLAS's contract.
//
// C = alpha * op(A) op(B) + beta * C, column-major with leading dimensions, FP16 or
// BF16 inputs (or FP32 ones multiplied as TF32 or 3xTF32), C in FP32 or in the
// inputs' type.
// What changed since 05_warp_tiled: the products run on the tensor cores, in
// kernels that were written for something narrower. Part V's kernels compute a
// row-major W = A' B' from contiguous operands whose sizes are multiples of their
// tiles (16 for tc/03 and tc/05; 8 in N and K for TMA's rows), into FP32,
// with no alpha, beta or leading dimensions. A column-major C (m x n) is the
// row-major C^T (n x m), and C^T = op(B)^T op(A)^T, so a call runs three steps:
//   gemm_pack      copies A' = op(B)^T (n x k) and B' = op(A)^T (k x m) into
//                  contiguous buffers, their sizes padded with zeros to the
//                  kernel's multiples (the zeros add nothing to the sums). An
//                  operand that is transposed on the way goes through a 32 x 32
//                  tile in shared memory, so that its reads (down a column-major
//                  column) and its writes (along a row) are both coalesced;
//   the kernel     tc/09 on sm_90, tc/05 on sm_80 and later, tc/03 on the emulator;
//                  tc/04 for 3xTF32: W = A' B', row-major n_p x m_p, which is
//                  column-major m_p x n_p;
//   gemm_epilogue  C = alpha * W + beta * C, column by column with C's leading
//                  dimension, rounded to nearest into C's type; beta = 0 never
//                  reads C (a NaN there cannot leak), alpha = 0 never reads W.
// A step is left out where its work is already done: an operand that is not
// transposed is A' or B' as it lies (B's columns are the rows of A', ldb apart; A's
// columns are the rows of B'), which tc/09 reads in place through tensor maps (any
// leading dimension of 16 bytes' multiples, zeros past the matrix) and the other
// kernels where the sizes are their multiples and the leading dimensions the sizes;
// and C takes W itself when alpha = 1 and beta = 0: for tc/09, which stores through
// a tensor map too (nothing past the matrix), C in FP32 or the inputs' type with
// any leading dimension of 16 bytes' multiples; for the others, FP32 C with
// ldc = m (m a multiple of the kernel's). So an ordinary call,
// gemm('N', 'N', 1, A, B, 0, C), is one launch of Part V's kernel.
// gemm_strided_batched packs and finishes many products a launch (blockIdx.z; as
// many as the workspace holds) and runs Part V's kernel once per product.
// The copies cost what the product does not: 2(mk + kn) + 8mn bytes of traffic
// against 2mnk FLOPs.
// Sizes: any m, n, k >= 1 (k = 0 and alpha = 0 take the epilogue alone).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// [kernel]
// dst (rows x cols, row-major, contiguous) from a column-major X (rows_in x cols_in
// of it inside, zeros past):
//   TRANS = 0: dst = X^T, dst[r][c] = X(c, r) = src[c + r * ld]: row r of dst is
//                         column r of X, copied as it is;
//   TRANS = 1: dst = X,   dst[r][c] = X(r, c) = src[r + c * ld]: read down X's
//                         columns, written along dst's rows.
// T is the element's bits: unsigned short (FP16, BF16) or float.
template <typename T, int TRANS>
__global__ void __launch_bounds__(256)
gemm_pack(const T* __restrict__ src, int off, int ld, int rows_in, int cols_in,
          T* __restrict__ dst, int rows, int cols, long long stride)
{
    // (padded: the transposed reads are conflict-free)
    __shared__ T tile[32][33];
    // product blockIdx.z of a batch: X stride apart, its copies one after another
    src += off + stride * blockIdx.z;
    dst += (size_t)blockIdx.z * rows * cols;
    // 32 x 8 threads
    const int c0 = blockIdx.x * 32, tx = threadIdx.x, ty = threadIdx.y;
    // (rows past the grid's)
    for (int r0 = blockIdx.y * 32; r0 < rows; r0 += gridDim.y * 32) {
        if (TRANS == 0) {
            for (int i = ty; i < 32; i += 8) {
                const int r = r0 + i, c = c0 + tx;
                if (r < rows && c < cols)
                    dst[(size_t)r * cols + c] =
                        r < rows_in && c < cols_in ? src[(size_t)r * ld + c] : T(0);
            }
        } else {
            // lanes down a column of X: rows r0 .. r0 + 31
            for (int i = ty; i < 32; i += 8) {
                const int r = r0 + tx, c = c0 + i;
                tile[i][tx] = r < rows_in && c < cols_in ? src[r + (size_t)c * ld]
                                                         : T(0);
            }
            __syncthreads();
            // lanes along a row of dst
            for (int i = ty; i < 32; i += 8) {
                const int r = r0 + i, c = c0 + tx;
                if (r < rows && c < cols)
                    dst[(size_t)r * cols + c] = tile[tx][i];
            }
            // (the tile is refilled for the next rows)
            __syncthreads();
        }
    }
}

// C's element type: OUT = 0 FP32, 1 FP16 (its bits), 2 BF16 (its bits)
template <int OUT> struct gl_blas_out;
template <> struct gl_blas_out<0> {
    using t = float;
    static __device__ __forceinline__ float get(float v) { return v; }
    static __device__ __forceinline__ float put(float v) { return v; }
};
template <> struct gl_blas_out<1> {
    using t = unsigned short;
    static __device__ __forceinline__ float get(unsigned short v)
    {
        return __half2float(__ushort_as_half(v));
    }
    static __device__ __forceinline__ unsigned short put(float v)
    {
        return __half_as_ushort(__float2half_rn(v));
    }
};
template <> struct gl_blas_out<2> {
    using t = unsigned short;
    static __device__ __forceinline__ float get(unsigned short v)
    {
        return __bfloat162float(__ushort_as_bfloat16(v));
    }
    static __device__ __forceinline__ unsigned short put(float v)
    {
        return __bfloat16_as_ushort(__float2bfloat16_rn(v));
    }
};

// C (m x n, column-major, ldc) = alpha * W (column-major, ldw) + beta * C: a thread
// per element, threadIdx.x down a column; product blockIdx.z of a batch reads the W
// sw floats on and writes the C sc elements on
template <int OUT>
__global__ void __launch_bounds__(256)
gemm_epilogue(const float* __restrict__ W, int ldw,
              typename gl_blas_out<OUT>::t* __restrict__ C, int coff, int ldc,
              int m, int n, float alpha, float beta, long long sw, long long sc)
{
    using O = gl_blas_out<OUT>;
    const int r = blockIdx.x * 32 + threadIdx.x;
    if (r >= m) return;
    C += coff + sc * blockIdx.z;
    W += sw * blockIdx.z;
    for (int c = blockIdx.y * 8 + threadIdx.y; c < n; c += gridDim.y * 8) {
        const float w = alpha == 0.0f ? 0.0f : alpha * W[(size_t)c * ldw + r];
        typename O::t* out = C + (size_t)c * ldc + r;
        *out = O::put(beta == 0.0f ? w : w + beta * O::get(*out));
    }
}
// [kernel]
