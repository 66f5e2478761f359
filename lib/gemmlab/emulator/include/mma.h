// Emulator stand-in for <mma.h>.
#error "the gemmlab CPU emulator does not support <mma.h>: tensor-core matrix operations (nvcuda::wmma). Run this kernel on a GPU."
