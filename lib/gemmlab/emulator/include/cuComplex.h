// cuComplex.h — CUDA's single- and double-precision complex numbers for the CPU emulator (gemmlab): float2 and
// double2 with the header's functions. Products and quotients follow the usual formulas; a quotient and an
// absolute value are scaled first, as CUDA's are, so that intermediate squares neither overflow nor underflow
// where the result does not. (On a GPU the compiler may contract a * b + c into one fused multiply-add, so the
// last bit of a product can differ.)
#pragma once
#include <cmath>
#include <limits>

typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;

// one definition for both precisions: C the complex type, R its scalar, S the names' suffix (f for float), MAKE the
// name of its constructor
#define GL_CUCOMPLEX(C, R, S, MAKE)                                                                          \
inline C MAKE(R r, R i) { C z; z.x = r; z.y = i; return z; }                                                \
inline R cuCreal##S(C x) { return x.x; }                                                                     \
inline R cuCimag##S(C x) { return x.y; }                                                                     \
inline C cuConj##S(C x) { return MAKE(x.x, -x.y); }                                                         \
inline C cuCadd##S(C x, C y) { return MAKE(x.x + y.x, x.y + y.y); }                                         \
inline C cuCsub##S(C x, C y) { return MAKE(x.x - y.x, x.y - y.y); }                                         \
inline C cuCmul##S(C x, C y) { return MAKE(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x); }                 \
inline C cuCdiv##S(C x, C y)                                                                                 \
{                                                                                                            \
    const R s = std::fabs(y.x) + std::fabs(y.y), k = R(1) / s;                                               \
    const R ar = x.x * k, ai = x.y * k, br = y.x * k, bi = y.y * k, d = R(1) / (br * br + bi * bi);          \
    return MAKE((ar * br + ai * bi) * d, (ai * br - ar * bi) * d);                                           \
}                                                                                                            \
inline R cuCabs##S(C x)                                                                                      \
{                                                                                                            \
    const R a = std::fabs(x.x), b = std::fabs(x.y), v = a > b ? a : b, w = a > b ? b : a;                    \
    if (v == R(0) || v > std::numeric_limits<R>::max() || w > std::numeric_limits<R>::max()) return v + w;   \
    const R t = w / v;                                                                                       \
    return v * std::sqrt(R(1) + t * t);                                                                      \
}                                                                                                            \
/* x y + d, in the order CUDA's header adds: (xr yr + dr) - xi yi and (xr yi + di) + xi yr */                \
inline C cuCfma##S(C x, C y, C d)                                                                            \
{                                                                                                            \
    R re = x.x * y.x + d.x, im = x.x * y.y + d.y;                                                            \
    re = -(x.y * y.y) + re;                                                                                  \
    im = x.y * y.x + im;                                                                                     \
    return MAKE(re, im);                                                                                     \
}
GL_CUCOMPLEX(cuFloatComplex, float, f, make_cuFloatComplex)
GL_CUCOMPLEX(cuDoubleComplex, double, , make_cuDoubleComplex)
#undef GL_CUCOMPLEX

inline cuFloatComplex make_cuComplex(float r, float i) { return make_cuFloatComplex(r, i); }
inline cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex c) { return make_cuDoubleComplex(c.x, c.y); }
inline cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex c) { return make_cuFloatComplex((float)c.x, (float)c.y); }
