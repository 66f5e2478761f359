"""The explorers work in the built book: headless Chromium, network off, each control moved.

Runs after `jupyter-book build` (make test's `browser` step). Screenshots go to _build/browser/.
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html" / "chapters"
SHOTS = ROOT / "_build" / "browser"
PAGES = {"01-roofline": ["roofline"], "02-naive-and-tiled": ["tilemap", "sweep"], "05-cache-blocking": ["sweep"],
         "06-register-tiling": ["tilemap", "sweep"], "08-gemv": ["sweep"]}
# Every Jupyter Book 1 page reports this one (sphinx-thebe 0.3.1 declares the constant twice, upstream).
KNOWN_PAGE_ERRORS = ("THEBE_JS_URL",)


@pytest.fixture(scope="module")
def browser(chromium):
    if not HTML.is_dir():
        pytest.fail("the book is not built: run `make build-strict` (make test does) before these tests")
    SHOTS.mkdir(parents=True, exist_ok=True)
    return chromium


def _luminance(rgb: str) -> float:
    r, g, b = (int(float(x)) / 255 for x in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(fg: str, bg: str) -> float:
    a, b = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def state(explorer):
    return explorer.locator(".gl-readout").inner_text(), explorer.locator("svg").first.inner_html()


@pytest.mark.parametrize("page_name", PAGES)
def test_explorers_respond_offline(browser, page_name):
    context = browser.new_context(viewport={"width": 1200, "height": 1600})
    blocked, errors = [], []
    context.route("**/*", lambda route: (blocked.append(route.request.url), route.abort())
                  if not route.request.url.startswith("file:") else route.continue_())
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((HTML / f"{page_name}.html").as_uri())
    explorers = page.locator(".gl-explorer")
    kinds = [explorers.nth(i).get_attribute("data-explorer") for i in range(explorers.count())]
    assert kinds == PAGES[page_name], f"explorers on the page: {kinds}"
    assert page.get_by_text("an interactive explorer, drawn by its script").count() == 0, "a placeholder stayed"
    for i, kind in enumerate(kinds):
        ex = explorers.nth(i)
        ex.scroll_into_view_if_needed()
        before = state(ex)
        assert before[0].strip() and "<" in before[1], f"{kind} drew nothing"
        ex.screenshot(path=str(SHOTS / f"{page_name}-{kind}-{i}-before.png"))
        sliders = ex.locator("input[type=range]:visible")
        assert sliders.count() > 0
        for j in range(sliders.count()):           # keyboard only: focus each slider, press arrows
            s = sliders.nth(j)
            s.focus()
            start = s.input_value()
            s.press("ArrowRight")
            if s.input_value() == start:
                s.press("ArrowLeft")
            after = state(ex)
            assert s.input_value() != start, f"{kind}: slider {j} did not move"
            assert after != before, f"{kind}: moving slider {j} changed neither the numbers nor the picture"
            before = after
        ex.screenshot(path=str(SHOTS / f"{page_name}-{kind}-{i}-after.png"))
    for theme in ("light", "dark"):                # readable in both themes: WCAG contrast of at least 4.5
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        explorers.first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{page_name}-{theme}.png"))
        for i in range(explorers.count()):
            fg, bg = explorers.nth(i).evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
            assert contrast(fg, bg) >= 4.5, (theme, fg, bg)
    real_errors = [e for e in errors if not any(k in e for k in KNOWN_PAGE_ERRORS)]
    assert not real_errors, real_errors
    assert page.locator("mjx-container").count() > 0, "the formulas were not rendered (MathJax comes from the sphinx-mathjax-offline package)"
    assert not blocked, f"the page asked the network for {sorted(set(blocked))}: it must need only its own files"
    context.close()


def test_the_explorers_need_nothing_from_the_network(browser):
    """The explorers' code and data are in the page itself (checked on the roofline page)."""
    context = browser.new_context()
    context.set_offline(True)
    page = context.new_page()
    page.goto((HTML / "01-roofline.html").as_uri())
    ex = page.locator(".gl-explorer").first
    before = state(ex)
    ex.locator("select").nth(1).select_option(index=0)          # operation: DOT
    assert state(ex) != before and "DOT" in state(ex)[0]
    context.close()
