// Emulator stand-in for <cooperative_groups.h>.
#error "the gemmlab CPU emulator does not support <cooperative_groups.h>: cooperative groups. Run this kernel on a GPU."
