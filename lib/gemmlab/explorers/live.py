"""The sweep explorer in a live notebook: the same front end, and the chosen configuration re-run here.

:class:`LiveSweep` is an anywidget whose JavaScript is the book's explorer (``explorers.js``, mounted
with a ``live`` hook). Moving a slider (or pressing "run it here") sends the chosen row to Python,
which runs it on this machine's backend:

- on a GPU, :func:`gemmlab.studies.core.measure_problem` checks it against float64 and then times it against
  cuBLAS on the recorded sweep's problem (median, L2 flushed): a green bar under the recorded one;
- on the CPU emulator it is checked against float64 at an awkward size (no timing: the emulator says
  nothing about speed) and the recorded bars stay what they are.

Its display bundle also carries the static explorer as ``text/html``: wherever widgets cannot draw (the
built book, a notebook opened without running it, the nbclient run that saves the chapters' outputs)
the reader still gets the recorded explorer. ``python -m gemmlab refresh`` keeps only that one.
"""
from __future__ import annotations

import functools

from .assets import css, script

REPS = 5          # repetitions of a live timing: a few seconds per configuration


def available() -> bool:
    """True in a notebook kernel (IPython with a kernel) that has anywidget installed."""
    import importlib.util
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    if importlib.util.find_spec("anywidget") is None:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def where() -> str:
    """One line on what a live run does on this machine."""
    from ..runtime import backend as hw
    if hw.on_gpu:
        from .. import record
        return (f"live on {record.environment()['gpu']}: the configuration you choose is checked against "
                "float64, then timed against cuBLAS (green bars: measured now)")
    return ("live on the CPU emulator (no GPU here): the configuration you choose is checked against float64 "
            "at a size that is no multiple of its tiles; timing it needs a GPU")


def run_row(which: str, data: dict, row: dict, reps: int = REPS) -> dict:
    """Run one row of a sweep here. Returns ``{"summary": ...}``, plus ``"value"`` when it was timed."""
    from ..studies import blas_steps as blasbench, ladder
    from .. import ops, registry
    from ..runtime import backend as hw
    from .sweeps import SWEEPS
    key, config = data["key"], row["config"]
    if not hw.on_gpu:       # the largest untransposed awkward problem: a real check, a second or so
        variant = registry.get(key)
        plain = [p for p in variant.awkward()
                 if getattr(p, "trans", "N") == getattr(p, "transa", "N") == getattr(p, "transb", "N") == "N"]
        problem = max(plain, key=lambda p: p.flops)
        result = variant.check(problem, **config)
        return {"summary": f"run on the CPU emulator at {problem.label}: {result}; not timed (no GPU), the bars "
                           f"are the {data['gpu']} recording"}
    problem = blasbench.problem("GEMV", 4096) if SWEEPS[which][0] == "blas" else ops.Gemm.square(ladder.N)
    t, _ = ladder.measure_problem([(key, config)], problem, f"{which} (live), {problem.label}", reps=reps,
                                  progress=False, names=[row["name"]])
    metric = data["metric"]
    unit = "GB/s" if metric == "gbs" else "GFLOP/s"
    value, lib = getattr(t.rows[0], metric), getattr(t.library, metric)
    return {"value": value, "cublas": lib,
            "summary": f"measured now on {t.environment['gpu']} at {problem.label}: {value:,.0f} {unit} = "
                       f"{value / lib:.1%} of cuBLAS ({lib:,.0f} {unit}); median of {reps}, L2 flushed, "
                       "checked against float64 first"}


ESM = """
export default {
  render({ model, el }) {
    const handlers = [];
    const live = {
      request(i) {
        model.set("request", { row: i, n: (model.get("request").n || 0) + 1 });
        model.save_changes();
      },
      result(i) { return model.get("results")[String(i)]; },
      status() { return model.get("status"); },
      onUpdate(f) {
        for (const name of ["change:results", "change:status"]) { model.on(name, f); handlers.push([name, f]); }
      },
    };
    globalThis.GLExplorers.mount(el, "sweep", model.get("data"), model.get("title"), live);
    return () => handlers.forEach(([name, f]) => model.off(name, f));
  },
};
"""


@functools.lru_cache(maxsize=None)
def _widget_class():
    try:
        import anywidget
    except ImportError as e:
        raise ImportError("the live explorer is an anywidget: pip install anywidget (a dependency of gemmlab), "
                          "or call sweep_explorer(..., live=False) for the recorded one") from e
    import traitlets

    class LiveSweepWidget(anywidget.AnyWidget):
        _esm = script() + "\n" + ESM
        _css = css()
        data = traitlets.Dict().tag(sync=True)
        title = traitlets.Unicode().tag(sync=True)
        request = traitlets.Dict().tag(sync=True)       # from the page: {"row": i, "n": a counter}
        results = traitlets.Dict().tag(sync=True)       # to the page: str(row) -> run_row's answer
        status = traitlets.Unicode().tag(sync=True)

        def __init__(self, which, data, title, static):
            super().__init__(data=data, title=title, status=where())
            self.which, self.static = which, static
            self.observe(self._on_request, names="request")

        def _on_request(self, change):
            i = change["new"].get("row")
            rows = self.data["rows"]
            if not isinstance(i, int) or not 0 <= i < len(rows):
                self.status = f"no row {i!r} in this sweep (it has {len(rows)})"
                return
            row = rows[i]
            self.status = f"running {row['name']} ..."
            try:
                answer = run_row(self.which, self.data, row)
            except Exception as e:          # shown in the explorer: the reader asked for this run
                self.status = f"{row['name']} failed: {type(e).__name__}: {e}"
                return
            self.results = {**self.results, str(i): answer}
            self.status = where()

        def _repr_mimebundle_(self, **kwargs):
            bundle, meta = super()._repr_mimebundle_(**kwargs)
            bundle["text/html"] = self.static._repr_html_()
            return bundle, meta

    return LiveSweepWidget


def LiveSweep(which: str, data: dict, title: str, static):  # noqa: N802
    """The live widget for a sweep (an anywidget.AnyWidget); ``static`` is the Explorer shown where widgets cannot draw."""
    return _widget_class()(which, data, title, static)
