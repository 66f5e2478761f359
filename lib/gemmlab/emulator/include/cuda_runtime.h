// Emulator stand-in for <cuda_runtime.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
