"""The machine: which backend runs the kernels (a GPU through CuPy, or the CPU emulator), what the GPU in use
can do (its limits, its profile), and how a kernel source becomes a launch (the parser, the loader, the CUDA
and emulator backends, racecheck, Hopper's tensor maps, the workspaces kernels keep on the device).

Modules here import only each other and ``gemmlab.paths`` / ``gemmlab.processes``, nothing of the registry,
the studies or the book (tests/test_layers.py); the workspaces are the one place that knows particular
kernels, by the sizes of the device memory DOT 7, GEMV 4 and tc/07 keep. (``gl.backend`` is the backend's *name*, a
string; the module is ``gemmlab.runtime.backend``.)
"""
