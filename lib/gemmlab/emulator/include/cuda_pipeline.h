// Emulator version of <cuda_pipeline.h>: a copy is made when its thread waits for its batch (or exits), as late
// as a GPU may make it (gemmlab_emu.h's asynchronous copies), so that a kernel that reads before it waits reads
// what was there before, as it may on a GPU.
#pragma once
#include "gemmlab_emu.h"

inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill = 0)
{
    // size bytes, of which the last zfill are zeros (cp.async's src-size form)
    ::gl_emu::async_copy(dst, src, size, size - zfill, __builtin_return_address(0));
}
inline void __pipeline_commit() { ::gl_emu::async_commit(); }
inline void __pipeline_wait_prior(size_t n) { ::gl_emu::async_wait(n); }
inline void __pipeline_arrive_on(void*) {}
