// Emulator stand-in for <vector_functions.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
