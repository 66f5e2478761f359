// gemmlab's stand-in for <nvtx3/nvToolsExtCuda.h>, a host library's API. A kernel's file may include it for its host code, which
// gemmlab does not build: it compiles the file's device code and launches the kernels from Python. Nothing is
// declared here, so a use of the library in the file is a compile error that names what it used.
#pragma once
