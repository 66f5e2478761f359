"""The roofline calculator's point labels in headless Chromium: none overlaps another label or a point, and
each stays inside the chart's frame, for every GPU and operation the calculator offers."""
import gemmlab as gl

BOXES = """(svg) => {
  const box = (e) => { const b = e.getBBox(); return [b.x, b.y, b.width, b.height]; };
  return {
    labels: [...svg.querySelectorAll("text.gl-point-label")].map((e) => [e.textContent, ...box(e)]),
    points: [...svg.querySelectorAll("circle.gl-measured, circle.gl-point")].map(box),
    frame: box(svg.querySelector("rect.gl-frame")),
  };
}"""


def _overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def test_point_labels_do_not_overlap(chromium, tmp_path):
    html = tmp_path / "roofline.html"
    html.write_text("<html><body style='width:760px'>" + gl.explorers.roofline_calculator()._repr_html_() + "</body></html>")
    page = chromium.new_context(viewport={"width": 900, "height": 900}).new_page()
    page.goto(html.as_uri())
    root = page.locator(".gl-explorer")
    gpus = root.locator("select").first.locator("option").count()
    checked = 0
    for g in range(gpus):
        root.locator("select").first.select_option(str(g))
        for op in ("0", "1", "2"):
            root.locator("select").nth(1).select_option(op)
            got = root.locator("svg").first.evaluate(BOXES)
            fx, fy, fw, fh = got["frame"]
            labels = got["labels"]
            for i, (name, *a) in enumerate(labels):
                assert fx - 0.5 <= a[0] and a[0] + a[2] <= fx + fw + 0.5 and fy - 0.5 <= a[1] and a[1] + a[3] <= fy + fh + 0.5, name
                for other, *b in labels[i + 1:]:
                    assert not _overlap(a, b), (name, other)
                for p in got["points"]:
                    shrunk = [p[0] + 1, p[1] + 1, p[2] - 2, p[3] - 2]      # a point's edge may touch a label
                    assert not _overlap(a, shrunk), (name, p)
            checked += len(labels)
    assert checked > 0, "no labelled points were drawn"


AXES = """(svg) => [...svg.querySelectorAll("text.gl-tick, text.gl-label")].map((e) => {
  const b = e.getBoundingClientRect(); return [e.getAttribute("class"), e.textContent, b.x, b.y, b.width, b.height];
})"""


def test_axis_titles_overlap_no_tick_label(chromium, tmp_path):
    """Both axis titles ("FLOP/s", rotated, and the intensity) clear every tick label, for every GPU,
    operation and precision the calculator draws (the y title once sat on the first tick, "100.00 G")."""
    html = tmp_path / "roofline.html"
    html.write_text("<html><body style='width:760px'>" + gl.explorers.roofline_calculator()._repr_html_() + "</body></html>")
    page = chromium.new_context(viewport={"width": 900, "height": 900}).new_page()
    page.goto(html.as_uri())
    root = page.locator(".gl-explorer")
    selects = root.locator("select")
    drawn = 0
    for g in range(selects.first.locator("option").count()):
        selects.first.select_option(str(g))
        for op in ("0", "1", "2"):
            selects.nth(1).select_option(op)
            for prec in range(selects.nth(2).locator("option").count()):
                selects.nth(2).select_option(str(prec))
                texts = root.locator("svg").first.evaluate(AXES)
                titles = [t for t in texts if t[0] == "gl-label"]
                ticks = [t for t in texts if t[0] == "gl-tick"]
                if not ticks:                  # a precision with no datasheet peak draws no chart, and says so
                    continue
                assert len(titles) == 2, titles
                for title in titles:
                    for t in ticks:
                        assert not _overlap(title[2:], t[2:]), (g, op, prec, title[1], t[1])
                drawn += 1
    assert drawn > 0
