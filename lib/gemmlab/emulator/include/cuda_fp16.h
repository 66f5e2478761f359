// Emulator stand-in for <cuda_fp16.h>: including it is fine; what it declares, half-precision types (__half), the CPU
// emulator does not run yet, and a kernel that uses it is refused by name when it is compiled.
#pragma once
