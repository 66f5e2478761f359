// SPDX-License-Identifier: MIT
// Copyright (c) 2023 Simon Boehm
// (full text: LICENSE in this folder)
// Vendored from https://github.com/siboehm/SGEMM_CUDA at 60cba6f9b20a198116c76f18de8047f44df8c8b8, src/kernels/1_naive.cuh:
// device code verbatim; host code (main, allocation, launches, CPU references) removed.

#pragma once

#include <cstdio>
#include <cstdlib>
// [vendored: host-only include removed] #include <cublas_v2.h>
#include <cuda_runtime.h>

/*

Matrix sizes:
MxK * KxN = MxN

*/

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A,
                            const float *B, float beta, float *C) {
  const uint x = blockIdx.x * blockDim.x + threadIdx.x;
  const uint y = blockIdx.y * blockDim.y + threadIdx.y;

  // if statement is necessary to make things work under tile quantization
  if (x < M && y < N) {
    float tmp = 0.0;
    for (int i = 0; i < K; ++i) {
      tmp += A[x * K + i] * B[i * N + y];
    }
    // C = α*(A@B)+β*C
    C[x * N + y] = alpha * tmp + beta * C[x * N + y];
  }
}
