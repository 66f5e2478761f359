// Emulator stand-in for <cuda_profiler_api.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
