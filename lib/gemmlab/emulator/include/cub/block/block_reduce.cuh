// Emulator stand-in for <cub/block/block_reduce.cuh>: the emulator's CUB is one header (cub.cuh says what it has).
#pragma once
#include <cub/cub.cuh>
