// Emulator version of <cuda_pipeline.h>: the primitives copy at once (synchronously), so that commits
// and waits have nothing left to do; the results are the GPU's, and so is every ordering a correct
// kernel relies on (it must wait before it reads, and the data is there by then).
#pragma once
#include "gemmlab_emu.h"

inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill = 0)
{
    // size bytes copied, then zfill more bytes set to zero (cp.async's src-size form)
    std::memcpy(dst, src, size - zfill);
    if (zfill) std::memset(static_cast<char*>(dst) + (size - zfill), 0, zfill);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(size_t) {}
inline void __pipeline_arrive_on(void*) {}
