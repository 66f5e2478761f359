"""The README is the book's front door: short, the reader's commands first, and every figure it states made
by the library (the support table, the chapter count, the emulator's times) and kept current here."""
import json
import re

import pytest

from gemmlab import support
from gemmlab.paths import REPO

pytestmark = pytest.mark.skipif(REPO is None, reason="the README is in the source tree, not in a wheel")
README = REPO / "README.md" if REPO else None


def test_the_readme_is_a_front_door_not_a_manual():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"{len(lines)} lines: the reference belongs in the appendix pages"
    first = next(i for i, line in enumerate(lines) if "make lab" in line)
    assert first < 30, f"`make lab`, the reader's command without a GPU, first appears on line {first + 1}"
    sentences = re.split(r"(?<=[.!?])\s", " ".join(l for l in lines if not l.startswith(("|", "<!--"))))
    assert max(len(s.split()) for s in sentences) < 80, "no sentence of the README runs on past 80 words"


@pytest.mark.parametrize("path", support.carriers() if REPO else [], ids=lambda p: p.name)
def test_every_generated_block_is_current(path):
    """`python -m gemmlab generate` makes them; a block edited by hand, or left behind by a change to the
    registry, the chapters or the records, fails here."""
    text = path.read_text()
    if path.suffix == ".ipynb":
        text = "".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown")
    assert support.generated(text) == text, f"{path.name}: run `python -m gemmlab generate`"


def test_the_readme_carries_every_generated_block():
    text = README.read_text()
    for start in [support.START] + [f"<!-- {name}: generated -->" for name in support.BLOCKS]:
        assert start in text, start


def test_the_chapter_count_and_the_parts_come_from_the_book():
    summary = support.book_summary()
    chapters = len(list((REPO / "chapters").glob("*.ipynb")))
    assert f"has {chapters} chapters" in summary
    for caption, _ in support._toc():
        assert caption == "Appendix" or f"*{caption}*" in summary
    # no other count of chapters anywhere in the README ("sixteen chapters" outlived a seventeenth once)
    numbers = re.findall(r"\b(\d+|\w*teen|ten|eleven|twelve|twenty\w*) chapters\b", README.read_text(), flags=re.I)
    assert numbers and set(numbers) == {str(chapters)}, numbers


def test_the_emulator_times_are_the_record_s():
    record = json.loads((REPO / "results" / "chapters-emulator.json").read_text())
    text = support.emulator_times()
    assert f"the {len(record['notebooks'])} chapters" in text
    assert f"{record['cores']}-core machine" in text and record["all_ran"]
    assert {n["notebook"] for n in record["notebooks"]} == {f"chapters/{p.name}" for p in
                                                            (REPO / "chapters").glob("*.ipynb")}


def test_the_readme_names_pages_and_commands_that_exist():
    text = README.read_text()
    titles = {p.read_text().splitlines()[0].lstrip("# ").split(":")[0] for p in (REPO / "appendix").glob("*.md")}
    for page in re.findall(r"appendix page \*([^*]+)\*", text):
        assert page in titles, (page, titles)
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.M))
    for target in re.findall(r"`make (\w+)`", text):
        assert target in targets, target


def test_no_chapter_leaves_a_reader_without_a_sign_of_progress_for_ten_seconds():
    """In the emulator's run of every chapter (the record the README's times come from), no cell went more than
    ten seconds without showing something new (a line, a table, a progress bar's tick), first run or later."""
    record = json.loads((REPO / "results" / "chapters-emulator.json").read_text())
    for n in record["notebooks"]:
        for run in ("cold", "warm"):
            quiet = n[f"{run}_longest_silence"]
            assert quiet["seconds"] <= 10, f"{n['notebook']}, {run} run: cell {quiet['cell']} quiet {quiet}"
