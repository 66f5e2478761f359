// Emulator version of <cooperative_groups/memcpy_async.h>: cooperative_groups::memcpy_async copies at once
// (synchronously), made by the group's first thread, and wait / wait_prior are the group's barrier (after which
// every thread of the group sees the copies, as after the GPU's wait). The byte and element forms, and sizes
// given as cuda::aligned_size_t.
#pragma once
#include <cstring>
#include "../cooperative_groups.h"
#include "../cuda/barrier"

namespace cooperative_groups {
template <class Group>
inline void memcpy_async(const Group& group, void* dst, const void* src, std::size_t bytes)
{
    if (group.thread_rank() == 0) std::memcpy(dst, src, bytes);
}
template <class Group, std::size_t A>
inline void memcpy_async(const Group& group, void* dst, const void* src, cuda::aligned_size_t<A> bytes)
{
    if (group.thread_rank() == 0) std::memcpy(dst, src, bytes.value);
}
// elements: dst_count of dst, src_count of src; what src does not fill of dst is left as it is
template <class Group, class T>
inline void memcpy_async(const Group& group, T* dst, std::size_t dst_count, const T* src, std::size_t src_count)
{
    if (group.thread_rank() == 0) std::memcpy(dst, src, sizeof(T) * (src_count < dst_count ? src_count : dst_count));
}
template <class Group>
inline void wait(const Group& group) { group.sync(); }
template <unsigned N, class Group>
inline void wait_prior(const Group& group) { group.sync(); }
}  // namespace cooperative_groups
