"""gl.listing: a kernel file's marked part as a cell shows it, and clear errors for what it cannot show."""
import html
import re

import pytest

import gemmlab as gl
from gemmlab.paths import KERNELS

WIDTH = 84      # the book's column at a 1400 px window fits 90 characters of a listing, its 4-character gutter included


def _visible(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_the_kernel_part_is_the_lines_between_the_markers_with_the_files_numbers():
    lines = (KERNELS / "sgemm/01_naive.cu").read_text().splitlines()
    marks = [i for i, l in enumerate(lines) if l.strip() == "// [kernel]"]
    shown = gl.listing("sgemm/01_naive.cu")
    inside = lines[marks[0] + 1:marks[1]]
    while not inside[0].strip():
        inside = inside[1:]
    assert shown.lines[0] == inside[0] and "// [kernel]" not in "\n".join(shown.lines)
    assert lines[shown.first - 1] == shown.lines[0] and lines[shown.last - 1] == shown.lines[-1]
    text = repr(shown)
    assert text.splitlines()[0] == f"kernels/sgemm/01_naive.cu, lines {shown.first}-{shown.last}:"
    assert f"{shown.first} | {shown.lines[0]}".rstrip() in text
    page = _visible(shown._repr_html_())
    for line in shown.lines:
        assert line.strip() in page
    assert "kernels/sgemm/01_naive.cu" in page and str(shown.last) in page


def test_whole_file_start_at_and_folded():
    whole = gl.listing("solutions/axpy.cu", part=None)
    lines = (KERNELS / "solutions/axpy.cu").read_text().splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    first = next(i for i, l in enumerate(lines) if l.strip())
    assert (whole.first, whole.last, whole.lines) == (first + 1, len(lines), tuple(lines[first:]))
    part = gl.listing("common/sgemm_tiles.cuh", start_at="// One k of a warp tile", end_before="// Registers <- global memory")
    assert part.lines[0].startswith("// One k of a warp tile") and "Registers <- global memory" not in "\n".join(part.lines)
    folded = gl.listing("solutions/axpy.cu", part=None, fold="A solution")._repr_html_()
    assert folded.startswith("<details") and "<summary" in folded and "A solution" in folded
    assert "style=" in folded and "<style" not in folded and "<script" not in folded   # inline only: no sheet, no code


@pytest.mark.parametrize("call, error", [
    (lambda: gl.listing("sgemm/no_such_kernel.cu"), FileNotFoundError),
    (lambda: gl.listing("../README.md", part=None), ValueError),
    (lambda: gl.listing("/etc/passwd", part=None), ValueError),
    (lambda: gl.listing("common/sgemm_tiles.cuh"), ValueError),          # no "// [kernel]" markers there
    (lambda: gl.listing("sgemm/01_naive.cu", part="epilogue"), ValueError),
    (lambda: gl.listing("sgemm/01_naive.cu", start_at="no such line anywhere"), ValueError),
    (lambda: gl.listing("sgemm/01_naive.cu", start_at="a", start_after="b"), ValueError),
    (lambda: gl.listing("sgemm/01_naive.cu", part=None, end_before="}"), ValueError),
    (lambda: gl.listing(None), TypeError),
])
def test_what_it_cannot_show_is_an_error_naming_it(call, error):
    with pytest.raises(error):
        call()


def test_without_pygments_the_listing_is_plain_numbered_text(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pygments(name, *a, **k):
        if name.startswith("pygments"):
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_pygments)
    shown = gl.listing("sgemm/01_naive.cu")
    page = _visible(shown._repr_html_())
    assert all(line.strip() in page for line in shown.lines) and f"{shown.first}  " in page


def test_no_line_of_a_kernel_source_is_wider_than_the_books_listing_column():
    files = sorted(p for p in KERNELS.rglob("*") if p.suffix in (".cu", ".cuh", ".h"))
    assert files, f"no kernel sources under {KERNELS}"
    wide = [f"kernels/{p.relative_to(KERNELS)}:{n}: {len(line)} characters"
            for p in files for n, line in enumerate(p.read_text().splitlines(), start=1) if len(line) > WIDTH]
    assert not wide, f"{len(wide)} lines over {WIDTH} characters:\n" + "\n".join(wide)
