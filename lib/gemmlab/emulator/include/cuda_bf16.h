// Emulator stand-in for <cuda_bf16.h>.
#error "the gemmlab CPU emulator does not support <cuda_bf16.h>: bfloat16 types (__nv_bfloat16). Run this kernel on a GPU."
