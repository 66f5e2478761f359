// Emulator stand-in for <cuda.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
