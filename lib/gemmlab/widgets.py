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
