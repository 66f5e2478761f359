// Emulator stand-in for <vector_types.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
