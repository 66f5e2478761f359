"""The machine: which backend runs the kernels (a GPU through CuPy, or the CPU emulator), what the GPU in use
can do (its limits, its profile), and how a kernel source becomes a launch (the parser, the loader, the CUDA
and emulator backends, racecheck, Hopper's tensor maps, the workspaces kernels keep on the device).

Nothing here knows of the book's kernels, studies or chapters: modules here import only each other and
``gemmlab.paths`` / ``gemmlab.processes`` (tests/test_layers.py). (``gl.backend`` is the backend's *name*, a
string; the module is ``gemmlab.runtime.backend``.)
"""
