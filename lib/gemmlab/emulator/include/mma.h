// Emulator version of <mma.h>: nvcuda::wmma, warp-wide matrix multiply-accumulate on fragments.
//
// Shapes and types as CUDA has them: m16n16k16, m32n8k16 and m8n32k16 with __half or __nv_bfloat16 inputs,
// m16n16k8 with precision::tf32 (float storage), accumulators float or __half; the same shapes with signed or
// unsigned char inputs and int accumulators; m8n8k4 in double. (Not the experimental sub-byte ones.) On a GPU the elements of a fragment are spread over the warp's lanes in
// an order CUDA leaves unspecified; here every lane holds the whole tile (num_elements is the tile's
// size, x[] row by row), so element-wise code over x[0 .. num_elements) means the same. Loads read the
// tile in every lane; a store is shared among the warp's lanes (each element written once); each load and store
// waits for the warp's lanes, as the .sync instructions do (gl_wmma_sync); mma_sync
// computes D = A B + C with exact products (an FP16, BF16 or TF32 product fits in FP32) added into an
// FP32 accumulator as the H200's tensor cores add them (gl_tc_matmul below): G products at a time (16 for
// FP16 and BF16, 4 for TF32) together with the accumulator, each term cut (toward zero) to 26 bits
// below the largest term's leading bit, the sum rounded toward zero to FP32. That model reproduces the
// errors measured on the H200 to two or three digits at K = 256 .. 4096 (results/tensor-nvidia-h200.json,
// Part V chapter 1); it is the shape Fasi, Higham, Mikaitis and Pranesh found on V100/T4/A100 ("Numerical
// behavior of NVIDIA tensor cores", PeerJ CS 2021). A __half accumulator adds in k order, rounding to
// nearest. A TF32 operand keeps 10 of its 23 mantissa bits: __float_to_tf32 rounds to nearest, ties
// away from zero (cvt.rna.tf32.f32); a value left unconverted loses its low bits by truncation.
#pragma once
#include "gemmlab_emu.h"
#include <cfloat>
#include <climits>
#include <cstdint>
#include <cstring>
#include "gl_emu_half.h"
#include "gl_emu_tensor.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
#if __CUDA_ARCH__ >= 800
// BF16 and TF32 fragments exist from compute capability 8.0, as in CUDA's mma.h (which defines this macro)
#define __CUDA_AMPERE_MMA__ 1
namespace precision { struct tf32 {}; }
#endif

template <class Use, int M, int N, int K> struct gl_shape;
template <int M, int N, int K> struct gl_shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct gl_shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct gl_shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <class T> struct gl_storage { using type = T; };
#ifdef __CUDA_AMPERE_MMA__
template <> struct gl_storage<precision::tf32> { using type = float; };
#endif

template <class T, int M, int N, int K> struct gl_legal { static constexpr bool value = false; };
#define GL_WMMA_SHAPE(T, M, N, K) template <> struct gl_legal<T, M, N, K> { static constexpr bool value = true; };
GL_WMMA_SHAPE(__half, 16, 16, 16) GL_WMMA_SHAPE(__half, 32, 8, 16) GL_WMMA_SHAPE(__half, 8, 32, 16)
#ifdef __CUDA_AMPERE_MMA__
GL_WMMA_SHAPE(__nv_bfloat16, 16, 16, 16) GL_WMMA_SHAPE(__nv_bfloat16, 32, 8, 16) GL_WMMA_SHAPE(__nv_bfloat16, 8, 32, 16)
GL_WMMA_SHAPE(precision::tf32, 16, 16, 8) GL_WMMA_SHAPE(float, 16, 16, 8)
#endif
GL_WMMA_SHAPE(float, 16, 16, 16) GL_WMMA_SHAPE(float, 32, 8, 16) GL_WMMA_SHAPE(float, 8, 32, 16)
#if __CUDA_ARCH__ >= 720
// 8-bit integers (compute capability 7.2 on): signed char or unsigned char operands, int accumulators
GL_WMMA_SHAPE(signed char, 16, 16, 16) GL_WMMA_SHAPE(signed char, 32, 8, 16) GL_WMMA_SHAPE(signed char, 8, 32, 16)
GL_WMMA_SHAPE(unsigned char, 16, 16, 16) GL_WMMA_SHAPE(unsigned char, 32, 8, 16) GL_WMMA_SHAPE(unsigned char, 8, 32, 16)
GL_WMMA_SHAPE(int, 16, 16, 16) GL_WMMA_SHAPE(int, 32, 8, 16) GL_WMMA_SHAPE(int, 8, 32, 16)
#endif
#ifdef __CUDA_AMPERE_MMA__
GL_WMMA_SHAPE(double, 8, 8, 4)                           // FP64 (compute capability 8.0 on), double accumulators
#endif
#undef GL_WMMA_SHAPE

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
    static_assert(gl_legal<T, M, N, K>::value, "this wmma fragment shape and type is not one CUDA offers");
    using element_type = typename gl_storage<T>::type;
    static constexpr int rows = gl_shape<Use, M, N, K>::rows, cols = gl_shape<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols;      // the whole tile, in every lane (see above)
    element_type x[num_elements];                          // row by row
};

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& v)
{
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = static_cast<typename fragment<Use, M, N, K, T, L>::element_type>(v);
}

// wmma's loads, stores and products are .sync: a lane waits until every lane of its warp executes the same one,
// so what the warp's lanes stored before a load (staging a tile, with no barrier) is there when it loads, and a
// store is whole before any lane reads it back. Here: a __syncwarp over the warp's lanes before each load and
// after each store.
inline void gl_wmma_sync()
{
    const unsigned me = ::gl_emu::g.fibers[::gl_emu::g.cur].linear, base = me & ~31u;
    const unsigned lanes = ::gl_emu::g.n - base < 32 ? ::gl_emu::g.n - base : 32;
    __syncwarp(lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u);
}

template <class F, class P>
inline void gl_load(F& f, const P* p, unsigned ldm, bool row)
{
    gl_wmma_sync();
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c)
            f.x[r * F::cols + c] = static_cast<typename F::element_type>(row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r]);
}

template <class Use, int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major>& f, const P* p, unsigned ldm) { gl_load(f, p, ldm, true); }
template <class Use, int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major>& f, const P* p, unsigned ldm) { gl_load(f, p, ldm, false); }
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const P* p, unsigned ldm, layout_t layout)
{
    gl_load(f, p, ldm, layout == mem_row_major);
}

// A store is the warp's: element e of the tile is written by lane e % (lanes in the warp), once.
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout)
{
    using F = fragment<accumulator, M, N, K, T>;
    const unsigned me = ::gl_emu::g.fibers[::gl_emu::g.cur].linear, base = me & ~31u;
    const unsigned lanes = ::gl_emu::g.n - base < 32 ? ::gl_emu::g.n - base : 32, lane = me - base;
    for (int e = (int)lane; e < F::num_elements; e += (int)lanes) {
        const int r = e / F::cols, c = e % F::cols;
        P& out = layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
        out = static_cast<P>(f.x[e]);
    }
    gl_wmma_sync();
}

#ifdef __CUDA_AMPERE_MMA__
// TF32: 10 mantissa bits. __float_to_tf32 rounds to nearest, ties away (cvt.rna.tf32.f32); an operand
// that was not converted is truncated, as the tensor cores read only its top 19 bits.
inline float __float_to_tf32(float f)
{
    unsigned u;
    __builtin_memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
#endif
template <class T> inline float gl_operand(T v) { return static_cast<float>(v); }
using ::gl_emu::gl_tf32_operand;
template <class T> struct gl_is_tf32 { static constexpr bool value = false; };
#ifdef __CUDA_AMPERE_MMA__
template <> struct gl_is_tf32<precision::tf32> { static constexpr bool value = true; };
#endif

// How many products the tensor cores add into an FP32 accumulator at a time (measured on the H200).
template <class T> struct gl_tc_group { static constexpr int value = ::gl_emu::GL_TC_GROUP_16BIT; };
#ifdef __CUDA_AMPERE_MMA__
template <> struct gl_tc_group<precision::tf32> { static constexpr int value = ::gl_emu::GL_TC_GROUP_TF32; };
#endif
using ::gl_emu::gl_tc_matmul;            // (gl_emu_tensor.h: the tensor cores' FP32 accumulation)

// 8-bit integers: exact products and sums in 32-bit integers, wrapping as the GPU's do, or with satf clamped to
// int's range; FP64: each product added in k order with one rounding (a fused multiply-add), as DMMA does.
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void gl_exact_mma(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                         const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c,
                         bool satf)
{
    TD out[M * N];
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            if constexpr (std::is_same<TA, double>::value) {
                double acc = c.x[i * N + j];
                for (int k = 0; k < K; ++k) acc = std::fma(a.x[i * K + k], b.x[k * N + j], acc);
                out[i * N + j] = acc;
            } else {
                long long acc = c.x[i * N + j];
                for (int k = 0; k < K; ++k) acc += (long long)a.x[i * K + k] * (long long)b.x[k * N + j];
                if (satf) acc = acc > INT_MAX ? INT_MAX : acc < INT_MIN ? INT_MIN : acc;
                out[i * N + j] = (int)(unsigned)(unsigned long long)acc;
            }
        }
    for (int e = 0; e < M * N; ++e) d.x[e] = out[e];
}
template <class T> struct gl_exact { static constexpr bool value = std::is_same<T, signed char>::value ||
                                                                   std::is_same<T, unsigned char>::value ||
                                                                   std::is_same<T, double>::value; };
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c,
                     bool satf)
{
    static_assert(gl_exact<TA>::value, "wmma::mma_sync takes satf with 8-bit integer fragments only");
    gl_exact_mma(d, a, b, c, satf);
}
// FP16, BF16, TF32: exact products added into the accumulator as the tensor cores add them (gl_tc_matmul above)
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void gl_tc_mma(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                      const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c)
{
    constexpr int G = gl_tc_group<TA>::value;
    static_assert(K % G == 0 && G <= 16, "a whole number of product groups per mma_sync");
    float out[M * N], A[M * K];
    double B[K * N];
    for (int e = 0; e < M * K; ++e) {
        const float v = gl_operand(a.x[e]);
        A[e] = gl_is_tf32<TA>::value ? gl_tf32_operand(v) : v;
    }
    for (int e = 0; e < K * N; ++e) {
        const float v = gl_operand(b.x[e]);
        B[e] = gl_is_tf32<TA>::value ? gl_tf32_operand(v) : v;
    }
    for (int e = 0; e < M * N; ++e) out[e] = static_cast<float>(c.x[e]);
    if (std::is_same<TC, float>::value) {
        gl_tc_matmul(out, N, A, K, B, N, M, N, K, G);
    } else {                                                        // a __half accumulator: in k order
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j)
                for (int k = 0; k < K; ++k)
                    out[i * N + j] = std::fma(static_cast<float>(static_cast<double>(A[i * K + k]) * B[k * N + j]),
                                              1.0f, out[i * N + j]);
    }
    for (int e = 0; e < M * N; ++e) d.x[e] = static_cast<typename fragment<accumulator, M, N, K, TD>::element_type>(out[e]);
}
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC>& c)
{
    static_assert(std::is_same<TA, TB>::value, "matrix_a and matrix_b fragments of one mma_sync have one type");
    if constexpr (gl_exact<TA>::value) gl_exact_mma(d, a, b, c, false);
    else gl_tc_mma(d, a, b, c);
}

}  // namespace wmma
}  // namespace nvcuda
