// Emulator version of <cuda_fp16.h>: __half and __half2 (see gl_emu_half.h).
#pragma once
#include "gl_emu_half.h"
