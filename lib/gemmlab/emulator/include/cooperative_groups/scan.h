// Emulator version of <cooperative_groups/scan.h>: cg::inclusive_scan and exclusive_scan live with the rest.
#pragma once
#include "../cooperative_groups.h"
