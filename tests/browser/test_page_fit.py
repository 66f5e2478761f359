"""Every page of the built book fits its column at a 1400 px window, as a reader sees it in headless Chromium:
no code, listing, output, table or figure wider than the column (nothing to scroll sideways, nothing cut off),
no table printed as text that wraps and loses its columns, no word broken inside, no two labels of an
explorer's drawing on top of each other, and nothing in the console.

Runs after `jupyter-book build` (make test's `browser` step)."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
PAGES = sorted([*(HTML / "chapters").glob("*.html"), *(HTML / "appendix").glob("*.html"), HTML / "index.html"])
# Every Jupyter Book 1 page reports this one (sphinx-thebe 0.3.1 declares the constant twice, upstream).
KNOWN_PAGE_ERRORS = ("THEBE_JS_URL",)


MEASURE = r"""
() => {
  const article = document.querySelector('article.bd-article');
  const column = article.getBoundingClientRect();
  const wide = [], tabular = [], broken = [], overlaps = [];
  const name = (el) => el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
                       ? '.' + String(el.className).split(' ')[0] : '');
  for (const el of article.querySelectorAll('pre, table, img, svg, .cell_output > .output, .gl-listing, .gl-table')) {
    const box = el.getBoundingClientRect();
    if (!box.width) continue;
    if (el.scrollWidth > el.clientWidth + 1 || box.right > column.right + 1)
      wide.push([name(el), Math.round(Math.max(el.scrollWidth - el.clientWidth, box.right - column.right)),
                 (el.innerText || el.getAttribute('src') || '').slice(0, 80)]);
  }
  // a printed table: three lines or more aligned in columns (runs of 3+ spaces) that the column made wrap
  for (const pre of article.querySelectorAll('.cell_output pre')) {
    const lines = pre.innerText.split('\n');
    const aligned = lines.filter((l) => /\S {3,}\S.* {3,}\S/.test(l));
    if (aligned.length < 3) continue;
    const style = getComputedStyle(pre);
    const lineHeight = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
    const shown = Math.round((pre.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom))
                             / lineHeight);
    if (shown > lines.length) tabular.push(aligned[0].slice(0, 80));
  }
  // words broken inside (not at a space or a hyphen) in explorers' readouts and printed outputs
  for (const root of article.querySelectorAll('.gl-explorer, .cell_output')) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const words = /[A-Za-z][A-Za-z0-9]{3,}/g;
      let m;
      while ((m = words.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  // explorers' drawings: no two labels on top of each other
  for (const svg of article.querySelectorAll('.gl-explorer svg')) {
    const boxes = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim())
      .map((t) => [t.textContent.trim(), t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, ra] = boxes[i], [b, rb] = boxes[j];
        const across = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
        const up = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
        if (across > 1 && up > 1) overlaps.push([a.slice(0, 30), b.slice(0, 30)]);
      }
  }
  return {wide, tabular, broken, overlaps};
}
"""


@pytest.fixture(scope="module")
def context(chromium):
    if not (HTML / "chapters").is_dir():
        pytest.fail("the book is not built: run `make build-strict` (make test does) before these tests")
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    yield context
    context.close()


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(HTML).as_posix())
def test_the_page_fits_its_column_at_1400_px(context, path):
    errors = []
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_timeout(200)
    found = page.evaluate(MEASURE)
    page.close()
    name = path.relative_to(HTML).as_posix()
    assert not found["wide"], f"{name}: wider than the column (element, px past it, text): {found['wide'][:6]}"
    assert not found["tabular"], f"{name}: a table printed as text wraps at the column: {found['tabular'][:3]}"
    assert not found["broken"], f"{name}: words broken across lines: {found['broken'][:6]}"
    assert not found["overlaps"], f"{name}: labels of a drawing overlap: {found['overlaps'][:6]}"
    errors = [e for e in errors if not any(k in e for k in KNOWN_PAGE_ERRORS)]
    assert not errors, f"{name}: console errors: {errors[:3]}"
