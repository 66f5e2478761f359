// explorers.js — the book's interactive explorers, drawn with plain SVG: no libraries, no network.
// Each takes a root element and the data Python embedded (gemmlab/explorers/__init__.py).
(function (root) {
  "use strict";
  const M = root.GLModel;
  const NS = "http://www.w3.org/2000/svg";
  const fmt = (x, d = 3) => (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0)) ? x.toExponential(2) : x.toFixed(d);
  const si = function (x, unit) {
    const p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [v, s] of p) if (Math.abs(x) >= v) return (x / v).toFixed(2) + " " + s + unit;
    return x.toFixed(2) + " " + unit;
  };
  const time = (s) => s >= 1e-3 ? (s * 1e3).toFixed(3) + " ms" : (s * 1e6).toFixed(2) + " µs";

  function el(tag, attrs, parent, text) {
    const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // Keys pressed on an explorer's controls belong to the controls: in JupyterLab the notebook would
  // otherwise take the arrow keys (cell navigation) before a slider sees them.
  function ownKeys(rootEl) {
    rootEl.addEventListener("keydown", (e) => { if (e.target.matches("input, select")) e.stopPropagation(); });
  }

  function control(parent, label, input) {
    const wrap = el("label", { class: "gl-control" }, parent);
    el("span", {}, wrap, label);
    wrap.appendChild(input);
    const value = el("output", { class: "gl-value" }, wrap);
    return value;
  }

  function range(min, max, value, step) {
    return el("input", { type: "range", min, max, value, step: step || 1 });
  }

  function select(options, value) {
    const s = el("select", {});
    options.forEach((o, i) => el("option", { value: i }, s, o));
    s.value = value;
    return s;
  }

  // ---------------------------------------------------------------- roofline calculator
  function roofline(rootEl, data) {
    ownKeys(rootEl);
    const ui = el("div", { class: "gl-controls" }, rootEl);
    const gpuSel = select(data.gpus.map((g) => g.name + " (" + g.source + ")"), data.default || 0);
    control(ui, "GPU", gpuSel);
    const opSel = select(["DOT", "GEMV", "GEMM"], 2);
    control(ui, "operation", opSel);
    const sliders = {};
    const outs = {};
    for (const d of ["m", "n", "k"]) {
      sliders[d] = range(4, 30, d === "k" ? 12 : 12);
      outs[d] = control(ui, "log2 " + d, sliders[d]);
    }
    const precSel = select(["FP32", "FP64"], 0);
    control(ui, "precision", precSel);
    const beta = el("input", { type: "checkbox" });
    control(ui, "beta != 0", beta);
    const text = el("pre", { class: "gl-readout", "aria-live": "polite" }, rootEl);
    const svg = el("svg:svg", { viewBox: "0 0 640 360", class: "gl-chart", role: "img" }, rootEl);

    function draw() {
      const g = data.gpus[+gpuSel.value];
      const op = ["DOT", "GEMV", "GEMM"][+opSel.value];
      const fp64 = +precSel.value === 1;
      const item = fp64 ? 8 : 4;
      const size = { m: 2 ** +sliders.m.value, n: 2 ** +sliders.n.value, k: 2 ** +sliders.k.value };
      sliders.m.parentNode.style.display = op === "DOT" ? "none" : "";
      sliders.k.parentNode.style.display = op === "GEMM" ? "" : "none";
      for (const d in outs) outs[d].textContent = size[d].toLocaleString();
      const peak = fp64 ? g.peak64 : g.peak32;
      const { F, Q } = M.counts(op, size, item, beta.checked);
      const I = F / Q, ridge = peak / g.bw, fl = M.floor(F, Q, peak, g.bw);
      const shape = op === "DOT" ? "n=" + size.n : op === "GEMV" ? size.m + "x" + size.n : size.m + "x" + size.n + "x" + size.k;
      text.textContent =
        op + " " + shape + ", " + (fp64 ? "FP64" : "FP32") + (beta.checked ? ", beta != 0" : "") + " on " + g.name + "\n" +
        "F = " + si(F, "FLOP") + "   Q = " + si(Q, "B") + "   intensity I = F/Q = " + fmt(I) + " FLOP/byte\n" +
        "peak " + si(peak, "FLOP/s") + ", bandwidth " + si(g.bw, "B/s") + ": ridge point " + fmt(ridge) + " FLOP/byte\n" +
        (fl.bound === "memory" ? "memory-bound" : "compute-bound") + ": at least " + time(fl.seconds) +
        " (F/P = " + time(fl.compute) + ", Q/B = " + time(fl.memory) + "), at most " + si(M.attainable(I, peak, g.bw), "FLOP/s");
      chart(svg, g, peak, I, M.attainable(I, peak, g.bw), (data.points || []).filter((p) => p.gpu === g.name && !fp64));
    }

    function chart(svg, g, peak, I, P, points) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const W = 640, H = 360, L = 60, R = 20, T = 20, B = 40;
      const xs = [Math.log10(0.01), Math.log10(1e5)];
      const ys = [Math.log10(peak / 1e5), Math.log10(peak * 3)];
      const X = (v) => L + (Math.log10(v) - xs[0]) / (xs[1] - xs[0]) * (W - L - R);
      const Y = (v) => H - B - (Math.log10(v) - ys[0]) / (ys[1] - ys[0]) * (H - T - B);
      el("svg:rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "gl-frame" }, svg);
      for (let e = -2; e <= 5; e++) {
        el("svg:line", { x1: X(10 ** e), x2: X(10 ** e), y1: T, y2: H - B, class: "gl-grid" }, svg);
        el("svg:text", { x: X(10 ** e), y: H - B + 16, "text-anchor": "middle", class: "gl-tick" }, svg, "1e" + e);
      }
      for (let e = Math.ceil(ys[0]); e <= ys[1]; e++) {
        el("svg:line", { x1: L, x2: W - R, y1: Y(10 ** e), y2: Y(10 ** e), class: "gl-grid" }, svg);
        el("svg:text", { x: L - 6, y: Y(10 ** e) + 4, "text-anchor": "end", class: "gl-tick" }, svg, si(10 ** e, "").trim());
      }
      el("svg:text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "gl-label" }, svg, "intensity (FLOP/byte)");
      el("svg:text", { x: 14, y: (T + H - B) / 2, transform: "rotate(-90 14 " + (T + H - B) / 2 + ")", "text-anchor": "middle", class: "gl-label" }, svg, "FLOP/s");
      const ridge = peak / g.bw;
      const x0 = 10 ** xs[0];
      el("svg:polyline", { points: [X(x0) + "," + Y(x0 * g.bw), X(ridge) + "," + Y(peak), X(10 ** xs[1]) + "," + Y(peak)].join(" "), class: "gl-roof" }, svg);
      let prev = null, drop = 0;
      for (const p of points.slice().sort((a, b) => a.I - b.I || b.flops - a.flops)) {
        const dot = el("svg:circle", { cx: X(p.I), cy: Y(p.flops), r: 4, class: "gl-measured" }, svg);
        el("svg:title", {}, dot, p.label + ": " + si(p.flops, "FLOP/s") + " at " + fmt(p.I) + " FLOP/byte");
        drop = prev !== null && p.I < prev * 2.5 ? drop + 11 : 0;
        prev = p.I;
        el("svg:text", { x: X(p.I) + 7, y: Y(p.flops) + 4 + drop, class: "gl-small" }, svg, p.label);
      }
      el("svg:circle", { cx: X(Math.min(Math.max(I, x0), 10 ** xs[1])), cy: Y(P), r: 7, class: "gl-point" }, svg);
      svg.setAttribute("aria-label", "roofline of " + g.name + " with the operation at intensity " + fmt(I));
    }

    [gpuSel, opSel, precSel, beta, ...Object.values(sliders)].forEach((c) => c.addEventListener("input", draw));
    draw();
  }

  // ---------------------------------------------------------------- tile-map trainer
  function tilemap(rootEl, data) {
    ownKeys(rootEl);
    const ui = el("div", { class: "gl-controls" }, rootEl);
    const mode = select(["shared-memory tiling (chapter 2)", "register tiling (chapter 6)"], data.mode || 0);
    control(ui, "mode", mode);
    const c = {
      n: range(4, 32, 8), tile: select(["1", "2", "4", "8"], 1), bi: range(0, 3, 1), bj: range(0, 3, 2), p: range(0, 3, 0),
      T: select(["8", "16", "32"], 1), RM: select(["1", "2", "4"], 1), RN: select(["1", "2", "4"], 1), tx: range(0, 7, 3), ty: range(0, 7, 1),
    };
    const o = {};
    const labels = { n: "N", tile: "TILE", bi: "block row bi", bj: "block column bj", p: "phase p", T: "tile T (BM = BN = BK)", RM: "RM (TM)", RN: "RN (TN)", tx: "thread tx", ty: "thread ty" };
    for (const k in c) o[k] = control(ui, labels[k], c[k]);
    const text = el("pre", { class: "gl-readout", "aria-live": "polite" }, rootEl);
    const svg = el("svg:svg", { viewBox: "0 0 660 240", class: "gl-chart", role: "img" }, rootEl);
    const shared = ["n", "tile", "bi", "bj", "p"], reg = ["T", "RM", "RN", "tx", "ty"];

    function grid(x0, title, n, cells, caption) {
      const S = 180, cs = S / n;
      el("svg:text", { x: x0 + S / 2, y: 14, "text-anchor": "middle", class: "gl-label" }, svg, title);
      for (const [r, col, cls] of cells) el("svg:rect", { x: x0 + col * cs, y: 22 + r * cs, width: cs, height: cs, class: cls }, svg);
      el("svg:rect", { x: x0, y: 22, width: S, height: S, class: "gl-frame" }, svg);
      if (n <= 32) for (let i = 1; i < n; i++) {
        el("svg:line", { x1: x0 + i * cs, x2: x0 + i * cs, y1: 22, y2: 22 + S, class: "gl-cell" }, svg);
        el("svg:line", { x1: x0, x2: x0 + S, y1: 22 + i * cs, y2: 22 + i * cs, class: "gl-cell" }, svg);
      }
      if (caption) el("svg:text", { x: x0 + S / 2, y: 22 + S + 16, "text-anchor": "middle", class: "gl-small" }, svg, caption);
    }

    function draw() {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const m = +mode.value;
      shared.forEach((k) => (c[k].parentNode.style.display = m === 0 ? "" : "none"));
      reg.forEach((k) => (c[k].parentNode.style.display = m === 1 ? "" : "none"));
      if (m === 0) {
        const n = +c.n.value, tile = [1, 2, 4, 8][+c.tile.value], t = M.tiles(n, tile);
        for (const k of ["bi", "bj", "p"]) { c[k].max = t - 1; if (+c[k].value > t - 1) c[k].value = t - 1; }
        const bi = +c.bi.value, bj = +c.bj.value, p = +c.p.value;
        o.n.textContent = n; o.tile.textContent = tile; o.bi.textContent = bi; o.bj.textContent = bj; o.p.textContent = p + " of " + t;
        const span = (q) => { const a = []; for (let i = q * tile; i < Math.min((q + 1) * tile, n); i++) a.push(i); return a; };
        const tileCells = (r, col, cls) => { const out = []; for (const i of span(r)) for (const j of span(col)) out.push([i, j, cls]); return out; };
        let A = [], B = [];
        for (let q = 0; q < p; q++) { A = A.concat(tileCells(...M.aTile(bi, bj, q), "gl-done-a")); B = B.concat(tileCells(...M.bTile(bi, bj, q), "gl-done-b")); }
        A = A.concat(tileCells(...M.aTile(bi, bj, p), "gl-now-a"));
        B = B.concat(tileCells(...M.bTile(bi, bj, p), "gl-now-b"));
        grid(10, "A", n, A, "tile (" + M.aTile(bi, bj, p).join(", ") + ")");
        grid(240, "B", n, B, "tile (" + M.bTile(bi, bj, p).join(", ") + ")");
        grid(470, "C", n, tileCells(bi, bj, "gl-now-c"), "block (" + bi + ", " + bj + ")");
        const g = M.globalLoads(n, tile);
        text.textContent = "N = " + n + ", TILE = " + tile + ": block (" + bi + ", " + bj + ") in phase " + p + " loads tile " +
          M.aTile(bi, bj, p).join(",") + " of A and tile " + M.bTile(bi, bj, p).join(",") + " of B\n" +
          "global loads of A and B: naive 2N^3 = " + g.naive.toLocaleString() + ", tiled " + g.tiled.toLocaleString() +
          " (" + g.ratio.toFixed(2) + "x fewer)";
        svg.setAttribute("aria-label", text.textContent);
      } else {
        const T = [8, 16, 32][+c.T.value], RM = [1, 2, 4][+c.RM.value], RN = [1, 2, 4][+c.RN.value];
        c.tx.max = T / RN - 1; c.ty.max = T / RM - 1;
        if (+c.tx.value > T / RN - 1) c.tx.value = T / RN - 1;
        if (+c.ty.value > T / RM - 1) c.ty.value = T / RM - 1;
        const tx = +c.tx.value, ty = +c.ty.value;
        o.T.textContent = T; o.RM.textContent = RM; o.RN.textContent = RN; o.tx.textContent = tx + " of " + (T / RN); o.ty.textContent = ty + " of " + (T / RM);
        const own = M.threadOutputs(T, RM, RN, tx, ty);
        const rowsA = M.threadAsRows(T, RM, RN, tx, ty), colsB = M.threadBsCols(T, RM, RN, tx, ty);
        const As = [], Bs = [];
        for (const r of rowsA) for (let k = 0; k < T; k++) As.push([r, k, "gl-done-a"]);
        for (const cc of colsB) for (let k = 0; k < T; k++) Bs.push([k, cc, "gl-done-b"]);
        for (const [r, cc] of M.threadLoads(T, RM, RN, tx, ty)) { As.push([r, cc, "gl-now-a"]); Bs.push([r, cc, "gl-now-b"]); }
        grid(10, "As (shared)", T, As, "reads rows " + rowsA[0] + ".." + rowsA[rowsA.length - 1]);
        grid(240, "Bs (shared)", T, Bs, "reads columns " + colsB[0] + ".." + colsB[colsB.length - 1]);
        grid(470, "C tile", T, own.map(([r, cc]) => [r, cc, "gl-now-c"]), RM + " x " + RN + " outputs");
        text.textContent = "T = " + T + ", micro-tile " + RM + " x " + RN + ": " + (T / RN) + " x " + (T / RM) + " = " + (T * T / RM / RN) +
          " threads per block; thread (" + tx + ", " + ty + ") owns C[" + own[0].join("][") + "] .. C[" + own[own.length - 1].join("][") + "]\n" +
          "per step k it reads " + RM + " values of As and " + RN + " of Bs for " + RM * RN + " multiply-adds (" +
          ((RM + RN) / (RM * RN)).toFixed(2) + " shared loads per multiply-add); strong colour: the slots it loads each phase";
        svg.setAttribute("aria-label", text.textContent);
      }
    }
    [mode, ...Object.values(c)].forEach((x) => x.addEventListener("input", draw));
    draw();
  }

  // ---------------------------------------------------------------- recorded sweep
  // `live` (optional, from a live notebook: gemmlab/explorers/live.py) re-runs the chosen configuration
  // in the kernel: live.request(i) asks for row i, live.result(i) is what came back ({summary}, plus
  // {value} when it was timed on a GPU; on the CPU emulator it is only checked), live.status() the
  // kernel's last message, and live.onUpdate(f) calls f whenever a result or the status changes.
  function sweep(rootEl, data, live) {
    ownKeys(rootEl);
    const ui = el("div", { class: "gl-controls" }, rootEl);
    const sl = {}, out = {};
    for (const p of data.params) {
      const vals = data.values[p];
      sl[p] = range(0, vals.length - 1, Math.max(0, vals.indexOf(data.start[p])));
      out[p] = control(ui, p, sl[p]);
    }
    const text = el("pre", { class: "gl-readout", "aria-live": "polite" }, rootEl);
    let liveText = null, button = null;
    if (live) {
      const bar = el("div", { class: "gl-controls" }, rootEl);
      button = el("button", { type: "button", class: "gl-button" }, bar, "run it here");
      liveText = el("pre", { class: "gl-live", "aria-live": "polite" }, rootEl);
    }
    const svg = el("svg:svg", { viewBox: "0 0 640 " + (40 + 22 * data.rows.length / (data.params.length > 2 ? 4 : 1)), class: "gl-chart", role: "img" }, rootEl);
    const metric = data.metric || "gflops";
    const unit = metric === "gbs" ? "GB/s" : "GFLOP/s";
    const value = (r) => r[metric];
    const best = Math.max(...data.rows.map(value), data.cublas);

    function current() {
      const cfg = {};
      for (const p of data.params) cfg[p] = data.values[p][+sl[p].value];
      return cfg;
    }
    const same = (a, b) => data.params.every((p) => a[p] === b[p]);

    function draw() {
      const cfg = current();
      for (const p of data.params) out[p].textContent = cfg[p];
      const row = data.rows.find((r) => same(r.params, cfg));
      if (live) {
        const got = row && live.result(data.rows.indexOf(row));
        liveText.textContent = live.status() + (got ? "\nthis configuration, " + got.summary : "");
      }
      text.textContent = (row ? data.name(cfg) + ": " + Math.round(value(row)).toLocaleString() + " " + unit + " = " +
        (100 * value(row) / data.cublas).toFixed(1) + "% of cuBLAS (" + Math.round(data.cublas).toLocaleString() + " " + unit + ")" : "not measured") +
        "\n" + data.caption;
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      // every configuration that shares the other parameters' values with the current one, as bars
      const vary = data.params[0];
      const group = data.rows.filter((r) => data.params.every((p) => p === vary || r.params[p] === cfg[p]));
      const W = 640, L = 170;
      group.forEach((r, i) => {
        const y = 10 + i * 22, w = (W - L - 80) * value(r) / best;
        const isNow = same(r.params, cfg);
        el("svg:text", { x: L - 8, y: y + 14, "text-anchor": "end", class: "gl-small" }, svg, vary + " = " + r.params[vary]);
        el("svg:rect", { x: L, y, width: Math.max(1, w), height: 16, class: isNow ? "gl-bar-now" : "gl-bar" }, svg);
        el("svg:text", { x: L + w + 6, y: y + 13, class: "gl-small" }, svg, Math.round(value(r)).toLocaleString() + " " + unit);
        const got = live && live.result(data.rows.indexOf(r));
        if (got && got.value !== undefined) {        // measured now, in this notebook: a thin bar under the recorded one
          el("svg:rect", { x: L, y: y + 17, width: Math.max(1, (W - L - 80) * Math.min(got.value, best) / best), height: 4, class: "gl-bar-live" }, svg);
        }
      });
      const y = 10 + group.length * 22, w = (W - L - 80) * data.cublas / best;
      el("svg:text", { x: L - 8, y: y + 14, "text-anchor": "end", class: "gl-small" }, svg, "cuBLAS");
      el("svg:rect", { x: L, y, width: w, height: 16, class: "gl-bar-ref" }, svg);
      svg.setAttribute("viewBox", "0 0 640 " + (y + 30));
      svg.setAttribute("aria-label", text.textContent);
    }
    data.name = data.name || ((cfg) => data.params.map((p) => p + "=" + cfg[p]).join(", "));
    Object.values(sl).forEach((s) => s.addEventListener("input", draw));
    if (live) {
      // a slider let go (or a key pressed) asks the kernel to run the configuration; quick successive
      // moves ask once, for where the slider came to rest
      let timer = null;
      const ask = () => {
        const i = data.rows.findIndex((r) => same(r.params, current()));
        if (i >= 0) live.request(i);
      };
      const later = () => { clearTimeout(timer); timer = setTimeout(ask, 400); };
      Object.values(sl).forEach((s) => s.addEventListener("change", later));
      button.addEventListener("click", ask);
      live.onUpdate(draw);
    }
    draw();
  }

  // One entry point for the static page and the live widget: the explorer's frame, then its contents.
  function mount(container, kind, data, title, live) {
    container.replaceChildren();      // the placeholder for where scripts do not run
    const rootEl = el("div", { class: "gl-explorer", "data-explorer": kind, role: "group", "aria-label": title }, container);
    el("strong", {}, rootEl, title);
    ({ roofline, tilemap, sweep })[kind](rootEl, data, live);
    return rootEl;
  }

  root.GLExplorers = { roofline, tilemap, sweep, mount };
})(typeof window !== "undefined" ? window : globalThis);
