// gemmlab_emu.h: the CUDA-compatibility layer of the CPU emulator (see lib/gemmlab/runtime/emulator/).
//
// A kernel's .cu file is compiled by the host C++ compiler after this header. Each launch runs the
// grid's blocks one after another (or, where no code of the module reaches across blocks, consecutive ranges
// of them in one process each, side by side: see blocks_independent); the threads of a block are cooperative
// fibers, one stack each, that switch only at __syncthreads(), at warp operations, at __nanosleep, at exit
// and (in a kernel that uses volatile memory) before each volatile access, which a warp makes in lockstep.
// The schedule is fixed: the lowest-numbered runnable thread after the current one runs next, so the same
// inputs give the same bits every run, and a race (a missing barrier) gives the same wrong answer every run.
//
// __shared__ becomes `static`: one copy shared by the fibers of the running block. Launches run in a
// child process (fork) on copies of the arrays in shared memory with guard pages around them, so a
// crash or an out-of-bounds access becomes an error in Python, never a dead notebook.
#pragma once

#include <cassert>
#include <cmath>
#include <cerrno>
#include <cfenv>
#include <climits>
#include <limits>
#include <math.h>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <ucontext.h>
#include <time.h>
#include <dlfcn.h>
#include <sys/types.h>
#include <type_traits>
#include <unistd.h>
#include <sched.h>
#include <utility>
#include <new>                  // placement new, which nvcc and NVRTC declare for device code themselves
#include <stddef.h>             // ::ptrdiff_t and ::size_t, which nvcc's cuda_runtime.h brings

#define GL_EXPORT extern "C" __attribute__((visibility("default")))
// The emulator's own bookkeeping is never instrumented by the memory check (see memcheck below).
// With GL_EMU_LOCKSTEP (a kernel that uses volatile memory) the compiler's instrumentation is ThreadSanitizer's
// instead, whose calls the runtime below answers (no sanitizer library is linked).
#if defined(GL_EMU_LOCKSTEP)
#define GL_NOSAN __attribute__((no_sanitize_address, no_sanitize_thread))
#elif defined(GL_EMU_MEMCHECK)
#define GL_NOSAN __attribute__((no_sanitize_address))
#else
#define GL_NOSAN
#endif

// ---- what a CUDA compiler defines: NVRTC (CuPy's compiler) compiling for the emulated GPU --------------
// (__CUDA_ARCH__ comes from the loader: the profile in use, GEMMLAB_DEVICE, else the H200's 900)
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 0
#define CUDART_VERSION 13000

// ---- qualifiers ------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
// (__noinline__: the loader writes __attribute__((noinline)) for it, where it is a specifier: see translate)
#define __shared__ static
#define __constant__      // (a file-scope variable: it may be declared extern first and defined later)
#define __managed__
// (a __device__ variable is rewritten to this by the loader: one section, copied back after each launch)
#define GL_DEVICE_VARIABLE __attribute__((section("gl_device_vars"), used))
extern "C" char __start_gl_device_vars[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_gl_device_vars[] __attribute__((weak, visibility("hidden")));
// Code that may reach across blocks (an atomic, a fence) marks its module: the mark is a variable in this section,
// emitted only where the function holding it is (an inline function, a template instance the kernels use).
// A module with no mark runs the blocks of a large grid in several processes (blocks_independent, launch.py).
#define GL_ACROSS_BLOCKS() do { __attribute__((used, section("gl_across_blocks"))) static char gl_mark = 1; (void)gl_mark; } while (0)
// (the same from generated code, in one ordinary function: a mark in a template's own body may not be emitted)
namespace gl_emu { GL_NOSAN inline void across_blocks() { GL_ACROSS_BLOCKS(); } }
extern "C" char __start_gl_across_blocks[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_gl_across_blocks[] __attribute__((weak, visibility("hidden")));
#define __launch_bounds__(...)
// (the loader reads a kernel's clusters from its declaration, and the blocks of a cluster run together: run_clusters)
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
// __restrict__ is understood by g++ and clang++ as it is.

// ---- vector types ----------------------------------------------------------------------------
// Every CUDA vector type, with CUDA's alignment (1-, 2- and 4-component types are aligned to their
// size, up to 16 bytes; 3-component types to their element), and its make_ function.
#define GL_VEC1(T, N, A) struct __attribute__((aligned(A))) N { T x; }; \
    inline N make_##N(T x) { return N{x}; }
#define GL_VEC2(T, N, A) struct __attribute__((aligned(A))) N { T x, y; }; \
    inline N make_##N(T x, T y) { return N{x, y}; }
#define GL_VEC3(T, N) struct N { T x, y, z; }; \
    inline N make_##N(T x, T y, T z) { return N{x, y, z}; }
#define GL_VEC4(T, N, A) struct __attribute__((aligned(A))) N { T x, y, z, w; }; \
    inline N make_##N(T x, T y, T z, T w) { return N{x, y, z, w}; }
#define GL_VECS(T, P, S) GL_VEC1(T, P##1, S) GL_VEC2(T, P##2, (2 * S > 16 ? 16 : 2 * S)) GL_VEC3(T, P##3) \
    GL_VEC4(T, P##4, (4 * S > 16 ? 16 : 4 * S))
GL_VECS(signed char, char, 1)
GL_VECS(unsigned char, uchar, 1)
GL_VECS(short, short, 2)
GL_VECS(unsigned short, ushort, 2)
GL_VECS(int, int, 4)
GL_VECS(unsigned int, uint_vec_, 4)
GL_VECS(long, long, sizeof(long))
GL_VECS(unsigned long, ulong, sizeof(long))
GL_VECS(long long, longlong, 8)
GL_VECS(unsigned long long, ulonglong, 8)
GL_VECS(float, float, 4)
GL_VECS(double, double, 8)
using uint1 = uint_vec_1; using uint2 = uint_vec_2; using uint4 = uint_vec_4;
inline uint1 make_uint1(unsigned int x) { return make_uint_vec_1(x); }
inline uint2 make_uint2(unsigned int x, unsigned int y) { return make_uint_vec_2(x, y); }
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return make_uint_vec_4(x, y, z, w); }
#undef GL_VECS
#undef GL_VEC1
#undef GL_VEC2
#undef GL_VEC3
#undef GL_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return dim3(x, y, z); }
// (the handle types, so that a signature naming one compiles; a fetch through one stops the launch, by name)
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
// The runtime's host types, which a kernel's file names in its host code and declarations (llm.c's
// `extern cudaDeviceProp deviceProp;`, a launcher's cudaStream_t): the types only, for the signatures to compile.
// The host API itself is not here: gemmlab launches the kernels from Python.
enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
                 cudaErrorInitializationError = 3, cudaErrorLaunchFailure = 719, cudaErrorUnknown = 999 };
typedef enum cudaError cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock;
    int regsPerBlock, warpSize;
    size_t memPitch;
    int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
    size_t totalConstMem;
    int major, minor, multiProcessorCount, l2CacheSize, maxThreadsPerMultiProcessor, memoryClockRate, memoryBusWidth;
    size_t sharedMemPerMultiprocessor, sharedMemPerBlockOptin;
    int regsPerMultiprocessor, maxBlocksPerMultiProcessor, cooperativeLaunch, concurrentKernels, unifiedAddressing;
};
// A texture or surface fetch stops the launch when a thread reaches it, naming the function and the user's line
// (gl_emu::unsupported, below): the file still builds, so its kernels that fetch nothing run.
// (declared here, defined with the runtime below)
namespace gl_emu { [[noreturn]] GL_NOSAN __attribute__((noinline)) void unsupported(const char* what, const char* name); }
#define GL_NO_TEXTURE(NAME) \
    template <class T = void, class... A> __attribute__((always_inline)) inline T NAME(A&&...) \
    { ::gl_emu::unsupported("texture and surface fetches", #NAME); }
GL_NO_TEXTURE(tex1D) GL_NO_TEXTURE(tex2D) GL_NO_TEXTURE(tex3D) GL_NO_TEXTURE(tex1Dfetch) GL_NO_TEXTURE(tex1DLayered)
GL_NO_TEXTURE(tex2DLayered) GL_NO_TEXTURE(texCubemap) GL_NO_TEXTURE(texCubemapLayered) GL_NO_TEXTURE(tex2Dgather)
GL_NO_TEXTURE(tex1DLod) GL_NO_TEXTURE(tex2DLod) GL_NO_TEXTURE(tex3DLod) GL_NO_TEXTURE(tex1DGrad) GL_NO_TEXTURE(tex2DGrad)
GL_NO_TEXTURE(tex3DGrad) GL_NO_TEXTURE(surf1Dread) GL_NO_TEXTURE(surf2Dread) GL_NO_TEXTURE(surf3Dread)
GL_NO_TEXTURE(surf1Dwrite) GL_NO_TEXTURE(surf2Dwrite) GL_NO_TEXTURE(surf3Dwrite) GL_NO_TEXTURE(surf2DLayeredread)
GL_NO_TEXTURE(surf2DLayeredwrite)
#undef GL_NO_TEXTURE

namespace gl_emu {

enum State { RUNNABLE, AT_BARRIER, AT_WARP_OP, EXITED, AT_GROUP, AT_WAIT, AT_STEP, AT_MBARRIER, AT_NAMED };
enum WarpOp { OP_SYNCWARP, OP_SHFL, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY, OP_ALL, OP_COALESCE,
              OP_MATCH_ANY, OP_MATCH_ALL, OP_REDUCE, OP_PTX };
static const char* const WARP_OP_NAMES[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                            "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync",
                                            "coalesced_threads() or __activemask()", "__match_any_sync",
                                            "__match_all_sync", "__reduce_*_sync",
                                            "a warp's inline PTX instruction (mma.sync, ldmatrix)"};
enum ReduceOp { RED_ADD, RED_MIN, RED_MAX, RED_AND, RED_OR, RED_XOR, RED_SIGNED = 8 };

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
    const void* wait_on;    // AT_WAIT: the phase counter a cuda::barrier wait watches
    unsigned long long token;
};

// Shared with the parent process (allocated there): how the launch ended.
struct Status {
    int code;               // 0 ok, 1 kernel error (message), 2 crashed (signal), 3 still running,
                            // 4 out-of-bounds access (memcheck), 5 stack overflow,
                            // 6 a feature the emulator does not run (message: what and its name)
    int signal;
    unsigned block[3];
    unsigned thread[3];
    unsigned long long fault_address;
    unsigned long long switches;    // fiber switches made by the launch (for the benchmark)
    unsigned long long pc;          // where it happened: an offset into the kernel's shared library
    unsigned long long access_size; // bytes of the faulting access (memcheck)
    int access_write;               // 1 for a store (memcheck)
    int in_shared;                  // 1 when the address is shared or local memory (the message names the array)
    unsigned long long stack_size;  // bytes of stack a thread has (stack overflow)
    unsigned long long stack_used;  // bytes in use at the fault (stack overflow)
    char message[4096];
    // racecheck (GL_EMU_RACECHECK): shared-memory hazards between threads with no barrier between them, and
    // global-memory ones between lanes of a warp with no __syncwarp between them
    unsigned hazard_count;          // all found (the first MAX_HAZARDS distinct ones are kept)
    unsigned hazards_kept;
    struct Hazard {
        int kind;                   // 1 read-after-write, 2 write-after-read, 3 write-after-write
        unsigned block[3], first[3], second[3];   // the earlier access's thread, then the later one's
        unsigned long long pc_first, pc_second;   // code offsets of the two accesses
        long long offset;           // byte offset into the array
        unsigned bytes;
        char array[48];             // the __shared__ array's name, or "dynamic shared memory"
    } hazards[32];
};

// An array argument's copy in shared memory, as gl_emu_shared_alloc(bytes) mapped it, with `touchable`
// bytes from `data` on belonging to arguments. Everything else in the mapping is out of bounds.
struct Region {
    unsigned long long data, bytes, touchable;
    unsigned long long tracked;      // 1: memory the kernel may write (global_access checks its accesses)
    // where several processes run a launch's blocks: a bit for each byte of the region this process's blocks
    // wrote, and one for each they read, for the parent to find blocks that saw each other (null: not kept)
    unsigned char* written;
    unsigned char* read;
};

// The mapping gl_emu_shared_alloc makes for `bytes`: [guard page][body: the data, 16-byte aligned, ending
// at the next guard page][guard page]. One layout, for allocating, freeing and the memory check's bounds.
struct Mapping { char* start; size_t total; size_t offset; };   // offset: of the data from start
GL_NOSAN inline Mapping mapping_for(size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t padded = (bytes + 15) & ~size_t(15);
    const size_t body = (padded + page - 1) / page * page;
    return Mapping{nullptr, body + 2 * page, page + (body - padded)};
}

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
    unsigned long long epoch = 1;            // barrier generations of the launch (racecheck)
    unsigned long long warp_epoch[32] = {};  // __syncwarp (and other warp operation) generations per warp
    // global memory in lockstep (the memory check): when each warp last stored to an argument, as (barrier
    // generation, warp generation); a load after it in the same generations waits for the warp's lanes
    unsigned long long stored_epoch[32] = {}, stored_warp_epoch[32] = {};
    const struct Region* regions = nullptr;  // the launch's array arguments
    unsigned region_count = 0;
    bool in_atomic = false;                  // inside an atomic: its accesses take no turn and no lockstep step
};

inline Grid g;

// Clusters (__cluster_dims__): the blocks of a cluster run together, in one process, each on fibers of its own. One
// block's threads run at a time; when none of them can go on, another block of the cluster that can takes over. The
// block leaving puts its shared memory (and the PTX runtime's state of it: cluster_state_hook) aside, the block
// arriving puts its own back, so every block finds its shared memory at the addresses its code holds. Another block
// reaches a block's memory while it is aside (cluster_memory: a remote mbarrier arrival, a load or store of
// distributed shared memory); a multicast copy lands when that block's own threads wait for it.
struct ClusterBlock {
    Fiber* fibers;
    unsigned live, at_barrier, cur, coalesce, steps;
    dim3 block_idx;
    unsigned long long serial;
    bool ended;                      // its threads have all exited and its end has been checked
    unsigned char* image;            // its shared memory while aside: the static arena, then the dynamic bytes
    unsigned short* writers;         // and its proxy-fence records (a module that watches shared memory), as the
                                     // live ones lie (static arrays are placed as a block first reaches them)
    unsigned* fence_at;
    unsigned* fences;
    void* race;                      // racecheck: its words' accesses (a table each), its barrier generations
    unsigned long long epoch, warp_epoch[32], global_block;
};
constexpr unsigned MAX_CLUSTER = 16;
inline unsigned cluster_dims[3] = {1, 1, 1};
inline unsigned cluster_blocks = 1;                    // blocks a cluster: 1 for a launch without clusters
inline ClusterBlock cluster_block[MAX_CLUSTER];
inline unsigned cluster_rank_now = 0;                  // the block whose threads run now
inline void (*cluster_state_hook)(unsigned rank, bool aside) = nullptr;
inline void (*thread_exit_hook)() = nullptr;           // the PTX runtime's: a cluster barrier an exit may open
GL_NOSAN inline bool cluster_switch();
GL_NOSAN inline bool cluster_all_ended();
GL_NOSAN inline void cluster_show_stuck();

// A block's shared memory: the static __shared__ arrays in one arena, each with a poisoned gap before it (see
// shared_array), and the dynamic shared memory; both in one object with a poisoned guard on every side of each, so
// that the memory check catches an access just before or past either (s[-1] of an extern __shared__ array), where
// memory that nobody marked would read as addressable.
constexpr size_t DYNAMIC_SHARED_BYTES = 256 * 1024;
constexpr size_t SHARED_ARENA_BYTES = 512 * 1024;
constexpr size_t SHARED_GUARD = 64 * 1024;
constexpr size_t STATIC_SHARED_LIMIT = 48 * 1024;     // CUDA's limit for static __shared__ per block
// the gap a static array needs on each side: as large as the array, from 256 bytes to 1 KiB (a row past a 2-D
// tile is caught); between two arrays, the larger of their two
constexpr size_t shared_gap(size_t bytes) { return bytes < 256 ? 256 : (bytes > 1024 ? 1024 : bytes); }
struct alignas(128) SharedSpace {
    unsigned char guard_before[SHARED_GUARD];
    unsigned char arena[SHARED_ARENA_BYTES];
    unsigned char guard_between[SHARED_GUARD];
    unsigned char dynamic[DYNAMIC_SHARED_BYTES];
    unsigned char guard_after[SHARED_GUARD];
};
inline SharedSpace shared_space;
inline unsigned char (&dynamic_shared)[DYNAMIC_SHARED_BYTES] = shared_space.dynamic;
inline unsigned char (&shared_arena)[SHARED_ARENA_BYTES] = shared_space.arena;
inline unsigned long long dynamic_shared_given = 0;   // the launch's shared_mem
// where an address lies: on the running thread's own stack (its local variables), or in the block's shared memory
GL_NOSAN inline bool on_stack(uintptr_t a)
{ return a - reinterpret_cast<uintptr_t>(g.fibers[g.cur].stack) < g.stack_size; }
GL_NOSAN inline bool in_shared(uintptr_t a)
{
    const uintptr_t dyn = reinterpret_cast<uintptr_t>(dynamic_shared), arena = reinterpret_cast<uintptr_t>(shared_arena);
    return (a >= dyn && a < dyn + DYNAMIC_SHARED_BYTES) || (a >= arena && a < arena + SHARED_ARENA_BYTES);
}
struct SharedVar { unsigned char* data; size_t bytes; const char* name; const char* file; int line; size_t window; };
inline SharedVar shared_vars[256];
// The block's shared-memory window as a GPU lays it out (what __cvta_generic_to_shared gives): the static arrays
// from 0, in the order the kernel first reaches them, each at its alignment, then the dynamic shared memory, 16-byte
// aligned, placed when an address in it is first converted (an array first reached after that goes after the
// launch's dynamic bytes)
inline size_t static_window = 0;
inline long long dynamic_window = -1;
// Each block of each launch in this process, numbered (the PTX runtime keeps state per block: its barriers, the
// copies and wgmma in flight), and what the PTX runtime checks when a block's threads have all finished
inline unsigned long long block_serial = 0;
inline unsigned long long oldest_live_block = 0;   // blocks numbered below it have ended (a cluster's blocks run at once)
inline void (*block_end_hook)() = nullptr;
inline unsigned shared_count = 0;
inline size_t shared_used = 0;
inline size_t shared_last_bytes = 0;               // the size of the array placed last (its gap after it)
inline bool in_child = false;
inline void* device_vars_out = nullptr;     // where the child leaves the __device__ variables (parent's buffer)
inline char shared_overflow[512] = "";

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

GL_NOSAN inline void* initial_sp(Fiber& f)
{
    // Each thread's stack starts at its own place in a page (64 bytes further down per thread, over a page):
    // with every top at the same page offset, the threads' hot frames all fell in the same few cache sets.
    uintptr_t top = (reinterpret_cast<uintptr_t>(f.stack) + g.stack_size - (f.linear % 64) * 64) & ~uintptr_t(15);
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

GL_NOSAN inline void switch_to(unsigned next)
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
    {   // the fiber after `next` is likely the next to run (round robin): start loading its stack top
        const unsigned after = next + 1 < g.n ? next + 1 : 0;
        const char* sp = static_cast<const char*>(g.fibers[after].sp);
        __builtin_prefetch(sp);
        __builtin_prefetch(sp + 64);
        __builtin_prefetch(sp + 128);
        __builtin_prefetch(sp + 192);
        __builtin_prefetch(&g.fibers[after + 1 < g.n ? after + 1 : 0]);
    }
    gl_emu_switch(&g.fibers[from].sp, g.fibers[next].sp);
    __asm__ volatile("" ::: "memory");
}

GL_NOSAN inline void return_to_main()
{
    __asm__ volatile("" ::: "memory");
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
}

// ---- errors ----------------------------------------------------------------------------------
// whether two waiting threads wait at the same place on the same thing (a PTX wait: the same barrier and phase)
GL_NOSAN inline bool same_wait(const Fiber& a, const Fiber& b)
{
    if (a.state != b.state || a.line != b.line || std::strcmp(a.file, b.file) != 0) return false;
    return (a.state != AT_MBARRIER && a.state != AT_NAMED) || (a.wait_on == b.wait_on && a.token == b.token);
}
GL_NOSAN inline int describe_threads(char* out, size_t room, State state, const char* file, int line, bool match_site,
                                     const Fiber* like = nullptr)
{
    unsigned count = 0, shown = 0;
    int used = 0;
    for (unsigned i = 0; i < g.n; ++i) {
        const Fiber& f = g.fibers[i];
        if (f.state != state) continue;
        if (match_site && (f.line != line || std::strcmp(f.file, file) != 0)) continue;
        if (like && !same_wait(f, *like)) continue;
        if (shown < 4 && used < (int)room - 40)
            used += std::snprintf(out + used, room - used, "%s(%u,%u,%u)", shown ? ", " : "", f.tid.x, f.tid.y, f.tid.z);
        ++shown;
        ++count;
    }
    if (count > 4 && used < (int)room - 40) used += std::snprintf(out + used, room - used, ", ... (%u threads)", count);
    return used;
}

[[noreturn]] GL_NOSAN inline void fail_with(const char* fmt_head)
{
    g.failed = true;
    if (g.status) {
        g.status->code = 1;
        std::snprintf(g.status->message, sizeof g.status->message, "%s", fmt_head);
    }
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
    __builtin_unreachable();
}

// A fault found when a block has finished (no thread to stop): the launch stops with the block named
GL_NOSAN inline void block_failed(const char* what)
{
    g.failed = true;
    if (g.status) {
        g.status->code = 1;
        std::snprintf(g.status->message, sizeof g.status->message, "kernel %s, block (%u,%u,%u): %s", g.kernel,
                      g.block_idx.x, g.block_idx.y, g.block_idx.z, what);
    }
}

// What a thread waiting in the PTX runtime waits for, in words (an mbarrier's phase, a named barrier): defined
// by gemmlab_ptx.h, which is the only code that puts a thread in those states.
GL_NOSAN inline int describe_ptx_wait(const Fiber& f, char* out, size_t size);

[[noreturn]] GL_NOSAN inline void divergence(const char* what)
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
            if (same_wait(g.fibers[j], f)) listed[j] = true;
        used += std::snprintf(msg + used, sizeof msg - used, "\n  threads ");
        used += describe_threads(msg + used, sizeof msg - used, f.state, f.file, f.line, true, &f);
        if (f.state == AT_MBARRIER || f.state == AT_NAMED) {   // (the PTX runtime's: gemmlab_ptx.h says which)
            used += std::snprintf(msg + used, sizeof msg - used, " wait at %s:%d on ", f.file, f.line);
            used += describe_ptx_wait(f, msg + used, sizeof msg - used);
            continue;
        }
        used += std::snprintf(msg + used, sizeof msg - used, " wait at %s (%s:%d)",
                              f.state == AT_BARRIER ? "__syncthreads()" : f.state == AT_GROUP ? "a group's sync()"
                              : f.state == AT_WAIT ? "a cuda::barrier" : f.state == AT_STEP ? "a lockstep access"
                              : WARP_OP_NAMES[f.op], f.file, f.line);
    }
    if (g.live < g.n && used < (int)sizeof msg - 300) {
        used += std::snprintf(msg + used, sizeof msg - used, "\n  threads ");
        used += describe_threads(msg + used, sizeof msg - used, EXITED, "", 0, false);
        used += std::snprintf(msg + used, sizeof msg - used, " have exited");
    }
    for (unsigned r = 0; r < cluster_blocks && used < (int)sizeof msg - 200; ++r) {   // (a cluster's other blocks)
        const ClusterBlock& b = cluster_block[r];
        if (r == cluster_rank_now || b.ended) continue;
        used += std::snprintf(msg + used, sizeof msg - used, "\n  and in block (%u,%u,%u), rank %u of its cluster, "
                              "%u threads wait", b.block_idx.x, b.block_idx.y, b.block_idx.z, r, b.live);
    }
    fail_with(msg);
}

// ---- scheduling ------------------------------------------------------------------------------
GL_NOSAN inline void run_next()
{
    unsigned i = g.cur;
    for (unsigned k = 1; k <= g.n; ++k) {
        if (++i == g.n) i = 0;                    // (not a %: a division at every switch costs a tenth of it)
        if (g.fibers[i].state == RUNNABLE) {
            if (i != g.cur) switch_to(i);
            return;
        }
    }
    if (cluster_blocks > 1 && cluster_switch()) return;     // another block of the cluster can go on
    if (g.live == 0 && (cluster_blocks == 1 || cluster_all_ended())) {
        return_to_main();
        __builtin_unreachable();
    }
    if (cluster_blocks == 1) divergence("deadlock: no thread can go on");
    cluster_show_stuck();                              // (a block of the cluster whose threads wait, in place)
    divergence("deadlock: no thread of the cluster can go on");
}

// coalesced_threads(): the lanes of a warp that reach the same call together. The emulator runs one thread
// at a time, so it waits until no lane of the warp can run on; then the lanes waiting at that call are the
// group (the others have exited, or wait elsewhere), as the GPU's active mask would have them.
inline unsigned pending_coalesce = 0;
GL_NOSAN inline void resolve_coalesce(unsigned base)
{
    if (!pending_coalesce) return;
    unsigned lanes = (g.n - base) < 32 ? g.n - base : 32;
    Fiber* warp = g.fibers + base;
    const Fiber* first = nullptr;
    for (unsigned l = 0; l < lanes; ++l) {
        if (warp[l].state == RUNNABLE) return;
        if (!first && warp[l].state == AT_WARP_OP && warp[l].op == OP_COALESCE) first = &warp[l];
    }
    if (!first) return;
    unsigned mask = 0;
    for (unsigned l = 0; l < lanes; ++l)
        if (warp[l].state == AT_WARP_OP && warp[l].op == OP_COALESCE && warp[l].line == first->line &&
            !std::strcmp(warp[l].file, first->file)) mask |= 1u << l;
    for (unsigned l = 0; l < lanes; ++l)
        if ((mask >> l) & 1u) { warp[l].result = mask; warp[l].state = RUNNABLE; --pending_coalesce; }
    ++g.warp_epoch[(base >> 5) & 31];
}

// Lockstep (GL_EMU_LOCKSTEP, a kernel that uses volatile memory): a lane stops before each of its volatile
// accesses until no lane of its warp can run on; then the stopped lanes go on together, lowest first, each
// to its next stop. So every lane of a warp makes one volatile access before any makes the next, as a
// converged warp's lanes do: pre-Volta warp-synchronous code (a volatile last-warp reduction, no
// __syncwarp) gets the GPU's answer. (racecheck still reports its hazards: lockstep is not a __syncwarp.)
inline unsigned pending_steps = 0;
GL_NOSAN inline unsigned resolve_step(unsigned base)
{
    if (!pending_steps) return 0;
    const unsigned lanes = (g.n - base) < 32 ? g.n - base : 32;
    Fiber* warp = g.fibers + base;
    unsigned mask = 0;
    for (unsigned l = 0; l < lanes; ++l) {
        if (warp[l].state == RUNNABLE) return 0;
        if (warp[l].state == AT_STEP) mask |= 1u << l;
    }
    for (unsigned l = 0; l < lanes; ++l)
        if ((mask >> l) & 1u) { warp[l].state = RUNNABLE; --pending_steps; }
    return mask;
}

// Where a lane stops (at a barrier, a warp operation, a wait, its end), the lanes of its warp that it
// held back may go on.
GL_NOSAN inline void resolve_warp(unsigned base)
{
    resolve_coalesce(base);
    resolve_step(base);
}

// With a predicate (0 or 1: __syncthreads_count/_and/_or), a barrier gives the number of threads whose predicate
// was 1 (low 32 bits) and how many arrived (high 32 bits); a plain __syncthreads() passes -1 and counts nothing.
inline bool barrier_counts = false;
// Every thread that waits at the barrier goes on (the last to arrive, or the exit that held it up, opens it).
GL_NOSAN inline void open_barrier()
{
    unsigned long long result = 0;
    if (barrier_counts) {                        // (only then: the plain barrier's release is the hot path)
        unsigned long long count = 0;
        for (unsigned i = 0; i < g.n; ++i) count += g.fibers[i].state == AT_BARRIER && g.fibers[i].value;
        result = count | (unsigned long long)g.at_barrier << 32;
        barrier_counts = false;
    }
    for (unsigned i = 0; i < g.n; ++i) {
        Fiber& f = g.fibers[i];
        if (f.state == AT_BARRIER) { f.result = result; f.state = RUNNABLE; }
    }
    g.at_barrier = 0;
    ++g.epoch;
}

GL_NOSAN inline void async_land(unsigned thread, unsigned long long below);
[[noreturn]] GL_NOSAN inline void fiber_main()
{
    g.body(g.args);
    Fiber& me = g.fibers[g.cur];
    async_land(me.linear, ~0ull);                      // (its copies still in flight land, as on a GPU, eventually)
    me.state = EXITED;
    --g.live;
    const unsigned base = me.linear & ~31u, lane = me.linear & 31u;
    for (unsigned l = 0; l < 32 && base + l < g.n; ++l) {
        const Fiber& f = g.fibers[base + l];
        if (f.state == AT_WARP_OP && f.op != OP_COALESCE && ((f.mask >> lane) & 1u)) exited_lane(f, lane);
    }
    // PTX's exit: a barrier that only exited threads hold up is released (the others go on, as on a GPU)
    if (g.at_barrier > 0 && g.at_barrier == g.live) open_barrier();
    if (thread_exit_hook) thread_exit_hook();
    resolve_warp(base);
    run_next();
    __builtin_unreachable();
}

GL_NOSAN __attribute__((noinline)) inline unsigned long long syncthreads(const char* file, int line, int predicate = -1)
{
    Fiber& me = g.fibers[g.cur];
    me.state = AT_BARRIER;
    me.file = file;
    me.line = line;
    if (predicate >= 0) {
        me.value = (unsigned long long)predicate;
        barrier_counts = true;
    } else {
        me.value = 0;
    }
    // The barrier counts arrivals, as bar.sync does: threads may arrive from different __syncthreads()
    // calls (one in each branch of an if, say); the barrier opens when every thread of the block that has not
    // exited is there (bar.sync waits for the non-exited threads; an exit releases a barrier: fiber_main).
    if (++g.at_barrier == g.live) {
        open_barrier();
        __asm__ volatile("" ::: "memory");
        return g.fibers[g.cur].result;           // the last to arrive goes on; the others follow in order
    }
    resolve_warp(me.linear & ~31u);
    run_next();
    return g.fibers[g.cur].result;
}

// __nanosleep: the thread lets the others run first (a spin-wait that sleeps lets the thread it waits for on).
GL_NOSAN __attribute__((noinline)) inline void yield()
{
    if (!in_child || !g.fibers) return;
    if (cluster_blocks > 1) {                          // the only thread of its block that can go on: another
        bool others = false;                           // block of the cluster takes a turn (it may be the one
        for (unsigned i = 0; i < g.n && !others; ++i)  // whose store this thread polls for)
            others = i != g.cur && g.fibers[i].state == RUNNABLE;
        if (!others && cluster_switch()) return;
    }
    run_next();
}

// The sync() of a group of `count` consecutive threads from `base` (a tile larger than a warp, a
// thread_group): every thread of the group must arrive; the rest of the block goes on meanwhile.
GL_NOSAN __attribute__((noinline)) inline void group_sync(unsigned base, unsigned count, const char* file, int line)
{
    Fiber& me = g.fibers[g.cur];
    me.state = AT_GROUP;
    me.arg = (int)base;
    me.file = file;
    me.line = line;
    const unsigned end = base + count < g.n ? base + count : g.n;
    bool all = true;
    for (unsigned i = base; i < end; ++i) {
        const Fiber& f = g.fibers[i];
        if (f.state == EXITED) divergence("barrier divergence: a thread of a group exited while others wait at its sync()");
        if (f.state != AT_GROUP || f.arg != (int)base) all = false;
    }
    if (all) {
        for (unsigned i = base; i < end; ++i) g.fibers[i].state = RUNNABLE;
        ++g.epoch;                               // racecheck: ordered (conservatively, for the whole block)
        return;
    }
    resolve_warp(me.linear & ~31u);
    run_next();
}

// Wait until *phase differs from token (a cuda::barrier's phase); wake_phase() lets the waiters go.
GL_NOSAN __attribute__((noinline)) inline void wait_phase(const volatile unsigned long long* phase,
                                                         unsigned long long token, const char* file, int line)
{
    while (*phase == token) {
        Fiber& me = g.fibers[g.cur];
        me.state = AT_WAIT;
        me.wait_on = (const void*)phase;
        me.token = token;
        me.file = file;
        me.line = line;
        resolve_warp(me.linear & ~31u);
        run_next();
    }
}

GL_NOSAN inline void wake_phase(const volatile unsigned long long* phase)
{
    ++g.epoch;
    for (unsigned i = 0; i < g.n; ++i)
        if (g.fibers[i].state == AT_WAIT && g.fibers[i].wait_on == (const void*)phase) g.fibers[i].state = RUNNABLE;
}

GL_NOSAN inline unsigned long long resolve_lane(const Fiber& f, unsigned lane_base, unsigned lane, const Fiber* warp, unsigned lanes)
{
    int w = f.width;
    unsigned seg = lane & ~unsigned(w - 1);
    unsigned src = lane;
    switch (f.op) {
        case OP_SHFL: src = seg + (unsigned(f.arg) & unsigned(w - 1)); break;
        case OP_SHFL_UP: src = (lane - seg) >= unsigned(f.arg) ? lane - f.arg : lane; break;
        case OP_SHFL_DOWN: src = (lane - seg) + unsigned(f.arg) < unsigned(w) ? lane + f.arg : lane; break;
        // xor may reach into an earlier segment of the warp, never a later one (then: its own value)
        case OP_SHFL_XOR: { unsigned s = lane ^ unsigned(f.arg); src = s < seg + w ? s : lane; break; }
        default: break;
    }
    (void)lane_base;
    if (src < lanes && !((f.mask >> src) & 1u)) {
        // a lane outside the mask (undefined in CUDA): one that is at this same shuffle now takes part, as the
        // lanes of a converged warp do whatever the mask says; an inactive lane's register reads as 0 (the H200's
        // answer in tests/test_cuda_forms.py's case)
        const Fiber& s = warp[src];
        const bool here = s.state == AT_WARP_OP && s.op == f.op && s.line == f.line && std::strcmp(s.file, f.file) == 0;
        return here ? s.value : 0;
    }
    if (src >= lanes || warp[src].state != AT_WARP_OP) src = lane;          // past the block's last thread
    return warp[src].value;
}

// __match_any_sync (the lanes with this lane's value), __match_all_sync (the mask if all values agree, else 0;
// bit 32: whether they agree) and __reduce_*_sync over the lanes of `mask`.
GL_NOSAN inline unsigned long long combine(const Fiber& f, const Fiber* warp, unsigned mask, unsigned lanes)
{
    unsigned same = 0, present = 0;
    for (unsigned l = 0; l < lanes; ++l) {
        if (!((mask >> l) & 1u)) continue;
        present |= 1u << l;
        if (warp[l].value == f.value) same |= 1u << l;
    }
    if (f.op == OP_MATCH_ANY) return same;
    if (f.op == OP_MATCH_ALL) return same == present ? (present | (1ull << 32)) : 0;
    const int kind = f.arg & 7;
    const bool is_signed = f.arg & RED_SIGNED;
    unsigned r = kind == RED_AND ? 0xffffffffu : 0;
    bool first = true;
    for (unsigned l = 0; l < lanes; ++l) {
        if (!((present >> l) & 1u)) continue;
        const unsigned v = (unsigned)warp[l].value;
        switch (kind) {
            case RED_ADD: r += v; break;
            case RED_AND: r &= v; break;
            case RED_OR: r |= v; break;
            case RED_XOR: r ^= v; break;
            default: {
                const bool less = is_signed ? (int)v < (int)r : v < r;
                if (first || (kind == RED_MIN ? less : (!less && v != r))) r = v;
            }
        }
        first = false;
    }
    return r;
}

[[noreturn]] GL_NOSAN inline void exited_lane(const Fiber& waiting, unsigned lane)
{
    const Fiber& gone = g.fibers[(waiting.linear & ~31u) + lane];
    char msg[512];
    std::snprintf(msg, sizeof msg, "%s at %s:%d in kernel %s, block (%u,%u,%u): lane %u is in the mask 0x%08x "
                  "but its thread (%u,%u,%u) has exited", WARP_OP_NAMES[waiting.op], waiting.file, waiting.line,
                  g.kernel, g.block_idx.x, g.block_idx.y, g.block_idx.z, lane, waiting.mask, gone.tid.x, gone.tid.y,
                  gone.tid.z);
    fail_with(msg);
}

GL_NOSAN __attribute__((noinline)) inline unsigned long long warp_op(int op, unsigned mask, unsigned long long value, int arg,
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
    if (op == OP_COALESCE) {
        ++pending_coalesce;
        resolve_warp(base);
        if (me.state != RUNNABLE) run_next();
        return g.fibers[g.cur].result;
    }
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
            else if (op == OP_MATCH_ANY || op == OP_MATCH_ALL || op == OP_REDUCE) f.result = combine(f, warp, mask, lanes);
            else f.result = resolve_lane(f, base, l, warp, lanes);
        }
        for (unsigned l = 0; l < lanes; ++l)
            if ((mask >> l) & 1u) warp[l].state = RUNNABLE;
        ++g.warp_epoch[(base >> 5) & 31];
        const unsigned long long mine = me.result;
        // The warps take turns at their warp operations: once this one's is done, the next warp that can run goes
        // on, as the warps of a block run side by side on a GPU; so a warp does not run on through its reductions
        // to overwrite a shared value before the other warps have read it (a race, which racecheck reports, that
        // practically never fires on a GPU). The lanes of this warp go on later, lowest first.
        for (unsigned k = 32, i = (base + 32) % g.n; k < g.n; ++k, i = i + 1 == g.n ? 0 : i + 1) {
            if (g.fibers[i].state == RUNNABLE && (i & ~31u) != base) { switch_to(i); return mine; }
        }
        // The lanes go on in lane order, lowest first, as a converged warp's do when its code reads
        // higher lanes' values (a tree reduction): a racy step then sees what it would see on a GPU.
        const unsigned present = mask & (lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u));
        if (present && base + (unsigned)__builtin_ctz(present) != g.cur) switch_to(base + (unsigned)__builtin_ctz(present));
        return mine;
    }
    resolve_warp(base);
    run_next();
    return g.fibers[g.cur].result;
}

// A lane's stop before a volatile access, or a load of global memory after its warp stored there (see
// resolve_step).
GL_NOSAN __attribute__((noinline)) inline void step(const char* what = "(a volatile access)")
{
    Fiber& me = g.fibers[g.cur];
    me.state = AT_STEP;
    me.file = what;
    me.line = 0;
    ++pending_steps;
    const unsigned base = me.linear & ~31u;
    resolve_coalesce(base);
    const unsigned released = resolve_step(base);
    if (!released) { run_next(); return; }
#if defined(GL_EMU_INTERLEAVE)
    // warps take turns, one access each (GEMMLAB_EMULATOR_INTERLEAVE=1): the next warp's first runnable lane goes
    // on, as the warps of a block run side by side on a GPU rather than one to its next barrier
    for (unsigned k = 32, i = (base + 32) % g.n; k < g.n + 32; ++k, i = i + 1 == g.n ? 0 : i + 1) {
        if ((i & ~31u) != base && g.fibers[i].state == RUNNABLE) { switch_to(i); return; }
    }
#endif
    const unsigned lowest = base + (unsigned)__builtin_ctz(released);
    if (lowest != g.cur) switch_to(lowest);
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


// ---- the memory check ------------------------------------------------------------------------
// With GL_EMU_MEMCHECK the compiler checks every load and store of the kernel against a shadow
// map (one byte per 8 bytes of memory, as AddressSanitizer keeps it): 0 means all 8 bytes may be
// touched, 1..7 that the first k may, a negative value that none may. The parent's copies of the
// array arguments, dynamic shared memory beyond the launch's shared_mem and the gaps between static
// __shared__ arrays are marked out of bounds, so an access one element past an argument (or before
// it) is caught before it happens, and named. Shadow pages are mapped on first touch by the fault
// handler, in the child only; memory that nobody marked reads as addressable.
constexpr uintptr_t SHADOW_OFFSET = 0x7fff8000;
constexpr uintptr_t SHADOW_LO = SHADOW_OFFSET;
constexpr uintptr_t SHADOW_HI = SHADOW_OFFSET + (uintptr_t(1) << 44);
constexpr signed char POISON = -6;

GL_NOSAN inline signed char* shadow_of(uintptr_t a) { return reinterpret_cast<signed char*>((a >> 3) + SHADOW_OFFSET); }

// Out of bounds: every granule that overlaps [lo, hi).
GL_NOSAN inline void poison(uintptr_t lo, uintptr_t hi)
{
#if defined(GL_EMU_MEMCHECK)
    if (hi <= lo) return;
    std::memset(shadow_of(lo & ~uintptr_t(7)), POISON, ((hi + 7) >> 3) - (lo >> 3));
#else
    (void)lo; (void)hi;
#endif
}

// Addressable: [lo, lo + n), lo a multiple of 8.
GL_NOSAN inline void unpoison(uintptr_t lo, size_t n)
{
#if defined(GL_EMU_MEMCHECK)
    std::memset(shadow_of(lo), 0, n >> 3);
    if (n & 7) *shadow_of(lo + (n & ~size_t(7))) = (signed char)(n & 7);
#else
    (void)lo; (void)n;
#endif
}

// Racecheck: shared memory is marked so that every access to it reaches race_access() (which checks
// its exact bounds itself); see the racecheck section below.
constexpr signed char TRACKED = -3;
constexpr signed char GLOBAL = -4;        // an array argument: every access is checked by global_access()
GL_NOSAN inline void track_global(uintptr_t lo, size_t n)
{
#if defined(GL_EMU_MEMCHECK)
    std::memset(shadow_of(lo), GLOBAL, (n + 7) >> 3);
#else
    (void)lo; (void)n;
#endif
}
// A module with inline PTX (gemmlab_ptx.h sets watch_shared): ordinary accesses to shared memory reach
// watched_access(), which remembers, for each 8 bytes, the thread that last stored to them and how many
// fence.proxy.async that thread had run by then, so that the asynchronous proxy (a TMA store, a wgmma) reading them
// before that thread's next such fence is named (see gemmlab_ptx.h)
constexpr signed char WATCHED = -2;
inline bool watch_shared = false;
constexpr size_t PROXY_GRANULES = (SHARED_ARENA_BYTES + DYNAMIC_SHARED_BYTES) / 8;
inline unsigned short proxy_writer[PROXY_GRANULES];     // the thread + 1; 0: none, or the copy engine
inline unsigned proxy_fence_at[PROXY_GRANULES];
inline unsigned proxy_fences[1024];                     // each thread's fence.proxy.async so far in its block
inline bool proxy_dirty = false;
GL_NOSAN inline long long proxy_granule(uintptr_t a)
{
    const uintptr_t arena = reinterpret_cast<uintptr_t>(shared_arena), dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
    if (a - arena < SHARED_ARENA_BYTES) return (long long)((a - arena) >> 3);
    if (a - dyn < DYNAMIC_SHARED_BYTES) return (long long)((SHARED_ARENA_BYTES + (a - dyn)) >> 3);
    return -1;
}
GL_NOSAN inline void unpoison_shared(uintptr_t lo, size_t n)
{
#if defined(GL_EMU_RACECHECK)
    std::memset(shadow_of(lo), TRACKED, (n + 7) >> 3);
#else
    if (watch_shared) std::memset(shadow_of(lo), WATCHED, (n + 7) >> 3);
    else unpoison(lo, n);
#endif
}

// Shadow memory is sparse and touched in scattered pages: transparent huge pages there only cost (a 2 MiB
// page zeroed, or compacted for, on a first touch; measured: some processes ran the tiled SGEMM 1.75x slower).
GL_NOSAN inline void no_huge_pages(void* at, size_t bytes)
{
#if defined(MADV_NOHUGEPAGE)
    madvise(at, bytes, MADV_NOHUGEPAGE);
#else
    (void)at; (void)bytes;
#endif
}

// The fault handler's helper: a first touch of a shadow page maps it (zeros: addressable).
GL_NOSAN inline bool map_shadow(uintptr_t a)
{
#if defined(GL_EMU_MEMCHECK) && defined(MAP_FIXED_NOREPLACE)
    if (a < SHADOW_LO || a >= SHADOW_HI) return false;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    // (plain loops here: an unoptimised build calls helpers, and the handler must call nothing instrumented)
    for (int k = 0; k < 2; ++k) {
        const uintptr_t chunk = k == 0 ? page * 16 : page;
        uintptr_t at = a & ~(chunk - 1);
        void* got = mmap(reinterpret_cast<void*>(at), chunk, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (got == reinterpret_cast<void*>(at)) { no_huge_pages(got, chunk); return true; }
        if (got != MAP_FAILED) munmap(got, chunk);
    }
    return false;
#else
    (void)a;
    return false;
#endif
}

// Map the shadow of [lo, hi) in one call (cheaper than a fault a page); what is mapped already stays.
GL_NOSAN inline void ensure_shadow(uintptr_t lo, uintptr_t hi)
{
#if defined(GL_EMU_MEMCHECK) && defined(MAP_FIXED_NOREPLACE)
    if (hi <= lo) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = reinterpret_cast<uintptr_t>(shadow_of(lo)) & ~(page - 1);
    uintptr_t b = (reinterpret_cast<uintptr_t>(shadow_of(hi - 1)) + page) & ~(page - 1);
    void* got = mmap(reinterpret_cast<void*>(a), b - a, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got != MAP_FAILED && got != reinterpret_cast<void*>(a)) munmap(got, b - a);
    else if (got != MAP_FAILED) no_huge_pages(got, b - a);
#else
    (void)lo; (void)hi;
#endif
}

// ---- the device heap ------------------------------------------------------------------------------
// malloc() and free(), new and delete in a kernel take their memory from one heap that outlives a launch, as a
// GPU's heap outlives its kernels: an object one launch makes with new, a later launch (of any module) may use
// and delete. The heap is a MAP_SHARED region the Python process maps (launch.py) with its size, 8 MiB as CUDA's
// default (cudaLimitMallocHeapSize); its bookkeeping lives in the region itself: blocks of [size, state] headers,
// found next-fit, split and merged, behind a lock (the pid of its holder: a holder that died is replaced). A
// request that does not fit gets a null pointer, as on a GPU. Every header is checked as it is walked: a header
// that a kernel overwrote (a write past or before a block) stops the launch and clears the heap. A module whose
// source allocates runs its blocks in one process (GL_EMU_HEAP_USER), so that its addresses, and which request
// finds the heap full, are the same every run. On Linux the library is linked with --wrap=malloc, --wrap=calloc
// and --wrap=free, so the kernel's calls come here (GCC may turn malloc + memset into calloc); outside a launch
// (a host object's constructor in the kernel's file, run when the library loads) they go to the C library. With
// the memory check, every header, the slack after each block's data and every free byte below the highest block
// given out are out of bounds, in each process from its first sight of the heap: an access past a block, before
// it, or into a freed one stops with an error that names the block.
struct HeapHead {
    unsigned long long magic;          // HEAP_MAGIC once the first allocation has laid out the region
    int lock;                          // the pid of the process that holds the heap, 0 when free
    int pad;
    unsigned long long rover;          // where the next search starts: an offset from the region's start
    unsigned long long used;           // bytes in blocks that are in use, headers included
    unsigned long long high;           // the end of the highest block ever given out
};
struct HeapBlock {                     // a block's header; its data follows, 16-byte aligned
    unsigned long long size;           // of the whole block, header included: a multiple of 16, at least 32
    unsigned long long state;          // HEAP_USED | the bytes asked for, or HEAP_FREE
};
constexpr unsigned long long HEAP_MAGIC = 0x676c2d68656170ull, HEAP_FREE = 0, HEAP_USED = 1ull << 63;
constexpr unsigned long long HEAP_FIRST = (sizeof(HeapHead) + 15) / 16 * 16, HEAP_MIN_BLOCK = 32;
inline char* heap_base = nullptr;
inline unsigned long long heap_bytes = 0;
inline bool heap_marked = false;       // this process has marked the heap's bounds for the memory check

[[noreturn]] GL_NOSAN inline void kernel_stopped(const char* what);

GL_NOSAN inline HeapHead* heap_head() { return reinterpret_cast<HeapHead*>(heap_base); }
GL_NOSAN inline HeapBlock* heap_block(unsigned long long off) { return reinterpret_cast<HeapBlock*>(heap_base + off); }
GL_NOSAN inline unsigned long long heap_end() { return (heap_bytes - HEAP_FIRST) / 16 * 16 + HEAP_FIRST; }
GL_NOSAN inline bool in_heap(uintptr_t a)
{ return heap_base && a >= reinterpret_cast<uintptr_t>(heap_base) && a < reinterpret_cast<uintptr_t>(heap_base) + heap_bytes; }
GL_NOSAN inline unsigned long long heap_asked(const HeapBlock* b) { return b->state & ~HEAP_USED; }

// Whether the header at off is one the allocator wrote: a sane size that stays inside the heap, a sane state.
GL_NOSAN inline bool heap_header_ok(unsigned long long off)
{
    if (off < HEAP_FIRST || off % 16 || off + HEAP_MIN_BLOCK > heap_end()) return false;
    const HeapBlock* b = heap_block(off);
    if (b->size < HEAP_MIN_BLOCK || b->size % 16 || b->size > heap_end() - off) return false;
    if (b->state == HEAP_FREE) return true;
    return (b->state & HEAP_USED) && heap_asked(b) >= 1 && heap_asked(b) + sizeof(HeapBlock) <= b->size;
}

GL_NOSAN inline void heap_lock()
{
    HeapHead* h = heap_head();
    const int me = (int)getpid();
    for (unsigned spins = 0;; ++spins) {
        int holder = 0;
        if (__atomic_compare_exchange_n(&h->lock, &holder, me, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
        if (holder == me) return;          // (no thread of this process can switch while it holds the heap)
        if (spins % 1024 == 1023 && kill(holder, 0) != 0 && errno == ESRCH)    // its holder died in there
            __atomic_compare_exchange_n(&h->lock, &holder, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        sched_yield();
    }
}
GL_NOSAN inline void heap_unlock() { __atomic_store_n(&heap_head()->lock, 0, __ATOMIC_RELEASE); }

GL_NOSAN inline void heap_layout()                  // (under the lock) lays the region out: one free block
{
    HeapHead* h = heap_head();
    if (h->magic == HEAP_MAGIC) return;
    HeapBlock* all = heap_block(HEAP_FIRST);
    all->size = heap_end() - HEAP_FIRST;
    all->state = HEAP_FREE;
    h->rover = HEAP_FIRST;
    h->used = 0;
    h->high = HEAP_FIRST;
    h->magic = HEAP_MAGIC;
}

// (under the lock) A header that a kernel overwrote: the heap is cleared (every object on it is gone), and the
// message says where and what that means.
GL_NOSAN inline void heap_corrupt(unsigned long long off, char* out, size_t size)
{
    heap_head()->magic = 0;
    std::snprintf(out, size, "the device heap's bookkeeping at byte %llu is overwritten (a write past the end or "
                  "before the start of a block from malloc or new, in this launch or an earlier one); the heap "
                  "has been cleared, and every object on it is gone", off);
}

// The memory check's view of a block: its header and the slack after its data out of bounds, its data (as many
// bytes as were asked for) addressable where the block is in use; the whole of a free block out of bounds (up to
// the highest block ever given out: above it no kernel has a pointer).
GL_NOSAN inline void heap_mark(unsigned long long off)
{
#if defined(GL_EMU_MEMCHECK)
    if (!in_child || !heap_marked) return;
    HeapBlock* b = heap_block(off);
    const uintptr_t at = reinterpret_cast<uintptr_t>(b);
    if (b->state == HEAP_FREE) {
        const unsigned long long top = heap_head()->high > off + sizeof(HeapBlock) ? heap_head()->high : off + sizeof(HeapBlock);
        poison(at, reinterpret_cast<uintptr_t>(heap_base) + (off + b->size < top ? off + b->size : top));
    } else {
        poison(at, at + b->size);
        unpoison(at + sizeof(HeapBlock), heap_asked(b));
    }
#else
    (void)off;
#endif
}

// (under the lock) This process's first sight of the heap: every block marked for the memory check. Returns
// false (and the message in out) where a header is not one the allocator wrote.
GL_NOSAN inline bool heap_mark_all(char* out, size_t size)
{
#if defined(GL_EMU_MEMCHECK)
    if (heap_marked || !in_child) return true;
    ensure_shadow(reinterpret_cast<uintptr_t>(heap_base), reinterpret_cast<uintptr_t>(heap_base) + heap_bytes);
    heap_marked = true;
    for (unsigned long long off = HEAP_FIRST; off < heap_end() && off < heap_head()->high + sizeof(HeapBlock);
         off += heap_block(off)->size) {
        if (!heap_header_ok(off)) {
            heap_corrupt(off, out, size);
            return false;
        }
        heap_mark(off);
    }
#else
    (void)out; (void)size;
#endif
    return true;
}

GL_NOSAN inline void* heap_alloc(size_t n, size_t align = 16)
{
    if (!heap_base) return nullptr;
    if (n == 0) n = 1;                                 // a pointer of its own, as malloc(0) may give
    if (align < 16) align = 16;
    if ((align & (align - 1)) || n > heap_bytes || align > heap_bytes) return nullptr;
    char why[512];
    heap_lock();
    heap_layout();
    HeapHead* h = heap_head();
    if (!heap_mark_all(why, sizeof why)) {
        heap_unlock();
        kernel_stopped(why);
    }
    const unsigned long long end = heap_end(), take = (n + sizeof(HeapBlock) + 15) / 16 * 16;
    unsigned long long off = h->rover < end && heap_header_ok(h->rover) ? h->rover : HEAP_FIRST, seen = 0;
    void* got = nullptr;
    while (seen < end - HEAP_FIRST) {                  // once round the heap, from the rover
        if (!heap_header_ok(off)) {
            heap_corrupt(off, why, sizeof why);
            heap_unlock();
            kernel_stopped(why);
        }
        HeapBlock* b = heap_block(off);
        if (b->state == HEAP_FREE) {
            while (off + b->size < end && heap_block(off + b->size)->state == HEAP_FREE) {   // merge what follows
                if (!heap_header_ok(off + b->size)) {
                    heap_corrupt(off + b->size, why, sizeof why);
                    heap_unlock();
                    kernel_stopped(why);
                }
                b->size += heap_block(off + b->size)->size;
            }
            if (h->rover > off && h->rover < off + b->size) h->rover = off;
            // a free block in front keeps the data aligned: at least a block's minimum, a multiple of 16
            const unsigned long long data = off + sizeof(HeapBlock);
            unsigned long long front = (align - data % align) % align;
            while (front && front < HEAP_MIN_BLOCK) front += align;
            if (b->size >= front + take) {
                if (front) {
                    HeapBlock* a = heap_block(off + front);
                    a->size = b->size - front;
                    a->state = HEAP_FREE;
                    b->size = front;
                    heap_mark(off);
                    off += front;
                    b = a;
                }
                if (b->size - take >= HEAP_MIN_BLOCK) {          // the rest stays a free block
                    HeapBlock* rest = heap_block(off + take);
                    rest->size = b->size - take;
                    rest->state = HEAP_FREE;
                    b->size = take;
                }
                b->state = HEAP_USED | n;
                h->used += b->size;
                if (off + b->size > h->high) h->high = off + b->size;
                if (off + b->size < end) heap_mark(off + b->size);
                heap_mark(off);
                h->rover = off + b->size < end ? off + b->size : HEAP_FIRST;
                got = b + 1;
                break;
            }
        }
        seen += b->size;
        off += b->size;
        if (off >= end) off = HEAP_FIRST;
    }
    heap_unlock();
    return got;
}

GL_NOSAN inline void heap_free(void* p)
{
    if (!p) return;
    char why[512];
    heap_lock();
    HeapHead* h = heap_head();
    const unsigned long long off = static_cast<char*>(p) - heap_base - sizeof(HeapBlock);
    if (h->magic != HEAP_MAGIC) {
        heap_unlock();
        kernel_stopped("free or delete of a pointer into the device heap after the heap was cleared");
    }
    if (!heap_mark_all(why, sizeof why)) {
        heap_unlock();
        kernel_stopped(why);
    }
    if (!heap_header_ok(off) || heap_block(off)->state == HEAP_FREE) {
        // which it is: a block's start (whose header a kernel overwrote, or a block freed already), or not
        unsigned long long at = HEAP_FIRST;
        while (at < off && heap_header_ok(at)) at += heap_block(at)->size;
        if (at < heap_end() && !heap_header_ok(at) && at <= off)
            heap_corrupt(at, why, sizeof why);
        else if (at == off)
            std::snprintf(why, sizeof why, "free or delete of a block of the device heap that is free already (freed "
                          "twice?)");
        else
            std::snprintf(why, sizeof why, "free or delete of a pointer that malloc or new did not give (byte %llu "
                          "of the device heap is not the start of a block)", off + sizeof(HeapBlock));
        heap_unlock();
        kernel_stopped(why);
    }
    HeapBlock* b = heap_block(off);
    h->used -= b->size;
    b->state = HEAP_FREE;
    heap_mark(off);
    heap_unlock();
}

// A launch's start, in its child: where the heap is laid out already, the memory check sees its bounds from the
// first access. Returns false (the message in out) where a header is overwritten.
GL_NOSAN inline bool heap_bounds(char* out, size_t size)
{
#if defined(GL_EMU_MEMCHECK)
    if (!heap_base || heap_head()->magic != HEAP_MAGIC) return true;
    heap_lock();
    const bool ok = heap_head()->magic != HEAP_MAGIC || heap_mark_all(out, size);
    heap_unlock();
    return ok;
#else
    (void)out; (void)size;
    return true;
#endif
}

// What an access at a that the memory check stopped did to the heap, in words (false: not in the heap).
GL_NOSAN inline bool heap_describe(uintptr_t a, size_t n, const char* what, char* out, size_t size)
{
    if (!in_heap(a) || heap_head()->magic != HEAP_MAGIC) return false;
    const unsigned long long at = a - reinterpret_cast<uintptr_t>(heap_base);
    unsigned long long prev = 0, off = HEAP_FIRST;
    bool ok = heap_header_ok(off);
    while (ok && off + heap_block(off)->size <= at) {
        prev = off;
        off += heap_block(off)->size;
        ok = heap_header_ok(off);
    }
    if (!ok) {
        std::snprintf(out, size, "%s %zu bytes of the device heap, whose bookkeeping near byte %llu is overwritten",
                      what, n, off);
        return true;
    }
    const HeapBlock* b = heap_block(off);
    const unsigned long long data = off + sizeof(HeapBlock);
    const bool used = b->state & HEAP_USED, prev_used = prev && (heap_block(prev)->state & HEAP_USED);
    if (at >= data && used) {                          // in the block's slack, past what was asked for
        std::snprintf(out, size, "%s %zu bytes at byte %llu of a %llu-byte block of the device heap (malloc or "
                      "new): %llu bytes past its end", what, n, at - data, heap_asked(b), at + n - data - heap_asked(b));
    } else if (at < data && prev_used) {               // in a header: past the end of the block before it
        const unsigned long long pdata = prev + sizeof(HeapBlock), asked = heap_asked(heap_block(prev));
        std::snprintf(out, size, "%s %zu bytes at byte %llu of a %llu-byte block of the device heap (malloc or "
                      "new): %llu bytes past its end", what, n, at - pdata, asked, at + n - pdata - asked);
    } else if (at < data && used) {
        std::snprintf(out, size, "%s %zu bytes %llu bytes before the start of a %llu-byte block of the device heap "
                      "(malloc or new)", what, n, data - at, heap_asked(b));
    } else if (at >= data) {
        std::snprintf(out, size, "%s %zu bytes of the device heap that no block holds (a block freed with free or "
                      "delete, or never given out)", what, n);
    } else {
        std::snprintf(out, size, "%s %zu bytes of the device heap's own bookkeeping", what, n);
    }
    return true;
}

}  // namespace gl_emu

// The kernel's malloc, calloc and free (on Linux, where the library is linked with --wrap; elsewhere they are the
// C library's, and an object one launch makes with them is gone in the next).
#if defined(__linux__)
extern "C" void* __real_malloc(size_t);
extern "C" void* __real_calloc(size_t, size_t);
extern "C" void __real_free(void*);
extern "C" GL_NOSAN void* __wrap_malloc(size_t n)
{ return ::gl_emu::in_child ? ::gl_emu::heap_alloc(n) : __real_malloc(n); }
extern "C" GL_NOSAN void* __wrap_calloc(size_t count, size_t each)
{
    if (!::gl_emu::in_child) return __real_calloc(count, each);
    if (each && count > (size_t)-1 / each) return nullptr;
    void* p = ::gl_emu::heap_alloc(count * each);
    if (p) std::memset(p, 0, count * each);             // (the runtime is not instrumented: no check here)
    return p;
}
extern "C" GL_NOSAN void __wrap_free(void* p)
{
    if (::gl_emu::in_heap(reinterpret_cast<uintptr_t>(p))) ::gl_emu::heap_free(p);
    else __real_free(p);
}
#endif
// CUDA's aligned allocation for device code: align a power of two
GL_NOSAN inline void* __nv_aligned_device_malloc(size_t n, size_t align)
{
    if (::gl_emu::in_child) return ::gl_emu::heap_alloc(n, align);
    return std::aligned_alloc(align < 16 ? 16 : align, (n + align - 1) / align * align);
}

// new and delete in a kernel: the same heap, and a null pointer where it is full (device code has no exceptions;
// the library is built with -fcheck-new where the compiler has it, so that it does not take new's result to be
// non-null). The library is linked with a version script that keeps these operators to itself (build.py), so
// that an allocator another library puts in the global scope (a preloaded one, or torch's libstdc++) cannot take
// a kernel's new.
GL_NOSAN inline void* gl_emu_new(size_t n, size_t align, bool nothrow)
{
    if (::gl_emu::in_child) return ::gl_emu::heap_alloc(n, align);
    void* p = align > 16 ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n ? n : 1);
    if (!p && !nothrow) std::abort();                  // a host object's allocation, outside a launch
    return p;
}
GL_NOSAN inline void gl_emu_delete(void* p)
{
    if (::gl_emu::in_heap(reinterpret_cast<uintptr_t>(p))) ::gl_emu::heap_free(p);
    else std::free(p);
}
void* operator new(size_t n) { return gl_emu_new(n, 16, false); }
void* operator new[](size_t n) { return gl_emu_new(n, 16, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return gl_emu_new(n, 16, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return gl_emu_new(n, 16, true); }
void* operator new(size_t n, std::align_val_t a) { return gl_emu_new(n, (size_t)a, false); }
void* operator new[](size_t n, std::align_val_t a) { return gl_emu_new(n, (size_t)a, false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return gl_emu_new(n, (size_t)a, true); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return gl_emu_new(n, (size_t)a, true); }
void operator delete(void* p) noexcept { gl_emu_delete(p); }
void operator delete[](void* p) noexcept { gl_emu_delete(p); }
void operator delete(void* p, size_t) noexcept { gl_emu_delete(p); }
void operator delete[](void* p, size_t) noexcept { gl_emu_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { gl_emu_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { gl_emu_delete(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { gl_emu_delete(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { gl_emu_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { gl_emu_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { gl_emu_delete(p); }

// The heap every launch of this library uses (launch.py maps it and gives it to each library before a launch).
GL_EXPORT GL_NOSAN void gl_emu_set_heap(void* base, unsigned long long bytes)
{
    ::gl_emu::heap_base = static_cast<char*>(base);
    ::gl_emu::heap_bytes = bytes;
}

namespace gl_emu {


// This kernel library's load address: code offsets from it are what addr2line reads in the library.
GL_NOSAN inline uintptr_t library_base()
{
    static uintptr_t base = 0;
    if (!base) {
        Dl_info info;
        base = dladdr(reinterpret_cast<void*>(&library_base), &info) && info.dli_fbase
            ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 1;
    }
    return base;
}

// The offset of a code address in this library (0 when it lies elsewhere, in libc say).
GL_NOSAN inline unsigned long long code_offset(const void* pc)
{
    Dl_info info;
    if (pc && dladdr(pc, &info) && reinterpret_cast<uintptr_t>(info.dli_fbase) == library_base())
        return reinterpret_cast<uintptr_t>(pc) - library_base();
    return 0;
}

// A local array's bounds (the memory check): with its stack instrumented (asan-stack), each function's frame
// starts with a magic word and the address of a description, "count offset size length name:line ...", of its
// arrays; the frame of an address on a thread's stack is the nearest one below it.
GL_NOSAN inline bool local_array(uintptr_t a, size_t n, const char* what, char* out, size_t size)
{
    if (!g.fibers || g.cur >= g.n) return false;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(g.fibers[g.cur].stack), hi = lo + g.stack_size;
    if (a < lo || a >= hi) return false;
    for (uintptr_t p = a & ~uintptr_t(7); p >= lo + 8 && p + 24 <= hi; p -= 8) {
        if (*reinterpret_cast<const unsigned long long*>(p) != 0x41B58AB3ull) continue;
        const char* desc = *reinterpret_cast<const char* const*>(p + 8);
        Dl_info info;
        if (!desc || !dladdr(desc, &info)) continue;                      // a value that only looks like one
        char* end = nullptr;
        long count = std::strtol(desc, &end, 10);
        const char* best = nullptr;
        long best_off = 0, best_size = 0, best_len = 0;
        unsigned long long best_distance = ~0ull;
        for (long i = 0; i < count && end && *end; ++i) {
            const long off = std::strtol(end, &end, 10), bytes = std::strtol(end, &end, 10);
            const long len = std::strtol(end, &end, 10);
            while (*end == ' ') ++end;
            const char* name = end;
            for (long k = 0; k < len && *end; ++k) ++end;
            const uintptr_t vlo = p + off, vhi = vlo + bytes;
            const unsigned long long d = a < vlo ? vlo - a : (a >= vhi ? a - vhi : 0);
            if (d < best_distance) { best = name; best_off = off; best_size = bytes; best_len = len; best_distance = d; }
        }
        if (!best) return false;
        int name_len = 0;                                              // the name without its ":line"
        while (name_len < best_len && best[name_len] != ':') ++name_len;
        const char* line = name_len < best_len ? best + name_len + 1 : "";
        const int line_len = name_len < best_len ? (int)(best_len - name_len - 1) : 0;
        const long long at = (long long)a - (long long)(p + best_off);
        char side[64];
        if (at < 0) std::snprintf(side, sizeof side, "%lld bytes before its start", -at);
        else std::snprintf(side, sizeof side, "%lld bytes past its end", at + (long long)n - best_size);
        std::snprintf(out, size, "%s %zu bytes at byte offset %lld of the thread's local array '%.*s' (%ld bytes%s%.*s): %s",
                      what, n, at, name_len, best, best_size, line_len ? ", declared at line " : "", line_len, line, side);
        return true;
    }
    return false;
}

[[noreturn]] GL_NOSAN inline void out_of_bounds(uintptr_t a, size_t n, bool write, const void* pc)
{
    g.failed = true;
    Status* st = g.status;
    if (st) {
        st->code = 4;
        st->fault_address = a;
        st->access_size = n;
        st->access_write = write;
        st->pc = code_offset(pc);
        const char* what = write ? "writes" : "reads";
        const uintptr_t dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
        const uintptr_t arena = reinterpret_cast<uintptr_t>(shared_arena);
        if (local_array(a, n, what, st->message, sizeof st->message)) {
            st->in_shared = 1;
        } else if (heap_describe(a, n, what, st->message, sizeof st->message)) {
            st->in_shared = 1;            // (the message is complete: no argument to name)
        } else if (a >= dyn - SHARED_GUARD && a < dyn + DYNAMIC_SHARED_BYTES + SHARED_GUARD) {
            st->in_shared = 1;
            const long long off = (long long)a - (long long)dyn;
            if (off < 0)
                std::snprintf(st->message, sizeof st->message, "%s %zu bytes of dynamic shared memory at byte offset "
                              "%lld: %lld bytes before its start (extern __shared__ arrays hold the launch's "
                              "shared_mem = %llu bytes, from offset 0)", what, n, off, -off, dynamic_shared_given);
            else
                std::snprintf(st->message, sizeof st->message, "%s %zu bytes of dynamic shared memory at byte offset "
                              "%lld, but the launch gave shared_mem = %llu bytes (extern __shared__ arrays hold "
                              "exactly what the launch asks for)", what, n, off, dynamic_shared_given);
        } else if (a >= arena - SHARED_GUARD && a < arena + SHARED_ARENA_BYTES) {
            st->in_shared = 1;
            const SharedVar* best = nullptr;
            unsigned long long best_distance = ~0ull;
            for (unsigned i = 0; i < shared_count; ++i) {
                const SharedVar& v = shared_vars[i];
                const uintptr_t lo = reinterpret_cast<uintptr_t>(v.data), hi = lo + v.bytes;
                unsigned long long d = a < lo ? lo - a : (a >= hi ? a - hi : 0);
                if (d < best_distance) { best = &v; best_distance = d; }
            }
            if (best) {
                long long off = (long long)a - (long long)reinterpret_cast<uintptr_t>(best->data);
                long long past = off + (long long)n - (long long)best->bytes;
                char side[64];
                if (off < 0) std::snprintf(side, sizeof side, "%lld bytes before its start", -off);
                else std::snprintf(side, sizeof side, "%lld bytes past its end", past);
                std::snprintf(st->message, sizeof st->message, "%s %zu bytes at byte offset %lld of the __shared__ "
                              "array '%s' (%zu bytes, declared at %s:%d): %s", what, n, off, best->name, best->bytes,
                              best->file, best->line, side);
            } else {
                std::snprintf(st->message, sizeof st->message, "%s %zu bytes of static shared memory outside "
                              "every __shared__ array", what, n);
            }
        }
    }
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
    __builtin_unreachable();
}


// ---- racecheck (GL_EMU_RACECHECK) --------------------------------------------------------------
// Every access to shared memory is recorded per 4-byte word: the last writer and up to two readers, each
// with the barrier generation (g.epoch) and its warp's __syncwarp generation at the time. Two accesses by
// different threads, at least one a write, with no __syncthreads() between them (and no __syncwarp()
// when both threads are in one warp) are a hazard, as compute-sanitizer's racecheck reports them:
// read-after-write, write-after-read, write-after-write. The launch runs on; the hazards are reported.
// As compute-sanitizer does, a write after a write is a hazard only when it changes the word: threads that
// store the value it already holds (every thread setting a flag to 1) race harmlessly (a read and a write race
// whatever the values). The check comes before its store, so a write-after-write waits (pending) until the
// store is made: the next recorded access, or the block's end.
#if defined(GL_EMU_RACECHECK)
// Each access keeps the bytes of the word it touched (mask): threads that write their own bytes of one word
// (the two halves of a __half2's word, a char each) do not race. A word keeps up to four writers (of
// disjoint bytes: a later write takes its bytes from the earlier ones) and two readers.
struct Access { unsigned long long epoch, warp_epoch, pc; unsigned thread; unsigned char mask; };
struct WordState { Access writer[4], reader[2]; };
constexpr size_t ARENA_WORDS = SHARED_ARENA_BYTES / 4, DYNAMIC_WORDS = DYNAMIC_SHARED_BYTES / 4;
inline WordState* race_table = nullptr;

GL_NOSAN inline bool concurrent(const Access& a, unsigned me)
{
    if (a.epoch != g.epoch || a.thread == me) return false;
    if ((a.thread >> 5) == (me >> 5) && a.warp_epoch != g.warp_epoch[(me >> 5) & 31]) return false;
    return true;
}

GL_NOSAN inline void hazard(int kind, const Access& first, unsigned long long pc, uintptr_t a, unsigned n,
                            unsigned second = ~0u)
{
    if (second == ~0u) second = g.cur;
    Status* st = g.status;
    if (!st) return;
    ++st->hazard_count;
    for (unsigned i = 0; i < st->hazards_kept; ++i)
        if (st->hazards[i].kind == kind && st->hazards[i].pc_first == first.pc && st->hazards[i].pc_second == pc)
            return;                                  // the same pair of lines: kept once
    if (st->hazards_kept >= sizeof st->hazards / sizeof st->hazards[0]) return;
    Status::Hazard& h = st->hazards[st->hazards_kept++];
    h.kind = kind;
    h.block[0] = g.block_idx.x; h.block[1] = g.block_idx.y; h.block[2] = g.block_idx.z;
    const dim3 t1 = g.fibers[first.thread].tid, t2 = g.fibers[second].tid;
    h.first[0] = t1.x; h.first[1] = t1.y; h.first[2] = t1.z;
    h.second[0] = t2.x; h.second[1] = t2.y; h.second[2] = t2.z;
    h.pc_first = first.pc;
    h.pc_second = pc;
    h.bytes = n;
    const uintptr_t dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
    if (a >= dyn && a < dyn + DYNAMIC_SHARED_BYTES) {
        h.offset = (long long)(a - dyn);
        std::snprintf(h.array, sizeof h.array, "dynamic shared memory");
        return;
    }
    for (unsigned i = 0; i < shared_count; ++i) {
        const uintptr_t lo = reinterpret_cast<uintptr_t>(shared_vars[i].data);
        if (a >= lo && a < lo + shared_vars[i].bytes) {
            h.offset = (long long)(a - lo);
            std::snprintf(h.array, sizeof h.array, "%s", shared_vars[i].name);
            return;
        }
    }
    for (unsigned i = 0; i < g.region_count; ++i)
        if (a >= g.regions[i].data && a < g.regions[i].data + g.regions[i].bytes) {
            h.offset = (long long)a;                 // (the launcher names the argument and the byte in it)
            std::snprintf(h.array, sizeof h.array, "global memory");
            return;
        }
    h.offset = 0;
    std::snprintf(h.array, sizeof h.array, "shared memory");
}

// The access the running thread makes now, from the code at ret (the kernel's: no dladdr per access).
GL_NOSAN inline Access access_now(const void* ret)
{
    const unsigned me = g.cur;
    const uintptr_t base = library_base();
    const unsigned long long pc = base > 1 ? reinterpret_cast<uintptr_t>(ret) - base : 0;
    return Access{g.epoch, g.warp_epoch[(me >> 5) & 31], pc, me, 0xf};
}

// The last write recorded, until its store is made: per word, its value before, and the earlier write it is a
// hazard with if the store changes the word.
inline unsigned long long global_block = 0;          // g.epoch at the start of the running block
struct PendingWord { const unsigned* word; unsigned before; Access waw; };
constexpr unsigned PENDING_WORDS = 8;           // a 32-byte store; a wider access is judged at once
inline PendingWord pending_words[PENDING_WORDS];
inline unsigned pending_count = 0;
struct PendingWrite { unsigned long long pc; uintptr_t a; unsigned n, thread; };
inline PendingWrite pending_write;

GL_NOSAN inline void resolve_pending()
{
    for (unsigned i = 0; i < pending_count; ++i) {
        PendingWord& p = pending_words[i];
        if (*p.word != p.before)
            hazard(3, p.waw, pending_write.pc, pending_write.a, pending_write.n, pending_write.thread);
    }
    pending_count = 0;
}

// One access to a recorded word: a hazard with each earlier access it is concurrent with (WITHIN_WARP: only those
// of another lane of the same warp), then the access kept as the word's writer or one of its two readers.
template <bool WITHIN_WARP>
GL_NOSAN inline bool races(const Access& x, unsigned me)
{
    return concurrent(x, me) && (!WITHIN_WARP || (x.thread >> 5) == (me >> 5));
}

// `word`: the word's memory, whose value decides whether a write is a hazard (deferred: see resolve_pending);
// `defer`: false for an access too wide to wait, whose write-after-write is judged at once, whatever it stores.
template <bool WITHIN_WARP>
GL_NOSAN inline void record_word(WordState& s, const Access& access, bool write, uintptr_t a, size_t n,
                                 const unsigned* word, bool defer)
{
    const unsigned me = access.thread;
    Access now = access;
    const uintptr_t at = reinterpret_cast<uintptr_t>(word);
    now.mask = 0;
    for (unsigned b = 0; b < 4; ++b)
        if (at + b >= a && at + b < a + n) now.mask |= (unsigned char)(1u << b);
    if (write) {
        bool waw = false, war = false;
        for (Access& w : s.writer)
            if (w.mask & now.mask) {
                if (!waw && races<WITHIN_WARP>(w, me)) {
                    if (!defer) hazard(3, w, now.pc, a, (unsigned)n);
                    else if (pending_count < PENDING_WORDS) pending_words[pending_count++] = PendingWord{word, *word, w};
                    waw = true;
                }
                w.mask &= (unsigned char)~now.mask;          // (these bytes are this write's now)
            }
        for (Access& r : s.reader)
            if (r.mask & now.mask) {
                if (!war && races<WITHIN_WARP>(r, me)) { hazard(2, r, now.pc, a, (unsigned)n); war = true; }
                r.mask &= (unsigned char)~now.mask;
            }
        for (Access& w : s.writer)                      // (at most three hold other bytes: one is free)
            if (!w.mask) { w = now; break; }
    } else {
        for (const Access& w : s.writer)
            if ((w.mask & now.mask) && races<WITHIN_WARP>(w, me)) {
                hazard(1, w, now.pc, a, (unsigned)n);
                break;
            }
        Access* slot = nullptr;
        for (Access& r : s.reader)
            if (r.mask && r.epoch == g.epoch && r.thread == me) { slot = &r; break; }
        if (slot) {                                     // the same thread's reads of the word: one reader
            slot->mask |= now.mask;
            slot->pc = now.pc;
            slot->warp_epoch = now.warp_epoch;
        } else if (!s.reader[0].mask || s.reader[0].epoch != g.epoch) {
            s.reader[0] = now;
        } else if (!s.reader[1].mask || s.reader[1].epoch != g.epoch) {
            s.reader[1] = now;
        }
    }
}

// Record one access; false when it is out of the array's exact bounds (then it is an error).
GL_NOSAN inline bool race_access(uintptr_t a, size_t n, bool write, const void* ret)
{
    const uintptr_t dyn = reinterpret_cast<uintptr_t>(dynamic_shared), arena = reinterpret_cast<uintptr_t>(shared_arena);
    size_t word;
    if (a >= dyn && a + n <= dyn + dynamic_shared_given) {
        word = ARENA_WORDS + (a - dyn) / 4;
    } else {
        bool inside = false;
        for (unsigned i = 0; i < shared_count && !inside; ++i) {
            const uintptr_t lo = reinterpret_cast<uintptr_t>(shared_vars[i].data);
            inside = a >= lo && a + n <= lo + shared_vars[i].bytes;
        }
        if (!inside || a < arena) return false;
        word = (a - arena) / 4;
    }
    if (!race_table) {
        void* m = mmap(nullptr, (ARENA_WORDS + DYNAMIC_WORDS) * sizeof(WordState), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return true;
        race_table = static_cast<WordState*>(m);
    }
    resolve_pending();
    const Access now = access_now(ret);
    const size_t last = ARENA_WORDS + DYNAMIC_WORDS;
    const size_t count = ((a & 3) + n + 3) / 4;         // the words the access touches
    const bool defer = write && count <= PENDING_WORDS;
    if (defer) pending_write = PendingWrite{now.pc, a, (unsigned)n, now.thread};
    for (size_t w = word; w < word + count && w < last; ++w) {
        const uintptr_t at = w < ARENA_WORDS ? arena + w * 4 : dyn + (w - ARENA_WORDS) * 4;
        record_word<false>(race_table[w], now, write, a, n, reinterpret_cast<const unsigned*>(at), defer);
    }
    return true;
}

// Global memory within a warp: the words of the array arguments a kernel writes, recorded as shared memory's
// are but only between lanes of one warp (lanes that store and then read or overwrite each other's words with
// no __syncwarp between: the emulator gives them a converged warp's answer, and racecheck reports them as
// compute-sanitizer would report the same code on shared memory). Accesses of different warps or blocks
// through global memory are ordered by barriers, fences and atomics that racecheck does not follow, and are
// not reported. The table is open-addressed by word address; an entry of an earlier block counts as empty.
struct GlobalWord { unsigned long long key, block; WordState s; };
constexpr size_t GLOBAL_WORDS = size_t(1) << 21;
inline GlobalWord* global_table = nullptr;

GL_NOSAN inline void race_global(uintptr_t a, size_t n, bool write, const void* ret)
{
    if (!global_table) {
        void* m = mmap(nullptr, GLOBAL_WORDS * sizeof(GlobalWord), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return;
        global_table = static_cast<GlobalWord*>(m);
    }
    resolve_pending();
    const Access now = access_now(ret);
    const bool defer = write && (a + n + 3) / 4 - a / 4 <= PENDING_WORDS;
    if (defer) pending_write = PendingWrite{now.pc, a, (unsigned)n, now.thread};
    for (uintptr_t w = a / 4; w < (a + n + 3) / 4; ++w) {
        size_t slot = (w * 0x9E3779B97F4A7C15ull) >> 43, probes = 0;
        while (global_table[slot].block == global_block && global_table[slot].key != w) {
            slot = (slot + 1) & (GLOBAL_WORDS - 1);
            if (++probes == GLOBAL_WORDS) return;     // a block wrote more words than the table holds: stop recording
        }
        GlobalWord& e = global_table[slot];
        if (e.block != global_block) e = GlobalWord{w, global_block, {}};
        record_word<true>(e.s, now, write, a, n, reinterpret_cast<const unsigned*>(w * 4), defer);
    }
}
#endif

// What every failed check of the instrumentation comes to: a recorded shared access (racecheck), or
// an out-of-bounds access, which stops the launch.
// Global memory in lockstep: a converged warp makes each memory instruction in all its lanes before the next,
// so its stores are done before its loads, and code that reads what other lanes of its warp just wrote, with
// no __syncwarp between, reads it on a GPU. Here each lane runs on to its next warp operation instead, which
// is cheap and gives the same answer everywhere but there. So the memory check marks the array arguments
// (GLOBAL: every access to them comes here, where their exact bounds are checked), and a warp that has stored
// to one since its last barrier or warp operation makes its loads in lockstep (step): every lane one access
// before any lane the next, as the volatile accesses of warp-synchronous code are made.
// Whether [a, a + n) lies in one array argument: within the bytes its kernel may touch, or (touchable false)
// within the array at all.
GL_NOSAN inline const Region* argument_at(uintptr_t a, size_t n, bool touchable)
{
    for (unsigned i = 0; i < g.region_count; ++i) {
        const Region& r = g.regions[i];
        if (a >= r.data && a + n <= r.data + (touchable ? r.touchable : r.bytes)) return &r;
    }
    return nullptr;
}
GL_NOSAN inline bool in_argument(uintptr_t a, size_t n, bool touchable) { return argument_at(a, n, touchable); }
GL_NOSAN inline bool global_access(uintptr_t a, size_t n, bool write)
{
    const Region* r = argument_at(a, n, true);
    if (!r) return false;
    if (unsigned char* bits = write ? r->written : r->read) {
        for (size_t k = a - r->data, end = k + n; k < end; ++k) bits[k >> 3] |= (unsigned char)(1u << (k & 7));
    }
    if (!g.fibers || g.cur >= g.n) return true;
    const unsigned w = (g.fibers[g.cur].linear >> 5) & 31;
    if (write) {
        g.stored_epoch[w] = g.epoch;
        g.stored_warp_epoch[w] = g.warp_epoch[w];
    } else if (!g.in_atomic && g.stored_epoch[w] == g.epoch && g.stored_warp_epoch[w] == g.warp_epoch[w]) {
#if !defined(GL_EMU_INTERLEAVE)           // (interleaved, every access has taken its turn already)
        step("(a load of global memory after its warp's stores)");
#endif
    }
    return true;
}

// whether n bytes at p lie in one of the block's shared arrays, or in the dynamic shared memory its launch gave
GL_NOSAN inline bool in_block_shared(const void* at, size_t n)
{
    const unsigned char* p = static_cast<const unsigned char*>(at);
    if (!p) return false;
    for (unsigned i = 0; i < shared_count; ++i)
        if (p >= shared_vars[i].data && p + n <= shared_vars[i].data + shared_vars[i].bytes) return true;
    return p >= dynamic_shared && p + n <= dynamic_shared + dynamic_shared_given;
}

// an access to watched shared memory: within an array (or the launch's dynamic bytes), a store remembered
GL_NOSAN inline bool watched_access(uintptr_t a, size_t n, bool write)
{
    if (!in_block_shared(reinterpret_cast<const void*>(a), n)) return false;
    if (write && g.fibers && g.cur < g.n) {
        const long long first = proxy_granule(a), last = proxy_granule(a + n - 1);
        for (long long k = first; k >= 0 && k <= last; ++k) {
            proxy_writer[k] = (unsigned short)(g.fibers[g.cur].linear + 1);
            proxy_fence_at[k] = proxy_fences[g.fibers[g.cur].linear];
        }
        proxy_dirty = true;
    }
    return true;
}

GL_NOSAN inline void checked_access(uintptr_t a, size_t n, bool write, const void* ret)
{
#if defined(GL_EMU_RACECHECK)
    if (*shadow_of(a) == TRACKED && race_access(a, n, write, ret)) return;
#endif
    if (*shadow_of(a) == WATCHED && watched_access(a, n, write)) return;
    if (*shadow_of(a) == GLOBAL && global_access(a, n, write)) {
#if defined(GL_EMU_RACECHECK)
        race_global(a, n, write, ret);
#endif
        return;
    }
    out_of_bounds(a, n, write, ret);
}

// Static __shared__ arrays: the loader rewrites `__shared__ T name[N]...;` into a reference to one
// of these, so that the memory check knows each array's bounds (one per array and kernel instance,
// as on a GPU; the same storage serves every block of a launch, and each block finds it as the launch's
// first block did: zeros, and the dynamic shared memory 0xff bytes, a NaN in every float; see run_grid).
template <class A>
GL_NOSAN inline A* shared_array(const char* name, const char* file, int line, size_t align)
{
    static_assert(std::is_array<A>::value, "shared_array holds arrays");
    size_t bytes = sizeof(A);
    const size_t natural = alignof(typename std::remove_all_extents<A>::type);
    align = align < natural ? natural : align;
    align = align < 16 ? 16 : align;
    // the gap between two arrays guards both: as large as the larger needs
    const size_t gap = shared_gap(bytes) > shared_gap(shared_last_bytes) ? shared_gap(bytes) : shared_gap(shared_last_bytes);
    size_t at = (shared_used + gap + align - 1) / align * align;
    if (shared_count == sizeof shared_vars / sizeof shared_vars[0] || at + bytes + 256 > SHARED_ARENA_BYTES) {
        char msg[512];
        std::snprintf(msg, sizeof msg, "kernel %s: the __shared__ array '%s' (%s:%d, %zu bytes) does not fit in "
                      "the emulator's %zu KiB of static shared memory", g.kernel, name, file, line, bytes,
                      SHARED_ARENA_BYTES / 1024);
        if (in_child) fail_with(msg);
        std::snprintf(shared_overflow, sizeof shared_overflow, "%s", msg);   // reported by the next launch
        return reinterpret_cast<A*>(shared_arena);
    }
    unsigned char* data = shared_arena + at;
    size_t window = dynamic_window < 0 ? static_window : (size_t)dynamic_window + dynamic_shared_given;
    if (window < static_window) window = static_window;
    window = (window + align - 1) / align * align;
    static_window = window + bytes;
    shared_vars[shared_count++] = SharedVar{data, bytes, name, file, line, window};
    size_t total = 0;
    for (unsigned i = 0; i < shared_count; ++i) total += shared_vars[i].bytes;
    shared_used = at + bytes;
    shared_last_bytes = bytes;
    if (in_child) {
        unpoison_shared(reinterpret_cast<uintptr_t>(data), bytes);
        if (total > STATIC_SHARED_LIMIT) {
            char msg[2048];
            int used = std::snprintf(msg, sizeof msg, "kernel %s uses %zu bytes of static shared memory, over "
                                     "CUDA's limit of %zu bytes (48 KiB) for __shared__ arrays (ptxas refuses it "
                                     "on a GPU; above 48 KiB use extern __shared__ and the opt-in):", g.kernel,
                                     total, STATIC_SHARED_LIMIT);
            for (unsigned i = 0; i < shared_count && used < (int)sizeof msg - 200; ++i)
                used += std::snprintf(msg + used, sizeof msg - used, "%s%s (%zu bytes, %s:%d)", i ? ", " : " ",
                                      shared_vars[i].name, shared_vars[i].bytes, shared_vars[i].file, shared_vars[i].line);
            fail_with(msg);
        }
    }
    return reinterpret_cast<A*>(data);
}

// The bounds every launch starts from, in the child: arguments, dynamic and static shared memory.
GL_NOSAN inline void mark_bounds(const Region* regions, unsigned count, unsigned long long shared_bytes)
{
    for (unsigned i = 0; i < count; ++i) {
        const Region& r = regions[i];
        const Mapping m = mapping_for(r.bytes);
        const uintptr_t start = r.data - m.offset;
        ensure_shadow(start, start + m.total);
        poison(start, start + m.total);
        if (r.tracked) track_global(r.data, r.touchable);
        else unpoison(r.data, r.touchable);
    }
    g.regions = regions;
    g.region_count = count;
    const uintptr_t space = reinterpret_cast<uintptr_t>(&shared_space);
    ensure_shadow(space, space + sizeof shared_space);
    poison(space, space + sizeof shared_space);
    const uintptr_t dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
    unpoison_shared(dyn, shared_bytes);
    for (unsigned i = 0; i < shared_count; ++i)
        unpoison_shared(reinterpret_cast<uintptr_t>(shared_vars[i].data), shared_vars[i].bytes);
}

// A feature the emulator does not run, reached by a thread (a texture fetch, inline PTX): the launch stops with an
// error naming it, at the user's line (the caller's address: the stand-ins that call this are inlined into it).
// (g++ warns that this inline definition follows a noinline declaration: both are meant)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattributes"
[[noreturn]] GL_NOSAN __attribute__((noinline)) inline void unsupported(const char* what, const char* name)
{
    g.failed = true;
    if (g.status) {
        g.status->code = 6;
        g.status->pc = code_offset(__builtin_return_address(0));
        std::snprintf(g.status->message, sizeof g.status->message, "%s: %s", what, name);
    }
    if (!in_child || !g.fibers) { std::fflush(nullptr); _exit(125); }
    gl_emu_switch(&g.fibers[g.cur].sp, g.main_sp);
    __builtin_unreachable();
}
#pragma GCC diagnostic pop

// A kernel that calls exit() or fails an assert(): an error naming it, as the GPU would stop.
[[noreturn]] GL_NOSAN inline void kernel_stopped(const char* what)
{
    if (!in_child || !g.fibers) { std::fflush(nullptr); _exit(125); }
    char msg[2048];
    std::snprintf(msg, sizeof msg, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s", g.kernel, g.block_idx.x,
                  g.block_idx.y, g.block_idx.z, g.fibers[g.cur].tid.x, g.fibers[g.cur].tid.y,
                  g.fibers[g.cur].tid.z, what);
    fail_with(msg);
}

// ---- clusters: putting a block aside and bringing another back -------------------------------------------------
// n bytes of a block's state between where the running block keeps it (live) and where a block aside keeps it
GL_NOSAN inline void keep(void* live, void* kept, size_t n, bool aside)
{
    if (aside) std::memcpy(kept, live, n);
    else std::memcpy(live, kept, n);
}
template <class T>
GL_NOSAN inline void keep(T& live, T& kept, bool aside) { keep(&live, &kept, sizeof live, aside); }
// Block r's state goes aside (the block leaves) or is put back (it runs): its threads' place, the warp operations
// waiting, its shared memory and proxy-fence records, the PTX runtime's state of it, its racecheck table.
GL_NOSAN inline void cluster_keep(unsigned r, bool aside)
{
    ClusterBlock& b = cluster_block[r];
    for (unsigned i = 0; aside && i < g.n; ++i) async_land(i, ~0ull);    // (its copies to its shared memory land)
    if (!aside) {
        cluster_rank_now = r;
        g.fibers = b.fibers;
        g.block_idx = b.block_idx;
        block_serial = b.serial;
        if (g.status) { g.status->block[0] = b.block_idx.x; g.status->block[1] = b.block_idx.y; g.status->block[2] = b.block_idx.z; }
    }
    keep(g.live, b.live, aside);
    keep(g.at_barrier, b.at_barrier, aside);
    keep(g.cur, b.cur, aside);
    keep(pending_coalesce, b.coalesce, aside);
    keep(pending_steps, b.steps, aside);
    keep(shared_arena, b.image, shared_used, aside);
    keep(dynamic_shared, b.image + SHARED_ARENA_BYTES, dynamic_shared_given, aside);
    if (watch_shared) {
        const size_t s = (shared_used + 7) / 8, d = (dynamic_shared_given + 7) / 8, at = SHARED_ARENA_BYTES / 8;
        keep(proxy_writer, b.writers, s * sizeof *proxy_writer, aside);
        keep(proxy_writer + at, b.writers + at, d * sizeof *proxy_writer, aside);
        keep(proxy_fence_at, b.fence_at, s * sizeof *proxy_fence_at, aside);
        keep(proxy_fence_at + at, b.fence_at + at, d * sizeof *proxy_fence_at, aside);
        keep(proxy_fences, b.fences, g.n * sizeof *proxy_fences, aside);
    }
    if (cluster_state_hook) cluster_state_hook(r, aside);
#if defined(GL_EMU_RACECHECK)
    if (aside) resolve_pending();                      // (a store judged by what the block's memory holds now)
    void* table = race_table;
    keep(table, b.race, aside);                        // (nullptr: made at its first access)
    race_table = static_cast<WordState*>(table);
    keep(g.epoch, b.epoch, aside);
    keep(g.warp_epoch, b.warp_epoch, aside);
    keep(global_block, b.global_block, aside);
#endif
}
GL_NOSAN inline void cluster_aside(unsigned r) { cluster_keep(r, true); }
GL_NOSAN inline void cluster_bring(unsigned r) { cluster_keep(r, false); }
// the threads of the cluster's block of rank r (the running block's are g.fibers)
GL_NOSAN inline Fiber* fibers_of(unsigned r) { return r == cluster_rank_now ? g.fibers : cluster_block[r].fibers; }
GL_NOSAN inline bool cluster_runnable(const ClusterBlock& b)
{
    if (b.ended) return false;
    for (unsigned i = 0; i < g.n; ++i)
        if (b.fibers[i].state == RUNNABLE) return true;
    return false;
}
// The running block can go no further: its end is checked if its threads have all exited, and the next block of the
// cluster with a thread that can go on takes over (false: there is none).
GL_NOSAN inline bool cluster_switch()
{
    ClusterBlock& here = cluster_block[cluster_rank_now];
    if (g.live == 0 && !here.ended) {
        here.ended = true;
        if (block_end_hook) block_end_hook();
        if (g.failed) return_to_main();
    }
    for (unsigned k = 1; k < cluster_blocks; ++k) {
        const unsigned r = (cluster_rank_now + k) % cluster_blocks;
        if (!cluster_runnable(cluster_block[r])) continue;
        Fiber& from = g.fibers[g.cur];
        cluster_aside(cluster_rank_now);
        cluster_bring(r);
        unsigned i = g.cur;
        while (g.fibers[i].state != RUNNABLE) i = i + 1 == g.n ? 0 : i + 1;
        g.cur = i;
        ++g.switches;
        gl_emu_switch(&from.sp, g.fibers[i].sp);
        __asm__ volatile("" ::: "memory");
        return true;
    }
    return false;
}
GL_NOSAN inline bool cluster_all_ended()
{
    for (unsigned r = 0; r < cluster_blocks; ++r)
        if (!cluster_block[r].ended && !(r == cluster_rank_now && g.live == 0)) return false;
    return true;
}
// no thread of the cluster can go on: a block whose threads wait is brought back, for the deadlock to name them
GL_NOSAN inline void cluster_show_stuck()
{
    if (g.live > 0) return;
    for (unsigned r = 0; r < cluster_blocks; ++r)
        if (!cluster_block[r].ended && r != cluster_rank_now) {
            cluster_aside(cluster_rank_now);
            cluster_bring(r);
            return;
        }
}
// a pointer to `bytes` at live address p of the shared memory of the cluster's block of rank r (its own place when
// r runs now; else in its memory aside); nullptr if p is not in the block's shared memory
GL_NOSAN inline unsigned char* cluster_memory(unsigned r, unsigned char* p, size_t bytes)
{
    if (r == cluster_rank_now) return p;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p), arena = reinterpret_cast<uintptr_t>(shared_arena),
                    dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
    if (a - arena < shared_used && a - arena + bytes <= shared_used) return cluster_block[r].image + (a - arena);
    if (a - dyn < dynamic_shared_given && a - dyn + bytes <= dynamic_shared_given)
        return cluster_block[r].image + SHARED_ARENA_BYTES + (a - dyn);
    return nullptr;
}

// a block's threads, each at the start of the kernel
GL_NOSAN inline void async_reset(unsigned thread);
GL_NOSAN inline void start_fibers(Fiber* fibers)
{
    for (unsigned i = 0; i < g.n; ++i) {
        async_reset(i);
        Fiber& f = fibers[i];
        f.state = RUNNABLE;
        f.line = 0;
        f.file = "";
        f.sp = initial_sp(f);
    }
}

// ---- running a grid (in the child process) ---------------------------------------------------
// The blocks first .. first + count - 1, numbered x fastest, then y, then z.
GL_NOSAN inline void run_clusters(unsigned long long first, unsigned long long count);
GL_NOSAN inline void run_grid(unsigned long long first, unsigned long long count)
{
    if (cluster_blocks > 1) return run_clusters(first, count);
    const unsigned long long plane = (unsigned long long)g.grid_dim.x * g.grid_dim.y;
    for (unsigned long long b = first; b < first + count; ++b) {
        const unsigned bx = unsigned(b % g.grid_dim.x), by = unsigned(b / g.grid_dim.x % g.grid_dim.y),
                       bz = unsigned(b / plane);
        g.block_idx = dim3(bx, by, bz);
        oldest_live_block = ++block_serial;
        if (proxy_dirty) std::memset(proxy_writer, 0, sizeof proxy_writer);
        proxy_dirty = false;
        if (watch_shared) std::memset(proxy_fences, 0, sizeof proxy_fences);
        ++g.epoch;                       // nothing in one block races with another's accesses
#if defined(GL_EMU_RACECHECK)
        resolve_pending();               // (the last block's last store)
        global_block = g.epoch;          // (the global words recorded so far belong to earlier blocks)
#endif
        if (g.status) { g.status->block[0] = bx; g.status->block[1] = by; g.status->block[2] = bz; }
        // a block never sees what the one before it left in shared memory (so a block's result does not
        // depend on which blocks ran before it in this process: blocks_independent)
        if (b != first) {
            std::memset(shared_arena, 0, shared_used);
            if (dynamic_shared_given) std::memset(dynamic_shared, 0xff, dynamic_shared_given);
        }
        start_fibers(g.fibers);
        g.live = g.n;
        pending_coalesce = 0;
        g.at_barrier = 0;
        g.cur = 0;
        if (g.status) { g.status->thread[0] = g.status->thread[1] = g.status->thread[2] = 0; }
        gl_emu_switch(&g.main_sp, g.fibers[0].sp);
        if (!g.failed && block_end_hook) block_end_hook();
        if (g.failed) return;
    }
#if defined(GL_EMU_RACECHECK)
    resolve_pending();
#endif
}

// The clusters whose blocks are first .. first + count - 1 in cluster order (cluster after cluster, x fastest; a
// cluster's blocks by rank, x fastest): each cluster's blocks start together, rank 0 first, and run until all of
// their threads have exited (cluster_switch hands over between them and checks each block's end).
GL_NOSAN inline void run_clusters(unsigned long long first, unsigned long long count)
{
    const unsigned cx = cluster_dims[0], cy = cluster_dims[1], gx = g.grid_dim.x / cx, gy = g.grid_dim.y / cy;
    for (unsigned long long q = first / cluster_blocks; q < (first + count) / cluster_blocks; ++q) {
        const unsigned qx = unsigned(q % gx), qy = unsigned(q / gx % gy), qz = unsigned(q / ((unsigned long long)gx * gy));
        ++g.epoch;
        proxy_dirty = false;
        oldest_live_block = block_serial + 1;
#if defined(GL_EMU_RACECHECK)
        // racecheck: each block's accesses in a table of its own; every block starts at a barrier generation past
        // any its table has seen (so nothing recorded earlier is concurrent with it)
        resolve_pending();
        unsigned long long base = g.epoch;
        for (unsigned r = 0; r < cluster_blocks; ++r) base = cluster_block[r].epoch > base ? cluster_block[r].epoch : base;
        g.epoch = base + 1;
        std::memset(g.warp_epoch, 0, sizeof g.warp_epoch);
#endif
        for (unsigned r = 0; r < cluster_blocks; ++r) {
            ClusterBlock& b = cluster_block[r];
            b.block_idx = dim3(qx * cx + r % cx, qy * cy + r / cx % cy, qz * cluster_dims[2] + r / (cx * cy));
            b.serial = ++block_serial;
            b.ended = false;
            b.live = g.n;
            b.at_barrier = b.cur = b.coalesce = b.steps = 0;
            start_fibers(b.fibers);
            // each block finds its memory as a first block does (past shared_used the arena is zeros: no array there
            // yet), with no proxy-fence records
            std::memset(b.image, 0, shared_used);
            std::memset(b.image + SHARED_ARENA_BYTES, 0xff, dynamic_shared_given);
            if (watch_shared) {
                std::memset(b.writers, 0, PROXY_GRANULES * sizeof *b.writers);
                std::memset(b.fences, 0, g.n * sizeof *b.fences);
            }
#if defined(GL_EMU_RACECHECK)
            b.epoch = g.epoch;
            std::memset(b.warp_epoch, 0, sizeof b.warp_epoch);
            b.global_block = (1ull << 63) | b.serial;     // (its warps' global words: apart from the other blocks')
#endif
        }
        cluster_bring(0);
        if (g.status) { g.status->thread[0] = g.status->thread[1] = g.status->thread[2] = 0; }
        gl_emu_switch(&g.main_sp, g.fibers[0].sp);
#if defined(GL_EMU_RACECHECK)
        cluster_block[cluster_rank_now].race = race_table;   // (the block that ran last was not set aside)
#endif
        if (g.failed) return;
    }
#if defined(GL_EMU_RACECHECK)
    resolve_pending();
#endif
}

// The launch's clusters (the kernel's __cluster_dims__) and each block's place for them: fibers of its own (the
// launch's table holds a block's threads for each rank), its shared memory and proxy records while aside.
GL_NOSAN inline int prepare_clusters(unsigned threads)
{
    if (cluster_blocks == 1) return 0;
    const size_t image = SHARED_ARENA_BYTES + DYNAMIC_SHARED_BYTES, writers = PROXY_GRANULES * sizeof(unsigned short),
                 fence_at = PROXY_GRANULES * sizeof(unsigned), each = image + writers + fence_at + 1024 * sizeof(unsigned);
    void* all = mmap(nullptr, each * cluster_blocks, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (all == MAP_FAILED) return -1;                  // (zeros, as calloc would give: the kernel's heap is malloc's)
    for (unsigned r = 0; r < cluster_blocks; ++r) {
        ClusterBlock& b = cluster_block[r];
        unsigned char* at = static_cast<unsigned char*>(all) + r * each;
        b.fibers = g.fibers + (size_t)r * threads;
        b.image = at;
        b.writers = reinterpret_cast<unsigned short*>(at + image);
        b.fence_at = reinterpret_cast<unsigned*>(at + image + writers);
        b.fences = reinterpret_cast<unsigned*>(at + image + writers + fence_at);
    }
    return 0;
}

// A crash 2^32 elements past a shared array: a 32-bit unsigned index that went below 0 (threadIdx.x - 1 in thread 0
// is 4294967295, not -1), which a GPU's 32-bit shared addresses would wrap back to just before the array. (In the
// fault handler: nothing here may be instrumented, a lambda included, or its shadow check would fault again.)
GL_NOSAN inline bool wrapped_from(uintptr_t addr, uintptr_t base, size_t bytes, const char* what, const char* name,
                                  char* out, size_t size, unsigned slack = 0)
{
    if (addr <= base) return false;
    // an index i = 2^32 - j of q-byte elements (or rows: tile[threadIdx.y - 1][x]) lands j elements short of
    // base + q 2^32: q is the multiple of 2^32 just above the address
    const uintptr_t q = ((addr - base) >> 32) + (((addr - base) & 0xFFFFFFFFull) != 0);
    const uintptr_t top = base + (q << 32);
    if (q >= 1 && q <= 65536 && top - addr <= SHARED_GUARD) {
        const unsigned long long below = (top - addr - (top - addr > slack ? slack : 0) + q - 1) / q;
        std::snprintf(out, size, ": the address is element %llu of %s%s for %llu-byte elements (or rows), an unsigned "
                      "32-bit index that went below 0 and wrapped (-%llu as an int); compute indexes that can go "
                      "below 0 as int", 4294967296ull - below, what, name, (unsigned long long)q, below);
        return true;
    }
    // the last index of a 2-D array went below 0 and the rows above it add their bytes (tile[y][threadIdx.x - 1]
    // in a row y > 0): q 2^32 bytes past the array, plus an offset inside it
    const uintptr_t floor_q = (addr - base) >> 32, low = base + (floor_q << 32);
    if (floor_q >= 1 && floor_q <= 65536 && addr - low < bytes + SHARED_GUARD) {
        std::snprintf(out, size, ": the address is %llu x 2^32 bytes past byte %llu of %s%s: an unsigned 32-bit index "
                      "of %llu-byte elements that went below 0 and wrapped (threadIdx.x - 1 in thread 0 is 4294967295, "
                      "not -1); compute indexes that can go below 0 as int", (unsigned long long)floor_q,
                      (unsigned long long)(addr - low), what, name, (unsigned long long)floor_q);
        return true;
    }
    return false;
}
GL_NOSAN inline bool wrapped_index(uintptr_t addr, char* out, size_t size, unsigned slack = 0)
{
    if (wrapped_from(addr, reinterpret_cast<uintptr_t>(dynamic_shared), dynamic_shared_given,
                     "the dynamic shared memory", "", out, size, slack))
        return true;
    for (unsigned i = 0; i < shared_count; ++i) {
        char name[160];
        std::snprintf(name, sizeof name, "'%s'", shared_vars[i].name);
        if (wrapped_from(addr, reinterpret_cast<uintptr_t>(shared_vars[i].data), shared_vars[i].bytes,
                         "the __shared__ array ", name, out, size, slack))
            return true;
    }
    return false;
}

GL_NOSAN inline void on_fault(int sig, siginfo_t* info, void* context)
{
    if (sig == SIGSEGV && map_shadow(reinterpret_cast<uintptr_t>(info->si_addr))) return;   // memcheck
    uintptr_t sp = 0, pc = 0;
#if defined(__x86_64__) && defined(__linux__)
    sp = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP];
    pc = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__) && defined(__linux__)
    sp = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.sp;
    pc = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.pc;
#else
    (void)context;
#endif
    if (g.status) {
        g.status->code = 2;
        g.status->signal = sig;
        g.status->fault_address = reinterpret_cast<unsigned long long>(info->si_addr);
        g.status->pc = code_offset(reinterpret_cast<void*>(pc));
        if (sig == SIGSEGV) {
            // (an address so far off that its shadow lies past the shadow map faults there first: the shadow's
            // address names the access's to within its 8 bytes)
            const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
            if (!wrapped_index(at, g.status->message, sizeof g.status->message) && at >= SHADOW_HI)
                wrapped_index((at - SHADOW_OFFSET) << 3, g.status->message, sizeof g.status->message, 7);
        }
        if (g.fibers && g.cur < g.n) {
            // a thread's stack ran into its guard page: its local variables did not fit
            const uintptr_t base = reinterpret_cast<uintptr_t>(g.fibers[g.cur].stack);
            const uintptr_t top = base + g.stack_size;
            const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
            const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
            const bool below = (sp && sp < base && sp + (64u << 20) > base) || (addr < base && addr + page >= base);
            if (sig == SIGSEGV && below) {
                g.status->code = 5;
                g.status->stack_size = g.stack_size;
                g.status->stack_used = top - (sp && sp < addr ? sp : addr);
            }
        }
    }
    _exit(128 + sig);
}

}  // namespace gl_emu

// What the compiler's memory-check instrumentation calls when a check fails (GL_EMU_MEMCHECK).
#define GL_REPORT(KIND, N, WRITE) \
    extern "C" GL_NOSAN __attribute__((noinline)) void __asan_report_##KIND##N##_noabort(uintptr_t a) \
    { ::gl_emu::checked_access(a, N, WRITE, __builtin_return_address(0)); }
GL_REPORT(load, 1, false) GL_REPORT(load, 2, false) GL_REPORT(load, 4, false) GL_REPORT(load, 8, false)
GL_REPORT(load, 16, false)
GL_REPORT(store, 1, true) GL_REPORT(store, 2, true) GL_REPORT(store, 4, true) GL_REPORT(store, 8, true)
GL_REPORT(store, 16, true)
#undef GL_REPORT
extern "C" GL_NOSAN __attribute__((noinline)) void __asan_report_load_n_noabort(uintptr_t a, size_t n)
{ ::gl_emu::checked_access(a, n, false, __builtin_return_address(0)); }
extern "C" GL_NOSAN __attribute__((noinline)) void __asan_report_store_n_noabort(uintptr_t a, size_t n)
{ ::gl_emu::checked_access(a, n, true, __builtin_return_address(0)); }
extern "C" GL_NOSAN void __asan_handle_no_return() {}
// A global of the source with a dynamic initializer (a host object such as a std::vector, <iostream>'s) is
// initialised when the library is loaded, in the Python process, between these two calls: its checked accesses
// read a shadow that only a launch's child maps, so meanwhile a fault in the shadow maps that page (zeros:
// addressable), and any other fault goes to the handler that was there before.
namespace gl_emu {
inline struct sigaction init_saved_segv;
inline bool init_handler_set = false;
GL_NOSAN inline void init_fault(int sig, siginfo_t* info, void* ctx)
{
    if (map_shadow(reinterpret_cast<uintptr_t>(info->si_addr))) return;
    sigaction(SIGSEGV, &init_saved_segv, nullptr);   // not the shadow's: the fault recurs under the old handler
    (void)sig; (void)ctx;
}
GL_NOSAN inline void init_fault_handler()
{
#if defined(GL_EMU_MEMCHECK) && defined(MAP_FIXED_NOREPLACE)
    if (in_child || init_handler_set) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = init_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    init_handler_set = sigaction(SIGSEGV, &sa, &init_saved_segv) == 0;
#endif
}
}  // namespace gl_emu
extern "C" GL_NOSAN void __asan_before_dynamic_init(const char*) { ::gl_emu::init_fault_handler(); }
// (the same objects' destructors run when Python exits, after the handler registered here has put the shadow's
// fault handler back: registered after them, it runs before them)
extern "C" GL_NOSAN void __asan_after_dynamic_init()
{
    if (::gl_emu::init_handler_set) sigaction(SIGSEGV, &::gl_emu::init_saved_segv, nullptr);
    ::gl_emu::init_handler_set = false;
    if (!::gl_emu::in_child) std::atexit(::gl_emu::init_fault_handler);
}

// An access checked against the shadow map (the memory check) as the compiler's inline checks check the kernel's:
// for ThreadSanitizer's instrumentation below, and for the runtime's own accesses on a thread's behalf (the PTX
// runtime's ldmatrix rows, say)
namespace gl_emu {
GL_NOSAN inline void shadow_check(uintptr_t a, size_t n, bool write, const void* ret)
{
#if defined(GL_EMU_MEMCHECK)
    for (uintptr_t p = a, end = a + n; p < end;) {
        const uintptr_t stop = (p | 7) + 1 < end ? (p | 7) + 1 : end;   // the rest of this 8-byte granule
        const signed char s = *shadow_of(p);
        if (s != 0 && (s < 0 || (signed char)((stop - 1) & 7) >= s)) { checked_access(a, n, write, ret); return; }
        p = stop;
    }
#else
    (void)a; (void)n; (void)write; (void)ret;
#endif
}
}  // namespace gl_emu

// ---- asynchronous copies to shared memory (cp.async; <cuda_pipeline.h>'s __pipeline_memcpy_async) ----------
// A copy is checked as its thread's access when issued, and lands when its thread waits for its group
// (cp.async.wait_group, __pipeline_wait_prior), when the thread exits, when its block goes aside for another
// of its cluster, or when the thread has 64 in flight (the oldest then): as late as a GPU may land it. A thread
// that reads the destination before waiting reads what was there before, the wrong answer a GPU can give.
namespace gl_emu {
struct AsyncCopy {
    unsigned char* dst;
    const unsigned char* src;
    unsigned size, given;                              // (the bytes past `given` are zeros)
    unsigned long long group;
};
constexpr unsigned ASYNC_RING = 64;
inline AsyncCopy async_copies[1024][ASYNC_RING];
inline unsigned async_head[1024], async_count[1024];
inline unsigned long long async_groups[1024];          // each thread's groups committed so far
GL_NOSAN inline void async_reset(unsigned thread)
{
    async_head[thread] = async_count[thread] = 0;
    async_groups[thread] = 0;
}
// thread's copies of groups below `below` (all: ~0), oldest first
GL_NOSAN inline void async_land(unsigned thread, unsigned long long below)
{
    while (async_count[thread] && async_copies[thread][async_head[thread]].group < below) {
        const AsyncCopy& c = async_copies[thread][async_head[thread]];
        std::memcpy(c.dst, c.src, c.given);
        std::memset(c.dst + c.given, 0, c.size - c.given);
        async_head[thread] = (async_head[thread] + 1) % ASYNC_RING;
        --async_count[thread];
    }
}
GL_NOSAN inline void async_copy(void* dst, const void* src, size_t size, size_t given, const void* ret)
{
    shadow_check(reinterpret_cast<uintptr_t>(dst), size, true, ret);
    if (given) shadow_check(reinterpret_cast<uintptr_t>(src), given, false, ret);
    const unsigned t = g.fibers[g.cur].linear;
    if (async_count[t] == ASYNC_RING) {                // the oldest lands: it may have by now
        const unsigned long long oldest = async_copies[t][async_head[t]].group;
        async_land(t, oldest + 1);
    }
    async_copies[t][(async_head[t] + async_count[t]++) % ASYNC_RING] =
        AsyncCopy{static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), (unsigned)size,
                  (unsigned)given, async_groups[t]};
}
GL_NOSAN inline void async_commit() { ++async_groups[g.fibers[g.cur].linear]; }
// until at most n of this thread's committed groups are still in flight
GL_NOSAN inline void async_wait(unsigned long long n)
{
    const unsigned t = g.fibers[g.cur].linear;
    if (async_groups[t] > n) async_land(t, async_groups[t] - n);
}
}  // namespace gl_emu

// What ThreadSanitizer's instrumentation calls (GL_EMU_LOCKSTEP): every load and store of the kernel, the
// volatile ones apart. A volatile access outside the thread's own stack first waits for its warp (lockstep);
// with the memory check on, every access is then checked against the shadow map, as the inline checks of
// the usual build do. No sanitizer runtime is linked: these are the whole of it.
#if defined(GL_EMU_LOCKSTEP)
namespace gl_emu {
#if defined(GL_EMU_INTERLEAVE)
// An access to the kernel's memory (shared memory, the array arguments; never the emulator's own state) takes a
// turn: a step in lockstep with its warp, after which the next warp goes on (see step()).
GL_NOSAN inline void interleave_turn(uintptr_t a)
{
    if (in_shared(a) || in_argument(a, 1, false)) step("(a memory access: warps interleaved)");
}
#endif
GL_NOSAN inline void plain_access(uintptr_t a, size_t n, bool write, const void* ret)
{
    if (!in_child || !g.fibers) return;
#if defined(GL_EMU_INTERLEAVE)
    if (!g.in_atomic) interleave_turn(a);
#endif
    shadow_check(a, n, write, ret);
}
GL_NOSAN inline void volatile_access(uintptr_t a, size_t n, bool write, const void* ret)
{
    if (!in_child || !g.fibers) return;
    if (!on_stack(a)) step();
    shadow_check(a, n, write, ret);
}
}  // namespace gl_emu
#define GL_TSAN(NAME, N, WRITE, HOW) \
    extern "C" GL_NOSAN __attribute__((noinline)) void NAME(void* a) \
    { ::gl_emu::HOW(reinterpret_cast<uintptr_t>(a), N, WRITE, __builtin_return_address(0)); }
#define GL_TSAN_SIZES(N) \
    GL_TSAN(__tsan_read##N, N, false, plain_access) GL_TSAN(__tsan_write##N, N, true, plain_access) \
    GL_TSAN(__tsan_unaligned_read##N, N, false, plain_access) GL_TSAN(__tsan_unaligned_write##N, N, true, plain_access) \
    GL_TSAN(__tsan_volatile_read##N, N, false, volatile_access) GL_TSAN(__tsan_volatile_write##N, N, true, volatile_access)
GL_TSAN_SIZES(1) GL_TSAN_SIZES(2) GL_TSAN_SIZES(4) GL_TSAN_SIZES(8) GL_TSAN_SIZES(16)
#undef GL_TSAN_SIZES
#undef GL_TSAN
extern "C" GL_NOSAN __attribute__((noinline)) void __tsan_read_range(void* a, size_t n)
{ ::gl_emu::plain_access(reinterpret_cast<uintptr_t>(a), n, false, __builtin_return_address(0)); }
extern "C" GL_NOSAN __attribute__((noinline)) void __tsan_write_range(void* a, size_t n)
{ ::gl_emu::plain_access(reinterpret_cast<uintptr_t>(a), n, true, __builtin_return_address(0)); }
extern "C" GL_NOSAN void __tsan_init() {}
extern "C" GL_NOSAN void __tsan_func_entry(void*) {}
extern "C" GL_NOSAN void __tsan_func_exit() {}
extern "C" GL_NOSAN void __tsan_vptr_update(void*, void*) {}
extern "C" GL_NOSAN void __tsan_vptr_read(void*) {}
#endif

// exit() is a host function (nvcc refuses it in a kernel) and assert() stops the kernel with its text;
// in the emulator both end the launch with an error that says so, never a half-finished result.
// (on Linux the loader links with --wrap=exit, so the kernel's calls of exit() come here)
extern "C" GL_NOSAN __attribute__((noreturn)) void __wrap_exit(int code) noexcept
{
    char what[128];
    std::snprintf(what, sizeof what, "called exit(%d), a host function that a kernel cannot call", code);
    ::gl_emu::kernel_stopped(what);
}
#if defined(__GLIBC__)
extern "C" GL_NOSAN __attribute__((noreturn, visibility("hidden"))) void __assert_fail(const char* expr, const char* file, unsigned line,
                                                                  const char* function) noexcept
{
    char what[1024];
    std::snprintf(what, sizeof what, "assertion `%s' failed at %s:%u (in %s)", expr, file, line, function);
    ::gl_emu::kernel_stopped(what);
}
#elif defined(__APPLE__)
extern "C" GL_NOSAN __attribute__((noreturn)) void __assert_rtn(const char* function, const char* file, int line,
                                                                 const char* expr)
{
    char what[1024];
    std::snprintf(what, sizeof what, "assertion `%s' failed at %s:%d (in %s)", expr, file, line, function);
    ::gl_emu::kernel_stopped(what);
}
#endif

// ---- the CUDA device API the book's kernels use ----------------------------------------------
#define __syncthreads() ((void)::gl_emu::syncthreads(__FILE__, __LINE__))
#define __syncthreads_count(p) ((int)(unsigned)::gl_emu::syncthreads(__FILE__, __LINE__, (p) ? 1 : 0))
#define __syncthreads_and(p) ::gl_emu::barrier_and(::gl_emu::syncthreads(__FILE__, __LINE__, (p) ? 1 : 0))
#define __syncthreads_or(p) ((int)((unsigned)::gl_emu::syncthreads(__FILE__, __LINE__, (p) ? 1 : 0) != 0))
#define __activemask() ((unsigned)::gl_emu::warp_op(::gl_emu::OP_COALESCE, 0xffffffffu, 0, 0, 32, __FILE__, __LINE__))
#define __match_any_sync(mask, v) ((unsigned)::gl_emu::warp_op(::gl_emu::OP_MATCH_ANY, mask, ::gl_emu::match_bits(v), 0, 32, __FILE__, __LINE__))
#define __match_all_sync(mask, v, pred) ::gl_emu::match_all(mask, ::gl_emu::match_bits(v), pred, __FILE__, __LINE__)
#define __reduce_add_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_ADD, mask, v, __FILE__, __LINE__)
#define __reduce_min_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_MIN, mask, v, __FILE__, __LINE__)
#define __reduce_max_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_MAX, mask, v, __FILE__, __LINE__)
#define __reduce_and_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_AND, mask, (unsigned)(v), __FILE__, __LINE__)
#define __reduce_or_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_OR, mask, (unsigned)(v), __FILE__, __LINE__)
#define __reduce_xor_sync(mask, v) ::gl_emu::reduce_sync(::gl_emu::RED_XOR, mask, (unsigned)(v), __FILE__, __LINE__)
#define __syncwarp(...) ((void)::gl_emu::warp_op(::gl_emu::OP_SYNCWARP, ::gl_emu::syncwarp_mask(__VA_ARGS__), 0, 0, 32, __FILE__, __LINE__))
#define __shfl_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_UP, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_DOWN, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(mask, v, ...) ::gl_emu::shfl(::gl_emu::OP_SHFL_XOR, mask, v, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(mask, p) ((unsigned)::gl_emu::warp_op(::gl_emu::OP_BALLOT, mask, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
// The shuffles and votes before CUDA 9 (no mask: the warp's active lanes), which nvcc accepts only below sm_70;
// pre-Volta tutorials and books still write them
#define __shfl(v, ...) __shfl_sync(__activemask(), v, __VA_ARGS__)
#define __shfl_up(v, ...) __shfl_up_sync(__activemask(), v, __VA_ARGS__)
#define __shfl_down(v, ...) __shfl_down_sync(__activemask(), v, __VA_ARGS__)
#define __shfl_xor(v, ...) __shfl_xor_sync(__activemask(), v, __VA_ARGS__)
#define __ballot(p) __ballot_sync(__activemask(), p)
#define __any(p) __any_sync(__activemask(), p)
#define __all(p) __all_sync(__activemask(), p)
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
// Cooperative groups shuffle any trivially copyable value (CUDA's templates move it in 4- or 8-byte pieces): here
// one warp operation per 8 bytes, every lane's pieces in the same order.
template <class T>
inline T shfl_any(int op, unsigned mask, T v, const char* file, int line, int arg, int width = 32)
{
    static_assert(std::is_trivially_copyable<T>::value, "a shuffled value must be trivially copyable");
    if constexpr (sizeof(T) <= 8) {
        return shfl(op, mask, v, file, line, arg, width);
    } else {
        constexpr size_t pieces = (sizeof(T) + 7) / 8;
        unsigned long long in[pieces] = {}, out[pieces];
        std::memcpy(in, &v, sizeof(T));
        for (size_t i = 0; i < pieces; ++i) out[i] = warp_op(op, mask, in[i], arg, width, file, line);
        T r = v;
        std::memcpy(&r, out, sizeof(T));
        return r;
    }
}
inline int barrier_and(unsigned long long r) { return (unsigned)r == (unsigned)(r >> 32); }

// __match_*_sync compare 32- or 64-bit values (int, unsigned, long long, unsigned long long, float, double)
template <class T>
inline unsigned long long match_bits(T v)
{
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync/__match_all_sync take 32- or 64-bit values");
    return bits(v);
}
inline unsigned match_all(unsigned mask, unsigned long long v, int* pred, const char* file, int line)
{
    const unsigned long long r = warp_op(OP_MATCH_ALL, mask, v, 0, 32, file, line);
    *pred = (int)(r >> 32);
    return (unsigned)r;
}
// __reduce_*_sync: unsigned or int (min and max compare as the type is signed or not)
inline unsigned reduce_sync(int kind, unsigned mask, unsigned v, const char* file, int line)
{ return (unsigned)warp_op(OP_REDUCE, mask, v, kind, 32, file, line); }
inline int reduce_sync(int kind, unsigned mask, int v, const char* file, int line)
{ return (int)(unsigned)warp_op(OP_REDUCE, mask, (unsigned)v, kind | RED_SIGNED, 32, file, line); }
}  // namespace gl_emu

// __nanosleep lets the other threads run first; clock64() counts nanoseconds of the CPU's monotonic clock
// (not GPU cycles: only differences mean anything); clock() is the C library's (the process's CPU time).
__device__ inline void __nanosleep(unsigned) { ::gl_emu::yield(); }
__device__ inline long long clock64()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// PTX's special registers, for the one inline-PTX form the emulator runs: `asm("mov.u32 %0, %%laneid;" : "=r"(x))`
// and the like (the loader rewrites such a statement into a call of these). %smid is the block's linear index
// modulo the emulated GPU's SMs (a GPU gives the SM it runs on, which depends on the schedule); %warpid the
// warp's index in its block; the clocks count nanoseconds, as clock64() does.
#ifndef GL_EMU_SM_COUNT
#define GL_EMU_SM_COUNT 132
#endif
namespace gl_emu {
// the block's index in the grid's linear order (x fastest), as cooperative groups' grid_group ranks blocks
inline unsigned long long block_rank()
{ return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z); }
inline unsigned sreg_linear() { return g.fibers[g.cur].linear; }
inline unsigned sreg_lane() { return sreg_linear() & 31u; }
inline unsigned ptx_sreg_laneid() { return sreg_lane(); }
inline unsigned ptx_sreg_warpid() { return sreg_linear() >> 5; }
inline unsigned ptx_sreg_nwarpid() { return 64; }
inline unsigned ptx_sreg_smid() { return (unsigned)(block_rank() % GL_EMU_SM_COUNT); }
inline unsigned ptx_sreg_nsmid() { return GL_EMU_SM_COUNT; }
inline unsigned ptx_sreg_lanemask_eq() { return 1u << sreg_lane(); }
inline unsigned ptx_sreg_lanemask_lt() { return (1u << sreg_lane()) - 1u; }
inline unsigned ptx_sreg_lanemask_le() { return (unsigned)((2ull << sreg_lane()) - 1u); }
inline unsigned ptx_sreg_lanemask_gt() { return ~ptx_sreg_lanemask_le(); }
inline unsigned ptx_sreg_lanemask_ge() { return ~ptx_sreg_lanemask_lt(); }
inline unsigned ptx_sreg_dynamic_smem_size() { return (unsigned)dynamic_shared_given; }
inline unsigned long long ptx_sreg_clock64() { return (unsigned long long)::clock64(); }
inline unsigned ptx_sreg_clock() { return (unsigned)ptx_sreg_clock64(); }
inline unsigned ptx_sreg_clock_hi() { return (unsigned)(ptx_sreg_clock64() >> 32); }
inline unsigned long long ptx_sreg_globaltimer() { return ptx_sreg_clock64(); }
inline unsigned ptx_sreg_globaltimer_lo() { return (unsigned)ptx_sreg_clock64(); }
}  // namespace gl_emu

// Atomics: fibers switch only at barriers and warp operations, so a read-modify-write is never
// interleaved with another thread's.
template <class T> struct gl_same { using type = T; };
namespace gl_emu {
// An atomic on a thread's local variable is an illegal address on a GPU (atomics work on global and
// shared memory): the emulator says so rather than quietly doing it.
GL_NOSAN inline void atomic_target(const void* p, const char* op)
{
    if (!in_child || !g.fibers) return;
    if (on_stack(reinterpret_cast<uintptr_t>(p))) {
        char what[256];
        std::snprintf(what, sizeof what, "%s on a local variable of the thread: atomics work on global and shared "
                      "memory only (on a GPU: an illegal address)", op);
        kernel_stopped(what);
    }
}
}  // namespace gl_emu
namespace gl_emu {
// An atomic is one indivisible access: with warps interleaved it takes its turn once, before it reads, and its
// read and write then make none (AtomicTurn).
struct AtomicTurn {
    GL_NOSAN AtomicTurn(const void* p, const char* op)
    {
        GL_ACROSS_BLOCKS();
        atomic_target(p, op);
#if defined(GL_EMU_INTERLEAVE)
        if (in_child && g.fibers) interleave_turn(reinterpret_cast<uintptr_t>(p));
#endif
        g.in_atomic = true;          // its read and write are one access: no lockstep step between them
    }
    GL_NOSAN ~AtomicTurn() { g.in_atomic = false; }
};
}  // namespace gl_emu
#define GL_AT(OP) ::gl_emu::AtomicTurn gl_atomic_turn(p, OP)
template <class T> inline T atomicAdd(T* p, typename gl_same<T>::type v) { GL_AT("atomicAdd"); T old = *p; *p = old + v; return old; }
template <class T> inline T atomicSub(T* p, typename gl_same<T>::type v) { GL_AT("atomicSub"); T old = *p; *p = old - v; return old; }
template <class T> inline T atomicExch(T* p, typename gl_same<T>::type v) { GL_AT("atomicExch"); T old = *p; *p = v; return old; }
template <class T> inline T atomicCAS(T* p, typename gl_same<T>::type compare, typename gl_same<T>::type v)
{ GL_AT("atomicCAS"); T old = *p; if (old == compare) *p = v; return old; }
#define GL_ATOMIC_MINMAX(T) \
    inline T atomicMax(T* p, T v) { GL_AT("atomicMax"); T old = *p; if (v > old) *p = v; return old; } \
    inline T atomicMin(T* p, T v) { GL_AT("atomicMin"); T old = *p; if (v < old) *p = v; return old; }
GL_ATOMIC_MINMAX(int)
GL_ATOMIC_MINMAX(unsigned int)
GL_ATOMIC_MINMAX(long long)
GL_ATOMIC_MINMAX(unsigned long long)
#undef GL_ATOMIC_MINMAX
#define GL_ATOMIC_BITS(T) \
    inline T atomicAnd(T* p, T v) { GL_AT("atomicAnd"); T old = *p; *p = old & v; return old; } \
    inline T atomicOr(T* p, T v) { GL_AT("atomicOr"); T old = *p; *p = old | v; return old; } \
    inline T atomicXor(T* p, T v) { GL_AT("atomicXor"); T old = *p; *p = old ^ v; return old; }
GL_ATOMIC_BITS(int)
GL_ATOMIC_BITS(unsigned int)
GL_ATOMIC_BITS(long long)
GL_ATOMIC_BITS(unsigned long long)
#undef GL_ATOMIC_BITS
// atomicInc/Dec wrap at val, as the hardware does
inline unsigned int atomicInc(unsigned int* p, unsigned int val)
{ GL_AT("atomicInc"); unsigned old = *p; *p = old >= val ? 0 : old + 1; return old; }
inline unsigned int atomicDec(unsigned int* p, unsigned int val)
{ GL_AT("atomicDec"); unsigned old = *p; *p = (old == 0 || old > val) ? val : old - 1; return old; }
#undef GL_AT
// the scoped forms (block, system) are the same operations here: one process, one memory
#define GL_SCOPED(NAME) \
    template <class... A> inline auto NAME##_block(A... a) -> decltype(NAME(a...)) { return NAME(a...); } \
    template <class... A> inline auto NAME##_system(A... a) -> decltype(NAME(a...)) { return NAME(a...); }
GL_SCOPED(atomicAdd) GL_SCOPED(atomicSub) GL_SCOPED(atomicExch) GL_SCOPED(atomicCAS) GL_SCOPED(atomicMin)
GL_SCOPED(atomicMax) GL_SCOPED(atomicAnd) GL_SCOPED(atomicOr) GL_SCOPED(atomicXor) GL_SCOPED(atomicInc)
GL_SCOPED(atomicDec)
#undef GL_SCOPED

// Loads and stores with cache hints: the hints mean nothing to a CPU.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }
inline int __float_as_int(float f) { int b; std::memcpy(&b, &f, 4); return b; }
inline float __int_as_float(int b) { float f; std::memcpy(&f, &b, 4); return f; }
inline unsigned int __float_as_uint(float f) { unsigned int b; std::memcpy(&b, &f, 4); return b; }
inline float __uint_as_float(unsigned int b) { float f; std::memcpy(&f, &b, 4); return f; }
__device__ inline void __threadfence() { GL_ACROSS_BLOCKS(); __asm__ volatile("" ::: "memory"); }
__device__ inline void __threadfence_block() { __asm__ volatile("" ::: "memory"); }
__device__ inline void __threadfence_system() { GL_ACROSS_BLOCKS(); __asm__ volatile("" ::: "memory"); }
inline long long __double_as_longlong(double d) { long long b; std::memcpy(&b, &d, 8); return b; }
inline double __longlong_as_double(long long b) { double d; std::memcpy(&d, &b, 8); return d; }
inline int __double2hiint(double d) { return (int)(__double_as_longlong(d) >> 32); }
inline int __double2loint(double d) { return (int)(unsigned int)__double_as_longlong(d); }
inline double __hiloint2double(int hi, int lo)
{ return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo)); }

// Math: CUDA's overloaded min/max and the float intrinsics.
#define GL_MINMAX(T) inline T min(T a, T b) { return b < a ? b : a; } inline T max(T a, T b) { return a < b ? b : a; }
GL_MINMAX(int)
GL_MINMAX(unsigned int)
GL_MINMAX(long long)
GL_MINMAX(unsigned long long)
GL_MINMAX(long)                      // (size_t is unsigned long on Linux: min(size_t, size_t) needs its own)
GL_MINMAX(unsigned long)
GL_MINMAX(float)
GL_MINMAX(double)
#undef GL_MINMAX
// a signed and an unsigned operand of one width: compared as the unsigned type, as CUDA's overloads do
#define GL_MINMAX_MIXED(S, U) \
    inline U min(S a, U b) { return min((U)a, b); } inline U min(U a, S b) { return min(a, (U)b); } \
    inline U max(S a, U b) { return max((U)a, b); } inline U max(U a, S b) { return max(a, (U)b); }
GL_MINMAX_MIXED(int, unsigned int)
GL_MINMAX_MIXED(long, unsigned long)
GL_MINMAX_MIXED(long long, unsigned long long)
#undef GL_MINMAX_MIXED
// and CUDA's named ones
inline unsigned int umin(unsigned int a, unsigned int b) { return min(a, b); }
inline unsigned int umax(unsigned int a, unsigned int b) { return max(a, b); }
inline long long llmin(long long a, long long b) { return min(a, b); }
inline long long llmax(long long a, long long b) { return max(a, b); }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return min(a, b); }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return max(a, b); }
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

// Integer intrinsics, bit for bit as the GPU computes them.
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x)
{ return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32)); }
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s)
{
    unsigned long long bytes = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned)((bytes >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift)
{ unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)((v << (shift & 31)) >> 32); }
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift)
{ unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)((v << (shift > 32 ? 32 : shift)) >> 32); }
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift)
{ unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)(v >> (shift & 31)); }
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift)
{ unsigned long long v = ((unsigned long long)hi << 32) | lo; return (unsigned)(v >> (shift > 32 ? 32 : shift)); }
// the bit position of the offset-th set bit of mask from bit base (up for a positive offset, down for a negative;
// offset 0: base itself if set), 0xffffffff if there is none (PTX's fns)
inline unsigned int __fns(unsigned int mask, unsigned int base, int offset)
{
    if (offset == 0) return (mask >> (base & 31)) & 1u ? base : 0xffffffffu;
    int count = (offset > 0 ? offset : -offset) - 1;
    for (int pos = (int)base, step = offset > 0 ? 1 : -1; pos >= 0 && pos < 32; pos += step)
        if ((mask >> pos) & 1u && count-- == 0) return (unsigned)pos;
    return 0xffffffffu;
}
inline int __mul24(int x, int y) { return (int)(((long long)(x << 8 >> 8) * (long long)(y << 8 >> 8))); }
inline unsigned int __umul24(unsigned int x, unsigned int y) { return (x & 0xffffffu) * (y & 0xffffffu); }
inline int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
inline unsigned int __umulhi(unsigned int x, unsigned int y) { return (unsigned)(((unsigned long long)x * y) >> 32); }
inline long long __mul64hi(long long x, long long y) { return (long long)(((__int128)x * y) >> 64); }
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y)
{ return (unsigned long long)(((unsigned __int128)x * y) >> 64); }
inline unsigned int __sad(int x, int y, unsigned int z) { return z + (unsigned)(x > y ? x - y : y - x); }
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return z + (x > y ? x - y : y - x); }
inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) { return (unsigned)(((unsigned long long)x + y) >> 1); }
inline unsigned int __urhadd(unsigned int x, unsigned int y) { return (unsigned)(((unsigned long long)x + y + 1) >> 1); }

// Rounding-mode intrinsics: the operation under the named IEEE rounding (rn nearest, rz toward zero, ru up,
// rd down), as one instruction does it on the GPU. The operands pass through volatiles so that the
// compiler cannot move the arithmetic out from between the mode changes.
namespace gl_emu {
template <class F>
inline auto rounded(int mode, F f) -> decltype(f())
{
    const int old = std::fegetround();
    std::fesetround(mode);
    volatile auto r = f();
    std::fesetround(old);
    return r;
}
}  // namespace gl_emu
#define GL_ROUND4(NAME, EXPR, T, ...) \
    inline T NAME##_rn(__VA_ARGS__) { return ::gl_emu::rounded(FE_TONEAREST, [&] { EXPR; }); } \
    inline T NAME##_rz(__VA_ARGS__) { return ::gl_emu::rounded(FE_TOWARDZERO, [&] { EXPR; }); } \
    inline T NAME##_ru(__VA_ARGS__) { return ::gl_emu::rounded(FE_UPWARD, [&] { EXPR; }); } \
    inline T NAME##_rd(__VA_ARGS__) { return ::gl_emu::rounded(FE_DOWNWARD, [&] { EXPR; }); }
#define GL_ROUND_BINARY(NAME, T, OP) GL_ROUND4(NAME, volatile T va = a; volatile T vb = b; return (T)(va OP vb), T, T a, T b)
#define GL_ROUND_UNARY(NAME, T, U, EXPR) GL_ROUND4(NAME, volatile U va = a; return (T)(EXPR), T, U a)
GL_ROUND_BINARY(__fadd, float, +) GL_ROUND_BINARY(__fsub, float, -) GL_ROUND_BINARY(__fmul, float, *)
GL_ROUND_BINARY(__fdiv, float, /)
GL_ROUND_BINARY(__dadd, double, +) GL_ROUND_BINARY(__dsub, double, -) GL_ROUND_BINARY(__dmul, double, *)
GL_ROUND_BINARY(__ddiv, double, /)
GL_ROUND_UNARY(__frcp, float, float, 1.0f / va) GL_ROUND_UNARY(__fsqrt, float, float, std::sqrt((float)va))
GL_ROUND_UNARY(__drcp, double, double, 1.0 / va) GL_ROUND_UNARY(__dsqrt, double, double, std::sqrt((double)va))
GL_ROUND_UNARY(__int2float, float, int, va) GL_ROUND_UNARY(__uint2float, float, unsigned int, va)
GL_ROUND_UNARY(__ll2float, float, long long, va) GL_ROUND_UNARY(__ull2float, float, unsigned long long, va)
GL_ROUND_UNARY(__ll2double, double, long long, va) GL_ROUND_UNARY(__ull2double, double, unsigned long long, va)
GL_ROUND_UNARY(__double2float, float, double, va)
GL_ROUND4(__fma, volatile double va = a; volatile double vb = b; volatile double vc = c;
          return std::fma((double)va, (double)vb, (double)vc), double, double a, double b, double c)
#undef GL_ROUND_BINARY
#undef GL_ROUND_UNARY
#undef GL_ROUND4
// fmaf: fmaf_rn is fmaf; the directed ones go through the same mode change
inline float __fmaf_rz(float a, float b, float c)
{ return ::gl_emu::rounded(FE_TOWARDZERO, [&] { volatile float x = a, y = b, z = c; return std::fma((float)x, (float)y, (float)z); }); }
inline float __fmaf_ru(float a, float b, float c)
{ return ::gl_emu::rounded(FE_UPWARD, [&] { volatile float x = a, y = b, z = c; return std::fma((float)x, (float)y, (float)z); }); }
inline float __fmaf_rd(float a, float b, float c)
{ return ::gl_emu::rounded(FE_DOWNWARD, [&] { volatile float x = a, y = b, z = c; return std::fma((float)x, (float)y, (float)z); }); }
inline float __fadd_ieee(float a, float b) { return a + b; }
inline float __fmul_ieee(float a, float b) { return a * b; }
inline double __int2double_rn(int a) { return (double)a; }
inline double __uint2double_rn(unsigned int a) { return (double)a; }

// Float to integer: rounded as named; NaN gives 0 and values out of range saturate, as cvt does.
namespace gl_emu {
template <class I, class F>
inline I to_int(F x, int mode)
{
    if (x != x) return 0;
    F r = mode == 0 ? std::nearbyint(x) : mode == 1 ? std::trunc(x) : mode == 2 ? std::ceil(x) : std::floor(x);
    if (r <= (F)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (r >= (F)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)r;
}
}  // namespace gl_emu
#define GL_TOINT(NAME, I, F) \
    inline I NAME##_rn(F x) { return ::gl_emu::to_int<I>(x, 0); } inline I NAME##_rz(F x) { return ::gl_emu::to_int<I>(x, 1); } \
    inline I NAME##_ru(F x) { return ::gl_emu::to_int<I>(x, 2); } inline I NAME##_rd(F x) { return ::gl_emu::to_int<I>(x, 3); }
GL_TOINT(__float2int, int, float) GL_TOINT(__float2uint, unsigned int, float)
GL_TOINT(__float2ll, long long, float) GL_TOINT(__float2ull, unsigned long long, float)
GL_TOINT(__double2int, int, double) GL_TOINT(__double2uint, unsigned int, double)
GL_TOINT(__double2ll, long long, double) GL_TOINT(__double2ull, unsigned long long, double)
#undef GL_TOINT

// Fast-math intrinsics: the GPU computes these with hardware approximations (a few ulp); the CPU's
// accurate functions are within the GPU's documented error bounds of them.
inline float __sinf(float x) { return ::sinf(x); }
inline float __cosf(float x) { return ::cosf(x); }
inline float __tanf(float x) { return ::tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = ::sinf(x); *c = ::cosf(x); }
inline float __logf(float x) { return ::logf(x); }
inline float __log2f(float x) { return ::log2f(x); }
inline float __log10f(float x) { return ::log10f(x); }
inline float __exp10f(float x) { return ::powf(10.0f, x); }
inline float __powf(float x, float y) { return ::powf(x, y); }
inline float __frsqrt_rn(float x) { return 1.0f / ::sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / ::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / ::cbrtf(x); }

// __trap() stops the kernel, as on a GPU (where the launch then fails); __builtin_assume is a hint only
[[noreturn]] inline void __trap()
{ ::gl_emu::kernel_stopped("__trap() was called (on a GPU the launch fails: unspecified launch failure)"); }
#if !defined(__clang__)
#define __builtin_assume(cond) ((void)0)
#endif
// which space a generic address is in: the block's shared memory, the thread's own (local) memory, or neither
inline unsigned int __isShared(const void* p) { return ::gl_emu::in_shared(reinterpret_cast<uintptr_t>(p)); }
inline unsigned int __isLocal(const void* p) { return ::gl_emu::on_stack(reinterpret_cast<uintptr_t>(p)); }
inline unsigned int __isGlobal(const void* p) { return !__isShared(p) && !__isLocal(p); }
// Addresses in one state space (__cvta_generic_to_shared and the rest), as PTX's cvta gives them: a shared
// address is an offset in the block's shared memory window (static_window above: the static __shared__ arrays
// from 0, the dynamic shared memory after them, as a GPU lays them out, so that an address fits the 18 bits of a
// wgmma descriptor as it does there), a local one an offset in the thread's stack, global and constant ones the
// address itself. Each _to_generic undoes its conversion.
namespace gl_emu {
GL_NOSAN inline size_t place_dynamic()
{
    if (dynamic_window < 0) dynamic_window = (long long)((static_window + 15) / 16 * 16);
    return (size_t)dynamic_window;
}
GL_NOSAN inline size_t to_shared_window(uintptr_t a)
{
    const uintptr_t arena = reinterpret_cast<uintptr_t>(shared_arena), dyn = reinterpret_cast<uintptr_t>(dynamic_shared);
    if (a - dyn < DYNAMIC_SHARED_BYTES) return place_dynamic() + (a - dyn);
    if (a - arena >= SHARED_ARENA_BYTES) return a - arena;       // not shared memory: no offset in the window
    const SharedVar* best = nullptr;                   // the array it lies in, or the last one before it
    for (unsigned i = 0; i < shared_count; ++i) {
        const uintptr_t lo = reinterpret_cast<uintptr_t>(shared_vars[i].data);
        if (lo <= a && (!best || lo > reinterpret_cast<uintptr_t>(best->data))) best = &shared_vars[i];
    }
    return best ? best->window + (a - reinterpret_cast<uintptr_t>(best->data)) : a - arena;
}
GL_NOSAN inline void* from_shared_window(size_t w)
{
    for (unsigned i = 0; i < shared_count; ++i)
        if (w >= shared_vars[i].window && w < shared_vars[i].window + shared_vars[i].bytes)
            return shared_vars[i].data + (w - shared_vars[i].window);
    if (dynamic_window < 0 && w >= static_window) place_dynamic();
    if (dynamic_window >= 0 && w >= (size_t)dynamic_window && w - (size_t)dynamic_window < DYNAMIC_SHARED_BYTES)
        return dynamic_shared + (w - (size_t)dynamic_window);
    return nullptr;                                    // no shared memory there
}
GL_NOSAN inline uintptr_t stack_base() { return reinterpret_cast<uintptr_t>(g.fibers[g.cur].stack); }
}  // namespace gl_emu
inline size_t __cvta_generic_to_shared(const void* p) { return ::gl_emu::to_shared_window(reinterpret_cast<uintptr_t>(p)); }
inline void* __cvta_shared_to_generic(size_t w) { return ::gl_emu::from_shared_window(w); }
inline size_t __cvta_generic_to_global(const void* p) { return reinterpret_cast<size_t>(p); }
inline void* __cvta_global_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
inline size_t __cvta_generic_to_constant(const void* p) { return reinterpret_cast<size_t>(p); }
inline void* __cvta_constant_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
inline size_t __cvta_generic_to_local(const void* p) { return reinterpret_cast<uintptr_t>(p) - ::gl_emu::stack_base(); }
inline void* __cvta_local_to_generic(size_t a) { return reinterpret_cast<void*>(::gl_emu::stack_base() + a); }

// CUDA's math functions that C's library lacks, each computed in long double (a 64-bit mantissa on x86, 113 bits on
// Linux AArch64; on macOS's ARM processors only a double, where the double functions come out a little less exact)
// and rounded once: within an ulp or so of the exact value, inside the GPU's documented bounds (1 to 6 ulp).
namespace gl_emu {
inline long double sinpi_l(long double x)             // sin(pi x), reduced exactly to [-1/2, 1/2] first
{
    if (std::isinf(x) || std::isnan(x)) return std::numeric_limits<long double>::quiet_NaN();
    long double r = std::fmod(x, 2.0L);                   // exact, in (-2, 2), the sign of x
    if (r == std::trunc(r)) return std::copysign(0.0L, x);
    if (r > 1.0L) r -= 2.0L;                              // (-1, 1], exact: sin(pi r) has period 2
    else if (r <= -1.0L) r += 2.0L;
    if (r > 0.5L) r = 1.0L - r;                           // [-1/2, 1/2]: sin(pi r) = sin(pi (1 - r)), exact here
    else if (r < -0.5L) r = -1.0L - r;
    return std::sin(3.141592653589793238462643383279502884L * r);
}
inline long double cospi_l(long double x)
{
    if (std::isinf(x) || std::isnan(x)) return std::numeric_limits<long double>::quiet_NaN();
    long double r = std::fmod(std::fabs(x), 2.0L);
    if (r > 1.0L) r = 2.0L - r;                           // cos(pi r) = cos(pi (2 - r))
    if (r == 0.5L) return 0.0L;
    const long double pi = 3.141592653589793238462643383279502884L;
    if (r <= 0.25L) return std::cos(pi * r);
    if (r < 0.75L) return std::sin(pi * (0.5L - r));
    return -std::cos(pi * (1.0L - r));
}
inline long double erfinv_l(long double x)             // the inverse of erf, by Newton's method on erf
{
    if (std::isnan(x) || x < -1.0L || x > 1.0L) return std::numeric_limits<long double>::quiet_NaN();
    if (x == 1.0L) return std::numeric_limits<long double>::infinity();
    if (x == -1.0L) return -std::numeric_limits<long double>::infinity();
    if (x == 0.0L) return x;
    const long double a = std::fabs(x), w = -std::log((1.0L - a) * (1.0L + a));
    long double y = std::sqrt(w) * (w < 5.0L ? 0.886L : 0.95L);      // a start on the right side of the root
    if (a < 0.5L) y = a * 0.886226925452758L;
    const long double k = 1.128379167095512573896158903121545172L;  // 2 / sqrt(pi)
    for (int i = 0; i < 60; ++i) {
        const long double f = (a < 0.5L ? std::erf(y) - a : (1.0L - a) - std::erfc(y)), step = f / (k * std::exp(-y * y));
        y -= step;
        if (std::fabs(step) <= 1e-19L * std::fabs(y)) break;
    }
    return std::copysign(y, x);
}
inline long double erfcinv_l(long double y)            // the inverse of erfc, by Newton's method on erfc
{
    if (std::isnan(y) || y < 0.0L || y > 2.0L) return std::numeric_limits<long double>::quiet_NaN();
    if (y == 0.0L) return std::numeric_limits<long double>::infinity();
    if (y == 2.0L) return -std::numeric_limits<long double>::infinity();
    if (y > 0.0625L) return erfinv_l(1.0L - y);
    long double x = std::sqrt(-std::log(y));             // erfc(x) ~ exp(-x^2) / (x sqrt(pi))
    const long double k = 1.128379167095512573896158903121545172L;
    for (int i = 0; i < 100; ++i) {
        const long double step = (std::erfc(x) - y) / (-k * std::exp(-x * x));
        x -= step;
        if (std::fabs(step) <= 1e-19L * x) break;
    }
    return x;
}
inline long double erfcx_l(long double x)              // exp(x^2) erfc(x)
{
    if (std::isnan(x)) return x;
    if (x < 26.0L) return std::exp(x * x) * std::erfc(x);   // (x^2's rounding costs under 0.2 ulp of a double here)
    if (std::isinf(x)) return 0.0L;
    long double f = x;                                    // erfc's continued fraction, evaluated from its tail:
    for (int k = 60; k >= 1; --k) f = x + (0.5L * k) / f;  // x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))
    return 0.564189583547756286948079451560772586L / f;   // 1 / (sqrt(pi) f)
}
}  // namespace gl_emu
// (sinpi and cospi are C23's too: a newer C library declares them, so the kernel's names are mapped to these)
inline float gl_emu_sinpif(float x) { return (float)::gl_emu::sinpi_l(x); }
inline float gl_emu_cospif(float x) { return (float)::gl_emu::cospi_l(x); }
inline double gl_emu_sinpi(double x) { return (double)::gl_emu::sinpi_l(x); }
inline double gl_emu_cospi(double x) { return (double)::gl_emu::cospi_l(x); }
#define sinpif gl_emu_sinpif
#define cospif gl_emu_cospif
#define sinpi gl_emu_sinpi
#define cospi gl_emu_cospi
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
inline float erfinvf(float x) { return (float)::gl_emu::erfinv_l(x); }
inline double erfinv(double x) { return (double)::gl_emu::erfinv_l(x); }
inline float erfcinvf(float x) { return (float)::gl_emu::erfcinv_l(x); }
inline double erfcinv(double x) { return (double)::gl_emu::erfcinv_l(x); }
inline float erfcxf(float x) { return (float)::gl_emu::erfcx_l(x); }
inline double erfcx(double x) { return (double)::gl_emu::erfcx_l(x); }
inline float normcdff(float x) { return (float)(0.5L * std::erfc(-(long double)x * 0.707106781186547524400844362104849039L)); }
inline double normcdf(double x) { return (double)(0.5L * std::erfc(-(long double)x * 0.707106781186547524400844362104849039L)); }
inline float normcdfinvf(float p) { return (float)(-1.414213562373095048801688724209698079L * ::gl_emu::erfcinv_l(2.0L * p)); }
inline double normcdfinv(double p) { return (double)(-1.414213562373095048801688724209698079L * ::gl_emu::erfcinv_l(2.0L * p)); }
inline float rhypotf(float x, float y) { return (float)(1.0L / std::hypot((long double)x, (long double)y)); }
inline double rhypot(double x, double y) { return (double)(1.0L / std::hypot((long double)x, (long double)y)); }
namespace gl_emu {
// the Euclidean norm of the arguments, in long double: +inf where any is infinite, even beside a NaN (as CUDA's)
template <class... T> inline long double norm_l(T... v)
{
    if ((std::isinf((long double)v) || ...)) return HUGE_VALL;
    return std::sqrt((((long double)v * v) + ...));
}
template <class T> inline long double norm_l(int dim, const T* a)
{
    long double s = 0;
    for (int i = 0; i < dim; ++i) {
        if (std::isinf(a[i])) return HUGE_VALL;
        s += (long double)a[i] * a[i];
    }
    return std::sqrt(s);
}
}  // namespace gl_emu
inline float norm3df(float a, float b, float c) { return (float)::gl_emu::norm_l(a, b, c); }
inline float norm4df(float a, float b, float c, float d) { return (float)::gl_emu::norm_l(a, b, c, d); }
inline float rnorm3df(float a, float b, float c) { return (float)(1.0L / ::gl_emu::norm_l(a, b, c)); }
inline float rnorm4df(float a, float b, float c, float d) { return (float)(1.0L / ::gl_emu::norm_l(a, b, c, d)); }
inline double norm3d(double a, double b, double c) { return (double)::gl_emu::norm_l(a, b, c); }
inline double norm4d(double a, double b, double c, double d) { return (double)::gl_emu::norm_l(a, b, c, d); }
inline double rnorm3d(double a, double b, double c) { return (double)(1.0L / ::gl_emu::norm_l(a, b, c)); }
inline double rnorm4d(double a, double b, double c, double d) { return (double)(1.0L / ::gl_emu::norm_l(a, b, c, d)); }
inline float normf(int dim, const float* a) { return (float)::gl_emu::norm_l(dim, a); }
inline float rnormf(int dim, const float* a) { return (float)(1.0L / ::gl_emu::norm_l(dim, a)); }
inline double norm(int dim, const double* a) { return (double)::gl_emu::norm_l(dim, a); }
inline double rnorm(int dim, const double* a) { return (double)(1.0L / ::gl_emu::norm_l(dim, a)); }
inline double rcbrt(double x) { return (double)(1.0L / std::cbrt((long double)x)); }
inline float fdividef(float a, float b) { return a / b; }
namespace gl_emu {
// (libstdc++'s modified Bessel functions give up far out; beyond 800 the values overflow a double anyway)
inline long double bessel_i(int n, long double x)
{
    if (std::isnan(x)) return x;
    const long double a = std::fabs(x);
    const long double v = a > 800.0L ? HUGE_VALL : std::cyl_bessel_i((long double)n, a);
    return n == 1 ? std::copysign(v, x) : v;
}
}  // namespace gl_emu
inline float cyl_bessel_i0f(float x) { return (float)::gl_emu::bessel_i(0, x); }
inline float cyl_bessel_i1f(float x) { return (float)::gl_emu::bessel_i(1, x); }
inline double cyl_bessel_i0(double x) { return (double)::gl_emu::bessel_i(0, x); }
inline double cyl_bessel_i1(double x) { return (double)::gl_emu::bessel_i(1, x); }

// SIMD within a word: the 2 x 16-bit and 4 x 8-bit intrinsics, lane by lane as the GPU computes them
namespace gl_emu {
template <int LANES, class F>
inline unsigned int simd_lanes(unsigned int a, unsigned int b, F f)
{
    constexpr int bits = 32 / LANES;
    constexpr unsigned mask = (1u << bits) - 1u;
    unsigned r = 0;
    for (int i = 0; i < LANES; ++i) {
        const unsigned ua = (a >> (bits * i)) & mask, ub = (b >> (bits * i)) & mask;
        const int sa = (int)(ua << (32 - bits)) >> (32 - bits), sb = (int)(ub << (32 - bits)) >> (32 - bits);
        r |= ((unsigned)f(sa, sb, ua, ub, bits) & mask) << (bits * i);
    }
    return r;
}
inline long long sat_s(long long v, int bits) { const long long hi = (1ll << (bits - 1)) - 1, lo = -(1ll << (bits - 1)); return v > hi ? hi : v < lo ? lo : v; }
inline long long sat_u(long long v, int bits) { const long long hi = (1ll << bits) - 1; return v > hi ? hi : v < 0 ? 0 : v; }
}  // namespace gl_emu
#define GL_SIMD(NAME, EXPR)                                                                                   \
    inline unsigned int NAME##2(unsigned int a, unsigned int b)                                                \
    { return ::gl_emu::simd_lanes<2>(a, b, [](long long sa, long long sb, long long ua, long long ub, int bits) -> long long { (void)sa; (void)sb; (void)ua; (void)ub; (void)bits; return EXPR; }); } \
    inline unsigned int NAME##4(unsigned int a, unsigned int b)                                                \
    { return ::gl_emu::simd_lanes<4>(a, b, [](long long sa, long long sb, long long ua, long long ub, int bits) -> long long { (void)sa; (void)sb; (void)ua; (void)ub; (void)bits; return EXPR; }); }
GL_SIMD(__vadd, ua + ub)
GL_SIMD(__vsub, ua - ub)
GL_SIMD(__vaddss, ::gl_emu::sat_s(sa + sb, bits))
GL_SIMD(__vsubss, ::gl_emu::sat_s(sa - sb, bits))
GL_SIMD(__vaddus, ::gl_emu::sat_u(ua + ub, bits))
GL_SIMD(__vsubus, ::gl_emu::sat_u(ua - ub, bits))
GL_SIMD(__vavgu, (ua + ub + 1) >> 1)
GL_SIMD(__vavgs, (sa + sb + (sa + sb >= 0 ? 1 : 0)) >> 1)     // halves rounded away from zero
GL_SIMD(__vhaddu, (ua + ub) >> 1)
GL_SIMD(__vabsdiffs, sa > sb ? sa - sb : sb - sa)
GL_SIMD(__vabsdiffu, ua > ub ? ua - ub : ub - ua)
GL_SIMD(__vmaxs, sa > sb ? sa : sb)
GL_SIMD(__vmaxu, ua > ub ? ua : ub)
GL_SIMD(__vmins, sa < sb ? sa : sb)
GL_SIMD(__vminu, ua < ub ? ua : ub)
GL_SIMD(__vcmpeq, ua == ub ? -1 : 0)
GL_SIMD(__vcmpne, ua != ub ? -1 : 0)
GL_SIMD(__vcmpges, sa >= sb ? -1 : 0)
GL_SIMD(__vcmpgeu, ua >= ub ? -1 : 0)
GL_SIMD(__vcmpgts, sa > sb ? -1 : 0)
GL_SIMD(__vcmpgtu, ua > ub ? -1 : 0)
GL_SIMD(__vcmples, sa <= sb ? -1 : 0)
GL_SIMD(__vcmpleu, ua <= ub ? -1 : 0)
GL_SIMD(__vcmplts, sa < sb ? -1 : 0)
GL_SIMD(__vcmpltu, ua < ub ? -1 : 0)
GL_SIMD(__vseteq, ua == ub)
GL_SIMD(__vsetne, ua != ub)
GL_SIMD(__vsetges, sa >= sb)
GL_SIMD(__vsetgeu, ua >= ub)
GL_SIMD(__vsetgts, sa > sb)
GL_SIMD(__vsetgtu, ua > ub)
GL_SIMD(__vsetles, sa <= sb)
GL_SIMD(__vsetleu, ua <= ub)
GL_SIMD(__vsetlts, sa < sb)
GL_SIMD(__vsetltu, ua < ub)
#undef GL_SIMD
inline unsigned int __vabs2(unsigned int a) { return ::gl_emu::simd_lanes<2>(a, 0, [](long long sa, long long, long long, long long, int) -> long long { return sa < 0 ? -sa : sa; }); }
inline unsigned int __vabs4(unsigned int a) { return ::gl_emu::simd_lanes<4>(a, 0, [](long long sa, long long, long long, long long, int) -> long long { return sa < 0 ? -sa : sa; }); }
inline unsigned int __vabsss2(unsigned int a) { return ::gl_emu::simd_lanes<2>(a, 0, [](long long sa, long long, long long, long long, int bits) -> long long { return ::gl_emu::sat_s(sa < 0 ? -sa : sa, bits); }); }
inline unsigned int __vabsss4(unsigned int a) { return ::gl_emu::simd_lanes<4>(a, 0, [](long long sa, long long, long long, long long, int bits) -> long long { return ::gl_emu::sat_s(sa < 0 ? -sa : sa, bits); }); }
inline unsigned int __vneg2(unsigned int a) { return __vsub2(0u, a); }
inline unsigned int __vneg4(unsigned int a) { return __vsub4(0u, a); }
inline unsigned int __vnegss2(unsigned int a) { return __vsubss2(0u, a); }
inline unsigned int __vnegss4(unsigned int a) { return __vsubss4(0u, a); }
inline unsigned int __vsads2(unsigned int a, unsigned int b) { unsigned d = __vabsdiffs2(a, b); return (d & 0xffffu) + (d >> 16); }
inline unsigned int __vsadu2(unsigned int a, unsigned int b) { unsigned d = __vabsdiffu2(a, b); return (d & 0xffffu) + (d >> 16); }
inline unsigned int __vsads4(unsigned int a, unsigned int b)
{ unsigned d = __vabsdiffs4(a, b); return (d & 0xffu) + ((d >> 8) & 0xffu) + ((d >> 16) & 0xffu) + (d >> 24); }
inline unsigned int __vsadu4(unsigned int a, unsigned int b)
{ unsigned d = __vabsdiffu4(a, b); return (d & 0xffu) + ((d >> 8) & 0xffu) + ((d >> 16) & 0xffu) + (d >> 24); }
// dot products of bytes (and of 16-bit halves with bytes), accumulated into c: DP4A and DP2A
inline int __dp4a(int a, int b, int c)                // (wrapping, as the GPU's 32-bit accumulator does)
{ unsigned s = (unsigned)c; for (int i = 0; i < 4; ++i) s += (unsigned)((int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i))); return (int)s; }
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c)
{ unsigned s = c; for (int i = 0; i < 4; ++i) s += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu); return s; }
inline int __dp2a_lo(int a, int b, int c)
{ return (int)((unsigned)c + (unsigned)((int)(short)a * (int)(signed char)b) + (unsigned)((int)(short)(a >> 16) * (int)(signed char)(b >> 8))); }
inline int __dp2a_hi(int a, int b, int c)
{ return (int)((unsigned)c + (unsigned)((int)(short)a * (int)(signed char)(b >> 16)) + (unsigned)((int)(short)(a >> 16) * (int)(signed char)(b >> 24))); }
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c)
{ return c + (a & 0xffffu) * (b & 0xffu) + (a >> 16) * ((b >> 8) & 0xffu); }
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c)
{ return c + (a & 0xffffu) * ((b >> 16) & 0xffu) + (a >> 16) * (b >> 24); }
// (the vector forms: the bytes of a char4, the halves of a short2)
template <class V> inline unsigned int gl_bits32(V v) { static_assert(sizeof(V) == 4, "32-bit vector"); unsigned u; std::memcpy(&u, &v, 4); return u; }
inline int __dp4a(char4 a, char4 b, int c) { return __dp4a((int)gl_bits32(a), (int)gl_bits32(b), c); }
inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) { return __dp4a(gl_bits32(a), gl_bits32(b), c); }
inline int __dp2a_lo(short2 a, char4 b, int c) { return __dp2a_lo((int)gl_bits32(a), (int)gl_bits32(b), c); }
inline int __dp2a_hi(short2 a, char4 b, int c) { return __dp2a_hi((int)gl_bits32(a), (int)gl_bits32(b), c); }
inline unsigned int __dp2a_lo(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_lo(gl_bits32(a), gl_bits32(b), c); }
inline unsigned int __dp2a_hi(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_hi(gl_bits32(a), gl_bits32(b), c); }


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
// the size of each of a kernel's parameters (what a launch must pass for each: a struct by value is checked
// against it), into out; returns how many there are
template <class... P>
GL_NOSAN inline unsigned param_sizes(void (*)(P...), unsigned long long* out)
{
    unsigned i = 0;
    ((out[i++] = sizeof(std::remove_cv_t<std::remove_reference_t<P>>)), ...);
    (void)out;
    return i;
}

// Map fiber stacks for `threads` threads, in the child process (so the parent, which may run many
// kernels, never accumulates mappings; and with mmap, not malloc, which is unsafe after fork).
GL_NOSAN inline int prepare(unsigned threads)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t stack = 1024 * 1024;           // CUDA allows up to 512 KiB of local memory a thread
    void* table = mmap(nullptr, threads * sizeof(Fiber), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (table == MAP_FAILED) return -1;
    Fiber* fibers = static_cast<Fiber*>(table);
    // one mapping for all stacks, each with an inaccessible guard page below it: an overflow faults
    const size_t each = stack + page;
    char* all = static_cast<char*>(mmap(nullptr, each * threads, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (all == MAP_FAILED) return -1;
#if defined(MADV_NOHUGEPAGE)
    madvise(all, each * threads, MADV_NOHUGEPAGE);   // a first touch must not zero a 2 MiB page
#endif
    for (unsigned i = 0; i < threads; ++i) {
        char* region = all + i * each;
        mprotect(region, page, PROT_NONE);
        fibers[i].stack = region + page;
    }
    ensure_shadow(reinterpret_cast<uintptr_t>(all), reinterpret_cast<uintptr_t>(all) + each * threads);
    g.fibers = fibers;
    g.capacity = threads;
    g.stack_size = stack;
    return 0;
}

// Whether this module's blocks may run in several processes at once: none of its code reaches across blocks
// (no atomic, no __threadfence: GL_ACROSS_BLOCKS), no volatile memory (lockstep: a flag another block raises),
// no racecheck (its hazards are gathered in one process) and no heap (GL_EMU_HEAP_USER: its addresses and which
// request finds it full would depend on how the processes interleave). launch.py also keeps a module with __device__
// variables in one process (each process would write its own copy back).
GL_NOSAN inline int blocks_independent()
{
#if defined(GL_EMU_LOCKSTEP) || defined(GL_EMU_RACECHECK) || defined(GL_EMU_HEAP_USER)
    return 0;
#else
    return static_cast<const char*>(__start_gl_across_blocks) == static_cast<const char*>(__stop_gl_across_blocks);
#endif
}

// Fork; the child runs the blocks first .. first + count - 1 of the grid and exits (with `out` >= 0, what it
// prints goes there, for the parent to pass on after the earlier blocks' output). Returns the child's pid (or -1).
GL_NOSAN inline long fork_launch(void (*body)(void**), const char* kernel, const unsigned* grid, const unsigned* block,
                        unsigned long long shared_bytes, void** args, Status* status, const Region* regions,
                        unsigned region_count, unsigned long long first, unsigned long long count, int out)
{
    unsigned threads = block[0] * block[1] * block[2];
    std::fflush(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    // the child: it dies with its parent (a killed notebook kernel leaves no emulated launch behind)
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) _exit(1);
    if (out >= 0) { dup2(out, 1); close(out); }
    // the fault handler first: it also maps the memory check's shadow as the child first touches it
    static char alt[64 * 1024];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};   // no helper calls before this
    for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; ++i) sigaction(faults[i], &sa, nullptr);
    g.status = status;
    in_child = true;
    if (shared_overflow[0]) {
        status->code = 1;
        std::snprintf(status->message, sizeof status->message, "%s", shared_overflow);
        _exit(1);
    }
    if (prepare(threads * cluster_blocks) != 0) {
        status->code = 1;
        std::snprintf(status->message, sizeof status->message, "kernel %s: the emulator could not map stacks "
                      "for %u threads", kernel, threads * cluster_blocks);
        _exit(1);
    }
    g.n = threads;
    g.kernel = kernel;
    g.body = body;
    g.args = args;
    g.grid_dim = dim3(grid[0], grid[1], grid[2]);
    g.block_dim = dim3(block[0], block[1], block[2]);
    g.status = status;
    g.failed = false;
    for (unsigned j = 0; j < threads * cluster_blocks; ++j) {   // (a cluster's blocks: a table of threads each)
        Fiber& f = g.fibers[j];
        const unsigned i = j % threads;
        f.linear = i;
        f.tid = dim3(i % block[0], (i / block[0]) % block[1], i / (block[0] * block[1]));
    }
    if (shared_bytes > DYNAMIC_SHARED_BYTES) {
        status->code = 1;
        std::snprintf(status->message, sizeof status->message, "kernel %s: shared_mem = %llu bytes is more than "
                      "the emulator's %zu KiB of dynamic shared memory", kernel, shared_bytes,
                      DYNAMIC_SHARED_BYTES / 1024);
        _exit(1);
    }
    dynamic_shared_given = shared_bytes;
    if (shared_bytes) std::memset(dynamic_shared, 0xff, shared_bytes);   // NaN-poisoned, like a fresh block
    mark_bounds(regions, region_count, shared_bytes);
    if (prepare_clusters(threads) != 0) {
        status->code = 1;
        std::snprintf(status->message, sizeof status->message, "kernel %s: the emulator could not keep the shared "
                      "memory of a cluster's blocks", kernel);
        _exit(1);
    }
    if (!heap_bounds(status->message, sizeof status->message)) {
        status->code = 1;
        _exit(1);
    }
    g.switches = 0;
    run_grid(first, count);
    std::fflush(nullptr);
    status->switches = g.switches;
    if (!g.failed && device_vars_out && __start_gl_device_vars)
        std::memcpy(device_vars_out, __start_gl_device_vars, (size_t)(__stop_gl_device_vars - __start_gl_device_vars));
    if (!g.failed) status->code = 0;
    _exit(g.failed ? 1 : 0);
}

}  // namespace gl_emu

// Shared memory (seen by the parent and the forked child) for `bytes` of data, in gl_emu::mapping_for's layout.
GL_EXPORT GL_NOSAN void* gl_emu_shared_alloc(unsigned long long bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const gl_emu::Mapping m = gl_emu::mapping_for(bytes);
    char* region = static_cast<char*>(mmap(nullptr, m.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (region == MAP_FAILED) return nullptr;
    mprotect(region, page, PROT_NONE);
    mprotect(region + m.total - page, page, PROT_NONE);
    return region + m.offset;
}

GL_EXPORT GL_NOSAN void gl_emu_shared_free(void* data, unsigned long long bytes)
{
    const gl_emu::Mapping m = gl_emu::mapping_for(bytes);
    munmap(static_cast<char*>(data) - m.offset, m.total);
}

GL_EXPORT GL_NOSAN unsigned long long gl_emu_status_size() { return sizeof(gl_emu::Status); }

GL_EXPORT GL_NOSAN int gl_emu_blocks_independent() { return gl_emu::blocks_independent(); }

// The next launch's clusters (its kernel's __cluster_dims__; 1, 1, 1 for none): set before the fork
GL_EXPORT GL_NOSAN void gl_emu_set_cluster(unsigned x, unsigned y, unsigned z)
{
    gl_emu::cluster_dims[0] = x;
    gl_emu::cluster_dims[1] = y;
    gl_emu::cluster_dims[2] = z;
    gl_emu::cluster_blocks = x * y * z;
}

// The __device__ variables of this library (GL_DEVICE_VARIABLE): where they are and how many bytes.
GL_EXPORT GL_NOSAN void* gl_emu_device_vars(unsigned long long* bytes, void* out)
{
    gl_emu::device_vars_out = out;
    *bytes = __start_gl_device_vars ? (unsigned long long)(__stop_gl_device_vars - __start_gl_device_vars) : 0;
    return __start_gl_device_vars;
}

// The inline PTX the emulator runs (gemmlab_ptx.h), for a source whose asm the loader rewrote into its calls
#if defined(GL_EMU_PTX)
#include "gemmlab_ptx.h"
#else
namespace gl_emu {
GL_NOSAN inline int describe_ptx_wait(const Fiber&, char* out, size_t size) { return std::snprintf(out, size, "?"); }
}
#endif

// memcpy, memmove and memset in a kernel, checked as its loads and stores are: the compiler leaves these calls
// unchecked (a size it cannot see, and even a small constant one), so they come here, where the memory check sees
// both ranges (an access outside an array, a byte another block wrote) before the copy. The names are macros,
// defined after every header the emulator itself includes, so only the kernel's code and what it includes reach
// these (the emulator's stand-in headers copy their own bytes with __builtin_memcpy); outside a launch they copy
// only.
GL_NOSAN __attribute__((noinline)) inline void* gl_emu_checked_copy(void* d, const void* s, size_t n, bool overlap)
{
    if (::gl_emu::in_child && n) {
        const void* ret = __builtin_return_address(0);
        ::gl_emu::shadow_check(reinterpret_cast<uintptr_t>(s), n, false, ret);
        ::gl_emu::shadow_check(reinterpret_cast<uintptr_t>(d), n, true, ret);
    }
    return overlap ? __builtin_memmove(d, s, n) : __builtin_memcpy(d, s, n);
}
GL_NOSAN __attribute__((noinline)) inline void* gl_emu_checked_set(void* d, int c, size_t n)
{
    if (::gl_emu::in_child && n)
        ::gl_emu::shadow_check(reinterpret_cast<uintptr_t>(d), n, true, __builtin_return_address(0));
    return __builtin_memset(d, c, n);
}
// (inlined into the kernel: `std::memcpy` works too, and the check names the kernel's line; a copy of 1, 2, 4, 8 or 16
// bytes, a size the compiler knows, the bit casts of type punning, stays a load and a store, which it checks)
template <class T> using gl_emu_unaligned = T __attribute__((may_alias, aligned(1)));
__attribute__((always_inline)) inline bool gl_emu_small_copy(void* d, const void* s, size_t n)
{
    if (!__builtin_constant_p(n)) return false;
    switch (n) {
    case 1: *static_cast<gl_emu_unaligned<unsigned char>*>(d) = *static_cast<const gl_emu_unaligned<unsigned char>*>(s); return true;
    case 2: *static_cast<gl_emu_unaligned<unsigned short>*>(d) = *static_cast<const gl_emu_unaligned<unsigned short>*>(s); return true;
    case 4: *static_cast<gl_emu_unaligned<unsigned>*>(d) = *static_cast<const gl_emu_unaligned<unsigned>*>(s); return true;
    case 8: *static_cast<gl_emu_unaligned<unsigned long long>*>(d) =
                *static_cast<const gl_emu_unaligned<unsigned long long>*>(s); return true;
    case 16: {
        const unsigned long long lo = *static_cast<const gl_emu_unaligned<unsigned long long>*>(s),
                                 hi = static_cast<const gl_emu_unaligned<unsigned long long>*>(s)[1];
        static_cast<gl_emu_unaligned<unsigned long long>*>(d)[0] = lo;
        static_cast<gl_emu_unaligned<unsigned long long>*>(d)[1] = hi;
        return true;
    }
    default: return false;
    }
}
__attribute__((always_inline)) inline void* gl_emu_memcpy(void* d, const void* s, size_t n)
{
    if (gl_emu_small_copy(d, s, n)) {
        asm volatile("" ::"r"(d) : "memory");      // (made, and checked, even where nothing reads it back)
        return d;
    }
    void* r = gl_emu_checked_copy(d, s, n, false);
    asm volatile("" ::: "memory");           // (not a tail call: the check names the kernel's line)
    return r;
}
__attribute__((always_inline)) inline void* gl_emu_memmove(void* d, const void* s, size_t n)
{
    void* r = gl_emu_checked_copy(d, s, n, true);
    asm volatile("" ::: "memory");
    return r;
}
__attribute__((always_inline)) inline void* gl_emu_memset(void* d, int c, size_t n)
{
    void* r = gl_emu_checked_set(d, c, n);
    asm volatile("" ::: "memory");
    return r;
}
namespace std { using ::gl_emu_memcpy; using ::gl_emu_memmove; using ::gl_emu_memset; }
#if defined(GL_EMU_MEMCHECK)
#define memcpy gl_emu_memcpy
#define memmove gl_emu_memmove
#define memset gl_emu_memset
#endif
