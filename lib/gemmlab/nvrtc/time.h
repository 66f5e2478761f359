// <time.h> for NVRTC: see gemmlab_nvrtc_std.h (device code has clock() and clock64(), which CUDA declares)
#pragma once
#include "gemmlab_nvrtc_std.h"
