// Emulator stand-in for <cooperative_groups.h>: including it is fine; what it declares, cooperative groups (cooperative_groups::), the CPU
// emulator does not run yet, and a kernel that uses it is refused by name when it is compiled.
#pragma once
