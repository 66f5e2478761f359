"""The registry is consistent with the kernel sources and the book."""
import string

import pytest

import gemmlab as gl
from gemmlab.paths import KERNELS, REPO

VARIANTS = gl.registry.VARIANTS


def test_keys_are_unique_and_files_exist():
    assert len({v.key for v in VARIANTS}) == len(VARIANTS)
    for v in VARIANTS:
        assert (KERNELS / v.source).is_file(), v.source


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.key)
def test_entry_point_and_parameters_match_the_source(v):
    module = gl.load(v.source)
    placeholders = {f for _, f, _, _ in string.Formatter().parse(v.entry) if f}
    known = set(v.params) | set(v.problem_params(v.op()) if v.problem_params else ())
    assert placeholders <= known, f"{v.key}: entry uses {placeholders - known}, which nothing supplies"
    for choice in v.choices():
        base, targs = gl.loader.parse_name_expression(v.expression(**choice))
        assert base in module.kernels, f"{v.key}: no kernel {base} in {v.source}"
    assert set(v.defaults) == set(v.params)
    v.resolve()                                  # the defaults are legal


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.key)
def test_every_kernel_file_opens_with_a_header(v):
    head = (KERNELS / v.source).read_text().splitlines()[0]
    assert head.startswith(f"// {v.source}"), "first line names the file and its technique"


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.key)
def test_chapter_exists(v):
    if v.chapter is not None and REPO is not None:
        assert any((REPO / "chapters" / f"{v.chapter}{ext}").is_file() for ext in (".ipynb", ".md"))


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.key)
def test_every_variant_names_the_chapter_that_shows_it(v):
    """Each entry has its chapter; the chapter exists and names the kernel (its key, or its short form:
    ``tc/03`` for ``tc/03_wmma_pipelined``)."""
    import json
    assert v.chapter, f"{v.key} has no chapter"
    if REPO is None:
        pytest.skip("the chapters are not installed with the wheel")
    path = next((REPO / "chapters" / f"{v.chapter}{ext}" for ext in (".ipynb", ".md")
                 if (REPO / "chapters" / f"{v.chapter}{ext}").is_file()), None)
    assert path is not None, f"{v.key}: no chapter {v.chapter}"
    text = path.read_text()
    if path.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
    assert v.key in text or v.key.split("_")[0] in text, f"{v.chapter} never names {v.key}"


def _place(key: str) -> tuple:
    """Where a file stands in the book's order of kernels/: sgemm, blas/dot, blas/gemv, blas/gemm, tc; by name within."""
    order = ("sgemm/", "blas/dot/", "blas/gemv/", "blas/gemm/", "tc/")
    return next(i for i, o in enumerate(order) if key.startswith(o)), key


def test_the_table_is_ordered_by_file():
    assert [v.key for v in VARIANTS] == sorted((v.key for v in VARIANTS), key=_place)


def test_unknown_and_illegal_parameters_are_refused():
    v = gl.registry.get("sgemm/01_naive")
    with pytest.raises(ValueError, match="has no parameter TILE"):
        v.resolve(TILE=16)
    with pytest.raises(ValueError, match=r"BLOCK=12 is not one of the legal values \(8, 16, 32\)"):
        v.resolve(BLOCK=12)
    with pytest.raises(KeyError, match="no variant"):
        gl.registry.get("sgemm/99")
    with pytest.raises(ValueError, match="computes Gemm, not Dot"):
        v.runner(gl.ops.Dot(n=10))


def test_an_illegal_combination_is_named_with_what_is_legal():
    v = gl.registry.get("sgemm/10_double_buffer")
    with pytest.raises(ValueError, match=r"is not a combination the kernel supports \(\d+ are, the defaults .* "
                                         r"Variant.choices\(\) lists them; the rule is in kernels/sgemm/10_double_buffer.cu"):
        v.resolve(BM=64, WM=128)
