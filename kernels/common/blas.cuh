// common/blas.cuh — how the BLAS kernels address their operands (column-major, BLAS
// conventions).
//
// A vector argument is (base, off, inc): element i is base[off + i*inc]. inc may be
// negative; then off points at the vector's first element, which lies at the high
// end of its storage, as in the reference BLAS. A matrix argument is (base, off,
// ld), column-major: element (i, j) is base[off + i + j*ld], with ld >= rows.
// Offsets let the Python side pass the contiguous array that owns the memory plus
// where the view starts, so every pointer the kernel receives is checked.
#pragma once

__device__ __forceinline__ long long gl_vec(int off, int inc, long long i)
{
    return off + i * inc;
}
__device__ __forceinline__ long long gl_mat(int off, int ld, long long i,
                                            long long j)
{
    return off + i + j * ld;
}

// op(A)(i, j) for TRANS = 0 ('N') or 1 ('T'): the transpose swaps the two indices.
template <int TRANS>
__device__ __forceinline__ long long gl_op(int off, int ld, long long i,
                                           long long j)
{
    return TRANS ? gl_mat(off, ld, j, i) : gl_mat(off, ld, i, j);
}
