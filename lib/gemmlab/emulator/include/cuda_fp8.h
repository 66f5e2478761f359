// Emulator version of <cuda_fp8.h>: the 8-bit floating-point types __nv_fp8_e4m3 (4 exponent bits, bias 7, no
// infinity, largest 448, NaN 0x7F) and __nv_fp8_e5m2 (5 exponent bits, bias 15, IEEE-like, largest 57344), their
// pairs and quadruples, and the __nv_cvt_* conversions. A value is rounded to the nearest (ties to even) once,
// from the double or float it comes from; beyond the largest finite value it becomes that value with
// __NV_SATFINITE (the constructors' choice, as CUDA's) and NaN (E4M3) or infinity (E5M2) with __NV_NOSAT.
// Back to float, half or bfloat16 a value is exact.
#pragma once
#include <cmath>
#include <cstring>
#include "cuda_fp16.h"
#include "cuda_bf16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

namespace gl_emu {
// (a NaN from a float, half or bfloat16 becomes 0x7F whatever its sign, as the GPU's conversion gives; from a double,
// E4M3 keeps the sign and E5M2 also keeps the top two bits of the NaN's payload, as CUDA's double conversion does)
inline __nv_fp8_storage_t to_fp8(double x, __nv_saturation_t sat, __nv_fp8_interpretation_t kind, bool from_double = false)
{
    const bool e4m3 = kind == __NV_E4M3;
    const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const double largest = e4m3 ? 448.0 : 57344.0, min_normal = std::ldexp(1.0, 1 - bias);
    const unsigned sign = std::signbit(x) ? 0x80u : 0u;
    const unsigned nan = 0x7Fu, biggest = e4m3 ? 0x7Eu : 0x7Bu, inf = 0x7Cu;
    if (std::isnan(x)) {
        if (!from_double) return (__nv_fp8_storage_t)nan;
        if (kind == __NV_E4M3) return (__nv_fp8_storage_t)(sign | nan);
        unsigned long long bits;
        __builtin_memcpy(&bits, &x, 8);
        return (__nv_fp8_storage_t)(sign | 0x7Cu | (unsigned)((bits >> 50) & 3u));
    }
    const double a = std::fabs(x);
    double r;
    if (std::isinf(a)) {
        r = a;
    } else {
        const int e = a < min_normal ? 1 - bias : std::ilogb(a);
        const double q = std::ldexp(1.0, e - mbits);                 // the spacing of values at a
        r = std::nearbyint(a / q) * q;                               // exact scaling, rounded to even
    }
    if (r > largest) {
        if (sat == __NV_SATFINITE) return (__nv_fp8_storage_t)(sign | biggest);
        return (__nv_fp8_storage_t)(sign | (e4m3 ? nan : inf));
    }
    if (r == 0.0) return (__nv_fp8_storage_t)sign;
    if (r < min_normal) return (__nv_fp8_storage_t)(sign | (unsigned)(r / std::ldexp(1.0, 1 - bias - mbits)));
    const int e = std::ilogb(r);
    const unsigned m = (unsigned)((r / std::ldexp(1.0, e) - 1.0) * (1 << mbits));
    return (__nv_fp8_storage_t)(sign | ((unsigned)(e + bias) << mbits) | m);
}
inline double from_fp8(__nv_fp8_storage_t v, __nv_fp8_interpretation_t kind)
{
    const bool e4m3 = kind == __NV_E4M3;
    const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, ebits = e4m3 ? 4 : 5;
    const unsigned m = v & ((1u << mbits) - 1), e = (v >> mbits) & ((1u << ebits) - 1);
    const double s = (v & 0x80u) ? -1.0 : 1.0;
    if (e4m3 && (v & 0x7Fu) == 0x7Fu) return std::nan("");
    if (!e4m3 && e == 31) return m ? std::nan("") : s * HUGE_VAL;
    if (e == 0) return s * std::ldexp((double)m, 1 - bias - mbits);
    return s * std::ldexp(1.0 + (double)m / (1 << mbits), (int)e - bias);
}
}  // namespace gl_emu

inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return ::gl_emu::to_fp8(x, s, k, true); }
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return ::gl_emu::to_fp8(x, s, k); }
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return ::gl_emu::to_fp8((float)__half(x), s, k); }
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return ::gl_emu::to_fp8((float)__nv_bfloat16(x), s, k); }
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return (__nv_fp8x2_storage_t)(::gl_emu::to_fp8(x.x, s, k) | (::gl_emu::to_fp8(x.y, s, k) << 8)); }
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return (__nv_fp8x2_storage_t)(::gl_emu::to_fp8(x.x, s, k, true) | (::gl_emu::to_fp8(x.y, s, k, true) << 8)); }
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{ return (__nv_fp8x2_storage_t)(::gl_emu::to_fp8((float)__half(__half_raw{x.x}), s, k) | (::gl_emu::to_fp8((float)__half(__half_raw{x.y}), s, k) << 8)); }
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k)
{
    return (__nv_fp8x2_storage_t)(::gl_emu::to_fp8((float)__nv_bfloat16(__nv_bfloat16_raw{x.x}), s, k) |
                                  (::gl_emu::to_fp8((float)__nv_bfloat16(__nv_bfloat16_raw{x.y}), s, k) << 8));
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k)
{ return (__half_raw)__half((float)::gl_emu::from_fp8(x, k)); }
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k)
{
    __half2_raw r;
    r.x = ((__half_raw)__half((float)::gl_emu::from_fp8((__nv_fp8_storage_t)(x & 0xFF), k))).x;
    r.y = ((__half_raw)__half((float)::gl_emu::from_fp8((__nv_fp8_storage_t)(x >> 8), k))).x;
    return r;
}

#define GL_FP8(NAME, KIND)                                                                                  \
struct NAME {                                                                                               \
    __nv_fp8_storage_t __x;                                                                                 \
    NAME() = default;                                                                                       \
    explicit NAME(float f) : __x(::gl_emu::to_fp8(f, __NV_SATFINITE, KIND)) {}                              \
    explicit NAME(double f) : __x(::gl_emu::to_fp8(f, __NV_SATFINITE, KIND, true)) {}                       \
    explicit NAME(__half h) : __x(::gl_emu::to_fp8((float)h, __NV_SATFINITE, KIND)) {}                      \
    explicit NAME(__nv_bfloat16 h) : __x(::gl_emu::to_fp8((float)h, __NV_SATFINITE, KIND)) {}               \
    explicit NAME(int v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}                        \
    explicit NAME(unsigned int v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}               \
    explicit NAME(long long v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}                  \
    explicit NAME(short v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}                      \
    explicit NAME(unsigned short v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}             \
    explicit NAME(long v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}                       \
    explicit NAME(unsigned long v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}              \
    explicit NAME(unsigned long long v) : __x(::gl_emu::to_fp8((double)v, __NV_SATFINITE, KIND)) {}         \
    explicit operator float() const { return (float)::gl_emu::from_fp8(__x, KIND); }                        \
    explicit operator double() const { return ::gl_emu::from_fp8(__x, KIND); }                             \
    explicit operator __half() const { return __half((float)::gl_emu::from_fp8(__x, KIND)); }               \
    explicit operator __nv_bfloat16() const { return __nv_bfloat16((float)::gl_emu::from_fp8(__x, KIND)); } \
    explicit operator bool() const { return (__x & 0x7Fu) != 0; }                                           \
    /* to integers: toward zero, NaN 0, clamped to the type (as the GPU's float-to-integer conversions) */   \
    explicit operator int() const { return ::gl_emu::to_int<int>(::gl_emu::from_fp8(__x, KIND), 1); }       \
    explicit operator unsigned int() const { return ::gl_emu::to_int<unsigned int>(::gl_emu::from_fp8(__x, KIND), 1); } \
    explicit operator long long() const { return ::gl_emu::to_int<long long>(::gl_emu::from_fp8(__x, KIND), 1); } \
    explicit operator unsigned long long() const { return ::gl_emu::to_int<unsigned long long>(::gl_emu::from_fp8(__x, KIND), 1); } \
    explicit operator short() const { return (short)::gl_emu::to_int<int>(::gl_emu::from_fp8(__x, KIND), 1); } \
    explicit operator unsigned short() const { return (unsigned short)::gl_emu::to_int<unsigned int>(::gl_emu::from_fp8(__x, KIND), 1); } \
};                                                                                                          \
struct NAME##x2 {                                                                                           \
    __nv_fp8x2_storage_t __x;                                                                               \
    NAME##x2() = default;                                                                                   \
    explicit NAME##x2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, KIND)) {}                 \
    explicit NAME##x2(double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, KIND)) {}               \
    explicit NAME##x2(__half2 h) : __x(__nv_cvt_float2_to_fp8x2(make_float2((float)h.x, (float)h.y), __NV_SATFINITE, KIND)) {} \
    explicit NAME##x2(__nv_bfloat162 h) : __x(__nv_cvt_float2_to_fp8x2(make_float2((float)h.x, (float)h.y), __NV_SATFINITE, KIND)) {} \
    explicit operator float2() const                                                                        \
    { return make_float2((float)::gl_emu::from_fp8((__nv_fp8_storage_t)(__x & 0xFF), KIND),                 \
                         (float)::gl_emu::from_fp8((__nv_fp8_storage_t)(__x >> 8), KIND)); }                \
    explicit operator __half2() const { float2 f = (float2)*this; return __half2(__half(f.x), __half(f.y)); } \
};                                                                                                          \
struct NAME##x4 {                                                                                           \
    __nv_fp8x4_storage_t __x;                                                                               \
    NAME##x4() = default;                                                                                   \
    explicit NAME##x4(float4 f)                                                                             \
        : __x((unsigned)::gl_emu::to_fp8(f.x, __NV_SATFINITE, KIND) | ((unsigned)::gl_emu::to_fp8(f.y, __NV_SATFINITE, KIND) << 8) | \
              ((unsigned)::gl_emu::to_fp8(f.z, __NV_SATFINITE, KIND) << 16) | ((unsigned)::gl_emu::to_fp8(f.w, __NV_SATFINITE, KIND) << 24)) {} \
    explicit NAME##x4(double4 f)                                                                            \
        : __x((unsigned)::gl_emu::to_fp8(f.x, __NV_SATFINITE, KIND, true) | ((unsigned)::gl_emu::to_fp8(f.y, __NV_SATFINITE, KIND, true) << 8) | \
              ((unsigned)::gl_emu::to_fp8(f.z, __NV_SATFINITE, KIND, true) << 16) | ((unsigned)::gl_emu::to_fp8(f.w, __NV_SATFINITE, KIND, true) << 24)) {} \
    NAME##x4(__half2 lo, __half2 hi) : NAME##x4(make_float4((float)lo.x, (float)lo.y, (float)hi.x, (float)hi.y)) {} \
    NAME##x4(__nv_bfloat162 lo, __nv_bfloat162 hi) : NAME##x4(make_float4((float)lo.x, (float)lo.y, (float)hi.x, (float)hi.y)) {} \
    explicit operator float4() const                                                                        \
    { return make_float4((float)::gl_emu::from_fp8((__nv_fp8_storage_t)(__x & 0xFF), KIND),                 \
                         (float)::gl_emu::from_fp8((__nv_fp8_storage_t)((__x >> 8) & 0xFF), KIND),          \
                         (float)::gl_emu::from_fp8((__nv_fp8_storage_t)((__x >> 16) & 0xFF), KIND),         \
                         (float)::gl_emu::from_fp8((__nv_fp8_storage_t)(__x >> 24), KIND)); }               \
};
GL_FP8(__nv_fp8_e4m3, __NV_E4M3)
GL_FP8(__nv_fp8_e5m2, __NV_E5M2)
#undef GL_FP8
typedef __nv_fp8_e4m3 nv_fp8_e4m3;
typedef __nv_fp8_e5m2 nv_fp8_e5m2;
