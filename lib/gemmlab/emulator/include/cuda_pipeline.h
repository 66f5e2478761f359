// Emulator stand-in for <cuda_pipeline.h>: including it is fine; what it declares, asynchronous copies (__pipeline_memcpy_async), the CPU
// emulator does not run yet, and a kernel that uses it is refused by name when it is compiled.
#pragma once
