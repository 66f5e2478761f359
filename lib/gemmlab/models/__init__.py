"""Models the chapters reason with, measured against the GPU elsewhere: the device's ceilings and presets
(``device``), the roofline (``roofline``), and global-memory sectors and shared-memory banks (``coalescing``)."""
