// Emulator version of <cooperative_groups/reduce.h>: cg::reduce lives with the rest.
#pragma once
#include "../cooperative_groups.h"
