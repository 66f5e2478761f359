// model.js — the arithmetic of the book's explorers, in the browser and in node (tests compare it
// with gemmlab.ops, gemmlab.roofline and gemmlab.tilemap). Pure functions only; no DOM.
(function (root) {
  "use strict";
  const M = {};

  // F (FLOP) and Q (bytes) of the three operations: gemmlab.ops.Dot / Gemv / Gemm.
  M.counts = function (op, size, itemsize, betaNonzero) {
    const s = itemsize;
    if (op === "DOT") return { F: 2 * size.n, Q: s * (2 * size.n + 1) };
    if (op === "GEMV") {
      const out = size.m;   // 'N': y has m elements
      return { F: 2 * size.m * size.n, Q: s * (size.m * size.n + size.n + size.m + (betaNonzero ? out : 0)) };
    }
    const mn = size.m * size.n;
    return { F: 2 * mn * size.k, Q: s * (size.m * size.k + size.k * size.n + mn + (betaNonzero ? mn : 0)) };
  };

  // The roofline: attainable FLOP/s at intensity I, the floor time, which ceiling binds.
  M.attainable = (I, peak, bw) => Math.min(peak, I * bw);
  M.floor = function (F, Q, peak, bw) {
    const compute = F / peak, memory = Q / bw;
    return { compute, memory, seconds: Math.max(compute, memory), bound: memory >= compute ? "memory" : "compute" };
  };

  // Tile map (gemmlab.tilemap.TileMap): tiles per side, the tiles block (bi, bj) loads in phase p,
  // and the global loads of the naive and the tiled kernel.
  M.tiles = (n, tile) => Math.ceil(n / tile);
  M.aTile = (bi, bj, p) => [bi, p];
  M.bTile = (bi, bj, p) => [p, bj];
  M.globalLoads = function (n, tile) {
    const t = M.tiles(n, tile);
    const naive = 2 * n * n * n, tiled = 2 * t * t * t * tile * tile;
    return { naive, tiled, ratio: naive / tiled };
  };

  // Register tiling (sgemm/06_register_tiling.cu, gemmlab.tilemap register functions): thread (tx, ty)
  // of a T x T tile with RM x RN micro-tiles owns C rows ty*RM.., columns tx*RN..; reads As rows
  // ty*RM.. and Bs columns tx*RN..; and loads the tile slots [ty*RM + i][tx*RN + j] of As and Bs.
  M.threadOutputs = function (T, RM, RN, tx, ty) {
    const out = [];
    for (let i = 0; i < RM; i++) for (let j = 0; j < RN; j++) out.push([ty * RM + i, tx * RN + j]);
    return out;
  };
  M.threadAsRows = (T, RM, RN, tx, ty) => Array.from({ length: RM }, (_, i) => ty * RM + i);
  M.threadBsCols = (T, RM, RN, tx, ty) => Array.from({ length: RN }, (_, j) => tx * RN + j);
  M.threadLoads = M.threadOutputs;   // the same slots, in As and in Bs, each phase

  // Warp tiling (sgemm/09_warp_tiling.cu; gemmlab.tilemap warp functions): warp w's WM x WN tile of the
  // BM x BN block tile, and lane l's rows (columns of As[k][m]) and columns (of Bs[k][n]): 8 x 4 lanes of
  // 4 x 4 sub-tiles, repeated every 32 rows and 16 columns of the warp tile.
  M.warpCorner = (BM, BN, WM, WN, w) => [Math.floor(w / (BN / WN)) * WM, (w % (BN / WN)) * WN];
  M.laneAsCols = function (BM, BN, WM, WN, w, l) {
    const wm = M.warpCorner(BM, BN, WM, WN, w)[0], out = [];
    for (let i = 0; i < WM / 32; i++) for (let q = 0; q < 4; q++) out.push(wm + i * 32 + Math.floor(l / 4) * 4 + q);
    return out;
  };
  M.laneBsCols = function (BM, BN, WM, WN, w, l) {
    const wn = M.warpCorner(BM, BN, WM, WN, w)[1], out = [];
    for (let j = 0; j < WN / 16; j++) for (let q = 0; q < 4; q++) out.push(wn + j * 16 + (l % 4) * 4 + q);
    return out;
  };
  M.laneOutputs = function (BM, BN, WM, WN, w, l) {
    const out = [];
    for (const r of M.laneAsCols(BM, BN, WM, WN, w, l)) for (const c of M.laneBsCols(BM, BN, WM, WN, w, l)) out.push([r, c]);
    return out;
  };

  root.GLModel = M;
  if (typeof module !== "undefined" && module.exports) module.exports = M;
})(typeof window !== "undefined" ? window : globalThis);
