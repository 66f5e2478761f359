// Emulator stand-in for <host_defines.h>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
