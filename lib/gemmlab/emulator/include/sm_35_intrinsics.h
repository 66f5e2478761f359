// Emulator stand-in for <sm_35_intrinsics.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
