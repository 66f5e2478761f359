"""The loader's front end: parsing, includes, error messages and launch checks (no GPU needed)."""
import numpy
import pytest

import gemmlab as gl
from gemmlab import loader
from gemmlab.limits import Limits

SRC = r'''
#include <cuda_fp16.h>
// a comment with __global__ void fake(int x) in it
template <int BM, int BN = 8, typename T>
__global__ void __launch_bounds__(256, 2)
tiled(const T* __restrict__ A, T *B, int n, float alpha)
{ }
/* block comment
   __global__ void hidden(int) */
extern "C" __global__ void plain(float4* v, unsigned int count, long long big) { }
__global__ void noargs(void) { }
'''


def test_parse_kernels_finds_signatures_and_skips_comments():
    ks = loader.parse_kernels(SRC)
    assert sorted(ks) == ["noargs", "plain", "tiled"]
    t = ks["tiled"]
    assert [(p.name, p.ctype, p.pointer) for p in t.params] == [
        ("A", "T", True), ("B", "T", True), ("n", "int", False), ("alpha", "float", False)]
    assert [(x.kind, x.name, x.default) for x in t.template] == [
        ("int", "BM", None), ("int", "BN", "8"), ("typename", "T", None)]
    assert t.line == 6 and t.launch_bounds == ("256", "2")
    nested = loader.parse_kernels("template <int T, int R> __global__ void __launch_bounds__((T / R) * (T / R), 4) "
                                  "k(float* x) {}")
    assert nested["k"].launch_bounds == ("(T / R) * (T / R)", "4")
    assert [(p.ctype, p.pointer) for p in ks["plain"].params] == [
        ("float4", True), ("unsigned int", False), ("long long", False)]
    assert ks["noargs"].params == ()


@pytest.mark.parametrize("expr, out", [
    ("k", ("k", [])), ("k<16>", ("k", ["16"])), ("k< 16, float >", ("k", ["16", "float"])),
    ("k<Pair<1,2>, 3>", ("k", ["Pair<1,2>", "3"])),
])
def test_name_expressions(expr, out):
    assert loader.parse_name_expression(expr) == out


def test_bad_name_expression():
    with pytest.raises(ValueError, match="not a kernel name"):
        loader.parse_name_expression("3k<")


def test_module_expression_from_keywords():
    m = gl.load(code=SRC)
    assert m.expression("tiled", BM=16, T="float") == "tiled<16, 8, float>"
    with pytest.raises(ValueError, match="no template parameter TILE"):
        m.expression("tiled", TILE=4)
    with pytest.raises(ValueError, match="needs template parameter BM"):
        m.expression("tiled", T="float")
    with pytest.raises(ValueError, match="has no __global__ function 'nope'"):
        m.expression("nope")


def test_load_by_path_and_missing_path():
    m = gl.load("sgemm/01_naive.cu")
    assert "sgemm_naive" in m.names and m.display == "sgemm/01_naive.cu"
    with pytest.raises(FileNotFoundError, match="sgemm/01_naive.cu"):
        gl.load("sgemm/99_missing.cu")
    with pytest.raises(ValueError, match="either a path"):
        gl.load("a.cu", code="x")


def test_headers_are_hashed_into_the_key(tmp_path):
    (tmp_path / "helper.cuh").write_text("#define TILE 16\n")
    main = tmp_path / "main.cu"
    main.write_text('#include "helper.cuh"\n__global__ void k(float* x) { x[0] = TILE; }\n')
    first = gl.load(main)
    assert list(first.headers) == [(tmp_path / "helper.cuh").resolve()]
    (tmp_path / "helper.cuh").write_text("#define TILE 32\n")
    assert gl.load(main).key != first.key          # same .cu text, different header: a new cache key


def test_missing_include_names_file_and_line(tmp_path):
    main = tmp_path / "main.cu"
    main.write_text('// top\n#include "nowhere.cuh"\n')
    with pytest.raises(gl.CompileError, match=r"main.cu:2: #include \"nowhere.cuh\" not found"):
        gl.load(main)


def test_compile_log_is_mapped_to_file_line_and_source():
    source = "line one\nline two\n  acc += oops;\nline four\n"
    log = ('default_program(3): error: identifier "oops" is undefined\n'
           '          acc += oops;\n\n1 error detected in the compilation of "default_program".')
    text = loader.format_compile_log(log, ("sgemm/xx.cu", source), {})
    assert text.splitlines()[0] == 'sgemm/xx.cu:3: error: identifier "oops" is undefined'
    assert ">    3 |   acc += oops;" in text and "     2 | line two" in text


def test_compile_log_in_a_header_names_the_header(tmp_path):
    hdr = tmp_path / "common" / "tile.cuh"
    hdr.parent.mkdir()
    hdr.write_text("a\nb\nc\n")
    log = f'{hdr}(2): error: expected a ";"\n'
    text = loader.format_compile_log(log, ("main.cu", "x\n"), {hdr: hdr.read_text()})
    assert text.startswith(f"{hdr}:2: error:") and ">    2 | b" in text


# --- launch checks --------------------------------------------------------------------------

class FakeImpl:
    limits = Limits(name="test GPU", shared_per_block_optin=100 * 1024)
    num_regs = 64
    static_shared_bytes = 4096
    max_threads_per_block = 512       # e.g. 64 registers x 1024 threads would not fit
    launched = None

    def launch(self, *a):
        FakeImpl.launched = a


def _kernel(src="__global__ void k(const float* A, double* B, int n, float s) {}", limits=None):
    sig = loader.parse_kernels(src)["k"]
    impl = FakeImpl()
    k = loader.Kernel("k", sig, impl, limits or impl.limits, "test.cu", array_type=gl.xp.ndarray)
    k._arg_types = [p.ctype for p in sig.params]
    return k


def _arrays():
    return gl.xp.ones(8, dtype=numpy.float32), gl.xp.ones(8, dtype=numpy.float64)


@pytest.mark.parametrize("grid, block, shared, match", [
    (1, 1025, 0, r"1025 threads is over the limit of 1024 threads per block \(test GPU\)"),
    (1, (1, 1, 65), 0, r"block.z = 65 is over the limit of 64"),
    ((1, 70000), 32, 0, r"grid.y = 70000 blocks is over the limit of 65535"),
    (1, (32, 32), 0, r"more than this kernel can launch \(512 at most: it uses 64 registers"),
    (1, 32, 100 * 1024, r"106496 bytes of shared memory .* over the limit of 102400"),
    (1, 0, 0, r"positive whole numbers"),
    ((1, 2, 3, 4), 1, 0, r"tuple of 1 to 3"),
    (1.5, 1, 0, r"positive whole number"),
    (1, 32, -1, r"shared_mem must be a whole number"),
])
def test_illegal_launches_are_refused_before_launch(grid, block, shared, match):
    k = _kernel()
    FakeImpl.launched = None
    A, B = _arrays()
    with pytest.raises(ValueError, match=match):
        k(grid, block, (A, B, 8, 1.0), shared_mem=shared)
    assert FakeImpl.launched is None


def test_a_legal_launch_converts_python_numbers():
    k = _kernel()
    A, B = _arrays()
    k((2, 3), 256, (A, B, 8, 2.5), shared_mem=1024)
    grid, block, args, shared, _ = FakeImpl.launched
    assert grid == (2, 3, 1) and block == (256, 1, 1) and shared == 1024
    assert type(args[2]) is numpy.int32 and type(args[3]) is numpy.float32


@pytest.mark.parametrize("args, match", [
    (("A", "B", 8), r"takes 4 arguments \(A, B, n, s\), got 3"),
    (("B", "B", 8, 1.0), r"argument 'A' is float\* and needs a float32 array, got float64"),
    (("A", "B", 2**31, 1.0), r"argument 'n' = 2147483648 does not fit in int"),
    (("A", "B", numpy.int64(8), 1.0), r"argument 'n' is int \(int32\) but got numpy.int64"),
    (("A", "B", 8.0, 1.0), r"argument 'n' is int and needs a whole number"),
    (("A", "B", True, 1.0), r"not a bool"),
    (("A", 3, 8, 1.0), r"argument 'B' is a pointer \(double\*\) and needs an array"),
    (("A", "B", "A", 1.0), r"argument 'n' is a int value, not a pointer"),
    (("strided", "B", 8, 1.0), r"argument 'A' is not contiguous"),
])
def test_bad_arguments_are_named(args, match):
    k = _kernel()
    A, B = _arrays()
    wide = gl.xp.ones(16, dtype=numpy.float32)
    lookup = {"A": A, "B": B, "strided": wide[::2]}
    real = tuple(lookup.get(a, a) if isinstance(a, str) else a for a in args)
    FakeImpl.launched = None
    with pytest.raises(ValueError, match=match):
        k(1, 32, real)
    assert FakeImpl.launched is None


def test_fortran_ordered_arrays_are_refused_and_their_explicit_views_accepted():
    # A kernel sees raw memory: an F-ordered array would be read in the wrong order without a word.
    k = _kernel()
    _, B = _arrays()
    F = gl.xp.asfortranarray(gl.xp.arange(8, dtype=numpy.float32).reshape(4, 2))
    with pytest.raises(ValueError, match=r"argument 'A' is Fortran-ordered \(column-major\).*C-contiguous"):
        k(1, 32, (F, B, 8, 1.0))
    with pytest.raises(ValueError, match=r"argument 'A' is not contiguous \(a strided view\)"):
        k(1, 32, (gl.xp.ones((4, 4), dtype=numpy.float32)[:, :2], B, 8, 1.0))
    k(1, 32, (F.T, B, 8, 1.0))                      # the same memory, as a C-contiguous view
    k(1, 32, (F.ravel(order="K"), B, 8, 1.0))       # or flat, in memory order


def test_vector_pointer_needs_alignment():
    k = _kernel("__global__ void k(float4* v) {}")
    base = gl.xp.ones(9, dtype=numpy.float32)
    k(1, 32, (base[:8],))
    with pytest.raises(ValueError, match="16-byte boundary"):
        k(1, 32, (base[1:],))


def test_every_profile_has_the_portable_cuda_limits():
    for p in gl.profiles.PROFILES.values():
        lim = p.limits
        assert lim.max_threads_per_block == 1024 and lim.shared_per_block == 48 * 1024, p.key
        assert lim.shared_per_block_optin <= lim.shared_per_sm - p.shared_reserved_per_block, p.key


@pytest.mark.parametrize("written, canonical", [
    ("long unsigned int", "unsigned long"), ("unsigned long int", "unsigned long"), ("signed", "int"),
    ("signed int", "int"), ("short int", "short"), ("unsigned short int", "unsigned short"),
    ("long long int", "long long"), ("long int long unsigned", "unsigned long long"), ("unsigned", "unsigned int"),
    ("signed char", "signed char"), ("char", "char"), ("float", "float"), ("long double", "long double")])
def test_integer_types_are_one_name_whatever_the_order_of_their_words(written, canonical):
    from gemmlab.runtime.loader import C_TYPES, c_type
    assert c_type(written) == canonical
    assert (canonical in C_TYPES) == (canonical != "long double")


@pytest.mark.parametrize("ctype, align", [("float3", 4), ("float2", 8), ("float4", 16), ("char3", 1), ("short2", 4),
                                          ("double4", 16), ("double4_32a", 32), ("longlong4", 16), ("int1", 4),
                                          ("double3", 8), ("__half2", 4)])
def test_vector_types_have_the_alignment_vector_types_h_gives_them(ctype, align):
    from gemmlab.runtime.loader import c_alignment
    assert c_alignment(ctype) == align
