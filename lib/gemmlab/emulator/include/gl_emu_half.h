// The emulator's 16-bit floating-point types: __half (IEEE binary16) and __nv_bfloat16, for
// <cuda_fp16.h> and <cuda_bf16.h>. Values are stored as their 16 bits; conversions round as the GPU's
// cvt instructions do (rn to nearest even, rz, ru, rd; subnormals kept; NaN becomes the canonical
// 0x7fff); arithmetic is done in float (or double for fma) and rounded once to 16 bits, which gives the
// correctly rounded result the GPU's half and bfloat16 units give (float has more than 2p + 2 bits).
#pragma once
#include "gemmlab_emu.h"

namespace gl_emu {
enum { RN = 0, RZ = 1, RU = 2, RD = 3 };

// Round |a| (finite, non-negative) to a multiple of 2^q, q = the quantum's exponent; sign for ru/rd.
inline float round_to_quantum(float a, int q, int mode, bool negative)
{
    float scaled = std::ldexp(a, -q);               // exact: a power-of-two scaling
    float whole = std::floor(scaled), frac = scaled - whole;
    bool up;
    switch (mode) {
        case RZ: up = false; break;
        case RU: up = frac > 0 && !negative; break;
        case RD: up = frac > 0 && negative; break;
        default: up = frac > 0.5f || (frac == 0.5f && std::fmod(whole, 2.0f) != 0); break;
    }
    return std::ldexp(whole + (up ? 1.0f : 0.0f), q);
}

// float -> IEEE binary16 bits.
inline unsigned short float_to_half_bits(float f, int mode)
{
    if (f != f) return 0x7fff;
    const unsigned short sign = std::signbit(f) ? 0x8000 : 0;
    const bool negative = sign != 0;
    float a = std::fabs(f);
    const bool away = mode == RN || (mode == RU && !negative) || (mode == RD && negative);
    if (std::isinf(a)) return sign | 0x7c00;
    int e;
    std::frexp(a, &e);                              // a = m * 2^e, m in [0.5, 1): the unit in the last place
    int q = (e - 1) - 10;                           // of a normal half is 2^(exponent - 10)
    if (q < -24) q = -24;                           // subnormals: a fixed quantum of 2^-24
    float v = a == 0 ? 0.0f : round_to_quantum(a, q, mode, negative);
    if (v > 65504.0f) return sign | (away ? 0x7c00 : 0x7bff);
    if (v < 6.103515625e-05f) return sign | (unsigned short)std::ldexp(v, 24);   // subnormal (or zero)
    std::frexp(v, &e);
    const int exponent = e - 1;
    const unsigned mant = (unsigned)std::ldexp(v, 10 - exponent) - 1024u;
    return sign | (unsigned short)(((exponent + 15) << 10) | mant);
}

inline float half_bits_to_float(unsigned short h)
{
    const float sign = (h & 0x8000) ? -1.0f : 1.0f;
    const int exponent = (h >> 10) & 0x1f;
    const unsigned mant = h & 0x3ff;
    if (exponent == 0x1f) return mant ? std::numeric_limits<float>::quiet_NaN() : sign * INFINITY;
    if (exponent == 0) return sign * (static_cast<float>(mant) * 0x1p-24f);      // (exact: a subnormal half)
    const unsigned bits = ((h & 0x8000u) << 16) | (static_cast<unsigned>(exponent + 112) << 23) | (mant << 13);
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

// float -> bfloat16 bits: the top 16 bits of the float, rounded.
inline unsigned short float_to_bf16_bits(float f, int mode)
{
    if (f != f) return 0x7fff;
    unsigned int x;
    __builtin_memcpy(&x, &f, 4);
    const bool negative = (x >> 31) != 0;
    const unsigned int rest = x & 0xffffu;
    unsigned int top = x >> 16;
    if ((x & 0x7f800000u) == 0x7f800000u) return (unsigned short)top;   // inf
    bool up;
    switch (mode) {
        case RZ: up = false; break;
        case RU: up = rest && !negative; break;
        case RD: up = rest && negative; break;
        default: up = rest > 0x8000u || (rest == 0x8000u && (top & 1u)); break;
    }
    return (unsigned short)(top + (up ? 1u : 0u));
}

inline float bf16_bits_to_float(unsigned short b)
{
    unsigned int x = (unsigned int)b << 16;
    float f;
    __builtin_memcpy(&f, &x, 4);
    return f;
}
}  // namespace gl_emu

// One definition for both types: T the 16-bit type, P its pair, F2B/B2F the conversions, PFX the name
// prefix of CUDA's functions (h for half: __hadd, hsqrt; the bfloat16 ones share the names through
// overloading, as cuda_bf16.h does).
#define GL_EMU_16BIT(T, P, RAW, F2B, B2F)                                                              \
struct RAW { unsigned short x; };                                                                        \
struct __attribute__((aligned(2))) T {                                                                  \
    unsigned short __x;                                                                                  \
    T() = default;                                                                                       \
    T(const RAW& r) : __x(r.x) {}                                                                        \
    T(float f) : __x(::gl_emu::F2B(f, ::gl_emu::RN)) {}                                                  \
    T(double d) : __x(::gl_emu::F2B((float)d, ::gl_emu::RN)) {}                                          \
    T(int i) : __x(::gl_emu::F2B((float)i, ::gl_emu::RN)) {}                                             \
    T(unsigned int i) : __x(::gl_emu::F2B((float)i, ::gl_emu::RN)) {}                                    \
    T(long long i) : __x(::gl_emu::F2B((float)i, ::gl_emu::RN)) {}                                       \
    T(short i) : __x(::gl_emu::F2B((float)i, ::gl_emu::RN)) {}                                           \
    T(unsigned short i) : __x(::gl_emu::F2B((float)i, ::gl_emu::RN)) {}                                  \
    operator float() const { return ::gl_emu::B2F(__x); }                                                \
    operator RAW() const { return RAW{__x}; }                                                            \
    T& operator=(const RAW& r) { __x = r.x; return *this; }                                              \
    T& operator=(float f) { __x = ::gl_emu::F2B(f, ::gl_emu::RN); return *this; }                        \
    T& operator=(double d) { __x = ::gl_emu::F2B((float)d, ::gl_emu::RN); return *this; }                \
};                                                                                                       \
struct __attribute__((aligned(4))) P {                                                                  \
    T x, y;                                                                                              \
    P() = default;                                                                                       \
    P(const T& a, const T& b) : x(a), y(b) {}                                                            \
};                                                                                                       \
inline T gl_make_##T(float f, int mode) { RAW r{::gl_emu::F2B(f, mode)}; return T(r); }                \
inline T operator+(const T& a, const T& b) { return T((float)a + (float)b); }                             \
inline T operator-(const T& a, const T& b) { return T((float)a - (float)b); }                             \
inline T operator*(const T& a, const T& b) { return T((float)a * (float)b); }                             \
inline T operator/(const T& a, const T& b) { return T((float)a / (float)b); }                             \
inline T operator-(const T& a) { RAW r{(unsigned short)(a.__x ^ 0x8000u)}; return T(r); }                 \
inline T operator+(const T& a) { return a; }                                                              \
inline T& operator+=(T& a, const T& b) { return a = a + b; }                                              \
inline T& operator-=(T& a, const T& b) { return a = a - b; }                                              \
inline T& operator*=(T& a, const T& b) { return a = a * b; }                                              \
inline T& operator/=(T& a, const T& b) { return a = a / b; }                                              \
inline bool operator==(const T& a, const T& b) { return (float)a == (float)b; }                           \
inline bool operator!=(const T& a, const T& b) { return (float)a != (float)b; }                           \
inline bool operator<(const T& a, const T& b) { return (float)a < (float)b; }                             \
inline bool operator>(const T& a, const T& b) { return (float)a > (float)b; }                             \
inline bool operator<=(const T& a, const T& b) { return (float)a <= (float)b; }                           \
inline bool operator>=(const T& a, const T& b) { return (float)a >= (float)b; }                           \
inline P operator+(const P& a, const P& b) { return P(a.x + b.x, a.y + b.y); }                            \
inline P operator-(const P& a, const P& b) { return P(a.x - b.x, a.y - b.y); }                            \
inline P operator*(const P& a, const P& b) { return P(a.x * b.x, a.y * b.y); }                            \
inline P operator/(const P& a, const P& b) { return P(a.x / b.x, a.y / b.y); }                            \
inline P& operator+=(P& a, const P& b) { return a = a + b; }                                              \
inline P& operator*=(P& a, const P& b) { return a = a * b; }                                              \
inline T __hadd(T a, T b) { return a + b; }                                                               \
inline T __hsub(T a, T b) { return a - b; }                                                               \
inline T __hmul(T a, T b) { return a * b; }                                                               \
inline T __hdiv(T a, T b) { return a / b; }                                                               \
inline T __hadd_rn(T a, T b) { return a + b; }                                                            \
inline T __hsub_rn(T a, T b) { return a - b; }                                                            \
inline T __hmul_rn(T a, T b) { return a * b; }                                                           \
inline T __hfma(T a, T b, T c)                                                                            \
{ return T((float)std::fma((double)(float)a, (double)(float)b, (double)(float)c)); }                      \
inline T __hneg(T a) { return -a; }                                                                       \
inline T __habs(T a) { RAW r{(unsigned short)(a.__x & 0x7fffu)}; return T(r); }                          \
inline T __hadd_sat(T a, T b) { float v = (float)(a + b); return T(v != v || v < 0 ? 0.0f : (v > 1 ? 1.0f : v)); } \
inline T __hmul_sat(T a, T b) { float v = (float)(a * b); return T(v != v || v < 0 ? 0.0f : (v > 1 ? 1.0f : v)); } \
inline T __hmax(T a, T b) { return (float)a != (float)a ? b : ((float)b != (float)b ? a : (a < b ? b : a)); } \
inline T __hmin(T a, T b) { return (float)a != (float)a ? b : ((float)b != (float)b ? a : (b < a ? b : a)); } \
inline bool __heq(T a, T b) { return a == b; }                                                            \
inline bool __hne(T a, T b) { return a != b; }                                                            \
inline bool __hlt(T a, T b) { return a < b; }                                                             \
inline bool __hle(T a, T b) { return a <= b; }                                                            \
inline bool __hgt(T a, T b) { return a > b; }                                                             \
inline bool __hge(T a, T b) { return a >= b; }                                                            \
inline bool __hisnan(T a) { return (float)a != (float)a; }                                                \
inline int __hisinf(T a) { float f = (float)a; return std::isinf(f) ? (f > 0 ? 1 : -1) : 0; }            \
inline T hsqrt(T a) { return T(std::sqrt((float)a)); }                                                    \
inline T hrsqrt(T a) { return T(1.0f / std::sqrt((float)a)); }                                            \
inline T hrcp(T a) { return T(1.0f / (float)a); }                                                         \
inline T hexp(T a) { return T(std::exp((float)a)); }                                                      \
inline T hexp2(T a) { return T(std::exp2((float)a)); }                                                    \
inline T hlog(T a) { return T(std::log((float)a)); }                                                      \
inline T hlog2(T a) { return T(std::log2((float)a)); }                                                    \
inline T hsin(T a) { return T(std::sin((float)a)); }                                                      \
inline T hcos(T a) { return T(std::cos((float)a)); }                                                      \
inline T htanh(T a) { return T(std::tanh((float)a)); }                                                    \
inline T hfloor(T a) { return T(std::floor((float)a)); }                                                  \
inline T hceil(T a) { return T(std::ceil((float)a)); }                                                    \
inline T htrunc(T a) { return T(std::trunc((float)a)); }                                                  \
inline T hrint(T a) { return T(std::nearbyint((float)a)); }                                               \
inline P __hadd2(P a, P b) { return a + b; }                                                              \
inline P __hsub2(P a, P b) { return a - b; }                                                              \
inline P __hmul2(P a, P b) { return a * b; }                                                              \
inline P __h2div(P a, P b) { return a / b; }                                                              \
inline P __hfma2(P a, P b, P c) { return P(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }               \
inline P __hneg2(P a) { return P(-a.x, -a.y); }                                                           \
inline P __habs2(P a) { return P(__habs(a.x), __habs(a.y)); }                                             \
inline P __hmax2(P a, P b) { return P(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                              \
inline P __hmin2(P a, P b) { return P(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                              \
inline P h2sqrt(P a) { return P(hsqrt(a.x), hsqrt(a.y)); }                                                \
inline P h2exp(P a) { return P(hexp(a.x), hexp(a.y)); }                                                   \
inline T atomicAdd(T* p, T v) { ::gl_emu::AtomicTurn turn(p, "atomicAdd"); T old = *p; *p = old + v; return old; } \
inline P atomicAdd(P* p, P v) { ::gl_emu::AtomicTurn turn(p, "atomicAdd"); P old = *p; *p = old + v; return old; }

GL_EMU_16BIT(__half, __half2, __half_raw, float_to_half_bits, half_bits_to_float)
GL_EMU_16BIT(__nv_bfloat16, __nv_bfloat162, __nv_bfloat16_raw, float_to_bf16_bits, bf16_bits_to_float)
#undef GL_EMU_16BIT
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat162_raw { unsigned short x, y; };

using half = __half;
using half2 = __half2;
using nv_bfloat16 = __nv_bfloat16;
using nv_bfloat162 = __nv_bfloat162;

// conversions, named as CUDA names them
#define GL_CONV4(NAME, T, MK) \
    inline T NAME##_rn(float f) { return MK(f, ::gl_emu::RN); } inline T NAME##_rz(float f) { return MK(f, ::gl_emu::RZ); } \
    inline T NAME##_ru(float f) { return MK(f, ::gl_emu::RU); } inline T NAME##_rd(float f) { return MK(f, ::gl_emu::RD); }
GL_CONV4(__float2half, __half, gl_make___half)
GL_CONV4(__float2bfloat16, __nv_bfloat16, gl_make___nv_bfloat16)
#undef GL_CONV4
inline __half __float2half(float f) { return __half(f); }
inline __half __double2half(double d) { return __half(d); }
inline float __half2float(__half h) { return (float)h; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16(d); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
inline __half2 __float2half2_rn(float a) { return __half2(__half(a), __half(a)); }
inline __half2 __float22half2_rn(float2 v) { return __floats2half2_rn(v.x, v.y); }
inline float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b)); }
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __floats2bfloat162_rn(a, a); }
inline __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __floats2bfloat162_rn(v.x, v.y); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2((float)h.x, (float)h.y); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return (float)h.x; }
inline float __high2float(__half2 h) { return (float)h.y; }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline float __low2float(__nv_bfloat162 h) { return (float)h.x; }
inline float __high2float(__nv_bfloat162 h) { return (float)h.y; }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return (short)h.__x; }
inline __half __ushort_as_half(unsigned short u) { return __half(__half_raw{u}); }
inline __half __short_as_half(short s) { return __half(__half_raw{(unsigned short)s}); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16(__nv_bfloat16_raw{u}); }
inline __nv_bfloat16 __short_as_bfloat16(short s) { return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)s}); }
inline __half __int2half_rn(int i) { return __float2half_rn((float)i); }
inline int __half2int_rz(__half h) { return __float2int_rz((float)h); }
inline int __half2int_rn(__half h) { return __float2int_rn((float)h); }
inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __float2bfloat16_rn((float)i); }
inline int __bfloat162int_rz(__nv_bfloat16 h) { return __float2int_rz((float)h); }
inline int __bfloat162int_rn(__nv_bfloat16 h) { return __float2int_rn((float)h); }

// The rest of cuda_fp16.h's and cuda_bf16.h's functions, for both types (the same names, by overloading, as
// CUDA has them): saturating and ReLU forms, NaN-propagating max/min, the unordered comparisons, the pair
// forms of every function (a pair's comparison gives 1.0 or 0.0 a half; the __hb...2 forms a bool for both;
// the _mask forms 0xffff a half), complex multiply-add, and the conversions to and from every integer type
// in each rounding mode (an integer is rounded once: through a float that keeps a sticky bit).
namespace gl_emu {
inline float sat01(float v) { return v != v ? 0.0f : (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v)); }
// v as a float that rounds to 16 bits as v itself would: above 2^24, cut to 24 bits with the lowest set if
// anything was cut (rounding to odd, exact for a target of at most 22 bits)
inline float int_for_16bit(unsigned long long magnitude, bool negative)
{
    int bits = 64 - __builtin_clzll(magnitude | 1ull);
    if (bits > 24) {
        const int cut = bits - 24;
        const unsigned long long kept = magnitude >> cut, lost = magnitude & ((1ull << cut) - 1ull);
        magnitude = (kept | (lost ? 1ull : 0ull)) << cut;
    }
    const float f = (float)magnitude;                       // exact now
    return negative ? -f : f;
}
template <class I> inline float int_for_16bit(I v)
{
    const bool negative = v < 0;
    const unsigned long long m = negative ? 0ull - (unsigned long long)v : (unsigned long long)v;
    return int_for_16bit(m, negative);
}
}  // namespace gl_emu
#define GL_EMU_16BIT_MORE(T, P, MASKED)                                                                    \
inline P operator-(const P& a) { return P(-a.x, -a.y); }                                                  \
inline P& operator-=(P& a, const P& b) { return a = a - b; }                                              \
inline P& operator/=(P& a, const P& b) { return a = a / b; }                                              \
inline bool operator==(const P& a, const P& b) { return a.x == b.x && a.y == b.y; }                       \
inline bool operator!=(const P& a, const P& b) { return a.x != b.x && a.y != b.y; }                       \
inline bool operator<(const P& a, const P& b) { return a.x < b.x && a.y < b.y; }                          \
inline bool operator>(const P& a, const P& b) { return a.x > b.x && a.y > b.y; }                          \
inline bool operator<=(const P& a, const P& b) { return a.x <= b.x && a.y <= b.y; }                       \
inline bool operator>=(const P& a, const P& b) { return a.x >= b.x && a.y >= b.y; }                       \
inline T __hsub_sat(T a, T b) { return T(::gl_emu::sat01((float)(a - b))); }                               \
inline T __hfma_sat(T a, T b, T c) { return T(::gl_emu::sat01((float)__hfma(a, b, c))); }                 \
inline T __hfma_relu(T a, T b, T c)                                                                       \
{ T r = __hfma(a, b, c); return __hisnan(r) ? T(::std::numeric_limits<float>::quiet_NaN()) : (r < T(0.0f) ? T(0.0f) : r); } \
inline T __hmax_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T(::std::numeric_limits<float>::quiet_NaN()) : __hmax(a, b); } \
inline T __hmin_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T(::std::numeric_limits<float>::quiet_NaN()) : __hmin(a, b); } \
inline bool __hequ(T a, T b) { return !(a < b || a > b); }                                                \
inline bool __hneu(T a, T b) { return !(a == b); }                                                        \
inline bool __hltu(T a, T b) { return !(a >= b); }                                                        \
inline bool __hleu(T a, T b) { return !(a > b); }                                                         \
inline bool __hgtu(T a, T b) { return !(a <= b); }                                                        \
inline bool __hgeu(T a, T b) { return !(a < b); }                                                         \
inline T hexp10(T a) { return T(std::pow(10.0f, (float)a)); }                                             \
inline T hlog10(T a) { return T(std::log10((float)a)); }                                                  \
inline T htanh_approx(T a) { return htanh(a); }                                                           \
inline P __hadd2_rn(P a, P b) { return a + b; }                                                           \
inline P __hsub2_rn(P a, P b) { return a - b; }                                                           \
inline P __hmul2_rn(P a, P b) { return a * b; }                                                           \
GL_EMU_16BIT_PAIR2(T, P, __hadd_sat, __hadd2_sat) GL_EMU_16BIT_PAIR2(T, P, __hsub_sat, __hsub2_sat)       \
GL_EMU_16BIT_PAIR2(T, P, __hmul_sat, __hmul2_sat) GL_EMU_16BIT_PAIR2(T, P, __hmax_nan, __hmax2_nan)       \
GL_EMU_16BIT_PAIR2(T, P, __hmin_nan, __hmin2_nan)                                                         \
GL_EMU_16BIT_PAIR3(T, P, __hfma_sat, __hfma2_sat) GL_EMU_16BIT_PAIR3(T, P, __hfma_relu, __hfma2_relu)     \
inline P __hisnan2(P a) { return P(T(__hisnan(a.x) ? 1.0f : 0.0f), T(__hisnan(a.y) ? 1.0f : 0.0f)); }     \
inline P __lowhigh2highlow(P a) { return P(a.y, a.x); }                                                   \
inline P __low2half2(P a) { return P(a.x, a.x); }                                                         \
inline P __high2half2(P a) { return P(a.y, a.y); }                                                        \
inline P __hcmadd(P a, P b, P c)            /* two 16-bit fmas a part, each rounded, as CUDA computes it */ \
{ return P(__hfma(-a.y, b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y))); }           \
GL_EMU_16BIT_PAIR1(T, P, hrsqrt, h2rsqrt) GL_EMU_16BIT_PAIR1(T, P, hrcp, h2rcp)                           \
GL_EMU_16BIT_PAIR1(T, P, hlog, h2log) GL_EMU_16BIT_PAIR1(T, P, hlog2, h2log2)                             \
GL_EMU_16BIT_PAIR1(T, P, hlog10, h2log10) GL_EMU_16BIT_PAIR1(T, P, hexp2, h2exp2)                         \
GL_EMU_16BIT_PAIR1(T, P, hexp10, h2exp10) GL_EMU_16BIT_PAIR1(T, P, hcos, h2cos)                           \
GL_EMU_16BIT_PAIR1(T, P, hsin, h2sin) GL_EMU_16BIT_PAIR1(T, P, htrunc, h2trunc)                           \
GL_EMU_16BIT_PAIR1(T, P, hceil, h2ceil) GL_EMU_16BIT_PAIR1(T, P, hfloor, h2floor)                         \
GL_EMU_16BIT_PAIR1(T, P, hrint, h2rint) GL_EMU_16BIT_PAIR1(T, P, htanh, h2tanh)                           \
GL_EMU_16BIT_COMPARE(T, P, eq, __heq) GL_EMU_16BIT_COMPARE(T, P, ne, __hne)                               \
GL_EMU_16BIT_COMPARE(T, P, lt, __hlt) GL_EMU_16BIT_COMPARE(T, P, le, __hle)                               \
GL_EMU_16BIT_COMPARE(T, P, gt, __hgt) GL_EMU_16BIT_COMPARE(T, P, ge, __hge)                               \
GL_EMU_16BIT_COMPARE(T, P, equ, __hequ) GL_EMU_16BIT_COMPARE(T, P, neu, __hneu)                           \
GL_EMU_16BIT_COMPARE(T, P, ltu, __hltu) GL_EMU_16BIT_COMPARE(T, P, leu, __hleu)                           \
GL_EMU_16BIT_COMPARE(T, P, gtu, __hgtu) GL_EMU_16BIT_COMPARE(T, P, geu, __hgeu)
// f over pairs, half by half
#define GL_EMU_16BIT_PAIR1(T, P, F, F2) inline P F2(P a) { return P(F(a.x), F(a.y)); }
#define GL_EMU_16BIT_PAIR2(T, P, F, F2) inline P F2(P a, P b) { return P(F(a.x, b.x), F(a.y, b.y)); }
#define GL_EMU_16BIT_PAIR3(T, P, F, F2) inline P F2(P a, P b, P c) { return P(F(a.x, b.x, c.x), F(a.y, b.y, c.y)); }
// a comparison over a pair: 1.0 or 0.0 a half (__heq2), a bool for both (__hbeq2), 0xffff a half (__heq2_mask)
#define GL_EMU_16BIT_COMPARE(T, P, OP, F)                                                                 \
inline P __h##OP##2(P a, P b) { return P(T(F(a.x, b.x) ? 1.0f : 0.0f), T(F(a.y, b.y) ? 1.0f : 0.0f)); }  \
inline bool __hb##OP##2(P a, P b) { return F(a.x, b.x) && F(a.y, b.y); }                                  \
inline unsigned __h##OP##2_mask(P a, P b) { return (F(a.x, b.x) ? 0xffffu : 0u) | (F(a.y, b.y) ? 0xffff0000u : 0u); }
GL_EMU_16BIT_MORE(__half, __half2, 1)
GL_EMU_16BIT_MORE(__nv_bfloat16, __nv_bfloat162, 1)
#undef GL_EMU_16BIT_MORE
#undef GL_EMU_16BIT_PAIR1
#undef GL_EMU_16BIT_PAIR2
#undef GL_EMU_16BIT_PAIR3
#undef GL_EMU_16BIT_COMPARE

// conversions between the 16-bit types and every integer type, in each rounding mode (NaN gives 0, values out
// of range saturate, as cvt does)
#define GL_EMU_16BIT_INTS(T, NAME, MK, I, ITAG)                                                            \
inline T __##ITAG##2##NAME##_rn(I v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RN); }             \
inline T __##ITAG##2##NAME##_rz(I v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RZ); }             \
inline T __##ITAG##2##NAME##_ru(I v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RU); }             \
inline T __##ITAG##2##NAME##_rd(I v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RD); }             \
inline I __##NAME##2##ITAG##_rn(T h) { return ::gl_emu::to_int<I>((float)h, 0); }                          \
inline I __##NAME##2##ITAG##_rz(T h) { return ::gl_emu::to_int<I>((float)h, 1); }                          \
inline I __##NAME##2##ITAG##_ru(T h) { return ::gl_emu::to_int<I>((float)h, 2); }                          \
inline I __##NAME##2##ITAG##_rd(T h) { return ::gl_emu::to_int<I>((float)h, 3); }
#define GL_EMU_16BIT_ALL_INTS(T, NAME, MK)                                                                  \
GL_EMU_16BIT_INTS(T, NAME, MK, short, short) GL_EMU_16BIT_INTS(T, NAME, MK, unsigned short, ushort)       \
GL_EMU_16BIT_INTS(T, NAME, MK, unsigned int, uint) GL_EMU_16BIT_INTS(T, NAME, MK, long long, ll)          \
GL_EMU_16BIT_INTS(T, NAME, MK, unsigned long long, ull)                                                   \
inline T __int2##NAME##_rz(int v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RZ); }                 \
inline T __int2##NAME##_ru(int v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RU); }                 \
inline T __int2##NAME##_rd(int v) { return MK(::gl_emu::int_for_16bit(v), ::gl_emu::RD); }                 \
inline int __##NAME##2int_ru(T h) { return ::gl_emu::to_int<int>((float)h, 2); }                          \
inline int __##NAME##2int_rd(T h) { return ::gl_emu::to_int<int>((float)h, 3); }                          \
inline signed char __##NAME##2char_rz(T h) { return ::gl_emu::to_int<signed char>((float)h, 1); }          \
inline unsigned char __##NAME##2uchar_rz(T h) { return ::gl_emu::to_int<unsigned char>((float)h, 1); }
GL_EMU_16BIT_ALL_INTS(__half, half, gl_make___half)
GL_EMU_16BIT_ALL_INTS(__nv_bfloat16, bfloat16, gl_make___nv_bfloat16)
#undef GL_EMU_16BIT_ALL_INTS
#undef GL_EMU_16BIT_INTS

inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
