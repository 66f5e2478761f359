// <assert.h> for NVRTC: see gemmlab_nvrtc_std.h
#pragma once
#include "gemmlab_nvrtc_std.h"
