"""Kernels written here, in our own words, in the styles of NVIDIA's CUDA samples and developer-blog posts.

The samples teach the CUDA forms most code copies from them: dynamic shared memory through a specialised
template per type, single-pass reductions that let the last block finish, shuffle scans in two levels, votes,
cooperative groups of every kind (a block passed by value, type-erased groups, grid-stride loops over the
grid group, partitions of the threads that took a branch), sorting networks run over several launches,
byte-counter histograms, tables in `__constant__` memory filled by the host, half2 arithmetic, printf, objects
on the device heap with virtual functions, pipelines of asynchronous copies, WMMA in BF16, FP16 and FP64
(TF32: test_wmma.py). None of
their code is here: each kernel is ours, written in their manner. Every test runs on the backend in use and
checks against NumPy: on a GPU they check the kernels, on the emulator the emulator. The tutorials' and the
training code's styles are in test_tutorials.py and test_training_code.py beside this file.
"""
from __future__ import annotations

import functools

import numpy
import pytest

import gemmlab as gl

xp = gl.xp
f32, f64, i32, u32 = numpy.float32, numpy.float64, numpy.int32, numpy.uint32


def rng(seed):
    return numpy.random.default_rng(seed)


def dev(a):
    return xp.array(a)                 # a copy on either backend: a kernel's writes never reach an input


def host(a):
    return gl.to_host(a)


@functools.lru_cache(maxsize=None)
def load(source: str):
    return gl.load(code=source)


# --- reductions, scans and votes as the samples write them ------------------------------------------------

REDUCE_SCAN_VOTE = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// shared scratch per element type: a static member per specialisation, each naming an extern __shared__ array
// of its own type. The primary template is never instantiated (it would not link: the function it calls is
// declared at block scope and defined nowhere)
template <typename T> struct Stage {
    __device__ static T* at()
    {
        extern __device__ void stage_needs_a_specialisation(void);
        stage_needs_a_specialisation();
        return 0;
    }
};
template <> struct Stage<int> {
    __device__ static int* at() { extern __shared__ int stage_i32[]; return stage_i32; }
};
template <> struct Stage<float> {
    __device__ static float* at() { extern __shared__ float stage_f32[]; return stage_f32; }
};
template <> struct Stage<unsigned char> {
    __device__ static unsigned char* at() { extern __shared__ unsigned char stage_u8[]; return stage_u8; }
};
// the other way to hand it out: a conversion operator, specialised for one type only
template <typename T> struct StageAs;
template <> struct StageAs<double> {
    __device__ operator double*() const { extern __shared__ double stage_f64[]; return stage_f64; }
};

template <class T>
__global__ void neighbour_sums(const T* in, T* out)         // each value plus the next one, cyclically
{
    T* s = Stage<T>::at();
    const unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    out[t] = (T)(s[t] + s[(t + 1) % blockDim.x]);
}

__global__ void neighbour_differences(const double* in, double* out)   // each value less the one before it
{
    double* s = StageAs<double>();
    const unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncthreads();
    out[t] = s[t] - s[(t + blockDim.x - 1) % blockDim.x];
}

// --- exclusive prefix sums in segments of lanes, and across a block, by shuffles ---
// within segments of `seg` lanes (a power of two up to 32): __shfl_up_sync with a width. With seg = 32 also
// across the block: one warp scans the warps' sums, through a width and a mask of as many lanes as there are
// warps. `totals`, when given, gets each block's sum
__global__ void exclusive_segments(const int* in, int* out, int seg, int* totals = nullptr)
{
    __shared__ int warp_sums[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int mine = in[i];
    int run = mine;
    for (int step = 1; step < seg; step <<= 1) {
        const int below = __shfl_up_sync(0xffffffffu, run, step, seg);
        run += (lane & (seg - 1)) >= step ? below : 0;
    }
    int before = run - mine;
    if (seg == 32) {
        const int warps = blockDim.x >> 5;
        if (lane == 31) warp_sums[warp] = run;
        __syncthreads();
        if (warp == 0 && lane < warps) {
            const unsigned some = 0xffffffffu >> (32 - warps);
            const int own = warp_sums[lane];
            int acc = own;
            for (int step = 1; step < warps; step <<= 1) {
                const int below = __shfl_up_sync(some, acc, step, warps);
                if (lane >= step) acc += below;
            }
            warp_sums[lane] = acc - own;              // what the warps before it hold
        }
        __syncthreads();
        before += warp_sums[warp];
        if (totals && threadIdx.x == blockDim.x - 1) totals[blockIdx.x] = before + mine;
    }
    out[i] = before;
}

// --- votes, over the whole warp and over half of it ---
__global__ void votes(const unsigned* in, unsigned* any, bool* all, unsigned* half_any, bool* half_all)
{
    int mask = 0xffffffff;
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    any[t] = __any_sync(mask, in[t]);
    all[t] = __all_sync(mask, in[t]);
    if (lane < 16) {
        half_any[t] = __any_sync(0x0000ffffu, in[t]);
        half_all[t] = __all_sync(0x0000ffffu, in[t]);
    }
}

// --- a sum over the lanes a ballot names: generic by shuffles, on sm_80 and later by __reduce_add_sync ---
template <class T>
__device__ T lanes_sum(unsigned mask, T v)          // mask: lanes 0 .. k-1; every lane of it gets the sum
{
    const int lane = threadIdx.x % 32, k = __popc(mask);
    for (int d = 16; d > 0; d >>= 1) {
        const T o = __shfl_down_sync(mask, v, d);
        if (lane + d < k) v += o;                    // a lane past the mask gives nothing
    }
    return __shfl_sync(mask, v, 0);
}
#if __CUDA_ARCH__ >= 800
template <> __device__ int lanes_sum<int>(unsigned mask, int v) { return __reduce_add_sync(mask, v); }
#endif

template <class T>
__global__ void masked_sums(const T* in, T* out, int n)     // full warps; threads from n on hold no value
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned mask = __ballot_sync(0xffffffffu, t < n);
    if (t < n) {
        const T s = lanes_sum<T>(mask, in[t]);
        if (t % 32 == 0) out[t / 32] = s;
        out[64 + t] = s;
    }
}

// --- four values to a thread: a uint4 scanned by the block passed by value ---
inline __device__ uint4 scan_four(uint4 v, volatile unsigned* s, cg::thread_block block)
{
    v.y += v.x;
    v.z += v.y;
    v.w += v.z;
    const unsigned t = block.thread_rank(), n = block.size();
    s[t] = v.w;
    cg::sync(block);
    for (unsigned d = 1; d < n; d *= 2) {           // the threads' totals, Hillis-Steele
        const unsigned add = t >= d ? s[t - d] : 0u;
        cg::sync(block);
        s[t] += add;
        cg::sync(block);
    }
    const unsigned before = t > 0 ? s[t - 1] : 0u;
    v.x += before;
    v.y += before;
    v.z += before;
    v.w += before;
    return v;
}

__global__ void exclusive_scan4(uint4* dst, const uint4* src)   // 4 blockDim.x values per block
{
    __shared__ unsigned s[256];
    cg::thread_block block = cg::this_thread_block();
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const uint4 x = src[i];
    const uint4 inc = scan_four(x, s, block);
    dst[i] = make_uint4(inc.x - x.x, inc.y - x.y, inc.z - x.z, inc.w - x.w);
}

__global__ void add_block_offsets(uint4* data, const unsigned* offsets)
{
    __shared__ unsigned offset;                      // read once, by one thread, for the block
    if (threadIdx.x == 0) offset = offsets[blockIdx.x];
    __syncthreads();
    uint4& d = data[blockIdx.x * blockDim.x + threadIdx.x];
    d.x += offset;
    d.y += offset;
    d.z += offset;
    d.w += offset;
}
'''


SINGLE_PASS = r'''
#include <cooperative_groups.h>
#include <math.h>
namespace cg = cooperative_groups;

// --- one pass over the data for its maximum and its sum: each block leaves its pair, the last to finish
// --- (by the ticket it takes) combines them
__device__ unsigned int blocks_done = 0;         // atomicInc wraps it; the last block sets it back to 0

struct MaxSum {
    float most, total;
};

// the block's maximum and sum in every thread: each warp folds its lanes with shuffles of the tile, its first
// lane leaves the warp's pair in scratch (volatile: 64 floats), thread 0 combines them. The block arrives by value
__device__ MaxSum block_max_sum(float most, float total, cg::thread_block block, volatile float* scratch)
{
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    for (int d = 16; d > 0; d /= 2) {
        most = fmaxf(most, warp.shfl_xor(most, d));
        total += warp.shfl_xor(total, d);
    }
    if (warp.thread_rank() == 0) {
        scratch[warp.meta_group_rank()] = most;
        scratch[32 + warp.meta_group_rank()] = total;
    }
    cg::sync(block);
    MaxSum r{-INFINITY, 0.0f};
    for (unsigned w = 0; w < warp.meta_group_size(); ++w) {
        r.most = fmaxf(r.most, scratch[w]);
        r.total += scratch[32 + w];
    }
    cg::sync(block);                             // scratch is free again for the next call
    return r;
}

__global__ void max_and_sum(const float* x, float2* parts, float* result, unsigned n)
{
    cg::thread_block block = cg::this_thread_block();
    extern __shared__ float scratch[];           // 64 floats
    extern float __shared__ same_scratch[];      // the same bytes under a second name, spelled type-first
    __shared__ bool closing;
    float most = -INFINITY, total = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        most = fmaxf(most, x[i]);
        total += x[i];
    }
    const MaxSum mine = block_max_sum(most, total, block, scratch);
    if (block.thread_rank() == 0) {
        parts[blockIdx.x] = make_float2(mine.most, mine.total);
        __threadfence();                         // the pair is out before the ticket is taken
        closing = atomicInc(&blocks_done, gridDim.x) == gridDim.x - 1;
    }
    cg::sync(block);
    if (!closing) return;
    __threadfence();                             // and the other blocks' pairs are read after it
    most = -INFINITY;
    total = 0.0f;
    for (unsigned b = block.thread_rank(); b < gridDim.x; b += block.size()) {
        const float2 p = __ldcg(&parts[b]);      // from L2, where the other blocks' stores are
        most = fmaxf(most, p.x);
        total += p.y;
    }
    const MaxSum all = block_max_sum(most, total, block, same_scratch);
    if (block.thread_rank() == 0) {
        result[0] = all.most;
        result[1] = all.total;
        blocks_done = 0;
    }
}
'''


@pytest.mark.parametrize("ctype,dtype", [("int", i32), ("float", f32), ("unsigned char", numpy.uint8)])
def test_dynamic_shared_memory_through_a_specialised_template_per_type(ctype, dtype):
    n = 48
    x = rng(1).integers(0, 200, n).astype(dtype)
    out = xp.zeros(n, dtype=dtype)
    load(REDUCE_SCAN_VOTE).get(f"neighbour_sums<{ctype}>")(1, n, (dev(x), out), shared_mem=n * x.itemsize)
    assert (host(out) == (x + numpy.roll(x, -1)).astype(dtype)).all()        # unsigned char wraps, as on a GPU


def test_dynamic_shared_memory_through_a_conversion_operator():
    n = 40
    x = rng(2).standard_normal(n)
    out = xp.zeros(n, dtype=f64)
    load(REDUCE_SCAN_VOTE).get("neighbour_differences")(1, n, (dev(x), out), shared_mem=n * 8)
    assert (host(out) == x - numpy.roll(x, 1)).all()


@pytest.mark.parametrize("n", [5000, 8192])
def test_a_single_pass_maximum_and_sum_whose_last_block_combines_the_blocks(n):
    m = load(SINGLE_PASS)
    k = m.get("max_and_sum")
    # small integers: every sum is exact in float32, so the check is exact and a lost or doubled part shows
    x = rng(3).integers(-50, 50, n).astype(f32)
    for _ in range(2):                                   # the ticket counter is back at 0 for the next launch
        parts, result = xp.zeros((64, 2), dtype=f32), xp.zeros(2, dtype=f32)
        k(64, 128, (dev(x), parts, result, n), shared_mem=64 * 4)
        assert list(host(result)) == [x.max(), x.astype(f64).sum()]
        assert int(host(m.get_global("blocks_done"))) == 0


@pytest.mark.parametrize("seg", [8, 16, 32])
def test_exclusive_prefix_sums_by_shuffles_with_a_width_and_a_default_argument(seg):
    k = load(REDUCE_SCAN_VOTE).get("exclusive_segments")
    blocks, threads = 6, 256
    x = rng(4).integers(-20, 20, blocks * threads).astype(i32)
    parts = x.reshape(-1, seg if seg < 32 else threads)
    want = (numpy.cumsum(parts, axis=1) - parts).ravel()
    out = xp.zeros(x.size, dtype=i32)
    k(blocks, threads, (dev(x), out, seg, None))          # no totals: the null the default gives
    assert (host(out) == want).all()
    if seg == 32:
        out, totals = xp.zeros(x.size, dtype=i32), xp.zeros(blocks, dtype=i32)
        k(blocks, threads, (dev(x), out, seg, totals))
        assert (host(out) == want).all() and (host(totals) == x.reshape(blocks, -1).sum(1)).all()


def test_votes_over_a_warp_and_over_half_of_it():
    patterns = numpy.zeros((4, 32), dtype=u32)
    patterns[1] = 7                                      # every lane set
    patterns[2, 19] = 1                                  # one lane, in the upper half
    patterns[3] = 1
    patterns[3, 5] = 0                                   # all but one, in the lower half
    any_, half_any = xp.zeros(128, dtype=u32), xp.zeros(128, dtype=u32)
    all_, half_all = xp.zeros(128, dtype=numpy.bool_), xp.zeros(128, dtype=numpy.bool_)
    load(REDUCE_SCAN_VOTE).get("votes")(2, 64, (dev(patterns.ravel()), any_, all_, half_any, half_all))
    p = patterns != 0
    assert (host(any_).reshape(4, 32) == p.any(1)[:, None]).all()
    assert (host(all_).reshape(4, 32) == p.all(1)[:, None]).all()
    lower = p[:, :16]
    assert (host(half_any).reshape(4, 32)[:, :16] == lower.any(1)[:, None]).all()
    assert (host(half_all).reshape(4, 32)[:, :16] == lower.all(1)[:, None]).all()


@pytest.mark.parametrize("ctype,dtype", [("int", i32), ("float", f32)])
def test_sums_over_the_lanes_a_ballot_names(ctype, dtype):
    n = 80                                               # three warps; the third holds 16 values
    x = rng(5).integers(-100, 100, n).astype(dtype)
    out = xp.zeros(64 + 96, dtype=dtype)
    load(REDUCE_SCAN_VOTE).get(f"masked_sums<{ctype}>")(1, 96, (dev(x), out, n))
    got = host(out)
    sums = [x[w * 32:min(n, w * 32 + 32)].sum() for w in range(3)]
    assert (got[:3] == sums).all()                       # small integers: exact in float too
    assert (got[64:64 + n] == numpy.repeat(sums, 32)[:n]).all()


def test_a_uint4_scan_with_the_block_passed_by_value_then_offsets_added():
    m = load(REDUCE_SCAN_VOTE)
    blocks, threads = 3, 256
    x = rng(6).integers(0, 1000, blocks * threads * 4).astype(u32)
    scanned = xp.zeros(x.size, dtype=u32)
    m.get("exclusive_scan4")(blocks, threads, (scanned, dev(x)))
    per_block = x.reshape(blocks, -1)
    want = (numpy.cumsum(per_block, axis=1) - per_block).ravel()
    assert (host(scanned) == want).all()
    offsets = numpy.concatenate([[0], numpy.cumsum(per_block.sum(1))[:-1]]).astype(u32)
    m.get("add_block_offsets")(blocks, threads, (scanned, dev(offsets)))
    assert (host(scanned) == numpy.cumsum(x) - x).all()


# --- cooperative groups as the samples use them: a type-erased group, the grid, partitions of a branch ----

GROUPS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
using namespace cooperative_groups;

// the sum of the values of a group's threads, in its rank 0 (-1 in the others); ws: g.size() ints of scratch
__device__ int group_sum(thread_group g, int* ws, int v)
{
    const unsigned r = g.thread_rank();
    ws[r] = v;
    g.sync();
    for (unsigned h = g.size() / 2; h > 0; h /= 2) {
        if (r < h) ws[r] += ws[r + h];
        g.sync();
    }
    const int total = r == 0 ? ws[0] : -1;
    g.sync();
    return total;
}

__global__ void type_erased_sums(int* out)         // one block of 64 threads, 64 ints of dynamic shared memory
{
    extern __shared__ int ws[];
    thread_block block = this_thread_block();
    const int all = group_sum(block, ws, block.thread_rank());       // a thread_block becomes a thread_group
    if (block.thread_rank() == 0) out[0] = all;
    block.sync();
    thread_block_tile<16> sixteen = tiled_partition<16>(block);      // and so does a tile
    const int s16 = group_sum(sixteen, ws + 16 * sixteen.meta_group_rank(), sixteen.thread_rank());
    if (sixteen.thread_rank() == 0) out[1 + sixteen.meta_group_rank()] = s16;
    block.sync();
    thread_group eight = tiled_partition(block, 8);                  // a tile sized at run time
    const int s8 = group_sum(eight, ws + 8 * (block.thread_rank() / 8), eight.thread_rank());
    if (eight.thread_rank() == 0) out[5 + block.thread_rank() / 8] = s8;
}

// every element i whose key k is below `buckets` gets a slot in bucket k's list (rows of n). The threads of a
// warp that reached the branch with the same key take their slots with one atomic, made by their leader
__global__ void bucket_lists(const int* keys, int n, int buckets, int* counts, int* lists)
{
    grid_group grid = this_grid();
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size()) {
        const int k = keys[i];
        if (k < buckets) {
            coalesced_group active = coalesced_threads();
            coalesced_group same = labeled_partition(active, k);
            int base = 0;
            if (same.thread_rank() == 0) base = atomicAdd(&counts[k], (int)same.size());
            base = same.shfl(base, 0);
            lists[k * n + base + same.thread_rank()] = (int)i;
        }
    }
}

__global__ void bucket_maxima(const int* keys, const int* values, int n, int buckets, int* maxima)
{
    grid_group grid = this_grid();
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size()) {
        const int k = keys[i];
        if (k < buckets) {
            coalesced_group same = labeled_partition(coalesced_threads(), k);
            const int m = reduce(same, values[i], greater<int>());
            if (same.thread_rank() == 0) atomicMax(&maxima[k], m);
        }
    }
}

// how many odd and even values there are, and their sums: each round the warp splits by parity, and each
// side's leader adds for it (n: a multiple of 32, so that whole warps take each round)
__global__ void parity_counts(const int* x, int n, int* counts, int* sums)
{
    thread_block_tile<32> warp = tiled_partition<32>(this_thread_block());
    grid_group grid = this_grid();
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size()) {
        const int v = x[i];
        coalesced_group side = binary_partition(warp, v & 1);
        const int s = reduce(side, v, plus<int>());
        if (side.thread_rank() == 0) {
            atomicAdd(&counts[v & 1], (int)side.size());
            atomicAdd(&sums[v & 1], s);
        }
        sync(warp);
    }
}

// a square transposed through shared memory, the thread's place read from its group, the block synced by the
// free function
__global__ void transpose_by_index(const float* in, float* out)      // one block of w x w threads
{
    extern __shared__ float tile[];
    thread_block cta = this_thread_block();
    const dim3 at = cta.thread_index(), dims = cta.group_dim();
    tile[at.y * dims.x + at.x] = in[at.y * dims.x + at.x];
    sync(cta);
    out[at.y * dims.x + at.x] = tile[at.x * dims.x + at.y];
}
'''


def test_a_type_erased_group_made_from_a_block_and_from_tiles():
    out = xp.zeros(13, dtype=i32)
    load(GROUPS).get("type_erased_sums")(1, 64, (out,), shared_mem=64 * 4)
    got = host(out)
    assert got[0] == sum(range(64))
    assert (got[1:5] == sum(range(16))).all() and (got[5:13] == sum(range(8))).all()


def test_labeled_partitions_of_the_threads_that_took_a_branch_in_a_grid_stride_loop():
    m = load(GROUPS)
    n, buckets = 9000, 7
    r = rng(7)
    keys = r.integers(0, buckets + 2, n).astype(i32)         # keys of 7 and 8 skip the branch
    values = r.integers(-10**6, 10**6, n).astype(i32)
    counts, lists = xp.zeros(buckets, dtype=i32), xp.full(buckets * n, -1, dtype=i32)
    m.get("bucket_lists")(10, 512, (dev(keys), n, buckets, counts, lists))  # 5120 threads: each loops
    got_counts, got_lists = host(counts), host(lists).reshape(buckets, n)
    for k in range(buckets):
        members = numpy.flatnonzero(keys == k)
        assert got_counts[k] == members.size
        assert (numpy.sort(got_lists[k, :members.size]) == members).all() and (got_lists[k, members.size:] == -1).all()
    maxima = xp.full(buckets, -2**31, dtype=i32)
    m.get("bucket_maxima")(10, 512, (dev(keys), dev(values), n, buckets, maxima))
    assert (host(maxima) == [values[keys == k].max() for k in range(buckets)]).all()


def test_a_warp_split_by_parity_in_each_round_of_a_grid_stride_loop():
    n = 32 * 170                                         # whole warps, more than the grid's 1024 threads
    x = rng(8).integers(-1000, 1000, n).astype(i32)
    counts, sums = xp.zeros(2, dtype=i32), xp.zeros(2, dtype=i32)
    load(GROUPS).get("parity_counts")(4, 256, (dev(x), n, counts, sums))
    odd = (x & 1) == 1
    assert list(host(counts)) == [int((~odd).sum()), int(odd.sum())]
    assert list(host(sums)) == [int(x[~odd].sum()), int(x[odd].sum())]


def test_a_thread_index_from_the_group_and_the_free_sync():
    w = 24
    a = rng(9).standard_normal((w, w)).astype(f32)
    out = xp.zeros((w, w), dtype=f32)
    load(GROUPS).get("transpose_by_index")(1, (w, w), (dev(a), out), shared_mem=w * w * 4)
    assert (host(out) == a.T).all()


# --- sorting networks over several launches: bitonic, and Batcher's odd-even merge ------------------------

SORTING = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#define CHUNK 1024                     // the keys one block orders in shared memory, two per thread

// puts a key-value pair pair in order: ascending where `up` is 1, descending where it is 0. The references
// reach shared memory or a thread's own registers
__device__ inline void order_pair(unsigned& ka, unsigned& va, unsigned& kb, unsigned& vb, unsigned up)
{
    if ((ka > kb) == (up != 0)) {
        unsigned t = ka;
        ka = kb;
        kb = t;
        t = va;
        va = vb;
        vb = t;
    }
}

// the lower index of pair p at distance j: the pairs (i, i + j) with bit j of i clear, numbered in order
__device__ inline unsigned lower_of(unsigned p, unsigned j) { return 2 * p - (p & (j - 1)); }

// bitonic: each CHUNK of each array of length L sorted, neighbouring chunks in opposite orders (each pair of
// them is then one bitonic run for the merges that follow); an array no longer than a chunk ends in `up`'s order
__global__ void bitonic_chunks(unsigned* dk, unsigned* dv, const unsigned* sk, const unsigned* sv, unsigned L,
                               unsigned up)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ unsigned key[CHUNK], val[CHUNK];
    const unsigned base = blockIdx.x * CHUNK, t = threadIdx.x, h = CHUNK / 2;
    key[t] = sk[base + t];
    val[t] = sv[base + t];
    key[t + h] = sk[base + t + h];
    val[t + h] = sv[base + t + h];
    const unsigned order = up ^ ((base % L & CHUNK) != 0);
    for (unsigned k = 2; k <= CHUNK; k <<= 1)
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            cg::sync(cta);
            const unsigned i = lower_of(t, j);
            order_pair(key[i], val[i], key[i + j], val[i + j], order ^ ((i & k) != 0));
        }
    cg::sync(cta);
    dk[base + t] = key[t];
    dv[base + t] = val[t];
    dk[base + t + h] = key[t + h];
    dv[base + t + h] = val[t + h];
}

// one step of the merge of runs of length k, at a distance j of at least CHUNK: a pair per thread, in registers
__global__ void bitonic_step(unsigned* dk, unsigned* dv, const unsigned* sk, const unsigned* sv, unsigned L,
                             unsigned k, unsigned j, unsigned up)
{
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned i = lower_of(p % (L / 2), j), at = p / (L / 2) * L + i;
    unsigned ka = sk[at], va = sv[at], kb = sk[at + j], vb = sv[at + j];
    order_pair(ka, va, kb, vb, up ^ ((i & k) != 0));
    dk[at] = ka;
    dv[at] = va;
    dk[at + j] = kb;
    dv[at + j] = vb;
}

// the steps of distance CHUNK / 2 down to 1 of the merge of runs of length k, a chunk per block
__global__ void bitonic_finish(unsigned* dk, unsigned* dv, const unsigned* sk, const unsigned* sv, unsigned L,
                               unsigned k, unsigned up)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ unsigned key[CHUNK], val[CHUNK];
    const unsigned base = blockIdx.x * CHUNK, t = threadIdx.x, h = CHUNK / 2;
    key[t] = sk[base + t];
    val[t] = sv[base + t];
    key[t + h] = sk[base + t + h];
    val[t + h] = sv[base + t + h];
    const unsigned order = up ^ ((base % L & k) != 0);     // a chunk lies in one run of length k
    for (unsigned j = h; j > 0; j >>= 1) {
        cg::sync(cta);
        const unsigned i = lower_of(t, j);
        order_pair(key[i], val[i], key[i + j], val[i + j], order);
    }
    cg::sync(cta);
    dk[base + t] = key[t];
    dv[base + t] = val[t];
    dk[base + t + h] = key[t + h];
    dv[base + t + h] = val[t + h];
}

// odd-even merge: in the step (p, k) of Batcher's network, element e is compared with e + k where e lies in the
// first half of a group of 2k counted from k % p, and e and e + k lie in one block of 2p
__device__ inline bool odd_even_lower(unsigned e, unsigned p, unsigned k, unsigned L)
{
    const unsigned from = k % p;
    return e >= from && (e - from) % (2 * k) < k && e + k < L && e / (2 * p) == (e + k) / (2 * p);
}

// the steps of every p below CHUNK, a chunk per block in shared memory, two elements per thread
__global__ void odd_even_chunks(unsigned* dk, unsigned* dv, const unsigned* sk, const unsigned* sv, unsigned up)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ unsigned key[CHUNK], val[CHUNK];
    const unsigned base = blockIdx.x * CHUNK, t = threadIdx.x, h = CHUNK / 2;
    key[t] = sk[base + t];
    val[t] = sv[base + t];
    key[t + h] = sk[base + t + h];
    val[t + h] = sv[base + t + h];
    for (unsigned p = 1; p < CHUNK; p <<= 1)
        for (unsigned k = p; k > 0; k >>= 1) {
            cg::sync(cta);
            for (unsigned e = t; e < CHUNK; e += h)
                if (odd_even_lower(e, p, k, CHUNK)) order_pair(key[e], val[e], key[e + k], val[e + k], up);
        }
    cg::sync(cta);
    dk[base + t] = key[t];
    dv[base + t] = val[t];
    dk[base + t + h] = key[t + h];
    dv[base + t + h] = val[t + h];
}

// one step (p, k) with p of at least CHUNK, an element per thread
__global__ void odd_even_step(unsigned* dk, unsigned* dv, const unsigned* sk, const unsigned* sv, unsigned L,
                              unsigned p, unsigned k, unsigned up)
{
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x, e = g % L, at = g - e;
    if (!odd_even_lower(e, p, k, L)) return;
    unsigned ka = sk[at + e], va = sv[at + e], kb = sk[at + e + k], vb = sv[at + e + k];
    order_pair(ka, va, kb, vb, up);
    dk[at + e] = ka;
    dv[at + e] = va;
    dk[at + e + k] = kb;
    dv[at + e + k] = vb;
}
'''

CHUNK = 1024


def _sort(method, keys, up):
    """The host's side of a sort as the samples drive it: launches in place (destination == source)."""
    m = load(SORTING)
    batch, L = keys.shape
    k_, v_ = dev(keys.ravel()), dev(numpy.tile(numpy.arange(L, dtype=u32), batch))
    chunks = batch * L // CHUNK
    if method == "bitonic":
        m.get("bitonic_chunks")(chunks, CHUNK // 2, (k_, v_, k_, v_, L, up))
        k = 2 * CHUNK
        while k <= L:
            j = k // 2
            while j >= CHUNK:
                m.get("bitonic_step")(batch * L // 2 // 256, 256, (k_, v_, k_, v_, L, k, j, up))
                j //= 2
            m.get("bitonic_finish")(chunks, CHUNK // 2, (k_, v_, k_, v_, L, k, up))
            k *= 2
    else:
        m.get("odd_even_chunks")(chunks, CHUNK // 2, (k_, v_, k_, v_, up))
        p = CHUNK
        while p < L:
            k = p
            while k >= 1:
                m.get("odd_even_step")(batch * L // 256, 256, (k_, v_, k_, v_, L, p, k, up))
                k //= 2
            p *= 2
    return host(k_).reshape(batch, L), host(v_).reshape(batch, L)


@pytest.mark.parametrize("method", ["bitonic", "odd_even"])
@pytest.mark.parametrize("L,up", [(4096, 1), (4096, 0), (1024, 1)])
def test_sorting_networks_order_keys_and_carry_their_values(method, L, up):
    keys = rng(10).integers(0, 5000, (2, L)).astype(u32)        # repeated keys: a network is not stable
    got_k, got_v = _sort(method, keys, up)
    want = numpy.sort(keys, axis=1)
    assert (got_k == (want if up else want[:, ::-1])).all()
    for row in range(2):
        assert (numpy.sort(got_v[row]) == numpy.arange(L)).all()          # a permutation of the places
        assert (keys[row][got_v[row]] == got_k[row]).all()                # each key came with its value


# --- a 64-bin histogram counted in bytes: one column of byte counters per thread -------------------------

BYTE_COUNTERS = r'''
#define BINS 64
#define THREADS 64                     // one column of byte counters per thread
#define LOADS 15                       // 16 bytes a load: 240 counts at most, so that no byte counter overflows
typedef uint4 word16;

__global__ void histogram64_bytes(unsigned* partial, const word16* data, unsigned words)
{
    __shared__ __align__(4) unsigned char counts[BINS * THREADS];     // counts[bin * THREADS + column]
    const unsigned t = threadIdx.x;
    for (unsigned i = 0; i < BINS * THREADS / 4 / THREADS; ++i) ((unsigned*)counts)[t + i * THREADS] = 0;
    // a thread's column, permuted so that the threads of a warp start on different banks
    unsigned char* column = counts + (((t & 15) << 2) | (t >> 4));
    __syncthreads();
    const unsigned first = blockIdx.x * THREADS * LOADS, end = min(first + THREADS * LOADS, words);
    for (unsigned w = first + t; w < end; w += THREADS) {
        const word16 d = data[w];
        const unsigned parts[4] = {d.x, d.y, d.z, d.w};
        for (int q = 0; q < 4; ++q)
            for (int b = 0; b < 32; b += 8) column[((parts[q] >> b) & 0xFFu) >> 2 << 6]++;   // bin * THREADS
    }
    __syncthreads();
    // thread t adds up bin t's row, four counters a word, starting at a word of its own
    const unsigned* row = (const unsigned*)(counts + t * THREADS);
    unsigned sum = 0;
    for (unsigned i = 0; i < THREADS / 4; ++i) {
        const unsigned v = row[(i + t) % (THREADS / 4)];
        sum += (v & 0xFFu) + ((v >> 8) & 0xFFu) + ((v >> 16) & 0xFFu) + (v >> 24);
    }
    partial[blockIdx.x * BINS + t] = sum;
}

// the blocks' counts of each bin added up by one warp per bin (blocks of 32 x 8 threads: eight bins a block)
__global__ void merge_bins(unsigned* hist, const unsigned* partial, unsigned blocks)
{
    const unsigned bin = blockIdx.x * blockDim.y + threadIdx.y;
    unsigned v = 0;
    for (unsigned b = threadIdx.x; b < blocks; b += 32) v += partial[b * BINS + bin];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (threadIdx.x == 0) hist[bin] = v;
}
'''


def test_a_histogram_counted_in_bytes_per_thread():
    m = load(BYTE_COUNTERS)
    words = 2 * 64 * 15 + 123                             # three blocks, the last one short
    data = rng(11).integers(0, 256, words * 16).astype(numpy.uint8)
    data[:4000] = 200                                     # one bin far fuller than the others
    blocks = -(-words // (64 * 15))
    partial, hist = xp.zeros(blocks * 64, dtype=u32), xp.zeros(64, dtype=u32)
    m.get("histogram64_bytes")(blocks, 64, (partial, dev(data.view(u32)), words))
    m.get("merge_bins")(64 // 8, (32, 8), (hist, partial, blocks))
    assert (host(hist) == numpy.bincount(data >> 2, minlength=64)).all()


# --- tables the host fills: a static 2-D __constant__ table, an array of structs, scalars; results in a
# --- static __device__ array -------------------------------------------------------------------------------

TABLES = r'''
static __constant__ unsigned int weights[4][16];       // four rows of weights, from the host

// for point p and row threadIdx.y: the sum (mod 2^32) of the row's weights at the set bits of p
__global__ void weighted_bits(unsigned* out, int n)
{
    unsigned int* row = &weights[threadIdx.y][0];          // a plain pointer into constant memory
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += blockDim.x * gridDim.x) {
        unsigned v = 0;
        for (int b = 0; b < 16; ++b) v += ((p >> b) & 1) ? row[b] : 0u;
        out[threadIdx.y * n + p] = v;
    }
}

typedef struct {
    float scale, shift, rate;
} __Term;                                                // named with a leading __, as some samples name types

#define POINTS 128
static __constant__ __Term terms[16];
static __device__ float results[16];

// no parameters: block b sums scale * exp(rate * x) - shift over x = i / POINTS for its term, into results[b]
__global__ void evaluate_terms()
{
    __shared__ float part[POINTS];
    const __Term c = terms[blockIdx.x];
    part[threadIdx.x] = c.scale * expf(c.rate * (threadIdx.x / (float)POINTS)) - c.shift;
    for (int h = POINTS / 2; h > 0; h >>= 1) {
        __syncthreads();
        if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    }
    if (threadIdx.x == 0) results[blockIdx.x] = part[0];
}

__constant__ float c_w0, c_w1, c_w2, c_w3;               // four weights, declared together, set one by one

// a periodic stencil: y[i] = w0 x[i] + w1 (x[i+1] + x[i-1]) + w2 (x[i+2] + x[i-2]) + w3 (x[i+3] - x[i-3])
__global__ void weighted_stencil(const float* x, float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#define AT(o) x[((i + (o)) % n + n) % n]
    y[i] = c_w0 * AT(0) + c_w1 * (AT(1) + AT(-1)) + c_w2 * (AT(2) + AT(-2)) + c_w3 * (AT(3) - AT(-3));
#undef AT
}
'''


@pytest.fixture(scope="module")
def tables():
    m = gl.load(code=TABLES)
    for name in ("weighted_bits", "evaluate_terms", "weighted_stencil"):
        m.get(name)
    return m


def test_a_static_two_dimensional_constant_table_filled_by_the_host(tables):
    w = rng(12).integers(0, 2**32, (4, 16), dtype=numpy.uint64).astype(u32)
    tables.get_global("weights")[...] = dev(w)
    n = 1000
    out = xp.zeros(4 * n, dtype=u32)
    tables.get("weighted_bits")(4, (64, 4), (out, n))
    bits = (numpy.arange(n)[:, None] >> numpy.arange(16)) & 1                  # n x 16
    want = (bits.astype(numpy.uint64) @ w.T.astype(numpy.uint64)) % 2**32     # n x 4
    assert (host(out).reshape(4, n) == want.T).all()


def test_an_array_of_structs_in_constant_memory_in_and_a_device_array_out(tables):
    terms = numpy.stack([rng(13).uniform(lo, hi, 16) for lo, hi in ((0.5, 2), (-1, 1), (-3, 3))], 1).astype(f32)
    tables.get_global("terms", dtype=f32)[:48] = dev(terms.ravel())
    tables.get("evaluate_terms")(16, 128, ())
    got = host(tables.get_global("results", dtype=f32))
    x = numpy.arange(128) / 128
    want = (terms[:, :1].astype(f64) * numpy.exp(terms[:, 2:3] * x) - terms[:, 1:2]).sum(1)
    assert numpy.allclose(got, want, rtol=1e-5, atol=1e-4)


def test_scalars_declared_together_and_set_one_by_one(tables):
    w = [0.5, -0.25, 0.125, 2.0]
    for i, v in enumerate(w):
        tables.get_global(f"c_w{i}")[...] = v
    n = 333
    x = rng(14).standard_normal(n).astype(f32)
    y = xp.zeros(n, dtype=f32)
    tables.get("weighted_stencil")(2, 256, (dev(x), y, n))
    x64 = x.astype(f64)

    def at(o):
        return numpy.roll(x64, -o)

    want = w[0] * x64 + w[1] * (at(1) + at(-1)) + w[2] * (at(2) + at(-2)) + w[3] * (at(3) - at(-3))
    assert numpy.allclose(host(y), want, rtol=1e-5, atol=1e-5)


# --- half2 arithmetic: intrinsics and operators, a half by value --------------------------------------------

HALVES = r'''
#include "cuda_fp16.h"

// the dot product of two vectors of half pairs, a partial sum per block: each thread sums its pairs with
// intrinsics, the block adds the threads' pairs in a tree of __hadd2, and the two halves of the last pair are
// added in float
__global__ void dot_half2_intrinsics(const half2* a, const half2* b, float* out, size_t pairs)
{
    __shared__ half2 part[128];
    half2 v = __float2half2_rn(0.f);
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += (size_t)blockDim.x * gridDim.x)
        v = __hfma2(a[i], b[i], v);
    part[threadIdx.x] = v;
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        __syncthreads();
        if (threadIdx.x < h) part[threadIdx.x] = __hadd2(part[threadIdx.x], part[threadIdx.x + h]);
    }
    if (threadIdx.x == 0) out[blockIdx.x] = __low2float(part[0]) + __high2float(part[0]);
}

// the same with the operators of half2
__global__ void dot_half2_operators(const half2* a, const half2* b, float* out, size_t pairs)
{
    __shared__ half2 part[128];
    half2 v(0.f, 0.f);
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += (size_t)blockDim.x * gridDim.x)
        v = a[i] * b[i] + v;
    part[threadIdx.x] = v;
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        __syncthreads();
        if (threadIdx.x < h) part[threadIdx.x] = part[threadIdx.x] + part[threadIdx.x + h];
    }
    if (threadIdx.x == 0) out[blockIdx.x] = (float)part[0].x + (float)part[0].y;
}

// y = x - a y in half precision, a pair at a time; an odd n's last element by the grid's last thread alone
__global__ void subtract_scaled(half* y, const half* x, half a, int n)
{
    const half2 minus_a = __hneg2(__halves2half2(a, a));
    half2* y2 = reinterpret_cast<half2*>(y);
    const half2* x2 = reinterpret_cast<const half2*>(x);
    const int threads = blockDim.x * gridDim.x, me = blockIdx.x * blockDim.x + threadIdx.x;
    for (int p = me; p < n / 2; p += threads) y2[p] = __hfma2(minus_a, y2[p], x2[p]);
    if (n % 2 && me == threads - 1) y[n - 1] = __hfma(__hneg(a), y[n - 1], x[n - 1]);
}
'''


def _half_tree(v):
    """A power-of-two array of float16 values summed pairwise in float16, as a block's tree of additions."""
    v = v.astype(numpy.float16)
    while v.shape[-2] > 1:
        h = v.shape[-2] // 2
        v = (v[..., :h, :].astype(f64) + v[..., h:, :]).astype(numpy.float16)
    return v[..., 0, :]


@pytest.mark.parametrize("name", ["dot_half2_intrinsics", "dot_half2_operators"])
def test_a_half2_dot_product_with_its_tree_of_half_additions(name):
    blocks, threads, each = 16, 128, 4
    pairs = blocks * threads * each
    r = rng(15)
    # small integers: every product and every thread's sum is exact in half; only the block's tree rounds
    a, b = (numpy.stack([r.integers(0, 4, pairs), r.integers(0, 2, pairs)], 1).astype(numpy.float16)
            for _ in range(2))
    out = xp.zeros(blocks, dtype=f32)
    load(HALVES).get(name)(blocks, threads, (dev(a), dev(b), out, numpy.uint64(pairs)))
    prod = (a.astype(f64) * b).reshape(each, blocks, threads, 2)          # thread t of block k: pairs k*128+t+...
    tree = _half_tree(prod.sum(0))
    assert (host(out) == tree[:, 0].astype(f32) + tree[:, 1].astype(f32)).all()


def test_a_half_passed_by_value_scales_pairs_of_halves():
    n = 101
    r = rng(16)
    x, y = r.standard_normal(n).astype(numpy.float16), r.standard_normal(n).astype(numpy.float16)
    yd = dev(y)
    load(HALVES).get("subtract_scaled")(2, 32, (yd, dev(x), numpy.float16(2.5), n))
    assert (host(yd) == (x.astype(f64) - 2.5 * y.astype(f64)).astype(numpy.float16)).all()   # one rounding


# --- printf from a kernel -----------------------------------------------------------------------------------

PRINTF = r'''
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void report_sums(int* ws)             // one block of 64 threads
{
    cg::thread_block block = cg::this_thread_block();
    const int r = block.thread_rank();
    ws[r] = r;
    block.sync();
    if (r == 0) {
        int total = 0;
        for (int i = 0; i < (int)block.size(); ++i) total += ws[i];
        printf("\n the ranks 0..%d of the block add up to %d"
               " (want %d)\n\n", (int)block.size() - 1, total, (int)(block.size() * (block.size() - 1) / 2));
    }
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    int s = r;
    for (int d = 8; d > 0; d /= 2) s += tile.shfl_down(s, d);
    if (tile.thread_rank() == 0)
        printf("tile %d of %d: %d\n", (int)tile.meta_group_rank(), (int)tile.meta_group_size(), s);
}
'''


def test_printf_from_a_kernel(capfd):
    ws = xp.zeros(64, dtype=i32)
    load(PRINTF).get("report_sums")(1, 64, (ws,))
    gl.synchronize()
    out = capfd.readouterr().out
    assert "\n the ranks 0..63 of the block add up to 2016 (want 2016)\n\n" in out
    for t in range(4):                                # each tile's first thread adds its 16 ranks
        assert out.count(f"tile {t} of 4: {sum(range(16 * t, 16 * t + 16))}\n") == 1, out


# --- objects with virtual functions: in shared memory by placement new, on the device heap by new ---------

OBJECTS = r'''
#include <new>

// a stack whose implementations live in shared memory or on the device heap, called through the interface
template <class T>
class Stack {
public:
    __device__ virtual ~Stack() {}
    __device__ virtual void push(const T& v) = 0;
    __device__ virtual bool pop(T& v) = 0;
};

// slots taken and given back with atomics on the top, so that a block's threads may push at once, and then
// pop at once (a push and a pop never overlap here)
template <class T>
class ArrayStack : public Stack<T> {
    T* slots;
    int capacity;
    int top;
    bool owns;
public:
    __device__ explicit ArrayStack(int n) : slots(new T[n]), capacity(n), top(0), owns(true) {}
    __device__ ArrayStack(int n, T* storage) : slots(new (storage) T[n]), capacity(n), top(0), owns(false) {}
    __device__ ~ArrayStack() override { if (owns) delete[] slots; }
    __device__ void push(const T& v) override
    {
        const int at = atomicAdd(&(this->top), 1);
        if (at < capacity) slots[at] = v;
    }
    __device__ bool pop(T& v) override
    {
        const int at = atomicAdd(&(this->top), -1) - 1;
        if (at < 0 || at >= capacity) return false;
        v = slots[at];
        return true;
    }
};

struct Record {                        // a struct element: a key and a payload that must travel with it
    int key;
    short tag;
    float weight;
    double value;
};
__device__ inline Record make_item(int k, Record*) { return Record{k, (short)(k % 7), 0.5f * k, 2.0 * k}; }
__device__ inline int make_item(int k, int*) { return k; }
__device__ inline int key_of(const Record& r)
{ return r.tag == r.key % 7 && r.weight == 0.5f * r.key && r.value == 2.0 * r.key ? r.key : -2; }
__device__ inline int key_of(int k) { return k; }

// the stack and its slots in shared memory: placement new of the object, and of the slots' array
template <class T>
__global__ void stack_in_shared(int* out)              // blockDim.x <= 1024
{
    __shared__ unsigned char __align__(8) place[sizeof(ArrayStack<T>)];
    __shared__ T __align__(8) storage[1024];
    __shared__ Stack<T>* s;
    if (threadIdx.x == 0) s = new (place) ArrayStack<T>(1024, storage);
    __syncthreads();
    if (threadIdx.x % 2 == 0) s->push(make_item(threadIdx.x / 2, (T*)nullptr));
    __syncthreads();
    T v;
    out[threadIdx.x] = s->pop(v) ? key_of(v) : -1;
    __syncthreads();
    if (threadIdx.x == 0) s->~Stack<T>();              // made in place: destroyed, not deleted
}

// the stack on the device heap, made, used and deleted (its slots too, by its virtual destructor) in one launch
__global__ void stack_on_heap(int* out, int n)
{
    __shared__ Stack<int>* s;
    if (threadIdx.x == 0) s = new ArrayStack<int>(n);
    __syncthreads();
    if (s == nullptr) return;
    if (threadIdx.x < n) s->push(3 * threadIdx.x);
    __syncthreads();
    int v;
    out[threadIdx.x] = s->pop(v) ? v : -1;
    __syncthreads();
    if (threadIdx.x == 0) delete s;
}

// one launch makes it, the next fill it, another drains it, the last deletes it: the heap outlives launches
__global__ void make_stack(Stack<int>** box, int n) { *box = new ArrayStack<int>(n); }
__global__ void fill_stack(Stack<int>** box) { (*box)->push(blockIdx.x * blockDim.x + threadIdx.x); }
__global__ void drain_stack(Stack<int>** box, int* out)
{
    int v;
    out[blockIdx.x * blockDim.x + threadIdx.x] = (*box)->pop(v) ? v : -1;
}
__global__ void drop_stack(Stack<int>** box)
{
    delete *box;
    *box = nullptr;
}

// every thread takes a block of its own with malloc, its neighbour reads it, every thread frees its own; and a
// request larger than the heap gets a null pointer
__global__ void blocks_per_thread(int* out, int words)
{
    __shared__ int* mine[256];
    int* p = static_cast<int*>(malloc(words * sizeof(int)));
    mine[threadIdx.x] = p;
    if (p)
        for (int i = 0; i < words; ++i) p[i] = threadIdx.x * 1000 + i;
    __syncthreads();
    const int other = (threadIdx.x + 1) % blockDim.x;
    int sum = 0;
    if (mine[other])
        for (int i = 0; i < words; ++i) sum += mine[other][i];
    out[threadIdx.x] = mine[other] ? sum : -1;
    __syncthreads();
    free(p);
    if (threadIdx.x == 0) {
        void* huge = malloc((size_t)1 << 34);
        int* many = new int[(size_t)1 << 32];
        out[blockDim.x] = (huge == nullptr) + 2 * (many == nullptr);
        free(huge);
        delete[] many;
    }
}
'''


def _pops(got, pushed):
    """What a stack's pops gave: the values pushed, once each, the rest -1."""
    vals = numpy.sort(got[got != -1])
    assert (vals == numpy.sort(pushed)).all(), (vals[:10], len(vals))


@pytest.mark.parametrize("element", ["int", "Record"])
def test_an_object_with_virtual_functions_made_in_shared_memory_by_placement_new(element):
    out = xp.zeros(1024, dtype=i32)
    load(OBJECTS).get(f"stack_in_shared<{element}>")(1, 1024, (out,))
    _pops(host(out), numpy.arange(512))                 # and a Record came back whole (key_of checks it)


def test_an_object_made_used_and_deleted_on_the_device_heap_in_one_launch():
    n = 200
    out = xp.zeros(256, dtype=i32)
    load(OBJECTS).get("stack_on_heap")(1, 256, (out, n))
    _pops(host(out), 3 * numpy.arange(n))


def test_the_device_heap_outlives_a_launch():
    m = load(OBJECTS)
    box = xp.zeros(1, dtype=numpy.uint64)                # Stack<int>**: one device pointer
    m.get("make_stack")(1, 1, (box, 128 * 128))
    assert int(host(box)[0]) != 0
    m.get("fill_stack")(128, 128, (box,))
    out = xp.zeros(128 * 128, dtype=i32)
    m.get("drain_stack")(128, 128, (box, out))
    _pops(host(out), numpy.arange(128 * 128))
    m.get("drop_stack")(1, 1, (box,))
    assert int(host(box)[0]) == 0


def test_malloc_and_free_by_every_thread_and_a_request_larger_than_the_heap():
    words = 10
    out = xp.zeros(257, dtype=i32)
    load(OBJECTS).get("blocks_per_thread")(1, 256, (out, words))
    got = host(out)
    other = (numpy.arange(256) + 1) % 256
    assert (got[:256] == other * 1000 * words + sum(range(words))).all()
    assert got[256] == 3                                 # both null: malloc's and new's


# --- structs aligned by typedef, copied whole by a kernel template instantiated by their names ------------

ALIGNED = r'''
typedef struct __align__(16) { float x, y, z; } Point3;              // 12 bytes of data, 16 with padding
typedef struct { float x, y, z; } Point3Packed;                           // the same data in 12 bytes
typedef struct __align__(8) { short id, flags; float weight; } Tag;      // 8 bytes
typedef struct __align__(16) { Point3 at, velocity; } Particle;         // 32 bytes

// element i of dst is element n - 1 - i of src, moved whole as its type
template <class T>
__global__ void reversed_elements(unsigned char* dst, const unsigned char* src, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) reinterpret_cast<T*>(dst)[i] = reinterpret_cast<const T*>(src)[n - 1 - i];
}
'''


@pytest.mark.parametrize("name,size,data", [("Point3", 16, [(0, 12)]), ("Point3Packed", 12, [(0, 12)]),
                                            ("Tag", 8, [(0, 8)]), ("Particle", 32, [(0, 12), (16, 28)])])
def test_structs_aligned_by_typedef_moved_by_a_template_named_for_them(name, size, data):
    n = 1000
    src = rng(17).integers(0, 256, n * size).astype(numpy.uint8)
    out = xp.zeros(n * size, dtype=numpy.uint8)
    load(ALIGNED).get(f"reversed_elements<{name}>")(-(-n // 128), 128, (out, dev(src), n))
    got, want = host(out).reshape(n, size), src.reshape(n, size)[::-1]
    for lo, hi in data:                                  # the bytes that hold data (padding may or may not move)
        assert (got[:, lo:hi] == want[:, lo:hi]).all()


# --- asynchronous copies: a ring of pipeline stages, group copies, and a pipeline split into roles -----------

ASYNC = r'''
#include <cuda/pipeline>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
#define TS 16
#define STAGES 4

// C = A B (n x n, n a multiple of TS): the tiles of A and B copied asynchronously, 16 bytes at a time, into a ring
// of STAGES buffers, a pipeline of thread scope running up to STAGES tiles ahead of the product. PRIOR waits with
// the free function (every stage in flight) instead of the pipeline's consumer_wait (the oldest)
template <bool PRIOR>
__global__ void matmul_ring(const float* A, const float* B, float* C, int n)
{
    __shared__ alignas(alignof(float4)) float As[STAGES][TS][TS];
    __shared__ alignas(alignof(float4)) float Bs[STAGES][TS][TS];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    const int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    const int tiles = n / TS;
    float acc = 0.0f;
    int fetched = 0;
    for (int t = 0; t < tiles; ++t) {
        for (; fetched < tiles && fetched < t + STAGES; ++fetched) {
            pipe.producer_acquire();
            const int s = fetched % STAGES, k0 = fetched * TS;
            if (tx < TS / 4) {                         // a quarter of the threads copy a row's 16 floats, 4 each
                cuda::memcpy_async(&As[s][ty][4 * tx], &A[row * n + k0 + 4 * tx],
                                   cuda::aligned_size_t<alignof(float4)>(sizeof(float4)), pipe);
                cuda::memcpy_async(&Bs[s][ty][4 * tx], &B[(k0 + ty) * n + blockIdx.x * TS + 4 * tx],
                                   cuda::aligned_size_t<alignof(float4)>(sizeof(float4)), pipe);
            }
            pipe.producer_commit();
        }
        if (PRIOR) cuda::pipeline_consumer_wait_prior<0>(pipe);
        else pipe.consumer_wait();
        __syncthreads();                               // every thread's copies of the stage have landed
        const int s = t % STAGES;
        for (int k = 0; k < TS; ++k) acc += As[s][ty][k] * Bs[s][k][tx];
        __syncthreads();                               // all are done with the stage before it is refilled
        pipe.consumer_release();
    }
    C[row * n + col] = acc;
}

// each warp of the block copies its 128 ints as one group copy, the block waits for all of them
__global__ void tile_copies(const int* x, int* out)       // blocks of 128 threads, 512 ints each
{
    __shared__ alignas(16) int staged[512];
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cta);
    const int base = warp.meta_group_rank() * 128;
    cg::memcpy_async(warp, staged + base, x + blockIdx.x * 512 + base,
                     cuda::aligned_size_t<16>(warp.size() * sizeof(int4)));
    cg::wait(cta);
    const int t = threadIdx.x;                          // thread t sums the 4 ints of another warp's quarter
    const int from = (t + 128 / 4) % 128 * 4;
    out[blockIdx.x * 128 + t] = staged[from] + staged[from + 1] + staged[from + 2] + staged[from + 3];
}

// a pipeline split into roles: the first warp copies chunks of 32 floats, the second doubles them, two stages
__global__ void produce_consume(const float* x, float* y, int n)   // one block of 64 threads; n a multiple of 32
{
    constexpr int stages = 2;
    __shared__ float buf[stages][32];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
    cg::thread_block cta = cg::this_thread_block();
    const bool producer = threadIdx.x < 32;
    cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(
        cta, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    const int lane = threadIdx.x % 32;
    for (int c = 0; c < n / 32; ++c) {
        if (producer) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[c % stages][lane], &x[c * 32 + lane], sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            y[c * 32 + lane] = 2.0f * buf[c % stages][lane];
            pipe.consumer_release();
        }
    }
}
'''


@pytest.mark.parametrize("prior", ["false", "true"])
def test_a_ring_of_pipeline_stages_of_sixteen_byte_copies(prior):
    n = 64
    r = rng(18)
    A, B = r.standard_normal((n, n)).astype(f32), r.standard_normal((n, n)).astype(f32)
    C = xp.zeros((n, n), dtype=f32)
    load(ASYNC).get(f"matmul_ring<{prior}>")((4, 4), (16, 16), (dev(A), dev(B), C, n))
    assert numpy.allclose(host(C), A.astype(f64) @ B, rtol=1e-4, atol=1e-4)


def test_group_copies_by_each_warp_and_one_wait_for_the_block():
    x = rng(19).integers(-1000, 1000, 3 * 512).astype(i32)
    out = xp.zeros(3 * 128, dtype=i32)
    load(ASYNC).get("tile_copies")(3, 128, (dev(x), out))
    quads = x.reshape(3, 128, 4).sum(2)
    assert (host(out).reshape(3, 128) == numpy.roll(quads, -32, axis=1)).all()


def test_a_pipeline_split_into_producer_and_consumer_roles():
    n = 32 * 9
    x = rng(20).standard_normal(n).astype(f32)
    y = xp.zeros(n, dtype=f32)
    k = load(ASYNC).get("produce_consume")
    if gl.backend == "emulator":                        # not run by the emulator: refused by name
        with pytest.raises(gl.EmulatorError, match=r"partitioned cuda::pipeline \(producer and consumer roles\)"):
            k(1, 64, (dev(x), y, n))
        return
    k(1, 64, (dev(x), y, n))
    assert (host(y) == 2 * x).all()


# --- WMMA as the samples write it: a col-major B in BF16, FP64 with C loaded and scaled, fragment arrays ------

WMMA_FORMS = r'''
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// C (M x N, float) = A B, A row-major (M x K), B column-major (given as N x K rows): a warp per 16 x 16 tile
__global__ void bf16_col_major_b(const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C, int M, int N, int K)
{
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, tn = N / 16;
    if (warp >= (M / 16) * tn) return;
    const int tr = warp / tn, tc = warp % tn;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tr * 16 * K + k, K);
        wmma::load_matrix_sync(b, Bt + tc * 16 * K + k, K);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + tr * 16 * N + tc * 16, c, N, wmma::mem_row_major);
}

// D = alpha A B + beta C in double: 8 x 8 x 4 fragments, B column-major, C loaded into the accumulator. A block of
// 32 x 16 threads: 16 warps over a 32 x 32 tile of D; M and N multiples of 8 (tiles past the edge do nothing)
__global__ void fp64_scaled(const double* A, const double* Bt, const double* C, double* D, int M, int N, int K,
                            double alpha, double beta)
{
    const int warp = threadIdx.y;
    const int r = blockIdx.y * 32 + warp / 4 * 8, c = blockIdx.x * 32 + warp % 4 * 8;
    if (r >= M || c >= N) return;
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc, cin;
    wmma::fill_fragment(acc, 0.0);
    for (int k = 0; k < K; k += 4) {
        wmma::load_matrix_sync(a, A + r * K + k, K);
        wmma::load_matrix_sync(b, Bt + c * K + k, K);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::load_matrix_sync(cin, C + r * N + c, N, wmma::mem_row_major);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i] + beta * cin.x[i];
    wmma::store_matrix_sync(D + r * N + c, acc, N, wmma::mem_row_major);
}

// one warp per 32 x 32 tile of C with arrays of fragments (2 of A, 2 of B, 2 x 2 accumulators), the operands
// staged each step through a two-dimensional extern __shared__ array of halves whose rows are padded by 8
#define SKEW 8
__global__ void fragment_arrays(const half* A, const half* Bt, float* C, int M, int N, int K)   // 32 threads
{
    // rows 0..31: A's 32 x 16 slice; 32..63: 32 rows of Bt. 32-byte aligned, as load_matrix_sync needs
    extern __shared__ __align__(32) half staged[][16 + SKEW];
    const int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32, lane = threadIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b[2];
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k = 0; k < K; k += 16) {
        for (int e = 0; e < 16; ++e) {                   // lane copies row `lane` of each 32-row slice
            staged[lane][e] = A[(r0 + lane) * K + k + e];
            staged[32 + lane][e] = Bt[(c0 + lane) * K + k + e];
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            wmma::load_matrix_sync(a[i], &staged[16 * i][0], 16 + SKEW);
            wmma::load_matrix_sync(b[i], &staged[32 + 16 * i][0], 16 + SKEW);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        __syncwarp();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(C + (r0 + 16 * i) * N + c0 + 16 * j, acc[i][j], N, wmma::mem_row_major);
}
'''


def _fp32_bound(a64, b64, k):
    """What FP32 accumulation of exact products may be off by: a few units of FP32 on each sum of magnitudes."""
    return k * 2.0 ** -23 * (numpy.abs(a64) @ numpy.abs(b64)) + 1e-6


def test_wmma_bf16_with_a_column_major_b():
    M, N, K = 48, 80, 32                                 # whole 16 x 16 tiles, none of them square in number
    r = rng(21)
    a, bt = gl.ops.to_bf16_bits(r.standard_normal((M, K)).astype(f32)), \
        gl.ops.to_bf16_bits(r.standard_normal((N, K)).astype(f32))
    C = xp.zeros((M, N), dtype=f32)
    warps = (M // 16) * (N // 16)
    load(WMMA_FORMS).get("bf16_col_major_b")(-(-warps // 4), 128, (dev(a), dev(bt), C, M, N, K))
    A64, B64 = gl.ops.from_bf16_bits(a).astype(f64), gl.ops.from_bf16_bits(bt).astype(f64).T
    assert (numpy.abs(host(C) - A64 @ B64) <= _fp32_bound(A64, B64, K)).all()


def test_wmma_fp64_with_c_loaded_and_scaled():
    M, N, K = 40, 72, 20                                 # multiples of 8 (and K of 4), not of the block's 32
    r = rng(22)
    A, Bt, C = r.standard_normal((M, K)), r.standard_normal((N, K)), r.standard_normal((M, N))
    D = xp.zeros((M, N), dtype=f64)
    load(WMMA_FORMS).get("fp64_scaled")((-(-N // 32), -(-M // 32)), (32, 16),
                                        (dev(A), dev(Bt), dev(C), D, M, N, K, 1.5, -0.5))
    want = 1.5 * (A @ Bt.T) - 0.5 * C
    bound = 4 * K * 2.0 ** -52 * (1.5 * numpy.abs(A) @ numpy.abs(Bt.T) + 0.5 * numpy.abs(C))   # FP64 roundings
    assert (numpy.abs(host(D) - want) <= bound + 1e-300).all()


def test_wmma_fragment_arrays_through_a_two_dimensional_extern_shared_array():
    M, N, K = 64, 96, 48
    r = rng(23)
    A, Bt = r.standard_normal((M, K)).astype(numpy.float16), r.standard_normal((N, K)).astype(numpy.float16)
    C = xp.zeros((M, N), dtype=f32)
    load(WMMA_FORMS).get("fragment_arrays")((N // 32, M // 32), 32, (dev(A), dev(Bt), C, M, N, K),
                                            shared_mem=64 * (16 + 8) * 2)
    A64, B64 = A.astype(f64), Bt.astype(f64).T
    assert (numpy.abs(host(C) - A64 @ B64) <= _fp32_bound(A64, B64, K)).all()


# --- odds and ends of the samples: launch bounds before __global__, __restrict, float2 arrays and results
# --- through references; every *_system atomic; macros that shadow min and max -----------------------------

ODDS = r'''
#include <cuda_runtime.h>
#include <type_traits>
#define min(a, b) ((a) < (b) ? (a) : (b))            // as host code of its day defined them, after the headers
#define max(a, b) ((a) > (b) ? (a) : (b))
#if defined(ONLY_ON_OLD_TOOLKITS) && (__CUDACC_VER_MAJOR__ < 12)
#error "not taken"
#endif
#if __CUDACC_VER_MAJOR__ >= 11
#define CLAMP_BIAS 0
#endif

// the two tails of a normal distribution at x, through erfcf, into references; its log density through __logf
__device__ inline void normal_tails(float& below, float& above, float x, float mean, float spread)
{
    const float z = (x - mean) * __fdividef(0.70710678118f, spread);
    below = 0.5f * erfcf(-z);
    above = 0.5f * erfcf(z);
}
__device__ inline float log_density(float x, float mean, float spread)
{
    const float z = __fdividef(x - mean, spread);
    return -0.5f * z * z - __logf(spread) - 0.918938533f;          // log of 1 / sqrt(2 pi)
}

// two points per thread, as float2 pairs, each against its own distribution
__launch_bounds__(128) __global__ void tails_of_pairs(float2* __restrict lower, float2* __restrict upper,
                                                      float2* __restrict logpdf, const float2* __restrict x,
                                                      const float2* __restrict mean, const float2* __restrict spread,
                                                      int pairs)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += blockDim.x * gridDim.x) {
        float lo1, hi1, lo2, hi2;
        normal_tails(lo1, hi1, x[i].x, mean[i].x, spread[i].x);
        normal_tails(lo2, hi2, x[i].y, mean[i].y, spread[i].y);
        lower[i] = make_float2(lo1, lo2);
        upper[i] = make_float2(hi1, hi2);
        logpdf[i] = make_float2(log_density(x[i].x, mean[i].x, spread[i].x),
                                log_density(x[i].y, mean[i].y, spread[i].y));
    }
}

__global__ void clamp(const int* x, int* y, int n, int lo, int hi)
{
#pragma diag_suppress static_var_with_dynamic_init
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = max(lo, min(hi, x[i])) + CLAMP_BIAS;
}

// every thread makes each system-scope atomic `rounds` times
__global__ void system_atomics(int* a, int rounds)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < rounds; ++k) {
        atomicAdd_system(&a[0], 3);
        atomicExch_system(&a[1], t);
        atomicMax_system(&a[2], t);
        atomicMin_system(&a[3], -t);
        atomicInc_system(reinterpret_cast<unsigned*>(&a[4]), 24u);
        atomicDec_system(reinterpret_cast<unsigned*>(&a[5]), 200u);
        atomicCAS_system(&a[6], 0, t + 1);
        atomicAnd_system(&a[7], ~(1 << (t % 31)));
        atomicOr_system(&a[8], 1 << (t % 31));
        atomicXor_system(&a[9], t);
    }
}

// a column sum chosen at compile time by a tag parameter, unnamed: an empty struct of one byte by value
template <bool Atomic>
__global__ void column_sums(const float* x, float* out, int rows, int cols, std::bool_constant<Atomic>)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x, half = (rows + 1) / 2;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = blockIdx.y * half; r < min(rows, (int)(blockIdx.y + 1) * half); ++r) s += x[r * cols + c];
    if constexpr (Atomic) atomicAdd(&out[c], s);       // two blocks down each column: one atomic each
    else out[blockIdx.y * cols + c] = s;               // or each half's sum in its own row
}

// fma(), the double-named overload, on floats: one rounding
__global__ void fused(const float* a, const float* b, const float* c, float* out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fma(a[i], b[i], c[i]);
}
'''


def test_launch_bounds_before_global_restrict_float2_pairs_and_results_through_references():
    import math
    m = load(ODDS)
    pairs = 1000
    r = rng(24)
    x, mean = r.uniform(-3, 3, (pairs, 2)).astype(f32), r.uniform(-1, 1, (pairs, 2)).astype(f32)
    spread = r.uniform(0.5, 2, (pairs, 2)).astype(f32)
    lower, upper, logpdf = (xp.zeros((pairs, 2), dtype=f32) for _ in range(3))
    k = m.get("tails_of_pairs")
    k(8, 128, (lower, upper, logpdf, dev(x), dev(mean), dev(spread), pairs))
    z = (x.astype(f64) - mean) / spread
    erfc = numpy.vectorize(math.erfc)
    # erfcf within a few ulps, __fdividef and __logf within a few units of 2^-22 of their inputs' scale
    assert numpy.allclose(host(lower), 0.5 * erfc(-z / math.sqrt(2)), rtol=2e-5, atol=1e-6)
    assert numpy.allclose(host(upper), 0.5 * erfc(z / math.sqrt(2)), rtol=2e-5, atol=1e-6)
    assert numpy.allclose(host(logpdf), -0.5 * z * z - numpy.log(spread.astype(f64)) - 0.5 * math.log(2 * math.pi),
                          rtol=1e-5, atol=2e-5)
    with pytest.raises(ValueError, match="129"):                 # more threads than its launch bounds allow
        k(8, 129, (lower, upper, logpdf, dev(x), dev(mean), dev(spread), pairs))


def test_a_file_that_defines_min_and_max_as_macros_and_asks_the_toolkits_version():
    x = rng(25).integers(-50, 50, 300).astype(i32)
    y = xp.zeros(300, dtype=i32)
    load(ODDS).get("clamp")(2, 256, (dev(x), y, 300, -20, 30))
    assert (host(y) == numpy.clip(x, -20, 30)).all()


def test_every_system_scope_atomic():
    blocks, threads, rounds = 64, 256, 3
    n = blocks * threads
    a0 = numpy.zeros(10, dtype=i32)
    a0[5], a0[7] = 150, -1
    a = dev(a0)
    load(ODDS).get("system_atomics")(blocks, threads, (a, rounds))
    got = host(a)
    dec = 150
    for _ in range(rounds * n):                         # atomicDec: back to 200 after 0
        dec = 200 if dec == 0 or dec > 200 else dec - 1
    xor = 0
    for t in range(n):
        xor ^= t                                         # each thread xor-ed an odd number of times
    assert got[0] == 3 * rounds * n and 0 <= got[1] < n and got[2] == n - 1 and got[3] == -(n - 1)
    assert got[4] == rounds * n % 25 and got[5] == dec and 1 <= got[6] <= n
    assert got[7] == numpy.int32(-2**31) and got[8] == 2**31 - 1 and got[9] == xor


def test_fma_on_floats_rounds_once():
    n = 500
    r = rng(26)
    # 13-bit factors (a 26-bit product: not a float32) and a 24-bit addend: a b + c is exact in float64, so one
    # rounding to float32 is fma's
    a, b = ((r.integers(2**12, 2**13, n) * 2.0 ** -12) * r.choice([-1, 1], n) for _ in range(2))
    c = r.integers(2**23, 2**24, n) * 2.0 ** -30
    want = (a * b + c).astype(f32)
    out = xp.zeros(n, dtype=f32)
    load(ODDS).get("fused")(2, 256, (dev(a.astype(f32)), dev(b.astype(f32)), dev(c.astype(f32)), out, n))
    assert (host(out) == want).all()
    assert (want != (a * b).astype(f32) + c.astype(f32)).any()      # rounding twice would differ somewhere


@pytest.mark.parametrize("atomic", ["true", "false"])
def test_a_tag_type_by_value_chooses_the_code_at_compile_time(atomic):
    rows, cols = 37, 45
    x = rng(27).standard_normal((rows, cols)).astype(f32)
    out = xp.zeros((2, cols), dtype=f32)
    tag = numpy.zeros(1, dtype=[("value", numpy.uint8)])    # std::bool_constant: one byte, never read
    load(ODDS).get(f"column_sums<{atomic}>")((1, 2), 64, (dev(x), out, rows, cols, tag))
    got = host(out)
    total = got[0] if atomic == "true" else got.sum(0)
    assert numpy.allclose(total, x.astype(f64).sum(0), rtol=1e-5, atol=1e-5)
    assert atomic == "false" or (got[1] == 0).all()
