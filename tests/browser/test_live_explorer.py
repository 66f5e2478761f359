"""The live sweep explorer's front end (the anywidget ESM of gemmlab.explorers.live) in Chromium.

A stand-in for the widget model plays the kernel's part: the test checks what the page asks the kernel
to run when the reader moves a slider or presses the button, and what it draws when an answer comes.
The Python side of the same exchange is tested in tests/test_explorers.py.
"""
import json

import pytest

from gemmlab import explorers
from gemmlab.explorers import live

FAKE_MODEL = """
const traits = { data: DATA, title: "live test", request: {}, results: {}, status: "live: a test page" };
const listeners = {};
window.sent = [];
const model = {
  get: (k) => traits[k],
  set: (k, v) => { traits[k] = v; },
  save_changes: () => window.sent.push(traits.request),
  on: (name, f) => (listeners[name] = listeners[name] || []).push(f),
  off: (name, f) => { listeners[name] = (listeners[name] || []).filter((g) => g !== f); },
};
window.answer = (row, value) => {     // what the kernel sends back
  traits.results = { ...traits.results, [row]: { value, summary: "measured now: " + value } };
  traits.status = "live: done";
  (listeners["change:results"] || []).forEach((f) => f());
  (listeners["change:status"] || []).forEach((f) => f());
};
"""


@pytest.fixture
def page(chromium):
    data = explorers.sweep_data("cache blocking")
    widget = live.ESM.replace("export default", "return")
    context = chromium.new_context()
    context.set_offline(True)
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_content(f"<div id='root'></div><style>{explorers.css()}</style><script>{explorers.script()}\n"
                   f"{FAKE_MODEL.replace('DATA', json.dumps(data))}\n"
                   f"window.cleanup = (function () {{ {widget} }})().render({{ model, el: document.getElementById('root') }});"
                   "</script>")
    yield pg, data
    assert not errors, errors
    context.close()


def row_of(data, config):
    return next(i for i, r in enumerate(data["rows"]) if r["params"] == config)


def test_letting_go_of_a_slider_asks_the_kernel_once_for_where_it_rests(page):
    pg, data = page
    ex = pg.locator(".gl-explorer")
    assert ex.get_attribute("data-explorer") == "sweep" and pg.locator(".gl-live").inner_text() == "live: a test page"
    tm = ex.locator("input[type=range]").first
    tm.focus()
    tm.press("ArrowLeft")
    tm.press("ArrowLeft")                        # two quick moves: one request, for the second position
    pg.wait_for_timeout(800)
    sent = pg.evaluate("window.sent")
    values = data["values"]["TM"]
    want = row_of(data, {"TM": values[values.index(data["start"]["TM"]) - 2], "TN": data["start"]["TN"]})
    assert [r["row"] for r in sent] == [want]
    assert ex.locator(".gl-bar-live").count() == 0
    pg.evaluate(f"window.answer({want}, 12345)")
    assert ex.locator(".gl-bar-live").count() == 1
    assert "this configuration, measured now: 12345" in pg.locator(".gl-live").inner_text()
    ex.get_by_role("button", name="run it here").click()      # run the same one again
    assert [r["row"] for r in pg.evaluate("window.sent")] == [want, want]
    assert len({r["n"] for r in pg.evaluate("window.sent")}) == 2   # a new request each time


def test_answers_for_other_configurations_show_as_bars_in_their_group(page):
    pg, data = page
    ex = pg.locator(".gl-explorer")
    same_tn = [i for i, r in enumerate(data["rows"]) if r["params"]["TN"] == data["start"]["TN"]]
    other_tn = next(i for i, r in enumerate(data["rows"]) if r["params"]["TN"] != data["start"]["TN"])
    pg.evaluate(f"window.answer({same_tn[0]}, 1000); window.answer({other_tn}, 2000)")
    assert ex.locator(".gl-bar-live").count() == 1          # only the chosen TN's group is drawn
    assert "this configuration" not in pg.locator(".gl-live").inner_text()
    pg.evaluate("window.cleanup()")                           # the view goes: it stops listening
    pg.evaluate(f"window.answer({same_tn[1]}, 3000)")
    assert ex.locator(".gl-bar-live").count() == 1
