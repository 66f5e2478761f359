// exercises/tma_pipeline.cu — a two-stage TMA pipeline with full and empty
// mbarriers (chapter 16).
//
// C (M x N, FP32) = A (M x K) B (K x N), row-major, A and B in FP16; K and N
// multiples of 8 (the copy engine reads rows of 16-byte multiples). A block of 128
// threads computes a 64 x 64 tile of C, slice by 64-wide slice of K. Thread 0 is
// also the producer: it copies each slice's tiles of A and B into one of two stages
// with TMA (the tensor maps are the kernel's parameters), and the stage's "full"
// barrier completes when they have landed; every thread arrives on the stage's
// "empty" barrier when it has read it, and only then may thread 0 refill it with
// the slice two ahead. A barrier's phases alternate: a wait names the parity of the
// phase it waits for. Complete the two TODOs: the parity the consumers wait for at
// slice i, and the producer's wait before it refills a stage.
// gl.exercises.check("tma_pipeline", code) runs it on a Hopper GPU or on the CPU
// emulator, which names a wait that can never end (the barrier, its phase, who
// waits).
#include <cuda_fp16.h>
#include "common/hopper.cuh"
using namespace gl_hopper;

constexpr int T = 64, STAGES = 2, TILE_BYTES = T * T * 2;

// element (r, c) of a 64 x 64 FP16 tile as the copy engine's 128-byte swizzle
// placed it: the 16-byte piece c / 8 of row r at piece (c / 8) ^ (r % 8) of that
// row
__device__ __forceinline__ float at(const __half* tile, int r, int c)
{
    return __half2float(tile[r * T + ((c / 8) ^ (r % 8)) * 8 + c % 8]);
}

// slice i of K (A's 64 x 64 at (row0, 64 i), B's at (64 i, col0)) into stage i %
// STAGES, counted off its full barrier; one thread issues it
__device__ __forceinline__ void load_slice(__half (*stage)[T * T], unsigned full,
                                           const TensorMap* a, const TensorMap* b,
                                           int i, int row0, int col0)
{
    bar_expect_bytes(full, 2 * TILE_BYTES);
    tma_load(smem(stage[0]), a, i * T, row0, full);
    tma_load(smem(stage[1]), b, col0, i * T, full);
}

__global__ void tma_pipeline(const __grid_constant__ TensorMap mapA,
                             const __grid_constant__ TensorMap mapB, float* C,
                             int M, int N, int K)
{
    // a stage: A's tile, then B's
    __shared__ __align__(1024) __half tiles[STAGES][2][T * T];
    __shared__ unsigned long long full[STAGES], empty[STAGES];
    const int tid = threadIdx.x, row0 = blockIdx.y * T, col0 = blockIdx.x * T,
              slices = (K + T - 1) / T;
    bar_init_stages<STAGES>(full, empty, 128);
    if (tid == 0)
        for (int i = 0; i < STAGES && i < slices; ++i)
            load_slice(tiles[i], smem(&full[i]), &mapA, &mapB, i, row0, col0);
    // a thread: column c, rows r0 .. r0 + 31
    const int c = tid % T, r0 = (tid / T) * 32;
    float acc[32] = {};
    for (int i = 0; i < slices; ++i) {
        const int s = i % STAGES;
        // TODO: the parity of slice i's phase
        bar_wait(smem(&full[s]), 0);
        for (int k = 0; k < T; ++k) {
            const float b = at(tiles[s][1], k, c);
            for (int r = 0; r < 32; ++r) acc[r] += at(tiles[s][0], r0 + r, k) * b;
        }
        // this thread is done reading the stage
        bar_arrive(smem(&empty[s]));
        if (tid == 0 && i + STAGES < slices) {
            // TODO: wait until every thread has read the stage, then refill it
            load_slice(tiles[s], smem(&full[s]), &mapA, &mapB, i + STAGES, row0,
                       col0);
        }
    }
    for (int r = 0; r < 32; ++r)
        if (row0 + r0 + r < M && col0 + c < N)
            C[(size_t)(row0 + r0 + r) * N + col0 + c] = acc[r];
}
