// Emulator stand-in for <mma.h>: including it is fine; what it declares, tensor-core matrix operations (nvcuda::wmma), the CPU
// emulator does not run yet, and a kernel that uses it is refused by name when it is compiled.
#pragma once
