// common/tc.cuh — the tensor-core kernels' precisions (Part V): the element type in
// memory, the wmma fragment type and the fragment's K for PREC = 0 (FP16), 1 (BF16,
// passed as its bits), 2 (FP32 in memory, rounded to TF32 in the fragments) and 3
// (FP32 as 3xTF32: a head and a tail per value). FP16 fragments exist from compute
// capability 7.0; BF16 and TF32 ones from 8.0 (mma.h declares them only there), so
// PREC 1-3 and their helpers are compiled for sm_80 and later alone: on a T4
// (sm_75) the FP16 kernels compile and the registry refuses the others by name
// (GL_TC_AMPERE below).
#pragma once
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

template <int PREC> struct gl_tc;
template <> struct gl_tc<0> {
    using in = __half;
    using frag = __half;
    static constexpr int KS = 16;
};
// (nvcc's host pass has no __CUDA_ARCH__)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define GL_TC_AMPERE 1
template <> struct gl_tc<1> {
    using in = __nv_bfloat16;
    using frag = __nv_bfloat16;
    static constexpr int KS = 16;
};
template <> struct gl_tc<2> {
    using in = float;
    using frag = nvcuda::wmma::precision::tf32;
    static constexpr int KS = 8;
};
// 3xTF32: FP32 in memory, TF32 head and tail
template <> struct gl_tc<3> : gl_tc<2> {};
#endif

// 3xTF32: a loaded fragment of FP32 values becomes its TF32 head (in place) and its
// TF32 tail
#ifdef GL_TC_AMPERE
template <typename Fragment>
__device__ __forceinline__ void gl_tc_split(Fragment& head, Fragment& tail)
{
    for (int i = 0; i < head.num_elements; ++i) {
        const float x = head.x[i], h = nvcuda::wmma::__float_to_tf32(x);
        head.x[i] = h;
        tail.x[i] = nvcuda::wmma::__float_to_tf32(x - h);
    }
}
#endif

// FP32 -> TF32 (round to nearest) on a loaded fragment; nothing for FP16 and BF16
template <int PREC, typename Fragment>
__device__ __forceinline__ void gl_tc_round(Fragment& f)
{
#ifdef GL_TC_AMPERE
    if (PREC == 2)
        for (int i = 0; i < f.num_elements; ++i)
            f.x[i] = nvcuda::wmma::__float_to_tf32(f.x[i]);
#endif
}

// Start the copies of a ROWS x COLS tile of a row-major rows x cols matrix, from
// (r0, c0), into shared memory at dst (rows of DS elements): 16 bytes per copy
// (cp.async), zero-filled where the tile leaves the matrix. vec: the matrix's rows
// are whole 16-byte groups; otherwise element by element (plain stores, at once).
// the same copies for a tile that lies wholly inside the matrix, on 16-byte rows:
// no conditions at all
template <int ROWS, int COLS, int DS, int THREADS, typename T>
__device__ __forceinline__ void gl_tc_stage_whole(T* dst, const T* __restrict__ src,
                                                  int cols, int r0, int c0, int tid)
{
    constexpr int V = 16 / sizeof(T);
    static_assert((ROWS * COLS / V) % THREADS == 0, "whole copies per thread");
    #pragma unroll
    for (int q = 0; q < ROWS * COLS / V / THREADS; ++q) {
        const int i = tid + q * THREADS, r = i / (COLS / V),
                  c = (i % (COLS / V)) * V;
        __pipeline_memcpy_async(dst + r * DS + c,
                                src + (size_t)(r0 + r) * cols + c0 + c, 16);
    }
}

// a compile-time true or false, to instantiate a loop once with edge handling and
// once without
template <bool B> struct gl_bool { static constexpr bool value = B; };

template <int ROWS, int COLS, int DS, int THREADS, typename T>
__device__ __forceinline__ void gl_tc_stage(T* dst, const T* __restrict__ src,
                                            int rows, int cols, int r0, int c0,
                                            bool vec, int tid)
{
    constexpr int V = 16 / sizeof(T);
    #pragma unroll
    for (int i = tid; i < ROWS * COLS / V; i += THREADS) {
        const int r = i / (COLS / V), c = (i % (COLS / V)) * V;
        T* d = dst + r * DS + c;
        const T* from = src + (size_t)(r0 + r) * cols + c0 + c;
        const int n = r0 + r < rows ? (cols - c0 - c < 0 ? 0
                                       : cols - c0 - c < V ? cols - c0 - c : V)
                                    : 0;
        if (vec)
            __pipeline_memcpy_async(d, n ? from : src, 16, 16 - n * (int)sizeof(T));
        else
            for (int q = 0; q < V; ++q)
                d[q] = q < n ? from[q] : static_cast<T>(0.0f);
    }
}
