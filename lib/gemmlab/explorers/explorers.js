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
  const tick = function (x) {            // an axis tick at a power of ten: "100 G", not "100.00 G"
    const p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [v, s] of p) if (Math.abs(x) >= v * 0.999) return Math.round(x / v) + " " + s;
    return String(Math.round(x));
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
    // FP32 and FP64 on the vector units; TF32 and FP16/BF16 on the tensor cores (Part V), where the
    // GPU's datasheet gives a dense figure. Bytes per element of each.
    const PRECISIONS = [["FP32", 4], ["FP64", 8], ["TF32 tensor cores", 4], ["FP16/BF16 tensor cores", 2]];
    const precSel = select(PRECISIONS.map((p) => p[0]), 0);
    control(ui, "precision", precSel);
    const beta = el("input", { type: "checkbox" });
    control(ui, "beta != 0", beta);
    const text = el("pre", { class: "gl-readout", "aria-live": "polite" }, rootEl);
    const svg = el("svg:svg", { viewBox: "0 0 640 360", class: "gl-chart", role: "img" }, rootEl);

    function draw() {
      const g = data.gpus[+gpuSel.value];
      const op = ["DOT", "GEMV", "GEMM"][+opSel.value];
      const [precName, item] = PRECISIONS[+precSel.value];
      const size = { m: 2 ** +sliders.m.value, n: 2 ** +sliders.n.value, k: 2 ** +sliders.k.value };
      sliders.m.parentNode.style.display = op === "DOT" ? "none" : "";
      sliders.k.parentNode.style.display = op === "GEMM" ? "" : "none";
      for (const d in outs) outs[d].textContent = size[d].toLocaleString();
      const peak = [g.peak32, g.peak64, (g.tensor || {})["TF32"], (g.tensor || {})["FP16/BF16"]][+precSel.value];
      if (!peak) {
        text.textContent = precName + ": no datasheet figure for " + g.name + " here (the book lists the " +
          "dense peaks each GPU's datasheet gives)";
        while (svg.firstChild) svg.removeChild(svg.firstChild);
        return;
      }
      const { F, Q } = M.counts(op, size, item, beta.checked);
      const I = F / Q, ridge = peak / g.bw, fl = M.floor(F, Q, peak, g.bw);
      const shape = op === "DOT" ? "n=" + size.n : op === "GEMV" ? size.m + "x" + size.n : size.m + "x" + size.n + "x" + size.k;
      text.textContent =
        op + " " + shape + ", " + precName + (beta.checked ? ", beta != 0" : "") + " on " + g.name + "\n" +
        "F = " + si(F, "FLOP") + "   Q = " + si(Q, "B") + "   intensity I = F/Q = " + fmt(I) + " FLOP/byte\n" +
        "peak " + si(peak, "FLOP/s") + ", bandwidth " + si(g.bw, "B/s") + ": ridge point " + fmt(ridge) + " FLOP/byte\n" +
        (fl.bound === "memory" ? "memory-bound" : "compute-bound") + ": at least " + time(fl.seconds) +
        " (F/P = " + time(fl.compute) + ", Q/B = " + time(fl.memory) + "), at most " + si(M.attainable(I, peak, g.bw), "FLOP/s");
      // the measured points are FP32 kernels: shown on the FP32 roofline only
      chart(svg, g, peak, I, M.attainable(I, peak, g.bw),
            (data.points || []).filter((p) => p.gpu === g.name && +precSel.value === 0));
    }

    function chart(svg, g, peak, I, P, points) {
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      const W = 640, H = 360, L = 64, R = 20, T = 20, B = 40;
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
        el("svg:text", { x: L - 6, y: Y(10 ** e) + 4, "text-anchor": "end", class: "gl-tick" }, svg, tick(10 ** e));
      }
      el("svg:text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle", class: "gl-label" }, svg, "intensity (FLOP/byte)");
      el("svg:text", { x: 12, y: (T + H - B) / 2, transform: "rotate(-90 12 " + (T + H - B) / 2 + ")", "text-anchor": "middle", class: "gl-label" }, svg, "FLOP/s");
      const ridge = peak / g.bw;
      const x0 = 10 ** xs[0];
      el("svg:polyline", { points: [X(x0) + "," + Y(x0 * g.bw), X(ridge) + "," + Y(peak), X(10 ** xs[1]) + "," + Y(peak)].join(" "), class: "gl-roof" }, svg);
      // Measured points, each labelled where its label overlaps no other label and no point, and stays in
      // the frame: beside the point if it can, else a little above or below it with a leader line.
      const boxes = [];
      const clash = (a) => a.x < L || a.x + a.w > W - R || a.y < T || a.y + a.h > H - B ||
        boxes.some((b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h);
      const opX = X(Math.min(Math.max(I, x0), 10 ** xs[1])), opY = Y(P);
      boxes.push({ x: opX - 8, y: opY - 8, w: 16, h: 16 });
      const shown = points.slice().sort((a, b) => b.flops - a.flops || a.I - b.I);
      for (const p of shown) boxes.push({ x: X(p.I) - 5, y: Y(p.flops) - 5, w: 10, h: 10 });
      for (const p of shown) {
        const px = X(p.I), py = Y(p.flops);
        const dot = el("svg:circle", { cx: px, cy: py, r: 4, class: "gl-measured" }, svg);
        el("svg:title", {}, dot, p.label + ": " + si(p.flops, "FLOP/s") + " at " + fmt(p.I) + " FLOP/byte");
        const label = el("svg:text", { x: 0, y: 0, class: "gl-small gl-point-label" }, svg, p.label);
        let w = 0;
        try { w = label.getComputedTextLength(); } catch (e) { w = 0; }
        w = w || p.label.length * 5.6;
        const h = 11;
        let best = null;
        for (let step = 0; step <= 12 && !best; step++) {
          for (const dy of step === 0 ? [0] : [-step * h, step * h]) {
            for (const x of [px + 8, px - 8 - w]) {
              const box = { x, y: py - h / 2 + dy, w, h };
              if (!clash(box)) { best = box; break; }
            }
            if (best) break;
          }
        }
        best = best || { x: px + 8, y: py - h / 2, w, h };
        boxes.push(best);
        label.setAttribute("x", best.x);
        label.setAttribute("y", best.y + h - 2);
        if (Math.abs(best.y + h / 2 - py) > h / 2) {
          const ex = best.x > px ? best.x - 1 : best.x + w + 1;
          el("svg:line", { x1: px, y1: py, x2: ex, y2: best.y + h / 2, class: "gl-leader" }, svg);
        }
      }
      el("svg:circle", { cx: opX, cy: opY, r: 7, class: "gl-point" }, svg);
      svg.setAttribute("aria-label", "roofline of " + g.name + " with the operation at intensity " + fmt(I));
    }

    [gpuSel, opSel, precSel, beta, ...Object.values(sliders)].forEach((c) => c.addEventListener("input", draw));
    draw();
  }

  // ---------------------------------------------------------------- tile-map trainer
  function tilemap(rootEl, data) {
    ownKeys(rootEl);
    const ui = el("div", { class: "gl-controls" }, rootEl);
    const mode = select(["shared-memory tiling (chapter 2)", "register tiling (chapter 6)", "warp tiling (Part IV)",
                         "quiz: test yourself"], data.mode || 0);
    control(ui, "mode", mode);
    const c = {
      n: range(4, 32, 8), tile: select(["1", "2", "4", "8"], 1), bi: range(0, 3, 1), bj: range(0, 3, 2), p: range(0, 3, 0),
      T: select(["8", "16", "32"], 1), RM: select(["1", "2", "4"], 1), RN: select(["1", "2", "4"], 1), tx: range(0, 7, 3), ty: range(0, 7, 1),
      BM: select(["64", "128"], 1), BN: select(["64", "128", "256"], 1), WM: select(["32", "64"], 1), WN: select(["32", "64"], 0),
      warp: range(0, 7, 0), lane: range(0, 31, 5),
    };
    const o = {};
    const labels = { n: "N", tile: "TILE", bi: "block row bi", bj: "block column bj", p: "phase p", T: "tile T (BM = BN = BK)", RM: "RM (TM)", RN: "RN (TN)", tx: "thread tx", ty: "thread ty",
      BM: "block tile BM", BN: "block tile BN", WM: "warp tile WM", WN: "warp tile WN", warp: "warp", lane: "lane" };
    for (const k in c) o[k] = control(ui, labels[k], c[k]);
    // the quiz (mode 3): a question with random parameters (a seeded generator, so a page always starts
    // with the same one), answered by clicking cells, checked against the model's answer
    const quizUi = el("div", { class: "gl-controls" }, rootEl);
    const ask = el("button", { type: "button", class: "gl-button" }, quizUi, "new question");
    const answer = el("button", { type: "button", class: "gl-button" }, quizUi, "check my answer");
    let seed = (data.seed || 1) >>> 0;
    const rand = (n) => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return (seed >>> 16) % n; };   // high bits: an LCG's low ones cycle
    let quiz = null;
    function newQuestion() {
      if (rand(2) === 0) {
        const tile = [2, 4][rand(2)], t = 3 + rand(3), n = tile * t;
        quiz = { kind: "tiles", n, tile, t, bi: rand(t), bj: rand(t), p: rand(t), picks: { A: null, B: null } };
      } else {
        const T = [8, 16][rand(2)], RM = [1, 2, 4][rand(3)], RN = [1, 2, 4][rand(3)];
        quiz = { kind: "owner", T, RM, RN, tx: rand(T / RN), ty: rand(T / RM), picks: new Set() };
      }
      quiz.verdict = "";
    }
    function quizAnswer() {
      if (quiz.kind === "tiles") return { A: M.aTile(quiz.bi, quiz.bj, quiz.p), B: M.bTile(quiz.bi, quiz.bj, quiz.p) };
      return M.threadOutputs(quiz.T, quiz.RM, quiz.RN, quiz.tx, quiz.ty).map((rc) => rc.join(","));
    }
    function checkQuiz() {
      const want = quizAnswer();
      let right;
      if (quiz.kind === "tiles") {
        right = quiz.picks.A !== null && quiz.picks.B !== null && quiz.picks.A.join() === want.A.join() && quiz.picks.B.join() === want.B.join();
        quiz.verdict = right ? "right: A tile (" + want.A.join(", ") + ") and B tile (" + want.B.join(", ") + ")" :
          "not quite: in phase p a block loads the A tile in its own tile row and column p, (" + want.A.join(", ") +
          "), and the B tile in row p and its own tile column, (" + want.B.join(", ") + ")";
      } else {
        right = quiz.picks.size === want.length && want.every((x) => quiz.picks.has(x));
        quiz.verdict = right ? "right: " + want.length + " elements, rows " + M.threadAsRows(quiz.T, quiz.RM, quiz.RN, quiz.tx, quiz.ty).join(",") +
          ", columns " + M.threadBsCols(quiz.T, quiz.RM, quiz.RN, quiz.tx, quiz.ty).join(",") :
          "not quite: thread (tx, ty) owns rows ty*RM .. ty*RM+RM-1 and columns tx*RN .. tx*RN+RN-1: " + want.length + " elements";
      }
      rootEl.setAttribute("data-quiz-verdict", right ? "right" : "wrong");
    }
    ask.addEventListener("click", () => { newQuestion(); draw(); });
    answer.addEventListener("click", () => { checkQuiz(); draw(); });

    const text = el("pre", { class: "gl-readout", "aria-live": "polite" }, rootEl);
    const svg = el("svg:svg", { viewBox: "0 0 660 240", class: "gl-chart", role: "img" }, rootEl);
    const shared = ["n", "tile", "bi", "bj", "p"], reg = ["T", "RM", "RN", "tx", "ty"], warpKeys = ["BM", "BN", "WM", "WN", "warp", "lane"];

    // a rows x cols grid of cells cw wide and ch tall at (x0, y0); a list entry is [row, col, class, rows, cols]
    function cells(x0, y0, cw, ch, rows, cols, list, title, caption) {
      const H = rows * ch, Wd = cols * cw;
      el("svg:text", { x: x0 + Wd / 2, y: y0 - 6, "text-anchor": "middle", class: "gl-label" }, svg, title);
      for (const [r, col, cls, h, w] of list) el("svg:rect", { x: x0 + col * cw, y: y0 + r * ch, width: (w || 1) * cw, height: (h || 1) * ch, class: cls }, svg);
      el("svg:rect", { x: x0, y: y0, width: Wd, height: H, class: "gl-frame" }, svg);
      if (caption) el("svg:text", { x: x0 + Wd / 2, y: y0 + H + 14, "text-anchor": "middle", class: "gl-small" }, svg, caption);
    }

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
      warpKeys.forEach((k) => (c[k].parentNode.style.display = m === 2 ? "" : "none"));
      quizUi.style.display = m === 3 ? "" : "none";
      if (m === 3) {
        if (!quiz) newQuestion();
        rootEl.setAttribute("data-quiz", JSON.stringify(Object.assign({}, quiz, { picks: undefined, verdict: undefined })));
        const pick = (x, y, w, h, cls, key, onClick) => {
          const r = el("svg:rect", { x, y, width: w, height: h, class: cls, "data-cell": key, tabindex: 0, role: "button" }, svg);
          r.addEventListener("click", () => { onClick(); draw(); });
          r.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onClick(); draw(); } });
        };
        if (quiz.kind === "tiles") {
          const S = 180, cs = S / quiz.t;
          for (const [x0, name, cls] of [[40, "A", "gl-now-a"], [300, "B", "gl-now-b"]]) {
            el("svg:text", { x: x0 + S / 2, y: 14, "text-anchor": "middle", class: "gl-label" }, svg, name + " (click one tile)");
            for (let r = 0; r < quiz.t; r++) for (let q = 0; q < quiz.t; q++) {
              const chosen = quiz.picks[name] && quiz.picks[name][0] === r && quiz.picks[name][1] === q;
              pick(x0 + q * cs, 22 + r * cs, cs, cs, chosen ? cls : "gl-cell-box", name + ":" + r + "," + q, () => { quiz.picks[name] = [r, q]; });
            }
          }
          text.textContent = "N = " + quiz.n + ", TILE = " + quiz.tile + " (" + quiz.t + " x " + quiz.t + " tiles): which tile of A and which tile of B does block (" +
            quiz.bi + ", " + quiz.bj + ") load in phase " + quiz.p + "?" + (quiz.verdict ? "\n" + quiz.verdict : "");
        } else {
          const S = 200, cs = S / quiz.T;
          el("svg:text", { x: 40 + S / 2, y: 14, "text-anchor": "middle", class: "gl-label" }, svg, "C tile (click every element the thread computes)");
          for (let r = 0; r < quiz.T; r++) for (let q = 0; q < quiz.T; q++) {
            const key = r + "," + q;
            pick(40 + q * cs, 22 + r * cs, cs, cs, quiz.picks.has(key) ? "gl-now-c" : "gl-cell-box", "C:" + key,
              () => { if (quiz.picks.has(key)) quiz.picks.delete(key); else quiz.picks.add(key); });
          }
          text.textContent = "T = " + quiz.T + ", micro-tile RM x RN = " + quiz.RM + " x " + quiz.RN + " (" + (quiz.T / quiz.RN) + " x " + (quiz.T / quiz.RM) +
            " threads): which elements of the C tile does thread (tx, ty) = (" + quiz.tx + ", " + quiz.ty + ") compute?" +
            (quiz.verdict ? "\n" + quiz.verdict : "");
        }
        svg.setAttribute("aria-label", text.textContent);
      } else if (m === 2) {
        const BM = [64, 128][+c.BM.value], BN = [64, 128, 256][+c.BN.value], WM = [32, 64][+c.WM.value], WN = [32, 64][+c.WN.value];
        const warps = (BM / WM) * (BN / WN);
        c.warp.max = warps - 1; if (+c.warp.value > warps - 1) c.warp.value = warps - 1;
        const w = +c.warp.value, l = +c.lane.value;
        o.BM.textContent = BM; o.BN.textContent = BN; o.WM.textContent = WM; o.WN.textContent = WN;
        o.warp.textContent = w + " of " + warps; o.lane.textContent = l + " of 32";
        const [wr, wc] = M.warpCorner(BM, BN, WM, WN, w);
        const rows = M.laneAsCols(BM, BN, WM, WN, w, l), cols = M.laneBsCols(BM, BN, WM, WN, w, l);
        const C = [];
        for (let v = 0; v < warps; v++) { const [r0, c0] = M.warpCorner(BM, BN, WM, WN, v); C.push([r0, c0, v === w ? "gl-done-c" : "gl-cell-box", WM, WN]); }
        for (const [r, cc] of M.laneOutputs(BM, BN, WM, WN, w, l)) C.push([r, cc, "gl-now-c"]);
        const cs = Math.min(300 / BN, 180 / BM);
        cells(10, 30, cs, cs, BM, BN, C, "C block tile (" + BM + " x " + BN + ")", "warp " + w + ": rows " + wr + "..+" + (WM - 1) + ", columns " + wc + "..+" + (WN - 1));
        const A = [[0, wr, "gl-done-a", 1, WM]].concat(rows.map((r) => [0, r, "gl-now-a"]));
        const B = [[0, wc, "gl-done-b", 1, WN]].concat(cols.map((cc) => [0, cc, "gl-now-b"]));
        const sw = 300 / Math.max(BM, BN);
        cells(340, 60, sw, 14, 1, BM, A, "As[k][m] at one k (m = the block's rows)", "the warp reads " + WM + " values; this lane " + rows.length);
        cells(340, 150, sw, 14, 1, BN, B, "Bs[k][n] at one k (n = the block's columns)", "the warp reads " + WN + " values; this lane " + cols.length);
        text.textContent = "block tile " + BM + " x " + BN + " in " + warps + " warp tiles of " + WM + " x " + WN + "; lanes as 8 rows x 4 columns of 4 x 4 sub-tiles, " +
          (WM / 32) + " x " + (WN / 16) + " of them per lane: " + rows.length + " x " + cols.length + " outputs per lane\n" +
          "warp " + w + ", lane " + l + " owns rows " + rows.join(",") + " and columns " + cols.join(",") + " of the block tile; per k the warp reads " +
          WM + " values of As and " + WN + " of Bs (each 16-byte group by 8 or 4 lanes at once) for " + (WM * WN) + " multiply-adds";
        svg.setAttribute("aria-label", text.textContent);
      } else if (m === 0) {
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
