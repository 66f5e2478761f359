// Emulator stand-in for <vector_functions.hpp>: the CUDA device API lives in gemmlab_emu.h, included first.
#pragma once
