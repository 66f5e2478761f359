"""Models the chapters reason with, measured against the GPU elsewhere: the device's ceilings and presets
(``device``), the roofline (``roofline``), global-memory sectors and shared-memory banks (``coalescing``), and
what a sharded GEMM's collectives move between GPUs (``collectives``)."""
