"""One Case type and one problem factory: every table of cases the library keeps names real registry entries with
legal parameters, takes a problem its variant computes, and names each case once; the factory makes the problems
the constructors make; every exercise's arguments match the kernel its scaffold and its solution declare."""
import itertools

import numpy
import pytest

import gemmlab as gl
from gemmlab import cases, ops
from gemmlab.cases import Case, problem
from gemmlab.runtime.source import parse_kernels
from gemmlab.studies import blas_steps, climb, ladder, profiling, sass, tensor_cores


def _tables() -> dict:
    """Every table of cases in the library, by a name for the failure message."""
    out = {"ladder.STEPS": ladder.STEPS, **{f"ladder.SWEEPS[{k}]": v for k, v in ladder.SWEEPS.items()},
           **{f"climb.{n}": getattr(climb, n) for n in ("CANDIDATES", "DOT_CANDIDATES", "GEMV_CANDIDATES",
                                                         "GEMM_CANDIDATES")},
           **{f"tensor.{n}": getattr(tensor_cores, n) for n in ("TC_CANDIDATES", "HOPPER_CANDIDATES",
                                                                 "SPLIT_CANDIDATES")},
           **{f"blas.FAMILIES[{k}]": v for k, v in blas_steps.FAMILIES.items()},
           **{f"profiling.STUDIES[{k}]": v for k, v in profiling.STUDIES.items()},
           "sass.CASES": sass.CASES}
    return out


TABLES = _tables()


@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_is_cases_that_resolve_and_take_their_problem(name):
    table = TABLES[name]
    assert table and all(isinstance(c, Case) for c in table), f"{name} is not a list of Cases"
    for c in table:
        if c.key is None:                                     # the library's own call, on the case's problem
            assert c.problem is not None and not c.params, f"{name}: {c}"
            continue
        v = gl.registry.get(c.key)
        v.resolve(**c.params)                                 # raises on an unknown or illegal parameter
        key, params = c                                       # a Case unpacks as the pairs did
        assert (key, params) == (c.key, c.params)
        if c.problem is not None:
            assert isinstance(c.problem, v.op), f"{name}: {c.key} computes {v.op.__name__}, not {c.problem}"
            if v.refuse is not None and c.key != "tc/06_wgmma_tma":
                assert not v.refuse(c.problem, v.resolve(**c.params)), f"{name}: {c.key} refuses {c.problem.label}"
    shown = [c.shown for c in table]
    if not name.startswith("sass"):
        assert len(shown) == len(set(shown)), f"{name} names a case twice"


def test_a_case_is_named_as_the_records_name_it():
    c = Case("sgemm/12_interior", {"BM": 128, "BN": 256})
    assert c.label == "12_interior[BM=128,BN=256]" == gl.ladder.case_name(c.key, c.params)
    # the second part of the key: a BLAS kernel is named by its routine, as the climb's records name it
    assert Case("blas/gemm/05_warp_tiled", {"BM": 128}).label == "gemm[BM=128]"
    assert Case(None, name="cuBLAS").label == "cuBLAS" and Case("sgemm/01_naive", {}, name="naive").shown == "naive"
    with pytest.raises(ValueError, match="takes no parameters"):
        Case(None, {"BM": 128})


def test_the_factory_makes_the_problems_the_constructors_make():
    assert problem("gemm", 4096) == ops.Gemm.square(4096)
    assert problem("gemm", 3000, 5000, 2000) == ops.Gemm(m=3000, n=5000, k=2000)
    assert problem("gemm", "3000x5000x2000") == problem(ops.Gemm, "3000x5000x2000") == ops.Gemm(m=3000, n=5000, k=2000)
    assert problem("gemm-col", 2048, transa="T") == ops.Gemm(m=2048, n=2048, k=2048, transa="T", layout="col")
    assert problem("gemm", 64, layout="col") == ops.Gemm(m=64, n=64, k=64, layout="col")
    assert problem("gemv", 4096, trans="T") == ops.Gemv(m=4096, n=4096, trans="T", layout="col")
    assert problem("gemv", 77, 1000, layout="row") == ops.Gemv(m=77, n=1000, layout="row")
    assert problem("dot", 1 << 24) == ops.Dot(n=1 << 24) and problem("copy", 8) == ops.Copy(n=8)
    assert problem("tc", 64, precision="bf16") == ops.TcGemm(m=64, n=64, k=64, precision="bf16")
    assert problem("strided-dot", 1000, incx=2, incy=-3) == ops.StridedDot(1000, 2, -3)
    for bad, why in ((("matmul", 4), "no problem kind"), (("gemm", 3, 4), "N or M, N, K"), (("gemm", "3xq"), "a size is"),
                     (("gemm", "0"), "a size is")):
        with pytest.raises(ValueError, match=why):
            problem(*bad)


def test_the_awkward_sizes_are_the_exercises_sizes_where_they_check_the_same_operation():
    gemm = [(p.m, p.n, p.k) for p in cases.awkward_problems(ops.Gemm)]
    assert gemm == cases.GEMM_SHAPES
    for name in ("micro_tile", "tiled_sgemm", "register_tile", "gemm_bt"):
        assert [(p.m, p.n, p.k) for p in gl.exercises.get(name).problems] == cases.GEMM_SHAPES


@pytest.mark.parametrize("name", list(gl.exercises.EXERCISES))
def test_an_exercise_passes_its_kernel_the_arguments_its_kernel_declares(name):
    """Scaffold and solution declare the same kernel, and the exercise's launch passes one argument per parameter."""
    e = gl.exercises.get(name)
    mine = parse_kernels(e.scaffold_path.read_text())[e.entry]
    theirs = parse_kernels(e.solution_path.read_text())[e.entry]
    assert [(p.ctype, p.pointer) for p in mine.params] == [(p.ctype, p.pointer) for p in theirs.params]
    rng = numpy.random.default_rng(0)
    for p in itertools.islice(e.problems, 2):
        args = e.args(p, p.inputs(rng), p.output())
        assert len(args) == len(mine.params), f"{name}: {len(args)} arguments for {len(mine.params)} parameters"


def test_the_readers_of_the_tables_read_them_as_cases():
    """What the chapters call on the recorded tables (a Case is not a tuple: this caught one reader that indexed)."""
    import matplotlib
    matplotlib.use("Agg")
    xs, ys, grid, _ = ladder.sweep_grid("cache blocking: TM x TN", x="TN", y="TM")
    assert xs == [1, 2, 4, 8] and ys == [1, 2, 4, 8] and numpy.isfinite(grid).all()
    ladder.heatmap("register tiling: T, RM x RN, MINB", x="RN", y="RM", fixed={"T": 32, "MINB": 1})
    assert [c.key for c in ladder.cases_for("ladder")] == [c.key for c in ladder.STEPS]
    for which in gl.explorers.SWEEPS:
        assert gl.explorers.sweep_data(which)["rows"]
    names, rows = blas_steps._steps("GEMV")[1], blas_steps._steps("GEMV")[0]
    assert names == [c.name for c in blas_steps.GEMV_STEPS] and all(isinstance(c, Case) for c in rows)
