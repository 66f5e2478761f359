// Emulator stand-in for <cuda_pipeline.h>.
#error "the gemmlab CPU emulator does not support <cuda_pipeline.h>: asynchronous copies (cuda::pipeline). Run this kernel on a GPU."
