// Emulator version of <cooperative_groups/memcpy_async.h>: not modelled yet.
#pragma once
#include "../cooperative_groups.h"
