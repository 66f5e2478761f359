"""The one table helper: every table the library or a chapter shows is a :class:`Table`.

    t = gl.Table(["kernel", "GFLOP/s", "of cuBLAS"], [["naive", "1,234", "5.2%"], ...],
                 title="SGEMM, N = 4096 on NVIDIA H100, 2026-12-07", notes=["cuBLAS: cublasSgemm"])
    t.show()            # in a notebook: an HTML table; elsewhere (a terminal, a log): aligned text
    print(t)            # the text form, always

In a notebook (the built book, JupyterLab, Colab) a table is HTML, so it keeps its columns at any width: the
cells wrap, the columns stay. Its text form (``str``, the notebook's ``text/plain``) is for logs and tests:
the same title, header, rows and notes, aligned in columns.
"""
from __future__ import annotations

import html
import re

_NUMBER = re.compile(r"^[~<>≈+\-−]?[\d.,]+\s*(%|x|×|[a-zA-Zµ/]{0,8}[sBFOPL/]*)?[~*]?$")


def _looks_numeric(text: str) -> bool:
    return bool(_NUMBER.match(text.strip())) if text.strip() else True


class Table:
    """A title (optional), a header row, rows of cells (strings, or values shown with ``str``) and notes.

    ``align`` is one letter per column, 'l' or 'r'; by default a column whose every cell reads as a number
    is right-aligned, any other left-aligned."""

    def __init__(self, columns, rows, *, title: str | None = None, notes=(), align: str | None = None):
        self.columns = [str(c) for c in columns]
        self.rows = [[("" if v is None else str(v)) for v in row] for row in rows]
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"row {i} has {len(row)} cells; the table has {len(self.columns)} columns: {row}")
        if align is not None and (len(align) != len(self.columns) or set(align) - {"l", "r"}):
            raise ValueError(f"align is one letter, 'l' or 'r', per column ({len(self.columns)}); got {align!r}")
        self.align = align or "".join("r" if self.rows and all(_looks_numeric(r[j]) for r in self.rows) else "l"
                                      for j in range(len(self.columns)))
        self.title = title
        self.notes = [str(n) for n in notes]

    def __str__(self) -> str:
        widths = [max([len(c)] + [len(r[j]) for r in self.rows]) for j, c in enumerate(self.columns)]

        def line(cells):
            return "  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                             for c, w, a in zip(cells, widths, self.align)).rstrip()
        body = [line(self.columns)] + [line(r) for r in self.rows]
        return "\n".join(([self.title] if self.title else []) + body + self.notes)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cell = "padding:0.15em 0.6em;border-bottom:1px solid rgba(127,127,127,0.25);vertical-align:top"

        def td(text, a, tag="td"):
            side = "right" if a == "r" else "left"
            # long names without spaces (12_interior[BM=128,BN=256,...]) may wrap after these, never in a word
            shown = re.sub(r"(,(?!\d)|[\[/_=])", r"\1<wbr>", html.escape(text))
            return f'<{tag} style="{cell};text-align:{side}">{shown}</{tag}>'
        head = "".join(td(c, a, "th") for c, a in zip(self.columns, self.align))
        body = "".join("<tr>" + "".join(td(c, a) for c, a in zip(r, self.align)) + "</tr>" for r in self.rows)
        title = (f'<div style="margin:0 0 0.3em 0">{html.escape(self.title)}</div>' if self.title else "")
        notes = "".join(f'<div style="margin:0.2em 0 0 0">{html.escape(n)}</div>' for n in self.notes)
        return (f'<div class="gl-table" style="max-width:100%;overflow-x:auto;margin:0.3em 0">{title}'
                f'<table style="border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:0.9em;'
                f'margin:0">'
                f'<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}</div>')

    def show(self) -> None:
        """Show the table: as HTML where IPython can display it (a notebook), as text otherwise."""
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            print(self)
            return
        if get_ipython() is None:
            print(self)
        else:
            display(self)
