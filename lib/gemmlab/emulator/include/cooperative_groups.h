// Emulator version of <cooperative_groups.h>: the common subset, with the GPU's semantics.
//
// thread_block (this_thread_block, also from a block_tile_memory), thread_block_tile<N> and <N, Parent>
// (tiled_partition<N>, N a power of two up to the block; the warp operations for N <= 32, shuffles of any
// trivially copyable type; reduce and the scans for any N), thread_group (tiled_partition(parent, n)), coalesced_group (coalesced_threads,
// binary_partition, labeled_partition), grid_group (this_grid: ranks and sizes; its sync() needs a cooperative
// launch, which the emulator does not run), cluster_group (this_cluster: a cluster of one block),
// sync(g), cg::reduce with plus/less/greater/bit_and/bit_or/bit_xor,
// cg::inclusive_scan / exclusive_scan, this_thread, invoke_one and invoke_one_broadcast. Tiles are consecutive
// threads in the block's linear order (x fastest), as on the GPU.
#pragma once
#include "gemmlab_emu.h"

namespace cooperative_groups {
namespace gl_detail {
inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned lane() { return block_rank() & 31u; }
}  // namespace gl_detail

class thread_group {
public:
    unsigned base_ = 0, size_ = 0;              // the group's threads: [base_, base_ + size_) in linear order
    thread_group(unsigned base, unsigned size) : base_(base), size_(size) {}
    unsigned thread_rank() const { return gl_detail::block_rank() - base_; }
    unsigned size() const { return size_; }
    unsigned num_threads() const { return size_; }
    unsigned meta_group_rank() const { return base_ / (size_ ? size_ : 1); }
    unsigned meta_group_size() const { unsigned n = gl_detail::block_threads(); return (n + size_ - 1) / size_; }
    bool is_valid() const { return size_ != 0; }
    void sync() const
    {
        if (size_ <= 32 && (base_ & 31u) + size_ <= 32)
            __syncwarp(size_ == 32 ? 0xffffffffu : (((1u << size_) - 1u) << (base_ & 31u)));
        else
            ::gl_emu::group_sync(base_, size_, __FILE__, __LINE__);
    }
};

class thread_block : public thread_group {
public:
    thread_block() : thread_group(0, gl_detail::block_threads()) {}
    void sync() const { __syncthreads(); }
    static dim3 group_index() { return blockIdx; }
    static dim3 thread_index() { return threadIdx; }
    static dim3 group_dim() { return blockDim; }
    static dim3 dim_threads() { return blockDim; }
};
inline thread_block this_thread_block() { return thread_block(); }

// The shared memory CUDA reserves for tiles of more than 32 threads on GPUs before sm_80 (the emulator's tiles
// need none): declared __shared__ and passed to this_thread_block. (CUDA 11 took two parameters, CUDA 12 one.)
template <unsigned... Sizes> struct block_tile_memory { unsigned char reserved[8]; };
template <unsigned... Sizes> inline thread_block this_thread_block(block_tile_memory<Sizes...>&) { return thread_block(); }

class grid_group {
public:
    unsigned long long thread_rank() const { return ::gl_emu::block_rank() * gl_detail::block_threads() + gl_detail::block_rank(); }
    unsigned long long size() const
    { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * gl_detail::block_threads(); }
    unsigned long long num_threads() const { return size(); }
    bool is_valid() const { return false; }    // only a cooperative launch makes a grid group valid
    static dim3 group_dim() { return gridDim; }
    static dim3 dim_blocks() { return gridDim; }
    static dim3 block_index() { return blockIdx; }
    static unsigned long long block_rank() { return ::gl_emu::block_rank(); }
    static unsigned long long num_blocks() { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    void sync() const
    {
        ::gl_emu::kernel_stopped("grid_group::sync() needs a cooperative launch (cudaLaunchCooperativeKernel), "
                                 "which the CPU emulator does not run");
    }
};
inline grid_group this_grid() { return grid_group(); }

// A thread block cluster (this_cluster). A kernel launched without clusters is, on a Hopper GPU, a cluster of its
// one block, and so it is here: sync() is the block's barrier, rank 0, its own shared memory. In a module that
// declares clusters of more blocks (__cluster_dims__: GL_EMU_CLUSTERS) the blocks of a cluster run together (inline
// PTX reaches them: mapa, barrier.cluster), but this class does not model them yet: using it stops the launch, by
// name.
class cluster_group : public thread_group {
    static void together(const char* what)
    {
#if defined(GL_EMU_CLUSTERS)
        ::gl_emu::unsupported("cooperative groups' clusters of more than one block (__cluster_dims__; the emulator "
                              "runs such clusters through inline PTX: mapa, barrier.cluster)", what);
#else
        (void)what;
#endif
    }
public:
    cluster_group() : thread_group(0, gl_detail::block_threads()) { together("cooperative_groups::this_cluster"); }
    void sync() const { __syncthreads(); }
    void barrier_arrive() const {}
    void barrier_wait() const { __syncthreads(); }
    static unsigned block_rank() { return 0; }
    static unsigned num_blocks() { return 1; }
    static dim3 dim_blocks() { return dim3(1, 1, 1); }
    static dim3 block_index() { return dim3(0, 0, 0); }
    static dim3 dim_threads() { return blockDim; }
    template <class T> static unsigned query_shared_rank(const T*) { return 0; }
    template <class T> T* map_shared_rank(T* p, unsigned rank) const
    {
        if (rank != 0) ::gl_emu::unsupported("distributed shared memory of a block outside the cluster of one block "
                                             "this launch has", "cooperative_groups::cluster_group::map_shared_rank");
        return p;
    }
};
inline cluster_group this_cluster() { return cluster_group(); }

// A tile of N threads. For N <= 32 the tile lies in one warp and has the warp operations. thread_block_tile<N,
// Parent> (what tiled_partition returns in CUDA) is the same tile, and converts to thread_block_tile<N>.
template <unsigned N, class Parent = void> class thread_block_tile;
template <unsigned N>
class thread_block_tile<N, void> : public thread_group {
    static_assert(N && (N & (N - 1)) == 0, "thread_block_tile<N>: N must be a power of two");
public:
    thread_block_tile() : thread_group(gl_detail::block_rank() / N * N, N) {}
    static constexpr unsigned num_threads() { return N; }
    static constexpr unsigned size() { return N; }
    unsigned thread_rank() const { return gl_detail::block_rank() & (N - 1); }
    unsigned meta_group_rank() const { return gl_detail::block_rank() / N; }
    unsigned meta_group_size() const { return (gl_detail::block_threads() + N - 1) / N; }
    unsigned mask() const
    {
        static_assert(N <= 32, "only tiles of at most 32 threads have warp operations");
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (gl_detail::lane() & ~(N - 1));
    }
    void sync() const { thread_group::sync(); }
    template <class T> T shfl(T v, int src) const
    { return ::gl_emu::shfl_any(::gl_emu::OP_SHFL, mask(), v, __FILE__, __LINE__, src, N); }
    template <class T> T shfl_up(T v, unsigned d) const
    { return ::gl_emu::shfl_any(::gl_emu::OP_SHFL_UP, mask(), v, __FILE__, __LINE__, (int)d, N); }
    template <class T> T shfl_down(T v, unsigned d) const
    { return ::gl_emu::shfl_any(::gl_emu::OP_SHFL_DOWN, mask(), v, __FILE__, __LINE__, (int)d, N); }
    template <class T> T shfl_xor(T v, unsigned m) const
    { return ::gl_emu::shfl_any(::gl_emu::OP_SHFL_XOR, mask(), v, __FILE__, __LINE__, (int)m, N); }
    template <class T> unsigned match_any(T v) const
    { return N == 32 ? __match_any_sync(mask(), v) : __match_any_sync(mask(), v) >> (gl_detail::lane() & ~(N - 1)); }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
    unsigned ballot(int p) const
    { return N == 32 ? __ballot_sync(mask(), p) : (__ballot_sync(mask(), p) >> (gl_detail::lane() & ~(N - 1))); }
};

template <unsigned N, class Parent>
class thread_block_tile : public thread_block_tile<N, void> {
public:
    thread_block_tile() = default;
};

template <unsigned N, class Parent>
inline thread_block_tile<N, Parent> tiled_partition(const Parent&) { return thread_block_tile<N, Parent>(); }

inline thread_group tiled_partition(const thread_group& parent, unsigned n)
{
    unsigned r = parent.thread_rank();
    return thread_group(parent.base_ + r / n * n, n);
}

// The threads of a warp that reach coalesced_threads() together (see gl_emu::resolve_coalesce).
class coalesced_group {
    unsigned mask_;
public:
    explicit coalesced_group(unsigned m) : mask_(m) {}
    unsigned mask() const { return mask_; }
    unsigned size() const { return (unsigned)__builtin_popcount(mask_); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return (unsigned)__builtin_popcount(mask_ & ((1u << gl_detail::lane()) - 1u)); }
    unsigned meta_group_rank() const { return 0; }
    unsigned meta_group_size() const { return 1; }
    void sync() const { __syncwarp(mask_); }
    int lane_of(unsigned rank) const
    {
        unsigned m = mask_;
        for (unsigned i = 0; i < rank && m; ++i) m &= m - 1;
        return m ? __builtin_ctz(m) : (int)gl_detail::lane();
    }
    template <class T> T shfl(T v, unsigned src_rank) const
    { return ::gl_emu::shfl_any(::gl_emu::OP_SHFL, mask_, v, __FILE__, __LINE__, lane_of(src_rank)); }
    template <class T> T shfl_down(T v, unsigned d) const
    {
        unsigned r = thread_rank() + d;
        return ::gl_emu::shfl_any(::gl_emu::OP_SHFL, mask_, v, __FILE__, __LINE__,
                                  r < size() ? lane_of(r) : (int)gl_detail::lane());
    }
    template <class T> T shfl_up(T v, unsigned d) const
    {
        unsigned r = thread_rank();
        return ::gl_emu::shfl_any(::gl_emu::OP_SHFL, mask_, v, __FILE__, __LINE__,
                                  r >= d ? lane_of(r - d) : (int)gl_detail::lane());
    }
    int any(int p) const { return __any_sync(mask_, p); }
    int all(int p) const { return __all_sync(mask_, p); }
    unsigned ballot(int p) const
    {
        unsigned b = __ballot_sync(mask_, p), out = 0, k = 0;       // compacted to the group's ranks
        for (unsigned l = 0; l < 32; ++l)
            if ((mask_ >> l) & 1u) { if ((b >> l) & 1u) out |= 1u << k; ++k; }
        return out;
    }
};
inline coalesced_group coalesced_threads()
{
    return coalesced_group((unsigned)::gl_emu::warp_op(::gl_emu::OP_COALESCE, 0xffffffffu, 0, 0, 32, __FILE__, __LINE__));
}

// The lanes of a warp-sized (or smaller) group split by a predicate or a label: each thread's part is those of
// its group with its own predicate or label, as a coalesced group.
inline coalesced_group binary_partition(const coalesced_group& parent, bool pred)
{
    const unsigned yes = __ballot_sync(parent.mask(), pred);
    return coalesced_group(pred ? yes : parent.mask() & ~yes);
}
template <unsigned N, class P>
inline coalesced_group binary_partition(const thread_block_tile<N, P>& parent, bool pred)
{
    const unsigned yes = __ballot_sync(parent.mask(), pred);
    return coalesced_group(pred ? yes : parent.mask() & ~yes);
}
inline coalesced_group labeled_partition(const coalesced_group& parent, int label)
{ return coalesced_group(__match_any_sync(parent.mask(), label)); }
template <unsigned N, class P>
inline coalesced_group labeled_partition(const thread_block_tile<N, P>& parent, int label)
{ return coalesced_group(__match_any_sync(parent.mask(), label)); }

template <class G> inline void sync(const G& g) { g.sync(); }
template <class G> inline unsigned thread_rank(const G& g) { return g.thread_rank(); }
template <class G> inline unsigned group_size(const G& g) { return g.size(); }

// cg::reduce and its operators (<cooperative_groups/reduce.h>)
template <class T = void> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T = void> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T = void> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T = void> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T = void> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T = void> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };

namespace gl_detail {
// A tile of more than 32 threads combines its warps' results through one slot per warp of the block, between two
// syncs of the tile (the second: before a later reduce or scan of the tile overwrites the slots).
template <class T> struct warp_slots {
    alignas(T) static inline unsigned char bytes[32 * sizeof(T)];
    GL_NOSAN static void put(unsigned w, const T& v) { __builtin_memcpy(bytes + w * sizeof(T), &v, sizeof(T)); }
    GL_NOSAN static T get(unsigned w) { T v; __builtin_memcpy(&v, bytes + w * sizeof(T), sizeof(T)); return v; }
};
// op over the totals of the warps first .. end - 1, in order
template <class T, class Op> inline T fold_slots(unsigned first, unsigned end, Op op)
{
    T acc = warp_slots<T>::get(first);
    for (unsigned w = first + 1; w < end; ++w) acc = op(acc, warp_slots<T>::get(w));
    return acc;
}
}  // namespace gl_detail

// A butterfly over the tile: every thread ends with op over all the tile's values (the same bits in each). A tile of
// more than 32 threads: each warp's butterfly, then the warps' totals in order.
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& g, T v, Op op)
{
    if constexpr (N <= 32) {
        for (unsigned offset = N / 2; offset > 0; offset /= 2) v = op(v, g.shfl_xor(v, offset));
        return v;
    } else {
        const thread_block_tile<32> warp;
        const T mine = reduce(warp, v, op);
        const unsigned w = gl_detail::block_rank() / 32, first = g.base_ / 32;
        if (warp.thread_rank() == 0) gl_detail::warp_slots<T>::put(w, mine);
        g.sync();
        const T all = gl_detail::fold_slots<T>(first, first + N / 32, op);
        g.sync();
        return all;
    }
}
// Scans over a tile's ranks (<cooperative_groups/scan.h>): Hillis-Steele steps of shfl_up. A tile of more than 32
// threads: each warp's scan, after op over the totals of the tile's warps before it.
template <unsigned N, class T, class Op>
inline T inclusive_scan(const thread_block_tile<N>& g, T v, Op op)
{
    if constexpr (N <= 32) {
        for (unsigned d = 1; d < N; d *= 2) {
            T other = g.shfl_up(v, d);
            if (g.thread_rank() >= d) v = op(other, v);
        }
        return v;
    } else {
        const thread_block_tile<32> warp;
        T in = inclusive_scan(warp, v, op);
        const unsigned w = gl_detail::block_rank() / 32, first = g.base_ / 32;
        if (warp.thread_rank() == 31) gl_detail::warp_slots<T>::put(w, in);
        g.sync();
        if (w > first) in = op(gl_detail::fold_slots<T>(first, w, op), in);
        g.sync();
        return in;
    }
}
template <unsigned N, class T>
inline T inclusive_scan(const thread_block_tile<N>& g, T v) { return inclusive_scan(g, v, plus<T>()); }
template <unsigned N, class T, class Op>
inline T exclusive_scan(const thread_block_tile<N>& g, T v, Op op)
{
    if constexpr (N <= 32) {
        T in = inclusive_scan(g, v, op), prev = g.shfl_up(in, 1);
        return g.thread_rank() == 0 ? T() : prev;
    } else {
        const thread_block_tile<32> warp;
        const T in = inclusive_scan(warp, v, op), prev = warp.shfl_up(in, 1);
        const unsigned w = gl_detail::block_rank() / 32, first = g.base_ / 32;
        if (warp.thread_rank() == 31) gl_detail::warp_slots<T>::put(w, in);
        g.sync();
        T out = warp.thread_rank() == 0 ? T() : prev;
        if (w > first) {
            const T before = gl_detail::fold_slots<T>(first, w, op);
            out = warp.thread_rank() == 0 ? before : op(before, prev);
        }
        g.sync();
        return out;
    }
}
template <unsigned N, class T>
inline T exclusive_scan(const thread_block_tile<N>& g, T v) { return exclusive_scan(g, v, plus<T>()); }
template <class T, class Op>
inline T inclusive_scan(const coalesced_group& g, T v, Op op)
{
    for (unsigned d = 1; d < 32; d *= 2) {
        T other = g.shfl_up(v, d);
        if (g.thread_rank() >= d) v = op(other, v);
    }
    return v;
}
template <class T>
inline T inclusive_scan(const coalesced_group& g, T v) { return inclusive_scan(g, v, plus<T>()); }
template <class T, class Op>
inline T exclusive_scan(const coalesced_group& g, T v, Op op)
{
    T in = inclusive_scan(g, v, op), prev = g.shfl_up(in, 1);
    return g.thread_rank() == 0 ? T() : prev;
}
template <class T>
inline T exclusive_scan(const coalesced_group& g, T v) { return exclusive_scan(g, v, plus<T>()); }

template <class T, class Op>
inline T reduce(const coalesced_group& g, T v, Op op)
{
    // a sum over ranks in order, then shared by rank 0's broadcast
    T acc = v;
    for (unsigned d = 1; d < 32; d *= 2) {
        T other = g.shfl_down(acc, d);
        if (g.thread_rank() + d < g.size()) acc = op(acc, other);
    }
    return g.shfl(acc, 0);
}

// the calling thread as a group of one (CUDA's this_thread)
inline thread_block_tile<1> this_thread() { return thread_block_tile<1>(); }
// invoke_one: one thread of the group (here its rank 0) calls f(args...); invoke_one_broadcast also gives every
// thread of the group (a tile of at most 32 threads, or a coalesced group) what that call returned
template <class G, class F, class... A>
inline void invoke_one(const G& g, F&& f, A&&... args)
{
    if (g.thread_rank() == 0) f(static_cast<A&&>(args)...);
}
template <class G, class F, class... A>
inline auto invoke_one_broadcast(const G& g, F&& f, A&&... args) -> decltype(f(static_cast<A&&>(args)...))
{
    decltype(f(static_cast<A&&>(args)...)) r{};
    if (g.thread_rank() == 0) r = f(static_cast<A&&>(args)...);
    return g.shfl(r, 0);
}
}  // namespace cooperative_groups
