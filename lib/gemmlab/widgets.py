"""Live controls for the chapters (ipywidgets): change a tile size, see the kernel's rate.

On a GPU, moving the control checks and times the chosen configuration at N = 4096 against cuBLAS
(a few seconds). Without a GPU it shows the rate recorded for that configuration on the H200 and
says so. (The explorers that also work in the static book come with their own chapter tooling.)
"""
from __future__ import annotations

from . import hardware as hw
from . import ladder


def sweep_control(label: str, key: str, params: list, fixed: dict | None = None, reps: int = 5):
    """Sliders over ``params`` of one variant in a recorded sweep; returns the widget box."""
    import ipywidgets as W

    choices = [c for k, c in ladder.SWEEPS[label] if k == key]
    fixed = dict(fixed or {})
    first = next(c for c in choices if all(c[k] == v for k, v in fixed.items()))
    sliders = {p: W.SelectionSlider(options=sorted({c[p] for c in choices}), value=first[p], description=p,
                                    continuous_update=False) for p in params}
    out = W.Output()

    def update(_=None):
        config = {**first, **fixed, **{p: s.value for p, s in sliders.items()}}
        with out:
            out.clear_output(wait=True)
            if hw.on_gpu:
                t, _ = ladder.measure([(key, config)], reps=reps, label=f"{label} (live)", progress=False)
                row, lib = t.rows[0], t.library
                print(f"{ladder.case_name(key, config)}: {row.gflops:,.0f} GFLOP/s = {t.ratio(row.name):.1%} of "
                      f"cuBLAS ({lib.gflops:,.0f}), measured now on {t.environment['gpu']}")
            else:
                r = ladder.rate(label, key, config)
                env = ladder.recorded()["environment"]
                print(f"{ladder.case_name(key, config)}: {r:,.0f} GFLOP/s, recorded on {env['gpu']} "
                      f"{env['date'][:10]} (no GPU here)")

    for s in sliders.values():
        s.observe(update, names="value")
    update()
    return W.VBox([*sliders.values(), out])


def gemv_geometry_control(reps: int = 10):
    """Chapter 08's live control: the shared-x GEMV kernel's grid and block sizes, timed on a GPU."""
    import ipywidgets as W

    from . import blasbench, ops
    grids = [0, 128, 512, 2048]
    blocks = [128, 256, 512, 1024]
    grid = W.SelectionSlider(options=[("ceil(M/2B)", 0)] + [(str(g), g) for g in grids[1:]], value=512,
                             description="GRID", continuous_update=False)
    block = W.SelectionSlider(options=blocks, value=256, description="BLOCK", continuous_update=False)
    out = W.Output()

    def update(_=None):
        config = {"BLOCK": block.value, "GRID": grid.value}
        name = f"grid {config['GRID'] or 'ceil(M/2B)'} x block {config['BLOCK']}"
        with out:
            out.clear_output(wait=True)
            if hw.on_gpu:
                problem = ops.Gemv(m=4096, n=4096, layout="col")
                t, _ = ladder.measure_problem([("blas/gemv/01_shared_x", config)], problem, f"{name} (live)",
                                             reps=reps, progress=False, names=[name])
                r = t.rows[0]
                print(f"{name}: {r.gbs:,.0f} GB/s = {t.ratio(r.name):.1%} of cuBLAS ({t.library.gbs:,.0f} GB/s), "
                      f"measured now on {t.environment['gpu']}")
            else:
                rec = next(x for x in blasbench.recorded()["timings"] if x["label"].startswith("GEMV launch geometry"))
                r = next(x for x in rec["rows"] if x["name"] == name)
                print(f"{name}: {r['gbs']:,.0f} GB/s, recorded on {rec['environment']['gpu']} "
                      f"{rec['environment']['date'][:10]} (no GPU here)")

    grid.observe(update, names="value")
    block.observe(update, names="value")
    update()
    return W.VBox([grid, block, out])
