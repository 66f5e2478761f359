// gemmlab_emu.h: the CUDA-compatibility layer of the CPU emulator (see lib/gemmlab/_emulator.py).
//
// A kernel's .cu file is compiled by the host C++ compiler after this header. Each launch runs the
// grid's blocks one after another; the threads of a block are cooperative fibers, one stack each,
// that switch only at __syncthreads(), at warp operations and at exit. The schedule is fixed: the
// lowest-numbered runnable thread after the current one runs next, so the same inputs give the same
// bits every run, and a race (a missing barrier) gives the same wrong answer every run.
//
// __shared__ becomes `static`: one copy shared by the fibers of the running block. Launches run in a
// child process (fork) on copies of the arrays in shared memory with guard pages around them, so a
// crash or an out-of-bounds access becomes an error in Python, never a dead notebook.
#pragma once

#include <cmath>
#include <math.h>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <sys/types.h>
#include <type_traits>
#include <unistd.h>
#include <utility>

#define GL_EXPORT extern "C" __attribute__((visibility("default")))

// ---- qualifiers ------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __constant__ static
#define __managed__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
// __restrict__ is understood by g++ and clang++ as it is.

// ---- vector types ----------------------------------------------------------------------------
#define GL_VEC2(T, N, A) struct __attribute__((aligned(A))) N { T x, y; }; \
    inline N make_##N(T x, T y) { return N{x, y}; }
#define GL_VEC4(T, N, A) struct __attribute__((aligned(A))) N { T x, y, z, w; }; \
    inline N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
GL_VEC2(float, float2, 8)
struct float3 { float x, y, z; };
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
GL_VEC4(float, float4, 16)
GL_VEC2(double, double2, 16)
GL_VEC2(int, int2, 8)
GL_VEC4(int, int4, 16)
GL_VEC2(unsigned int, uint2, 8)
GL_VEC4(unsigned int, uint4, 16)
#undef GL_VEC2
#undef GL_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

namespace gl_emu {

enum State { RUNNABLE, AT_BARRIER, AT_WARP_OP, EXITED };
enum WarpOp { OP_SYNCWARP, OP_SHFL, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY, OP_ALL };
static const char* const WARP_OP_NAMES[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                            "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync"};

struct Fiber {
    void* sp;
    char* stack;            // lowest address of the usable stack (a guard page lies below it)
    dim3 tid;
    unsigned linear;
    State state;
    const char* file;
    int line;
    // a warp operation in progress
    int op;
    unsigned mask;
    unsigned long long value;
    int arg;
    int width;
    unsigned long long result;
};

// Shared with the parent process (allocated there): how the launch ended.
struct Status {
    int code;               // 0 ok, 1 kernel error (message), 2 crashed (signal), 3 still running
    int signal;
    unsigned block[3];
    unsigned thread[3];
    unsigned long long fault_address;
    unsigned long long switches;    // fiber switches made by the launch (for the benchmark)
    char message[4096];
};

struct Grid {
    Fiber* fibers = nullptr;
    unsigned capacity = 0;
    unsigned n = 0;                 // threads per block
    unsigned cur = 0;
    unsigned live = 0;
    unsigned at_barrier = 0;
    void* main_sp = nullptr;
    const char* kernel = "";
    void (*body)(void**) = nullptr;
    void** args = nullptr;
    dim3 grid_dim, block_dim, block_idx;
    Status* status = nullptr;
    size_t stack_size = 0;
    bool failed = false;
    unsigned long long switches = 0;
};

inline Grid g;

alignas(128) inline unsigned char dynamic_shared[256 * 1024];

}  // namespace gl_emu

#define threadIdx (::gl_emu::g.fibers[::gl_emu::g.cur].tid)
#define blockIdx (::gl_emu::g.block_idx)
#define blockDim (::gl_emu::g.block_dim)
#define gridDim (::gl_emu::g.grid_dim)
static constexpr int warpSize = 32;

namespace gl_emu {

// ---- context switching -----------------------------------------------------------------------
#if defined(__x86_64__)
extern "C" __attribute__((naked, noinline, visibility("hidden"))) inline void gl_emu_switch(void** save, void* load)
{
    __asm__ volatile(
        "pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
        "movq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n\t"
        "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\tret\n\t");
}
#elif defined(__aarch64__)
extern "C" __attribute__((naked, noinline, visibility("hidden"))) inline void gl_emu_switch(void** save, void* load)
{
    __asm__ volatile(
        "sub sp, sp, #160\n\t"
        "stp x19, x20, [sp, #0]\n\tstp x21, x22, [sp, #16]\n\tstp x23, x24, [sp, #32]\n\t"
        "stp x25, x26, [sp, #48]\n\tstp x27, x28, [sp, #64]\n\tstp x29, x30, [sp, #80]\n\t"
        "stp d8, d9, [sp, #96]\n\tstp d10, d11, [sp, #112]\n\tstp d12, d13, [sp, #128]\n\tstp d14, d15, [sp, #144]\n\t"
        "mov x2, sp\n\tstr x2, [x0]\n\tmov sp, x1\n\t"
        "ldp x19, x20, [sp, #0]\n\tldp x21, x22, [sp, #16]\n\tldp x23, x24, [sp, #32]\n\t"
        "ldp x25, x26, [sp, #48]\n\tldp x27, x28, [sp, #64]\n\tldp x29, x30, [sp, #80]\n\t"
        "ldp d8, d9, [sp, #96]\n\tldp d10, d11, [sp, #112]\n\tldp d12, d13, [sp, #128]\n\tldp d14, d15, [sp, #144]\n\t"
        "add sp, sp, #160\n\tret\n\t");
}
#else
#error "the gemmlab emulator switches fibers with x86-64 or AArch64 assembly; this processor is neither"
#endif

[[noreturn]] void fiber_main();
[[noreturn]] void exited_lane(const struct Fiber& waiting, unsigned lane);

inline void* initial_sp(Fiber& f)
{
    uintptr_t top = (reinterpret_cast<uintptr_t>(f.stack) + g.stack_size) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
#if defined(__x86_64__)
    *--sp = nullptr;                                          // fake return address of fiber_main
    *--sp = reinterpret_cast<void*>(&fiber_main);             // popped by ret
    for (int i = 0; i < 6; ++i) *--sp = nullptr;              // rbp rbx r12 r13 r14 r15
#else
    sp -= 20;                                                 // the 160-byte frame gl_emu_switch restores
    for (int i = 0; i < 20; ++i) sp[i] = nullptr;
    sp[11] = reinterpret_cast<void*>(&fiber_main);            // x30 (the link register)
#endif
    return sp;
}

inline void switch_to(unsigned next)
{
    __asm__ volatile("" ::: "memory");
    unsigned from = g.cur;
    g.cur = next;
    ++g.switches;
    if (g.status) {
        g.status->thread[0] = g.fibers[next].tid.x;
        g.status->thread[1] = g.fibers[next].tid.y;
        g.status->thread[2] = g.fibers[next].tid.z;
    }
    gl_emu_switch(&g.fibers[from].sp, g.fibers[next].sp);
    __asm__ volatile("" ::: "memory");
}

inline void return_to_main()
{
    __asm__ volatile("" ::: "memory");
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
}

// ---- errors ----------------------------------------------------------------------------------
inline int describe_threads(char* out, size_t room, State state, const char* file, int line, bool match_site)
{
    unsigned count = 0, shown = 0;
    int used = 0;
    for (unsigned i = 0; i < g.n; ++i) {
        const Fiber& f = g.fibers[i];
        if (f.state != state) continue;
        if (match_site && (f.line != line || std::strcmp(f.file, file) != 0)) continue;
        if (shown < 4 && used < (int)room - 40)
            used += std::snprintf(out + used, room - used, "%s(%u,%u,%u)", shown ? ", " : "", f.tid.x, f.tid.y, f.tid.z);
        ++shown;
        ++count;
    }
    if (count > 4 && used < (int)room - 40) used += std::snprintf(out + used, room - used, ", ... (%u threads)", count);
    return used;
}

[[noreturn]] inline void fail_with(const char* fmt_head)
{
    g.failed = true;
    if (g.status) {
        g.status->code = 1;
        std::snprintf(g.status->message, sizeof g.status->message, "%s", fmt_head);
    }
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
    __builtin_unreachable();
}

[[noreturn]] inline void divergence(const char* what)
{
    char msg[4096];
    int used = std::snprintf(msg, sizeof msg, "%s in kernel %s, block (%u,%u,%u):", what, g.kernel,
                             g.block_idx.x, g.block_idx.y, g.block_idx.z);
    // group the waiting threads by where they wait
    bool listed[1024] = {};
    for (unsigned i = 0; i < g.n && used < (int)sizeof msg - 300; ++i) {
        const Fiber& f = g.fibers[i];
        if (listed[i] || f.state == RUNNABLE || f.state == EXITED) continue;
        for (unsigned j = i; j < g.n; ++j)
            if (g.fibers[j].state == f.state && g.fibers[j].line == f.line && !std::strcmp(g.fibers[j].file, f.file))
                listed[j] = true;
        used += std::snprintf(msg + used, sizeof msg - used, "\n  threads ");
        used += describe_threads(msg + used, sizeof msg - used, f.state, f.file, f.line, true);
        used += std::snprintf(msg + used, sizeof msg - used, " wait at %s (%s:%d)",
                              f.state == AT_BARRIER ? "__syncthreads()" : WARP_OP_NAMES[f.op], f.file, f.line);
    }
    if (g.live < g.n && used < (int)sizeof msg - 300) {
        used += std::snprintf(msg + used, sizeof msg - used, "\n  threads ");
        used += describe_threads(msg + used, sizeof msg - used, EXITED, "", 0, false);
        std::snprintf(msg + used, sizeof msg - used, " have exited");
    }
    fail_with(msg);
}

// ---- scheduling ------------------------------------------------------------------------------
inline void run_next()
{
    for (unsigned k = 1; k <= g.n; ++k) {
        unsigned i = (g.cur + k) % g.n;
        if (g.fibers[i].state == RUNNABLE) {
            if (i != g.cur) switch_to(i);
            return;
        }
    }
    if (g.live == 0) {
        return_to_main();
        __builtin_unreachable();
    }
    divergence("deadlock: no thread can go on");
}

[[noreturn]] inline void fiber_main()
{
    g.body(g.args);
    Fiber& me = g.fibers[g.cur];
    me.state = EXITED;
    --g.live;
    const unsigned base = me.linear & ~31u, lane = me.linear & 31u;
    for (unsigned l = 0; l < 32 && base + l < g.n; ++l) {
        const Fiber& f = g.fibers[base + l];
        if (f.state == AT_WARP_OP && ((f.mask >> lane) & 1u)) exited_lane(f, lane);
    }
    if (g.at_barrier > 0) divergence("barrier divergence: a thread exited while others wait at a barrier");
    run_next();
    __builtin_unreachable();
}

__attribute__((noinline)) inline void syncthreads(const char* file, int line)
{
    Fiber& me = g.fibers[g.cur];
    me.state = AT_BARRIER;
    me.file = file;
    me.line = line;
    if (g.live < g.n) divergence("barrier divergence: a thread reached a barrier after others exited");
    if (++g.at_barrier == g.live) {
        for (unsigned i = 0; i < g.n; ++i) {
            Fiber& f = g.fibers[i];
            if (f.line != line || std::strcmp(f.file, file) != 0)
                divergence("barrier divergence: threads wait at different __syncthreads()");
        }
        for (unsigned i = 0; i < g.n; ++i) g.fibers[i].state = RUNNABLE;
        g.at_barrier = 0;
        __asm__ volatile("" ::: "memory");
        return;                                  // the last to arrive goes on; the others follow in order
    }
    run_next();
}

inline unsigned long long resolve_lane(const Fiber& f, unsigned lane_base, unsigned lane, const Fiber* warp, unsigned lanes)
{
    int w = f.width;
    unsigned seg = lane & ~unsigned(w - 1);
    unsigned src = lane;
    switch (f.op) {
        case OP_SHFL: src = seg + (unsigned(f.arg) & unsigned(w - 1)); break;
        case OP_SHFL_UP: src = (lane - seg) >= unsigned(f.arg) ? lane - f.arg : lane; break;
        case OP_SHFL_DOWN: src = (lane - seg) + unsigned(f.arg) < unsigned(w) ? lane + f.arg : lane; break;
        case OP_SHFL_XOR: { unsigned s = lane ^ unsigned(f.arg); src = (s >= seg && s < seg + w) ? s : lane; break; }
        default: break;
    }
    (void)lane_base;
    if (src >= lanes || !((f.mask >> src) & 1u) || warp[src].state != AT_WARP_OP) src = lane;  // undefined on a GPU
    return warp[src].value;
}

[[noreturn]] inline void exited_lane(const Fiber& waiting, unsigned lane)
{
    const Fiber& gone = g.fibers[(waiting.linear & ~31u) + lane];
    char msg[512];
    std::snprintf(msg, sizeof msg, "%s at %s:%d in kernel %s, block (%u,%u,%u): lane %u is in the mask 0x%08x "
                  "but its thread (%u,%u,%u) has exited", WARP_OP_NAMES[waiting.op], waiting.file, waiting.line,
                  g.kernel, g.block_idx.x, g.block_idx.y, g.block_idx.z, lane, waiting.mask, gone.tid.x, gone.tid.y,
                  gone.tid.z);
    fail_with(msg);
}

__attribute__((noinline)) inline unsigned long long warp_op(int op, unsigned mask, unsigned long long value, int arg,
                                                            int width, const char* file, int line)
{
    Fiber& me = g.fibers[g.cur];
    if (width <= 0 || width > 32 || (width & (width - 1))) {
        char msg[512];
        std::snprintf(msg, sizeof msg, "%s at %s:%d: width %d is not a power of two from 1 to 32 (kernel %s)",
                      WARP_OP_NAMES[op], file, line, width, g.kernel);
        fail_with(msg);
    }
    me.state = AT_WARP_OP;
    me.op = op; me.mask = mask; me.value = value; me.arg = arg; me.width = width; me.file = file; me.line = line;
    unsigned base = me.linear & ~31u;
    unsigned lanes = (g.n - base) < 32 ? g.n - base : 32;
    Fiber* warp = g.fibers + base;
    bool all_here = true;
    for (unsigned l = 0; l < lanes; ++l) {
        if (!((mask >> l) & 1u)) continue;
        const Fiber& f = warp[l];
        if (f.state == EXITED) exited_lane(me, l);
        if (f.state != AT_WARP_OP || f.line != line || std::strcmp(f.file, file) != 0 || f.op != op) all_here = false;
    }
    if (all_here) {
        unsigned long long ballot = 0;
        for (unsigned l = 0; l < lanes; ++l)
            if (((mask >> l) & 1u) && warp[l].value) ballot |= 1ull << l;
        unsigned participants = 0;
        for (unsigned l = 0; l < lanes; ++l) participants += (mask >> l) & 1u;
        for (unsigned l = 0; l < lanes; ++l) {
            if (!((mask >> l) & 1u)) continue;
            Fiber& f = warp[l];
            if (op == OP_BALLOT) f.result = ballot;
            else if (op == OP_ANY) f.result = ballot != 0;
            else if (op == OP_ALL) f.result = (unsigned)__builtin_popcountll(ballot) == participants;
            else if (op == OP_SYNCWARP) f.result = 0;
            else f.result = resolve_lane(f, base, l, warp, lanes);
        }
        for (unsigned l = 0; l < lanes; ++l)
            if ((mask >> l) & 1u) warp[l].state = RUNNABLE;
        return me.result;
    }
    run_next();
    return g.fibers[g.cur].result;
}

template <class T>
inline unsigned long long bits(T v)
{
    static_assert(sizeof(T) <= 8, "warp operations move values of at most 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}

template <class T>
inline T from_bits(unsigned long long b)
{
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}

// ---- running a grid (in the child process) ---------------------------------------------------
inline void run_grid()
{
    for (unsigned bz = 0; bz < g.grid_dim.z; ++bz)
        for (unsigned by = 0; by < g.grid_dim.y; ++by)
            for (unsigned bx = 0; bx < g.grid_dim.x; ++bx) {
                g.block_idx = dim3(bx, by, bz);
                if (g.status) { g.status->block[0] = bx; g.status->block[1] = by; g.status->block[2] = bz; }
                for (unsigned i = 0; i < g.n; ++i) {
                    Fiber& f = g.fibers[i];
                    f.state = RUNNABLE;
                    f.line = 0;
                    f.file = "";
                    f.sp = initial_sp(f);
                }
                g.live = g.n;
                g.at_barrier = 0;
                g.cur = 0;
                if (g.status) { g.status->thread[0] = g.status->thread[1] = g.status->thread[2] = 0; }
                gl_emu_switch(&g.main_sp, g.fibers[0].sp);
                if (g.failed) return;
            }
}

inline void on_fault(int sig, siginfo_t* info, void*)
{
    if (g.status) {
        g.status->code = 2;
        g.status->signal = sig;
        g.status->fault_address = reinterpret_cast<unsigned long long>(info->si_addr);
    }
    _exit(128 + sig);
}

}  // namespace gl_emu

// ---- the CUDA device API the book's kernels use ----------------------------------------------
#define __syncthreads() ::gl_emu::syncthreads(__FILE__, __LINE__)
#define __syncwarp(...) ((void)::gl_emu::warp_op(::gl_emu::OP_SYNCWARP, ::gl_emu::syncwarp_mask(__VA_ARGS__), 0, 0, 32, __FILE__, __LINE__))
#define __shfl_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_UP, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_DOWN, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_XOR, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(mask, p) ((unsigned)::gl_emu::warp_op(::gl_emu::OP_BALLOT, mask, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __any_sync(mask, p) ((int)::gl_emu::warp_op(::gl_emu::OP_ANY, mask, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __all_sync(mask, p) ((int)::gl_emu::warp_op(::gl_emu::OP_ALL, mask, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))

namespace gl_emu {
inline unsigned syncwarp_mask() { return 0xffffffffu; }
inline unsigned syncwarp_mask(unsigned m) { return m; }

template <class T>
inline T shfl(int op, unsigned mask, T v, const char* file, int line, int arg, int width = 32)
{
    return from_bits<T>(warp_op(op, mask, bits(v), arg, width, file, line));
}
}  // namespace gl_emu

// Atomics: fibers switch only at barriers and warp operations, so a read-modify-write is never
// interleaved with another thread's.
template <class T> struct gl_same { using type = T; };
template <class T> inline T atomicAdd(T* p, typename gl_same<T>::type v) { T old = *p; *p = old + v; return old; }
template <class T> inline T atomicSub(T* p, typename gl_same<T>::type v) { T old = *p; *p = old - v; return old; }
template <class T> inline T atomicExch(T* p, typename gl_same<T>::type v) { T old = *p; *p = v; return old; }
template <class T> inline T atomicCAS(T* p, typename gl_same<T>::type compare, typename gl_same<T>::type v)
{ T old = *p; if (old == compare) *p = v; return old; }
#define GL_ATOMIC_MINMAX(T) \
    inline T atomicMax(T* p, T v) { T old = *p; if (v > old) *p = v; return old; } \
    inline T atomicMin(T* p, T v) { T old = *p; if (v < old) *p = v; return old; }
GL_ATOMIC_MINMAX(int)
GL_ATOMIC_MINMAX(unsigned int)
GL_ATOMIC_MINMAX(long long)
GL_ATOMIC_MINMAX(unsigned long long)
#undef GL_ATOMIC_MINMAX

template <class T> inline T __ldg(const T* p) { return *p; }
inline int __float_as_int(float f) { int b; std::memcpy(&b, &f, 4); return b; }
inline float __int_as_float(int b) { float f; std::memcpy(&f, &b, 4); return f; }
inline unsigned int __float_as_uint(float f) { unsigned int b; std::memcpy(&b, &f, 4); return b; }
inline float __uint_as_float(unsigned int b) { float f; std::memcpy(&f, &b, 4); return f; }
__device__ inline void __threadfence() { __asm__ volatile("" ::: "memory"); }
__device__ inline void __threadfence_block() { __asm__ volatile("" ::: "memory"); }

// Math: CUDA's overloaded min/max and the float intrinsics.
#define GL_MINMAX(T) inline T min(T a, T b) { return b < a ? b : a; } inline T max(T a, T b) { return a < b ? b : a; }
GL_MINMAX(int)
GL_MINMAX(unsigned int)
GL_MINMAX(long long)
GL_MINMAX(unsigned long long)
GL_MINMAX(float)
GL_MINMAX(double)
#undef GL_MINMAX
inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
inline double min(float a, double b) { return min((double)a, b); }
inline double min(double a, float b) { return min(a, (double)b); }
inline double max(float a, double b) { return max((double)a, b); }
inline double max(double a, float b) { return max(a, (double)b); }
inline long long min(int a, long long b) { return min((long long)a, b); }
inline long long min(long long a, int b) { return min(a, (long long)b); }
inline long long max(int a, long long b) { return max((long long)a, b); }
inline long long max(long long a, int b) { return max(a, (long long)b); }
inline float __fmaf_rn(float a, float b, float c) { return ::fmaf(a, b, c); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / ::sqrtf(x); }
inline float __expf(float x) { return ::expf(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }

// ---- the entry points the Python side calls --------------------------------------------------
namespace gl_emu {

template <class... P, size_t... I>
inline void invoke_impl(void (*kernel)(P...), void** args, std::index_sequence<I...>)
{
    kernel(*reinterpret_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

template <class... P>
inline void invoke(void (*kernel)(P...), void** args)
{
    invoke_impl(kernel, args, std::index_sequence_for<P...>{});
}

// Map fiber stacks for `threads` threads, in the child process (so the parent, which may run many
// kernels, never accumulates mappings; and with mmap, not malloc, which is unsafe after fork).
inline int prepare(unsigned threads)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t stack = 256 * 1024;
    void* table = mmap(nullptr, threads * sizeof(Fiber), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (table == MAP_FAILED) return -1;
    Fiber* fibers = static_cast<Fiber*>(table);
    for (unsigned i = 0; i < threads; ++i) {
        char* region = static_cast<char*>(mmap(nullptr, stack + page, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
        if (region == MAP_FAILED) return -1;
        mprotect(region, page, PROT_NONE);         // a guard page below each stack: an overflow faults
        fibers[i].stack = region + page;
    }
    g.fibers = fibers;
    g.capacity = threads;
    g.stack_size = stack;
    return 0;
}

// Fork; the child runs the grid and exits. Returns the child's pid (or -1) to the parent.
inline long fork_launch(void (*body)(void**), const char* kernel, const unsigned* grid, const unsigned* block,
                        unsigned long long shared_bytes, void** args, Status* status)
{
    unsigned threads = block[0] * block[1] * block[2];
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid != 0) return pid;
    // the child
    if (prepare(threads) != 0) {
        status->code = 1;
        std::snprintf(status->message, sizeof status->message, "kernel %s: the emulator could not map stacks "
                      "for %u threads", kernel, threads);
        _exit(1);
    }
    static char alt[64 * 1024];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
    g.n = threads;
    g.kernel = kernel;
    g.body = body;
    g.args = args;
    g.grid_dim = dim3(grid[0], grid[1], grid[2]);
    g.block_dim = dim3(block[0], block[1], block[2]);
    g.status = status;
    g.failed = false;
    for (unsigned i = 0; i < threads; ++i) {
        Fiber& f = g.fibers[i];
        f.linear = i;
        f.tid = dim3(i % block[0], (i / block[0]) % block[1], i / (block[0] * block[1]));
    }
    if (shared_bytes) std::memset(dynamic_shared, 0xff, shared_bytes);   // NaN-poisoned, like a fresh block
    g.switches = 0;
    run_grid();
    std::fflush(nullptr);
    status->switches = g.switches;
    if (!g.failed) status->code = 0;
    _exit(g.failed ? 1 : 0);
}

}  // namespace gl_emu

GL_EXPORT void* gl_emu_shared_alloc(unsigned long long bytes, unsigned long long* mapped)
{
    // [guard page][... data ending exactly at the next guard page, 16-byte aligned start ...][guard page]
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t padded = (bytes + 15) & ~size_t(15);
    size_t body = (padded + page - 1) / page * page;
    size_t total = body + 2 * page;
    char* region = static_cast<char*>(mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (region == MAP_FAILED) return nullptr;
    mprotect(region, page, PROT_NONE);
    mprotect(region + page + body, page, PROT_NONE);
    *mapped = total;
    return region + page + (body - padded);
}

GL_EXPORT void gl_emu_shared_free(void* data, unsigned long long bytes, unsigned long long mapped)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t padded = (bytes + 15) & ~size_t(15);
    size_t body = (padded + page - 1) / page * page;
    munmap(static_cast<char*>(data) - (body - padded) - page, mapped);
}

GL_EXPORT unsigned long long gl_emu_status_size() { return sizeof(gl_emu::Status); }
