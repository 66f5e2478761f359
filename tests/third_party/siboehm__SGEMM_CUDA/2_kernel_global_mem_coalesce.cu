// SPDX-License-Identifier: MIT
// Copyright (c) 2023 Simon Boehm
// (full text: LICENSE in this folder)
// Vendored from https://github.com/siboehm/SGEMM_CUDA at 60cba6f9b20a198116c76f18de8047f44df8c8b8, src/kernels/2_kernel_global_mem_coalesce.cuh:
// device code verbatim; host code (main, allocation, launches, CPU references) removed.

#pragma once

#include <cassert>
#include <cstdio>
#include <cstdlib>
// [vendored: host-only include removed] #include <cublas_v2.h>
#include <cuda_runtime.h>

template <const uint BLOCKSIZE>
__global__ void sgemm_global_mem_coalesce(int M, int N, int K, float alpha,
                                          const float *A, const float *B,
                                          float beta, float *C) {
  const int cRow = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
  const int cCol = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);

  // if statement is necessary to make things work under tile quantization
  if (cRow < M && cCol < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[cRow * K + i] * B[i * N + cCol];
    }
    C[cRow * N + cCol] = alpha * tmp + beta * C[cRow * N + cCol];
  }
}
