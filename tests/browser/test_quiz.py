"""The tile map's quiz in headless Chromium: a right answer, clicked, is called right; a wrong one is not.
The page is the explorer on its own (gl.explorers.tilemap_trainer(3)), offline."""
import json

import pytest

import gemmlab as gl
from gemmlab import tilemap


def _page(browser, tmp_path, seed):
    html = tmp_path / f"quiz-{seed}.html"
    html.write_text("<html><body style='width:760px'>" + gl.explorers.tilemap_trainer(3, seed=seed)._repr_html_()
                    + "</body></html>")
    context = browser.new_context(viewport={"width": 900, "height": 900})
    context.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri())
    return page, errors


def _answer(page, q, right: bool):
    root = page.locator(".gl-explorer")
    if q["kind"] == "tiles":
        a = tilemap.TileMap(q["n"], q["tile"]).a_tile(q["bi"], q["bj"], q["p"])
        b = tilemap.TileMap(q["n"], q["tile"]).b_tile(q["bi"], q["bj"], q["p"])
        if not right:
            a = ((a[0] + 1) % q["t"], a[1])
        root.locator(f"[data-cell='A:{a[0]},{a[1]}']").click()
        root.locator(f"[data-cell='B:{b[0]},{b[1]}']").click()
    else:
        cells = tilemap.thread_outputs(q["T"], q["RM"], q["RN"], q["tx"], q["ty"])
        for r, c in (cells if right else cells[:-1]):
            root.locator(f"[data-cell='C:{r},{c}']").click()
    root.get_by_role("button", name="check my answer").click()
    return root.get_attribute("data-quiz-verdict")


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8])
def test_the_quiz_checks_answers(chromium, tmp_path, seed):
    page, errors = _page(chromium, tmp_path, seed)
    root = page.locator(".gl-explorer")
    kinds = set()
    for question in range(3):
        q = json.loads(root.get_attribute("data-quiz"))
        kinds.add(q["kind"])
        assert _answer(page, q, right=True) == "right", q
        assert "right:" in root.locator(".gl-readout").inner_text()
        root.get_by_role("button", name="new question").click()
        q = json.loads(root.get_attribute("data-quiz"))
        assert _answer(page, q, right=False) == "wrong", q
        assert "not quite" in root.locator(".gl-readout").inner_text()
        root.get_by_role("button", name="new question").click()
    assert not errors, errors


def test_the_quiz_asks_both_kinds_of_question(chromium, tmp_path):
    page, _ = _page(chromium, tmp_path, 1)
    root = page.locator(".gl-explorer")
    kinds = set()
    for _ in range(12):
        kinds.add(json.loads(root.get_attribute("data-quiz"))["kind"])
        root.get_by_role("button", name="new question").click()
    assert kinds == {"tiles", "owner"}
