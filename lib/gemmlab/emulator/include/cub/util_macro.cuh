// Emulator stand-in for <cub/util_macro.cuh>: the emulator's CUB is one header (cub.cuh says what it has).
#pragma once
#include <cub/cub.cuh>
