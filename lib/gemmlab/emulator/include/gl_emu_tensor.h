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

// all[0] + ... + all[n] (all[0] the accumulator, the others exact products): aligned to the largest term, each
// cut toward zero to GL_TC_ALIGN_BITS bits below that term's leading bit, added exactly (as integers in units of
// the cut), the sum rounded toward zero to FP32. A non-finite term makes it the IEEE sum; past FLT_MAX it is inf.
// (Every |term| / q is below 2^26 and there are at most 17 of them, so the units fit an int32; a finite product
// of two floats, or a float, is a normal double, whose exponent its bits give.)
inline float gl_tc_sum(const double* all, int n)
{
    double big = 0.0, nan_or_inf = 0.0;
    for (int i = 0; i <= n; ++i) {
        const double m = std::fabs(all[i]);
        big = m > big ? m : big;
        nan_or_inf += all[i] * 0.0;                                // NaN if any term is infinite or NaN
    }
    if (nan_or_inf != 0.0 || nan_or_inf != nan_or_inf) {
        double s = all[0];
        for (int i = 1; i <= n; ++i) s += all[i];
        return static_cast<float>(s);
    }
    if (big == 0.0) return static_cast<float>(all[0]) + 0.0f;       // every term zero
    std::uint64_t bits;
    std::memcpy(&bits, &big, 8);
    const int e_max = static_cast<int>((bits >> 52) & 0x7ff) - 1022;  // big = m 2^e_max, 0.5 <= m < 1
    const std::uint64_t per_bits = static_cast<std::uint64_t>(GL_TC_ALIGN_BITS - e_max + 1023) << 52;
    const std::uint64_t q_bits = static_cast<std::uint64_t>(e_max - GL_TC_ALIGN_BITS + 1023) << 52;
    double per_q, q;
    std::memcpy(&per_q, &per_bits, 8);
    std::memcpy(&q, &q_bits, 8);
    std::int32_t units = 0;
    for (int i = 0; i <= n; ++i) units += static_cast<std::int32_t>(all[i] * per_q);    // cut toward zero
    const double s = static_cast<double>(units) * q;
    if (std::fabs(s) > static_cast<double>(FLT_MAX))
        return std::fabs(s) >= std::ldexp(1.0, 128) ? static_cast<float>(s > 0 ? INFINITY : -INFINITY)
                                                     : (s > 0 ? FLT_MAX : -FLT_MAX);
    float f = static_cast<float>(s);                               // to nearest; a step back if it rounded up
    if (std::fabs(static_cast<double>(f)) > std::fabs(s)) {
        std::uint32_t u;
        std::memcpy(&u, &f, 4);
        --u;                                                       // (f is finite and not zero here)
        std::memcpy(&f, &u, 4);
    }
    return f;
}

// acc + sum(terms[0..n)), the terms exact products (n <= 16)
inline float gl_tc_add(float acc, const double* terms, int n)
{
    double all[17];
    all[0] = acc;
    for (int i = 0; i < n; ++i) all[i + 1] = terms[i];
    return gl_tc_sum(all, n);
}

// The same sum four products at a time with AVX2 where the CPU has it (the tensor-core instructions' hot loop):
// the same products, the same largest term and cut, the same integers, so the same bits as gl_tc_sum.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GL_TC_AVX2 1
#include <immintrin.h>
__attribute__((target("avx2"))) inline float gl_tc_dot_avx2(float acc, const float* a, const float* b, int n)
{
    __m256d p[4];
    const int v = n / 4;
    const __m256d sign = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)), zero = _mm256_setzero_pd();
    __m256d big = zero, bad = zero;
    for (int j = 0; j < v; ++j) {
        p[j] = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + 4 * j)), _mm256_cvtps_pd(_mm_loadu_ps(b + 4 * j)));
        big = _mm256_max_pd(big, _mm256_and_pd(p[j], sign));
        bad = _mm256_add_pd(bad, _mm256_mul_pd(p[j], zero));        // NaN if any product is infinite or NaN
    }
    alignas(32) double bigs[4], bads[4];
    _mm256_store_pd(bigs, big);
    _mm256_store_pd(bads, bad);
    const double accd = acc;
    const double nan_or_inf = accd * 0.0 + bads[0] + bads[1] + bads[2] + bads[3];
    if (nan_or_inf != 0.0 || nan_or_inf != nan_or_inf) {          // the IEEE sum, as gl_tc_sum
        alignas(32) double all[17];
        all[0] = accd;
        for (int j = 0; j < v; ++j) _mm256_storeu_pd(all + 1 + 4 * j, p[j]);
        return gl_tc_sum(all, n);
    }
    double m = std::fabs(accd);
    for (int i = 0; i < 4; ++i) m = bigs[i] > m ? bigs[i] : m;
    if (m == 0.0) return acc + 0.0f;
    std::uint64_t bits;
    std::memcpy(&bits, &m, 8);
    const int e_max = static_cast<int>((bits >> 52) & 0x7ff) - 1022;
    const std::uint64_t per_bits = static_cast<std::uint64_t>(GL_TC_ALIGN_BITS - e_max + 1023) << 52;
    const std::uint64_t q_bits = static_cast<std::uint64_t>(e_max - GL_TC_ALIGN_BITS + 1023) << 52;
    double per_q, q;
    std::memcpy(&per_q, &per_bits, 8);
    std::memcpy(&q, &q_bits, 8);
    const __m256d scale = _mm256_set1_pd(per_q);
    __m128i sum = _mm_setzero_si128();
    for (int j = 0; j < v; ++j) sum = _mm_add_epi32(sum, _mm256_cvttpd_epi32(_mm256_mul_pd(p[j], scale)));
    alignas(16) std::int32_t parts[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(parts), sum);
    const std::int32_t units = parts[0] + parts[1] + parts[2] + parts[3] + static_cast<std::int32_t>(accd * per_q);
    const double s = static_cast<double>(units) * q;
    if (std::fabs(s) > static_cast<double>(FLT_MAX))
        return std::fabs(s) >= std::ldexp(1.0, 128) ? static_cast<float>(s > 0 ? INFINITY : -INFINITY)
                                                     : (s > 0 ? FLT_MAX : -FLT_MAX);
    float f = static_cast<float>(s);
    if (std::fabs(static_cast<double>(f)) > std::fabs(s)) {
        std::uint32_t u;
        std::memcpy(&u, &f, 4);
        --u;
        std::memcpy(&f, &u, 4);
    }
    return f;
}
inline const bool gl_tc_has_avx2 = __builtin_cpu_supports("avx2");
#endif

// acc + sum(a[i] b[i]) over i < n (n <= 16): the products made exactly, then added as gl_tc_add adds them
inline float gl_tc_dot(float acc, const float* a, const float* b, int n)
{
#if defined(GL_TC_AVX2)
    if (n % 4 == 0 && gl_tc_has_avx2) return gl_tc_dot_avx2(acc, a, b, n);
#endif
    double all[17];
    all[0] = acc;
    for (int i = 0; i < n; ++i) all[i + 1] = static_cast<double>(a[i]) * static_cast<double>(b[i]);
    return gl_tc_sum(all, n);
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
