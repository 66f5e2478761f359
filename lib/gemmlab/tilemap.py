"""The tile map of chapter 02 (the Russian lesson's "карта тайлов"): which tiles a block loads when.

For C = A B with N x N matrices and TILE x TILE blocks, block (bi, bj) computes the tile of C in tile
row bi and tile column bj. In phase p it loads tile (bi, p) of A and tile (p, bj) of B. These index
functions are the ones the tiled kernels implement (tests check them against what the kernel touches).
"""
from __future__ import annotations

from dataclasses import dataclass

from .runtime.limits import cdiv


@dataclass(frozen=True)
class TileMap:
    n: int
    tile: int

    def __post_init__(self):
        if self.n < 1 or self.tile < 1:
            raise ValueError(f"N and TILE must be positive, got N={self.n}, TILE={self.tile}")

    @property
    def tiles(self) -> int:
        """Tiles along one side (the last one partial when TILE does not divide N)."""
        return cdiv(self.n, self.tile)

    @property
    def phases(self) -> int:
        return self.tiles

    def _check(self, bi, bj, p=0):
        for name, v in (("bi", bi), ("bj", bj), ("p", p)):
            if not 0 <= v < self.tiles:
                raise ValueError(f"{name}={v} is outside 0..{self.tiles - 1} (N={self.n}, TILE={self.tile})")

    def a_tile(self, bi: int, bj: int, p: int) -> tuple:
        """(tile row, tile column) of A that block (bi, bj) loads in phase p."""
        self._check(bi, bj, p)
        return (bi, p)

    def b_tile(self, bi: int, bj: int, p: int) -> tuple:
        self._check(bi, bj, p)
        return (p, bj)

    def span(self, t: int) -> range:
        """Element indices covered by tile index t along one side."""
        return range(t * self.tile, min((t + 1) * self.tile, self.n))

    def a_elements(self, bi, bj, p) -> set:
        r, c = self.a_tile(bi, bj, p)
        return {(i, k) for i in self.span(r) for k in self.span(c)}

    def b_elements(self, bi, bj, p) -> set:
        r, c = self.b_tile(bi, bj, p)
        return {(k, j) for k in self.span(r) for j in self.span(c)}

    def global_loads(self) -> dict:
        """Global-memory loads of A and B elements in total: naive (2N per output) vs tiled (2N/TILE)."""
        naive = 2 * self.n ** 3
        tiled = 2 * self.tiles ** 3 * self.tile ** 2          # blocks x phases x 2 tiles of TILE^2
        return {"naive": naive, "tiled": tiled, "ratio": naive / tiled}


# Register tiling (sgemm/06_register_tiling.cu): a T x T block tile, RM x RN micro-tiles, thread (tx, ty)
# with tx < T/RN and ty < T/RM. The explorer draws these; tests check them against the kernel itself.

def thread_outputs(T: int, RM: int, RN: int, tx: int, ty: int) -> list:
    """(row, column) of the block's C tile that thread (tx, ty) computes and stores."""
    _check_thread(T, RM, RN, tx, ty)
    return [(ty * RM + i, tx * RN + j) for i in range(RM) for j in range(RN)]


def thread_as_rows(T: int, RM: int, RN: int, tx: int, ty: int) -> list:
    """Rows of the As tile the thread reads (all T columns of each, one per step k)."""
    _check_thread(T, RM, RN, tx, ty)
    return [ty * RM + i for i in range(RM)]


def thread_bs_cols(T: int, RM: int, RN: int, tx: int, ty: int) -> list:
    """Columns of the Bs tile the thread reads."""
    _check_thread(T, RM, RN, tx, ty)
    return [tx * RN + j for j in range(RN)]


def _check_thread(T, RM, RN, tx, ty):
    if T % RM or T % RN:
        raise ValueError(f"the micro-tile {RM}x{RN} must divide the tile {T}")
    if not (0 <= tx < T // RN and 0 <= ty < T // RM):
        raise ValueError(f"thread ({tx}, {ty}) is outside the {T // RN} x {T // RM} block")


# Warp tiling (sgemm/09_warp_tiling.cu, 10, 11, 12; common/sgemm_tiles.cuh): a BM x BN block tile of WM x WN warp
# tiles, warp w at row (w / (BN/WN)) * WM, column (w % (BN/WN)) * WN; in a warp, lanes as LR = lane_rows rows by
# LC = 32 / LR columns (8 x 4 unless a kernel's LANES says otherwise), lane l at sub-tile corner ((l / LC) * 4,
# (l % LC) * 4), its 4 x 4 sub-tile repeated every 4 LR rows and 4 LC columns.

def _check_warp(BM, BN, WM, WN, warp, lane, lane_rows=8):
    if lane_rows not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"lane_rows must divide the warp's 32 lanes, got {lane_rows!r}")
    rows, cols = 4 * lane_rows, 4 * (32 // lane_rows)
    if BM % WM or BN % WN or WM % rows or WN % cols:
        raise ValueError(f"warp tiles {WM}x{WN} must fill the block tile {BM}x{BN} and be multiples of {rows}x{cols}")
    warps = (BM // WM) * (BN // WN)
    if not (0 <= warp < warps and 0 <= lane < 32):
        raise ValueError(f"warp {warp} lane {lane}: a {BM}x{BN} block has warps 0..{warps - 1}, lanes 0..31")


def warp_corner(BM, BN, WM, WN, warp, lane_rows=8) -> tuple:
    """(row, column) of warp `warp`'s WM x WN tile in the block tile."""
    _check_warp(BM, BN, WM, WN, warp, 0, lane_rows)
    return ((warp // (BN // WN)) * WM, (warp % (BN // WN)) * WN)


def lane_as_cols(BM, BN, WM, WN, warp, lane, lane_rows=8) -> list:
    """Columns m of the transposed A tile As[k][m] that the lane reads at every k (its rows of C)."""
    _check_warp(BM, BN, WM, WN, warp, lane, lane_rows)
    wm, _ = warp_corner(BM, BN, WM, WN, warp, lane_rows)
    lc = 32 // lane_rows
    return [wm + i * 4 * lane_rows + (lane // lc) * 4 + q for i in range(WM // (4 * lane_rows)) for q in range(4)]


def lane_bs_cols(BM, BN, WM, WN, warp, lane, lane_rows=8) -> list:
    """Columns n of Bs[k][n] that the lane reads at every k (its columns of C)."""
    _check_warp(BM, BN, WM, WN, warp, lane, lane_rows)
    _, wn = warp_corner(BM, BN, WM, WN, warp, lane_rows)
    lc = 32 // lane_rows
    return [wn + j * 4 * lc + (lane % lc) * 4 + q for j in range(WN // (4 * lc)) for q in range(4)]


def lane_outputs(BM, BN, WM, WN, warp, lane, lane_rows=8) -> list:
    """(row, column) of the block's C tile that the lane computes and stores (lanes as lane_rows x 32 / lane_rows)."""
    return [(r, c) for r in lane_as_cols(BM, BN, WM, WN, warp, lane, lane_rows)
            for c in lane_bs_cols(BM, BN, WM, WN, warp, lane, lane_rows)]


def figure(n: int = 8, tile: int = 2, bi: int = 1, bj: int = 2, p: int = 0, ax=None):
    """A, B and C side by side: the block's C tile, and the A and B tiles of phase p (done phases paler)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    m = TileMap(n, tile)
    m.a_tile(bi, bj, p)
    if ax is None:         # 7.6 in at 100 dpi: the book's column, so nothing is scaled down to fit it
        _, ax = plt.subplots(1, 3, figsize=(7.6, 3.6), layout="constrained")
    names = ("A", "B", "C")
    for a, name in zip(ax, names):
        a.set_xlim(0, n)
        a.set_ylim(n, 0)
        a.set_aspect("equal")
        a.set_xticks(range(0, n + 1, tile))
        a.set_yticks(range(0, n + 1, tile))
        a.grid(True, color="#bbb", lw=0.8)
        a.tick_params(labelsize=10)
        a.set_title(name)

    def box(a, r, c, color, alpha, label=None):
        a.add_patch(Rectangle((c * tile, r * tile), len(m.span(c)), len(m.span(r)), color=color, alpha=alpha,
                              label=label))

    for q in range(p):
        box(ax[0], *m.a_tile(bi, bj, q), "#3b7dd8", 0.2)
        box(ax[1], *m.b_tile(bi, bj, q), "#d8823b", 0.2)
    box(ax[0], *m.a_tile(bi, bj, p), "#3b7dd8", 0.8, f"A tile ({bi},{p})")
    box(ax[1], *m.b_tile(bi, bj, p), "#d8823b", 0.8, f"B tile ({p},{bj})")
    box(ax[2], bi, bj, "#4caf50", 0.8, f"C tile ({bi},{bj})")
    loads = m.global_loads()
    ax[0].figure.suptitle(f"N={n}, TILE={tile}: block ({bi},{bj}), phase {p} of {m.phases}\nglobal loads: "
                          f"naive {loads['naive']:,}, tiled {loads['tiled']:,} ({loads['ratio']:.1f}x fewer)",
                          fontsize=10)
    for a in ax:
        if a.patches:
            a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=10, frameon=False)
    return ax


# Tensor-core fragments (tc/05_mma_sync.cu): which elements of an mma.sync tile each lane of the warp holds,
# in register order, as the PTX ISA fixes them. Lane l is in group g = l / 4 (eight groups of four) and is
# t = l % 4 within it. A tests/test_fragments.py GPU test holds these to what the hardware's ldmatrix and
# mma.sync put where.

MMA_SHAPES = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8)}     # FP16/BF16, TF32


def mma_fragment(operand: str, lane: int, shape: str = "m16n8k16") -> list:
    """(row, column) of each element lane ``lane`` holds of ``operand`` ("a": M x K, "b": K x N, "c": the
    M x N accumulator), in register order: FP16/BF16 pack two 16-bit values per register (m16n8k16: A's 8
    values in 4 registers, B's 4 in 2), TF32 one (m16n8k8: A's 4, B's 2); C's 4 FP32 values in both."""
    if shape not in MMA_SHAPES:
        raise ValueError(f"shape is one of {sorted(MMA_SHAPES)}, got {shape!r}")
    if operand not in ("a", "b", "c"):
        raise ValueError(f"operand is 'a', 'b' or 'c', got {operand!r}")
    if not (isinstance(lane, int) and 0 <= lane < 32):
        raise ValueError(f"a warp's lanes are 0..31, got {lane!r}")
    g, t = lane // 4, lane % 4
    if operand == "c":
        return [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
    if shape == "m16n8k16":
        if operand == "a":
            return [(g + 8 * h, 2 * t + e + 8 * q) for q in (0, 1) for h in (0, 1) for e in (0, 1)]
        return [(2 * t + e + 8 * q, g) for q in (0, 1) for e in (0, 1)]
    if operand == "a":
        return [(g + 8 * h, t + 4 * q) for q in (0, 1) for h in (0, 1)]
    return [(t + 4 * q, g) for q in (0, 1)]


def ldmatrix_rows(lane: int) -> tuple:
    """ldmatrix .x4: the (tile, row) whose shared-memory address lane ``lane`` gives: lanes 0-7 the rows of
    tile 0, 8-15 of tile 1, and so on. Each lane then receives, in register i, two neighbouring 16-bit
    values of tile i: row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (with .trans: rows 2 (l % 4) and
    2 (l % 4) + 1 of column l / 4)."""
    if not (isinstance(lane, int) and 0 <= lane < 32):
        raise ValueError(f"a warp's lanes are 0..31, got {lane!r}")
    return lane // 8, lane % 8


def fragment_figure(shape: str = "m16n8k16", ax=None):
    """Draw A, B and C of one mma.sync tile, each element labelled with the lane that holds it (and coloured
    by the lane's group l / 4): what every lane of the warp brings to the instruction and gets back."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if shape not in MMA_SHAPES:
        raise ValueError(f"shape is one of {sorted(MMA_SHAPES)}, got {shape!r}")
    m, n, k = MMA_SHAPES[shape]
    dims = {"a": (m, k), "b": (k, n), "c": (m, n)}
    if ax is None:         # 7.6 in at 100 dpi: the book's column, so nothing is scaled down to fit it
        _, ax = plt.subplots(1, 3, figsize=(7.6, 4.3 if k == 16 else 4.4), layout="constrained",
                             gridspec_kw={"width_ratios": [k, n, n]})
    colours = plt.get_cmap("tab10").colors
    kind = {"m16n8k16": "FP16/BF16, 2 values per register", "m16n8k8": "TF32, 1 value per register"}[shape]
    for a, op in zip(ax, "abc"):
        rows, cols = dims[op]
        owner = {}
        for lane in range(32):
            for reg, rc in enumerate(mma_fragment(op, lane, shape)):
                owner[rc] = (lane, reg)
        for (r, c), (lane, reg) in owner.items():
            a.add_patch(Rectangle((c, r), 1, 1, facecolor=colours[lane // 4 % 10], alpha=0.35 + 0.15 * (lane % 4 % 2),
                                  edgecolor="white", lw=0.6))
            a.text(c + 0.5, r + 0.5, str(lane), ha="center", va="center", fontsize=9.5)
        a.set_xlim(0, cols)
        a.set_ylim(rows, 0)
        a.set_aspect("equal")
        a.set_xticks(range(0, cols + 1, 8 if cols > 8 else 4))
        a.set_yticks(range(0, rows + 1, 8 if rows > 8 else 4))
        a.tick_params(labelsize=10)
        step = 4 if op == "a" and shape == "m16n8k8" else 8       # 16 bytes of a row in A: one ldmatrix tile
        for x in range(0, cols + 1, step):
            a.axvline(x, color="black", lw=1.2)
        for y in range(0, rows + 1, 8):
            a.axhline(y, color="black", lw=1.2)
        a.set_title({"a": f"A ({rows} x {cols}, rows)", "b": f"B ({rows} x {cols}, k down)",
                     "c": f"C ({rows} x {cols}, FP32)"}[op], fontsize=10)
    ax[0].figure.suptitle(f"mma.sync {shape} ({kind}): the lane that holds each element\n"
                          "colour: the lane's group l / 4; black lines: 8 x 8 tiles"
                          + (" (TF32's A: 8 x 4, 16 bytes a row)" if shape == "m16n8k8" else ""), fontsize=10)
    return ax
