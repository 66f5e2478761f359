// The tensor cores' arithmetic, as the emulator models it: shared by <mma.h> (wmma) and the inline-PTX runtime
// (gemmlab_ptx.h: mma.sync, wgmma). Products of FP16, BF16 and TF32 operands are exact in double; they are added
// into an FP32 accumulator G at a time (16 for FP16 and BF16, 4 for TF32, as measured on the H200) together with
// the accumulator, each term cut toward zero to GL_TC_ALIGN_BITS bits below the largest term's leading bit, the
// sum rounded toward zero to FP32 (see <mma.h>'s header for where this model comes from and how well it agrees).
#pragma once
#include "gemmlab_emu.h"
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gl_emu {
constexpr int GL_TC_GROUP_16BIT = 16, GL_TC_GROUP_TF32 = 4;   // products added at a time into FP32
constexpr int GL_TC_ALIGN_BITS = 26;      // bits kept below the largest term's leading bit

// The exponent frexp gives (x = m 2^e, 0.5 <= |m| < 1) of a finite nonzero double, read from its bits.
inline int gl_tc_exponent(double x)
{
    std::uint64_t u;
    std::memcpy(&u, &x, 8);
    const int biased = static_cast<int>((u >> 52) & 0x7ff);
    if (biased != 0) return biased - 1022;
    int e;
    std::frexp(x, &e);                                             // subnormal: rare, the library call
    return e;
}

// acc + sum(terms[0..n)), the terms exact products: aligned to the largest term, each cut toward zero to
// GL_TC_ALIGN_BITS bits below that term's leading bit, added exactly (as integers in units of the cut),
// the sum rounded toward zero to FP32. A non-finite term makes it the IEEE sum; past FLT_MAX it is inf.
inline float gl_tc_add(float acc, const double* terms, int n)
{
    double all[17];
    bool finite = std::isfinite(acc);
    all[0] = acc;
    for (int i = 0; i < n; ++i) { all[i + 1] = terms[i]; finite = finite && std::isfinite(terms[i]); }
    if (!finite) {
        double s = acc;
        for (int i = 0; i < n; ++i) s += terms[i];
        return static_cast<float>(s);
    }
    int e_max = INT_MIN;
    for (int i = 0; i <= n; ++i)
        if (all[i] != 0.0) { const int e = gl_tc_exponent(all[i]); e_max = e > e_max ? e : e_max; }
    if (e_max == INT_MIN) return acc + 0.0f;                       // every term zero
    const double q = std::ldexp(1.0, e_max - GL_TC_ALIGN_BITS), per_q = std::ldexp(1.0, GL_TC_ALIGN_BITS - e_max);
    std::int64_t units = 0;                                        // each |term| / q < 2^26: no overflow
    for (int i = 0; i <= n; ++i) units += static_cast<std::int64_t>(all[i] * per_q);     // cut toward zero
    const double s = static_cast<double>(units) * q;
    if (std::fabs(s) > static_cast<double>(FLT_MAX))
        return std::fabs(s) >= std::ldexp(1.0, 128) ? static_cast<float>(s > 0 ? INFINITY : -INFINITY)
                                                     : (s > 0 ? FLT_MAX : -FLT_MAX);
    float f = static_cast<float>(s);                               // to nearest; step back if it rounded up
    if (std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.0f);
    return f;
}

// A TF32 operand as the tensor cores read an FP32 register: its top 19 bits (sign, exponent, 10 mantissa bits);
// the 13 below are ignored (a value that __float_to_tf32 or cvt.rna.tf32.f32 did not round is truncated)
inline float gl_tf32_operand(float f)
{
    unsigned u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u &= 0xffffe000u;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace gl_emu
