// cuda::std for the CPU emulator (gemmlab): libcu++'s names are the C++ standard library's, which the emulator
// compiles with, so cuda::std::X is std::X (a user's specialisation of a cuda::std template is not supported).
#pragma once
namespace cuda {
namespace std {
using namespace ::std;
}  // namespace std
}  // namespace cuda
