// common/tc.cuh — the tensor-core kernels' precisions (Part V): the element type in memory, the wmma
// fragment type and the fragment's K for PREC = 0 (FP16), 1 (BF16, passed as its bits), 2 (FP32 in
// memory, rounded to TF32 in the fragments) and 3 (FP32 as 3xTF32: a head and a tail per value).
#pragma once
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <int PREC> struct gl_tc;
template <> struct gl_tc<0> { using in = __half; using frag = __half; static constexpr int KS = 16; };
template <> struct gl_tc<1> { using in = __nv_bfloat16; using frag = __nv_bfloat16; static constexpr int KS = 16; };
template <> struct gl_tc<2> { using in = float; using frag = nvcuda::wmma::precision::tf32; static constexpr int KS = 8; };
template <> struct gl_tc<3> : gl_tc<2> {};                  // 3xTF32: FP32 in memory, TF32 head and tail

// 3xTF32: a loaded fragment of FP32 values becomes its TF32 head (in place) and its TF32 tail
template <typename Fragment>
__device__ __forceinline__ void gl_tc_split(Fragment& head, Fragment& tail)
{
    for (int i = 0; i < head.num_elements; ++i) {
        const float x = head.x[i], h = nvcuda::wmma::__float_to_tf32(x);
        head.x[i] = h;
        tail.x[i] = nvcuda::wmma::__float_to_tf32(x - h);
    }
}

// FP32 -> TF32 (round to nearest) on a loaded fragment; nothing for FP16 and BF16
template <int PREC, typename Fragment>
__device__ __forceinline__ void gl_tc_round(Fragment& f)
{
    if (PREC == 2)
        for (int i = 0; i < f.num_elements; ++i) f.x[i] = nvcuda::wmma::__float_to_tf32(f.x[i]);
}
