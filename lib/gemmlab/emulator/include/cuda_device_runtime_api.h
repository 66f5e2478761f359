// Emulator stand-in for <cuda_device_runtime_api.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
