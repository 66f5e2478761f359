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

inline float cuCrealf(cuFloatComplex x) { return x.x; }
inline float cuCimagf(cuFloatComplex x) { return x.y; }
inline cuFloatComplex make_cuFloatComplex(float r, float i) { cuFloatComplex z; z.x = r; z.y = i; return z; }
inline cuFloatComplex cuConjf(cuFloatComplex x) { return make_cuFloatComplex(x.x, -x.y); }
inline cuFloatComplex cuCaddf(cuFloatComplex x, cuFloatComplex y) { return make_cuFloatComplex(x.x + y.x, x.y + y.y); }
inline cuFloatComplex cuCsubf(cuFloatComplex x, cuFloatComplex y) { return make_cuFloatComplex(x.x - y.x, x.y - y.y); }
inline cuFloatComplex cuCmulf(cuFloatComplex x, cuFloatComplex y)
{ return make_cuFloatComplex(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x); }
inline cuFloatComplex cuCdivf(cuFloatComplex x, cuFloatComplex y)
{
    const float s = std::fabs(y.x) + std::fabs(y.y), k = 1.0f / s;
    const float ar = x.x * k, ai = x.y * k, br = y.x * k, bi = y.y * k, d = 1.0f / (br * br + bi * bi);
    return make_cuFloatComplex((ar * br + ai * bi) * d, (ai * br - ar * bi) * d);
}
inline float cuCabsf(cuFloatComplex x)
{
    const float a = std::fabs(x.x), b = std::fabs(x.y), v = a > b ? a : b, w = a > b ? b : a;
    if (v == 0.0f || v > std::numeric_limits<float>::max() || w > std::numeric_limits<float>::max()) return v + w;
    const float t = w / v;
    return v * std::sqrt(1.0f + t * t);
}
// x y + d, in the order CUDA's header adds: (xr yr + dr) - xi yi and (xr yi + di) + xi yr
inline cuFloatComplex cuCfmaf(cuFloatComplex x, cuFloatComplex y, cuFloatComplex d)
{
    float re = x.x * y.x + d.x, im = x.x * y.y + d.y;
    re = -(x.y * y.y) + re;
    im = x.y * y.x + im;
    return make_cuFloatComplex(re, im);
}

inline double cuCreal(cuDoubleComplex x) { return x.x; }
inline double cuCimag(cuDoubleComplex x) { return x.y; }
inline cuDoubleComplex make_cuDoubleComplex(double r, double i) { cuDoubleComplex z; z.x = r; z.y = i; return z; }
inline cuDoubleComplex cuConj(cuDoubleComplex x) { return make_cuDoubleComplex(x.x, -x.y); }
inline cuDoubleComplex cuCadd(cuDoubleComplex x, cuDoubleComplex y) { return make_cuDoubleComplex(x.x + y.x, x.y + y.y); }
inline cuDoubleComplex cuCsub(cuDoubleComplex x, cuDoubleComplex y) { return make_cuDoubleComplex(x.x - y.x, x.y - y.y); }
inline cuDoubleComplex cuCmul(cuDoubleComplex x, cuDoubleComplex y)
{ return make_cuDoubleComplex(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x); }
inline cuDoubleComplex cuCdiv(cuDoubleComplex x, cuDoubleComplex y)
{
    const double s = std::fabs(y.x) + std::fabs(y.y), k = 1.0 / s;
    const double ar = x.x * k, ai = x.y * k, br = y.x * k, bi = y.y * k, d = 1.0 / (br * br + bi * bi);
    return make_cuDoubleComplex((ar * br + ai * bi) * d, (ai * br - ar * bi) * d);
}
inline double cuCabs(cuDoubleComplex x)
{
    const double a = std::fabs(x.x), b = std::fabs(x.y), v = a > b ? a : b, w = a > b ? b : a;
    if (v == 0.0 || v > std::numeric_limits<double>::max() || w > std::numeric_limits<double>::max()) return v + w;
    const double t = w / v;
    return v * std::sqrt(1.0 + t * t);
}
inline cuDoubleComplex cuCfma(cuDoubleComplex x, cuDoubleComplex y, cuDoubleComplex d)
{
    double re = x.x * y.x + d.x, im = x.x * y.y + d.y;
    re = -(x.y * y.y) + re;
    im = x.y * y.x + im;
    return make_cuDoubleComplex(re, im);
}

inline cuFloatComplex make_cuComplex(float r, float i) { return make_cuFloatComplex(r, i); }
inline cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex c) { return make_cuDoubleComplex(c.x, c.y); }
inline cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex c) { return make_cuFloatComplex((float)c.x, (float)c.y); }
