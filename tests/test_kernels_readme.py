"""kernels/README.md maps every file to its chapter and step, as the registry and the exercises do; a step whose
body lives in a shared header points at the header's lines, and those lines say what the pointer quotes."""
import re

import pytest

import gemmlab as gl
from gemmlab.paths import KERNELS

README = KERNELS / "README.md"
pytestmark = pytest.mark.skipif(not README.is_file(), reason="kernels/README.md is not installed here")


def _rows() -> dict:
    """`file` -> the rest of its table row's cells, for every table row that names a file in its first cell."""
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`([\w/.]+)`", cells[0]) if cells else None
        if m and line.startswith("|"):
            rows[m.group(1)] = cells[1:]
    return rows


def test_every_kernel_file_is_in_the_readme():
    rows = _rows()
    files = sorted(str(p.relative_to(KERNELS)) for p in KERNELS.rglob("*") if p.suffix in (".cu", ".cuh"))
    named = {f for f in files if f in rows or f.rsplit("/", 1)[-1].removesuffix(".cu") in rows}
    assert set(files) == named, f"not in kernels/README.md: {sorted(set(files) - named)}"


def test_the_readme_names_no_file_that_is_not_there():
    for name in _rows():
        if "/" in name:
            assert (KERNELS / name).is_file(), name


@pytest.mark.parametrize("v", gl.registry.VARIANTS, ids=lambda v: v.key)
def test_each_variant_has_its_registry_chapter_in_the_readme(v):
    cells = _rows()[v.source]
    assert cells[0].split()[0] == v.chapter[:2], f"{v.source}: README says chapter {cells[0]}, the registry {v.chapter}"


def test_the_readme_lists_the_files_in_the_registry_order():
    text = README.read_text()
    places = [text.index(f"`{v.source}`") for v in gl.registry.VARIANTS]
    assert places == sorted(places)


def test_each_exercise_has_its_chapter_in_the_readme():
    rows = _rows()
    for e in gl.exercises.EXERCISES.values():
        assert rows[e.name][0] == e.chapter[:2], e.name
        assert e.scaffold_path.is_file()


def test_a_missing_step_number_is_explained():
    """sgemm has no 08: the page says why, so a reader does not look for a lost file."""
    assert not (KERNELS / "sgemm" / "08").exists() and "(no 08)" in README.read_text()


def _pointers(path):
    """(header, line, quoted text) for each 'line N "text"' of a 'Where the step is' comment in a kernel file."""
    text = path.read_text()
    if "Where the step is" not in text:
        return []
    header = re.search(r"Where the step is:.*?(common/[\w.]+)", text, re.S).group(1)
    return [(header, int(n), q) for n, q in re.findall(r'^//\s+line (\d+)\s+"([^"]+)"', text, re.M)]


@pytest.mark.parametrize("path", sorted(KERNELS.glob("tc/*.cu")), ids=lambda p: p.name)
def test_a_step_in_a_shared_header_points_at_lines_that_hold_it(path):
    pointers = _pointers(path)
    if "common/tc_pipeline.cuh" in path.read_text() and "gl_tc_pipelined<" in path.read_text():
        assert len(pointers) >= 3, f"{path.name} is a shell around a header: it must point at the step's lines"
    for header, line, quoted in pointers:
        lines = (KERNELS / header).read_text().splitlines()
        assert quoted in lines[line - 1], f"{path.name}: {header} line {line} does not hold {quoted!r}"
