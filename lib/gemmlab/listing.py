"""A kernel's source shown in a chapter: the file's marked part, highlighted, with the file's line numbers.

    gl.listing("sgemm/01_naive.cu")                      # the lines between the two "// [kernel]" markers
    gl.listing("common/sgemm_tiles.cuh", start_at="// One k of a warp tile", end_before="// Registers")
    gl.listing("solutions/axpy.cu", part=None, fold="A solution")   # the whole file, folded away

A listing is a cell's output, not markup: JupyterLab, Colab and the built book all show the same thing (the
HTML form, highlighted, inline styles only, so no style sheet is needed), and its text form is the file's
lines with their numbers. The book's tests re-make every listing a chapter shows and compare it with the
committed output, so the code a reader sees is the file's code.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from .paths import KERNELS

MARKER = "// [{}]"


@dataclass(frozen=True)
class Listing:
    """Lines ``first``..``last`` (1-based, inclusive) of ``kernels/<path>``; ``fold``: the summary line of a
    folded listing (the reader opens it), or None."""
    path: str
    first: int
    last: int
    lines: tuple
    fold: str | None = None

    @property
    def where(self) -> str:
        return f"kernels/{self.path}, lines {self.first}-{self.last}"

    @property
    def title(self) -> str:
        return f"{self.fold} (kernels/{self.path})" if self.fold else self.where

    def __repr__(self) -> str:
        width = len(str(self.last))
        body = [f"{n:>{width}} | {line}".rstrip() for n, line in enumerate(self.lines, start=self.first)]
        return "\n".join([self.title + ":"] + body)

    def _repr_html_(self) -> str:
        code = _highlight("\n".join(self.lines) + "\n", self.first)
        caption = (f'<div style="font-family:monospace;font-size:0.85em;opacity:0.8;margin:0 0 0.2em 0">'
                   f'{html.escape(self.where)}</div>')
        figure = (f'<div class="gl-listing" data-file="kernels/{html.escape(self.path)}" '
                  f'data-lines="{self.first}-{self.last}" style="margin:0.4em 0">{caption}'
                  f'<div style="overflow-x:auto">{code}</div></div>')
        if not self.fold:
            return figure
        return (f'<details class="gl-listing-fold"><summary style="cursor:pointer">{html.escape(self.fold)} '
                f'(<code>kernels/{html.escape(self.path)}</code>)</summary>{figure}</details>')


def _highlight(text: str, first: int) -> str:
    """CUDA C++ in HTML with inline colours and the file's line numbers (a plain <pre> without Pygments)."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import CudaLexer
    except ImportError:                     # Pygments comes with IPython; without it, the text uncoloured
        width = len(str(first + text.count("\n") - 1))
        numbered = "\n".join(f"{n:>{width}}  {html.escape(line)}"
                             for n, line in enumerate(text.rstrip("\n").split("\n"), start=first))
        return (f'<pre style="line-height:1.3;margin:0;padding:0.5em;color:#1f2328;background:#f8f8f8">'
                f'{numbered}</pre>')
    from pygments.styles.default import DefaultStyle

    class Light(DefaultStyle):       # its own colours everywhere: readable under a dark theme too
        line_number_color = "#6e7781"
        line_number_background_color = "#f0f0f0"

    # inline numbers: one <pre>, so no host's table style (JupyterLab right-aligns cells) can shift the code
    formatter = HtmlFormatter(noclasses=True, linenos="inline", linenostart=first, style=Light,
                              prestyles="line-height:1.3;margin:0;padding:0.5em;font-size:0.85em;color:#1f2328;"
                                        "text-align:left;background:#f8f8f8")
    return highlight(text, CudaLexer(), formatter)


def _find(lines, needle: str, path: str, after: int = 0) -> int:
    for i in range(after, len(lines)):
        if needle in lines[i]:
            return i
    raise ValueError(f"kernels/{path} has no line containing {needle!r}" + (f" after line {after}" if after else ""))


def listing(path: str, part: str | None = "kernel", *, start_at: str | None = None,
            start_after: str | None = None, end_before: str | None = None, fold: str | None = None) -> Listing:
    """The source a chapter shows: ``kernels/<path>``, from the line after the first ``// [<part>]`` marker to
    the line before the second (``part=None``: the whole file), or from the first line containing
    ``start_at`` (or the line after ``start_after``) to the line before ``end_before``. Leading and trailing
    blank lines are left out; the numbers are the file's. ``fold`` gives the summary of a listing the reader
    unfolds (an exercise's solution)."""
    if not isinstance(path, str) or not path:
        raise TypeError(f"path is a file under kernels/, like 'sgemm/01_naive.cu'; got {path!r}")
    file = (KERNELS / path).resolve()
    if KERNELS.resolve() not in file.parents:
        raise ValueError(f"{path!r} is not a file under kernels/ ({KERNELS})")
    if not file.is_file():
        near = sorted(p.name for p in file.parent.glob("*")) if file.parent.is_dir() else []
        raise FileNotFoundError(f"no kernels/{path}" + (f" (in its folder: {', '.join(near)})" if near else ""))
    lines = file.read_text().splitlines()
    marks = sum(x is not None for x in (start_at, start_after))
    if marks > 1 or (marks and part not in (None, "kernel")):
        raise ValueError("give one of part, start_at and start_after")
    if marks:
        begin = _find(lines, start_at or start_after, path) + (0 if start_at else 1)
        end = _find(lines, end_before, path, begin) if end_before else len(lines)
    elif part is None:
        if end_before:
            raise ValueError("end_before needs start_at or start_after (part=None shows the whole file)")
        begin, end = 0, len(lines)
    else:
        marker = MARKER.format(part)
        at = [i for i, line in enumerate(lines) if line.strip() == marker]
        if len(at) != 2:
            raise ValueError(f"kernels/{path} must mark its {part!r} part with two lines {marker!r}; "
                             f"it has {len(at)}")
        begin, end = at[0] + 1, at[1]
    while begin < end and not lines[begin].strip():
        begin += 1
    while end > begin and not lines[end - 1].strip():
        end -= 1
    if begin >= end:
        raise ValueError(f"kernels/{path}: the part asked for is empty")
    return Listing(str(Path(path).as_posix()), begin + 1, end, tuple(lines[begin:end]), fold)
