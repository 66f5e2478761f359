// gemmlab's stand-in for the C and C++ library headers under NVRTC, which has none: a kernel written for
// nvcc that includes <stdio.h>, "assert.h", <cmath> or <cstdint> finds one of the small files beside this
// one, and each brings in this header. What it gives is what device code can use of those headers: the
// types and limits, assert, the math functions (CUDA's own, which NVRTC declares already) and their std::
// names, FLT_MAX and friends, M_PI and friends, std::min/max/swap and the type traits of libcu++.
// gemmlab adds this folder to NVRTC's include path only for a source that includes one of these names.
#pragma once

#include <cuda/std/cassert>
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cmath>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#ifndef FLT_MAX
#define FLT_MAX __FLT_MAX__
#define FLT_MIN __FLT_MIN__
#define FLT_EPSILON __FLT_EPSILON__
#define FLT_DIG __FLT_DIG__
#define FLT_MANT_DIG __FLT_MANT_DIG__
#define FLT_TRUE_MIN __FLT_DENORM_MIN__
#define DBL_MAX __DBL_MAX__
#define DBL_MIN __DBL_MIN__
#define DBL_EPSILON __DBL_EPSILON__
#define DBL_DIG __DBL_DIG__
#define DBL_MANT_DIG __DBL_MANT_DIG__
#define DBL_TRUE_MIN __DBL_DENORM_MIN__
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
#ifndef EXIT_SUCCESS
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif

// glibc's <sys/types.h>, which its <stdlib.h> (and so nvcc's <cuda_runtime.h>) brings in on Linux: kernels
// written for nvcc use uint, ushort and ulong without a header of their own for them
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;

namespace std {
// the C names, as <cstdint>, <cstddef>, <cstdio>, <cstring>, <cstdlib> put them in std
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
using ::intptr_t; using ::uintptr_t; using ::size_t; using ::ptrdiff_t;
using ::printf; using ::memcpy; using ::memset; using ::malloc; using ::free;
// the math functions CUDA declares for float and double, as <cmath> puts them in std (CUDA's, not libcu++'s
// templates beside them, so that `using namespace std;` leaves one candidate per call)
using ::sqrt; using ::cbrt; using ::exp; using ::exp2; using ::expm1; using ::log; using ::log2; using ::log10;
using ::log1p; using ::pow; using ::fabs; using ::abs; using ::floor; using ::ceil; using ::round; using ::trunc;
using ::fmod; using ::sin; using ::cos; using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2;
using ::sinh; using ::cosh; using ::tanh; using ::erf; using ::erfc; using ::fma; using ::fmax; using ::fmin;
using ::hypot; using ::ldexp; using ::frexp; using ::modf; using ::copysign; using ::lround; using ::nearbyint;
using ::rint; using ::isnan; using ::isinf; using ::isfinite; using ::signbit;
// the C++ library pieces device code uses, from libcu++
using cuda::std::numeric_limits; using cuda::std::swap; using cuda::std::move; using cuda::std::forward;
using cuda::std::pair; using cuda::std::make_pair; using cuda::std::declval;
using cuda::std::integral_constant; using cuda::std::bool_constant; using cuda::std::true_type;
using cuda::std::false_type; using cuda::std::is_void; using cuda::std::is_reference; using cuda::std::is_base_of;
using cuda::std::is_convertible; using cuda::std::common_type; using cuda::std::common_type_t;
using cuda::std::is_integral_v; using cuda::std::is_floating_point_v; using cuda::std::underlying_type;
using cuda::std::is_same; using cuda::std::is_integral; using cuda::std::is_floating_point;
using cuda::std::is_signed; using cuda::std::is_unsigned; using cuda::std::is_arithmetic;
using cuda::std::is_pointer; using cuda::std::is_const; using cuda::std::is_trivially_copyable;
using cuda::std::enable_if; using cuda::std::enable_if_t; using cuda::std::conditional; using cuda::std::conditional_t;
using cuda::std::remove_cv; using cuda::std::remove_cv_t; using cuda::std::remove_reference;
using cuda::std::remove_reference_t; using cuda::std::remove_pointer; using cuda::std::remove_pointer_t;
using cuda::std::remove_const; using cuda::std::remove_const_t; using cuda::std::decay; using cuda::std::decay_t;
using cuda::std::make_unsigned; using cuda::std::make_signed; using cuda::std::is_same_v;
template <class T> __host__ __device__ constexpr const T& min(const T& a, const T& b) { return b < a ? b : a; }
template <class T> __host__ __device__ constexpr const T& max(const T& a, const T& b) { return a < b ? b : a; }
}
