"""The recorded sweeps the sweep explorer shows: each one's record, label, variant and sliders."""

# name -> (where it is recorded, the recorded timing's label, the variant, its sliders)
SWEEPS = {
    "tiling": ("ladder", "naive and tiled", "sgemm/02_shared_tiling", ["TILE"]),
    "cache blocking": ("ladder", "cache blocking: TM x TN", "sgemm/05_cache_blocking", ["TM", "TN"]),
    "register tiling": ("ladder", "register tiling: T, RM x RN, MINB", "sgemm/06_register_tiling",
                        ["MINB", "T", "RM", "RN"]),
    "gemv geometry": ("blas", "GEMV launch geometry", "blas/gemv/01_shared_x", ["BLOCK", "GRID"]),
}
