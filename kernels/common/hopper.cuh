// common/hopper.cuh — Hopper's asynchronous copies and the barriers that track them
// (sm_90a, inline PTX, which the CPU emulator runs as written), shared by
// tc/06-tc/13. An mbarrier in shared memory counts arrivals and, with expect_tx,
// bytes still to land; a TMA copy (cp.async.bulk.tensor) counts its bytes off the
// barrier it names; a waiter spins on try_wait.parity until the barrier's current
// phase has completed.
#pragma once

namespace gl_hopper {
// a TMA tensor map (CUDA's CUtensorMap: 128 opaque bytes, 64-byte aligned), encoded
// on the host by the driver. Kernels take it as a `const __grid_constant__`
// parameter, the form the CUDA Programming Guide documents: a map in
// kernel-parameter space needs no fence, where one read from global memory needs a
// fence.proxy.tensormap acquire before the copy engine may use it (the copy engine
// reads maps through the tensormap proxy, not through the ordinary memory the host
// or another kernel wrote it with).
struct alignas(64) TensorMap { unsigned long long opaque[16]; };

// an empty instruction that "reads and writes" each register of r. wgmma writes its
// accumulators behind the compiler's back (the registers belong to the tensor cores
// until wgmma.wait_group says they are done): put around the asynchronous section,
// it keeps the compiler from moving any use of r across the wgmma fence or the wait
// before it, which CUDA requires of code that touches accumulators of a pending
// wgmma
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N])
{
    #pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

__device__ __forceinline__ unsigned smem(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n"
                 ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect_bytes(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n"
                 ::"r"(bar) : "memory");
}
// until that phase completed
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0;
    do {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// thread 0 initialises each stage's two barriers, then the block waits for it:
// "full" completes when the producer has arrived and the stage's bytes have landed,
// "empty" when each of the consumers has arrived
template <int STAGES>
__device__ __forceinline__ void bar_init_stages(unsigned long long (&full)[STAGES],
                                                unsigned long long (&empty)[STAGES],
                                                unsigned consumers)
{
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(smem(&full[s]), 1);
            bar_init(smem(&empty[s]), consumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
}
// a TMA copy of the box at (c0, c1) (c0 along the contiguous dimension) into shared
// memory at dst; map is the generic address of a __grid_constant__ TensorMap
// parameter
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, int c0,
                                         int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier"
                 "::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
// the same copy into the shared memory of every block of the cluster in mask (bit
// i: the block of rank i), at the same offset dst in each, each counting its bytes
// off its own barrier at offset bar (chapter 16)
__device__ __forceinline__ void tma_load_multicast(unsigned dst,
                                                   const TensorMap* map, int c0,
                                                   int c1, unsigned bar,
                                                   unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier"
                 "::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}

// TMA stores (chapter 16). Shared memory that ordinary stores wrote is read by the
// copy engine through the async proxy: each writing thread fences before the
// barrier after which one thread issues the copy. A store writes only the part of
// its box that lies inside the matrix. Stores issued by a thread form bulk groups;
// wait_group.read N returns when at most N of its groups still read shared memory
// (their sources may be overwritten), wait_group N when at most N are still writing
// global memory.
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store(const TensorMap* map, int c0, int c1,
                                          unsigned src)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
                 " [%0, {%1, %2}], [%3];\n"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// a barrier for `threads` threads of the block (a multiple of 32) under hardware
// barrier `id` (1-15: 0 is __syncthreads's)
__device__ __forceinline__ void named_sync(unsigned id, unsigned threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// arrive on hardware barrier `id` without waiting: with a named_sync of the other
// threads, one group of threads tells another it may go on (tc/12's consumers take
// turns this way)
__device__ __forceinline__ void named_arrive(unsigned id, unsigned threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// clusters (chapter 16): the blocks of a cluster run at once on neighbouring SMs
// and may arrive on each other's mbarriers and receive each other's multicast
// copies
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// every thread of every block of the cluster
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// arrive on the barrier at offset bar in the shared memory of the cluster's block
// of rank cta (this one too). The release has the default scope, the block's, as
// CUTLASS's and Triton's cluster barriers have: the arrival tells the other block's
// producer only that this consumer's wgmma reads of a stage are over (wait_group
// said so), and publishes no store of this thread. Written .release.cluster, it
// compiles to a GPU-wide memory barrier (MEMBAR.ALL.GPU) before every arrival, in
// the consumers' path at every step of K.
__device__ __forceinline__ void bar_arrive_cluster(unsigned bar, unsigned cta)
{
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
                 ::"r"(bar), "r"(cta) : "memory");
}
}  // namespace gl_hopper
