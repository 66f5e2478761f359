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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GL_TC_AVX2 1
#include <immintrin.h>
#endif

namespace gl_emu {
constexpr int GL_TC_GROUP_16BIT = 16, GL_TC_GROUP_TF32 = 4;   // products added at a time into FP32
constexpr int GL_TC_ALIGN_BITS = 26;      // bits kept below the largest term's leading bit
// FP8 (wgmma's e4m3 and e5m2): all 32 products of an instruction added at once with the accumulator, each cut 14
// bits below the largest term. Fitted to 2,048 random wgmma.m64n8k32 (E4M3 and E5M2, with and without a large
// accumulator) on an H100: this model gives the GPU's bits for 69 to 88% of the outputs, the 16-bit model's 26 bits
// for none; DeepSeek-V3's report (arXiv 2412.19437, section 3.3) puts the FP8 accumulation at "around 14 bits" too.
constexpr int GL_TC_GROUP_FP8 = 32, GL_TC_ALIGN_BITS_FP8 = 14;

// The exponent frexp gives (x = m 2^e, 0.5 <= |m| < 1) of a finite nonzero double, read from its bits.
inline int gl_tc_exponent(double x)
{
    std::uint64_t u;
    __builtin_memcpy(&u, &x, 8);
    const int biased = static_cast<int>((u >> 52) & 0x7ff);
    if (biased != 0) return biased - 1022;
    int e;
    std::frexp(x, &e);                                             // subnormal: rare, the library call
    return e;
}

// all[0] + ... + all[n] (all[0] the accumulator, the others exact products): aligned to the largest term, each
// cut toward zero to `align` bits (GL_TC_ALIGN_BITS) below that term's leading bit, added exactly (as integers in
// units of the cut), the sum rounded toward zero to FP32. A non-finite term makes it the IEEE sum; past FLT_MAX it
// is inf. (Every |term| / q is below 2^align, at most 2^26, and there are at most 33 of them, so the units fit an
// int64; a finite product of two floats, or a float, is a normal double, whose exponent its bits give.)
GL_NOSAN inline float gl_tc_sum(const double* all, int n, int align = GL_TC_ALIGN_BITS)
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
    __builtin_memcpy(&bits, &big, 8);
    const int e_max = static_cast<int>((bits >> 52) & 0x7ff) - 1022;  // big = m 2^e_max, 0.5 <= m < 1
    const std::uint64_t per_bits = static_cast<std::uint64_t>(align - e_max + 1023) << 52;
    const std::uint64_t q_bits = static_cast<std::uint64_t>(e_max - align + 1023) << 52;
    double per_q, q;
    __builtin_memcpy(&per_q, &per_bits, 8);
    __builtin_memcpy(&q, &q_bits, 8);
    std::int64_t units = 0;
    for (int i = 0; i <= n; ++i) units += static_cast<std::int64_t>(all[i] * per_q);    // cut toward zero
    const double s = static_cast<double>(units) * q;
    if (std::fabs(s) > static_cast<double>(FLT_MAX))
        return std::fabs(s) >= std::ldexp(1.0, 128) ? static_cast<float>(s > 0 ? INFINITY : -INFINITY)
                                                     : (s > 0 ? FLT_MAX : -FLT_MAX);
    float f = static_cast<float>(s);                               // to nearest; a step back if it rounded up
    if (std::fabs(static_cast<double>(f)) > std::fabs(s)) {
        std::uint32_t u;
        __builtin_memcpy(&u, &f, 4);
        --u;                                                       // (f is finite and not zero here)
        __builtin_memcpy(&f, &u, 4);
    }
    return f;
}

// D (M x N, row stride ldd) = D + A B by the model, G products at a time along k: A is M x K (row stride lda), B is
// K x N in doubles (row stride ldb, exact: operand values), K a multiple of G (G <= 32), `align` the bits kept. Each
// D[m][n] is gl_tc_sum's sum of its accumulator and G products, group after group down k, with the same bits in
// either path; where the CPU has AVX2 (and G <= 16, 26 bits: the int32 lanes hold the sums), four n at a time.
GL_NOSAN inline void gl_tc_matmul_scalar(float* D, int ldd, const float* A, int lda, const double* B, int ldb, int m0, int m1,
                                int n0, int n1, int K, int G, int align = GL_TC_ALIGN_BITS)
{
    for (int m = m0; m < m1; ++m)
        for (int n = n0; n < n1; ++n) {
            float acc = D[m * ldd + n];
            for (int k0 = 0; k0 < K; k0 += G) {
                double all[33];
                all[0] = acc;
                for (int k = 0; k < G; ++k) all[k + 1] = static_cast<double>(A[m * lda + k0 + k]) * B[(k0 + k) * ldb + n];
                acc = gl_tc_sum(all, G, align);
            }
            D[m * ldd + n] = acc;
        }
}

#if defined(GL_TC_AVX2)
// V x 4 outputs of row m from column n on, exactly as gl_tc_sum (the caller has made sure every term is finite): the
// largest term's exponent, read from its bits, gives the unit of the cut, 2^(e_max - 26), and its inverse; each term
// times the inverse, cut toward zero, is added as an int32 (17 terms below 2^26 each fit); the sum times the unit,
// exact in double, is rounded to FP32 and stepped back toward zero where it rounded away. V independent vectors keep
// the max and add chains from waiting on each other. False if a sum passed FLT_MAX (then nothing is stored).
template <int V>
GL_NOSAN __attribute__((target("avx2"))) inline bool gl_tc_row_avx2(float* d, const float* a, const double* B, int ldb, int n,
                                                           int K, int G)
{
    const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), flt_max = _mm256_set1_pd(FLT_MAX);
    const __m256i inverse_bias = _mm256_set1_epi64x(2071), unit_bias = _mm256_set1_epi64x(25);
    __m256d acc[V];
    for (int v = 0; v < V; ++v) acc[v] = _mm256_cvtps_pd(_mm_loadu_ps(d + n + 4 * v));
    for (int k0 = 0; k0 < K; k0 += G) {
        const double* b = B + k0 * ldb + n;
        __m256d big[V], inverse[V], unit[V];
        __m128i units[V];
        for (int v = 0; v < V; ++v) big[v] = _mm256_and_pd(acc[v], magnitude);
        for (int k = 0; k < G; ++k) {
            const __m256d x = _mm256_set1_pd(a[k0 + k]);
            for (int v = 0; v < V; ++v)
                big[v] = _mm256_max_pd(big[v], _mm256_and_pd(_mm256_mul_pd(x, _mm256_loadu_pd(b + k * ldb + 4 * v)),
                                                              magnitude));
        }
        for (int v = 0; v < V; ++v) {
            const __m256d nonzero = _mm256_blendv_pd(big[v], one, _mm256_cmp_pd(big[v], zero, _CMP_EQ_OQ));
            const __m256i biased = _mm256_srli_epi64(_mm256_castpd_si256(nonzero), 52);   // (all zero: units 0)
            inverse[v] = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_sub_epi64(inverse_bias, biased), 52));
            unit[v] = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_sub_epi64(biased, unit_bias), 52));
            units[v] = _mm256_cvttpd_epi32(_mm256_mul_pd(acc[v], inverse[v]));
        }
        for (int k = 0; k < G; ++k) {
            const __m256d x = _mm256_set1_pd(a[k0 + k]);
            for (int v = 0; v < V; ++v)
                units[v] = _mm_add_epi32(units[v], _mm256_cvttpd_epi32(_mm256_mul_pd(
                    _mm256_mul_pd(x, _mm256_loadu_pd(b + k * ldb + 4 * v)), inverse[v])));
        }
        __m256d over = zero;
        for (int v = 0; v < V; ++v) {
            const __m256d sum = _mm256_mul_pd(_mm256_cvtepi32_pd(units[v]), unit[v]);
            const __m256d size = _mm256_and_pd(sum, magnitude);
            over = _mm256_or_pd(over, _mm256_cmp_pd(size, flt_max, _CMP_GT_OQ));
            const __m128 f = _mm256_cvtpd_ps(sum);                         // to nearest, then back toward zero
            const __m256d away = _mm256_cmp_pd(_mm256_and_pd(_mm256_cvtps_pd(f), magnitude), size, _CMP_GT_OQ);
            const __m128i step = _mm256_cvtpd_epi32(_mm256_and_pd(away, one));
            acc[v] = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_sub_epi32(_mm_castps_si128(f), step)));
        }
        if (_mm256_movemask_pd(over)) return false;
    }
    for (int v = 0; v < V; ++v) _mm_storeu_ps(d + n + 4 * v, _mm256_cvtpd_ps(acc[v]));
    return true;
}

// whether every operand and accumulator is finite (then so is every product, in double)
GL_NOSAN inline bool gl_tc_finite(const float* D, int ldd, const float* A, int lda, const double* B, int ldb, int M, int N,
                         int K)
{
    float f = 0.0f;
    double g = 0.0;
    for (int m = 0; m < M; ++m) {
        for (int n = 0; n < N; ++n) f += D[m * ldd + n] * 0.0f;
        for (int k = 0; k < K; ++k) f += A[m * lda + k] * 0.0f;
    }
    for (int k = 0; k < K; ++k)
        for (int n = 0; n < N; ++n) g += B[k * ldb + n] * 0.0;
    return f == 0.0f && g == 0.0;                                   // NaN (not equal) if any is infinite or NaN
}

GL_NOSAN __attribute__((target("avx2"))) inline void gl_tc_matmul_avx2(float* D, int ldd, const float* A, int lda,
                                                              const double* B, int ldb, int M, int N, int K, int G)
{
    if (!gl_tc_finite(D, ldd, A, lda, B, ldb, M, N, K)) return gl_tc_matmul_scalar(D, ldd, A, lda, B, ldb, 0, M, 0, N,
                                                                                   K, G);
    for (int m = 0; m < M; ++m) {
        float* d = D + m * ldd;
        const float* a = A + m * lda;
        int n = 0;
        for (; n + 16 <= N; n += 16)
            if (!gl_tc_row_avx2<4>(d, a, B, ldb, n, K, G))
                gl_tc_matmul_scalar(D, ldd, A, lda, B, ldb, m, m + 1, n, n + 16, K, G);
        for (; n + 4 <= N; n += 4)
            if (!gl_tc_row_avx2<1>(d, a, B, ldb, n, K, G))
                gl_tc_matmul_scalar(D, ldd, A, lda, B, ldb, m, m + 1, n, n + 4, K, G);
        if (n < N) gl_tc_matmul_scalar(D, ldd, A, lda, B, ldb, m, m + 1, n, N, K, G);
    }
}
inline const bool gl_tc_has_avx2 = __builtin_cpu_supports("avx2");
#endif

GL_NOSAN inline void gl_tc_matmul(float* D, int ldd, const float* A, int lda, const double* B, int ldb, int M, int N, int K,
                         int G, int align = GL_TC_ALIGN_BITS)
{
#if defined(GL_TC_AVX2)
    if (gl_tc_has_avx2 && G <= 16 && align == GL_TC_ALIGN_BITS)
        return gl_tc_matmul_avx2(D, ldd, A, lda, B, ldb, M, N, K, G);
#endif
    gl_tc_matmul_scalar(D, ldd, A, lda, B, ldb, 0, M, 0, N, K, G, align);
}

// A TF32 operand as the tensor cores read an FP32 register: its top 19 bits (sign, exponent, 10 mantissa bits);
// the 13 below are ignored (a value that __float_to_tf32 or cvt.rna.tf32.f32 did not round is truncated)
inline float gl_tf32_operand(float f)
{
    unsigned u;
    __builtin_memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u &= 0xffffe000u;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
}  // namespace gl_emu
