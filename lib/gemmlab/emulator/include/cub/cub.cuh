// Emulator version of CUB's block- and warp-wide collectives (<cub/cub.cuh> and the headers of cub/block,
// cub/warp, cub/thread and cub/util_*), written for the emulator, with CUB's interfaces and its results:
//
//   WarpReduce, WarpScan        logical warps of a power of two threads up to 32 (shuffles, as CUB's default)
//   BlockReduce                 Sum / Reduce of one item, an array of items, or the first num_valid threads;
//                               the aggregate in thread 0 (the other threads hold their warp's partial, as with
//                               CUB's warp-reductions algorithm, whose order of operations is the one kept here)
//   BlockScan                   Inclusive/Exclusive Sum and Scan, with an initial value, the block aggregate or a
//                               prefix callback (called by the first warp; lane 0's answer is the prefix)
//   BlockLoad, BlockStore       every algorithm (DIRECT, STRIPED, VECTORIZE, TRANSPOSE, WARP_TRANSPOSE...), the
//                               items blocked (striped for the STRIPED ones), guarded by valid_items, oob default
//   BlockExchange               striped/warp-striped <-> blocked, scatter by rank
//   BlockRadixSort              Sort / SortDescending (keys, or keys and values; a bit range), stable, blocked
//                               or blocked-to-striped, in CUB's key order (-0.0 and +0.0 one key, NaNs by their bits)
//   LoadDirect*/StoreDirect*, ThreadLoad/ThreadStore, ThreadReduce, the operators (Sum, Max, Min, ArgMax, ArgMin,
//   Equality, Inequality), KeyValuePair, NullType, Traits, Uninitialized, LaneId, WarpId, CTA_SYNC, WARP_SYNC,
//   ShuffleUp/Down/Index, DivideAndRoundUp and CUB's macros.
//
// Every algorithm of an enum gives the same result, up to the order of floating-point operations (BLOCK_REDUCE_
// RAKING and BLOCK_SCAN_RAKING combine in the order kept here, the warp-reductions order). As in CUB, a collective
// needs every thread of the block (of the logical warp) to call it, and a TempStorage used again needs a
// __syncthreads() between. CUB's device-wide algorithms (cub::Device*, launched from the host), its iterators and
// its grid-level pieces are not here: their headers are refused by name.
#pragma once
#include "gemmlab_emu.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"
#include <limits>
#include <type_traits>

#define CUB_VERSION 200800
#define CUB_NAMESPACE_BEGIN namespace cub {
#define CUB_NAMESPACE_END }
#define CUB_PTX_WARP_THREADS 32
#define CUB_WARP_THREADS(unused) 32
#define CUB_LOG_WARP_THREADS(unused) 5
#define CUB_PTX_ARCH __CUDA_ARCH__
#define CUB_RUNTIME_FUNCTION
#define CUB_MAX(a, b) (((b) > (a)) ? (b) : (a))
#define CUB_MIN(a, b) (((b) < (a)) ? (b) : (a))
#define CUB_QUOTIENT_FLOOR(x, y) ((x) / (y))
#define CUB_QUOTIENT_CEILING(x, y) (((x) + (y) - 1) / (y))
#define CUB_ROUND_UP_NEAREST(x, y) ((((x) + (y) - 1) / (y)) * (y))
#define CUB_ROUND_DOWN_NEAREST(x, y) (((x) / (y)) * (y))
#define CUB_STATIC_ASSERT(cond, msg) static_assert(cond, #msg)

#ifndef GL_EMU_SHARED_MEM_CONFIG
#define GL_EMU_SHARED_MEM_CONFIG
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault, cudaSharedMemBankSizeFourByte, cudaSharedMemBankSizeEightByte };
#endif

namespace cub {

// ---------------------------------------------------------------------------------------------- types, operators
struct NullType {};
template <int A> struct Int2Type { enum { VALUE = A }; };
template <class T> struct Uninitialized {
    alignas(T) unsigned char storage[sizeof(T)];
    T& Alias() { return *reinterpret_cast<T*>(storage); }
};

template <class K, class V>
struct KeyValuePair {
    typedef K Key;
    typedef V Value;
    K key;
    V value;
    KeyValuePair() = default;
    KeyValuePair(const K& k, const V& v) : key(k), value(v) {}
    bool operator==(const KeyValuePair& b) const { return key == b.key && value == b.value; }
    bool operator!=(const KeyValuePair& b) const { return !(*this == b); }
};

struct Sum { template <class T, class U> auto operator()(const T& a, const U& b) const { return a + b; } };
struct Max { template <class T, class U> auto operator()(const T& a, const U& b) const { return (a < b) ? b : a; } };
struct Min { template <class T, class U> auto operator()(const T& a, const U& b) const { return (b < a) ? b : a; } };
struct Equality { template <class T, class U> bool operator()(const T& a, const U& b) const { return a == b; } };
struct Inequality { template <class T, class U> bool operator()(const T& a, const U& b) const { return a != b; } };
struct ArgMax {      // the larger value; of equal values the smaller key
    template <class T> T operator()(const T& a, const T& b) const
    { return ((b.value > a.value) || ((a.value == b.value) && (b.key < a.key))) ? b : a; }
};
struct ArgMin {      // the smaller value; of equal values the smaller key
    template <class T> T operator()(const T& a, const T& b) const
    { return ((b.value < a.value) || ((a.value == b.value) && (b.key < a.key))) ? b : a; }
};
template <class Op> struct ReduceBySegmentOp { Op op; };

template <class T> struct Traits {
    static T Max() { return std::numeric_limits<T>::max(); }
    static T Lowest() { return std::numeric_limits<T>::lowest(); }
};
template <class T> struct FpLimits {
    static T Max() { return std::numeric_limits<T>::max(); }
    static T Lowest() { return std::numeric_limits<T>::lowest(); }
};

template <class T> constexpr T DivideAndRoundUp(T n, T d) { return (n + d - 1) / d; }
template <int N> struct Log2 { enum { VALUE = (N <= 1) ? 0 : 1 + Log2<(N + 1) / 2>::VALUE }; };
template <> struct Log2<1> { enum { VALUE = 0 }; };
template <int N> struct PowerOfTwo { enum { VALUE = (N > 0) && ((N & (N - 1)) == 0) }; };

// ---------------------------------------------------------------------------------------------- thread helpers
inline unsigned RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z)
{
    return ((block_dim_z == 1) ? 0 : (threadIdx.z * block_dim_x * block_dim_y)) +
           ((block_dim_y == 1) ? 0 : (threadIdx.y * block_dim_x)) + threadIdx.x;
}
namespace gl_detail {
inline unsigned linear() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
// the lanes of this thread's warp that exist (the block's last warp may be partial)
inline unsigned warp_lanes()
{
    const unsigned first = linear() & ~31u, n = block_threads() - first;
    return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}
template <class T> inline T shfl_up(unsigned mask, T v, int d, int width)
{ return ::gl_emu::shfl_any(::gl_emu::OP_SHFL_UP, mask, v, __FILE__, __LINE__, d, width); }
template <class T> inline T shfl_down(unsigned mask, T v, int d, int width)
{ return ::gl_emu::shfl_any(::gl_emu::OP_SHFL_DOWN, mask, v, __FILE__, __LINE__, d, width); }
template <class T> inline T shfl_idx(unsigned mask, T v, int lane, int width)
{ return ::gl_emu::shfl_any(::gl_emu::OP_SHFL, mask, v, __FILE__, __LINE__, lane, width); }
// shared memory a collective constructed without TempStorage uses (CUB's private storage): one per type
template <class S> inline S& private_storage()
{
    static S& s = (*::gl_emu::shared_array<S[1]>("cub private TempStorage", __FILE__, __LINE__, 0))[0];
    return s;
}
}  // namespace gl_detail

inline unsigned LaneId() { return gl_detail::linear() & 31u; }
inline unsigned WarpId() { return gl_detail::linear() >> 5; }
inline unsigned LaneMaskLt() { return (1u << LaneId()) - 1u; }
inline unsigned LaneMaskLe() { return LaneMaskLt() | (1u << LaneId()); }
inline unsigned LaneMaskGt() { return ~LaneMaskLe(); }
inline unsigned LaneMaskGe() { return ~LaneMaskLt(); }
inline void CTA_SYNC() { __syncthreads(); }
inline int CTA_SYNC_AND(int p) { return __syncthreads_and(p); }
inline int CTA_SYNC_OR(int p) { return __syncthreads_or(p); }
inline void WARP_SYNC(unsigned mask) { __syncwarp(mask); }
inline unsigned WARP_BALLOT(int p, unsigned mask) { return __ballot_sync(mask, p); }
inline int WARP_ANY(int p, unsigned mask) { return __any_sync(mask, p); }
inline int WARP_ALL(int p, unsigned mask) { return __all_sync(mask, p); }

// the source lane is this lane -/+ offset within its logical warp of LOGICAL threads; out of it, the own value
template <int LOGICAL, class T> inline T ShuffleUp(T input, int src_offset, int first_thread, unsigned member_mask)
{
    T got = gl_detail::shfl_up(member_mask, input, src_offset, LOGICAL);
    return (int)(LaneId() % LOGICAL) - src_offset >= first_thread ? got : input;
}
template <int LOGICAL, class T> inline T ShuffleDown(T input, int src_offset, int last_thread, unsigned member_mask)
{
    T got = gl_detail::shfl_down(member_mask, input, src_offset, LOGICAL);
    return (int)(LaneId() % LOGICAL) + src_offset <= last_thread ? got : input;
}
template <int LOGICAL, class T> inline T ShuffleIndex(T input, int src_lane, unsigned member_mask)
{ return gl_detail::shfl_idx(member_mask, input, src_lane, LOGICAL); }

enum CacheLoadModifier { LOAD_DEFAULT, LOAD_CA, LOAD_CG, LOAD_CS, LOAD_CV, LOAD_LDG, LOAD_VOLATILE };
enum CacheStoreModifier { STORE_DEFAULT, STORE_WB, STORE_CG, STORE_CS, STORE_WT, STORE_VOLATILE };
// (cache hints change no value: a plain load and store)
template <CacheLoadModifier M, class It> inline auto ThreadLoad(It it) { return *it; }
template <CacheStoreModifier M, class It, class T> inline void ThreadStore(It it, T v) { *it = v; }

template <int N, class T, class Op> inline T ThreadReduce(const T (&items)[N], Op op, T prefix)
{
    for (int i = 0; i < N; ++i) prefix = op(prefix, items[i]);
    return prefix;
}
template <int N, class T, class Op> inline T ThreadReduce(const T (&items)[N], Op op)
{
    T r = items[0];
    for (int i = 1; i < N; ++i) r = op(r, items[i]);
    return r;
}
namespace internal { using cub::ThreadReduce; }

// ---------------------------------------------------------------------------------------------- warp collectives
namespace gl_detail {
template <int L> struct LogicalWarp {
    static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0,
                  "the emulator's CUB runs warp collectives on logical warps of a power of two threads up to 32");
    static unsigned lane() { return LaneId() % L; }
    static unsigned mask()
    {
        const unsigned m = L == 32 ? 0xffffffffu : (((1u << L) - 1u) << (LaneId() / L * L));
        return m & warp_lanes();
    }
    // lanes of this logical warp that exist
    static int present() { return __builtin_popcount(mask()); }
    // reduce over the first `valid` lanes: lane 0 gets the aggregate (offsets 1, 2, 4, ...: CUB's order)
    template <class T, class Op> static T reduce(T x, Op op, int valid)
    {
        const int lane_id = (int)lane();
        const int last = (valid < present() ? valid : present()) - 1;
        const unsigned m = mask();
        for (int offset = 1; offset < L; offset *= 2) {
            T peer = shfl_down(m, x, offset, L);
            if (lane_id + offset <= last) x = op(x, peer);
        }
        return x;
    }
    template <class T, class Op> static T inclusive(T x, Op op)
    {
        const int lane_id = (int)lane();
        const unsigned m = mask();
        for (int offset = 1; offset < L; offset *= 2) {
            T peer = shfl_up(m, x, offset, L);
            if (lane_id >= offset) x = op(peer, x);
        }
        return x;
    }
    template <class T> static T broadcast(T x, int src) { return shfl_idx(mask(), x, src, L); }
};
}  // namespace gl_detail

template <class T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpReduce {
    using W = gl_detail::LogicalWarp<LOGICAL_WARP_THREADS>;
public:
    struct TempStorage { unsigned char unused; };
    WarpReduce(TempStorage&) {}
    template <class Op> T Reduce(T input, Op op) { return W::reduce(input, op, LOGICAL_WARP_THREADS); }
    template <class Op> T Reduce(T input, Op op, int valid_items) { return W::reduce(input, op, valid_items); }
    T Sum(T input) { return W::reduce(input, cub::Sum(), LOGICAL_WARP_THREADS); }
    T Sum(T input, int valid_items) { return W::reduce(input, cub::Sum(), valid_items); }
    // segmented: a flag starts (Head) or ends (Tail) a segment; each segment's first lane gets its aggregate
    template <class F> T HeadSegmentedSum(T input, F head_flag) { return HeadSegmentedReduce(input, head_flag, cub::Sum()); }
    template <class F> T TailSegmentedSum(T input, F tail_flag) { return TailSegmentedReduce(input, tail_flag, cub::Sum()); }
    template <class F, class Op> T HeadSegmentedReduce(T input, F head_flag, Op op)
    { return segmented(input, flags(head_flag) | 1u, op); }             // lane 0 always starts a segment
    template <class F, class Op> T TailSegmentedReduce(T input, F tail_flag, Op op)
    { return segmented(input, (flags(tail_flag) << 1) | 1u, op); }      // the lane after a tail starts one
private:
    template <class F> static unsigned flags(F flag)        // this logical warp's flags, lane 0 in bit 0
    { return __ballot_sync(W::mask(), flag ? 1 : 0) >> (LaneId() / LOGICAL_WARP_THREADS * LOGICAL_WARP_THREADS); }
    // each segment's first lane gets the segment's aggregate (heads: the lanes that start one)
    template <class Op> static T segmented(T input, unsigned heads, Op op)
    {
        const int lane = (int)W::lane();
        const unsigned after = heads & ~((2u << lane) - 1u);   // the next segment's first lane
        const int last = after ? __builtin_ctz(after) - 1 : W::present() - 1;
        for (int offset = 1; offset < LOGICAL_WARP_THREADS; offset *= 2) {
            T peer = gl_detail::shfl_down(W::mask(), input, offset, LOGICAL_WARP_THREADS);
            if (lane + offset <= last) input = op(input, peer);
        }
        return input;
    }
};

template <class T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpScan {
    using W = gl_detail::LogicalWarp<LOGICAL_WARP_THREADS>;
    static T exclusive_from(T inclusive, T first)
    {
        T up = gl_detail::shfl_up(W::mask(), inclusive, 1, LOGICAL_WARP_THREADS);
        return W::lane() == 0 ? first : up;
    }
public:
    struct TempStorage { unsigned char unused; };
    WarpScan(TempStorage&) {}
    void InclusiveSum(T input, T& out) { out = W::inclusive(input, cub::Sum()); }
    void InclusiveSum(T input, T& out, T& warp_aggregate)
    {
        out = W::inclusive(input, cub::Sum());
        warp_aggregate = W::broadcast(out, LOGICAL_WARP_THREADS - 1);
    }
    void ExclusiveSum(T input, T& out) { out = exclusive_from(W::inclusive(input, cub::Sum()), T(0)); }
    void ExclusiveSum(T input, T& out, T& warp_aggregate)
    {
        T inc = W::inclusive(input, cub::Sum());
        warp_aggregate = W::broadcast(inc, LOGICAL_WARP_THREADS - 1);
        out = exclusive_from(inc, T(0));
    }
    template <class Op> void InclusiveScan(T input, T& out, Op op) { out = W::inclusive(input, op); }
    template <class Op> void InclusiveScan(T input, T& out, Op op, T& warp_aggregate)
    {
        out = W::inclusive(input, op);
        warp_aggregate = W::broadcast(out, LOGICAL_WARP_THREADS - 1);
    }
    template <class Op> void InclusiveScan(T input, T& out, T initial_value, Op op)
    {
        out = op(initial_value, W::inclusive(input, op));
    }
    template <class Op> void ExclusiveScan(T input, T& out, Op op)    // lane 0's output is undefined in CUB
    {
        T inc = W::inclusive(input, op);
        out = exclusive_from(inc, input);
    }
    template <class Op> void ExclusiveScan(T input, T& out, T initial_value, Op op)
    {
        T inc = W::inclusive(input, op);
        T up = exclusive_from(inc, initial_value);
        out = W::lane() == 0 ? initial_value : op(initial_value, up);
    }
    template <class Op> void ExclusiveScan(T input, T& out, T initial_value, Op op, T& warp_aggregate)
    {
        T inc = W::inclusive(input, op);
        warp_aggregate = W::broadcast(inc, LOGICAL_WARP_THREADS - 1);
        T up = exclusive_from(inc, initial_value);
        out = W::lane() == 0 ? initial_value : op(initial_value, up);
    }
    template <class Op> void Scan(T input, T& inclusive_output, T& exclusive_output, Op op)
    {
        inclusive_output = W::inclusive(input, op);
        exclusive_output = exclusive_from(inclusive_output, input);
    }
    template <class Op> void Scan(T input, T& inclusive_output, T& exclusive_output, T initial_value, Op op)
    {
        T inc = W::inclusive(input, op);
        T up = exclusive_from(inc, initial_value);
        exclusive_output = W::lane() == 0 ? initial_value : op(initial_value, up);
        inclusive_output = op(initial_value, inc);
    }
    T Broadcast(T input, unsigned src_lane) { return W::broadcast(input, (int)src_lane); }
};

// ---------------------------------------------------------------------------------------------- block reduce
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS,
                            BLOCK_REDUCE_WARP_REDUCTIONS_NONDETERMINISTIC };

template <class T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, WARPS = (THREADS + 31) / 32;
    struct Storage { Uninitialized<T> warp_aggregates[WARPS]; };
    using W = gl_detail::LogicalWarp<32>;
    Storage& temp_;
    unsigned tid_;
    template <class Op> T reduce(T x, Op op, int num_valid)
    {
        const int warp = (int)(tid_ >> 5), lane = (int)(tid_ & 31u);
        const int warp_valid = num_valid - warp * 32;
        x = W::reduce(x, op, warp_valid < 32 ? (warp_valid > 0 ? warp_valid : 1) : 32);
        if (lane == 0) temp_.warp_aggregates[warp].Alias() = x;
        __syncthreads();
        if (tid_ == 0)
            for (int w = 1; w < WARPS; ++w)
                if (w * 32 < num_valid) x = op(x, temp_.warp_aggregates[w].Alias());
        return x;
    }
public:
    struct TempStorage : Uninitialized<Storage> {};
    BlockReduce() : temp_(gl_detail::private_storage<TempStorage>().Alias()), tid_(RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockReduce(TempStorage& t) : temp_(t.Alias()), tid_(RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    template <class Op> T Reduce(T input, Op op) { return reduce(input, op, THREADS); }
    template <int N, class Op> T Reduce(T (&inputs)[N], Op op) { return reduce(ThreadReduce(inputs, op), op, THREADS); }
    template <class Op> T Reduce(T input, Op op, int num_valid)
    { return reduce(input, op, num_valid < THREADS ? num_valid : THREADS); }
    T Sum(T input) { return Reduce(input, cub::Sum()); }
    template <int N> T Sum(T (&inputs)[N]) { return Reduce(inputs, cub::Sum()); }
    T Sum(T input, int num_valid) { return Reduce(input, cub::Sum(), num_valid); }
};

// ---------------------------------------------------------------------------------------------- block scan
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, WARPS = (THREADS + 31) / 32;
    struct Storage { Uninitialized<T> warp_aggregates[WARPS]; Uninitialized<T> prefix; };
    using W = gl_detail::LogicalWarp<32>;
    Storage& temp_;
    unsigned tid_;
    struct NoPrefix {};
    // (a prefix callback: called with the block aggregate; an initial value or an aggregate is not one)
    template <class Op, class CB>
    using Callback = std::enable_if_t<std::is_invocable<CB&, T>::value && !std::is_convertible<Op, T>::value &&
                                      !std::is_same<std::decay_t<CB>, T>::value>;
    // this thread's inclusive and exclusive scan of `x` (exclusive of thread 0: `first` where has_first, else
    // left as x) and the block's aggregate; with a callback, its prefix is applied to both
    template <class Op, class Callback>
    void scan(T x, T& inclusive, T& exclusive, T& aggregate, Op op, bool has_initial, T initial, Callback* callback)
    {
        const int warp = (int)(tid_ >> 5), lane = (int)(tid_ & 31u);
        T inc = W::inclusive(x, op);
        T up = gl_detail::shfl_up(W::mask(), inc, 1, 32);
        const int last = (warp == WARPS - 1) ? (THREADS - 1) % 32 : 31;
        if (lane == last) temp_.warp_aggregates[warp].Alias() = inc;
        __syncthreads();
        T before = x;
        bool have = false;
        for (int w = 0; w < WARPS; ++w) {
            T a = temp_.warp_aggregates[w].Alias();
            if (w < warp) { before = have ? op(before, a) : a; have = true; }
            aggregate = w == 0 ? a : op(aggregate, a);
        }
        T prefix = initial;
        bool has_prefix = has_initial;
        if constexpr (!std::is_same<Callback, NoPrefix>::value) {
            __syncthreads();                              // (every thread has read the warps' aggregates)
            if (warp == 0) {
                T p = (*callback)(aggregate);
                p = gl_detail::shfl_idx(W::mask(), p, 0, 32);
                if (lane == 0) temp_.prefix.Alias() = p;
            }
            __syncthreads();
            prefix = temp_.prefix.Alias();
            has_prefix = true;
        }
        // exclusive: everything before this thread (the earlier warps, then the earlier lanes)
        bool any = have || lane > 0;
        T ex = lane > 0 ? (have ? op(before, up) : up) : before;
        inclusive = have ? op(before, inc) : inc;
        if (has_prefix) {
            inclusive = op(prefix, inclusive);
            ex = any ? op(prefix, ex) : prefix;
            any = true;
        }
        exclusive = any ? ex : x;
    }
    template <int N, class Op, class Callback>
    void scan_items(T (&in)[N], T (&out)[N], Op op, bool inclusive_scan, bool has_initial, T initial, T& aggregate,
                    Callback* callback)
    {
        T total = ThreadReduce(in, op);
        T inc, ex;
        scan(total, inc, ex, aggregate, op, has_initial, initial, callback);
        const bool seeded = has_initial || tid_ > 0 || !std::is_same<Callback, NoPrefix>::value;
        T run = ex;
        for (int i = 0; i < N; ++i) {
            T v = in[i];
            if (inclusive_scan) {
                run = (seeded || i > 0) ? op(run, v) : v;
                out[i] = run;
            } else {
                T next = (seeded || i > 0) ? op(run, v) : v;
                out[i] = (seeded || i > 0) ? run : out[i];
                run = next;
            }
        }
    }
public:
    struct TempStorage : Uninitialized<Storage> {};
    BlockScan() : temp_(gl_detail::private_storage<TempStorage>().Alias()), tid_(RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockScan(TempStorage& t) : temp_(t.Alias()), tid_(RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}

    // one item per thread
    void ExclusiveSum(T input, T& output) { T a; ExclusiveScan(input, output, T(0), cub::Sum(), a); }
    void ExclusiveSum(T input, T& output, T& block_aggregate) { ExclusiveScan(input, output, T(0), cub::Sum(), block_aggregate); }
    template <class CB> void ExclusiveSum(T input, T& output, CB& block_prefix_callback_op)
    { ExclusiveScan(input, output, cub::Sum(), block_prefix_callback_op); }
    template <class Op> void ExclusiveScan(T input, T& output, T initial_value, Op op)
    { T a; ExclusiveScan(input, output, initial_value, op, a); }
    template <class Op> void ExclusiveScan(T input, T& output, T initial_value, Op op, T& block_aggregate)
    { T inc; scan(input, inc, output, block_aggregate, op, true, initial_value, (NoPrefix*)nullptr); }
    template <class Op, class CB, class = Callback<Op, CB>>
    void ExclusiveScan(T input, T& output, Op op, CB& block_prefix_callback_op)
    { T inc, a; scan(input, inc, output, a, op, false, input, &block_prefix_callback_op); }
    void InclusiveSum(T input, T& output) { InclusiveScan(input, output, cub::Sum()); }
    void InclusiveSum(T input, T& output, T& block_aggregate) { InclusiveScan(input, output, cub::Sum(), block_aggregate); }
    template <class CB> void InclusiveSum(T input, T& output, CB& block_prefix_callback_op)
    { InclusiveScan(input, output, cub::Sum(), block_prefix_callback_op); }
    template <class Op> void InclusiveScan(T input, T& output, Op op) { T a; InclusiveScan(input, output, op, a); }
    template <class Op> void InclusiveScan(T input, T& output, Op op, T& block_aggregate)
    { T ex; scan(input, output, ex, block_aggregate, op, false, input, (NoPrefix*)nullptr); }
    template <class Op, class CB, class = Callback<Op, CB>>
    void InclusiveScan(T input, T& output, Op op, CB& block_prefix_callback_op)
    { T ex, a; scan(input, output, ex, a, op, false, input, &block_prefix_callback_op); }

    // ITEMS per thread, blocked
    template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N]) { T a; scan_items(input, output, cub::Sum(), false, true, T(0), a, (NoPrefix*)nullptr); }
    template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N], T& block_aggregate)
    { scan_items(input, output, cub::Sum(), false, true, T(0), block_aggregate, (NoPrefix*)nullptr); }
    template <int N, class CB> void ExclusiveSum(T (&input)[N], T (&output)[N], CB& cb)
    { T a; scan_items(input, output, cub::Sum(), false, false, T(0), a, &cb); }
    template <int N, class Op> void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, Op op)
    { T a; scan_items(input, output, op, false, true, initial_value, a, (NoPrefix*)nullptr); }
    template <int N, class Op> void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, Op op, T& block_aggregate)
    { scan_items(input, output, op, false, true, initial_value, block_aggregate, (NoPrefix*)nullptr); }
    template <int N, class Op, class CB, class = Callback<Op, CB>>
    void ExclusiveScan(T (&input)[N], T (&output)[N], Op op, CB& cb)
    { T a; scan_items(input, output, op, false, false, input[0], a, &cb); }
    template <int N> void InclusiveSum(T (&input)[N], T (&output)[N]) { T a; scan_items(input, output, cub::Sum(), true, false, T(0), a, (NoPrefix*)nullptr); }
    template <int N> void InclusiveSum(T (&input)[N], T (&output)[N], T& block_aggregate)
    { scan_items(input, output, cub::Sum(), true, false, T(0), block_aggregate, (NoPrefix*)nullptr); }
    template <int N, class CB> void InclusiveSum(T (&input)[N], T (&output)[N], CB& cb)
    { T a; scan_items(input, output, cub::Sum(), true, false, T(0), a, &cb); }
    template <int N, class Op> void InclusiveScan(T (&input)[N], T (&output)[N], Op op)
    { T a; scan_items(input, output, op, true, false, input[0], a, (NoPrefix*)nullptr); }
    template <int N, class Op> void InclusiveScan(T (&input)[N], T (&output)[N], Op op, T& block_aggregate)
    { scan_items(input, output, op, true, false, input[0], block_aggregate, (NoPrefix*)nullptr); }
    template <int N, class Op, class CB, class = Callback<Op, CB>>
    void InclusiveScan(T (&input)[N], T (&output)[N], Op op, CB& cb)
    { T a; scan_items(input, output, op, true, false, input[0], a, &cb); }
    template <int N, class Op> void InclusiveScan(T (&input)[N], T (&output)[N], T initial_value, Op op)
    { T a; scan_items(input, output, op, true, true, initial_value, a, (NoPrefix*)nullptr); }
    template <int N, class Op> void InclusiveScan(T (&input)[N], T (&output)[N], T initial_value, Op op, T& block_aggregate)
    { scan_items(input, output, op, true, true, initial_value, block_aggregate, (NoPrefix*)nullptr); }
};

// ---------------------------------------------------------------------------------------------- direct loads, stores
template <class T, int N, class It> inline void LoadDirectBlocked(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) items[i] = it[tid * N + i]; }
template <class T, int N, class It> inline void LoadDirectBlocked(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) if (tid * N + i < valid) items[i] = it[tid * N + i]; }
template <class T, class D, int N, class It> inline void LoadDirectBlocked(int tid, It it, T (&items)[N], int valid, D oob)
{ for (int i = 0; i < N; ++i) items[i] = tid * N + i < valid ? T(it[tid * N + i]) : T(oob); }
template <class T, int N> inline void LoadDirectBlockedVectorized(int tid, T* ptr, T (&items)[N])
{ LoadDirectBlocked(tid, ptr, items); }
template <int BLOCK_THREADS, class T, int N, class It> inline void LoadDirectStriped(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) items[i] = it[i * BLOCK_THREADS + tid]; }
template <int BLOCK_THREADS, class T, int N, class It> inline void LoadDirectStriped(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) if (i * BLOCK_THREADS + tid < valid) items[i] = it[i * BLOCK_THREADS + tid]; }
template <int BLOCK_THREADS, class T, class D, int N, class It>
inline void LoadDirectStriped(int tid, It it, T (&items)[N], int valid, D oob)
{ for (int i = 0; i < N; ++i) items[i] = i * BLOCK_THREADS + tid < valid ? T(it[i * BLOCK_THREADS + tid]) : T(oob); }
namespace gl_detail {
template <int N> inline int warp_striped(int tid, int i) { return (tid & ~31) * N + (tid & 31) + i * 32; }
}
template <class T, int N, class It> inline void LoadDirectWarpStriped(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) items[i] = it[gl_detail::warp_striped<N>(tid, i)]; }
template <class T, int N, class It> inline void LoadDirectWarpStriped(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) { int at = gl_detail::warp_striped<N>(tid, i); if (at < valid) items[i] = it[at]; } }
template <class T, class D, int N, class It> inline void LoadDirectWarpStriped(int tid, It it, T (&items)[N], int valid, D oob)
{ for (int i = 0; i < N; ++i) { int at = gl_detail::warp_striped<N>(tid, i); items[i] = at < valid ? T(it[at]) : T(oob); } }

template <class T, int N, class It> inline void StoreDirectBlocked(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) it[tid * N + i] = items[i]; }
template <class T, int N, class It> inline void StoreDirectBlocked(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) if (tid * N + i < valid) it[tid * N + i] = items[i]; }
template <class T, int N> inline void StoreDirectBlockedVectorized(int tid, T* ptr, T (&items)[N])
{ StoreDirectBlocked(tid, ptr, items); }
template <int BLOCK_THREADS, class T, int N, class It> inline void StoreDirectStriped(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) it[i * BLOCK_THREADS + tid] = items[i]; }
template <int BLOCK_THREADS, class T, int N, class It> inline void StoreDirectStriped(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) if (i * BLOCK_THREADS + tid < valid) it[i * BLOCK_THREADS + tid] = items[i]; }
template <class T, int N, class It> inline void StoreDirectWarpStriped(int tid, It it, T (&items)[N])
{ for (int i = 0; i < N; ++i) it[gl_detail::warp_striped<N>(tid, i)] = items[i]; }
template <class T, int N, class It> inline void StoreDirectWarpStriped(int tid, It it, T (&items)[N], int valid)
{ for (int i = 0; i < N; ++i) { int at = gl_detail::warp_striped<N>(tid, i); if (at < valid) it[at] = items[i]; } }

// ---------------------------------------------------------------------------------------------- block exchange
template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, bool WARP_TIME_SLICING = false, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockExchange {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, N = ITEMS_PER_THREAD;
    struct Storage { Uninitialized<T> buf[THREADS * N]; };
    Storage& temp_;
    int tid_;
    template <class In, class Out> void move(const T (&in)[N], T (&out)[N], In from, Out to)
    {
        for (int i = 0; i < N; ++i) temp_.buf[from(i)].Alias() = in[i];
        __syncthreads();
        for (int i = 0; i < N; ++i) out[i] = temp_.buf[to(i)].Alias();
    }
    int blocked(int i) const { return tid_ * N + i; }
    int striped(int i) const { return i * THREADS + tid_; }
    int warp_striped(int i) const { return gl_detail::warp_striped<N>(tid_, i); }
public:
    struct TempStorage : Uninitialized<Storage> {};
    BlockExchange() : temp_(gl_detail::private_storage<TempStorage>().Alias()), tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockExchange(TempStorage& t) : temp_(t.Alias()), tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    template <class O> void StripedToBlocked(const T (&in)[N], O (&out)[N])
    { move(in, out, [&](int i) { return striped(i); }, [&](int i) { return blocked(i); }); }
    template <class O> void BlockedToStriped(const T (&in)[N], O (&out)[N])
    { move(in, out, [&](int i) { return blocked(i); }, [&](int i) { return striped(i); }); }
    template <class O> void WarpStripedToBlocked(const T (&in)[N], O (&out)[N])
    { move(in, out, [&](int i) { return warp_striped(i); }, [&](int i) { return blocked(i); }); }
    template <class O> void BlockedToWarpStriped(const T (&in)[N], O (&out)[N])
    { move(in, out, [&](int i) { return blocked(i); }, [&](int i) { return warp_striped(i); }); }
    void StripedToBlocked(T (&items)[N]) { StripedToBlocked(items, items); }
    void BlockedToStriped(T (&items)[N]) { BlockedToStriped(items, items); }
    void WarpStripedToBlocked(T (&items)[N]) { WarpStripedToBlocked(items, items); }
    void BlockedToWarpStriped(T (&items)[N]) { BlockedToWarpStriped(items, items); }
    template <class R> void ScatterToBlocked(T (&items)[N], R (&ranks)[N])
    { move(items, items, [&](int i) { return (int)ranks[i]; }, [&](int i) { return blocked(i); }); }
    template <class R> void ScatterToStriped(T (&items)[N], R (&ranks)[N])
    { move(items, items, [&](int i) { return (int)ranks[i]; }, [&](int i) { return striped(i); }); }
    template <class O, class R> void ScatterToBlocked(const T (&in)[N], O (&out)[N], R (&ranks)[N])
    { move(in, out, [&](int i) { return (int)ranks[i]; }, [&](int i) { return blocked(i); }); }
    template <class O, class R> void ScatterToStriped(const T (&in)[N], O (&out)[N], R (&ranks)[N])
    { move(in, out, [&](int i) { return (int)ranks[i]; }, [&](int i) { return striped(i); }); }
};

// ---------------------------------------------------------------------------------------------- block load, store
enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_TRANSPOSE,
                          BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE, BLOCK_STORE_TRANSPOSE,
                           BLOCK_STORE_WARP_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED };

// The items come out blocked (thread t holds t * N ... t * N + N - 1), or striped for BLOCK_LOAD_STRIPED; a
// guarded load leaves the items past valid_items as they were (CUB: undefined), or sets them to oob_default.
template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockLoad {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, N = ITEMS_PER_THREAD;
    static constexpr bool STRIPED = ALGORITHM == BLOCK_LOAD_STRIPED;
    static_assert(!(ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE || ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED) ||
                  THREADS % 32 == 0, "BLOCK_LOAD_WARP_TRANSPOSE needs a block of whole warps");
    int tid_;
public:
    struct TempStorage : Uninitialized<T[ALGORITHM >= BLOCK_LOAD_TRANSPOSE ? THREADS * N : 1]> {};
    BlockLoad() : tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockLoad(TempStorage&) : tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    template <class It, class U> void Load(It it, U (&items)[N])
    { if (STRIPED) LoadDirectStriped<THREADS>(tid_, it, items); else LoadDirectBlocked(tid_, it, items); }
    template <class It, class U> void Load(It it, U (&items)[N], int valid)
    { if (STRIPED) LoadDirectStriped<THREADS>(tid_, it, items, valid); else LoadDirectBlocked(tid_, it, items, valid); }
    template <class It, class U, class D> void Load(It it, U (&items)[N], int valid, D oob)
    { if (STRIPED) LoadDirectStriped<THREADS>(tid_, it, items, valid, oob); else LoadDirectBlocked(tid_, it, items, valid, oob); }
};

template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockStore {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, N = ITEMS_PER_THREAD;
    static constexpr bool STRIPED = ALGORITHM == BLOCK_STORE_STRIPED;
    static_assert(!(ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE || ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED) ||
                  THREADS % 32 == 0, "BLOCK_STORE_WARP_TRANSPOSE needs a block of whole warps");
    int tid_;
public:
    struct TempStorage : Uninitialized<T[ALGORITHM >= BLOCK_STORE_TRANSPOSE ? THREADS * N : 1]> {};
    BlockStore() : tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockStore(TempStorage&) : tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    template <class It, class U> void Store(It it, U (&items)[N])
    { if (STRIPED) StoreDirectStriped<THREADS>(tid_, it, items); else StoreDirectBlocked(tid_, it, items); }
    template <class It, class U> void Store(It it, U (&items)[N], int valid)
    { if (STRIPED) StoreDirectStriped<THREADS>(tid_, it, items, valid); else StoreDirectBlocked(tid_, it, items, valid); }
};

// ---------------------------------------------------------------------------------------------- block radix sort
namespace gl_detail {
// a key's bits in CUB's radix order: unsigned as they are, signed with the sign bit flipped, floating point with
// the sign bit flipped (positive) or every bit (negative), -0.0 first made +0.0: the two are one key, as in
// CUDA 13's CUB (BaseDigitExtractor::ProcessFloatMinusZero), so a stable sort keeps them in their order
template <class K> inline auto radix_bits(K k)
{
    if constexpr (std::is_same<K, bool>::value) {
        return (unsigned char)k;
    } else {
        using U = std::conditional_t<sizeof(K) == 1, unsigned char, std::conditional_t<sizeof(K) == 2, unsigned short,
                  std::conditional_t<sizeof(K) == 4, unsigned, unsigned long long>>>;
        U u;
        __builtin_memcpy(&u, &k, sizeof u);
        constexpr U high = U(U(1) << (sizeof(U) * 8 - 1));
        if constexpr (std::is_floating_point<K>::value || std::is_same<K, __half>::value
                      || std::is_same<K, __nv_bfloat16>::value)
            return U(u == high ? high : (u & high) ? U(~u) : U(u | high));
        else if constexpr (std::is_signed<K>::value)
            return U(u ^ high);
        else
            return u;
    }
}
}  // namespace gl_detail

template <class KeyT, int BLOCK_DIM_X, int ITEMS_PER_THREAD, class ValueT = NullType, int RADIX_BITS = 4,
          bool MEMOIZE_OUTER_SCAN = true, BlockScanAlgorithm INNER_SCAN_ALGORITHM = BLOCK_SCAN_WARP_SCANS,
          cudaSharedMemConfig SMEM_CONFIG = cudaSharedMemBankSizeFourByte, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
          int LEGACY_PTX_ARCH = 0>
class BlockRadixSort {
    static constexpr int THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z, N = ITEMS_PER_THREAD, ALL = THREADS * N;
    static constexpr bool KEYS_ONLY = std::is_same<ValueT, NullType>::value;
    using V = std::conditional_t<KEYS_ONLY, unsigned char, ValueT>;
    struct Storage {
        Uninitialized<KeyT> keys[2][ALL];
        Uninitialized<V> values[2][KEYS_ONLY ? 1 : ALL];
    };
    Storage& temp_;
    int tid_;
    // thread 0 sorts the block's items (stable, by the bits [begin, end) of their radix order); the others wait
    template <bool DESCENDING> void sort(KeyT (&keys)[N], V* values, int begin, int end, bool to_striped)
    {
        for (int i = 0; i < N; ++i) {
            temp_.keys[0][tid_ * N + i].Alias() = keys[i];
            if (!KEYS_ONLY) temp_.values[0][tid_ * N + i].Alias() = values[i];
        }
        __syncthreads();
        if (tid_ == 0) {
            int from = 0;
            for (int bit = begin; bit < end; bit += RADIX_BITS) {
                const int bits = end - bit < RADIX_BITS ? end - bit : RADIX_BITS;
                const unsigned digits = 1u << bits;
                unsigned count[1u << RADIX_BITS] = {};
                auto digit = [&](int at) {
                    unsigned long long b = (unsigned long long)gl_detail::radix_bits(temp_.keys[from][at].Alias());
                    unsigned d = (unsigned)((b >> bit) & (digits - 1));
                    return DESCENDING ? digits - 1 - d : d;
                };
                for (int at = 0; at < ALL; ++at) ++count[digit(at)];
                unsigned start[1u << RADIX_BITS], sum = 0;
                for (unsigned d = 0; d < digits; ++d) { start[d] = sum; sum += count[d]; }
                for (int at = 0; at < ALL; ++at) {
                    const unsigned to = start[digit(at)]++;
                    temp_.keys[1 - from][to].Alias() = temp_.keys[from][at].Alias();
                    if (!KEYS_ONLY) temp_.values[1 - from][to].Alias() = temp_.values[from][at].Alias();
                }
                from = 1 - from;
            }
            if (from == 1)
                for (int at = 0; at < ALL; ++at) {
                    temp_.keys[0][at].Alias() = temp_.keys[1][at].Alias();
                    if (!KEYS_ONLY) temp_.values[0][at].Alias() = temp_.values[1][at].Alias();
                }
        }
        __syncthreads();
        for (int i = 0; i < N; ++i) {
            const int at = to_striped ? i * THREADS + tid_ : tid_ * N + i;
            keys[i] = temp_.keys[0][at].Alias();
            if (!KEYS_ONLY) values[i] = temp_.values[0][at].Alias();
        }
    }
    static constexpr int BITS = (int)sizeof(KeyT) * 8;
public:
    struct TempStorage : Uninitialized<Storage> {};
    BlockRadixSort() : temp_(gl_detail::private_storage<TempStorage>().Alias()), tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    BlockRadixSort(TempStorage& t) : temp_(t.Alias()), tid_((int)RowMajorTid(BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z)) {}
    void Sort(KeyT (&keys)[N], int begin_bit = 0, int end_bit = BITS) { sort<false>(keys, nullptr, begin_bit, end_bit, false); }
    void Sort(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0, int end_bit = BITS) { sort<false>(keys, values, begin_bit, end_bit, false); }
    void SortDescending(KeyT (&keys)[N], int begin_bit = 0, int end_bit = BITS) { sort<true>(keys, nullptr, begin_bit, end_bit, false); }
    void SortDescending(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0, int end_bit = BITS) { sort<true>(keys, values, begin_bit, end_bit, false); }
    void SortBlockedToStriped(KeyT (&keys)[N], int begin_bit = 0, int end_bit = BITS) { sort<false>(keys, nullptr, begin_bit, end_bit, true); }
    void SortBlockedToStriped(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0, int end_bit = BITS) { sort<false>(keys, values, begin_bit, end_bit, true); }
    void SortDescendingBlockedToStriped(KeyT (&keys)[N], int begin_bit = 0, int end_bit = BITS) { sort<true>(keys, nullptr, begin_bit, end_bit, true); }
    void SortDescendingBlockedToStriped(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0, int end_bit = BITS) { sort<true>(keys, values, begin_bit, end_bit, true); }
};

}  // namespace cub
