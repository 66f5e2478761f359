// Emulator version of <cuda_bf16.h>: __nv_bfloat16 and __nv_bfloat162 (see gl_emu_half.h).
#pragma once
#include "gl_emu_half.h"
