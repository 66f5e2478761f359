// Emulator stand-in for <surface_functions.h>: the CUDA device API lives in gemmlab_emu.h, included first (texture and
// surface fetches are refused by name).
#pragma once
