// Emulator stand-in for <sm_32_atomic_functions.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
