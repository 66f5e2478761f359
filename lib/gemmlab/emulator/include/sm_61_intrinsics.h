// Emulator stand-in for <sm_61_intrinsics.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
