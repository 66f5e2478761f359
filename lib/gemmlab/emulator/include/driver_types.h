// Emulator stand-in for <driver_types.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
