// Emulator stand-in for <cuda_fp16.h>.
#error "the gemmlab CPU emulator does not support <cuda_fp16.h>: half-precision types (__half). Run this kernel on a GPU."
