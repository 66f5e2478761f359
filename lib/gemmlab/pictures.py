"""Pictures drawn from the kernels themselves: every number in them is read from a kernel's source under
``kernels/`` or from its registry entry, so a picture changes when the kernel does.

- :func:`timeline` (chapter 16): who does what, when, in one persistent block of tc/08 to tc/12 (schematic);
- :func:`swizzle128` (chapter 15): where the 128-byte swizzle puts each 16-byte chunk of A's tile, and why;
- :func:`warp_tiling` (chapter 13): a block's tile of C split among warps, and one warp's among its 32 lanes.

Each draws a pyplot figure, as the library's other figures are (a notebook shows it when the cell ends; end the
cell with ``;`` so that the returned figure is not shown twice) and returns it. No GPU is needed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import registry, tilemap
from .paths import KERNELS
from .runtime.source import find_includes, parse_kernels, strip_comments

WIDTH = 7.6          # inches at 100 dpi: the book's column, so nothing is scaled down to fit it
FONT = 9.5           # points: 13 px at 100 dpi, the smallest text the book shows (tests/test_plots.py)
WARPGROUP = 128      # threads of a warpgroup (four warps): wgmma's unit; the kernels' `wg = threadIdx.x / 128`
WARP = 32

# --- the kernels' own constants ------------------------------------------------------------------

_CONSTEXPR = re.compile(r"\bconstexpr\s+(?:unsigned\s+)?int\s+([^;]*);")
_TOKEN = re.compile(r"\s*(\d+[uU]?|[A-Za-z_][\w:]*|[-+*/%()?:])")


def _evaluate(expr: str, names: dict) -> int:
    """An integer C expression of numbers, known names (``S::X`` read as ``X``), + - * / % and ?:, as C does it."""
    tokens, at = [], 0
    expr = expr.strip()
    while at < len(expr):
        m = _TOKEN.match(expr, at)
        if m is None:
            raise ValueError(f"cannot read {expr[at:]!r} in {expr!r}")
        tokens.append(m.group(1))
        at = m.end()
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take(want=None):
        tok = peek()
        if tok is None or (want is not None and tok != want):
            raise ValueError(f"expected {want or 'more'} in {expr!r}")
        pos[0] += 1
        return tok

    def ternary():
        cond = total()
        if peek() != "?":
            return cond
        take("?")
        yes = ternary()
        take(":")
        no = ternary()
        return yes if cond else no

    def total():
        value = product()
        while peek() in ("+", "-"):
            value = value + product() if take() == "+" else value - product()
        return value

    def product():
        value = unary()
        while peek() in ("*", "/", "%"):
            op, right = take(), unary()
            if op == "*":
                value *= right
            else:
                quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1)   # C truncates
                value = quotient if op == "/" else value - quotient * right
        return value

    def unary():
        tok = take()
        if tok == "-":
            return -unary()
        if tok == "(":
            value = ternary()
            take(")")
            return value
        if tok[0].isdigit():
            return int(tok.rstrip("uU"))
        name = tok.rpartition("::")[2]
        if name not in names:
            raise KeyError(name)
        return names[name]

    value = ternary()
    if peek() is not None:
        raise ValueError(f"left over {tokens[pos[0]:]} in {expr!r}")
    return value


def kernel_constants(path: str, **template) -> dict:
    """The ``constexpr int`` constants of kernels/``path`` and of the headers it includes (theirs first), each
    evaluated in the order written, with ``template`` giving its template parameters:
    ``kernel_constants("tc/12_pingpong.cu", PINGPONG=1)["STAGES"]`` is 6. A constant that needs a name not known
    here (a function's own template parameter, say) is left out; a later one of the same name wins."""
    file = KERNELS / path
    if not file.is_file():
        raise ValueError(f"no kernel file kernels/{path}")
    text = file.read_text()
    names = dict(template)
    for source in [*reversed(find_includes(text, file).values()), text]:
        for m in _CONSTEXPR.finditer(strip_comments(source)):
            for declarator in _top_commas(m.group(1)):
                name, eq, expr = declarator.partition("=")
                if not eq:
                    continue
                try:
                    names[name.split()[-1]] = _evaluate(expr, names)
                except (KeyError, ValueError, ZeroDivisionError):
                    continue
    return names


def _top_commas(text: str) -> list:
    """``a = f(x, y), b = 2`` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _signature(key: str):
    """The registry entry of ``key``, and the parsed signature of its kernel (launch bounds, cluster dims)."""
    v = registry.get(key)
    kernels = parse_kernels((KERNELS / v.source).read_text())
    return v, kernels[v.entry.split("<")[0]]


# --- chapter 16: the Hopper ladder's schedule ------------------------------------------------------

STEPS = {"tc/08": "tc/08_persistent", "tc/09": "tc/09_tma_store", "tc/10": "tc/10_cluster_multicast",
         "tc/11": "tc/11_stream_k", "tc/12": "tc/12_pingpong"}
SLICES = 6           # k-slices a tile in the picture (K = 6 BK): a schematic problem, not a kernel's constant
# schematic durations, in the time one k-slice of a whole BM x BN tile takes the tensor cores
_LOAD = 0.6          # a stage of STAGE_BYTES by TMA (loads outrun the math: the ring fills, then waits)
_REGS = 2.0          # a BM x BN tile of FP32 out of registers by 128 threads a consumer (tc/08)
_SMEM = 0.6          # the same into shared memory, box by box (tc/09 on)
_COPY = 2.2          # the copy engine writing the boxes to C


@dataclass(frozen=True)
class Bar:
    """One bar of a timeline: ``row`` from ``start`` to ``end``; ``kind`` load, math, regs, global, smem, store, add,
    wait or run (a label over a run of math, no bar of its own); ``gid`` names it for the tests."""
    row: str
    start: float
    end: float
    kind: str
    label: str = ""
    gid: str = ""
    tile: int = 0
    shade: int = -1      # the tile's colour (-1: by its number)


def _hopper(step: str) -> dict:
    """What the picture of ``step`` needs to know of its kernel, all read from the source and the registry."""
    from .studies import past_cublas
    if step not in STEPS:
        raise ValueError(f"no step {step!r}; the steps are {', '.join(STEPS)}")
    key = STEPS[step]
    v, sig = _signature(key)
    case = next(c for c in past_cublas.LADDER if c.key == key)      # the configuration chapter 16 measures
    config = v.resolve(**case.params)
    k = kernel_constants(v.source, **config)
    threads = _evaluate(sig.launch_bounds[0], k)
    cluster = _evaluate(sig.cluster_dims[0], k) if sig.cluster_dims else 1
    pingpong = bool(config.get("PINGPONG", 0))
    tile = (k["TM"], k["TN"]) if "TM" in k else (k["BM"], k["BN"])
    stage = k["STAGE"] if "TM" in k else k["STAGE_BYTES"]
    return dict(key=key, config=config, k=k, stages=k["STAGES"], threads=threads, consumers=threads // WARPGROUP - 1,
                cluster=cluster, pingpong=pingpong, tile=tile, stage_bytes=stage,
                a=(k["TM"] if "TM" in k else k["BM"], k["BK"]), b=(k["BK"], tile[1]))


def _block(pieces, stages, load, math, rows, epilogue, cta="0", flags=None, name="tile", shade=None,
           load_shade=-1):
    """The bars of one block whose consumers share each tile (tc/08-tc/11): ``pieces`` are (tile, k0, k1) in the
    block's order; ``rows`` = (producer, consumer rows..., epilogue); ``epilogue`` "regs" (the consumers store
    from registers, tc/08) or "tma" (boxes to shared memory, then the copy engine); ``flags`` (tc/11): tile ->
    when its first piece is in C, shared by the blocks, filled here and waited on. ``name``: what a tile is
    called in the labels (tc/10: a pair of tiles, one a CTA); ``shade``: tile -> its colour, where not its number;
    ``load_shade``: the loads' colour (tc/10: the CTA's, -1: the plain one)."""
    shade = shade or {}
    producer, *consumers, out = rows
    bars, release, prod, free, it = [], [], 0.0, 0.0, 0
    pending = None                          # (tile, when its store is written): tc/11's flag, raised at settle

    def settle(now):
        nonlocal pending
        if pending is not None and flags is not None:
            flags[pending[0]] = max(now, pending[1])
            now = max(now, pending[1])
        pending = None
        return now

    for tile, k0, k1 in pieces:
        run = free
        for kt in range(k0, k1):
            s = it % stages
            start = max(prod, release[it - stages] if it >= stages else 0.0)
            prod = start + load
            bars.append(Bar(producer, start, prod, "load", str(s), f"load:{cta}:{tile}:{kt}:{s}", tile, load_shade))
            begin = max(free, prod)
            free = begin + math
            if kt == k0:
                run = begin
            for c, row in enumerate(consumers):
                bars.append(Bar(row, begin, free, "math", "", f"math:{cta}:{c}:{tile}:{kt}", tile,
                                shade.get(tile, -1)))
            release.append(free)
            it += 1
        for row in consumers:
            bars.append(Bar(row, run, free, "run", f"{name} {tile}", f"run:{cta}:{tile}", tile, shade.get(tile, -1)))
        free = settle(free)
        if epilogue == "regs":
            for row in consumers:
                bars.append(Bar(row, free, free + _REGS, "regs", "", f"regs:{cta}:{tile}", tile))
            bars.append(Bar(out, free, free + _REGS, "global", f"{name} {tile}", f"global:{cta}:{tile}", tile))
            free += _REGS
            continue
        add = flags is not None and k0 > 0
        if add:                                         # wait for the first piece's flag, then add to it
            ready = flags[tile]
            if ready > free:
                for row in consumers:
                    bars.append(Bar(row, free, ready, "wait", "", f"wait:{cta}:{tile}", tile))
                free = ready
        for row in consumers:
            bars.append(Bar(row, free, free + _SMEM, "smem", "", f"smem:{cta}:{tile}", tile))
        kind, text = ("add", f"+ {name} {tile}") if add else ("store", f"{name} {tile}")
        bars.append(Bar(out, free, free + _COPY, kind, text, f"{kind}:{cta}:{tile}", tile))
        if flags is not None and k0 == 0 and k1 < SLICES:           # a first piece that others add to
            pending = (tile, free + _COPY)
        free += _SMEM
    settle(free)
    return bars


def _stream_k_walk(block: int, tiles: int, kt: int, dp_tiles: int, sk_blocks: int, blocks: int) -> list:
    """tc/11's ``walk``: the (tile, k0, k1) pieces of ``block``, as the kernel orders them: its whole tiles, then its
    run of the tail's slices, last piece first."""
    pieces = [(t, 0, kt) for t in range(block, dp_tiles, blocks)]
    if block >= sk_blocks:
        return pieces
    slices = (tiles - dp_tiles) * kt
    lo, i = block * slices // sk_blocks, (block + 1) * slices // sk_blocks
    while i > lo:
        u = (i - 1) // kt
        k0, k1 = max(lo, u * kt) - u * kt, i - u * kt
        pieces.append((dp_tiles + u, k0, k1))
        i = u * kt + k0
    return pieces


def _pingpong(tiles, stages, load, math, rows):
    """tc/12 with PINGPONG 1: the block's tiles go to consumer 0, 1, 0, ...; a consumer starts its tile once the
    other has issued the one before (the named barriers), and stores while the other multiplies."""
    producer, *consumers, out = rows
    bars, release, prod, it = [], [], 0.0, 0
    free, issued = [0.0] * len(consumers), 0.0
    for tile in range(tiles):
        c = tile % len(consumers)
        row = consumers[c]
        begin_tile = None
        for kt in range(SLICES):
            s = it % stages
            start = max(prod, release[it - stages] if it >= stages else 0.0)
            prod = start + load
            bars.append(Bar(producer, start, prod, "load", str(s), f"load:0:{tile}:{kt}:{s}", tile))
            begin = max(free[c], prod, issued)
            free[c] = begin + math
            issued = free[c]
            begin_tile = begin if begin_tile is None else begin_tile
            bars.append(Bar(row, begin, free[c], "math", "", f"math:0:{c}:{tile}:{kt}", tile))
            release.append(free[c])
            it += 1
        bars.append(Bar(row, begin_tile, free[c], "run", f"tile {tile}", f"run:0:{tile}", tile))
        smem, copy = _SMEM * math, _COPY * math         # half a tile of tc/09's: half the bytes
        bars.append(Bar(row, free[c], free[c] + smem, "smem", "", f"smem:0:{tile}", tile))
        bars.append(Bar(out, free[c], free[c] + copy, "store", f"tile {tile}", f"store:0:{tile}", tile))
        free[c] += smem
    return bars


_TILE_COLOURS = (("#fdd0a2", "black"), ("#f16913", "black"), ("#7f2704", "white"))   # light, middle, dark in grey
_CTA_COLOURS = ("#c6dbef", "#6baed6")                     # a cluster's CTA 0 and 1: light and middle in grey
_STYLE = {
    "load": dict(facecolor="#c6dbef", edgecolor="#08306b", lw=0.6),
    "regs": dict(facecolor="#d9d9d9", edgecolor="#252525", hatch="////", lw=0.6),
    "smem": dict(facecolor="#f0f0f0", edgecolor="#252525", hatch="....", lw=0.6),
    "global": dict(facecolor="#969696", edgecolor="black", lw=0.6),
    "store": dict(facecolor="#525252", edgecolor="black", lw=0.6),
    "add": dict(facecolor="#bdbdbd", edgecolor="black", lw=1.2),
    "wait": dict(facecolor="white", edgecolor="#525252", ls="--", lw=0.9),
}
_LEGEND = {"load": "TMA load (digit: its stage)", "math": "wgmma, one k-slice (shade: tile)",
           "regs": "the consumers storing C", "global": "the tile to C from registers (st.global)",
           "smem": "accumulators → shared memory",
           "store": "TMA store of the tile", "add": "TMA store .add: + its partial sum",
           "wait": "waits for the first piece's flag"}


def timeline(step: str = "tc/09"):
    """Chapter 16: one persistent block of ``step`` ("tc/08" ... "tc/12") over a few consecutive tiles, schematic
    (the order of the work, not measured times): its producer's TMA loads into the ring of STAGES stages (each bar
    labelled with its stage), each consumer warpgroup's wgmma k-slices, and the epilogue. tc/08: the consumers
    store C from registers and the next tile waits for it; tc/09 on: boxes through shared memory, written to C by
    the copy engine behind the next tile; tc/10: the two blocks of a cluster, each loading half of B for both;
    tc/11: the last round's tiles cut along K over the blocks, the first piece of a tile stored and the others
    added to it; tc/12: two 128 x 128 consumers taking the tiles in turn. Tile shapes, STAGES, consumers and
    cluster size are read from the kernel and its registry entry (tc/09's STAGES: the configuration that chapter
    16's study measures)."""
    import matplotlib.pyplot as plt
    h = _hopper(step)
    BM, BN = h["tile"]
    n, stages, key = h["consumers"], h["stages"], h["key"]
    rows_per = h["k"]["BM"] // n
    load = _LOAD * h["stage_bytes"] / h["k"]["STAGE_BYTES"]
    rows = []
    if h["pingpong"]:
        rows = (["producer\n(TMA loads)"] + [f"consumer {c}\n{BM} x {BN}: tiles {c}, {c + n}, …" for c in range(n)]
                + ["epilogue\n(TMA stores)"])
        # one consumer's slice is half a BM x BN tile's of tc/09: half the tensor cores' time
        bars = _pingpong(4, stages, load, BM * BN / (h["k"]["BM"] * h["k"]["BN"]), rows)
        title = (f"{key} (PINGPONG = {h['config']['PINGPONG']}): {BM} x {BN} tiles taken in turn by {n} consumers, "
                 f"STAGES = {stages}\none consumer's epilogue behind the other's math")
    elif step == "tc/11":
        blocks, tiles = 3, 5
        flags, bars = {}, []
        shade = {t: 0 if t < blocks else 1 + (t - blocks) % 2 for t in range(tiles)}   # the tail's tiles darker
        for b in range(blocks):
            names = [f"block {b} producer", f"block {b} consumers\n({n} x {rows_per} rows)", f"block {b} epilogue"]
            rows += names
            pieces = _stream_k_walk(b, tiles, SLICES, blocks, blocks, blocks)
            bars += _block(pieces, stages, load, 1.0, names, "tma", str(b), flags, shade=shade)
        title = (f"{key}: {blocks} blocks (schematic), tiles 0-{blocks - 1} whole, tiles {blocks}-{tiles - 1} "
                 f"cut along K\n({SLICES} slices each) into one run a block; {BM} x {BN} tiles, STAGES = {stages}")
    else:
        bars, roles = [], []
        for r in range(h["cluster"]):
            who = f"CTA {r} " if h["cluster"] > 1 else ""
            names = ([f"{who}producer\n(TMA loads)"]
                     + [f"{who}consumer {c}\nrows {c * rows_per}-{(c + 1) * rows_per - 1}" for c in range(n)]
                     + [f"{who}epilogue\n" + ("(registers → C)" if step == "tc/08" else "(TMA stores)")])
            roles.append(names)
            # a CTA of a cluster loads its A and its share of B (for every CTA of the cluster)
            cta_load = load * (h["k"]["A_BYTES"] + h["k"]["B_BYTES"] / h["cluster"]) / h["k"]["STAGE_BYTES"]
            pairs = h["cluster"] > 1
            bars += _block([(t, 0, SLICES) for t in range(3)], stages, cta_load, 1.0, names,
                           "regs" if step == "tc/08" else "tma", str(r), name="pair" if pairs else "tile",
                           load_shade=r if pairs else -1)
        # the producers together (a cluster's copies feed both), then each CTA's consumers, then the epilogues
        rows = ([names[0] for names in roles] + [r for names in roles for r in names[1:-1]]
                + [names[-1] for names in roles])
        what = {"tc/08": "the consumers store C from registers; their next tile waits",
                "tc/09": "the copy engine stores C behind the next tile",
                "tc/10": f"clusters of {h['cluster']}: each CTA loads its A and 1/{h['cluster']} of B for both"}[step]
        title = (f"{key}: persistent, {BM} x {BN} tiles, {n} consumers of {rows_per} rows, STAGES = {stages}\n"
                 f"{what}")
    ring_rows = h["cluster"]
    fig = plt.figure(figsize=(WIDTH, 1.6 + 0.55 * ring_rows + 0.44 * len(rows)), layout="constrained")
    ring_ax, ax = fig.subplots(2, 1, height_ratios=[0.55 * ring_rows, 0.44 * len(rows)])
    _draw_ring(ring_ax, h)
    _draw_bars(ax, rows, bars)
    if step == "tc/10":
        _draw_multicast(fig, ring_ax, ax, rows, bars, h)
    fig.suptitle(title, fontsize=10)
    return fig


def _draw_ring(ax, h):
    """The ring of stages in shared memory: a slot per stage (gid slot:<cta>:<s>); for a cluster, each slot's
    parts of B coloured by the block whose multicast copy fills them."""
    from matplotlib.patches import Rectangle
    stages, cluster = h["stages"], h["cluster"]
    (am, ak), (bk, bn) = h["a"], h["b"]
    for r in range(cluster):
        y = r * 1.2
        for s in range(stages):
            ax.add_patch(Rectangle((s, y), 0.92, 1, facecolor="#c6dbef" if cluster == 1 else "white",
                                   edgecolor="#08306b", lw=1.2, gid=f"slot:{r}:{s}"))
            if cluster == 1:
                ax.text(s + 0.46, y + 0.5, f"stage {s}", ha="center", va="center", fontsize=FONT)
                continue
            a_part = 0.92 * h["k"]["A_BYTES"] / h["k"]["STAGE_BYTES"]
            part = (0.92 - a_part) / cluster
            ax.text(s + a_part / 2, y + 0.5, f"{s}", ha="center", va="center", fontsize=FONT)
            for q in range(cluster):
                ax.add_patch(Rectangle((s + a_part + q * part, y), part, 1,
                                       facecolor=_CTA_COLOURS[q % len(_CTA_COLOURS)], edgecolor="#08306b", lw=0.6,
                                       gid=f"part:{r}:{s}:{q}"))
        if cluster > 1:
            ax.text(-0.1, y + 0.5, f"CTA {r}", ha="right", va="center", fontsize=FONT)
    ax.set_xlim(-0.9 if cluster > 1 else 0, stages + (3.6 if cluster > 1 else 0))
    ax.set_ylim(cluster * 1.2, -0.2)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    kib = h["stage_bytes"] // 1024
    if cluster > 1:
        from matplotlib.patches import Patch
        half = bn // cluster
        handles = [Patch(facecolor="white", edgecolor="#08306b", label=f"A {am} x {ak}: own")]
        handles += [Patch(facecolor=_CTA_COLOURS[q % len(_CTA_COLOURS)], edgecolor="#08306b",
                          label=f"B cols {q * half}-{(q + 1) * half - 1}: CTA {q}'s load") for q in range(cluster)]
        ax.legend(handles=handles, loc="center right", fontsize=FONT, frameon=False, handlelength=1.5)
        ax.set_title(f"each CTA's ring: {stages} stages of A {am} x {ak} + B {bk} x {bn} ({kib} KiB); one multicast "
                     "copy fills both", fontsize=FONT)
    else:
        ax.set_title(f"the block's ring in shared memory: {stages} stages, each A {am} x {ak} + B {bk} x {bn} "
                     f"({kib} KiB)", fontsize=FONT)


def _draw_bars(ax, rows, bars):
    from matplotlib.patches import Patch, Rectangle
    y = {row: i for i, row in enumerate(rows)}
    kinds = []
    for b in bars:
        if b.kind != "run" and b.kind not in kinds:
            kinds.append(b.kind)
        face, ink = _TILE_COLOURS[(b.shade if b.shade >= 0 else b.tile) % len(_TILE_COLOURS)]
        if b.kind == "run":
            ax.text((b.start + b.end) / 2, y[b.row], b.label, ha="center", va="center", fontsize=FONT, color=ink,
                    gid=b.gid)
            continue
        style = dict(facecolor=face, edgecolor="white", lw=0.8) if b.kind == "math" else _STYLE[b.kind]
        if b.kind == "load" and b.shade >= 0:                   # a cluster's CTA: the colour of its share of B
            style = {**style, "facecolor": _CTA_COLOURS[b.shade % len(_CTA_COLOURS)]}
        ax.add_patch(Rectangle((b.start, y[b.row] - 0.34), b.end - b.start, 0.68, gid=b.gid, **style))
        if b.label:
            ink = "white" if b.kind == "store" else "black"
            ax.text((b.start + b.end) / 2, y[b.row], b.label, ha="center", va="center", fontsize=FONT, color=ink,
                    gid="label:" + b.gid)
    end = max(b.end for b in bars)
    ax.set_xlim(-0.2, end + 0.2)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), rows, fontsize=FONT)
    ax.set_xticks([])
    ax.set_xlabel("time →  (schematic: the order of the work, not measured)", fontsize=FONT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = [Patch(label=_LEGEND[k], **(dict(facecolor=_TILE_COLOURS[1][0]) if k == "math" else _STYLE[k]))
               for k in kinds]
    ax.figure.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=FONT, frameon=False,
                     handlelength=1.5)


def _draw_multicast(fig, ring_ax, ax, rows, bars, h):
    """tc/10: arrows from CTA 0's first load to the part of B it fills in both CTAs' stage 0."""
    from matplotlib.patches import ConnectionPatch
    y = {row: i for i, row in enumerate(rows)}
    a_part = 0.92 * h["k"]["A_BYTES"] / h["k"]["STAGE_BYTES"]
    part = (0.92 - a_part) / h["cluster"]
    for r in range(1):                                          # CTA 0's first copy (CTA 1's: the same, mirrored)
        first = next(b for b in bars if b.kind == "load" and b.gid.startswith(f"load:{r}:"))
        for peer in range(h["cluster"]):
            fig.add_artist(ConnectionPatch(
                xyA=((first.start + first.end) / 2, y[first.row] - 0.34), coordsA=ax.transData,
                xyB=(a_part + (r + 0.5) * part, peer * 1.2 + 1), coordsB=ring_ax.transData,
                arrowstyle="->", color="#08519c", lw=1.2, gid=f"multicast:{r}:{peer}"))


# --- chapter 15: the 128-byte swizzle --------------------------------------------------------------

CHUNK = 16           # bytes: the swizzle moves 16-byte chunks whole
SPAN = 128           # bytes: a row of CU_TENSOR_MAP_SWIZZLE_128B (its chunks: 8, and 8 rows to an atom, 1 KiB)
BANKS, BANK_BYTES = 32, 4


def swizzle128_chunk(row: int, chunk: int) -> int:
    """Chapter 15: where the 128-byte swizzle (CU_TENSOR_MAP_SWIZZLE_128B, which the TMA copies write and wgmma's
    descriptors read) puts chunk ``chunk`` (0-7, 16 bytes each) of row ``row`` of a 1024-byte-aligned tile of
    128-byte rows: at chunk ``chunk XOR (row % 8)`` of the same row. The XOR is its own inverse, so the same
    function says which logical chunk a physical one holds."""
    per = SPAN // CHUNK
    for name, value in (("row", row), ("chunk", chunk)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an int, got {value!r}")
    if row < 0:
        raise ValueError(f"row must be 0 or more, got {row}")
    if not 0 <= chunk < per:
        raise ValueError(f"a {SPAN}-byte row has chunks 0..{per - 1}, got chunk={chunk}")
    return chunk ^ (row % per)


def swizzle128(chunk: int = 0):
    """Chapter 15: eight rows of A's tile in shared memory, each 128-byte row as eight 16-byte chunks, without a
    swizzle (left) and as the TMA writes it with CU_TENSOR_MAP_SWIZZLE_128B (right): each cell shows which logical
    chunk lies there (:func:`swizzle128_chunk`), the columns are the shared-memory bank groups (chunk p: banks 4p
    to 4p + 3). Logical chunk ``chunk`` of the eight rows, shaded, falls in one bank group unswizzled (eight
    rows read together: an 8-way conflict) and in eight different ones swizzled. A's tile (BM x BK, its element
    size) is read from common/wgmma.cuh."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    k = kernel_constants("common/wgmma.cuh")
    per, lanes = SPAN // CHUNK, CHUNK // BANK_BYTES
    elem = k["A_BYTES"] // (k["BM"] * k["BK"])
    if k["BK"] * elem != SPAN:
        raise ValueError(f"A's rows are {k['BK'] * elem} bytes in common/wgmma.cuh, not one {SPAN}-byte swizzle row")
    swizzle128_chunk(0, chunk)
    fig = plt.figure(figsize=(WIDTH, 5.0), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, swizzled in zip(axes, (False, True)):
        where = set()
        for r in range(per):
            for p in range(per):
                logical = swizzle128_chunk(r, p) if swizzled else p
                mark = logical == chunk
                if mark:
                    where.add(p)
                ax.add_patch(Rectangle((p, r), 1, 1, facecolor="#08306b" if mark else "#deebf7", edgecolor="white",
                                       lw=1.5, gid=f"cell:{int(swizzled)}:{r}:{p}:{logical}"))
                ax.text(p + 0.5, r + 0.5, str(logical), ha="center", va="center", fontsize=FONT + 1,
                        color="white" if mark else "black", gid=f"chunk:{int(swizzled)}:{r}:{p}")
        ax.set_xlim(0, per)
        ax.set_ylim(per, 0)
        ax.set_aspect("equal")
        ax.xaxis.tick_top()
        ax.xaxis.set_label_position("top")
        ax.set_xticks([p + 0.5 for p in range(per)], [f"{lanes * p}-{lanes * p + lanes - 1}" for p in range(per)],
                      fontsize=FONT, rotation=90)
        ax.set_xlabel("banks (16-byte chunk p: banks 4p to 4p + 3)", fontsize=FONT)
        ax.set_yticks([r + 0.5 for r in range(per)], [f"row {r}" for r in range(per)], fontsize=FONT)
        ax.tick_params(length=0)
        verdict = (f"{per} bank groups: no conflict" if len(where) == per else
                   f"{len(where)} bank group{'s' * (len(where) > 1)}: {per // len(where)}-way conflict")
        ax.text(0.5, -0.03, ("128-byte swizzle: chunk j at j XOR (row % 8)" if swizzled else "no swizzle: chunk j at j")
                + f"\nchunk {chunk} of rows 0-{per - 1}: {verdict}", transform=ax.transAxes, ha="center", va="top",
                fontsize=FONT, gid=f"verdict:{int(swizzled)}")
    values = SPAN // elem // per                                 # values of A in a chunk: 8 FP16 or BF16
    fig.suptitle(f"A's tile of tc/06-tc/12 in shared memory: {k['BM']} x {k['BK']} values of {elem} bytes,\n"
                 f"rows of {SPAN} bytes = {per} chunks of {CHUNK} bytes; each cell: the logical chunk\n"
                 f"(values {values} j to {values} j + {values - 1} of its row) stored there", fontsize=10)
    return fig


# --- chapter 13: warp tiling -----------------------------------------------------------------------

def warp_tiled_variants() -> list:
    """The registry keys of chapter 13's warp-tiled SGEMM kernels (row-major, common/sgemm_tiles.cuh's tiling)."""
    return [v.key for v in registry.VARIANTS if v.chapter == "13-sgemm-climb" and v.layout == "row"
            and {"BM", "BN", "WM", "WN"} <= set(v.params)]


def warp_geometry(variant: str = "sgemm/12_interior", **params) -> dict:
    """A warp-tiled kernel's tiling from its registry entry (defaults, or ``params``): BM, BN, BK, WM, WN, lanes
    as LR x LC (its LANES, else common/sgemm_tiles.cuh's default LANE_ROWS), MI x NI sub-tiles of 4 x 4 a lane,
    warps, and the block's threads from the registry's launch geometry."""
    from . import ops
    known = warp_tiled_variants()
    if variant not in known:
        raise ValueError(f"no warp-tiled variant {variant!r}; chapter 13's are {', '.join(known)}")
    v = registry.get(variant)
    c = v.resolve(**params)
    header = strip_comments((KERNELS / "common/sgemm_tiles.cuh").read_text())
    lr = c.get("LANES") or int(re.search(r"\bint\s+LANE_ROWS\s*=\s*(\d+)", header).group(1))
    lc = WARP // lr
    _, block, _ = v.launch(ops.Gemm.square(c["BM"] * c["BN"]), c)
    return dict(key=variant, config=c, BM=c["BM"], BN=c["BN"], BK=c["BK"], WM=c["WM"], WN=c["WN"], LR=lr, LC=lc,
                MI=c["WM"] // (4 * lr), NI=c["WN"] // (4 * lc), warps=(c["BM"] // c["WM"]) * (c["BN"] // c["WN"]),
                threads=registry.block_threads(block))


def warp_tiling(variant: str = "sgemm/12_interior", warp: int = 0, **params):
    """Chapter 13: a block's BM x BN tile of C divided among its warps (left; warp ``warp`` shaded), and that
    warp's WM x WN tile among its 32 lanes (right): each 4 x 4 sub-tile labelled with the lane that computes it
    (common/sgemm_tiles.cuh: lanes as LR x LC, every lane's sub-tile repeated every 4 LR rows and 4 LC columns),
    lane 0's outlined. ``variant``: one of :func:`warp_tiled_variants`, at its registry defaults or ``params``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import ConnectionPatch, Rectangle
    g = warp_geometry(variant, **params)
    BM, BN, WM, WN, LR, LC = g["BM"], g["BN"], g["WM"], g["WN"], g["LR"], g["LC"]
    if not (isinstance(warp, int) and 0 <= warp < g["warps"]):
        raise ValueError(f"warp must be 0..{g['warps'] - 1} for {variant}'s {BM} x {BN} block, got {warp!r}")
    height = max(2.6, 0.24 * (WM // 4))                            # a sub-tile's cell: 0.24 in, room for a lane
    fig = plt.figure(figsize=(WIDTH, height + 1.3), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
    wm0, wn0 = tilemap.warp_corner(BM, BN, WM, WN, warp, LR)
    for w in range(g["warps"]):
        r, c = tilemap.warp_corner(BM, BN, WM, WN, w, LR)
        mine = w == warp
        left.add_patch(Rectangle((c, r), WN, WM, facecolor="#6baed6" if mine else "#f0f0f0", edgecolor="black",
                                 lw=1.2, gid=f"warp:{w}"))
        left.text(c + WN / 2, r + WM / 2, f"warp {w}", ha="center", va="center", fontsize=FONT)
    left.set_xlim(0, BN)
    left.set_ylim(BM, 0)
    left.set_aspect("equal")
    left.set_xticks(range(0, BN + 1, WN))
    left.set_yticks(range(0, BM + 1, WM))
    left.tick_params(labelsize=FONT)
    left.set_title(f"block tile {BM} x {BN}: {g['warps']} warps\nof {WM} x {WN}", fontsize=FONT)
    shades = ("#deebf7", "#9ecae1", "#4292c6", "#08519c")            # a lane's row of lanes: light to dark in grey
    for lane in range(WARP):
        face = shades[(lane // LC) % len(shades)]
        ink = "white" if (lane // LC) % len(shades) >= 2 else "black"
        rows = tilemap.lane_as_cols(BM, BN, WM, WN, warp, lane, LR)[::4]        # its sub-tiles' first rows ...
        cols = tilemap.lane_bs_cols(BM, BN, WM, WN, warp, lane, LR)[::4]        # ... and first columns
        for r in (r - wm0 for r in rows):
            for c in (c - wn0 for c in cols):
                right.add_patch(Rectangle((c, r), 4, 4, facecolor=face, edgecolor="white", lw=0.8,
                                          gid=f"lane:{lane}:{wm0 + r}:{wn0 + c}"))
                right.text(c + 2, r + 2, str(lane), ha="center", va="center", fontsize=FONT, color=ink)
                if lane == 0:
                    right.add_patch(Rectangle((c, r), 4, 4, fill=False, edgecolor="#d94801", lw=2.2))
    for r in range(0, WM + 1, 4 * LR):
        right.axhline(r, color="black", lw=1.4)
    for c in range(0, WN + 1, 4 * LC):
        right.axvline(c, color="black", lw=1.4)
    right.set_xlim(0, WN)
    right.set_ylim(WM, 0)
    right.set_aspect("equal")
    right.set_xticks(range(0, WN + 1, 4 * LC))
    right.set_yticks(range(0, WM + 1, 4 * LR))
    right.tick_params(labelsize=FONT)
    right.set_title(f"warp {warp}: each cell a 4 x 4 sub-tile, with its lane;\nlanes as {LR} x {LC}, repeated "
                    f"{g['MI']} x {g['NI']} times (lane 0 outlined)", fontsize=FONT, pad=10)
    for (x0, y0), (x1, y1) in (((wn0 + WN, wm0), (0, 0)), ((wn0 + WN, wm0 + WM), (0, WM))):
        fig.add_artist(ConnectionPatch(xyA=(x0, y0), coordsA=left.transData, xyB=(x1, y1), coordsB=right.transData,
                                       color="#525252", lw=0.8, ls="--"))
    fig.suptitle(f"{variant}: BM x BN = {BM} x {BN}, BK = {g['BK']}, WM x WN = {WM} x {WN}: {g['threads']} threads; "
                 f"\na lane computes {g['MI']} x {g['NI']} sub-tiles of 4 x 4 = {g['MI'] * 4} x {g['NI'] * 4} "
                 "values of C", fontsize=10)
    return fig
