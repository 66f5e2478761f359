// Emulator stand-in for <cuda_bf16.h>: including it is fine; what it declares, bfloat16 types (__nv_bfloat16), the CPU
// emulator does not run yet, and a kernel that uses it is refused by name when it is compiled.
#pragma once
