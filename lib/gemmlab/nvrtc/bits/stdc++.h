// <bits/stdc++.h> (GCC's every-header, which nvcc takes from its host compiler) for NVRTC: see gemmlab_nvrtc_std.h
#pragma once
#include "../gemmlab_nvrtc_std.h"
