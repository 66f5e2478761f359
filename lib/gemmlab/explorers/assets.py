"""The explorers' front end as text: the JavaScript (model, then drawing) and the style sheet, one text for the
static page and for the live widget."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def script() -> str:
    """The explorers' JavaScript (model, then drawing): one text for the page and for the live widget."""
    return (HERE / "model.js").read_text() + "\n" + (HERE / "explorers.js").read_text()


def css() -> str:
    return (HERE / "explorers.css").read_text()
