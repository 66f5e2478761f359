// common/hopper.cuh — Hopper's asynchronous copies and the barriers that track them (sm_90a, inline PTX;
// GPU only), shared by tc/06 and tc/07. An mbarrier in shared memory counts arrivals and, with expect_tx,
// bytes still to land; a TMA copy (cp.async.bulk.tensor) counts its bytes off the barrier it names; a
// waiter spins on try_wait.parity until the barrier's current phase has completed.
#pragma once

namespace gl_hopper {
__device__ __forceinline__ unsigned smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect_bytes(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity)     // until that phase completed
{
    unsigned done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// thread 0 initialises each stage's two barriers, then the block waits for it: "full" completes when the
// producer has arrived and the stage's bytes have landed, "empty" when each of the consumers has arrived
template <int STAGES>
__device__ __forceinline__ void bar_init_stages(unsigned long long (&full)[STAGES], unsigned long long (&empty)[STAGES],
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
// a TMA copy of the box at (c0, c1) (c0 along the contiguous dimension) into shared memory at dst
__device__ __forceinline__ void tma_load(unsigned dst, const void* map, int c0, int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
}  // namespace gl_hopper
