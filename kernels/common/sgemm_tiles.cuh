// common/sgemm_tiles.cuh — moving tiles of row-major FP32 matrices, for Part IV's SGEMM kernels.
//
// Every kernel of Part IV reads A (M x K) and B (K x N) four floats at a time (one 16-byte load,
// LDG.128) when a row's length is a multiple of 4 (then every 4-float group starting at a multiple of 4
// is 16-byte aligned, CuPy's allocations being 256-byte aligned) and the group lies inside the matrix;
// otherwise, at the right and bottom edges and for any other row length, float by float, with zeros
// outside the matrix. So every size works, and the sizes that are multiples of the tiles take the fast path.
#pragma once

// Four consecutive floats of row r of a row-major matrix with rows of ld floats (ld = cols unless given),
// from column c; 0 outside rows x cols (a split-K slice bounds the columns short of the row's end).
__device__ __forceinline__ float4 gl_load4(const float* __restrict__ m, int rows, int cols, int r, int c, bool vec,
                                           int ld = -1)
{
    const size_t stride = ld < 0 ? (size_t)cols : (size_t)ld;
    if (vec && r < rows && c + 3 < cols)
        return *reinterpret_cast<const float4*>(m + (size_t)r * stride + c);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows) {
        const float* row = m + (size_t)r * stride;
        if (c < cols) v.x = row[c];
        if (c + 1 < cols) v.y = row[c + 1];
        if (c + 2 < cols) v.z = row[c + 2];
        if (c + 3 < cols) v.w = row[c + 3];
    }
    return v;
}

// Store four consecutive floats into row r of C (rows x cols) from column c; what lies outside is dropped.
__device__ __forceinline__ void gl_store4(float* __restrict__ m, int rows, int cols, int r, int c, float4 v, bool vec)
{
    if (r >= rows) return;
    float* row = m + (size_t)r * cols;
    if (vec && c + 3 < cols) {
        *reinterpret_cast<float4*>(row + c) = v;
        return;
    }
    if (c < cols) row[c] = v.x;
    if (c + 1 < cols) row[c + 1] = v.y;
    if (c + 2 < cols) row[c + 2] = v.z;
    if (c + 3 < cols) row[c + 3] = v.w;
}
