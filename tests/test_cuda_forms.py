"""The CUDA that people write: language forms, intrinsics and types, with the GPU's results.

Every kernel here runs on whichever backend is in use: on a GPU the tests check the kernels (and the
expected values) against the hardware; on the emulator the same expectations check the emulator.
"""
from __future__ import annotations

import os
import re

import numpy
import pytest

import gemmlab as gl
from gemmlab import _emulator

xp = gl.xp
rng_forms = numpy.random.default_rng(11)
needs_memcheck = pytest.mark.skipif(gl.backend != "emulator" or not _emulator._memcheck_flags(_emulator._compiler()),
                                    reason="the emulator's memory check (g++ on x86-64 Linux)")
# GEMMLAB_EMULATOR_INTERLEAVE=1 builds every kernel as volatile code is built (ThreadSanitizer's instrumentation,
# which leaves the thread's stack out of the memory check)
interleaved = os.environ.get("GEMMLAB_EMULATOR_INTERLEAVE", "0").strip() == "1"


def _run(code, name, grid, block, *args, **kw):
    k = gl.load(code=code).get(name)
    k(grid, block, args, **kw)
    return k


# ---------------------------------------------------------------------------------------------
# Language forms
# ---------------------------------------------------------------------------------------------

FORMS = r'''
#include "cuda_fp16.h"          // a quoted system header, unused: must never fail
static __constant__ float coef[4] = {1.0f, 2.0f, 3.0f, 4.0f};
#define THREADS 64
constexpr int kWarps = 2;

namespace outer {
namespace inner {
template <int N>
__global__ void fill(float* y) { y[threadIdx.x] = N + coef[threadIdx.x % 4]; }
}  // namespace inner
__global__ void __launch_bounds__(THREADS) bounded_macro(float* y) { y[threadIdx.x] = 1.0f; }
}  // namespace outer

__global__ void __launch_bounds__(kWarps * 32, 1) bounded_constexpr(float* y) { y[threadIdx.x] = 2.0f; }

__global__ void arch(int* out)
{
    static __shared__ int seen;
    static __shared__ int lanes[32];
#if defined(__CUDACC__) && defined(__CUDA_ARCH__)
    if (threadIdx.x == 0) seen = __CUDA_ARCH__;
#else
    if (threadIdx.x == 0) seen = -1;
#endif
    lanes[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = seen + lanes[31 - threadIdx.x];
}

__global__ void maybe_null(const float* x, float* y)
{
    y[threadIdx.x] = x ? x[threadIdx.x] : -1.0f;
}

__global__ void feature_scan(float* y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
    asm volatile("membar.gl;");        // a code path the build leaves out: no reason to refuse the kernel
#endif
    y[0] = 3.0f;
}

__global__ void branches_meet(float* out)
{
    // bar.sync counts arrivals: the two calls are one barrier for the block
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    if (threadIdx.x < 8) { __syncthreads(); out[threadIdx.x] = s[63 - threadIdx.x]; }
    else { __syncthreads(); out[threadIdx.x] = -s[63 - threadIdx.x]; }
}
'''


@pytest.fixture(scope="module")
def forms():
    return gl.load(code=FORMS)


def test_kernels_in_namespaces_by_qualified_or_plain_name(forms):
    y = xp.zeros(8, dtype=numpy.float32)
    forms.get("outer::inner::fill<10>")(1, 8, (y,))
    assert (gl.to_host(y) == 10 + numpy.tile([1, 2, 3, 4], 2)).all()
    forms.get("fill<20>")(1, 8, (y,))                    # unique in its namespace: the plain name will do
    assert gl.to_host(y)[0] == 21
    forms.get("::outer::inner::fill", N=30)(1, 8, (y,))
    assert gl.to_host(y)[1] == 32
    assert {"outer::inner::fill", "outer::bounded_macro", "bounded_constexpr"} <= set(forms.names)


@pytest.mark.parametrize("name, most", [("outer::bounded_macro", 64), ("bounded_constexpr", 64)])
def test_launch_bounds_with_macros_and_constexpr(forms, name, most):
    k = forms.get(name)
    y = xp.zeros(1024, dtype=numpy.float32)
    k(1, most, (y,))
    with pytest.raises(ValueError, match=rf"a block of {most + 1} threads is more than this kernel can launch"):
        k(1, most + 1, (y,))


def test_cuda_arch_cudacc_and_static_shared(forms):
    out = xp.zeros(32, dtype=numpy.int32)
    forms.get("arch")(1, 32, (out,))
    arch = int(gl.to_host(out)[31])
    assert arch >= 700 and (gl.to_host(out) == arch + numpy.arange(31, -1, -1)).all()
    if gl.backend == "emulator":
        assert arch == 900                                # the H200's, as NVRTC compiles for it


def test_null_pointer_arguments(forms):
    y = xp.zeros(4, dtype=numpy.float32)
    forms.get("maybe_null")(1, 4, (None, y))
    assert (gl.to_host(y) == -1).all()
    forms.get("maybe_null")(1, 4, (xp.ones(4, dtype=numpy.float32), y))
    assert (gl.to_host(y) == 1).all()


def test_the_feature_scan_respects_the_preprocessor(forms):
    y = xp.zeros(1, dtype=numpy.float32)
    forms.get("feature_scan")(1, 1, (y,))
    assert gl.to_host(y)[0] == 3


def test_a_barrier_counts_arrivals_not_source_lines(forms):
    out = xp.zeros(64, dtype=numpy.float32)
    forms.get("branches_meet")(1, 64, (out,))
    expect = numpy.where(numpy.arange(64) < 8, 1.0, -1.0) * (63 - numpy.arange(64))
    assert (gl.to_host(out) == expect).all()


def test_dynamic_shared_memory_above_48_kib_after_the_opt_in():
    code = r'''
    __global__ void big_dynamic(float* y, int n)
    {
        extern __shared__ float d[];
        for (int i = threadIdx.x; i < n; i += blockDim.x) d[i] = i;
        __syncthreads();
        y[threadIdx.x] = d[n - 1 - threadIdx.x];
    }'''
    n = 100 * 1024 // 4                                  # 100 KiB: over 48 KiB, under the H200's 227 KiB
    y = xp.zeros(128, dtype=numpy.float32)
    _run(code, "big_dynamic", 1, 128, y, n, shared_mem=n * 4)
    assert (gl.to_host(y) == n - 1 - numpy.arange(128)).all()


# ---------------------------------------------------------------------------------------------
# Warp operations as on a GPU
# ---------------------------------------------------------------------------------------------

def test_shfl_xor_with_a_width_reaches_earlier_segments_not_later_ones():
    code = r'''
    __global__ void xor_width(int* out, int mask, int width)
    {
        out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, mask, width);
    }'''
    out = xp.zeros(32, dtype=numpy.int32)
    k = gl.load(code=code).get("xor_width")
    for mask, width in ((1, 32), (8, 8), (16, 8), (4, 4), (24, 16)):
        k(1, 32, (out, mask, width))
        lane = numpy.arange(32)
        src = lane ^ mask
        segment_end = (lane & ~(width - 1)) + width
        expect = numpy.where(src < segment_end, src, lane)   # a later segment: the lane's own value
        assert (gl.to_host(out) == expect).all(), (mask, width, gl.to_host(out))


WARP_SYNCHRONOUS = r"""
// Pre-Volta warp-synchronous code, written as it was before __syncwarp existed: volatile shared memory and no
// barrier inside the warp, which a GPU's warp runs in lockstep.
// the first warp folds a block's last 64 partial maxima, a step per distance, in lockstep
__device__ void lockstep_max(volatile float* m, unsigned int lane)
{
#pragma unroll
    for (unsigned int d = 32; d > 0; d >>= 1) m[lane] = fmaxf(m[lane], m[lane + d]);
}
// one partial maximum per block of 128 threads, each thread first taking the maximum of its grid-stride share
__global__ void block_max_lockstep(const float* x, float* out, unsigned int n)
{
    __shared__ float m[128];
    float v = -3.0e38f;
    for (unsigned int i = blockIdx.x * 128 + threadIdx.x; i < n; i += 128 * gridDim.x) v = fmaxf(v, x[i]);
    m[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x < 64) m[threadIdx.x] = fmaxf(m[threadIdx.x], m[threadIdx.x + 64]);
    __syncthreads();
    if (threadIdx.x < 32) lockstep_max(m, threadIdx.x);
    if (threadIdx.x == 0) out[blockIdx.x] = m[0];
}
// inclusive scan of each warp's 32 values (Hillis-Steele): lanes read what lower lanes write in the same step
__global__ void warp_scan(const int* x, int* y)
{
    __shared__ int s[2 * 128];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    volatile int* v = s + warp * 64 + 32;        // 32 zeros in front: no lane tests its index
    v[(int)lane - 32] = 0;
    v[lane] = x[blockIdx.x * blockDim.x + threadIdx.x];
    v[lane] = v[lane] + v[(int)lane - 1];
    v[lane] = v[lane] + v[(int)lane - 2];
    v[lane] = v[lane] + v[(int)lane - 4];
    v[lane] = v[lane] + v[(int)lane - 8];
    v[lane] = v[lane] + v[(int)lane - 16];
    y[blockIdx.x * blockDim.x + threadIdx.x] = v[lane];
}
// half of each warp takes the volatile path, the other half goes straight to the barrier
__global__ void diverged(int* y)
{
    __shared__ int s[64];
    s[threadIdx.x] = 1;
    __syncthreads();
    if ((threadIdx.x & 31) < 16) {
        volatile int* v = s + (threadIdx.x & ~31u);
        v[threadIdx.x & 31] += v[(threadIdx.x & 31) + 8];
        v[threadIdx.x & 31] += v[(threadIdx.x & 31) + 4];
    }
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x];
}
__global__ void past_the_end(volatile float* y, int n)
{
    y[threadIdx.x + n] = 1.0f;
}
"""


@pytest.fixture(scope="module")
def warp_synchronous():
    return gl.load(code=WARP_SYNCHRONOUS)


def test_pre_volta_warp_synchronous_reduction_gets_the_gpus_maxima(warp_synchronous):
    n, blocks = 100003, 23
    x = rng_forms.standard_normal(n).astype(numpy.float32)
    out = xp.zeros(blocks, dtype=numpy.float32)
    warp_synchronous.get("block_max_lockstep")(blocks, 128, (xp.asarray(x), out, numpy.uint32(n)))
    shares = [x[(numpy.arange(n) // 128) % blocks == b].max() for b in range(blocks)]   # each block's share
    assert (gl.to_host(out) == shares).all()


def test_pre_volta_warp_scan_is_the_gpus_scan(warp_synchronous):
    x = rng_forms.integers(-50, 50, 3 * 128).astype(numpy.int32)
    y = xp.zeros(3 * 128, dtype=numpy.int32)
    warp_synchronous.get("warp_scan")(3, 128, (xp.asarray(x), y))
    expect = numpy.cumsum(x.reshape(-1, 32), axis=1).ravel()
    assert (gl.to_host(y) == expect).all()


def test_lanes_that_leave_the_volatile_path_do_not_stall_those_on_it(warp_synchronous):
    y = xp.zeros(64, dtype=numpy.int32)
    warp_synchronous.get("diverged")(1, 64, (y,))
    got = gl.to_host(y)
    # on a GPU: after step 1 lanes 0..15 hold 2; step 2 adds v[lane + 4]: 4 for lanes 0..11, 3 for 12..15
    for w in (0, 32):
        assert (got[w:w + 12] == 4).all() and (got[w + 12:w + 16] == 3).all() and (got[w + 16:w + 32] == 1).all()


@needs_memcheck
def test_a_volatile_access_past_an_argument_is_still_caught(warp_synchronous):
    with pytest.raises(gl.EmulatorError, match=r"thread \(30,0,0\) .*writes 4 bytes at element 40 of argument 0 \('y'\).*past its end"):
        warp_synchronous.get("past_the_end")(1, 32, (numpy.zeros(40, dtype=numpy.float32), 10))


NEWER_WARP_INTRINSICS = r"""
__global__ void warp_intrinsics(unsigned* u, int* i, const int* key, const int* val)
{
    const unsigned lane = threadIdx.x;
    const int k = key[lane], v = val[lane];
    u[lane] = __match_any_sync(0xffffffffu, k);
    int pred = -1, agree = -1;
    const unsigned all = __match_all_sync(0xffffffffu, k, &pred);
    unsigned same = 0;
    if (lane < 4) same = __match_all_sync(0x0000000fu, 7.5f, &agree);
    if (lane == 0) { u[32] = all; u[33] = same; u[34] = (unsigned)pred * 2 + (unsigned)agree; }
    const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    i[lane] = __reduce_add_sync(half, v);
    i[32 + lane] = __reduce_min_sync(0xffffffffu, v);
    i[64 + lane] = __reduce_max_sync(0xffffffffu, v);
    u[35 + lane] = __reduce_min_sync(0xffffffffu, (unsigned)v);         // unsigned: -3 is the largest
    if (lane == 0) {
        u[67] = __reduce_and_sync(1u, 0xf0u);
    }
    u[68 + lane] = __reduce_or_sync(0xffffffffu, 1u << (lane & 7));
    u[100 + lane] = __reduce_xor_sync(0xffffffffu, (unsigned)lane);
    if (lane & 1) u[132 + lane] = __activemask();
    else u[132 + lane] = __activemask();
}
__global__ void block_votes(int* out, int threshold)
{
    out[3 * threadIdx.x + 0] = __syncthreads_count((int)threadIdx.x < threshold);
    out[3 * threadIdx.x + 1] = __syncthreads_and((int)threadIdx.x < threshold);
    out[3 * threadIdx.x + 2] = __syncthreads_or((int)threadIdx.x < threshold);
}
// a spin lock whose waiters sleep, and the clock: a thread's later reading is never earlier
__global__ void spin_lock(int* lock, int* total, long long* ticks)
{
    const long long t0 = clock64();
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            *total += (int)threadIdx.x;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        } else {
            __nanosleep(32);
        }
    }
    ticks[threadIdx.x] = clock64() - t0;
}
"""


def test_match_reduce_and_activemask_warp_intrinsics():
    k = gl.load(code=NEWER_WARP_INTRINSICS).get("warp_intrinsics")
    key = (numpy.arange(32) % 3).astype(numpy.int32)
    val = numpy.array([(-3 if l == 5 else l * 7 - 40) for l in range(32)], dtype=numpy.int32)
    u, i = xp.zeros(164, dtype=numpy.uint32), xp.zeros(96, dtype=numpy.int32)
    k(1, 32, (u, i, xp.asarray(key), xp.asarray(val)))
    u, i = gl.to_host(u), gl.to_host(i)
    lanes = numpy.arange(32)
    for lane in range(32):
        assert u[lane] == sum(1 << l for l in lanes if key[l] == key[lane])
    assert u[32] == 0 and u[33] == 0xf and u[34] == 1      # keys differ: 0 (pred 0); four lanes agree: their mask
    assert (i[:16] == val[:16].sum()).all() and (i[16:32] == val[16:].sum()).all()
    assert (i[32:64] == val.min()).all() and (i[64:96] == val.max()).all()
    assert (u[35:67] == val.view(numpy.uint32).min()).all()
    assert u[67] == 0xf0 and (u[68:100] == 0xff).all() and (u[100:132] == numpy.bitwise_xor.reduce(lanes)).all()
    assert set(u[132:164].tolist()) <= {0xffffffff, 0x55555555, 0xaaaaaaaa} and u[132] & 1


@pytest.mark.parametrize("threshold", [0, 17, 96])
def test_syncthreads_count_and_or(threshold):
    out = xp.zeros(3 * 96, dtype=numpy.int32)
    gl.load(code=NEWER_WARP_INTRINSICS).get("block_votes")(1, 96, (out, threshold))
    got = gl.to_host(out).reshape(96, 3)
    assert (got[:, 0] == threshold).all()
    assert (got[:, 1] == int(threshold >= 96)).all() and (got[:, 2] == int(threshold > 0)).all()


def test_a_spin_lock_with_nanosleep_and_clock64():
    lock, total = xp.zeros(1, dtype=numpy.int32), xp.zeros(1, dtype=numpy.int32)
    ticks = xp.zeros(64, dtype=numpy.int64)
    gl.load(code=NEWER_WARP_INTRINSICS).get("spin_lock")(1, 64, (lock, total, ticks))
    assert int(gl.to_host(total)[0]) == sum(range(64)) and int(gl.to_host(lock)[0]) == 0
    assert (gl.to_host(ticks) >= 0).all()


# ---------------------------------------------------------------------------------------------
# Intrinsics and types
# ---------------------------------------------------------------------------------------------

INTRINSICS = r'''
__global__ void integer_intrinsics(unsigned* u, int* i)
{
    u[0] = __popc(0xf0f0u);               u[1] = __brev(1u);
    u[2] = __byte_perm(0x33221100u, 0x77665544u, 0x5140u);
    u[3] = __funnelshift_l(0x80000000u, 1u, 1u);   u[4] = __funnelshift_r(0x80000000u, 1u, 31u);
    u[5] = __funnelshift_lc(1u, 2u, 40u);  u[6] = __funnelshift_rc(1u, 2u, 40u);
    u[7] = __umulhi(0xffffffffu, 2u);     u[8] = __clz(1);   u[9] = __ffs(8);   u[10] = __umul24(0x1000001u, 3u);
    u[11] = (unsigned)__popcll(0xffffffffffull);   u[12] = (unsigned)__clzll(1ll);   u[13] = (unsigned)__ffsll(1ll << 40);
    u[14] = (unsigned)(__brevll(1ull) >> 32);   u[15] = __usad(3u, 10u, 1u);
    i[0] = __mulhi(-2, 0x40000000);       i[1] = __mul24(-3, 5);   i[2] = __hadd(-3, 0);   i[3] = __rhadd(-3, 0);
    i[4] = __sad(-3, 4, 1u);
    // __fns: PTX's examples, then none found (0xffffffff: -1 as an int) up, down and at an unset base
    i[5] = (int)(__fns(0xaaaaaaaau, 3, 1) + 10 * __fns(0xaaaaaaaau, 3, -1) + 100 * __fns(0xaaaaaaaau, 2, 1)
                 + 1000 * __fns(0xaaaaaaaau, 2, -1) + 10000 * __fns(0xaaaaaaaau, 0, 3));
    i[6] = (int)__fns(0x1u, 1, 1) + (int)__fns(0x80000000u, 30, -1) + (int)__fns(0x2u, 0, 0);
}
__global__ void atomics(unsigned* u, int* i, unsigned long long* l, float* f)
{
    // atomics work on shared and global memory (not on a thread's locals): one thread, shared variables
    __shared__ unsigned c;
    __shared__ int b;
    __shared__ unsigned long long q;
    __shared__ float g;
    c = 5;
    u[0] = atomicInc(&c, 5); u[1] = c; u[2] = atomicDec(&c, 3); u[3] = c; atomicDec(&c, 3); u[4] = c;
    b = 6;
    atomicAnd(&b, 3); atomicOr(&b, 8); atomicXor(&b, 1); i[0] = b;
    atomicAdd_block(&b, 1); atomicMax_system(&b, 100); atomicMin_block(&b, 50); i[1] = b;
    i[2] = atomicCAS(&b, 50, 7); i[3] = b; i[4] = atomicExch(&b, 9); i[5] = b; atomicSub(&b, 4); i[6] = b;
    q = 1;
    atomicOr(&q, 1ull << 40); atomicAdd_system(&q, 2ull); l[0] = q; l[1] = atomicCAS(&q, q, 5ull); l[2] = q;
    g = 1.5f; atomicAdd(&g, 2.25f); f[0] = g; f[1] = atomicExch(&g, -1.0f); f[2] = g;
}
__global__ void rounding(float* f, int* i, double* d)
{
    volatile float one = 1.0f, tiny = 1e-10f, three = 3.0f, two = 2.0f;
    f[0] = __fadd_rd(one, tiny);  f[1] = __fadd_ru(one, tiny);  f[2] = __fadd_rz(one, -tiny);  f[3] = __fadd_rn(one, tiny);
    f[4] = __fdiv_rz(one, three); f[5] = __fdiv_ru(one, three); f[6] = __fmul_rd(one / three, three);
    f[7] = __fmul_ru(one / three, three); f[8] = __fsqrt_rd(two); f[9] = __fsqrt_ru(two); f[10] = __frcp_rz(three);
    f[11] = __fmaf_rz(one / three, three, -one); f[12] = __fsub_ru(one, tiny); f[13] = __int2float_rz(16777217);
    f[14] = __int2float_ru(16777217); f[15] = __double2float_rd(1.0000000001); f[16] = __double2float_ru(1.0000000001);
    f[17] = __uint2float_rd(0xffffffffu); f[18] = __fmaf_rn(one, two, three); f[19] = __saturatef(-two);
    i[0] = __float2int_rn(2.5f); i[1] = __float2int_rn(3.5f); i[2] = __float2int_rd(-2.5f); i[3] = __float2int_ru(-2.5f);
    i[4] = __float2int_rz(-2.7f); i[5] = __float2int_rz(1e20f); i[6] = __float2int_rn(-1e20f);
    i[7] = __float2int_rn(__int_as_float(0x7fc00000)); i[8] = (int)__float2uint_rn(-5.0f);
    i[9] = __double2int_rd(-0.5); i[10] = (int)__float2ll_ru(2.1f);
    volatile double third = 1.0 / 3.0, dthree = 3.0;
    d[0] = __dmul_ru(third, dthree); d[1] = __dmul_rd(third, dthree); d[2] = __dadd_rz(1.0, -1e-20);
    d[3] = __ddiv_ru(1.0, dthree); d[4] = __fma_rd(third, dthree, -1.0); d[5] = __dsqrt_ru(2.0);
    d[6] = __hiloint2double(__double2hiint(2.5), __double2loint(2.5)); d[7] = __longlong_as_double(__double_as_longlong(-7.25));
}
__global__ void fast_math(float* f)
{
    float x = 0.5f + threadIdx.x * 0.25f;
    f[8 * threadIdx.x + 0] = __sinf(x);  f[8 * threadIdx.x + 1] = __cosf(x);  f[8 * threadIdx.x + 2] = __expf(x);
    f[8 * threadIdx.x + 3] = __logf(x);  f[8 * threadIdx.x + 4] = __powf(x, 1.5f); f[8 * threadIdx.x + 5] = __tanf(x);
    f[8 * threadIdx.x + 6] = __fdividef(1.0f, x); f[8 * threadIdx.x + 7] = __log2f(x) + __exp10f(x / 4) ;
}
__global__ void loads_and_stores(const float* in, float* out)
{
    int i = threadIdx.x;
    float v = __ldg(in + i) + __ldcg(in + i) + __ldca(in + i) + __ldcs(in + i) + __ldlu(in + i) + __ldcv(in + i);
    if (i % 4 == 0) __stcs(out + i, v); else if (i % 4 == 1) __stwt(out + i, v);
    else if (i % 4 == 2) __stcg(out + i, v); else __stwb(out + i, v);
    __threadfence(); __threadfence_block(); __threadfence_system();
}
__global__ void vector_types(double* d)
{
    char4 c4 = make_char4(1, -2, 3, 4);            uchar2 uc = make_uchar2(250, 251);
    short2 s2 = make_short2(5, 6);                 ushort4 us = make_ushort4(1, 2, 3, 60000);
    int3 i3 = make_int3(7, 8, 9);                  uint4 u4 = make_uint4(1, 2, 3, 4000000000u);
    long2 l2 = make_long2(-1, 2);                  ulong1 ul = make_ulong1(3);
    longlong2 ll = make_longlong2(1, 2);           ulonglong4 ull = make_ulonglong4(1, 2, 3, 4);
    float1 f1 = make_float1(2.5f);                 float3 f3 = make_float3(1, 2, 3);
    double2 d2 = make_double2(0.5, 0.25);          double4 d4 = make_double4(1, 2, 3, 4);
    char1 c1 = make_char1(-7);                     uint3 u3 = make_uint3(1, 2, 3);
    d[0] = (double)c4.y + uc.y + s2.y + us.w + i3.z + u4.w + l2.x + ul.x + ll.y + ull.w + f1.x + f3.z + d2.y + d4.w + c1.x + u3.z;
    d[1] = sizeof(char3) + 10 * sizeof(short3) + 100 * sizeof(int3) + 1000 * sizeof(double3);
    d[2] = alignof(char2) + 10 * alignof(short4) + 100 * alignof(float2) + 1000 * alignof(int4) + 10000 * alignof(double2)
         + 100000 * alignof(longlong2) + 1000000 * alignof(uchar4);
}
'''


@pytest.fixture(scope="module")
def intrinsics():
    return gl.load(code=INTRINSICS)


def test_integer_intrinsics(intrinsics):
    u, i = xp.zeros(16, dtype=numpy.uint32), xp.zeros(8, dtype=numpy.int32)
    intrinsics.get("integer_intrinsics")(1, 1, (u, i))
    assert gl.to_host(u).tolist() == [8, 0x80000000, 0x55114400, 3, 3, 1, 2, 1, 31, 4, 3, 40, 63, 41, 0x80000000, 8]
    assert gl.to_host(i)[:7].tolist() == [-1, -15, -2, -1, 8, 3 + 30 + 300 + 1000 + 50000, -3]


def test_atomics_on_all_their_types(intrinsics):
    u, i = xp.zeros(8, dtype=numpy.uint32), xp.zeros(8, dtype=numpy.int32)
    l, f = xp.zeros(4, dtype=numpy.uint64), xp.zeros(4, dtype=numpy.float32)
    intrinsics.get("atomics")(1, 1, (u, i, l, f))
    assert gl.to_host(u)[:5].tolist() == [5, 0, 0, 3, 2]
    assert gl.to_host(i)[:7].tolist() == [11, 50, 50, 7, 7, 9, 5]
    assert gl.to_host(l)[:3].tolist() == [(1 << 40) + 3, (1 << 40) + 3, 5]
    assert gl.to_host(f)[:3].tolist() == [3.75, 3.75, -1.0]


def test_rounding_intrinsics_round_as_named(intrinsics):
    f, i, d = xp.zeros(20, dtype=numpy.float32), xp.zeros(11, dtype=numpy.int32), xp.zeros(8, dtype=numpy.float64)
    intrinsics.get("rounding")(1, 1, (f, i, d))
    f32 = numpy.float32
    up, down = numpy.nextafter(f32(1), f32(2)), numpy.nextafter(f32(1), f32(0))
    third = f32(1) / f32(3)
    expect = [1, up, down, 1, numpy.nextafter(third, f32(0)), third, None, None,
              None, None, None, None, 1, 16777216, 16777218, 1, numpy.nextafter(f32(1), f32(2)), 4294967040, 5, 0]
    got = gl.to_host(f)
    for k, e in enumerate(expect):
        if e is not None:
            assert got[k] == f32(e), (k, got[k], e)
    assert got[6] <= got[7] and got[7] - got[6] <= numpy.spacing(f32(1))     # rd <= ru, one ulp apart at most
    assert got[8] < got[9] and got[9] == numpy.nextafter(got[8], f32(2))       # sqrt(2) is not a float
    assert got[8] == f32(numpy.sqrt(2)) or got[9] == f32(numpy.sqrt(2))
    assert gl.to_host(i).tolist() == [2, 4, -3, -2, -2, 2**31 - 1, -2**31, 0, 0, -1, 3]
    dd = gl.to_host(d)
    assert dd[0] >= 1.0 >= dd[1] and dd[0] - dd[1] <= numpy.spacing(1.0)
    assert dd[2] == numpy.nextafter(1.0, 0.0) and dd[3] == numpy.nextafter(1 / 3, 1.0) and dd[5] >= numpy.sqrt(2)
    assert dd[6] == 2.5 and dd[7] == -7.25


def test_fast_math_intrinsics_are_within_the_gpus_error_bounds(intrinsics):
    f = xp.zeros(8 * 8, dtype=numpy.float32)
    intrinsics.get("fast_math")(1, 8, (f,))
    x = 0.5 + numpy.arange(8) * 0.25
    ref = numpy.stack([numpy.sin(x), numpy.cos(x), numpy.exp(x), numpy.log(x), x ** 1.5, numpy.tan(x), 1 / x,
                       numpy.log2(x) + 10 ** (x / 4)], axis=1).ravel()
    assert numpy.allclose(gl.to_host(f), ref, rtol=2e-5, atol=2e-6)


def test_cache_hinted_loads_and_stores(intrinsics):
    x = xp.asarray(numpy.arange(32, dtype=numpy.float32))
    out = xp.zeros(32, dtype=numpy.float32)
    intrinsics.get("loads_and_stores")(1, 32, (x, out))
    assert (gl.to_host(out) == 6 * numpy.arange(32)).all()


def test_every_vector_type_with_cudas_sizes_and_alignments(intrinsics):
    d = xp.zeros(3, dtype=numpy.float64)
    intrinsics.get("vector_types")(1, 1, (d,))
    total = -2 + 251 + 6 + 60000 + 9 + 4000000000 - 1 + 3 + 2 + 4 + 2.5 + 3 + 0.25 + 4 - 7 + 3
    assert gl.to_host(d).tolist() == [total, 3 + 10 * 6 + 100 * 12 + 1000 * 24,
                                      2 + 10 * 8 + 100 * 8 + 1000 * 16 + 10000 * 16 + 100000 * 16 + 1000000 * 4]


def test_an_atomic_on_a_local_variable_is_an_error_as_on_a_gpu():
    if gl.backend != "emulator":
        pytest.skip("on a GPU this is an illegal address, which ruins the CUDA context for the rest of the run")
    code = "__global__ void local_atomic(int* y) { int c = 0; atomicAdd(&c, 1); y[0] = c; }"
    with pytest.raises(gl.EmulatorError, match=r"atomicAdd on a local variable of the thread: atomics work on "
                                               r"global and shared memory only"):
        _run(code, "local_atomic", 1, 1, xp.zeros(1, dtype=numpy.int32))


# ---------------------------------------------------------------------------------------------
# Cooperative groups, cuda::barrier, memcpy_async and the pipeline primitives
# ---------------------------------------------------------------------------------------------

GROUPS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>
namespace cg = cooperative_groups;

__global__ void cg_sum(const float* x, float* out, int n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int i = blockIdx.x * blockDim.x + block.thread_rank();
    float v = i < n ? x[i] : 0.0f;
    v = cg::reduce(warp, v, cg::plus<float>());
    __shared__ float partial[32];
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        float w = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
        w = cg::reduce(warp, w, cg::plus<float>());
        if (warp.thread_rank() == 0) atomicAdd(out, w);
    }
}

__global__ void tiles(int* out)
{
    auto block = cg::this_thread_block();
    auto t4 = cg::tiled_partition<4>(block);
    auto t64 = cg::tiled_partition<64>(block);          // larger than a warp: sync, ranks
    auto dyn = cg::tiled_partition(block, 16);          // a thread_group of 16
    __shared__ int s[128];
    s[block.thread_rank()] = block.thread_rank();
    t64.sync();
    dyn.sync();
    int r = block.thread_rank();
    int mx = cg::reduce(t4, r, cg::greater<int>());
    int mn = cg::reduce(t4, r, cg::less<int>());
    int bits = cg::reduce(t4, 1 << (r & 3), cg::bit_or<int>());
    unsigned b = t4.ballot(r % 2);
    int sh = t4.shfl_down(r, 1) - r + 10 * (t4.shfl_up(r, 1) - r) + 100 * t4.shfl_xor(r, 2) + 1000 * t4.shfl(r, 3);
    out[6 * r + 0] = mx * 1000 + mn;
    out[6 * r + 1] = bits * 100 + (int)b * 10 + t4.any(r == 1) + 2 * t4.all(r < 64);
    out[6 * r + 2] = sh;
    out[6 * r + 3] = (int)(t64.meta_group_rank() * 100 + t64.meta_group_size() * 10 + t4.meta_group_rank() % 10);
    out[6 * r + 4] = (int)(dyn.thread_rank() * 100 + dyn.size());
    out[6 * r + 5] = s[r ^ 1];
}

__global__ void aggregated(const int* flags, int* counter, int* slot, int* rank)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (flags[i]) {
        cg::coalesced_group active = cg::coalesced_threads();
        int base = 0;
        if (active.thread_rank() == 0) base = atomicAdd(counter, (int)active.size());
        base = active.shfl(base, 0);
        slot[i] = base + active.thread_rank();
        rank[i] = active.thread_rank() * 100 + active.size();
    }
}

__global__ void staged(const float* x, float* y)
{
    __shared__ float a[64];
    __shared__ float b[64];
    __shared__ float c[64];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(&a[threadIdx.x], &x[threadIdx.x], sizeof(float), bar);
    bar.arrive_and_wait();
    __pipeline_memcpy_async(&b[threadIdx.x], &x[64 + threadIdx.x], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    auto pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(&c[threadIdx.x], &x[128 + threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    __syncthreads();
    y[threadIdx.x] = a[63 - threadIdx.x] + 1000.0f * b[threadIdx.x ^ 1] + 1000000.0f * c[(threadIdx.x + 1) % 64];
    pipe.consumer_release();
}
'''


@pytest.fixture(scope="module")
def groups():
    return gl.load(code=GROUPS)


def test_cooperative_groups_reduce_across_a_block(groups):
    rng = numpy.random.default_rng(0)
    x = rng.standard_normal(1000).astype(numpy.float32)
    out = xp.zeros(1, dtype=numpy.float32)
    groups.get("cg_sum")(4, 256, (xp.asarray(x), out, 1000))
    assert abs(float(gl.to_host(out)[0]) - x.astype(numpy.float64).sum()) < 1e-4 * numpy.abs(x).sum()


def test_tiles_their_warp_operations_and_ranks(groups):
    out = xp.zeros(6 * 128, dtype=numpy.int32)
    groups.get("tiles")(1, 128, (out,))
    got = gl.to_host(out).reshape(128, 6)
    r = numpy.arange(128)
    base = r & ~3
    lane_in = r & 3
    assert (got[:, 0] == (base + 3) * 1000 + base).all()
    assert (got[:, 1] == 15 * 100 + 0b1010 * 10 + (base == 0) + 2 * (r < 64)).all()
    down = numpy.where(lane_in < 3, 1, 0)
    up = numpy.where(lane_in > 0, -1, 0)
    assert (got[:, 2] == down + 10 * up + 100 * (r ^ 2) + 1000 * (base + 3)).all()
    assert (got[:, 3] == (r // 64) * 100 + 2 * 10 + (r // 4) % 10).all()
    assert (got[:, 4] == (r % 16) * 100 + 16).all()
    assert (got[:, 5] == r ^ 1).all()


def test_coalesced_threads_are_the_lanes_that_arrive_together(groups):
    flags = (numpy.arange(96) % 3 == 0).astype(numpy.int32)          # 11 lanes of warp 0, 11 of warp 1, 10 of warp 2
    counter = xp.zeros(1, dtype=numpy.int32)
    slot = xp.full(96, -1, dtype=numpy.int32)
    rank = xp.full(96, -1, dtype=numpy.int32)
    groups.get("aggregated")(1, 96, (xp.asarray(flags), counter, slot, rank))
    slot, rank = gl.to_host(slot), gl.to_host(rank)
    picked = flags == 1
    assert int(gl.to_host(counter)[0]) == picked.sum()
    assert sorted(slot[picked]) == list(range(picked.sum())) and (slot[~picked] == -1).all()
    for w in range(3):                                  # in each warp: ranks in lane order, size = active lanes
        lanes = numpy.flatnonzero(picked[32 * w:32 * w + 32])
        assert (rank[32 * w + lanes] == numpy.arange(len(lanes)) * 100 + len(lanes)).all()
        assert (numpy.diff(slot[32 * w + lanes]) == 1).all()


def test_barriers_memcpy_async_and_pipelines(groups):
    x = numpy.arange(192, dtype=numpy.float32)
    y = xp.zeros(64, dtype=numpy.float32)
    groups.get("staged")(1, 64, (xp.asarray(x), y))
    t = numpy.arange(64)
    assert (gl.to_host(y) == x[63 - t] + 1000 * x[64 + (t ^ 1)] + 1000000 * x[128 + (t + 1) % 64]).all()


LARGE_TILES = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

template <unsigned N>
__global__ void large_tiles(const int* in, int* out)
{
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
    const int t = block.thread_rank(), v = in[t];
    int total = cg::reduce(tile, v, cg::plus<int>());
    int top = cg::reduce(tile, v, cg::greater<int>());           // a second reduce right after the first
    out[5 * t + 0] = total;
    out[5 * t + 1] = top;
    out[5 * t + 2] = cg::inclusive_scan(tile, v);
    out[5 * t + 3] = cg::exclusive_scan(tile, v);
    out[5 * t + 4] = tile.thread_rank() * 1000 + tile.meta_group_rank();
}
"""


@pytest.mark.parametrize("n", [64, 128, 256])
def test_reduce_and_scans_over_tiles_of_more_than_a_warp(n):
    """cg::reduce and the scans over a tile of 64 to 256 threads (several tiles of a 256-thread block), as CUDA 12
    gives them from a block_tile_memory: every thread of a tile gets the tile's total and its own prefix."""
    x = numpy.random.default_rng(n).integers(-1000, 1000, 256).astype(numpy.int32)
    out = xp.zeros(5 * 256, dtype=numpy.int32)
    gl.load(code=LARGE_TILES).get(f"large_tiles<{n}>")(1, 256, (xp.asarray(x), out))
    got = gl.to_host(out).reshape(256, 5)
    tiles = x.reshape(-1, n).astype(numpy.int64)
    inclusive = numpy.cumsum(tiles, axis=1)
    assert (got[:, 0] == numpy.repeat(tiles.sum(axis=1), n)).all()
    assert (got[:, 1] == numpy.repeat(tiles.max(axis=1), n)).all()
    assert (got[:, 2] == inclusive.reshape(-1)).all()
    assert (got[:, 3] == (inclusive - tiles).reshape(-1)).all()
    r = numpy.arange(256)
    assert (got[:, 4] == (r % n) * 1000 + r // n).all()


def test_a_grid_sync_without_a_cooperative_launch_is_refused_by_name():
    if gl.backend != "emulator":
        pytest.skip("the emulator's refusal")
    code = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
            "__global__ void gsync(int* y) { cg::this_grid().sync(); y[0] = 1; }")
    with pytest.raises(gl.EmulatorError, match="grid_group::sync\\(\\) needs a cooperative launch"):
        _run(code, "gsync", 1, 1, xp.zeros(1, dtype=numpy.int32))


CLUSTERS = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// reverses each block's 32 values through its cluster's shared memory
__global__ void DIMS reverse(float* y)
{
    __shared__ float s[32];
    cg::cluster_group cluster = cg::this_cluster();
    s[threadIdx.x] = blockIdx.x * 32 + threadIdx.x;
    cluster.sync();
    const float* mine = cluster.map_shared_rank(s, cluster.block_rank());
    y[blockIdx.x * 32 + threadIdx.x] = mine[31 - threadIdx.x] + 1000 * (cluster.num_blocks() - 1);
    cluster.sync();
}
__global__ void DIMS copy(const float* x, float* y) { y[blockIdx.x * 32 + threadIdx.x] = x[blockIdx.x * 32 + threadIdx.x]; }
"""


@pytest.mark.parametrize("dims", ["", "__cluster_dims__(1, 1, 1)", "__cluster_dims__(2, 1, 1)"])
def test_a_cluster_of_one_block_runs_and_larger_clusters_stop_by_name(dims):
    """A kernel launched without clusters is a cluster of its one block (Hopper's this_cluster: the block's barrier,
    rank 0, its own shared memory); __cluster_dims__ alone changes no answer. Clusters of more blocks, whose
    blocks run together on a GPU and read each other's shared memory, stop their kernel by name on the emulator;
    the module's other kernels run."""
    if gl.backend != "emulator" and gl.profiles.current().capability < (9, 0):
        pytest.skip("thread block clusters need compute capability 9.0")
    m = gl.load(code=CLUSTERS.replace("DIMS", dims))
    x = xp.asarray(rng_forms.standard_normal(64).astype(numpy.float32))
    y = xp.full(64, numpy.nan, dtype=numpy.float32)
    m.get("copy")(2, 32, (x, y))
    assert (gl.to_host(y) == gl.to_host(x)).all()
    pairs = "2, 1, 1" in dims
    if pairs and gl.backend == "emulator":
        with pytest.raises(gl.EmulatorError, match=r"kernel reverse stopped .* at <code>:8: the CPU emulator does "
                                                   r"not support cooperative groups' clusters of more than one "
                                                   r"block \(__cluster_dims__.*cooperative_groups::this_cluster"):
            m.get("reverse")(2, 32, (y,))
        return
    m.get("reverse")(2, 32, (y,))
    want = (numpy.arange(64).reshape(2, 32)[:, ::-1] + (1000 if pairs else 0)).ravel()
    assert (gl.to_host(y) == want).all()


def test_an_extern_shared_array_of_pointers_reinterpreted():
    """`extern __shared__ char* params[];`, cast to the type the kernel works in (llm.c's layernorm kernel 6)."""
    code = r"""
__global__ void k(float* out)
{
    extern __shared__ char* params[];
    float* s = reinterpret_cast<float*>(params);
    s[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[31 - threadIdx.x];
}
"""
    out = xp.zeros(32, dtype=numpy.float32)
    _run(code, "k", 1, 32, out, shared_mem=32 * 8)
    assert (gl.to_host(out) == numpy.arange(32)[::-1]).all()


def test_the_runtimes_host_types_and_ptrdiff_t_as_cuda_runtime_h_brings_them():
    """A kernel's file names the runtime's host types in declarations and host code (llm.c's `extern cudaDeviceProp
    deviceProp;`, a launcher's cudaStream_t, NVTX's CUDA-runtime header) and ::ptrdiff_t with no <stddef.h>, as
    nvcc's cuda_runtime.h declares them."""
    if gl.backend != "emulator":
        pytest.skip("nvcc's host compilation declares these; gemmlab compiles a GPU kernel's file with NVRTC")
    code = r"""
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
extern cudaDeviceProp deviceProp;
inline int threads_per_sm(const cudaDeviceProp& p) { return p.maxThreadsPerMultiProcessor; }
inline cudaError_t nothing(cudaStream_t, cudaEvent_t, cudaMemcpyKind) { return cudaSuccess; }
__global__ void k(int* out, ptrdiff_t stride) { out[threadIdx.x * stride] = threadIdx.x; }
"""
    out = numpy.zeros(64, dtype=numpy.int32)
    _run(code, "k", 1, 32, out, numpy.int64(2))
    assert (out[::2] == numpy.arange(32)).all() and not out[1::2].any()


def test_gccs_every_header_and_noinline_as_a_specifier_and_in_a_macro():
    """<bits/stdc++.h> (nvcc takes it from g++) declares libstdc++'s own __attribute__((__noinline__)), which a
    macro for CUDA's __noinline__ broke, so that no kernel of such a file compiled on the emulator."""
    code = r"""
#include <bits/stdc++.h>
#define KEEP_APART __noinline__
__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__device__ KEEP_APART float plus_one(float v) { return v + 1.0f; }
struct Scale { float s; __device__ __noinline__ float operator()(float v) const { return s * v; } };
__global__ void k(float* x) { x[threadIdx.x] = Scale{3.0f}(plus_one(twice(x[threadIdx.x]))); }
"""
    x = rng_forms.standard_normal(32).astype(numpy.float32)
    y = xp.asarray(x.copy())
    _run(code, "k", 1, 32, y)
    assert numpy.allclose(gl.to_host(y), 3 * (2 * x + 1))


def test_state_space_conversions_round_trip_and_keep_offsets():
    """__cvta_generic_to_shared and the rest (the cp.async and ldmatrix code that uses them stops at its PTX, not
    at an undeclared name): a shared address fits in 32 bits, keeps the distances between elements, puts the
    dynamic shared memory after the static arrays, and converts back to the same pointer; so do the others."""
    code = r"""
__global__ void k(unsigned long long* out)
{
    __shared__ float s[32];
    extern __shared__ double dyn[];
    float local[4] = {1, 2, 3, (float)threadIdx.x};
    const unsigned a = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);       // truncated, as code does
    const unsigned d = (unsigned)__cvta_generic_to_shared(&dyn[threadIdx.x]);
    out[8 * threadIdx.x + 0] = a - (unsigned)__cvta_generic_to_shared(&s[0]);
    out[8 * threadIdx.x + 1] = __cvta_shared_to_generic(a) == (void*)&s[threadIdx.x];
    out[8 * threadIdx.x + 2] = __cvta_shared_to_generic(d) == (void*)&dyn[threadIdx.x];
    out[8 * threadIdx.x + 3] = d >= (unsigned)__cvta_generic_to_shared(&s[32]);
    out[8 * threadIdx.x + 4] = __cvta_global_to_generic(__cvta_generic_to_global(out)) == (void*)out;
    out[8 * threadIdx.x + 5] = *(float*)__cvta_local_to_generic(__cvta_generic_to_local(&local[3]));
    out[8 * threadIdx.x + 6] = __cvta_generic_to_shared(&s[0]) < (1ull << 32);
    out[8 * threadIdx.x + 7] = d - (unsigned)__cvta_generic_to_shared(&dyn[0]);
}
"""
    out = xp.zeros(8 * 32, dtype=numpy.uint64)
    _run(code, "k", 1, 32, out, shared_mem=32 * 8)
    got = gl.to_host(out).reshape(32, 8)
    t = numpy.arange(32)
    assert (got[:, 0] == 4 * t).all() and (got[:, 7] == 8 * t).all()
    assert (got[:, [1, 2, 3, 4, 6]] == 1).all() and (got[:, 5] == t).all()


def test_a_pointer_into_the_middle_of_an_array_reaches_the_whole_array():
    """A view (d_in + RADIUS, as stencil codes pass their input) is a pointer into its array's allocation, as on a
    GPU: the kernel reads and writes before and after the view's ends, inside the array, and the array sees the
    writes; past the array's own ends the memory check names the argument and says the view's array ends there."""
    code = r"""
__global__ void stencil(const int* in, int* out, int radius)
{
    int sum = 0;
    for (int o = -radius; o <= radius; ++o) sum += in[(int)threadIdx.x + o];
    out[threadIdx.x] = sum;
}
__global__ void behind(int* out) { out[(int)threadIdx.x - 2] = threadIdx.x; }
"""
    m = gl.load(code=code)
    base = numpy.random.default_rng(3).integers(-100, 100, 38).astype(numpy.int32)
    x, out = xp.asarray(base), xp.zeros(32, dtype=numpy.int32)
    m.get("stencil")(1, 32, (x[3:], out, numpy.int32(3)))
    assert (gl.to_host(out) == numpy.convolve(base, numpy.ones(7, numpy.int64), "valid")[:32]).all()
    y = xp.full(40, -1, dtype=numpy.int32)
    m.get("behind")(1, 32, (y[5:],))
    want = numpy.full(40, -1)
    want[3:35] = numpy.arange(32)
    assert (gl.to_host(y) == want).all()
    if gl.backend == "emulator":
        with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes at element -4 of argument 0 \('in'\) \(int32, 35 "
                                                   r"elements\): 16 bytes before its start, and outside the 152 "
                                                   r"bytes of the array it is a view of"):
            m.get("stencil")(1, 32, (x[3:], out, numpy.int32(4)))


# ---------------------------------------------------------------------------------------------
# __half and __nv_bfloat16, rounded as the GPU rounds
# ---------------------------------------------------------------------------------------------

HALVES = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void conversions(const float* x, unsigned short* h, unsigned short* b, float* back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    h[4 * i + 0] = __half_as_ushort(__float2half_rn(x[i]));
    h[4 * i + 1] = __half_as_ushort(__float2half_rz(x[i]));
    h[4 * i + 2] = __half_as_ushort(__float2half_ru(x[i]));
    h[4 * i + 3] = __half_as_ushort(__float2half_rd(x[i]));
    b[4 * i + 0] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
    b[4 * i + 1] = __bfloat16_as_ushort(__float2bfloat16_rz(x[i]));
    b[4 * i + 2] = __bfloat16_as_ushort(__float2bfloat16_ru(x[i]));
    b[4 * i + 3] = __bfloat16_as_ushort(__float2bfloat16_rd(x[i]));
    back[2 * i + 0] = __half2float(__float2half(x[i]));
    back[2 * i + 1] = __bfloat162float(__float2bfloat16(x[i]));
}
__global__ void half_arithmetic(const __half* a, const __half* b, __half* out, float* f)
{
    int i = threadIdx.x;
    out[6 * i + 0] = __hadd(a[i], b[i]);
    out[6 * i + 1] = __hsub(a[i], b[i]);
    out[6 * i + 2] = __hmul(a[i], b[i]);
    out[6 * i + 3] = __hfma(a[i], b[i], a[i]);
    out[6 * i + 4] = __hdiv(a[i], b[i]);
    out[6 * i + 5] = __hmax(a[i], b[i]);
    __half2 p = __halves2half2(a[i], b[i]);
    __half2 q = __hfma2(p, p, p);
    f[3 * i + 0] = __low2float(q);
    f[3 * i + 1] = __high2float(q);
    f[3 * i + 2] = __half2float(__shfl_xor_sync(0xffffffffu, a[i], 1));
}
__global__ void bf16_arithmetic(const float* a, const float* b, float* out)
{
    int i = threadIdx.x;
    __nv_bfloat16 x = __float2bfloat16(a[i]), y = __float2bfloat16(b[i]);
    out[3 * i + 0] = __bfloat162float(__hadd(x, y));
    out[3 * i + 1] = __bfloat162float(__hmul(x, y));
    out[3 * i + 2] = __bfloat162float(__hfma(x, y, x));
}
'''


def _half_directed(x):
    """IEEE binary16 of float32 x under rn, rz, ru, rd, as float64 (NaN stays NaN)."""
    with numpy.errstate(over="ignore", invalid="ignore"):
        rn = x.astype(numpy.float16)
        up = numpy.where(rn.astype(numpy.float64) < x, numpy.nextafter(rn, numpy.float16(numpy.inf)), rn)
        down = numpy.where(rn.astype(numpy.float64) > x, numpy.nextafter(rn, numpy.float16(-numpy.inf)), rn)
    rz = numpy.where(x >= 0, down, up)
    return [v.astype(numpy.float64) for v in (rn, rz, up, down)]


def _bf16_directed(x):
    bits = x.view(numpy.uint32)
    top, rest = (bits >> 16).astype(numpy.uint32), bits & 0xFFFF
    rn = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    negative = (bits >> 31) == 1
    more = (rest != 0).astype(numpy.uint32)
    up = numpy.where(negative, top, top + more)
    down = numpy.where(negative, top + more, top)
    return [v.astype(numpy.uint16) for v in (rn, top, up, down)]


@pytest.fixture(scope="module")
def halves():
    return gl.load(code=HALVES)


def test_half_and_bfloat16_conversions_round_as_named(halves):
    rng = numpy.random.default_rng(0)
    x = numpy.concatenate([rng.standard_normal(400) * 10.0 ** rng.integers(-9, 7, 400),
                           [0.0, -0.0, 65504, 65519, 65520, -65520, 1e6, 6e-8, 2.9e-8, 3e-8, -3e-8, 1e-45, 3.4e38,
                            1.0009765625, 1.00048828125, numpy.inf, -numpy.inf, numpy.nan]]).astype(numpy.float32)
    n = len(x)
    h, b = xp.zeros(4 * n, dtype=numpy.uint16), xp.zeros(4 * n, dtype=numpy.uint16)
    back = xp.zeros(2 * n, dtype=numpy.float32)
    halves.get("conversions")((n + 127) // 128, 128, (xp.asarray(x), h, b, back, n))
    h, b, back = gl.to_host(h).reshape(n, 4), gl.to_host(b).reshape(n, 4), gl.to_host(back).reshape(n, 2)
    nan = numpy.isnan(x)
    for mode, expect in enumerate(_half_directed(x.astype(numpy.float64))):
        got = h[:, mode].view(numpy.float16).astype(numpy.float64)
        assert (numpy.isnan(got) == nan).all() and (got[~nan] == expect[~nan]).all(), mode
    for mode, expect in enumerate(_bf16_directed(x)):
        assert (b[~nan, mode] == expect[~nan]).all(), mode
        assert ((b[nan, mode] & 0x7F80) == 0x7F80).all() and (b[nan, mode] & 0x7F).all()
    with numpy.errstate(over="ignore"):
        assert (back[~nan, 0] == x[~nan].astype(numpy.float16).astype(numpy.float32)).all()
    assert (back[~nan, 1] == (b[~nan, 0].astype(numpy.uint32) << 16).view(numpy.float32)).all()


def test_half_arithmetic_is_correctly_rounded(halves):
    rng = numpy.random.default_rng(1)
    a = (rng.standard_normal(32) * 8).astype(numpy.float16)
    b = (rng.standard_normal(32) * 8).astype(numpy.float16)
    out, f = xp.zeros(6 * 32, dtype=numpy.float16), xp.zeros(3 * 32, dtype=numpy.float32)
    halves.get("half_arithmetic")(1, 32, (xp.asarray(a), xp.asarray(b), out, f))
    out, f = gl.to_host(out).reshape(32, 6), gl.to_host(f).reshape(32, 3)
    a64, b64 = a.astype(numpy.float64), b.astype(numpy.float64)
    h = lambda v: numpy.asarray(v).astype(numpy.float16)    # noqa: E731  (one rounding from exact)
    assert (out[:, 0] == h(a64 + b64)).all() and (out[:, 1] == h(a64 - b64)).all()
    assert (out[:, 2] == h(a64 * b64)).all() and (out[:, 3] == h(a64 * b64 + a64)).all()
    assert (out[:, 4] == h(a64 / b64)).all() and (out[:, 5] == numpy.maximum(a, b)).all()
    assert (f[:, 0] == h(a64 * a64 + a64)).all() and (f[:, 1] == h(b64 * b64 + b64)).all()
    assert (f[:, 2] == a[numpy.arange(32) ^ 1]).all()


def test_bfloat16_arithmetic_is_correctly_rounded(halves):
    rng = numpy.random.default_rng(2)
    a, b = rng.standard_normal(32).astype(numpy.float32), rng.standard_normal(32).astype(numpy.float32)
    out = xp.zeros(3 * 32, dtype=numpy.float32)
    halves.get("bf16_arithmetic")(1, 32, (xp.asarray(a), xp.asarray(b), out))
    out = gl.to_host(out).reshape(32, 3)

    def bf(v):                                          # float64 -> nearest bfloat16, as float32
        f = numpy.asarray(v, dtype=numpy.float64)
        bits = f.astype(numpy.float32).view(numpy.uint32)   # exact enough: checked against the float64 below
        lo = (bits & 0xFFFF0000).view(numpy.float32).astype(numpy.float64)
        hi = ((bits & 0xFFFF0000) + 0x10000).view(numpy.float32).astype(numpy.float64)
        pick_hi = (numpy.abs(hi - f) < numpy.abs(lo - f)) | ((numpy.abs(hi - f) == numpy.abs(lo - f))
                                                              & (((bits >> 16) & 1) == 1))
        return numpy.where(pick_hi, hi, lo).astype(numpy.float32)
    x, y = bf(a), bf(b)
    x64, y64 = x.astype(numpy.float64), y.astype(numpy.float64)
    assert (out[:, 0] == bf(x64 + y64)).all() and (out[:, 1] == bf(x64 * y64)).all()
    assert (out[:, 2] == bf(x64 * y64 + x64)).all()


DEVICE_VARIABLES = r'''
__device__ int counter;
__device__ float table[4] = {1, 2, 3, 4};
__device__ const int fixed = 7;
__device__ int twice(int x) { return 2 * x; }
__global__ void bump(int* out)
{
    if (threadIdx.x == 0) { counter += 1; table[1] += 10.0f; }
    __syncthreads();
    out[threadIdx.x] = counter * 1000 + twice(fixed) * 100 + (int)table[1];
}
__global__ void peek(int* out) { out[0] = counter; out[1] = (int)table[1]; }
'''


def test_device_variables_keep_their_values_from_launch_to_launch():
    module = gl.load(code=DEVICE_VARIABLES)
    out = xp.zeros(4, dtype=numpy.int32)
    for launch in range(1, 4):
        module.get("bump")(1, 4, (out,))
        assert (gl.to_host(out) == launch * 1000 + 1400 + 2 + 10 * launch).all()
    # a module's kernels share its variables, as the kernels of one CUDA module do
    peek = xp.zeros(2, dtype=numpy.int32)
    module.get("peek")(1, 1, (peek,))
    assert gl.to_host(peek).tolist() == [3, 32]
    fresh = gl.load(code=DEVICE_VARIABLES)                # a new module starts from the initializers
    fresh.get("peek")(1, 1, (peek,))
    assert gl.to_host(peek).tolist() == [0, 2]
    module.get("peek")(1, 1, (peek,))                     # and leaves the first one's alone
    assert gl.to_host(peek).tolist() == [3, 32]


HOST_SET = r'''
#define TAPS 5
__constant__ float taps[TAPS];                             // set by the host, as cudaMemcpyToSymbol would
__constant__ __align__(16) float4 colour[2];
struct Params { int n; float scale; };
__constant__ Params params;
namespace stats { __device__ unsigned long long hits = 0; __device__ float maximum; }
__device__ int histogram[8];
__device__ const int fixed = 3;
extern __device__ int declared_only;

template <int R>
__global__ void smooth(const float* in, float* out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params.n) return;
    float acc = 0.0f;
    for (int t = -R; t <= R; ++t) {
        const int j = min(max(i + t, 0), params.n - 1);
        acc += taps[t + R] * in[j];
    }
    out[i] = params.scale * acc + colour[1].w;
    atomicAdd(&stats::hits, 1ull);
    atomicAdd(&histogram[i % 8], 1);
}
__global__ void record_max(const float* in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMax(reinterpret_cast<int*>(&stats::maximum), __float_as_int(fmaxf(in[i], 0.0f)));
}
'''


def test_the_host_reads_and_writes_a_modules_variables_between_launches():
    """Module.get_global: __constant__ filled from the host (the CUDA samples' cudaMemcpyToSymbol), results left
    in __device__ variables read back (cudaMemcpyFromSymbol), a struct, a vector type, a namespace; every kernel
    of the module sees the same variables, and another load of the source has its own."""
    m = gl.load(code=HOST_SET)
    smooth = m.get("smooth<2>")                  # template instances before get_global (see below)
    taps = m.get_global("taps")
    assert taps.shape == (5,) and taps.dtype == numpy.float32
    weights = numpy.array([0.1, 0.2, 0.4, 0.2, 0.1], dtype=numpy.float32)
    taps[...] = xp.asarray(weights)
    colour = m.get_global("colour")
    assert colour.shape == (2, 4) and colour.dtype == numpy.float32
    colour[1, 3] = 0.5
    layout = numpy.dtype([("n", numpy.int32), ("scale", numpy.float32)])
    params = m.get_global("params", dtype=numpy.uint8)   # a struct: its bytes (CuPy has no structured dtypes)
    assert params.dtype == numpy.uint8 and params.shape == (8,)
    n = 300
    params[...] = xp.asarray(numpy.array([(n, 2.0)], dtype=layout).view(numpy.uint8))
    if gl.backend == "emulator":                  # NumPy reads it through the struct's layout
        assert m.get_global("params", dtype=layout)[0].tolist() == (n, 2.0)
    x = rng_forms.standard_normal(n).astype(numpy.float32)
    out = xp.zeros(n, dtype=numpy.float32)
    smooth((n + 127) // 128, 128, (xp.asarray(x), out))
    pad = numpy.concatenate([[x[0]] * 2, x, [x[-1]] * 2]).astype(numpy.float64)
    want = 2.0 * sum(float(w) * pad[k:k + n] for k, w in enumerate(weights)) + 0.5
    assert numpy.allclose(gl.to_host(out), want, rtol=1e-5, atol=1e-5)
    hits, histogram = m.get_global("stats::hits"), m.get_global("histogram")
    assert hits.shape == () and hits.dtype == numpy.uint64 and int(hits) == n
    assert gl.to_host(histogram).tolist() == [len(range(r, n, 8)) for r in range(8)]
    hits[...] = 0                                 # reset from the host; the next launch counts from there
    smooth((n + 127) // 128, 128, (xp.asarray(x), out))
    assert int(hits) == n and gl.to_host(histogram).tolist() == [2 * len(range(r, n, 8)) for r in range(8)]
    m.get("record_max")(3, 128, (xp.asarray(x), n))            # another kernel of the module: the same variables
    assert float(m.get_global("maximum")) == float(x.max()) and int(m.get_global("hits")) == n
    other = gl.load(code=HOST_SET)
    assert int(other.get_global("stats::hits")) == 0 and not gl.to_host(other.get_global("taps")).any()
    assert int(m.get_global("stats::hits")) == n
    as_int = m.get_global("taps", dtype=numpy.int32)
    assert gl.to_host(as_int).tolist() == weights.view(numpy.int32).tolist()


@pytest.mark.skipif(not _emulator._memcheck_flags(_emulator._compiler()), reason="racecheck needs g++ on x86-64 Linux")
def test_racecheck_runs_with_the_modules_variables_and_leaves_them_as_they_were():
    m = gl.load(code=HOST_SET)
    smooth = m.get("smooth<1>")
    taps, params = m.get_global("taps"), m.get_global("params", dtype=numpy.int32)
    taps[...] = xp.asarray(numpy.array([1, 0, 0, 0, 0], dtype=numpy.float32))
    params[...] = xp.asarray(numpy.array([64, 0], dtype=numpy.int32))        # n = 64 (scale 0.0)
    x, out = xp.asarray(numpy.arange(64, dtype=numpy.float32)), xp.zeros(64, dtype=numpy.float32)
    smooth(1, 64, (x, out))
    hits = m.get_global("stats::hits")
    assert int(hits) == 64
    report = gl.racecheck(smooth, 1, 64, (x, out))
    assert report.clean and int(hits) == 64 and int(m.get_global("histogram")[0]) == 8
    racy = gl.load(code=r'''
__device__ int race = 0;
__global__ void maybe(int* out)
{
    __shared__ int s;
    if (race) { s = threadIdx.x; race = 2; }
    out[threadIdx.x] = race ? s : 0;
}
''')
    maybe, out = racy.get("maybe"), xp.zeros(64, dtype=numpy.int32)
    assert gl.racecheck(maybe, 1, 64, (out,)).clean
    flag = racy.get_global("race")
    flag[...] = 1                                 # the run sees the value the host set, and leaves it
    assert not gl.racecheck(maybe, 1, 64, (out,)).clean and int(flag) == 1


def test_bool_parameters_by_value_and_by_pointer():
    k = gl.load(code=r'''
__global__ void pick(const bool* mask, float* y, bool negate, int n)
{
    const int i = threadIdx.x;
    if (i < n) y[i] = (mask[i] != negate) ? 1.0f : -1.0f;
}
''').get("pick")
    mask = numpy.array([True, False, True, True], dtype=numpy.bool_)
    y = xp.zeros(4, dtype=numpy.float32)
    for negate in (False, True, numpy.bool_(True)):
        k(1, 4, (xp.asarray(mask), y, negate, 4))
        assert gl.to_host(y).tolist() == [1.0 if m != bool(negate) else -1.0 for m in mask]
    with pytest.raises(ValueError, match="'negate' is bool: pass True or False"):
        k(1, 4, (xp.asarray(mask), y, 1, 4))


def test_a_variable_under_an_if_left_out_does_not_stop_the_module():
    m = gl.load(code=r'''
#if 0
__device__ int ghost;
#endif
__device__ int kept = 4;
__global__ void k(int* out) { out[0] = kept++; }
''')
    out = xp.zeros(1, dtype=numpy.int32)
    for want in (4, 5):
        m.get("k")(1, 1, (out,))
        assert int(gl.to_host(out)[0]) == want
    with pytest.raises(ValueError, match=r"\(5\): .*cannot reach.*under an #if that the build leaves out"):
        m.get_global("kept")


def test_get_global_refusals_name_the_variable():
    m = gl.load(code=HOST_SET)
    m.get("smooth<1>")
    with pytest.raises(ValueError, match="no __device__ or __constant__ variable 'nope'.*taps"):
        m.get_global("nope")
    with pytest.raises(ValueError, match=r"\(9\): fixed is const"):
        m.get_global("fixed")
    with pytest.raises(ValueError, match="declared_only is declared extern and defined nowhere"):
        m.get_global("declared_only")
    with pytest.raises(ValueError, match="not a whole number of float64"):
        m.get_global("taps", dtype=numpy.float64)             # 20 bytes
    m.get_global("taps")
    m.get("smooth<1>")                            # compiled before: fine
    m.get("record_max")                           # not a template: in the module from the start
    with pytest.raises(ValueError, match="smooth<3> is compiled after get_global handed out"):
        m.get("smooth<3>")



# every scalar, fixed-width and vector type: (C type, dtype, shape of one value)
GLOBAL_TYPES = [
    ("float", "float32", ()), ("double", "float64", ()), ("__half", "float16", ()), ("bool", "bool", ()),
    ("char", "int8", ()), ("signed char", "int8", ()), ("unsigned char", "uint8", ()),
    ("short", "int16", ()), ("unsigned short", "uint16", ()), ("int", "int32", ()), ("unsigned", "uint32", ()),
    ("long", "int64", ()), ("unsigned long", "uint64", ()), ("long unsigned int", "uint64", ()),
    ("long long", "int64", ()), ("unsigned long long int", "uint64", ()), ("size_t", "uint64", ()),
    ("int8_t", "int8", ()), ("uint8_t", "uint8", ()), ("int16_t", "int16", ()), ("uint16_t", "uint16", ()),
    ("int32_t", "int32", ()), ("uint32_t", "uint32", ()), ("int64_t", "int64", ()), ("uint64_t", "uint64", ()),
    ("__nv_bfloat16", "uint16", ()), ("real", "float32", ()), ("counter_t", "uint64", ()),
    ("char2", "int8", (2,)), ("uchar3", "uint8", (3,)), ("short4", "int16", (4,)), ("ushort2", "uint16", (2,)),
    ("int3", "int32", (3,)), ("uint2", "uint32", (2,)), ("long2", "int64", (2,)), ("ulong3", "uint64", (3,)),
    ("longlong2", "int64", (2,)), ("ulonglong4", "uint64", (4,)), ("float1", "float32", ()),
    ("float3", "float32", (3,)), ("double2", "float64", (2,)), ("double3", "float64", (3,)),
    ("__half2", "float16", (2,)), ("uint4", "uint32", (4,)),
]


def _globals_source():
    src = ("#include <cstdint>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\ntypedef float real;\n"
           "using counter_t = unsigned long long;\n")
    for i, (t, _, _) in enumerate(GLOBAL_TYPES):
        src += (f"__device__ {t} one{i};\n__device__ {t} three{i}[3];\n"
                f"__global__ void bytes{i}(unsigned char* out)\n{{\n"
                f"    const unsigned char* p = reinterpret_cast<const unsigned char*>(&one{i});\n"
                f"    const unsigned char* q = reinterpret_cast<const unsigned char*>(three{i});\n"
                f"    for (int k = 0; k < (int)sizeof one{i}; ++k) out[k] = p[k];\n"
                f"    for (int k = 0; k < (int)sizeof three{i}; ++k) out[64 + k] = q[k];\n}}\n")
    return src + "__global__ void widen(unsigned long long* out) { out[0] = one12; one12 += 1; }\n"


def test_get_global_gives_every_scalar_and_vector_type_its_dtype_and_shape():
    """What the host writes through get_global is what a kernel reads, byte for byte, for every type: the array's
    dtype and shape are the variable's (a typedef or a using of a known type too), never its raw bytes."""
    m = gl.load(code=_globals_source())
    for i in range(len(GLOBAL_TYPES)):
        m.get(f"bytes{i}")
    m.get("widen")
    rng = numpy.random.default_rng(3)
    for i, (ctype, dtype, shape) in enumerate(GLOBAL_TYPES):
        one, three = m.get_global(f"one{i}"), m.get_global(f"three{i}")
        assert (one.dtype.name, one.shape) == (dtype, shape), ctype
        assert (three.dtype.name, three.shape) == (dtype, (3,) + shape), ctype
        want = rng.integers(0, 100, size=(4,) + shape).astype(dtype)
        one[...] = xp.asarray(want[0])
        three[...] = xp.asarray(want[1:])
        out = xp.zeros(64 + want[1:].nbytes, dtype=numpy.uint8)
        m.get(f"bytes{i}")(1, 1, (out,))
        got = gl.to_host(out)
        assert got[:want[0].nbytes].tobytes() == want[0].tobytes(), ctype
        assert got[64:].tobytes() == want[1:].tobytes(), ctype
    wide, out = m.get_global("one12"), xp.zeros(1, dtype=numpy.uint64)     # an unsigned long
    wide[...] = 3
    m.get("widen")(1, 1, (out,))
    assert int(gl.to_host(out)[0]) == 3 and int(wide) == 4


def test_get_global_refuses_a_type_it_has_no_dtype_for_unless_told():
    m = gl.load(code=r"""
struct Pair { int a; float b; };
enum Mode { Fast, Slow };
__device__ Pair pair;
__device__ Mode mode;
__device__ long double wide;
__global__ void k(int* out) { out[0] = pair.a + (int)mode + (int)wide; }
""")
    m.get("k")
    for name, ctype in [("pair", "Pair"), ("mode", "Mode"), ("wide", "long double")]:
        with pytest.raises(ValueError, match=rf"\(\d+\): {name} is a {ctype}, which has no NumPy element type .* "
                                             rf"dtype="):
            m.get_global(name)
    assert m.get_global("pair", dtype=numpy.uint8).shape == (8,)
    assert m.get_global("pair", dtype=numpy.int32).shape == (2,)


OVERLOADS = r'''
__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
__global__ void scale(int* x, int s) { x[threadIdx.x] *= 10 * s; }
template <class T> __global__ void fill(T* x, T v) { x[threadIdx.x] = v; }
__global__ void fill(float* x) { x[threadIdx.x] = -1.0f; }
'''


def test_overloaded_kernels_chosen_by_name_expression():
    m = gl.load(code=OVERLOADS)
    f, i = xp.ones(4, dtype=numpy.float32), xp.ones(4, dtype=numpy.int32)
    m.get("(void(*)(float*, float))scale")(1, 4, (f, 3.0))
    m.get("(void(*)(int* x, int s))scale")(1, 4, (i, 3))
    assert (gl.to_host(f) == 3).all() and (gl.to_host(i) == 30).all()
    m.get("fill<float>")(1, 4, (f, 2.5))                   # template arguments pick the template
    assert (gl.to_host(f) == 2.5).all()
    m.get("fill")(1, 4, (f,))                              # none pick the plain function
    assert (gl.to_host(f) == -1).all()
    with pytest.raises(ValueError, match=r"scale is overloaded \(scale\(float\* x, float s\); scale\(int\* x, int s\)\)"
                                         r": name the one you mean with a cast"):
        m.get("scale")
    with pytest.raises(ValueError, match="is overloaded"):
        m.get("(void(*)(double*, double))scale")


def test_volatile_code_needs_a_compiler_that_can_run_it_in_lockstep(monkeypatch):
    """Where the compiler cannot tell volatile accesses apart, a warp-synchronous kernel is refused by name,
    never run one thread at a time (a wrong answer)."""
    if gl.backend != "emulator" or interleaved:
        pytest.skip("the emulator's refusal")
    monkeypatch.setattr(_emulator.build, "_accepts", lambda cxx, flags: False)
    code = '__global__ void k(volatile float* y) { y[threadIdx.x] += y[threadIdx.x + 1]; }  // lockstep probe 2'
    with pytest.raises(gl.BackendError, match="volatile memory .*lockstep.*g\\+\\+ 11"):
        gl.load(code=code).get("k")


# ---------------------------------------------------------------------------------------------
# Forms that CUDA's samples and training code use, in kernels written here
# ---------------------------------------------------------------------------------------------

SAMPLE_FORMS = r'''
#include "assert.h"
#include "math.h"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

// dynamic shared memory declared as samples declare it: aligned to the type, in several instantiations
template <typename T>
__global__ void reversed_twice(const T* in, T* out)
{
    extern __shared__ __align__(sizeof(T)) unsigned char my_smem[];
    T* s = reinterpret_cast<T*>(my_smem);
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x] * (T)2;
}

// a conversion operator that hands out the launch's dynamic shared memory as any type
template <class T> struct DynamicShared {
    __device__ inline operator T*() { extern __shared__ int dyn_words[]; return reinterpret_cast<T*>(dyn_words); }
};
template <class T>
__global__ void reversed(const T* in, T* out)
{
    T* s = DynamicShared<T>();
    s[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

struct Triple { float x, y, z; };
struct Pair { double a, b; };
__global__ void wide_shuffles(const float* in, float* out)
{
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    const float f = in[threadIdx.x];
    assert(f == f);
    const Triple t = warp.shfl_down(Triple{f, 2 * f, 3 * f}, 1);
    const Pair p = warp.shfl_xor(Pair{f, -f}, 3);
    float* o = out + 5 * threadIdx.x;
    o[0] = t.x; o[1] = t.y; o[2] = t.z; o[3] = (float)p.a; o[4] = (float)sqrt(p.b * p.b);
}

__global__ void large_tiles(const int* in, int* out)
{
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
    __shared__ int s[256];
    s[block.thread_rank()] = in[block.thread_rank()];
    tile.sync();
    if (tile.thread_rank() == 0) {
        int sum = 0;
        for (int i = 0; i < 128; ++i) sum += s[tile.meta_group_rank() * 128 + i];
        out[tile.meta_group_rank()] = sum;
    }
}

__global__ void partitions(const int* in, int* out)
{
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    const int v = in[threadIdx.x];
    cg::coalesced_group parity = cg::binary_partition(warp, v & 1);
    out[threadIdx.x] = cg::reduce(parity, v, cg::plus<int>()) * 100 + (int)parity.size();
    cg::coalesced_group third = cg::labeled_partition(warp, v % 3);
    out[32 + threadIdx.x] = cg::reduce(third, v, cg::plus<int>()) * 100 + (int)third.thread_rank();
    cg::thread_block_tile<16, cg::thread_block> half = cg::tiled_partition<16>(cg::this_thread_block());
    out[64 + threadIdx.x] = cg::reduce(half, v, cg::plus<int>());
    out[96 + threadIdx.x] = cg::inclusive_scan(half, v) * 1000 + cg::exclusive_scan(warp, v);
}
'''


@pytest.fixture(scope="module")
def samples():
    return gl.load(code=SAMPLE_FORMS)


@pytest.mark.parametrize("ctype, dtype", [("float", numpy.float32), ("double", numpy.float64), ("int", numpy.int32)])
def test_dynamic_shared_memory_aligned_to_the_type_in_several_instantiations(samples, ctype, dtype):
    x = xp.asarray(numpy.arange(64).astype(dtype))
    y = xp.zeros(64, dtype=dtype)
    samples.get(f"reversed_twice<{ctype}>")(1, 64, (x, y), shared_mem=64 * 8)
    assert (gl.to_host(y) == 2 * numpy.arange(64)[::-1]).all()
    samples.get(f"reversed<{ctype}>")(1, 64, (x, y), shared_mem=64 * 8)
    assert (gl.to_host(y) == numpy.arange(64)[::-1]).all()


def test_tiles_shuffle_values_wider_than_eight_bytes(samples):
    y = xp.zeros(160, dtype=numpy.float32)
    samples.get("wide_shuffles")(1, 32, (xp.asarray(numpy.arange(32, dtype=numpy.float32)), y))
    got, lane = gl.to_host(y).reshape(32, 5), numpy.arange(32)
    down, xor = numpy.where(lane + 1 < 32, lane + 1, lane), lane ^ 3
    assert (got[:, 0] == down).all() and (got[:, 1] == 2 * down).all() and (got[:, 2] == 3 * down).all()
    assert (got[:, 3] == xor).all() and (got[:, 4] == xor).all()


def test_tiles_of_more_than_a_warp_from_a_block_tile_memory(samples):
    y = xp.zeros(2, dtype=numpy.int32)
    samples.get("large_tiles")(1, 256, (xp.asarray(numpy.arange(256, dtype=numpy.int32)), y))
    assert list(gl.to_host(y)) == [sum(range(128)), sum(range(128, 256))]


def test_binary_and_labeled_partitions_and_tile_scans(samples):
    v = numpy.array([7, 2, 9, 4, 4, 1, 0, 3] * 4, dtype=numpy.int32) + numpy.arange(32, dtype=numpy.int32) // 8
    y = xp.zeros(128, dtype=numpy.int32)
    samples.get("partitions")(1, 32, (xp.asarray(v), y))
    got = gl.to_host(y)
    parity = [sum(u for u in v if u % 2 == w % 2) * 100 + sum(1 for u in v if u % 2 == w % 2) for w in v]
    third = [sum(u for u in v if u % 3 == w % 3) * 100 + sum(1 for u in v[:i] if u % 3 == w % 3)
             for i, w in enumerate(v)]
    half = [v[i // 16 * 16:i // 16 * 16 + 16].sum() for i in range(32)]
    scans = [v[i // 16 * 16:i + 1].sum() * 1000 + v[:i].sum() for i in range(32)]
    assert list(got[:32]) == parity and list(got[32:64]) == third
    assert list(got[64:96]) == half
    assert list(got[97:]) == scans[1:] and got[96] // 1000 == v[0]       # (rank 0's exclusive scan: no value)


LIBRARY_HEADERS = r'''
#include <stdio.h>
#include <time.h>
#include <ctime>
#include "assert.h"
#include <math.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <cstdint>
#include <cmath>
#include <cfloat>
#include <climits>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <algorithm>
#include <utility>
using namespace std;

template <typename T>
__global__ void library_names(const T* in, T* out, uint32_t* bits)
{
    static_assert(std::is_floating_point<T>::value && !std::is_same<T, int>::value, "a floating-point type");
    const int i = threadIdx.x;
    const T x = in[i];
    assert(x >= 0);
    if (i == 0 && x < 0) printf("negative input %f\n", (double)x);
    T a = std::sqrt(x) + sqrt(x), b = std::max(x, (T)2) + min(x, (T)1) + std::abs(-x) + fabs(x);
    swap(a, b);
    out[4 * i] = a + std::exp(x * (T)0.01) + pow(x, (T)2) + (std::isnan(x) ? (T)1 : (T)0);
    out[4 * i + 1] = b + (T)M_PI + std::numeric_limits<T>::epsilon() * (T)0;
    out[4 * i + 2] = (T)(FLT_MAX > 1e38f) + (T)(INT_MAX == 2147483647) + (T)(DBL_EPSILON < 1e-15);
    T copy;
    memcpy(&copy, &x, sizeof(T));
    out[4 * i + 3] = copy + (T)std::min<int64_t>(i, 3) + (T)sizeof(std::size_t);
    bits[i] = (uint32_t)std::numeric_limits<std::uint16_t>::max() + (uint32_t)CHAR_BIT
              + (uint32_t)std::bool_constant<std::is_integral_v<T>>::value;   // (0: T is float or double)
}
'''


@pytest.mark.parametrize("ctype, dtype", [("float", numpy.float32), ("double", numpy.float64)])
def test_the_c_and_cpp_library_headers_device_code_uses(ctype, dtype):
    """A kernel written for nvcc includes the C and C++ library headers (stdio.h, "assert.h", cmath, cstdint,
    limits, type_traits, ...): NVRTC has none of them, so gemmlab stands in for them there; the emulator's
    compiler has them. The answers are the same on both."""
    x = numpy.linspace(0.5, 9.0, 32).astype(dtype)
    y, bits = xp.zeros(128, dtype=dtype), xp.zeros(32, dtype=numpy.uint32)
    gl.load(code=LIBRARY_HEADERS).get(f"library_names<{ctype}>")(1, 32, (xp.asarray(x), y, bits))
    got, i = gl.to_host(y).reshape(32, 4), numpy.arange(32)
    tol = dict(rtol=1e-5 if dtype == numpy.float32 else 1e-12)
    b = numpy.maximum(x, 2) + numpy.minimum(x, 1) + 2 * x
    numpy.testing.assert_allclose(got[:, 0], b + numpy.exp(x * 0.01) + x * x, **tol)
    numpy.testing.assert_allclose(got[:, 1], 2 * numpy.sqrt(x) + numpy.pi, **tol)
    assert (got[:, 2] == 3).all()
    numpy.testing.assert_allclose(got[:, 3], x + numpy.minimum(i, 3) + 8, **tol)
    assert (gl.to_host(bits) == 65535 + 8).all()


def test_the_library_headers_stand_in_for_nvrtc_only_where_a_source_includes_one():
    from gemmlab.paths import NVRTC_STD
    from gemmlab.runtime.source import nvrtc_std_include
    for header in ("stdio.h", "assert.h", "cmath", "cstdint", "limits", "type_traits", "float.h", "algorithm", "time.h",
                   "bits/stdc++.h", "cuda.h", "vector", "iostream", "tuple", "string"):
        assert (NVRTC_STD / header).is_file() or header == "cuda.h"    # (the toolkit's <cuda.h> includes <stdlib.h>)
        for form in (f"#include <{header}>", f'#include "{header}"', f"  #  include <{header}>"):
            options, key = nvrtc_std_include((f"{form}\n__global__ void k() {{}}\n",))
            assert options == (f"-I{NVRTC_STD}",) and len(key) == 16, form
    for source in ("#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n", "// #include <stdio.h>\n",
                   "/* #include <cmath> */\n", "#include <mma.h>\n"):
        assert nvrtc_std_include((source,)) == ((), ""), source
    assert nvrtc_std_include(("", "#include <cstdint>\n"))[0], "a header's include counts as the source's"
    from gemmlab.paths import HOST_LIBRARIES
    options, key = nvrtc_std_include(("#include <cublas_v2.h>\n#include <nvtx3/nvToolsExt.h>\n",))
    assert options == (f"-I{HOST_LIBRARIES}",) and len(key) == 16
    options, key = nvrtc_std_include(("#include <cmath>\n#include \"cufft.h\"\n",))
    assert options == (f"-I{NVRTC_STD}", f"-I{HOST_LIBRARIES}") and len(key) == 32


def test_extern_declarations_defined_later_in_the_source():
    code = r'''
extern __device__ float scale_of(float x);
__global__ void use(float* out) { out[threadIdx.x] = scale_of((float)threadIdx.x); }
__device__ float scale_of(float x) { return 2.0f * x; }
'''
    y = xp.zeros(32, dtype=numpy.float32)
    _run(code, "use", 1, 32, y)
    assert (gl.to_host(y) == 2 * numpy.arange(32)).all()


def test_extern_device_variables_are_linked_within_the_source_and_undefined_ones_are_named():
    if gl.backend != "emulator":
        pytest.skip("the emulator's linking (nvcc needs -rdc=true for extern device variables)")
    code = r'''
extern __device__ int counter;
extern __constant__ float coeffs[4];
__global__ void count(float* out) { atomicAdd(&counter, 1); out[threadIdx.x] = coeffs[threadIdx.x % 4]; }
__global__ void read(int* out) { *out = counter; }
__device__ int counter = 0;
__constant__ float coeffs[4] = {1, 2, 3, 4};
'''
    m = gl.load(code=code)
    y, c = xp.zeros(32, dtype=numpy.float32), xp.zeros(1, dtype=numpy.int32)
    m.get("count")(1, 32, (y,))
    m.get("read")(1, 1, (c,))
    assert (gl.to_host(y) == numpy.tile([1, 2, 3, 4], 8)).all() and int(gl.to_host(c)[0]) == 32
    missing = "extern __device__ float helper(float x);\n__global__ void k(float* o) { o[0] = helper(1.0f); }\n"
    with pytest.raises(gl.CompileError, match=r"<code>:1: error: helper\(float\) is declared but defined nowhere in "
                                              r"this source: .*relocatable device code \(nvcc -rdc=true"):
        _run(missing, "k", 1, 1, xp.zeros(1, dtype=numpy.float32))


@needs_memcheck
@pytest.mark.skipif(interleaved, reason="the interleaved build checks no local arrays")
@pytest.mark.parametrize("index, side", [(4, "4 bytes past its end"), (-1, "4 bytes before its start")])
def test_an_access_outside_a_local_array_names_the_array_the_thread_and_the_line(index, side):
    code = r'''
__device__ float pick(const float* a, int i) { return a[i]; }
__global__ void local_arrays(const int* where, float* out)
{
    float a[4];
    int kept = 7;
    for (int i = 0; i < 4; ++i) a[i] = i + threadIdx.x;
    a[where[threadIdx.x]] = 1.0f;
    out[threadIdx.x] = pick(a, where[threadIdx.x] > 2 ? 1 : 0) + kept;
}
'''
    where = numpy.tile(numpy.arange(4, dtype=numpy.int32), 8)
    y = xp.zeros(32, dtype=numpy.float32)
    _run(code, "local_arrays", 1, 32, xp.asarray(where), y)             # in bounds: no error
    where[13] = index
    with pytest.raises(gl.EmulatorError, match=r"thread \(13,0,0\) at <code>:8: writes 4 bytes at byte offset "
                                               rf"-?\d+ of the thread's local array 'a' \(16 bytes, declared at line "
                                               rf"5\): {side}"):
        _run(code, "local_arrays", 1, 32, xp.asarray(where), y)


OUTSIDE_THE_MASK = r'''
__global__ void loaded_before(const int* in, int* out)       // every lane loads; lanes 8-31 take the other path
{
    const int lane = threadIdx.x & 31;
    int v = in[lane];
    if (lane < 8) {
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffu, v, offset);
        out[lane] = v;
    } else {
        out[lane] = -v;
    }
}
__global__ void loaded_inside(const int* in, int* out)       // lanes 8-31 never run the branch
{
    const int lane = threadIdx.x & 31;
    if (lane < 8) {
        int v = in[lane];
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffu, v, offset);
        out[lane] = v;
    }
}
__global__ void butterfly(const int* in, int* out)           // xor 8 .. 1 within a mask of 8 lanes
{
    const int lane = threadIdx.x & 31;
    if (lane < 8) {
        int v = in[lane];
        for (int offset = 8; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffu, v, offset);
        out[lane] = v;
    }
}
__global__ void direct_read(const int* in, int* out)         // lane 20, outside the mask
{
    const int lane = threadIdx.x & 31;
    if (lane < 8) out[lane] = __shfl_sync(0xffu, in[lane], 20);
}
__global__ void at_another_shuffle(const int* in, int* out)  // lanes 8-31 are at a shuffle of their own
{
    const int lane = threadIdx.x & 31;
    int v = in[lane];
    if (lane < 8) v += __shfl_down_sync(0xffu, v, 16);
    else v += __shfl_down_sync(0xffffff00u, v, 1);
    out[lane] = v;
}
'''


def _shuffled(values, mask, steps, kind):
    """A warp's shuffles as the H200 made them (measured 2026-12-02): a read from a lane in the mask gives its
    value, from a lane outside it 0, from past the warp (down) the reader's own value."""
    v = list(values)
    for o in steps:
        new = list(v)
        for i in range(32):
            if mask >> i & 1:
                src = i ^ o if kind == "xor" else i + o
                new[i] = v[i] + (v[i] if src >= 32 else v[src] if mask >> src & 1 else 0)
        v = new
    return v


def test_a_shuffle_from_a_lane_outside_the_mask_reads_what_the_h200_reads():
    """Lanes 0-7 shuffle with a mask of 0xff and read lanes outside it (undefined in CUDA): the H200 reads 0 there,
    whether those lanes skipped the branch, took another path or are at another shuffle; the emulator does the
    same. (Where nvcc can prove a shuffled value is the same in every lane, a constant, it folds the shuffle into
    that value and no lane is read at all: there the GPU's answer is the value, and the emulator, which does not
    fold, differs. The appendix page on the emulator says so.)"""
    m = gl.load(code=OUTSIDE_THE_MASK)
    values = numpy.arange(32, dtype=numpy.int32) * 10 + 1
    x = xp.asarray(values)
    reduced = _shuffled(values, 0xff, (16, 8, 4, 2, 1), "down")[:8]
    assert reduced[0] == sum(values[:8]) and reduced[7] == values[7]
    for name, want in (("loaded_before", reduced + [-int(v) for v in values[8:]]), ("loaded_inside", reduced),
                       ("butterfly", _shuffled(values, 0xff, (8, 4, 2, 1), "xor")[:8]),
                       ("direct_read", [0] * 8),
                       ("at_another_shuffle", _shuffled(values, 0xff, (16,), "down")[:8] +
                        _shuffled(values, 0xffffff00, (1,), "down")[8:])):
        y = xp.full(32, -7, dtype=numpy.int32)
        m.get(name)(1, 32, (x, y))
        got = gl.to_host(y)[:len(want)].tolist()
        assert got == [int(w) for w in want], name


def test_a_converged_warp_reads_what_its_lanes_just_stored_to_global_memory():
    """Each lane stores, then reads its neighbour's element with no __syncwarp between: a converged warp makes
    each store in all its lanes before any lane's next load, so every lane reads the neighbour's new value
    (the emulator makes a warp's loads in lockstep once it has stored)."""
    code = r'''
__global__ void neighbours(float* buf, float* out)
{
    const int i = threadIdx.x;
    buf[i] = i * 2.0f;
    out[i] = buf[(i + 1) % 32 + (i & ~31)];
}
'''
    buf, out = xp.zeros(96, dtype=numpy.float32), xp.zeros(96, dtype=numpy.float32)
    _run(code, "neighbours", 1, 96, buf, out)
    i = numpy.arange(96)
    assert (gl.to_host(out) == 2 * ((i + 1) % 32 + (i & ~31))).all()


def test_lanes_that_read_their_warp_mates_shared_stores_are_reported_and_interleaved_get_the_gpus_answer():
    """The same through a __shared__ array: a converged warp reads its lanes' new values (the GPU's answer); the usual
    schedule does not make shared-memory loads in lockstep (appendix/emulator.md), so here racecheck reports the
    read-after-write within the warp, and GEMMLAB_EMULATOR_INTERLEAVE=1 gives the GPU's answer."""
    code = r"""
__global__ void mirror(const float* x, float* y)
{
    __shared__ float s[64];
    const int i = threadIdx.x;
    s[i] = x[i];
    y[i] = s[(i ^ 31)];
}
"""
    k = gl.load(code=code).get("mirror")
    x = xp.asarray(numpy.arange(1, 65, dtype=numpy.float32))
    y = xp.zeros(64, dtype=numpy.float32)
    k(1, 64, (x, y))
    want = numpy.arange(1, 65)[numpy.arange(64) ^ 31]
    if gl.backend != "emulator" or interleaved:
        assert (gl.to_host(y) == want).all()
    if gl.backend == "emulator":
        report = str(gl.racecheck(k, 1, 64, (x, y)))
        assert "read-after-write hazard on s" in report and "<code>:6" in report and "<code>:7" in report


def test_every_lanes_atomic_counts_after_its_warp_has_stored():
    """Once a warp has stored to an argument its loads are made in lockstep (above), but an atomic's read and
    write are one access: every lane of every warp adds to the same words, after a store, and no addition is
    lost, for each type CUDA adds atomically (pairs of halves and bfloat16s, halves, ints, floats, a CAS loop,
    cuda::atomic_ref)."""
    code = r'''
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/atomic>
__global__ void counts(int* copy, __nv_bfloat162* b2, __half2* h2, __half* h, int* i, float* f, double* d,
                       unsigned* mx)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    copy[t] = t;                                         // the warp stores first: its loads go in lockstep
    atomicAdd(b2, __floats2bfloat162_rn(1.0f, 2.0f));
    atomicAdd(h2, __floats2half2_rn(0.5f, 0.25f));
    atomicAdd(h, __float2half(1.0f));
    atomicAdd(i, 1);
    atomicAdd(f, 1.0f);
    unsigned long long* bits = reinterpret_cast<unsigned long long*>(d);
    unsigned long long old = *bits, seen;
    do {                                                 // the CAS loop of pre-Pascal double atomics
        seen = old;
        old = atomicCAS(bits, seen, __double_as_longlong(__longlong_as_double(seen) + 1.0));
    } while (seen != old);
    atomicMax(mx, (unsigned)t);
    cuda::atomic_ref<int, cuda::thread_scope_device>(i[1]).fetch_add(2);
}
'''
    blocks, threads = 3, 64
    n = blocks * threads
    copy, b2, h2 = xp.zeros(n, dtype=numpy.int32), xp.zeros(2, dtype=numpy.uint16), xp.zeros(2, dtype=numpy.float16)
    h, i, f = xp.zeros(1, dtype=numpy.float16), xp.zeros(2, dtype=numpy.int32), xp.zeros(1, dtype=numpy.float32)
    d, mx = xp.zeros(1, dtype=numpy.float64), xp.zeros(1, dtype=numpy.uint32)
    _run(code, "counts", blocks, threads, copy, b2, h2, h, i, f, d, mx)
    assert (gl.to_host(b2).astype(numpy.uint32) << 16).view(numpy.float32).tolist() == [n, 2 * n]
    assert gl.to_host(h2).tolist() == [n / 2, n / 4] and gl.to_host(h).tolist() == [n]
    assert gl.to_host(i).tolist() == [n, 2 * n] and gl.to_host(f).tolist() == [n] and gl.to_host(d).tolist() == [n]
    assert gl.to_host(mx).tolist() == [n - 1] and (gl.to_host(copy) == numpy.arange(n)).all()


def test_kernels_with_static_or_extern_c_before_or_after_global():
    """nvcc takes a kernel's specifiers in any order: `static __global__`, `__global__ static`,
    `extern "C" __global__`; each is found by its name."""
    code = r'''
extern "C" __global__ void plain_c(float* x) { x[threadIdx.x] += 1.0f; }
static __global__ void before(float* x) { x[threadIdx.x] += 2.0f; }
__global__ static void after(float* x) { x[threadIdx.x] += 4.0f; }
template <int N> __global__ static void __launch_bounds__(64) after_t(float* x) { x[threadIdx.x] += N; }
'''
    x = xp.zeros(8, dtype=numpy.float32)
    m = gl.load(code=code)
    for name in ("plain_c", "before", "after", "after_t<8>"):
        m.get(name)((1,), (8,), (x,))
    assert gl.to_host(x).tolist() == [15.0] * 8


NEWER_FORMS = r'''
#include <cooperative_groups.h>
#include <cuda/std/bit>
#include <cuda/std/span>
#include <cuda/std/cstdint>
namespace cg = cooperative_groups;
struct alignas(16) Quad { float v[4]; };
__global__ void newer(const float* x, float* out, unsigned* bits, unsigned long long* where)
{
    __shared__ alignas(16) float a[64];                  // alignas after __shared__, before it, of a type
    alignas(32) __shared__ float b[64];
    __shared__ alignas(Quad) unsigned char c[64];
    extern __shared__ __align__(16) float dyn[];
    const unsigned t = threadIdx.x;
    a[t] = x[t];
    b[t] = 2.0f * x[t];
    c[t] = (unsigned char)t;
    dyn[t] = 3.0f * x[t];
    __syncthreads();
    if (t == 0) {
        where[0] = (unsigned long long)(size_t)a % 16 + 100 * ((unsigned long long)(size_t)b % 32)
                 + 10000 * ((unsigned long long)(size_t)c % 16);
    }
    cuda::std::span<const float> row(a + (t / 16) * 16, 16);  // a view of this thread's row of 16
    float sum = 0.0f;
    for (float v : row) sum += v;
    out[t] = sum + b[t] + dyn[63 - t] + row.size() + c[t];
    auto tile = cg::tiled_partition<16>(cg::this_thread_block());
    cg::invoke_one(tile, [&] { atomicAdd(&bits[0], 1u); });
    const unsigned first = cg::invoke_one_broadcast(tile, [&] { return t; });   // the rank-0 thread's t
    bits[1 + t] = first + 1000 * cg::this_thread().size() + 10000 * cg::this_thread().thread_rank();
    if (t == 0) {
        bits[65] = cuda::std::popcount(0xf0f0u) + 100 * cuda::std::countl_zero(cuda::std::uint32_t(1))
                 + 10000 * cuda::std::bit_width(255u);
        bits[66] = cuda::std::bit_cast<cuda::std::uint32_t>(1.0f);
        bits[67] = cuda::std::rotl(0x80000001u, 1) + cuda::std::bit_ceil(17u) + cuda::std::has_single_bit(64u);
    }
}
'''


def test_alignas_shared_arrays_span_bit_this_thread_and_invoke_one():
    """Forms of newer CUDA code: alignas on __shared__ arrays (after __shared__, before it, of a type; on an
    extern array nvcc takes __align__ there), cuda::std::span and <cuda/std/bit> (C++20 names in libcu++, which nvcc offers under C++17),
    cg::this_thread, cg::invoke_one and invoke_one_broadcast."""
    x = numpy.arange(64, dtype=numpy.float32)
    out, bits = xp.zeros(64, dtype=numpy.float32), xp.zeros(68, dtype=numpy.uint32)
    where = xp.zeros(1, dtype=numpy.uint64)
    gl.load(code=NEWER_FORMS).get("newer")((1,), (64,), (xp.asarray(x), out, bits, where), shared_mem=64 * 4)
    t = numpy.arange(64)
    rows = x.reshape(4, 16).sum(1)[t // 16]
    assert (gl.to_host(out) == rows + 2 * x + 3 * x[63 - t] + 16 + t).all()
    assert gl.to_host(where).tolist() == [0]
    b = gl.to_host(bits)
    assert b[0] == 4 and (b[1:65] == t // 16 * 16 + 1000).all()
    assert b[65] == 8 + 100 * 31 + 10000 * 8 and b[66] == 0x3F800000 and b[67] == 3 + 32 + 1


SPECIAL_REGISTERS = r'''
__device__ __forceinline__ unsigned lane_id() { unsigned r; asm volatile("mov.u32 %0, %%laneid;" : "=r"(r)); return r; }
__global__ void registers(unsigned* o, unsigned long long* clocks)
{
    const unsigned t = threadIdx.x;
    unsigned lt, le, gt, ge, eq, sm, nsm, dyn, w;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%lanemask_le;\n" : "=r"(le));
    asm volatile("mov.u32 %0, %%lanemask_gt;" : "=r"(gt));
    asm volatile("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    asm volatile("mov.u32 %0, %%lanemask_eq;" : "=r"(eq));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsm));
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
    unsigned long long c0, c1;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c0));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(c1));
    o[t] = lane_id();
    o[64 + t] = lt; o[128 + t] = le; o[192 + t] = gt; o[256 + t] = ge; o[320 + t] = eq;
    o[384 + t] = sm < nsm; o[448 + t] = dyn; o[512 + t] = w;
    if (t == 0) { clocks[0] = c0; clocks[1] = c1; }
}
'''


def test_inline_ptx_reads_of_special_registers_run_and_other_asm_is_refused():
    """The one inline-PTX form the emulator runs: `mov` of a special register into a variable (%laneid, the lane
    masks, %smid below %nsmid, %dynamic_smem_size, %warpid, the clocks), as CUDA's samples and many tutorials
    write helpers; any other asm is refused, naming it."""
    o, clocks = xp.zeros(576, dtype=numpy.uint32), xp.zeros(2, dtype=numpy.uint64)
    gl.load(code=SPECIAL_REGISTERS).get("registers")((3,), (64,), (o, clocks), shared_mem=96)
    g = gl.to_host(o).reshape(9, 64).astype(numpy.uint64)
    lane = numpy.arange(64) % 32
    below = (1 << lane) - 1
    assert (g[0] == lane).all() and (g[1] == below).all() and (g[2] == (2 << lane) - 1).all()
    assert (g[3] == 0xFFFFFFFF ^ ((2 << lane) - 1)).all() and (g[4] == 0xFFFFFFFF ^ below).all()
    assert (g[5] == 1 << lane).all() and (g[6] == 1).all() and (g[7] == 96).all()
    if gl.backend == "emulator":              # (a GPU's %warpid is its hardware slot, which may differ)
        assert (g[8] == numpy.arange(64) // 32).all()
    assert (gl.to_host(clocks) > 0).all()
    if gl.backend == "emulator":
        q = gl.load(code=r'__global__ void q(float* x) { asm("add.f32 %0, %0, 1.0;" : "+f"(x[0])); }').get("q")
        with pytest.raises(gl.EmulatorError, match=r"does not support inline PTX assembly \(asm\): "
                                                   r"asm\(\"add.f32 ...\"\)"):
            q(1, 1, (numpy.zeros(1, dtype=numpy.float32),))


SIXTEEN_BIT_API = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// for T = __half (H 1) or __nv_bfloat16 (H 0), from pairs (a, b) of each thread: the exact operations' bits, the
// comparisons' and the conversions' values, and the functions (rounded as the GPU's, to within an ulp)
template <class T, class P, int H>
__device__ void sixteen(const T* a, const T* b, unsigned short* bits, int* ints, float* fn, int t)
{
    const T x = a[t], y = b[t], half = T(0.5f);
    const P p = P(x, y), q = P(y, half);
    auto out = [&](int k, T v) { bits[t * 16 + k] = H ? __half_as_ushort(*(__half*)&v) : __bfloat16_as_ushort(*(__nv_bfloat16*)&v); };
    out(0, __hsub_sat(x, y)); out(1, __hfma_sat(x, y, half)); out(2, __hfma_relu(x, y, half));
    out(3, __hmax_nan(x, y)); out(4, __hmin_nan(x, y));
    const P r = __hfma2_relu(p, q, p), s = __hmul2_sat(p, q), m = __hmax2_nan(p, q), c = __hcmadd(p, q, p);
    out(5, r.x); out(6, r.y); out(7, s.x); out(8, s.y); out(9, m.x); out(10, c.x); out(11, c.y);
    out(12, __lowhigh2highlow(p).x); out(13, __hsub2_sat(p, q).y); out(14, __hadd2_sat(p, q).x);
    int* o = ints + t * 16;
    o[0] = __hequ(x, y) + 2 * __hneu(x, y) + 4 * __hltu(x, y) + 8 * __hleu(x, y) + 16 * __hgtu(x, y) + 32 * __hgeu(x, y);
    o[1] = (int)__hlt2_mask(p, q);
    o[2] = __hbge2(p, q) + 2 * __hbltu2(p, q) + 4 * (p == q) + 8 * (p < q);
    o[3] = (int)(float)__hle2(p, q).x + 2 * (int)(float)__hle2(p, q).y + 4 * (int)(float)__hisnan2(p).y;
    if constexpr (H) {
        o[4] = __half2short_rz(x); o[5] = __half2int_rd(x); o[6] = __half2int_ru(x); o[7] = (int)__half2uint_rn(x);
        o[8] = (int)__half2ll_rz(y); o[9] = __half2char_rz(x); o[10] = __half2uchar_rz(x);
        o[11] = __half_as_ushort(__int2half_rz(t * 1001 + 1)); o[12] = __half_as_ushort(__ll2half_rn(-(long long)t * 3001 - 1));
        o[13] = __half_as_ushort(__uint2half_ru(t * 2049u + 1u)); o[14] = __half_as_ushort(__short2half_rd((short)(-t * 511 - 3)));
        o[15] = __half_as_ushort(__ull2half_rn(((unsigned long long)t << 40) | 1ull));
    } else {
        o[4] = __bfloat162short_rz(x); o[5] = __bfloat162int_rd(x); o[6] = __bfloat162int_ru(x); o[7] = (int)__bfloat162uint_rn(x);
        o[8] = (int)__bfloat162ll_rz(y); o[9] = __bfloat162char_rz(x); o[10] = __bfloat162uchar_rz(x);
        o[11] = __bfloat16_as_ushort(__int2bfloat16_rz(t * 1001 + 1)); o[12] = __bfloat16_as_ushort(__ll2bfloat16_rn(-(long long)t * 3001 - 1));
        o[13] = __bfloat16_as_ushort(__uint2bfloat16_ru(t * 2049u + 1u)); o[14] = __bfloat16_as_ushort(__short2bfloat16_rd((short)(-t * 511 - 3)));
        o[15] = __bfloat16_as_ushort(__ull2bfloat16_rn(((unsigned long long)t << 40) | 1ull));
    }
    const T ax = __habs(x) + T(0.25f);
    float* f = fn + t * 8;
    f[0] = (float)hexp10(x); f[1] = (float)hlog10(ax); f[2] = (float)h2rsqrt(P(ax, ax)).x; f[3] = (float)h2log2(P(ax, ax)).y;
    f[4] = (float)h2sin(p).x; f[5] = (float)h2floor(p).y; f[6] = (float)h2rint(p).x; f[7] = (float)h2exp2(p).y;
}
__global__ void api(const __half* ha, const __half* hb, const __nv_bfloat16* ba, const __nv_bfloat16* bb,
                    unsigned short* bits, int* ints, float* fn)
{
    const int t = threadIdx.x;
    sixteen<__half, __half2, 1>(ha, hb, bits, ints, fn, t);
    sixteen<__nv_bfloat16, __nv_bfloat162, 0>(ba, bb, bits + 64 * 16, ints + 64 * 16, fn + 64 * 8, t);
    if (t == 0) {
        bits[2 * 64 * 16] = __half_as_ushort(__ushort_as_half((unsigned short)0x7C00U));
        bits[2 * 64 * 16 + 1] = __bfloat16_as_ushort(__ushort_as_bfloat16((unsigned short)0x7F7FU));
    }
}
'''


def _f16(u, half):
    u = numpy.asarray(u, dtype=numpy.uint16)
    return (u.view(numpy.float16) if half else gl.ops.from_bf16_bits(u)).astype(numpy.float64)


def _to16(v, half):
    """float64 values to 16-bit bits, rounded to nearest even (a canonical NaN: 0x7fff)."""
    v = numpy.asarray(v, dtype=numpy.float64)
    with numpy.errstate(over="ignore"):                      # past the format's range: inf, as intended
        out = v.astype(numpy.float16).view(numpy.uint16).copy() if half else gl.ops.to_bf16_bits(v)
    out[numpy.isnan(v)] = 0x7FFF
    return out


def test_the_rest_of_the_half_and_bfloat16_api():
    """cuda_fp16.h's and cuda_bf16.h's saturating, ReLU and NaN-propagating forms, unordered and pair comparisons
    (values, bools, masks), complex multiply-add, the bit casts, conversions from and to every integer type in each rounding
    mode, and the pair forms of the math functions: each against float64 references rounded to 16 bits, the
    math functions to within an ulp."""
    r = numpy.random.default_rng(5)
    vals = numpy.concatenate([r.uniform(-3, 3, 58), [numpy.nan, 0.5, -0.75, 1.0, 300.7, -129.6]])
    other = numpy.concatenate([r.uniform(-3, 3, 58), [1.0, numpy.nan, 0.5, 1.0, -2.0, 0.25]])   # (no ±0 ties)
    ins = {}
    for half in (True, False):
        ins[half] = (_to16(vals, half), _to16(other, half))
    bits, ints = xp.zeros(2 * 64 * 16 + 2, dtype=numpy.uint16), xp.zeros(2 * 64 * 16, dtype=numpy.int32)
    fn = xp.zeros(2 * 64 * 8, dtype=numpy.float32)
    args = [xp.asarray(ins[True][0].view(numpy.float16)), xp.asarray(ins[True][1].view(numpy.float16)),
            xp.asarray(ins[False][0]), xp.asarray(ins[False][1])]
    gl.load(code=SIXTEEN_BIT_API).get("api")((1,), (64,), (*args, bits, ints, fn))
    B, I, F = gl.to_host(bits), gl.to_host(ints), gl.to_host(fn)
    assert B[-2] == 0x7C00 and B[-1] == 0x7F7F
    t = numpy.arange(64)
    for k, half in enumerate((True, False)):
        x, y = _f16(ins[half][0], half), _f16(ins[half][1], half)
        got = B[k * 1024:(k + 1) * 1024].reshape(64, 16)
        nan = numpy.nan
        sat = lambda v: numpy.where(numpy.isnan(v), 0.0, numpy.clip(v, 0.0, 1.0))
        rnd = lambda v: _f16(_to16(v, half), half)            # one rounding to 16 bits
        fma = lambda a, b, c: rnd(a * b + c)                  # exact in float64 for 16-bit operands
        relu = lambda v: numpy.where(numpy.isnan(v), nan, numpy.maximum(v, 0.0))
        nanmax = lambda a, b: numpy.where(numpy.isnan(a) | numpy.isnan(b), nan, numpy.maximum(a, b))
        nanmin = lambda a, b: numpy.where(numpy.isnan(a) | numpy.isnan(b), nan, numpy.minimum(a, b))
        px, py, qx, qy = x, y, y, numpy.full(64, 0.5)
        want = {0: sat(rnd(x - y)), 1: sat(fma(x, y, 0.5)), 2: relu(fma(x, y, 0.5)), 3: nanmax(x, y),
                4: nanmin(x, y), 5: relu(fma(px, qx, px)), 6: relu(fma(py, qy, py)), 7: sat(rnd(px * qx)),
                8: sat(rnd(py * qy)), 9: nanmax(px, qx), 12: py, 13: sat(rnd(py - qy)), 14: sat(rnd(px + qx))}
        with numpy.errstate(invalid="ignore"):                  # two 16-bit fmas a part, each rounded
            want[10], want[11] = fma(-py, qy, fma(px, qx, px)), fma(py, qx, fma(px, qy, py))
        for col, v in want.items():
            assert (got[:, col] == _to16(v, half)).all(), (half, col, numpy.nonzero(got[:, col] != _to16(v, half)))
        o = I[k * 1024:(k + 1) * 1024].reshape(64, 16)
        with numpy.errstate(invalid="ignore"):
            un = numpy.isnan(x) | numpy.isnan(y)
            flags = ((x == y) | un) + 2 * ((x != y) | un) + 4 * ((x < y) | un) + 8 * ((x <= y) | un) \
                + 16 * ((x > y) | un) + 32 * ((x >= y) | un)
            assert (o[:, 0] == flags).all()
            lt = numpy.where(px < qx, 0xFFFF, 0) | numpy.where(py < qy, 0xFFFF0000, 0)
            assert (o[:, 1].astype(numpy.uint32) == lt.astype(numpy.uint32)).all()
            bools = ((px >= qx) & (py >= qy)) + 2 * ((~(px >= qx)) & (~(py >= qy))) + 4 * ((px == qx) & (py == qy)) \
                + 8 * ((px < qx) & (py < qy))
            assert (o[:, 2] == bools).all()
            assert (o[:, 3] == (px <= qx) + 2 * (py <= qy) + 4 * numpy.isnan(py)).all()
            fin = numpy.nan_to_num(x, nan=0.0)
            assert (o[:, 4] == numpy.clip(numpy.trunc(fin), -32768, 32767)).all()
            assert (o[:, 5] == numpy.floor(fin)).all() and (o[:, 6] == numpy.ceil(fin)).all()
            assert (o[:, 7] == numpy.clip(numpy.round(fin), 0, None)).all()
            assert (o[:, 8] == numpy.trunc(numpy.nan_to_num(y, nan=0.0))).all()
            assert (o[:, 9] == numpy.clip(numpy.trunc(fin), -128, 127)).all()
            assert (o[:, 10] == numpy.clip(numpy.trunc(fin), 0, 255)).all()
        assert (o[:, 11] == _round16_int(t * 1001 + 1, half, "rz")).all()
        assert (o[:, 12] == _round16_int(-t * 3001 - 1, half, "rn")).all()
        assert (o[:, 13] == _round16_int(t * 2049 + 1, half, "ru")).all()
        assert (o[:, 14] == _round16_int(-t * 511 - 3, half, "rd")).all()
        assert (o[:, 15] == _round16_int((t.astype(object) << 40) | 1, half, "rn")).all()
        f = F[k * 512:(k + 1) * 512].reshape(64, 8).astype(numpy.float64)
        ax = rnd(numpy.abs(x) + 0.25)                       # (computed in 16 bits in the kernel)
        with numpy.errstate(all="ignore"):
            refs = [10 ** x, numpy.log10(ax), 1 / numpy.sqrt(ax), numpy.log2(ax), numpy.sin(px), numpy.floor(py),
                    numpy.round(px), 2 ** py]
        for col, ref in enumerate(refs):              # within one 16-bit step of the correctly rounded value
            a, b = _to16(f[:, col], half).astype(numpy.int64), _to16(ref, half).astype(numpy.int64)
            ok = (a == b) | ((numpy.abs(a - b) <= 1) & ((a ^ b) & 0x8000 == 0)) | \
                (numpy.isnan(ref) & numpy.isnan(f[:, col]))
            assert ok.all(), (half, col, numpy.nonzero(~ok))


def _round16_int(v, half, mode):
    """Integers rounded once to 16-bit bits in the named mode (exact rationals: Python integers)."""
    out = []
    for n in numpy.asarray(v, dtype=object).tolist():
        n = int(n)
        bits = 11 if half else 8
        mag = abs(n)
        if mag == 0:
            out.append(0)
            continue
        e = mag.bit_length() - bits
        q = 1 << max(e, 0)
        lo, rem = divmod(mag, q)
        up = {"rz": False, "ru": rem > 0 and n > 0, "rd": rem > 0 and n < 0,
              "rn": 2 * rem > q or (2 * rem == q and lo % 2 == 1)}[mode]
        m = (lo + up) * q
        big = 65504 if half else float(numpy.finfo(numpy.float32).max)
        if half and m > big:
            inf_ok = mode == "rn" or (mode == "ru" and n > 0) or (mode == "rd" and n < 0)
            val = numpy.inf if inf_ok else big
        else:
            val = float(m)
        out.append(int(_to16(numpy.array([-val if n < 0 else val]), half)[0]))
    return numpy.array(out, dtype=numpy.int64)


BY_VALUE = r'''
struct Params { int n; float scale; double offset; float bias[3]; };
__global__ void affine(Params p, float2 shift, int4 pick, const float* x, float* y)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * x[i] + (float)p.offset + p.bias[i % 3] + shift.x * shift.y + pick.x + pick.w;
}
'''


def test_structs_and_vector_types_by_value():
    """A struct by value (a one-element NumPy array of a structured dtype laid out as the struct is, padding
    included) and CUDA's vector types by value (float2, int4: the same form) reach the kernel whole; a vector
    given as a number or with the wrong size is refused by name, and on the emulator a struct of the wrong size
    too (the emulator knows each parameter's size from the compiler)."""
    k = gl.load(code=BY_VALUE).get("affine")
    params = numpy.dtype([("n", numpy.int32), ("scale", numpy.float32), ("offset", numpy.float64),
                          ("bias", numpy.float32, 3)], align=True)
    p = numpy.zeros(1, dtype=params)
    p["n"], p["scale"], p["offset"], p["bias"] = 37, 2.0, 0.5, [1.0, 2.0, 3.0]
    shift = numpy.array([(1.5, 4.0)], dtype=[("x", numpy.float32), ("y", numpy.float32)])
    pick = numpy.array([(1, 2, 3, 4)], dtype=[(c, numpy.int32) for c in "xyzw"])
    x = numpy.arange(40, dtype=numpy.float32)
    y = xp.zeros(40, dtype=numpy.float32)
    k((2,), (32,), (p, shift, pick, xp.asarray(x), y))
    want = numpy.zeros(40, dtype=numpy.float32)
    want[:37] = 2.0 * x[:37] + 0.5 + numpy.array([1.0, 2.0, 3.0])[numpy.arange(37) % 3] + 6.0 + 5.0
    assert (gl.to_host(y) == want).all()
    k((2,), (32,), (p, shift[0], pick[0], xp.asarray(x), y))            # numpy.void scalars: the same
    assert (gl.to_host(y) == want).all()
    with pytest.raises(ValueError, match="'shift' is a float2 value: pass a one-element NumPy array"):
        k((1,), (32,), (p, 1.5, pick, xp.asarray(x), y))
    with pytest.raises(ValueError, match=r"'pick' is a int4 value \(16 bytes\)"):
        k((1,), (32,), (p, shift, shift, xp.asarray(x), y))
    if gl.backend == "emulator":
        unpadded = numpy.zeros(1, dtype=numpy.dtype([("n", numpy.int32), ("scale", numpy.float32),
                                                     ("offset", numpy.float64), ("bias", numpy.float32, 3)]))
        with pytest.raises(gl.EmulatorError, match=r"'p'\) takes 32 bytes by value, but 28 were given"):
            k((1,), (32,), (unpadded, shift, pick, xp.asarray(x), y))


ROUNDS = r'''
// each round thread 0 publishes a scale; every warp reads it right after the barrier and works through two loops;
// thread 0 publishes the next round's scale after its loops, with no barrier before: a race, which practically
// never fires on a GPU (the other warps read the scale long before warp 0 is through its loops)
__global__ void rounds(const float* x, float* out, int n, int rounds)
{
    __shared__ float scale;
    if (threadIdx.x == 0) scale = 1.0f;
    float acc = 0.0f;
    for (int r = 0; r < rounds; ++r) {
        __syncthreads();
        const float s = scale;
        for (int i = 0; i < n; ++i) acc += s * x[i];
        for (int i = 0; i < n; ++i) acc -= 0.5f * s * x[i];
        if (threadIdx.x == 0) scale = s * 2.0f;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
'''


def test_warps_interleaved_give_the_gpus_answer_to_a_race_that_rarely_fires_and_racecheck_still_reports_it(
        monkeypatch):
    """By default the emulator runs warp 0 to its next barrier before warp 1 starts, so warp 1 reads the next
    round's scale; with GEMMLAB_EMULATOR_INTERLEAVE=1 the warps take turns access by access, as they run side by
    side on a GPU, and every thread gets the GPU's 224. Racecheck reports the race either way (on the scalar
    __shared__ variable, as on an array)."""
    if gl.backend != "emulator":
        pytest.skip("the emulator's schedule")
    x, want = numpy.ones(64, dtype=numpy.float32), 32.0 * (1 + 2 + 4)
    monkeypatch.setenv("GEMMLAB_EMULATOR_INTERLEAVE", "1")
    out = xp.zeros(128, dtype=numpy.float32)
    gl.load(code=ROUNDS).get("rounds")(1, 128, (xp.asarray(x), out, numpy.int32(64), numpy.int32(3)))
    assert (gl.to_host(out) == want).all()
    monkeypatch.setenv("GEMMLAB_EMULATOR_INTERLEAVE", "0")
    kernel = gl.load(code=ROUNDS).get("rounds")
    report = gl.racecheck(kernel, 1, 128, (x, numpy.zeros(128, dtype=numpy.float32), numpy.int32(64), numpy.int32(3)))
    assert any(h.array == "scale" and h.kind == "write-after-read" for h in report.hazards), report


def test_the_interleave_setting_is_checked(monkeypatch):
    if gl.backend != "emulator":
        pytest.skip("an emulator setting")
    monkeypatch.setenv("GEMMLAB_EMULATOR_INTERLEAVE", "yes")
    with pytest.raises(ValueError, match=r"GEMMLAB_EMULATOR_INTERLEAVE='yes' must be 0 \(the default\) or 1"):
        gl.load(code="__global__ void k(int* y) { y[0] = 1; }\n").get("k")


def test_which_pointer_arguments_a_kernel_only_reads():
    """The emulator's lockstep for global loads after stores covers the arguments a kernel may write: a pointer to
    const, or one the body only indexes to read, moves (p += n, p++) or dereferences to read, is left out (its
    accesses stay on the memory check's fast path); anything else counts as written."""
    from gemmlab.runtime.source import only_read, parse_kernels
    src = r"""
__global__ void k(float* a, float* b, float* c, float* d, float* e, float* f, int n, float* g, float* h,
                  float* m1, float* m2, float* m3, float* m4) {
    float x = a[i] + a[idx[i]];
    b[i] = x;
    c[i] += 1;
    foo(d);
    float* p = e + 4;
    x += f[g[i]] == 2;
    h[i].x = 3;
    m1 += 4; x += m1[0] + *m1;
    ++m2; *m2 = 1.0f;
    m3++; x = x * *m3;
    *(m4 + 1) = 2;
}"""
    found = parse_kernels(src)
    sig = list(found.values())[0] if isinstance(found, dict) else found[0]
    read = dict(zip((p.name for p in sig.params), only_read(src, sig)))
    assert {name for name, r in read.items() if r} == {"a", "f", "g", "m1", "m3"}


# ---------------------------------------------------------------------------------------------
# CUDA's math functions that C lacks, SIMD within a word, cuComplex.h, math_constants.h, cuda::std
# ---------------------------------------------------------------------------------------------

CUDA_MATH = r'''
__global__ void cuda_math_f(const float* x, const float* p, float* out)
{
    const int i = threadIdx.x;
    float s, c;
    sincospif(x[i], &s, &c);
    out[16 * i + 0] = sinpif(x[i]);
    out[16 * i + 1] = cospif(x[i]);
    out[16 * i + 2] = s - sinpif(x[i]) + c - cospif(x[i]);
    out[16 * i + 3] = erfinvf(2.0f * p[i] - 1.0f);
    out[16 * i + 4] = erfcinvf(2.0f * p[i]);
    out[16 * i + 5] = normcdfinvf(p[i]);
    out[16 * i + 6] = normcdff(x[i]);
    out[16 * i + 7] = erfcxf(x[i]);
    out[16 * i + 8] = rhypotf(x[i], 3.0f);
    out[16 * i + 9] = norm3df(x[i], 2.0f, 6.0f);
    out[16 * i + 10] = rnorm4df(x[i], 1.0f, 2.0f, 4.0f);
    out[16 * i + 11] = cyl_bessel_i0f(x[i]);
    const float v[3] = {x[i], 4.0f, -1.0f};
    out[16 * i + 12] = rnormf(3, v);
}
__global__ void cuda_math_special(float* s)
{
    const float inf = __int_as_float(0x7f800000), nan = __int_as_float(0x7fc00000);
    s[0] = norm3df(nan, inf, 1.0f);
    s[1] = rnorm3df(inf, nan, 1.0f);
    s[2] = (float)norm4d(1.0, nan, 2.0, -(double)inf);
    const float v[3] = {nan, 1.0f, inf};
    s[3] = rnormf(3, v);
    s[4] = sinpif(-0.0f);
    s[5] = sinpif(2.0f);
    s[6] = cyl_bessel_i0f(1e7f);
    s[7] = erfcxf(inf);
}
__global__ void cuda_math_d(const double* x, const double* p, double* out)
{
    const int i = threadIdx.x;
    out[8 * i + 0] = sinpi(x[i]);
    out[8 * i + 1] = cospi(x[i]);
    out[8 * i + 2] = erfinv(2.0 * p[i] - 1.0);
    out[8 * i + 3] = erfcinv(2.0 * p[i]);
    out[8 * i + 4] = normcdfinv(p[i]);
    out[8 * i + 5] = normcdf(x[i]);
    out[8 * i + 6] = erfcx(x[i]);
    out[8 * i + 7] = rnorm3d(x[i], 2.0, 6.0);
}
'''


from decimal import Decimal, localcontext                               # noqa: E402
from fractions import Fraction                                          # noqa: E402

_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def _d(x) -> Decimal:
    f = Fraction(float(x))
    return Decimal(f.numerator) / Decimal(f.denominator)


def _sinpi_exact(r: Fraction) -> float:
    """sin(pi r) to 50 digits: r reduced exactly to [-1/2, 1/2], then the Taylor series."""
    with localcontext() as c:
        c.prec = 60
        r = r % 2
        if r > 1:
            r -= 2
        if r > Fraction(1, 2):
            r = 1 - r
        elif r < Fraction(-1, 2):
            r = -1 - r
        if r == 0:
            return 0.0
        t = _PI * Decimal(r.numerator) / Decimal(r.denominator)
        term, total, n = t, t, 1
        while abs(term) > Decimal(10) ** -58 * abs(total):
            term *= -t * t / ((2 * n) * (2 * n + 1))
            total += term
            n += 1
        return float(total)


def _sinpi(x: float) -> float:
    return _sinpi_exact(Fraction(float(x)))


def _cospi(x: float) -> float:
    return _sinpi_exact(Fraction(1, 2) - Fraction(float(x)))        # cos(pi x) = sin(pi (1/2 - x)), exactly


def _erfc(z: Decimal) -> Decimal:
    """erfc to about 50 digits: the series of erf below 3, the continued fraction beyond, the reflection below 0."""
    with localcontext() as c:
        c.prec = 80
        if z < 0:
            return 2 - _erfc(-z)
        if z < 3:
            term, total, n = z, z, 0
            while abs(term) > Decimal(10) ** -75:
                n += 1
                term *= -z * z / n
                total += term / (2 * n + 1)
            return 1 - 2 / _PI.sqrt() * total
        return (-z * z).exp() * _erfcx_far(z)


def _erfcx_far(z: Decimal) -> Decimal:
    """exp(z^2) erfc(z) for z >= 3, by erfc's continued fraction evaluated from its tail."""
    with localcontext() as c:
        c.prec = 80
        f = z
        for k in range(2000, 0, -1):
            f = z + (Decimal(k) / 2) / f
        return 1 / (_PI.sqrt() * f)


def _erfcx(x: float) -> float:
    with localcontext() as c:
        c.prec = 80
        z = _d(x)
        return float(_erfcx_far(z) if z > 3 else (z * z).exp() * _erfc(z))


def _normcdf(x: float) -> float:
    with localcontext() as c:
        c.prec = 80
        return float(_erfc(-_d(x) / Decimal(2).sqrt()) / 2)


def _i0(x):
    term, total, k = 1.0, 1.0, 0
    while term > 1e-18 * total:
        k += 1
        term *= (x / 2) ** 2 / (k * k)
        total += term
    return total


def _within_documented_ulps(got, ref, dtype):
    """Each column of got against {column: (reference, CUDA's documented maximum ulp error)}: equal where the
    reference in dtype is infinite or NaN, else within the bound."""
    for col, (want, bound) in ref.items():
        with numpy.errstate(over="ignore"):
            want = numpy.asarray(want, dtype=numpy.float64).astype(dtype)      # beyond dtype's range: infinite
        finite = numpy.isfinite(want)
        assert (got[~finite, col] == want[~finite]).all(), (col, got[:, col], want)
        worst = _ulps(got[finite, col], want[finite], dtype)
        assert worst.max() <= bound, (col, worst.max(), got[finite, col][worst.argmax()], want[finite][worst.argmax()])


def _ulps(got, want, dtype):
    """|got - want| in units of the last place of want in dtype (of the smallest normal at and below it)."""
    info = numpy.finfo(dtype)
    want = numpy.asarray(want, dtype=numpy.float64)
    place = numpy.maximum(numpy.abs(want), float(info.tiny))
    return numpy.abs(numpy.asarray(got, dtype=numpy.float64) - want) / (2.0 ** (numpy.floor(numpy.log2(place)) - info.nmant))


def test_cuda_math_functions_that_c_lacks_are_there_within_the_gpus_error_bounds():
    """sinpi/cospi (and sincospi), erfinv, erfcinv, normcdfinv, normcdf, erfcx, rhypot, norm3d, rnorm4d, rnorm and
    cyl_bessel_i0, in float and double: CUDA's math library has them and C's does not. Each within the ulps CUDA's
    documentation allows of a 50-digit reference, at awkward points: just below even integers and at halves for
    sinpi/cospi, erfcx far out (26 to 100), tails of the inverse error functions down to 1e-30; special values
    (infinite and NaN arguments of the norms, sinpi of signed zeros)."""
    import math
    from statistics import NormalDist
    nd = NormalDist()
    x = numpy.array([-7.5, -3.25, -2.0, -1.0, -0.5, -0.3, -1e-3, 0.0, 1e-3, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5,
                     3.0, 3.7, 4.5, 5.0, 6.25, 7.0, 8.5, 1.9999, 2 - 2.0 ** -52, 4 - 2.0 ** -50, 3.9999995, 26.5,
                     50.0, 60.0, 100.0, 11.5])
    p = numpy.array([1e-30, 1e-20, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55,
                     0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9999, 0.99999, 0.3333, 0.6667, 0.125,
                     0.875, 0.0625])
    m = gl.load(code=CUDA_MATH)
    xf, pf = x.astype(numpy.float32), p.astype(numpy.float32)
    out = xp.zeros(16 * 32, dtype=numpy.float32)
    m.get("cuda_math_f")(1, 32, (xp.asarray(xf), xp.asarray(pf), out))
    got = gl.to_host(out).reshape(32, 16).astype(numpy.float64)
    xs, ps = xf.astype(numpy.float64), pf.astype(numpy.float64)     # the float inputs, exactly
    inv = numpy.array([nd.inv_cdf(q) for q in ps])
    arg = (numpy.float32(2) * pf - numpy.float32(1)).astype(numpy.float64)   # erfinvf's argument, as the kernel rounds it
    erfinv = [math.copysign(math.inf, v) if abs(v) == 1 else nd.inv_cdf((1 + v) / 2) / math.sqrt(2) for v in arg]
    # column: (reference, CUDA's documented maximum ulp error)
    ref = {0: ([_sinpi(v) for v in xs], 1), 1: ([_cospi(v) for v in xs], 1), 3: (erfinv, 2), 4: (-inv / math.sqrt(2), 4),
           5: (inv, 5), 6: ([_normcdf(v) for v in xs], 5), 7: ([_erfcx(v) for v in xs], 4),
           8: (1 / numpy.hypot(xs, 3), 2), 9: (numpy.sqrt(xs ** 2 + 40), 3), 10: (1 / numpy.sqrt(xs ** 2 + 21), 3),
           11: ([_i0(v) for v in xs], 6), 12: (1 / numpy.sqrt(xs ** 2 + 17), 6)}
    _within_documented_ulps(got, ref, numpy.float32)
    assert (got[:, 2] == 0).all()                                       # sincospif is sinpif and cospif
    assert got[7, 0] == 0 and got[4, 1] == 0 and got[12, 0] == 0          # sinpi(0), cospi(-1/2), sinpi(1): exact zeros
    out = xp.zeros(8 * 32, dtype=numpy.float64)
    m.get("cuda_math_d")(1, 32, (xp.asarray(x), xp.asarray(p), out))
    got = gl.to_host(out).reshape(32, 8)
    inv = numpy.array([nd.inv_cdf(q) for q in p])
    erfinv = [math.copysign(math.inf, v) if abs(v) == 1 else nd.inv_cdf((1 + v) / 2) / math.sqrt(2) for v in 2 * p - 1]
    ref = {0: ([_sinpi(v) for v in x], 2), 1: ([_cospi(v) for v in x], 2), 2: (erfinv, 5),
           3: (-inv / math.sqrt(2), 6), 4: (inv, 8), 5: ([_normcdf(v) for v in x], 5), 6: ([_erfcx(v) for v in x], 4),
           7: (1 / numpy.sqrt(x ** 2 + 40), 2)}
    _within_documented_ulps(got, ref, numpy.float64)
    special = xp.zeros(8, dtype=numpy.float32)
    m.get("cuda_math_special")(1, 1, (special,))
    s = gl.to_host(special)
    assert s[0] == numpy.inf and s[1] == 0 and s[2] == numpy.inf and s[3] == 0             # an infinite argument wins
    assert s[4] == 0 and numpy.signbit(s[4]) and s[5] == 0 and not numpy.signbit(s[5])      # sinpi(-0) = -0, sinpi(2) = +0
    assert s[6] == numpy.inf and s[7] == 0                                                  # i0 far out; erfcx(+inf)


SIMD_WORDS = r'''
__global__ void simd_words(const unsigned* a, const unsigned* b, unsigned* out)
{
    const int i = threadIdx.x;
    const unsigned x = a[i], y = b[i];
    unsigned* o = out + 24 * i;
    o[0] = __vadd4(x, y);     o[1] = __vsub4(x, y);     o[2] = __vaddss4(x, y);  o[3] = __vsubus4(x, y);
    o[4] = __vadd2(x, y);     o[5] = __vsubss2(x, y);   o[6] = __vaddus2(x, y);  o[7] = __vavgu4(x, y);
    o[8] = __vabsdiffs4(x, y); o[9] = __vabsdiffu2(x, y); o[10] = __vmaxs4(x, y); o[11] = __vminu2(x, y);
    o[12] = __vcmpgts4(x, y); o[13] = __vcmpleu2(x, y); o[14] = __vsetlts4(x, y); o[15] = __vseteq2(x, y);
    o[16] = __vsads4(x, y);   o[17] = __vsadu2(x, y);   o[18] = __vabsss4(x) ^ __vavgs4(x, y); o[19] = __vneg2(x) ^ __vavgs2(x, y);
    o[20] = (unsigned)__dp4a((int)x, (int)y, 7);        o[21] = __dp4a(x, y, 7u);
    o[22] = (unsigned)__dp2a_lo((int)x, (int)y, -3);    o[23] = __dp2a_hi(x, y, 5u);
}
'''


def test_simd_within_a_word_and_byte_dot_products_lane_by_lane():
    """The video intrinsics on 4 x 8-bit and 2 x 16-bit lanes (wrapping, saturating, averages (signed: halves rounded
    away from zero), absolute
    differences, minima and maxima, compares as masks and as 0/1, sums of absolute differences) and DP4A/DP2A
    (bytes, and 16-bit halves with bytes, dotted and added to c), signed and unsigned."""
    r = numpy.random.default_rng(5)
    a = r.integers(0, 2 ** 32, 32, dtype=numpy.uint64).astype(numpy.uint32)
    b = r.integers(0, 2 ** 32, 32, dtype=numpy.uint64).astype(numpy.uint32)
    a[:4] = [0x80FF017F, 0x7F7F7F7F, 0x80008000, 0]
    b[:4] = [0x7F0102FF, 0x01010101, 0x7FFF0001, 0xFFFFFFFF]
    out = xp.zeros(24 * 32, dtype=numpy.uint32)
    gl.load(code=SIMD_WORDS).get("simd_words")(1, 32, (xp.asarray(a), xp.asarray(b), out))
    got = gl.to_host(out).reshape(32, 24)

    def lanes(v, n):
        bits = 32 // n
        u = [(int(v) >> (bits * k)) & ((1 << bits) - 1) for k in range(n)]
        return u, [x - (1 << bits) if x >> (bits - 1) else x for x in u], bits

    def word(vals, bits):
        return sum((int(v) & ((1 << bits) - 1)) << (bits * k) for k, v in enumerate(vals))

    def op(x, y, n, f):
        (ux, sx, bits), (uy, sy, _) = lanes(x, n), lanes(y, n)
        return word([f(sx[k], sy[k], ux[k], uy[k], bits) for k in range(n)], bits)

    ss = lambda v, bits: max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))    # noqa: E731
    us = lambda v, bits: max(0, min((1 << bits) - 1, v))                            # noqa: E731
    avg = lambda t: (t + 1) // 2 if t >= 0 else -((-t + 1) // 2)                   # noqa: E731  halves away from zero
    for i in range(32):
        x, y = int(a[i]), int(b[i])
        want = [op(x, y, 4, lambda s, t, u, v, w: u + v), op(x, y, 4, lambda s, t, u, v, w: u - v),
                op(x, y, 4, lambda s, t, u, v, w: ss(s + t, w)), op(x, y, 4, lambda s, t, u, v, w: us(u - v, w)),
                op(x, y, 2, lambda s, t, u, v, w: u + v), op(x, y, 2, lambda s, t, u, v, w: ss(s - t, w)),
                op(x, y, 2, lambda s, t, u, v, w: us(u + v, w)), op(x, y, 4, lambda s, t, u, v, w: (u + v + 1) >> 1),
                op(x, y, 4, lambda s, t, u, v, w: abs(s - t)), op(x, y, 2, lambda s, t, u, v, w: abs(u - v)),
                op(x, y, 4, lambda s, t, u, v, w: max(s, t)), op(x, y, 2, lambda s, t, u, v, w: min(u, v)),
                op(x, y, 4, lambda s, t, u, v, w: -1 if s > t else 0), op(x, y, 2, lambda s, t, u, v, w: -1 if u <= v else 0),
                op(x, y, 4, lambda s, t, u, v, w: int(s < t)), op(x, y, 2, lambda s, t, u, v, w: int(u == v)),
                sum(abs(s - t) for s, t in zip(lanes(x, 4)[1], lanes(y, 4)[1])),
                sum(abs(u - v) for u, v in zip(lanes(x, 2)[0], lanes(y, 2)[0])),
                op(x, 0, 4, lambda s, t, u, v, w: ss(abs(s), w)) ^ op(x, y, 4, lambda s, t, u, v, w: avg(s + t)),
                op(x, 0, 2, lambda s, t, u, v, w: -u) ^ op(x, y, 2, lambda s, t, u, v, w: avg(s + t)),
                (7 + sum(s * t for s, t in zip(lanes(x, 4)[1], lanes(y, 4)[1]))) % 2 ** 32,
                (7 + sum(u * v for u, v in zip(lanes(x, 4)[0], lanes(y, 4)[0]))) % 2 ** 32,
                (-3 + lanes(x, 2)[1][0] * lanes(y, 4)[1][0] + lanes(x, 2)[1][1] * lanes(y, 4)[1][1]) % 2 ** 32,
                (5 + lanes(x, 2)[0][0] * lanes(y, 4)[0][2] + lanes(x, 2)[0][1] * lanes(y, 4)[0][3]) % 2 ** 32]
        assert [int(v) for v in got[i]] == [w % 2 ** 32 for w in want], (i, hex(x), hex(y))


HEADERS_MORE = r'''
#include <cuComplex.h>
#include <math_constants.h>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/cstdint>
__global__ void complex_ops(const float2* a, const float2* b, float2* out, float* abs_out, double2* dout)
{
    static_assert(cuda::std::is_same<cuda::std::int32_t, int>::value, "cuda::std names the standard types");
    const int i = threadIdx.x;
    out[3 * i] = cuCmulf(a[i], b[i]);
    out[3 * i + 1] = cuCdivf(a[i], b[i]);
    out[3 * i + 2] = cuCaddf(cuConjf(a[i]), cuCsubf(b[i], make_cuComplex(CUDART_PI_F, CUDART_SQRT_TWO_F)));
    abs_out[i] = cuCabsf(a[i]) + (cuda::std::numeric_limits<float>::max() > 1e38f ? 0.0f : 1.0f);
    if (i == 0) {                    // (xr yr + dr) - xi yi, as CUDA's header adds: 1e8 - 1e8 - 1 = -1, not 0
        const cuFloatComplex f = cuCfmaf(make_cuFloatComplex(1e4f, 1.0f), make_cuFloatComplex(1e4f, 1.0f),
                                         make_cuFloatComplex(-1e8f, 0.5f));
        abs_out[32] = cuCrealf(f);
        abs_out[33] = cuCimagf(f);
    }
    const cuDoubleComplex z = cuComplexFloatToDouble(a[i]);
    dout[i] = cuCdiv(cuCmul(z, z), make_cuDoubleComplex(CUDART_PI, -CUDART_LN2));
}
'''


def test_cucomplex_math_constants_and_cuda_std_headers():
    """cuComplex.h (products, scaled quotients and absolute values, conjugates, conversions), math_constants.h's
    CUDART_* constants and libcu++'s cuda::std names, as a kernel written for nvcc includes them."""
    r = numpy.random.default_rng(9)
    a = (r.standard_normal(32) + 1j * r.standard_normal(32)).astype(numpy.complex64)
    b = (r.standard_normal(32) + 1j * r.standard_normal(32)).astype(numpy.complex64)
    a[0], b[0] = 3e30 + 4e30j, 1e20 + 2e20j                              # |b|^2 overflows: a scaled quotient does not
    view = lambda z: xp.asarray(z.view(numpy.float32).reshape(-1, 2))  # noqa: E731
    out, absv = xp.zeros((96, 2), dtype=numpy.float32), xp.zeros(34, dtype=numpy.float32)
    dout = xp.zeros((32, 2), dtype=numpy.float64)
    gl.load(code=HEADERS_MORE).get("complex_ops")(1, 32, (view(a), view(b), out, absv, dout))
    got = numpy.ascontiguousarray(gl.to_host(out)).view(numpy.complex64).reshape(32, 3).astype(numpy.complex128)
    a64, b64 = a.astype(numpy.complex128), b.astype(numpy.complex128)
    close = lambda g, w, t: (numpy.abs(g - w) <= t * numpy.abs(w)).all()  # noqa: E731
    assert close(got[1:, 0], (a64 * b64)[1:], 1e-6) and close(got[:, 1], a64 / b64, 1e-6)
    assert close(got[:, 2], numpy.conj(a64) + b64 - (numpy.float32(numpy.pi) + 1j * numpy.float32(numpy.sqrt(2))), 1e-6)
    assert close(gl.to_host(absv)[:32], numpy.abs(a64), 1e-6)
    assert list(gl.to_host(absv)[32:]) == [-1.0, 1e4 + 1e4 + 0.5]
    d = numpy.ascontiguousarray(gl.to_host(dout)).view(numpy.complex128).reshape(32)
    assert close(d, a64 * a64 / (numpy.pi - 1j * numpy.log(2)), 1e-14)


@pytest.mark.skipif(gl.backend != "emulator", reason="the emulator's refusals")
@pytest.mark.parametrize("include, what", [("<cub/device/device_reduce.cuh>", "CUB's device-wide algorithms"),
                                           ('"cub/iterator/counting_input_iterator.cuh"', "CUB's device-wide algorithms"),
                                           ("<cub/agent/agent_reduce.cuh>", "CUB's device-wide algorithms"),
                                           ("<thrust/complex.h>", "Thrust"), ("<curand_kernel.h>", "cuRAND's device API")])
def test_libraries_the_emulator_does_not_run_are_refused_by_name(include, what):
    code = f"#include {include}\n__global__ void k(float* y) {{ y[0] = 1.0f; }}\n"
    with pytest.raises(gl.CompileError, match=f"does not support {what}.*#include {re.escape(include)}"):
        gl.load(code=code).get("k")


FP8 = r'''
#include <cuda_fp8.h>
__global__ void fp8_round_trip(const float* x, __nv_fp8_e4m3* a, __nv_fp8_e5m2* b, unsigned char* nosat, float* back)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] = __nv_fp8_e4m3(x[i]);
    b[i] = __nv_fp8_e5m2(x[i]);
    nosat[2 * i] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E4M3);
    nosat[2 * i + 1] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E5M2);
    back[2 * i] = float(a[i]);
    back[2 * i + 1] = float(b[i]);
}
__global__ void fp8_every_code(float* e4m3, float* e5m2)
{
    const int i = threadIdx.x;
    __nv_fp8_e4m3 a; a.__x = (__nv_fp8_storage_t)i;
    __nv_fp8_e5m2 b; b.__x = (__nv_fp8_storage_t)i;
    e4m3[i] = float(a);
    e5m2[i] = float(b);
}
'''


def _fp8_values(ebits, mbits, bias, e4m3):
    out = []
    for code in range(256):
        s, e, m = (-1.0 if code & 0x80 else 1.0), (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
        if e4m3 and code & 0x7F == 0x7F:
            out.append(float("nan"))
        elif not e4m3 and e == (1 << ebits) - 1:
            out.append(s * float("inf") if m == 0 else float("nan"))
        elif e == 0:
            out.append(s * m * 2.0 ** (1 - bias - mbits))
        else:
            out.append(s * (1 + m / 2 ** mbits) * 2.0 ** (e - bias))
    return numpy.array(out)


def _fp8_round(x, table, largest, satfinite, e4m3):
    """The code nearest x (ties to the even code), as CUDA's conversions round: beyond the largest finite value
    that value (satfinite), else NaN (E4M3, 0x7F) or infinity (E5M2)."""
    if numpy.isnan(x):
        return None
    finite = [c for c in range(256) if numpy.isfinite(table[c]) and (table[c] != 0 or c in (0, 0x80))]
    s = 0x80 if numpy.signbit(x) else 0
    a = abs(float(x))
    step = (table[0x7E if e4m3 else 0x7B] - table[0x7D if e4m3 else 0x7A])
    top = 0x7E if e4m3 else 0x7B                                       # a tie with the value beyond goes to the even
    if a > largest + step / 2 or (a == largest + step / 2 and top & 1) or numpy.isinf(a):     # code of the two
        return s | (0x7E if e4m3 else 0x7B) if satfinite else s | (0x7F if e4m3 else 0x7C)
    pos = [c for c in finite if c < 0x80]
    best = min(pos, key=lambda c: (abs(table[c] - a), table[c] and c & 1))
    return s | best


def test_fp8_e4m3_and_e5m2_decode_every_code_and_round_to_nearest_even():
    """cuda_fp8.h: every one of the 256 codes of each type decodes to its value; floats (halfway cases, the
    largest finite values, beyond them, subnormals, signed zeros) round to the nearest code, ties to even, with
    the constructors' saturation and with __NV_NOSAT."""
    e4, e5 = _fp8_values(4, 3, 7, True), _fp8_values(5, 2, 15, False)
    m = gl.load(code=FP8)
    out4, out5 = xp.zeros(256, dtype=numpy.float32), xp.zeros(256, dtype=numpy.float32)
    m.get("fp8_every_code")(1, 256, (out4, out5))
    numpy.testing.assert_array_equal(gl.to_host(out4), e4.astype(numpy.float32))
    numpy.testing.assert_array_equal(gl.to_host(out5), e5.astype(numpy.float32))
    mids4 = [(e4[c] + e4[c + 1]) / 2 for c in range(0, 0x7D)]           # halfway between neighbours
    mids5 = [(e5[c] + e5[c + 1]) / 2 for c in range(0, 0x7A)]
    x = numpy.array(mids4[::3] + mids5[::4] + [448, 449, 463.9, 464, 480, 1e4, 57344, 61439, 61440, 1e6, 0.0, -0.0,
                    2 ** -9, 2 ** -10, 2 ** -11, 1.5 * 2 ** -10, 2 ** -16, 2 ** -17, 3 * 2 ** -18, 1e-30, -3.3, 0.1]
                   , dtype=numpy.float32)
    x = numpy.concatenate([x, -x])
    x = numpy.concatenate([x, numpy.zeros((-len(x)) % 32, dtype=numpy.float32)])
    n = len(x)
    a, b = xp.zeros(n, dtype=numpy.uint8), xp.zeros(n, dtype=numpy.uint8)
    nosat, back = xp.zeros(2 * n, dtype=numpy.uint8), xp.zeros(2 * n, dtype=numpy.float32)
    m.get("fp8_round_trip")(n // 32, 32, (xp.asarray(x), a, b, nosat, back))
    a, b, nosat = gl.to_host(a), gl.to_host(b), gl.to_host(nosat).reshape(n, 2)
    for i, v in enumerate(x):
        assert a[i] == _fp8_round(v, e4, 448.0, True, True), (v, hex(a[i]))
        assert b[i] == _fp8_round(v, e5, 57344.0, True, False), (v, hex(b[i]))
        assert nosat[i, 0] == _fp8_round(v, e4, 448.0, False, True), (v, hex(nosat[i, 0]))
        assert nosat[i, 1] == _fp8_round(v, e5, 57344.0, False, False), (v, hex(nosat[i, 1]))
    numpy.testing.assert_array_equal(gl.to_host(back).reshape(n, 2)[:, 0], e4[a].astype(numpy.float32))
    numpy.testing.assert_array_equal(gl.to_host(back).reshape(n, 2)[:, 1], e5[b].astype(numpy.float32))
    nan = numpy.array([numpy.nan, -numpy.nan, numpy.inf, -numpy.inf] * 8, dtype=numpy.float32)
    a, b = xp.zeros(32, dtype=numpy.uint8), xp.zeros(32, dtype=numpy.uint8)
    nosat, back = xp.zeros(64, dtype=numpy.uint8), xp.zeros(64, dtype=numpy.float32)
    m.get("fp8_round_trip")(1, 32, (xp.asarray(nan), a, b, nosat, back))
    # a float NaN of either sign becomes 0x7F; infinities saturate, or (NOSAT) are NaN in E4M3 and infinite in E5M2
    assert list(gl.to_host(a)[:4]) == [0x7F, 0x7F, 0x7E, 0xFE] and list(gl.to_host(b)[:4]) == [0x7F, 0x7F, 0x7B, 0xFB]
    assert list(gl.to_host(nosat)[:8]) == [0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7C, 0xFF, 0xFC]     # (E4M3, E5M2) per input


MORE_FORMS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cuda/atomic>
namespace cg = cooperative_groups;
__global__ void staged_sum(const float* x, float* out, int* count)
{
    __shared__ float tile[64];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, tile, x + 64 * blockIdx.x, sizeof(float) * 64);
    cg::wait(block);
    auto warp = cg::tiled_partition<32>(block);
    const float v = cg::reduce(warp, tile[threadIdx.x] + tile[threadIdx.x + 32], cg::plus<float>());
    __builtin_assume(blockDim.x == 32);
    if (warp.thread_rank() == 0) {
        cuda::atomic_ref<float, cuda::thread_scope_device> total(out[0]);
        total.fetch_add(v);
        cuda::atomic_ref<int, cuda::thread_scope_device> n(*count);
        n++;
        cuda::atomic_ref<float, cuda::thread_scope_device> held(out[1]);    // a NaN matches itself, bit for bit:
        float seen = held.load();                                           // a CAS loop on it ends
        while (!held.compare_exchange_weak(seen, seen + 1.0f)) {}
        float minus_zero = -0.0f;                                           // and -0 does not match +0
        out[2] = held.compare_exchange_strong(minus_zero, 5.0f) ? 1.0f : 2.0f;
    }
}
__global__ void spaces(float* g, unsigned* out)
{
    __shared__ float s[32];
    float local[2] = {1.0f, 2.0f};
    s[threadIdx.x] = local[threadIdx.x % 2];
    out[threadIdx.x] = __isShared(s) + 2 * __isLocal(local) + 4 * __isGlobal(g) + 8 * __isShared(g) + 16 * __isLocal(g)
                       + 32 * __isGlobal(s);
}
__global__ void traps(float* y)
{
    if (threadIdx.x == 7) __trap();
    y[threadIdx.x] = 1.0f;
}
'''


def test_group_copies_atomic_refs_address_spaces_and_trap():
    """cooperative_groups::memcpy_async and wait, cuda::atomic_ref at device scope, __builtin_assume, the address
    space tests (__isShared, __isLocal, __isGlobal) and, on the emulator, __trap(), which stops the launch as on a
    GPU and names the thread."""
    m = gl.load(code=MORE_FORMS)
    x = numpy.arange(64 * 4, dtype=numpy.float32)
    out, count = xp.asarray(numpy.array([0, numpy.nan, 0], dtype=numpy.float32)), xp.zeros(1, dtype=numpy.int32)
    m.get("staged_sum")(4, 32, (xp.asarray(x), out, count))
    got = gl.to_host(out)
    assert got[0] == x.sum() and gl.to_host(count)[0] == 4 and numpy.isnan(got[1]) and got[2] == 2
    flags = xp.zeros(32, dtype=numpy.uint32)
    m.get("spaces")(1, 32, (xp.zeros(32, dtype=numpy.float32), flags))
    assert (gl.to_host(flags) == 1 + 2 + 4).all()
    if gl.backend == "emulator":         # (on a GPU a trap leaves the context unusable for the rest of the process)
        with pytest.raises(gl.EmulatorError, match=r"thread \(7,0,0\): __trap\(\) was called"):
            m.get("traps")(1, 32, (xp.zeros(32, dtype=numpy.float32),))


# --- extern __shared__ declarations as CUDA's samples write them ------------------------------------------

# (each kernel writes its thread's value into the dynamic array, waits, and reads its neighbour's back)
EXTERN_SHARED_FORMS = {
    "two_dimensional": ("extern __shared__ float tile[][9];",                 # as the tensor-core samples pad a row
                        "tile[t / 8][t % 8] = v;", "tile[u / 8][u % 8]"),
    "three_dimensional": ("extern __shared__ float cube[][4][8];",
                          "cube[t / 32][(t / 8) % 4][t % 8] = v;", "cube[u / 32][(u / 8) % 4][u % 8]"),
    "type_first": ("extern double __shared__ sd[];", "sd[t] = v;", "(float)sd[u]"),
    "volatile_first": ("extern volatile __shared__ float sv[];", "sv[t] = v;", "sv[u]"),
    "volatile_after": ("extern __shared__ volatile int si[];", "si[t] = (int)v;", "(float)si[u]"),
    "aligned_bytes": ("extern __shared__ __align__(16) unsigned char raw[];\n    float* fs = reinterpret_cast<float*>(raw);",
                      "fs[t] = v;", "fs[u]"),
    "split_over_lines": ("extern __shared__\n        float split[];", "split[t] = v;", "split[u]"),
    "struct_elements": ("extern __shared__ Pair pairs[];", "pairs[t].b = v;", "pairs[u].b"),
}


@pytest.mark.parametrize("form", sorted(EXTERN_SHARED_FORMS))
def test_extern_shared_arrays_in_the_forms_nvcc_accepts(form):
    declaration, store, load = EXTERN_SHARED_FORMS[form]
    code = f'''
struct Pair {{ float a, b; }};
__global__ void neighbours(float* out, int n)
{{
    {declaration}
    const int t = threadIdx.x, u = (t + 1) % n;
    const float v = 3.0f * t + 1.0f;
    {store}
    __syncthreads();
    out[t] = {load};
}}
'''
    n = 64
    out = xp.zeros(n, dtype=numpy.float32)
    _run(code, "neighbours", 1, n, out, numpy.int32(n), shared_mem=n * 9 * 8)
    assert (gl.to_host(out) == 3.0 * ((numpy.arange(n) + 1) % n) + 1.0).all(), form


@needs_memcheck
def test_a_two_dimensional_extern_shared_array_is_bounded_by_the_launch():
    code = r'''
__global__ void past(float* out)
{
    extern __shared__ float rows[][9];
    rows[threadIdx.x][0] = 1.0f;           // row 4 starts past 4 rows' shared_mem
    __syncthreads();
    out[threadIdx.x] = rows[0][0];
}
'''
    with pytest.raises(gl.EmulatorError, match=r"thread \(4,0,0\) .*writes 4 bytes of dynamic shared memory"):
        _run(code, "past", 1, 8, numpy.zeros(8, dtype=numpy.float32), shared_mem=4 * 9 * 4)


# --- CUDA's own headers, included as a kernel's file names them --------------------------------------------

CUDA_HEADERS = ("vector_types.h", "vector_functions.h", "builtin_types.h", "driver_types.h", "device_types.h",
                "device_launch_parameters.h", "cuda_runtime_api.h", "sm_60_atomic_functions.h", "sm_32_intrinsics.h",
                "texture_types.h", "surface_types.h", "library_types.h")


@pytest.mark.parametrize("form", ["<{}>", '"{}"'])
def test_cuda_headers_a_kernel_includes_by_name(form):
    """A kernel's file includes CUDA's headers by their own names (a sample's "vector_types.h" for make_float2):
    nvcc finds them on CUDA's include path, NVRTC too; the emulator has each (its runtime declares what they do)."""
    includes = "".join(f"#include {form.format(h)}\n" for h in CUDA_HEADERS)
    code = includes + ("__global__ void pairs(float* out) { float2 p = make_float2(1.0f, (float)threadIdx.x); "
                       "out[threadIdx.x] = p.x + p.y; }\n")
    out = xp.zeros(32, dtype=numpy.float32)
    _run(code, "pairs", 1, 32, out)
    assert (gl.to_host(out) == 1.0 + numpy.arange(32)).all()


def test_libcudacxx_integer_helpers_and_function_objects():
    code = r'''
#include <cuda/cmath>
#include <cuda/functional>
__global__ void helpers(int* out, int n)
{
    const int i = threadIdx.x;
    auto half = cuda::proclaim_return_type<float>([](int a) { return a * 0.5f; });
    out[4 * i] = cuda::ceil_div(i, 4);
    out[4 * i + 1] = cuda::round_up(i, 8) + cuda::round_down(i, 8);
    out[4 * i + 2] = cuda::maximum<>{}(i, n - i) + cuda::minimum<int>{}(i, 3);
    out[4 * i + 3] = (int)(half(i) * 2.0f);
}
'''
    n = 32
    out = xp.zeros(4 * n, dtype=numpy.int32)
    _run(code, "helpers", 1, n, out, numpy.int32(n))
    got, i = gl.to_host(out).reshape(n, 4), numpy.arange(n)
    assert (got[:, 0] == -(-i // 4)).all()
    assert (got[:, 1] == -(-i // 8) * 8 + i // 8 * 8).all()
    assert (got[:, 2] == numpy.maximum(i, n - i) + numpy.minimum(i, 3)).all()
    assert (got[:, 3] == i).all()


def test_libcudacxx_ptx_wrappers_are_refused_by_name():
    if gl.backend != "emulator":
        pytest.skip("the emulator's refusal")
    with pytest.raises(gl.CompileError, match=r"does not support libcu\+\+'s PTX instructions.*cuda/ptx"):
        _run("#include <cuda/ptx>\n__global__ void k(float* x) { x[0] = 1.0f; }\n", "k", 1, 1,
             xp.zeros(1, dtype=numpy.float32))


def test_host_objects_with_constructors_in_a_kernels_file():
    """A file of kernels and host code: its host globals (a std::vector, <iostream>'s stream objects) are built
    when the emulator loads the library, and destroyed when Python exits; neither may upset the memory check
    or the Python process. (NVRTC compiles device code only: the emulator's case.)"""
    if gl.backend != "emulator":
        pytest.skip("host code in the source: NVRTC compiles device code only")
    import subprocess
    import sys
    script = r'''
import numpy, gemmlab as gl
for n, extra in enumerate(("", "volatile float* keep = nullptr;")):
    code = ("#include <iostream>\n#include <map>\n#include <string>\n#include <vector>\n"
            "static std::vector<int> sizes(3, 7);\n"
            "static std::map<std::string, int> names = {{\"a\", 1}, {\"b\", 2}};\n" + extra + "\n"
            "__global__ void fill(float* x) { x[threadIdx.x] = 2.0f + %d; }\n" % n)
    x = gl.xp.zeros(32, dtype=numpy.float32)
    gl.load(code=code).get("fill")(1, 32, (x,))
    assert (gl.to_host(x) == 2.0 + n).all()
print("done")
'''
    env = dict(os.environ, GEMMLAB_BACKEND="emulator",
               PYTHONPATH=os.pathsep.join(filter(None, [str(gl.paths.PACKAGE.parent), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "done", (done.returncode, done.stderr[-2000:])


# --- warps take turns at their warp operations ---------------------------------------------------------------

BROADCAST_THEN_REDUCE = r'''
// a block's softmax: the row's maximum goes to every thread through sums[0]; each warp then reduces its
// exponentials with shuffles, and lane 0 of each warp stores its sum to sums[warp], warp 0's over sums[0] with no
// barrier after the other warps' reads of the maximum: a race (racecheck reports it) that practically never fires
// on a GPU, where every warp reads the maximum before warp 0 is through its loop and its five shuffles
__device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__global__ void softmax_rows(const float* x, float* out, int n)
{
    extern __shared__ float sums[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const float* row = x + blockIdx.x * n;
    float m = -3.0e38f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, row[i]);
    m = warp_max(m);
    if (lane == 0) sums[warp] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < warps; ++w) m = fmaxf(m, sums[w]);
        sums[0] = m;
    }
    __syncthreads();
    const float top = sums[0];
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += expf(row[i] - top);
    s = warp_sum(s);
    if (lane == 0) sums[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < warps; ++w) s += sums[w];
        sums[0] = s;
    }
    __syncthreads();
    const float total = sums[0];
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = expf(row[i] - top) / total;
}
'''


def test_warps_take_turns_at_warp_operations_so_a_broadcast_is_read_before_it_is_overwritten():
    """The emulator's usual schedule (no setting): a warp that finishes a warp operation lets the next warp run, so
    the block's warps go through their shuffles side by side, as on a GPU; a warp no longer runs on through its
    reduction to overwrite the broadcast maximum before the other warps have read it. Racecheck still reports the
    race."""
    rows, n, threads = 6, 1000, 256
    x = numpy.random.default_rng(7).standard_normal((rows, n), dtype=numpy.float32) * 3
    out = xp.zeros((rows, n), dtype=numpy.float32)
    kernel = gl.load(code=BROADCAST_THEN_REDUCE).get("softmax_rows")
    kernel(rows, threads, (xp.asarray(x), out, numpy.int32(n)), shared_mem=threads // 32 * 4)
    e = numpy.exp(x.astype(numpy.float64) - x.max(axis=1, keepdims=True))
    numpy.testing.assert_allclose(gl.to_host(out), e / e.sum(axis=1, keepdims=True), rtol=2e-5, atol=1e-9)
    if gl.backend == "emulator":
        report = gl.racecheck(kernel, 1, threads, (x[:1].copy(), numpy.zeros((1, n), dtype=numpy.float32),
                                                   numpy.int32(n)), shared_mem=threads // 32 * 4)
        assert any(h.array == "dynamic shared memory" and h.offset == 0 and h.kind == "write-after-read"
                   for h in report.hazards), report


@needs_memcheck
def test_a_bad_access_inside_a_conversion_is_named_at_the_users_line():
    """An access past an argument made inside the emulator's own code (a bf16 read through its conversion to
    float) is reported at the user's line that made it, as a float read is."""
    code = r'''
#include <cuda_bf16.h>
__global__ void widen(float* out, const __nv_bfloat16* in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > n) return;                               // one thread too many
    out[i] = (float)in[i];
}
'''
    m = gl.load(code=code)
    with pytest.raises(gl.EmulatorError, match=r"thread \(64,0,0\) at <code>:7: reads 2 bytes at element 64 of "
                                               r"argument 1 \('in'\)"):
        m.get("widen")(1, 96, (numpy.zeros(65, dtype=numpy.float32), numpy.zeros(64, dtype=numpy.uint16), 64))


def test_a_kernel_under_an_if_the_build_leaves_out_is_named_as_such():
    if gl.backend != "emulator":
        pytest.skip("the emulator's message")
    code = "#ifdef NOT_DEFINED\n__global__ void hidden(float* out) { out[0] = 1.0f; }\n#endif\n" \
           "__global__ void shown(float* out) { out[0] = 2.0f; }\n"
    m = gl.load(code=code)
    with pytest.raises(gl.CompileError, match=r"hidden is not in this build: its definition is under an #if"):
        m.get("hidden")
    out = xp.zeros(1, dtype=numpy.float32)
    m.get("shown")(1, 1, (out,))
    assert gl.to_host(out)[0] == 2.0


def test_a_texture_fetch_or_inline_ptx_stops_its_kernel_only_and_the_fences_and_trap_in_ptx_run():
    """A file whose kernels fetch from a texture or run inline PTX the emulator does not run (the FFT convolution
    sample's LOAD_FLOAT macro, a prmt byte shuffle) builds: each of those kernels stops by name, at the user's line,
    when a thread reaches it; its sibling kernels run, on both backends. The PTX whose meaning the emulator has, a
    compiler barrier, the memory fences, a trap and a non-coherent global load (ld.global.nc), runs."""
    code = r'''
#define LOAD_FLOAT(i) tex1Dfetch<float>(texFloat, i)
__global__ void pad(float* out, cudaTextureObject_t texFloat) { out[threadIdx.x] = LOAD_FLOAT(threadIdx.x); }
__device__ float nc(const float* p) { float v; asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v; }
__global__ void copy_nc(float* out, const float* in) { out[threadIdx.x] = nc(in + threadIdx.x); }
__global__ void swap(unsigned* x) { asm("prmt.b32 %0, %0, 0, 0x0123;" : "+r"(x[threadIdx.x])); }
__global__ void scale(float* out, const float* in, float s)
{
    const int i = threadIdx.x;
    out[i] = in[i] * s;
    asm volatile("" ::: "memory");
    asm volatile("membar.gl;");
    asm volatile("membar.cta;\n\t");
    asm("fence.acq_rel.gpu;");
    if (s < 0) asm("trap;");
    out[i] += 1.0f;
}
'''
    m = gl.load(code=code)
    x = xp.asarray(numpy.arange(32, dtype=numpy.float32))
    out = xp.zeros(32, dtype=numpy.float32)
    m.get("scale")(1, 32, (out, x, numpy.float32(2)))
    assert (gl.to_host(out) == numpy.arange(32) * 2 + 1).all()
    if gl.backend == "emulator":          # (a GPU runs them all: the PTX is real, the texture object is not made here)
        with pytest.raises(gl.EmulatorError, match=r"kernel pad stopped in block \(0,0,0\), thread \(0,0,0\) at "
                                                   r"<code>:3: the CPU emulator does not support texture and "
                                                   r"surface fetches: tex1Dfetch"):
            m.get("pad")(1, 32, (out, numpy.uint64(0)))
        with pytest.raises(gl.EmulatorError, match=r"kernel swap stopped .* at <code>:6: the CPU emulator does "
                                                   r"not support inline PTX assembly \(asm\): "
                                                   r"asm\(\"prmt.b32 ...\"\)"):
            m.get("swap")(1, 32, (xp.zeros(32, dtype=numpy.uint32),))
        with pytest.raises(gl.EmulatorError, match=r"__trap\(\) was called"):
            m.get("scale")(1, 32, (out, x, numpy.float32(-1)))
    m.get("copy_nc")(1, 32, (out, x))
    assert (gl.to_host(out) == numpy.arange(32)).all()


def test_inline_ptx_written_in_a_macro_stops_its_kernel_by_name_and_a_fence_macro_runs():
    """cp.async and ldmatrix code keeps its asm in macros (#define LDMATRIX_X4(...) asm volatile(...), continued over
    lines): a macro of PTX the emulator does not run stops its kernel by name where it is used (it was the host
    assembler's error, and the file's other kernels did not build); macros of PTX it knows (a fence, a
    non-coherent load) run."""
    code = r"""
#define LOAD_NC(v, p)                                                    \
  asm volatile("ld.global.nc.f32 %0, [%1];\n"                            \
               : "=f"(v)                                                 \
               : "l"(p))
#define SWAP_BYTES(v)                                                    \
  asm volatile("prmt.b32 %0, %0, 0, 0x0123;\n"                           \
               : "+r"(v))
#define FENCE() asm volatile("membar.gl;\n" ::)
__global__ void via_macro(float* out, const float* in) { float v; LOAD_NC(v, in + threadIdx.x); out[threadIdx.x] = v; }
__global__ void fenced(float* out, const float* in) { out[threadIdx.x] = 2.0f * in[threadIdx.x]; FENCE(); }
__global__ void swapped(unsigned* x) { SWAP_BYTES(x[threadIdx.x]); }
"""
    m = gl.load(code=code)
    x = xp.asarray(numpy.arange(32, dtype=numpy.float32))
    out = xp.zeros(32, dtype=numpy.float32)
    m.get("fenced")(1, 32, (out, x))
    assert (gl.to_host(out) == 2 * numpy.arange(32)).all()
    m.get("via_macro")(1, 32, (out, x))
    assert (gl.to_host(out) == numpy.arange(32)).all()
    words = xp.asarray(numpy.full(32, 0x11223344, dtype=numpy.uint32))
    if gl.backend == "emulator":
        with pytest.raises(gl.EmulatorError, match=r"kernel swapped stopped .* at <code>:12: the CPU emulator does "
                                                   r"not support inline PTX assembly \(asm\): "
                                                   r"asm\(\"prmt.b32 ...\"\)"):
            m.get("swapped")(1, 32, (words,))
    else:
        m.get("swapped")(1, 32, (words,))
        assert (gl.to_host(words) == 0x44332211).all()


# A file included from a folder beside the kernel's (#include "../common/scan.cu"), whose dynamic shared memory
# the emulator rewrites as it rewrites the kernel's own file's (it was left as written: "conflicting specifiers")
def test_a_file_included_from_a_folder_beside_the_kernels_is_compiled_as_the_kernels_own(tmp_path):
    (tmp_path / "common").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "common" / "reverse.cu").write_text(
        '#include "width.h"\n'
        "__global__ void reverse_dynamic(float* y)\n"
        "{\n"
        "    extern __shared__ float buffer[];\n"
        "    buffer[threadIdx.x] = y[threadIdx.x];\n"
        "    __syncthreads();\n"
        "    y[threadIdx.x] = buffer[WIDTH - 1 - threadIdx.x];\n"
        "}\n")
    (tmp_path / "common" / "width.h").write_text("#define WIDTH 48\n")
    (tmp_path / "app" / "main.cu").write_text('#include "../common/reverse.cu"\n')
    y = gl.xp.asarray(numpy.arange(48, dtype=numpy.float32))
    gl.load(str(tmp_path / "app" / "main.cu")).get("reverse_dynamic")(1, 48, (y,), shared_mem=48 * 4)
    assert (gl.to_host(y) == numpy.arange(47, -1, -1)).all()


# The shuffles and votes of CUDA 8 and before (no mask), which nvcc takes only below sm_70, as pre-Volta
# tutorials write them; and the vector forms of __dp4a and __dp2a (char4, short2), which NVRTC takes everywhere
LEGACY_WARP = r'''
__global__ void legacy_warp(const int* x, int* out)
{
    int v = x[threadIdx.x];
    int s = v;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor(s, o);
    out[threadIdx.x * 7 + 0] = s;
    out[threadIdx.x * 7 + 1] = __shfl_down(v, 1);
    out[threadIdx.x * 7 + 2] = __shfl_up(v, 1, 16);
    out[threadIdx.x * 7 + 3] = __shfl(v, 3);
    out[threadIdx.x * 7 + 4] = (int)__ballot(v % 2);
    out[threadIdx.x * 7 + 5] = __any(v == 7);
    out[threadIdx.x * 7 + 6] = __all(v >= 1);
}
'''
VECTOR_DOTS = r'''
__global__ void vector_dots(const char4* a, const char4* b, const short2* h, const uchar4* ua, int* out)
{
    const int i = threadIdx.x;
    out[4 * i + 0] = __dp4a(a[i], b[i], i);
    out[4 * i + 1] = __dp2a_lo(h[i], b[i], -i);
    out[4 * i + 2] = __dp2a_hi(h[i], a[i], 7);
    out[4 * i + 3] = (int)__dp4a(ua[i], ua[(i + 1) % 32], 3u);
}
'''


@pytest.mark.skipif(gl.backend != "emulator", reason="nvcc and NVRTC take the maskless shuffles only below sm_70")
def test_the_maskless_shuffles_and_votes_of_cuda_8_run_over_the_active_lanes():
    k = gl.load(code=LEGACY_WARP).get("legacy_warp")
    x, out = numpy.arange(1, 33, dtype=numpy.int32), numpy.zeros(32 * 7, dtype=numpy.int32)
    k(1, 32, (x, out))
    o, lane = out.reshape(32, 7), numpy.arange(32)
    assert (o[:, 0] == x.sum()).all()
    assert (o[:, 1] == numpy.where(lane < 31, x[numpy.minimum(lane + 1, 31)], x)).all()
    assert (o[:, 2] == numpy.where(lane % 16 >= 1, x - 1, x)).all()
    assert (o[:, 3] == x[3]).all()
    assert (o[:, 4].view(numpy.uint32) == 0x55555555).all()      # the odd values: lanes 0, 2, 4, ...
    assert (o[:, 5] == 1).all() and (o[:, 6] == 1).all()


def test_dp4a_and_dp2a_take_char4_and_short2():
    rng = numpy.random.default_rng(5)
    a = rng.integers(-128, 128, (32, 4)).astype(numpy.int8)
    b = rng.integers(-128, 128, (32, 4)).astype(numpy.int8)
    h = rng.integers(-32768, 32768, (32, 2)).astype(numpy.int16)
    ua = rng.integers(0, 256, (32, 4)).astype(numpy.uint8)
    out = gl.xp.zeros(32 * 4, dtype=numpy.int32)
    k = gl.load(code=VECTOR_DOTS).get("vector_dots")
    k(1, 32, (gl.xp.asarray(a), gl.xp.asarray(b), gl.xp.asarray(h), gl.xp.asarray(ua), out))
    o, i = gl.to_host(out).reshape(32, 4).astype(numpy.int64), numpy.arange(32)
    A, B, H, U = a.astype(numpy.int64), b.astype(numpy.int64), h.astype(numpy.int64), ua.astype(numpy.int64)
    assert (o[:, 0] == (A * B).sum(1) + i).all()
    assert (o[:, 1] == H[:, 0] * B[:, 0] + H[:, 1] * B[:, 1] - i).all()
    assert (o[:, 2] == H[:, 0] * A[:, 2] + H[:, 1] * A[:, 3] + 7).all()
    assert (o[:, 3] == (U * U[(i + 1) % 32]).sum(1) + 3).all()


# ---------------------------------------------------------------------------------------------
# CUB's block and warp collectives (the emulator's own; on a GPU the CUDA toolkit's, through CuPy's headers)
# ---------------------------------------------------------------------------------------------

CUB = r'''
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>    // cuda::maximum (CUDA 13's CUB has no cub::Max)

template <int BLOCK>
__global__ void block_reduce(const float* x, float* out, int n)
{
    using Reduce = cub::BlockReduce<float, BLOCK>;
    __shared__ typename Reduce::TempStorage temp;
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    const float v = i < n ? x[i] : 0.0f;
    const float sum = Reduce(temp).Sum(v);
    __syncthreads();
    const float most = Reduce(temp).Reduce(i < n ? v : -1e30f, cuda::maximum<>());
    __syncthreads();
    const float partial = Reduce(temp).Sum(v, n - blockIdx.x * BLOCK);     // the threads that have an element
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = sum;
        out[3 * blockIdx.x + 1] = most;
        out[3 * blockIdx.x + 2] = partial;
    }
}
template __global__ void block_reduce<80>(const float*, float*, int);
template __global__ void block_reduce<256>(const float*, float*, int);

__global__ void arg_max(const float* x, int* out, int n)
{
    using Pair = cub::KeyValuePair<int, float>;
    using Reduce = cub::BlockReduce<Pair, 128>;
    __shared__ typename Reduce::TempStorage temp;
    const int i = threadIdx.x;
    const Pair best = Reduce(temp).Reduce(Pair(i, i < n ? x[i] : -1e30f), cub::ArgMax());
    if (i == 0) out[0] = best.key;
}

__global__ void scan_items(const int* x, int* excl, int* incl, int* total, int n)
{
    using Scan = cub::BlockScan<int, 96>;
    __shared__ typename Scan::TempStorage temp;
    int items[3], e[3], c[3], aggregate;
    cub::LoadDirectBlocked(threadIdx.x, x, items, n, 0);
    Scan(temp).ExclusiveSum(items, e, aggregate);
    __syncthreads();
    Scan(temp).InclusiveScan(items, c, cuda::maximum<>());
    cub::StoreDirectBlocked(threadIdx.x, excl, e, n);
    cub::StoreDirectBlocked(threadIdx.x, incl, c, n);
    if (threadIdx.x == 0) total[0] = aggregate;
}

struct RunningTotal {                     // CUB's prefix callback: called by the first warp, lane 0's answer used
    int total;
    __device__ int operator()(int block_aggregate) { const int before = total; total += block_aggregate; return before; }
};

__global__ void scan_tiles(const int* x, int* y, int n)
{
    using Scan = cub::BlockScan<int, 64>;
    __shared__ typename Scan::TempStorage temp;
    RunningTotal prefix{100};
    for (int base = 0; base < n; base += 64) {
        const int i = base + threadIdx.x;
        int v = i < n ? x[i] : 0, r;
        Scan(temp).InclusiveSum(v, r, prefix);
        __syncthreads();
        if (i < n) y[i] = r;
    }
}

__global__ void scan_initial(const int* x, int* y)
{
    using Scan = cub::BlockScan<int, 64>;
    __shared__ typename Scan::TempStorage temp;
    int r;
    Scan(temp).ExclusiveScan(x[threadIdx.x], r, 7, cuda::maximum<>());
    y[threadIdx.x] = r;
}

__global__ void warps(const float* x, float* sums, int* scans, int* segments)
{
    using Half = cub::WarpReduce<float, 16>;
    using Scan = cub::WarpScan<int>;
    __shared__ typename Half::TempStorage halves[8];
    __shared__ typename Scan::TempStorage scan[4];
    const int t = threadIdx.x;
    const float s = Half(halves[t / 16]).Sum(x[t]);
    const float some = Half(halves[t / 16]).Sum(x[t], 5);           // the first 5 lanes of each half
    int e, i, agg;
    Scan(scan[t / 32]).ExclusiveSum(t % 7, e, agg);
    Scan(scan[t / 32]).InclusiveScan(t % 7, i, cuda::maximum<>());
    const int from3 = Scan(scan[t / 32]).Broadcast(t, 3);
    using Whole = cub::WarpReduce<int>;
    __shared__ typename Whole::TempStorage whole[4];
    const int lane = t % 32, head = lane == 5 || lane == 6 || lane == 20, tail = lane == 9 || lane == 30;
    const int by_head = Whole(whole[t / 32]).HeadSegmentedSum(lane, head);
    const int by_tail = Whole(whole[t / 32]).TailSegmentedSum(lane, tail);
    segments[2 * t] = by_head;          // valid in each segment's first lane
    segments[2 * t + 1] = by_tail;
    if (t % 16 == 0) { sums[2 * (t / 16)] = s; sums[2 * (t / 16) + 1] = some; }
    scans[4 * t] = e; scans[4 * t + 1] = i; scans[4 * t + 2] = agg; scans[4 * t + 3] = from3;
}

template <bool DESCENDING>
__global__ void radix_sort(float* keys, int* values)
{
    using Sort = cub::BlockRadixSort<float, 64, 3, int>;
    __shared__ typename Sort::TempStorage temp;
    float k[3];
    int v[3];
    for (int j = 0; j < 3; ++j) { k[j] = keys[threadIdx.x * 3 + j]; v[j] = threadIdx.x * 3 + j; }
    if (DESCENDING) Sort(temp).SortDescending(k, v); else Sort(temp).Sort(k, v);
    for (int j = 0; j < 3; ++j) { keys[threadIdx.x * 3 + j] = k[j]; values[threadIdx.x * 3 + j] = v[j]; }
}
template __global__ void radix_sort<false>(float*, int*);
template __global__ void radix_sort<true>(float*, int*);

__global__ void low_byte_sort(unsigned* keys)
{
    using Sort = cub::BlockRadixSort<unsigned, 32, 4>;
    __shared__ typename Sort::TempStorage temp;
    unsigned k[4];
    cub::LoadDirectBlocked(threadIdx.x, keys, k);
    Sort(temp).SortBlockedToStriped(k, 0, 8);                      // by bits 0..7 only, stable, striped out
    cub::StoreDirectStriped<32>(threadIdx.x, keys, k);
}

__global__ void load_store(const int* x, int* y, int n)
{
    using Load = cub::BlockLoad<int, 64, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<int, 64, 4, cub::BLOCK_STORE_TRANSPOSE>;
    using Exchange = cub::BlockExchange<int, 64, 4>;
    __shared__ union { typename Load::TempStorage load; typename Store::TempStorage store;
                       typename Exchange::TempStorage exchange; } temp;
    const int base = blockIdx.x * 256, valid = n - base;
    int items[4];
    Load(temp.load).Load(x + base, items, valid, -1);
    __syncthreads();
    for (int j = 0; j < 4; ++j) items[j] = items[j] * 2 + (threadIdx.x * 4 + j < valid ? 0 : 1000);
    Exchange(temp.exchange).BlockedToStriped(items);
    __syncthreads();
    Exchange(temp.exchange).StripedToBlocked(items);
    __syncthreads();
    Store(temp.store).Store(y + base, items, valid);
}
'''


@pytest.fixture(scope="module")
def cub_module():
    return gl.load(code=CUB)


@pytest.mark.parametrize("block", [80, 256])
def test_cub_block_reduce(cub_module, block):
    n = 700
    x = rng_forms.standard_normal(n).astype(numpy.float32)
    blocks = -(-n // block)
    out = xp.zeros(3 * blocks, dtype=numpy.float32)
    cub_module.get(f"block_reduce<{block}>")(blocks, block, (xp.asarray(x), out, numpy.int32(n)))
    got = gl.to_host(out).reshape(blocks, 3)
    tiles = numpy.concatenate([x, numpy.zeros(blocks * block - n, numpy.float32)]).reshape(blocks, block)
    sums = tiles.astype(numpy.float64).sum(1)
    assert numpy.allclose(got[:, 0], sums, rtol=1e-5, atol=1e-5) and numpy.allclose(got[:, 2], sums, rtol=1e-5, atol=1e-5)
    most = numpy.where(numpy.arange(blocks * block).reshape(blocks, block) < n, tiles, -1e30).max(1)
    assert (got[:, 1] == most.astype(numpy.float32)).all()


def test_cub_arg_max_takes_the_first_of_equal_values(cub_module):
    x = rng_forms.standard_normal(100).astype(numpy.float32)
    x[[71, 33, 90]] = 9.0
    out = xp.zeros(1, dtype=numpy.int32)
    cub_module.get("arg_max")(1, 128, (xp.asarray(x), out, numpy.int32(100)))
    assert int(gl.to_host(out)[0]) == 33


def test_cub_block_scans(cub_module):
    n = 250                                              # 96 threads x 3 items: the last 38 are outside
    x = rng_forms.integers(-9, 10, n).astype(numpy.int32)
    excl, incl = xp.full(288, -7, dtype=numpy.int32), xp.full(288, -7, dtype=numpy.int32)
    total = xp.zeros(1, dtype=numpy.int32)
    cub_module.get("scan_items")(1, 96, (xp.asarray(x), excl, incl, total, numpy.int32(n)))
    padded = numpy.concatenate([x, numpy.zeros(288 - n, numpy.int32)])
    assert (gl.to_host(excl)[:n] == numpy.concatenate([[0], numpy.cumsum(x)[:-1]])).all()
    assert (gl.to_host(incl)[:n] == numpy.maximum.accumulate(padded)[:n]).all()
    assert (gl.to_host(excl)[n:] == -7).all() and int(gl.to_host(total)[0]) == int(x.sum())

    y = xp.zeros(n, dtype=numpy.int32)
    cub_module.get("scan_tiles")(1, 64, (xp.asarray(x), y, numpy.int32(n)))
    assert (gl.to_host(y) == 100 + numpy.cumsum(x)).all()

    v = rng_forms.integers(0, 20, 64).astype(numpy.int32)
    y = xp.zeros(64, dtype=numpy.int32)
    cub_module.get("scan_initial")(1, 64, (xp.asarray(v), y))
    assert (gl.to_host(y) == numpy.maximum.accumulate(numpy.concatenate([[7], v[:-1]]))).all()


def test_cub_warp_collectives(cub_module):
    x = rng_forms.standard_normal(128).astype(numpy.float32)
    sums, scans = xp.zeros(16, dtype=numpy.float32), xp.zeros(4 * 128, dtype=numpy.int32)
    segments = xp.zeros(2 * 128, dtype=numpy.int32)
    cub_module.get("warps")(1, 128, (xp.asarray(x), sums, scans, segments))
    halves = x.astype(numpy.float64).reshape(8, 16)
    got = gl.to_host(sums).reshape(8, 2)
    assert numpy.allclose(got[:, 0], halves.sum(1), rtol=1e-5, atol=1e-5)
    assert numpy.allclose(got[:, 1], halves[:, :5].sum(1), rtol=1e-5, atol=1e-5)
    s = gl.to_host(scans).reshape(4, 32, 4)
    v = (numpy.arange(128) % 7).reshape(4, 32)
    assert (s[:, :, 0] == numpy.cumsum(v, 1) - v).all() and (s[:, :, 1] == numpy.maximum.accumulate(v, 1)).all()
    assert (s[:, :, 2] == v.sum(1, keepdims=True)).all() and (s[:, :, 3] == 32 * numpy.arange(4)[:, None] + 3).all()
    seg = gl.to_host(segments).reshape(4, 32, 2)
    for starts, column in (((0, 5, 6, 20), 0), ((0, 10, 31), 1)):         # heads; the lanes after the tails
        bounds = list(starts) + [32]
        for a, b in zip(bounds, bounds[1:]):
            assert (seg[:, a, column] == sum(range(a, b))).all(), (column, a)


@pytest.mark.parametrize("descending", [False, True])
def test_cub_radix_sort_is_stable_in_cubs_key_order(cub_module, descending):
    keys = rng_forms.standard_normal(192).astype(numpy.float32)
    keys[[5, 60]] = numpy.float32(-0.0)
    keys[[9, 150]] = numpy.float32(0.0)
    keys[[20, 21, 100, 101]] = numpy.float32(1.5)
    k, v = xp.array(keys), xp.zeros(192, dtype=numpy.int32)        # (a copy: sorted in place)
    cub_module.get(f"radix_sort<{'true' if descending else 'false'}>")(1, 64, (k, v))
    # CUB's order is the order of the bits, -0.0 taken as +0.0 (CUDA 13's CUB, as the H200 sorts them); equal keys
    # keep their order
    u = numpy.where(keys == 0, numpy.float32(0.0), keys).view(numpy.uint32).astype(numpy.int64)
    order = numpy.where(u & 0x80000000, 0xFFFFFFFF - u, u | 0x80000000)      # the bits' order, as CUB ranks them
    want = sorted(range(192), key=lambda i: (-order[i] if descending else order[i], i))
    assert list(gl.to_host(v)) == want and (gl.to_host(k) == keys[want]).all()


def test_cub_radix_sort_of_a_bit_range_blocked_to_striped(cub_module):
    keys = rng_forms.integers(0, 2**32, 128, dtype=numpy.uint64).astype(numpy.uint32)
    k = xp.array(keys)
    cub_module.get("low_byte_sort")(1, 32, (k,))
    want = keys[numpy.argsort(keys & 0xFF, kind="stable")]
    assert (gl.to_host(k) == want).all()


def test_cub_load_store_exchange_with_guards(cub_module):
    n = 600                                              # three tiles of 256, the last one partial
    x = rng_forms.integers(0, 100, n).astype(numpy.int32)
    y = xp.full(768, 5, dtype=numpy.int32)
    cub_module.get("load_store")(3, 64, (xp.asarray(x), y, numpy.int32(n)))
    got = gl.to_host(y)
    assert (got[:n] == 2 * x).all() and (got[n:] == 5).all()


@pytest.mark.skipif(gl.backend != "emulator", reason="the emulator's CUB: its umbrella header, its racecheck")
def test_cub_umbrella_header_private_storage_and_racecheck():
    code = r'''
#include <cub/cub.cuh>
__global__ void private_storage(const float* x, float* out)
{
    const float s = cub::BlockReduce<float, 128>().Sum(x[blockIdx.x * 128 + threadIdx.x]);   // CUB's own storage
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
__global__ void reused(const float* x, float* out)
{
    using Reduce = cub::BlockReduce<float, 128>;
    __shared__ typename Reduce::TempStorage temp;
    const float s = Reduce(temp).Sum(x[threadIdx.x]);
    const float m = Reduce(temp).Reduce(x[threadIdx.x], cub::Max());        // no __syncthreads() between
    if (threadIdx.x == 0) { out[0] = s; out[1] = m; }
}
'''
    m = gl.load(code=code)
    x = numpy.arange(256, dtype=numpy.float32)
    out = numpy.zeros(2, dtype=numpy.float32)
    m.get("private_storage")(2, 128, (x, out))
    assert list(out) == [x[:128].sum(), x[128:].sum()]
    report = gl.racecheck(m.get("reused"), 1, 128, (x, out))
    assert report.hazards and {h.array for h in report.hazards} == {"temp"}
    assert "the emulator's <cub/cub.cuh>" in str(report)
    clean = gl.racecheck(m.get("private_storage"), 2, 128, (x, out))
    assert not clean.hazards


HOST_LIBRARY_INCLUDES = r'''
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include "cusparse.h"
#include <cufft.h>
#include <curand.h>
#include <cusolverDn.h>
#include <nvtx3/nvToolsExt.h>
#include <cuda_profiler_api.h>
__global__ void scale(float* y, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
'''


def test_host_library_headers_are_accepted_and_declare_nothing():
    """A kernel's file that includes cuBLAS, cuFFT, cuRAND's host API, NVTX, ... for its host code builds: its
    kernels run (gemmlab builds only device code); a use of such a library is an error that names it."""
    y = xp.arange(70, dtype=numpy.float32)
    _run(HOST_LIBRARY_INCLUDES, "scale", 2, 64, y, numpy.float32(2), numpy.int32(70))
    assert (gl.to_host(y) == 2 * numpy.arange(70)).all()
    using = HOST_LIBRARY_INCLUDES + "__global__ void uses(float* y) { cublasHandle_t h; y[0] = sizeof h; }\n"
    with pytest.raises(gl.CompileError, match="cublasHandle_t"):
        gl.load(code=using).get("uses")


def test_a_pointer_to_pointer_parameter_takes_a_uint64_array():
    code = r'''
__global__ void through(int** box, int* out)
{
    if (threadIdx.x == 0) box[0] = out;
    __syncthreads();
    box[0][threadIdx.x] = 7 + threadIdx.x;
}
'''
    k = gl.load(code=code).get("through")
    box, out = xp.zeros(1, dtype=numpy.uint64), xp.zeros(32, dtype=numpy.int32)
    k(1, 32, (box, out))
    assert list(gl.to_host(out)) == list(range(7, 39)) and int(gl.to_host(box)[0]) != 0
    with pytest.raises(ValueError, match=r"int\*\*, an array of pointers, and needs a uint64 array"):
        k(1, 32, (xp.zeros(1, dtype=numpy.int32), out))


def test_get_global_refuses_a_type_the_source_defines_twice():
    """A typedef chosen under an #if (the parser reads both branches): the variable's size decides, never a
    reading of its bytes as the wrong type."""
    m = gl.load(code="""
#if 1
typedef double real;
#else
typedef float real;
#endif
__device__ real taps[4];
__device__ real one;
__global__ void k(double* out) { out[0] = taps[0] + one; }
""")
    m.get("k")
    for name in ("taps", "one"):
        with pytest.raises(ValueError, match=rf"{name} is a real, which the source defines as two different types .* "
                                             rf"dtype="):
            m.get_global(name)
    assert m.get_global("taps", dtype=numpy.float64).shape == (4,)
    sized = gl.load(code="""
typedef float wide;
__device__ wide w[2];
__global__ void k(float* out) { out[0] = w[0]; }
""")
    sized.get("k")
    assert sized.get_global("w").shape == (2,)
