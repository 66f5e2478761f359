// Emulator stand-in for <common_functions.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
