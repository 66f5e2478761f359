// Emulator stand-in for <sm_32_intrinsics.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
