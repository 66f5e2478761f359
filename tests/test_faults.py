"""Bad input and faults: nothing crashes, nothing is corrupted, nothing is left behind.

Each test is one way a reader or a maintainer can hurt themselves (a read-only array, a full disk, a
killed notebook, a damaged cache, an access one element past an array, a kernel that calls exit()),
and the behaviour it must end in. Most run on the CPU emulator, which is where CI runs them.
"""
from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy
import pytest

import gemmlab as gl
from gemmlab import _emulator, paths, record

emulator_only = pytest.mark.skipif(gl.backend != "emulator", reason="emulator behaviour (arrays in host memory)")
REPO = Path(__file__).resolve().parents[1]

KERNELS = r'''
__global__ void twice(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
__global__ void twice_nonconst(float* x, float* y, int n)     // an input without const, as much code has
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
__global__ void read_at(const float* x, float* y, int at)      // y[0] = x[at]
{
    if (threadIdx.x == 0) y[0] = x[at];
}
__global__ void write_at(float* y, int at)                     // y[at] = 7
{
    if (threadIdx.x == 0) y[at] = 7.0f;
}
__global__ void read_byte(const unsigned char* x, unsigned char* y, int at)
{
    if (threadIdx.x == 0) y[0] = x[at];
}
__global__ void read_float4(const float4* x, float4* y, int at)
{
    if (threadIdx.x == 0) y[0] = x[at];
}
__global__ void scale(float* y, float s)
{
    y[threadIdx.x] *= s;
}
'''


@pytest.fixture(scope="module")
def mod():
    return gl.load(code=KERNELS)


def _f32(n, start=1.0):
    return numpy.arange(start, start + n, dtype=numpy.float32)


# ---------------------------------------------------------------------------------------------
# 1. Read-only arrays: inputs work, an output is refused and its memory untouched
# ---------------------------------------------------------------------------------------------

@emulator_only
@pytest.mark.parametrize("entry", ["twice", "twice_nonconst"])
def test_a_read_only_memory_mapped_input_works(mod, tmp_path, entry):
    path = tmp_path / "x.bin"
    _f32(100).tofile(path)
    x = numpy.memmap(path, dtype=numpy.float32, mode="r")      # pages mapped without write permission
    y = numpy.full(100, numpy.nan, dtype=numpy.float32)
    mod.get(entry)(4, 32, (x, y, 100))
    assert numpy.array_equal(y, 2 * _f32(100))
    assert numpy.array_equal(numpy.fromfile(path, dtype=numpy.float32), _f32(100))


@emulator_only
@pytest.mark.parametrize("make", ["setflags", "bytes", "memmap"])
def test_a_read_only_output_is_refused_by_name_and_left_untouched(mod, tmp_path, make):
    if make == "setflags":
        y = numpy.zeros(64, dtype=numpy.float32)
        y.setflags(write=False)
    elif make == "bytes":
        raw = bytes(256)
        y = numpy.frombuffer(raw, dtype=numpy.float32)
    else:
        path = tmp_path / "y.bin"
        numpy.zeros(64, dtype=numpy.float32).tofile(path)
        y = numpy.memmap(path, dtype=numpy.float32, mode="r")
    before = bytes(y.view(numpy.uint8))
    with pytest.raises(gl.EmulatorError, match=r"kernel twice wrote to argument 1 \('y'\), a read-only array"):
        mod.get("twice")(2, 32, (_f32(64), y, 64))
    assert bytes(y.view(numpy.uint8)) == before
    if make == "bytes":
        assert raw == bytes(256)
    if make == "memmap":
        assert not numpy.fromfile(tmp_path / "y.bin", dtype=numpy.float32).any()


@emulator_only
def test_a_refused_launch_writes_no_other_output_either(mod):
    y = numpy.zeros(32, dtype=numpy.float32)
    y.setflags(write=False)
    with pytest.raises(gl.EmulatorError, match="read-only"):
        mod.get("twice")(1, 32, (_f32(32), y, 32))
    z = numpy.zeros(32, dtype=numpy.float32)
    mod.get("twice")(1, 32, (_f32(32), z, 32))            # and a writable output works as ever
    assert numpy.array_equal(z, 2 * _f32(32))


@emulator_only
def test_blas_takes_read_only_inputs_and_refuses_read_only_outputs(tmp_path):
    path = tmp_path / "v.bin"
    _f32(1000).tofile(path)
    x = numpy.memmap(path, dtype=numpy.float32, mode="r")
    assert gl.blas.dot(x, x) == pytest.approx(float(numpy.dot(_f32(1000).astype(float), _f32(1000))), rel=1e-5)
    A = numpy.asfortranarray(numpy.ones((7, 5), dtype=numpy.float32))
    y = numpy.zeros(7, dtype=numpy.float32)
    y.setflags(write=False)
    with pytest.raises(gl.blas.BlasError, match=r"sgemv: argument 6 \(y\) is read-only"):
        gl.blas.gemv("N", 1.0, A, numpy.ones(5, dtype=numpy.float32), 0.0, y)
    C = numpy.asfortranarray(numpy.zeros((7, 7), dtype=numpy.float32))
    C.setflags(write=False)
    with pytest.raises(gl.blas.BlasError, match=r"sgemm: argument 7 \(C\) is read-only"):
        gl.blas.gemm("N", "T", 1.0, A, A, 0.0, C)
    assert not C.any()
    Ar = numpy.asfortranarray(numpy.ones((7, 5), dtype=numpy.float32))
    Ar.setflags(write=False)                               # a read-only matrix input is fine
    out = numpy.zeros(7, dtype=numpy.float32)
    gl.blas.gemv("N", 1.0, Ar, numpy.ones(5, dtype=numpy.float32), 0.0, out)
    assert numpy.array_equal(out, numpy.full(7, 5, dtype=numpy.float32))


# ---------------------------------------------------------------------------------------------
# 2. Files are written whole or not at all
# ---------------------------------------------------------------------------------------------

def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_behind(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    target.write_text('{"old": true}\n')
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(OSError, match="No space left"):
        paths.atomic_write(target, '{"new": true}\n' * 1000)
    assert target.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    target = tmp_path / "a.txt"
    target.write_text("old")

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        paths.atomic_write(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_write_keeps_permissions_and_writes_bytes(tmp_path):
    target = tmp_path / "x.bin"
    target.write_bytes(b"a")
    os.chmod(target, 0o640)
    paths.atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01" and (target.stat().st_mode & 0o777) == 0o640


def test_recorded_results_are_written_whole(tmp_path, monkeypatch):
    record.save("thing", {"value": 1}, directory=tmp_path)
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(OSError):
        record.save("thing", {"value": 2}, directory=tmp_path)
    assert json.loads((tmp_path / "thing.json").read_text())["value"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["thing.json"]


def test_the_scaling_csv_is_written_whole(tmp_path, monkeypatch):
    from gemmlab import blasbench
    monkeypatch.setattr(record, "RESULTS", tmp_path)
    monkeypatch.setattr(blasbench.record, "save", lambda name, data: tmp_path / f"{name}.json")
    old = tmp_path / f"blas-scaling-{record.gpu_slug()}.csv"
    old.write_text("old\n")
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(OSError):
        blasbench.save({}, [{"n": 1, "gbs": 2.0}])
    assert old.read_text() == "old\n"


NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "first", "metadata": {}, "outputs": [],
         "source": "x = 1 + 1\nprint(x)"},
        {"cell_type": "code", "execution_count": None, "id": "second", "metadata": {}, "outputs": [],
         "source": "1 / 0"},
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def _notebook(tmp_path, cells=None):
    nb = json.loads(json.dumps(NOTEBOOK))
    if cells is not None:
        nb["cells"] = nb["cells"][:cells]
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return path


def test_refresh_names_the_notebook_and_the_failing_cell_and_keeps_the_notebook(tmp_path):
    pytest.importorskip("nbclient")
    from gemmlab import refresh
    path = _notebook(tmp_path)
    before = path.read_text()
    with pytest.raises(refresh.RefreshError, match="1 of 1 notebooks were not refreshed"):
        refresh.run([path], allow_cpu=True, timeout=60)
    assert path.read_text() == before
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "refresh", "--allow-cpu", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{path}: cell 2 (id second) failed: ZeroDivisionError: division by zero; the notebook was not written" \
        in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert path.read_text() == before


@pytest.mark.parametrize("content", ["not json at all", '{"cells": 3}', ""])
def test_refresh_of_a_file_that_is_not_a_notebook_says_so_in_one_line(tmp_path, content):
    pytest.importorskip("nbformat")
    path = tmp_path / "notes.ipynb"
    path.write_text(content)
    proc = subprocess.run([sys.executable, "-m", "gemmlab", "refresh", "--allow-cpu", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{path}: not a Jupyter notebook" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert path.read_text() == content


def test_refresh_on_a_full_disk_keeps_the_old_notebook(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    from gemmlab import refresh
    path = _notebook(tmp_path, cells=1)
    before = path.read_text()
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(refresh.RefreshError):
        refresh.run([path], allow_cpu=True, timeout=60)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chapter.ipynb"]
    monkeypatch.undo()
    refresh.run([path], allow_cpu=True, timeout=60)
    assert "".join(json.loads(path.read_text())["cells"][0]["outputs"][0]["text"]) == "2\n"


# ---------------------------------------------------------------------------------------------
# 3. Emulated launches: settings checked first, no child outlives its parent
# ---------------------------------------------------------------------------------------------

def _no_children():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@emulator_only
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", ""])
def test_a_bad_timeout_setting_is_refused_before_anything_starts(mod, monkeypatch, value):
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", value)
    y = numpy.zeros(32, dtype=numpy.float32)
    with pytest.raises(ValueError, match="GEMMLAB_EMULATOR_TIMEOUT=.* must be a number of seconds >= 0"):
        mod.get("twice")(1, 32, (_f32(32), y, 32))
    assert _no_children()
    assert not y.any()


@emulator_only
def test_timeout_zero_means_no_limit(mod, monkeypatch):
    monkeypatch.setenv("GEMMLAB_EMULATOR_TIMEOUT", "0")
    y = numpy.zeros(32, dtype=numpy.float32)
    mod.get("twice")(1, 32, (_f32(32), y, 32))
    assert numpy.array_equal(y, 2 * _f32(32))


ENDLESS = textwrap.dedent('''
    import numpy, sys, gemmlab as gl
    k = gl.load(code="__global__ void spin(volatile int* f) { while (f[0] == 0) { } }").get("spin")
    k(1, 1, (numpy.zeros(1, dtype=numpy.int32),))       # compile, and then spin
''')


def _children(pid):
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _running(marker, within=5.0):
    """The processes whose command line holds marker, once they are gone or within seconds have passed: a
    SIGKILL is delivered when its target is next scheduled, so on a loaded machine a killed child may still
    be listed for a moment after its group was killed (and its leader reaped)."""
    deadline = time.monotonic() + within
    while True:
        alive = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def _gone(pid, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@emulator_only
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_an_emulated_launch_dies_with_its_parent(tmp_path, how):
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_EMULATOR_TIMEOUT": "300",
           "GEMMLAB_CACHE_DIR": str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-c", ENDLESS], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        kids = []
        while time.monotonic() < deadline and not kids:
            kids = [k for k in _children(parent.pid)
                    if "python" in Path(f"/proc/{k}/cmdline").read_bytes().decode(errors="replace")]
            time.sleep(0.1)
        assert kids, "the emulated launch did not start"
        time.sleep(0.3)
        parent.send_signal(how)
        parent.wait(timeout=30)
        for kid in kids:
            assert _gone(kid), f"the emulated launch {kid} outlived its parent"
    finally:
        parent.kill()
        parent.wait()


# ---------------------------------------------------------------------------------------------
# 4. The kernel build cache: verified before use, rebuilt when damaged, every header in the key
# ---------------------------------------------------------------------------------------------

RUN_ONE = textwrap.dedent('''
    import numpy, sys, gemmlab as gl
    y = numpy.zeros(4, dtype=numpy.float32)
    gl.load(code="__global__ void fill(float* y) { y[threadIdx.x] = 42.0f; }").get("fill")(1, 4, (y,))
    print("OK" if (y == 42).all() else "WRONG", y)
''')


def _run_in_fresh_process(cache, env_extra=None):
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_CACHE_DIR": str(cache), **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", RUN_ONE], env=env, capture_output=True, text=True, timeout=300)


def _damage(kind, library: Path, manifest: Path):
    data = library.read_bytes()
    if kind == "truncated":
        library.write_bytes(data[: len(data) // 3])
    elif kind == "zeroed":
        library.write_bytes(data[:4096] + bytes(len(data) - 8192) + data[-4096:])
    elif kind == "empty":
        library.write_bytes(b"")
    elif kind == "foreign":
        library.write_text("this is not a shared library\n")
    elif kind == "missing":
        library.unlink()
    elif kind == "bad-manifest":
        manifest.write_text("{ not json")
    elif kind == "manifest-zeroed":
        manifest.write_bytes(bytes(manifest.stat().st_size))


@emulator_only
@pytest.mark.parametrize("kind", ["truncated", "zeroed", "empty", "foreign", "missing", "bad-manifest",
                                  "manifest-zeroed"])
def test_a_damaged_cache_entry_is_rebuilt_not_loaded(tmp_path, kind):
    first = _run_in_fresh_process(tmp_path)
    assert first.returncode == 0 and first.stdout.startswith("OK"), first.stderr
    cache = tmp_path / "emulator"
    (manifest,) = cache.glob("*.json")
    (library,) = cache.glob("*.so")
    _damage(kind, library, manifest)
    second = _run_in_fresh_process(tmp_path)
    assert second.returncode == 0, f"exit {second.returncode}: {second.stderr[-2000:]}"
    assert second.stdout.startswith("OK") and "Error" not in second.stderr
    assert len(list(cache.glob("*.so"))) == 1 and len(list(cache.glob("*.json"))) == 1


@emulator_only
def test_a_cache_on_another_filesystem_than_tmpdir_works(tmp_path, monkeypatch):
    # A rename across filesystems fails (EXDEV); a build must rename only within the cache folder.
    cache = (tmp_path / "cache").resolve()
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(_emulator.build.tempfile, "tempdir", None)
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(cache))
    real_replace = os.replace

    def replace(src, dst, **kw):
        if (cache in Path(src).resolve().parents) != (cache in Path(dst).resolve().parents):
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(src))
        return real_replace(src, dst, **kw)
    monkeypatch.setattr(os, "replace", replace)
    k = gl.load(code="__global__ void tmpdir_probe(int* x) { x[0] = 5; }").get("tmpdir_probe")
    out = numpy.zeros(1, dtype=numpy.int32)
    k(1, 1, (out,))
    assert out[0] == 5
    assert list(tmpdir.iterdir()) == []
    assert not [p for p in (cache / "emulator").iterdir() if p.name.startswith(".")], "no build folder left"


@emulator_only
@pytest.mark.parametrize("form", ["-I", "-isystem"])
def test_editing_a_header_included_with_angle_brackets_rebuilds(tmp_path, monkeypatch, form):
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    include = tmp_path / "inc"
    include.mkdir()
    header = include / "gl_test_value.h"
    source = "#include <gl_test_value.h>\n__global__ void value(int* x) { x[0] = VALUE; }\n"
    options = (f"-I{include}",) if form == "-I" else ("-isystem", str(include))
    out = numpy.zeros(1, dtype=numpy.int32)
    for value in (1, 2, 3):
        header.write_text(f"#define VALUE {value}\n")
        gl.load(code=source, options=options).get("value")(1, 1, (out,))
        assert out[0] == value


@emulator_only
def test_an_unwritable_cache_falls_back_to_a_private_one_with_a_notice(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = _run_in_fresh_process(blocker / "cache")
    assert result.returncode == 0 and result.stdout.startswith("OK"), result.stderr
    notice = [line for line in result.stderr.splitlines() if line.startswith("gemmlab:")]
    assert len(notice) == 1 and "cannot be written" in notice[0] and "private temporary cache" in notice[0]
    private = notice[0].split("private temporary cache ", 1)[1].split(" ", 1)[0]
    assert not Path(private).exists(), "the private cache is removed when the process ends"


@emulator_only
def test_an_unwritable_home_falls_back_too(tmp_path):
    home = tmp_path / "home-file"
    home.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("GEMMLAB_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), GEMMLAB_BACKEND="emulator")
    result = subprocess.run([sys.executable, "-c", RUN_ONE], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.startswith("OK"), result.stderr
    assert "private temporary cache" in result.stderr


# ---------------------------------------------------------------------------------------------
# 5. No silent wrong results
# ---------------------------------------------------------------------------------------------

@emulator_only
@pytest.mark.parametrize("at, side", [(10, "4 bytes past its end"), (11, "8 bytes past its end"),
                                      (13, "16 bytes past its end"), (-1, "4 bytes before its start"),
                                      (-3, "12 bytes before its start")])
def test_every_out_of_bounds_read_is_an_error_naming_argument_and_element(mod, at, side):
    x, y = _f32(10), numpy.zeros(1, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=rf"kernel read_at: out-of-bounds access .* reads 4 bytes at element "
                                               rf"{at} of argument 0 \('x'\) \(float32, 10 elements\): {side}"):
        mod.get("read_at")(1, 1, (x, y, at))
    assert y[0] == 0


@emulator_only
@pytest.mark.parametrize("at", [12, 13, 20, -5, -6])
def test_every_out_of_bounds_write_is_an_error_and_nothing_is_written(mod, at):
    base = numpy.zeros(16, dtype=numpy.float32)
    y = base[4:11]                                # a view: a pointer into base, which ends 5 elements past it
    with pytest.raises(gl.EmulatorError, match=rf"writes 4 bytes at element {at} of argument 0 \('y'\) "
                                               r"\(float32, 7 elements\): .*, and outside the 64 bytes of the "
                                               r"array it is a view of"):
        mod.get("write_at")(1, 1, (y, at))
    assert not base.any()


@emulator_only
@pytest.mark.parametrize("at", [7, 11, -1, -4])
def test_a_write_past_a_views_ends_lands_in_its_array_as_on_a_gpu(mod, at):
    base = numpy.zeros(16, dtype=numpy.float32)
    mod.get("write_at")(1, 1, (base[4:11], at))
    assert base[4 + at] != 0 and numpy.count_nonzero(base) == 1


@emulator_only
def test_out_of_bounds_is_exact_to_the_byte_and_for_wide_loads(mod):
    x, y = numpy.arange(13, dtype=numpy.uint8), numpy.zeros(1, dtype=numpy.uint8)
    mod.get("read_byte")(1, 1, (x, y, 12))
    assert y[0] == 12
    with pytest.raises(gl.EmulatorError, match=r"reads 1 bytes at element 13 of argument 0 \('x'\)"):
        mod.get("read_byte")(1, 1, (x, y, 13))
    v = numpy.arange(12, dtype=numpy.float32)     # three float4
    out = numpy.zeros(4, dtype=numpy.float32)
    mod.get("read_float4")(1, 1, (v, out, 2))
    assert numpy.array_equal(out, v[8:])
    with pytest.raises(gl.EmulatorError, match=r"reads 16 bytes at element 12 of argument 0 \('x'\)"):
        mod.get("read_float4")(1, 1, (v, out, 3))


SHARED = r'''
template <int N>
__global__ void shared_overrun(float* y)
{
    __shared__ float s[N];
    s[threadIdx.x] = threadIdx.x;                       // one thread too many writes past s
    __syncthreads();
    y[threadIdx.x % N] = s[threadIdx.x % N];
}
__global__ void shared_underrun(float* y)
{
    __shared__ __align__(16) float s[32];
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    y[threadIdx.x] = s[(int)threadIdx.x - 1];           // thread 0 reads s[-1]
}
__global__ void dynamic_overrun(float* y, int n)
{
    extern __shared__ float d[];
    d[threadIdx.x] = 1.0f;                              // the launch gave n floats
    __syncthreads();
    y[threadIdx.x] = d[threadIdx.x];
}
template <int B>
__global__ void static_shared(float* y)                 // 32 KiB + B floats of static shared memory
{
    __shared__ float a[8192];
    __shared__ float b[B];
    a[threadIdx.x] = 1.0f;
    b[threadIdx.x] = 2.0f;
    __syncthreads();
    y[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}
'''


@pytest.fixture(scope="module")
def shared():
    return gl.load(code=SHARED)


@emulator_only
def test_a_shared_array_overrun_is_an_error_naming_the_array(shared):
    y = numpy.zeros(33, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"thread \(32,0,0\) at <code>:6: writes 4 bytes at byte offset 128 "
                                               r"of the __shared__ array 's' \(128 bytes, declared at <code>:5\)"):
        shared.get("shared_overrun<32>")(1, 33, (y,))
    shared.get("shared_overrun<33>")(1, 33, (y,))
    assert numpy.array_equal(y, numpy.arange(33, dtype=numpy.float32))
    with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes at byte offset -4 of the __shared__ array 's'"):
        shared.get("shared_underrun")(1, 32, (numpy.zeros(32, dtype=numpy.float32),))


@emulator_only
@pytest.mark.parametrize("given", [0, 4 * 31])
def test_dynamic_shared_memory_beyond_the_launch_is_an_error(shared, given):
    y = numpy.zeros(32, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=rf"dynamic shared memory at byte offset {given}, but the launch gave "
                                               rf"shared_mem = {given} bytes"):
        shared.get("dynamic_overrun")(1, 32, (y, given // 4), shared_mem=given)
    shared.get("dynamic_overrun")(1, 32, (y, 32), shared_mem=128)
    assert (y == 1).all()


@emulator_only
def test_static_shared_memory_over_the_device_limit_is_an_error(shared):
    y = numpy.zeros(32, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"kernel static_shared<6144> uses 57344 bytes of static shared "
                                               r"memory, over CUDA's limit of 49152 bytes"):
        shared.get("static_shared<6144>")(1, 32, (y,))
    shared.get("static_shared<4096>")(1, 32, (y,))
    assert (y == 3).all()



NEAR = r"""
template <class T>
__global__ void dynamic_at(float* y, int at, int write)        // extern __shared__ T s[32]; touches s[at]
{
    extern __shared__ __align__(16) unsigned char raw[];
    T* s = reinterpret_cast<T*>(raw);
    s[threadIdx.x] = T(1);
    __syncthreads();
    if (threadIdx.x == 0) { if (write) s[at] = T(2); else y[0] = (float)s[at]; }
}
template <class T>
__global__ void static_at(float* y, int at, int write)         // three __shared__ T[N]; touches the middle one's [at]
{
    __shared__ T a[32], s[32], b[32];
    a[threadIdx.x] = T(1); s[threadIdx.x] = T(1); b[threadIdx.x] = T(1);
    __syncthreads();
    if (threadIdx.x == 0) { if (write) s[at] = T(2); else y[0] = (float)(s[at] + a[0] + b[0]); }
}
template <class T, int N>
__global__ void local_at(float* y, int at, int write)          // a thread's local T[N]; touches [at]
{
    T l[N];
    for (int i = 0; i < N; ++i) l[i] = T(i);
    T* p = l;
    if (write) p[at] = T(2);
    else y[0] = (float)p[at];
    y[0] += (float)p[N - 1];
}
__global__ void stencil(const float* x, float* y, int n)       // the classic halo bug: s[tid - 1] in thread 0
{
    extern __shared__ float s[];
    int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = (tid > 0 ? s[tid - 1] : 0.0f) + s[tid] + s[tid + 1 < blockDim.x ? tid + 1 : tid];
    if (i < n && tid == 0) y[i] += s[tid - 1];
}
__global__ void unsigned_halo(const float* x, float* y)         // s[threadIdx.x - 1]: 4294967295 in thread 0
{
    extern __shared__ float s[];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x - 1];
}
__global__ void unsigned_row(const float* x, float* y)          // the row above: tile[threadIdx.y - 1] in row 0
{
    __shared__ float tile[2][33];
    tile[threadIdx.y][threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = tile[threadIdx.y - 1][threadIdx.x];
}
__global__ void big_then_small(float* y, int row, int col)     // big[row][col], with a small array after big
{
    __shared__ float big[32][128];
    __shared__ float small[4];
    big[threadIdx.x][threadIdx.x] = 1.0f;
    if (threadIdx.x < 4) small[threadIdx.x] = 2.0f;
    __syncthreads();
    if (threadIdx.x == 0) y[0] = big[row][col] + small[0];
}
__global__ void copy_under(const float* x, float* y, int n)     // memcpy to 4 bytes before dynamic shared memory
{
    extern __shared__ float d[];
    if (threadIdx.x == 0) memcpy(d - 1, x, n * sizeof(float));
    __syncthreads();
    y[threadIdx.x] = d[threadIdx.x];
}
__global__ void copy_past(const float* x, float* y, int n)      // one float too many, through std::memcpy
{
    if (threadIdx.x == 0) std::memcpy(y, x, (n + 1) * sizeof(float));
}
__global__ void copy_local(float* y)                            // a constant size past a local array
{
    float l[2];
    memcpy(l, y, 16);
    y[0] = l[0];
}
__global__ void set_past(float* y, int n)
{
    if (threadIdx.x == 0) memset(y, 0, n * sizeof(float));
}
"""


@pytest.fixture(scope="module")
def near():
    return gl.load(code=NEAR)


ELEMENTS = {"char": 1, "short": 2, "float": 4, "double": 8}


@emulator_only
@pytest.mark.parametrize("write", [0, 1])
@pytest.mark.parametrize("at", [-1, -2, -5, 32, 33, 40])
@pytest.mark.parametrize("element", list(ELEMENTS))
def test_every_access_near_a_shared_arrays_ends_is_an_error(near, element, at, write):
    """However near its start or end, an access outside a shared array is caught and named, in dynamic shared
    memory (whose start nothing else guards) as in the static arrays between others."""
    item, y = ELEMENTS[element], numpy.zeros(1, dtype=numpy.float32)
    verb = "writes" if write else "reads"
    offset = at * item
    side = f"{-offset} bytes before its start" if at < 0 else None
    with pytest.raises(gl.EmulatorError, match=rf"{verb} {item} bytes of dynamic shared memory at byte offset "
                                               rf"{offset}" + (rf": {side}" if side else ", but the launch gave "
                                                               rf"shared_mem = {32 * item} bytes")):
        near.get(f"dynamic_at<{element}>")(1, 32, (y, at, write), shared_mem=32 * item)
    side = side or f"{offset + item - 32 * item} bytes past its end"
    with pytest.raises(gl.EmulatorError, match=rf"{verb} {item} bytes at byte offset {offset} of the __shared__ "
                                               rf"array 's' \({32 * item} bytes, .*\): {side}"):
        near.get(f"static_at<{element}>")(1, 32, (y, at, write))
    near.get(f"dynamic_at<{element}>")(1, 32, (y, 31, write), shared_mem=32 * item)     # the last element is fine
    near.get(f"static_at<{element}>")(1, 32, (y, 0, write))


@emulator_only
@pytest.mark.parametrize("write", [0, 1])
@pytest.mark.parametrize("element, n", [("char", 5), ("short", 7), ("float", 1), ("float", 33), ("double", 3)])
def test_every_access_just_outside_a_local_array_is_an_error(near, element, n, write):
    y = numpy.zeros(1, dtype=numpy.float32)
    kernel = near.get(f"local_at<{element}, {n}>")
    for at in (-1, n, n + 1):
        with pytest.raises(gl.EmulatorError, match=rf"of the thread's local array 'l' .*: \d+ bytes "
                                                   rf"{'before its start' if at < 0 else 'past its end'}"):
            kernel(1, 1, (y, at, write))
    kernel(1, 1, (y, n - 1, write))


@emulator_only
def test_the_halo_bug_is_caught_in_thread_zero(near):
    x, y = numpy.ones(64, dtype=numpy.float32), numpy.zeros(64, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"block \(0,0,0\), thread \(0,0,0\) at <code>:\d+: reads 4 bytes of "
                                               r"dynamic shared memory at byte offset -4: 4 bytes before its start"):
        near.get("stencil")(2, 32, (x, y, 64), shared_mem=128)


@emulator_only
def test_an_unsigned_index_below_zero_is_named_as_one(near):
    x, y = numpy.ones(32, dtype=numpy.float32), numpy.zeros(32, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"thread \(0,0,0\) at <code>:\d+: the address is element 4294967295 "
                                               r"of the dynamic shared memory for 4-byte elements \(or rows\), an "
                                               r"unsigned 32-bit index that went below 0 and wrapped \(-1 as an int\)"):
        near.get("unsigned_halo")(1, 32, (x, y), shared_mem=128)
    assert (y == 0).all()
    with pytest.raises(gl.EmulatorError, match=r"element 4294967295 of the __shared__ array 'tile' for 132-byte "
                                               r"elements \(or rows\)"):
        near.get("unsigned_row")(1, (32, 2), (x, y))


@emulator_only
def test_the_gap_after_a_large_shared_array_is_as_large_as_it_needs_whatever_follows(near):
    """An array's gap guards both its neighbours: a row past a large tile is caught even when a small array follows
    it, and named as an access past the tile."""
    y = numpy.zeros(64, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes at byte offset 16640 of the __shared__ array 'big' "
                                               r"\(16384 bytes, .*\): 260 bytes past its end"):
        near.get("big_then_small")(1, 32, (y, 32, 64))
    near.get("big_then_small")(1, 32, (y, 31, 127))


@emulator_only
@pytest.mark.parametrize("kernel, says", [
    ("copy_under", r"writes 128 bytes of dynamic shared memory at byte offset -4: 4 bytes before its start"),
    ("copy_past", r"at <code>:\d+: writes 132 bytes at element 0 of argument 1 \('y'\) .*: 4 bytes past its end"),
    ("copy_local", r"writes 8 bytes at byte offset 8 of the thread's local array 'l' \(8 bytes\): 8 bytes past"),
    ("set_past", r"writes 36 bytes at element 0 of argument 0 \('y'\) .*: 4 bytes past its end"),
])
def test_memcpy_and_memset_are_checked_as_loads_and_stores_are(near, kernel, says):
    """The compiler leaves memcpy, memmove and memset calls unchecked (a size it cannot see, or a small constant):
    the emulator checks both ranges before the copy, at the kernel's line."""
    x = numpy.arange(64, dtype=numpy.float32)
    args = {"copy_under": (x, numpy.zeros(32, numpy.float32), 32), "copy_past": (x[:32], numpy.zeros(32, numpy.float32), 32),
            "copy_local": (numpy.zeros(8, numpy.float32),), "set_past": (numpy.ones(8, numpy.float32), 9)}[kernel]
    with pytest.raises(gl.EmulatorError, match=says):
        near.get(kernel)(1, 32, args, shared_mem=128)


@pytest.mark.parametrize("value", [1e300, -1e39, 10**40])
def test_a_float_argument_out_of_range_is_refused(mod, value):
    y = gl.xp.ones(4, dtype=numpy.float32)
    with pytest.raises(ValueError, match=r"argument 's' = .* is out of the range of float .* it would become inf"):
        mod.get("scale")(1, 4, (y, value))


def test_float_arguments_in_range_and_explicit_infinities_pass(mod):
    y = gl.xp.ones(4, dtype=numpy.float32)
    mod.get("scale")(1, 4, (y, 3e38))
    mod.get("scale")(1, 4, (y, float("inf")))
    assert (gl.to_host(y) == numpy.inf).all()


# ---------------------------------------------------------------------------------------------
# 6. Messages that say what happened
# ---------------------------------------------------------------------------------------------

STOPS = r'''
#include <cassert>
__global__ void big_local(float* y)
{
    float local[400000];                                 // 1.6 MB: more than any GPU thread may have
    for (int i = 0; i < 400000; ++i) local[i] = i * y[0];
    y[threadIdx.x] = local[threadIdx.x * 1000];
}
__global__ void asserting(const float* x, float* y)
{
    assert(x[threadIdx.x] >= 0.0f && "inputs must not be negative");
    y[threadIdx.x] = x[threadIdx.x];
}
__global__ void exiting(float* y)
{
    y[threadIdx.x] = 1.0f;
    if (threadIdx.x == 3) exit(2);
}
'''


@pytest.fixture(scope="module")
def stops():
    return gl.load(code=STOPS)


@emulator_only
def test_a_huge_local_array_is_named_as_stack_overflow(stops):
    with pytest.raises(gl.EmulatorError, match=r"kernel big_local overflowed a thread's stack \(local memory\) "
                                               r"in block \(0,0,0\), thread \(0,0,0\) at <code>:\d+: its local "
                                               r"variables need more than the 1024 KiB of stack"):
        stops.get("big_local")(1, 2, (numpy.ones(2, dtype=numpy.float32),))


@emulator_only
def test_a_failed_assert_shows_its_text_and_line(stops):
    x = numpy.array([1, 2, -3, 4], dtype=numpy.float32)
    y = numpy.zeros(4, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"kernel asserting, block \(0,0,0\), thread \(2,0,0\): assertion "
                                               r"`x\[threadIdx.x\] >= 0.0f && \"inputs must not be negative\"' "
                                               r"failed at <code>:11"):
        stops.get("asserting")(1, 4, (x, y))
    assert not y.any()
    stops.get("asserting")(1, 4, (numpy.abs(x), y))
    assert numpy.array_equal(y, numpy.abs(x))


@emulator_only
def test_exit_in_a_kernel_is_an_error_not_a_half_finished_result(stops):
    y = numpy.zeros(8, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"kernel exiting.*thread \(3,0,0\).*exit\(2\)"):
        stops.get("exiting")(1, 8, (y,))
    assert not y.any()


@emulator_only
def test_process_ending_calls_are_errors_too():
    k = gl.load(code="#include <unistd.h>\n__global__ void quits(float* y) { y[threadIdx.x] = 1; _exit(0); }")
    y = numpy.zeros(4, dtype=numpy.float32)
    with pytest.raises(gl.EmulatorError, match=r"ended the emulator's process .* before the grid finished"):
        k.get("quits")(1, 4, (y,))
    assert not y.any()


def test_template_compile_errors_point_at_the_users_line(tmp_path):
    src = tmp_path / "tpl.cu"
    src.write_text("// a template whose instances are checked\n\ntemplate <int N>\n__global__ void tpl(float* x)\n{\n"
                   "    static_assert(N % 2 == 0, \"N must be even\");\n    x[0] = N;\n}\n")
    with pytest.raises(gl.CompileError) as info:
        gl.load(src).get("tpl<3>")
    assert f"{src}:6: error" in str(info.value) and "N must be even" in str(info.value)
    assert "100000" not in str(info.value)
    with pytest.raises(gl.CompileError) as info:
        gl.load(src).get("tpl<float>")
    text = str(info.value)
    assert "100000" not in text and "launcher" not in text and f"{src}:" in text


def test_a_string_of_options_is_one_option():
    k = gl.load(code="__global__ void opt(int* x) { x[0] = FOO; }", options="-DFOO=2").get("opt")
    out = gl.xp.zeros(1, dtype=numpy.int32)
    k(1, 1, (out,))
    assert int(gl.to_host(out)[0]) == 2
    with pytest.raises(ValueError, match="options must be compiler options as strings"):
        gl.load(code="__global__ void opt(int* x) { }", options=("-DX=1", 3))


@emulator_only
@pytest.mark.parametrize("script, error, says", [
    ("exit 3", gl.CompileError, "the C\\+\\+ compiler {cxx} failed with exit code 3 [\\s\\S]*it printed nothing"),
    ("echo 'cc1plus: out of memory allocating 42 bytes' >&2; exit 1", gl.MachineError,
     "could not build failing_cxx: out of memory: cc1plus: out of memory allocating 42 bytes. This is the machine, "
     "not your kernel"),
    ("kill -9 $$", gl.MachineError, "the C\\+\\+ compiler was killed by SIGKILL"),
])
def test_a_failing_compiler_says_which_and_what_it_printed(tmp_path, monkeypatch, script, error, says):
    cxx = tmp_path / "broken-c++"
    cxx.write_text(f"#!/bin/sh\ncase \"$1\" in --version) echo 'broken 1.0'; exit 0;; esac\n{script}\n")
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(error, match=says.replace("{cxx}", re.escape(str(cxx)))):
        gl.load(code="__global__ void failing_cxx(int* x) { }").get("failing_cxx")


@pytest.mark.parametrize("said, machine", [
    ("g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.", "out of memory, or stopped"),
    ("collect2: fatal error: ld terminated with signal 9 [Killed]", "out of memory, or stopped"),
    ("/usr/bin/ld: final link failed: No space left on device", "the disk is full"),
    ("cc1plus: fatal error: error writing to /tmp/x/ccA.s: No space left on device", "the disk is full"),
    ("/usr/bin/ld: cannot open output file unit.so: Read-only file system", "a read-only file system"),
    ("cc1plus: out of memory allocating 42 bytes after a total of 1 bytes", "out of memory"),
    ("{standard input}: Fatal error: can't close /tmp/x/ccAb12.o: No space left on device", "the disk is full"),
    ("/tmp/x/ccQ.s:5: Fatal error: can't write 22 bytes to section .text: 'No space left on device'", "the disk is full"),
    ("x86_64-linux-gnu-g++-12: fatal error: Killed signal terminated program cc1plus", "out of memory, or stopped"),
    ("clang++: error: unable to execute command: Killed", "out of memory, or stopped"),
    ("LLVM ERROR: out of memory", "out of memory"),
    ("<code>:4:5: error: 'oops' was not declared in this scope\n    4 |  printf(\"No space left on device\"), oops;",
     None),
    ("kernel.cu:3:1: error: expected ';' (out of memory)", None),
])
def test_only_the_tools_own_words_make_a_failed_build_the_machines(said, machine):
    """A compiler's or linker's own line about the disk or memory is the machine's; the same words quoted from the
    kernel's source beside an error are the kernel's."""
    got = _emulator.build._machine_failure(Path("/tmp/x"), said, 1)
    assert (got is None) if machine is None else got.startswith(machine)


@emulator_only
def test_a_kernel_whose_failing_line_speaks_of_memory_is_still_a_compile_error(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text('#include <cstdio>\n__global__ void k(int* p)\n{\n    if (p[0] < 0) printf("out of memory\\n"), '
                      'undefined_var++;\n}\n')
    with pytest.raises(gl.CompileError, match="undefined_var"):
        gl.load(str(source)).get("k")


@pytest.mark.parametrize("routine", ["dot", "gemv", "gemm"])
def test_blas_on_a_float32_view_of_another_dtype_names_the_argument(routine):
    wide = gl.xp.zeros(32, dtype=numpy.float64)
    v = wide.view(numpy.float32)                         # 64 float32s over float64 memory
    A = v.reshape(8, 8, order="F")                       # and a column-major matrix over it
    assert A.flags.f_contiguous and A.dtype == numpy.float32
    with pytest.raises(gl.blas.BlasError, match=r"argument \d \((x|A)\) is a float32 view of a float64 array"):
        if routine == "dot":
            gl.blas.dot(v, gl.xp.ones(64, dtype=numpy.float32))
        elif routine == "gemv":
            gl.blas.gemv("N", 1.0, A, gl.xp.ones(8, dtype=numpy.float32), 0.0, gl.xp.zeros(8, dtype=numpy.float32))
        else:
            gl.blas.gemm("N", "N", 1.0, A, gl.xp.ones((8, 8), dtype=numpy.float32, order="F"), 0.0,
                         gl.xp.zeros((8, 8), dtype=numpy.float32, order="F"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_child_processes_die_with_their_parent(tmp_path):
    # the compiler, the crosscheck's emulator half, ncu and compute-sanitizer all run through this
    script = "from gemmlab import processes; processes.run(['sleep', '300'])"
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        kids = []
        while time.monotonic() < deadline and not kids:
            kids = _children(parent.pid)
            time.sleep(0.05)
        assert kids, "the child did not start"
        parent.kill()
        parent.wait(timeout=30)
        assert all(_gone(k) for k in kids), "a child outlived its parent"
    finally:
        parent.kill()
        parent.wait()


@emulator_only
def test_leftovers_of_a_killed_build_are_swept(tmp_path, monkeypatch):
    cache = tmp_path / "emulator"
    cache.mkdir()
    old_build, old_tmp, fresh = cache / ".build-abc", cache / ".x.json.tmp", cache / ".build-now"
    old_build.mkdir()
    (old_build / "unit.cpp").write_text("half")
    old_tmp.write_text("{")
    fresh.mkdir()
    for p in (old_build, old_tmp):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_emulator.build, "_ready", set())
    _emulator._cache_dir()
    assert not old_build.exists() and not old_tmp.exists()
    assert fresh.exists(), "a build under way in another process is left alone"


@emulator_only
def test_the_memory_check_setting_is_validated_and_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GEMMLAB_EMULATOR_MEMCHECK", "yes")
    with pytest.raises(ValueError, match="GEMMLAB_EMULATOR_MEMCHECK='yes' must be 1"):
        gl.load(code="__global__ void mc(float* y) { y[0] = 1; }").get("mc")
    monkeypatch.setenv("GEMMLAB_EMULATOR_MEMCHECK", "0")
    k = gl.load(code="__global__ void mc(float* y) { y[threadIdx.x] = 1; }").get("mc")
    assert not k.impl.memcheck
    y = numpy.zeros(4, dtype=numpy.float32)
    k(1, 4, (y,))
    assert (y == 1).all()


@emulator_only
def test_an_empty_array_has_no_element_to_touch(mod):
    with pytest.raises(gl.EmulatorError, match=r"reads 4 bytes at element 0 of argument 0 \('x'\) \(float32, 0 elements\)"):
        mod.get("read_at")(1, 1, (numpy.zeros(0, dtype=numpy.float32), numpy.zeros(1, dtype=numpy.float32), 0))


@emulator_only
def test_processes_compiling_the_same_kernel_at_once_all_succeed(tmp_path):
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_CACHE_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", RUN_ONE], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-1000:] for _, err in results]
    assert all(out.startswith("OK") for out, _ in results)
    left = sorted(p.name for p in (tmp_path / "emulator").iterdir() if p.name != "pch")
    assert len(left) == 2 and {name.rsplit(".", 1)[1] for name in left} == {"so", "json"}, left
    from gemmlab import _emulator
    if not _emulator.build._is_gcc(_emulator.build._compiler()):
        return                                                       # (only g++ precompiles the header)
    pch = list((tmp_path / "emulator" / "pch").iterdir())           # the runtime header precompiled once
    assert len(pch) == 1 and sorted(p.name for p in pch[0].iterdir() if not p.is_symlink()) == \
        ["dependencies.json", "gemmlab_emu.h.gch"], pch


@emulator_only
def test_a_kernel_wanted_by_several_threads_at_once_is_built_once_and_loads_in_each(tmp_path, monkeypatch):
    """Builds of one kernel at once would each publish a library and remove the other's just before the other
    loads it (the tests on every core do this): one builds, the others wait for it and load its library."""
    import threading

    from gemmlab.runtime.emulator import build
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    builds, real = [], build._build

    def slow_build(*args, **kw):
        builds.append(1)
        time.sleep(0.5)                              # long enough for every thread to want the same key
        return real(*args, **kw)

    monkeypatch.setattr(build, "_build", slow_build)
    code = "__global__ void wanted_by_all(int* x) { x[0] = 7; }"
    errors, outs = [], []

    def one():
        try:
            out = numpy.zeros(1, dtype=numpy.int32)
            gl.load(code=code).get("wanted_by_all")(1, 1, (out,))
            outs.append(int(out[0]))
        except Exception as exc:                     # reported below, not lost in a thread
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and outs == [7, 7, 7, 7] and len(builds) == 1, (errors, outs, builds)
    assert len(list((tmp_path / "emulator").glob("*.so"))) == 1


@pytest.fixture
def fresh_cache_state(monkeypatch):
    """This process's record of caches it gave up on, and its private cache, as a new process has them."""
    monkeypatch.setattr(_emulator.build, "_given_up", {})
    monkeypatch.setattr(_emulator.build, "_private_cache", None)
    monkeypatch.setattr(_emulator.build, "_ready", set())


@emulator_only
def test_a_full_disk_under_the_cache_says_so_and_keeps_the_old_entries(tmp_path, monkeypatch, capfd,
                                                                      fresh_cache_state):
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    gl.load(code="__global__ void kept(int* x) { x[0] = 1; }").get("kept")
    before = sorted(p.name for p in (tmp_path / "emulator").iterdir())
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(gl.MachineError, match=r"could not build not_kept: its build cache .* could not be written "
                                              r"\(the disk is full: No space left on device\)\. This is the "
                                              r"machine, not your kernel"):
        gl.load(code="__global__ void not_kept(int* x) { x[0] = 2; }").get("not_kept")
    assert "private temporary cache" in capfd.readouterr().err     # (tried there too: fsync fails everywhere)
    monkeypatch.setattr(os, "fsync", os.fdatasync)
    assert sorted(p.name for p in (tmp_path / "emulator").iterdir()) == before, "nothing new, nothing lost"
    out = numpy.zeros(1, dtype=numpy.int32)
    gl.load(code="__global__ void kept(int* x) { x[0] = 1; }").get("kept")(1, 1, (out,))
    assert out[0] == 1


# A compiler that the machine stops as it writes its output, saying what g++ and ld say then
_FAILING_WRITES = """#!/bin/sh
for a in "$@"; do
    case "$a" in
        unit.so|unit.o|gemmlab_emu.h.gch) echo "/usr/bin/ld: final link failed: {said}" >&2
                                          echo "collect2: error: ld returned 1 exit status" >&2; exit 1;;
    esac
done
exec {gxx} "$@"
"""


@emulator_only
@pytest.mark.parametrize("said, plain", [("No space left on device", "the disk is full"),
                                         ("Disk quota exceeded", "the disk quota is used up"),
                                         ("Read-only file system", "a read-only file system")])
def test_a_build_the_machine_stops_is_named_as_the_machines_not_the_kernels(tmp_path, monkeypatch, capfd, said,
                                                                          plain, fresh_cache_state):
    """The compiler's own words for a full disk (or a read-only one) make a MachineError that says so, after
    the build tried a private cache too; an exercise's check raises it rather than judging the reader's code;
    no build folder is left in either cache."""
    import shutil as _shutil
    gxx = _shutil.which("g++")
    if gxx is None:
        pytest.skip("needs g++")
    script = tmp_path / "cxx"
    script.write_text(_FAILING_WRITES.format(said=said, gxx=gxx))
    script.chmod(0o755)
    monkeypatch.setenv("CXX", str(script))
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(gl.MachineError, match=rf"could not be written \({plain}: /usr/bin/ld: final link failed: "
                                              rf"{said}\)\. This is the machine, not your kernel"):
        gl.load(code="__global__ void k(int* x) { x[0] = 1; }").get("k")
    assert "using a private temporary cache" in capfd.readouterr().err
    with pytest.raises(gl.MachineError, match="not your kernel"):
        gl.exercises.check("axpy", gl.exercises.solution("axpy"))
    assert "does not compile" not in capfd.readouterr().out
    private = _emulator.build._private_cache
    for cache in (tmp_path / "cache" / "emulator", private):
        assert not list(cache.glob(".build-*")) and not list(cache.glob("*.so")), cache


def _in_a_namespace_with_a_small_disk(script, tmp_path, mode):
    """Run script under `unshare` with GEMMLAB_CACHE_DIR on a 64 MiB tmpfs of its own; None where this machine
    gives no such namespace."""
    import shutil as _shutil
    if _shutil.which("unshare") is None or not sys.platform.startswith("linux"):
        return None
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64m none {disk}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    code = tmp_path / "script.py"
    code.write_text(script)
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_CACHE_DIR": str(disk),
           "PYTHONPATH": str(REPO / "lib")}
    return subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64m none {disk} && "
                           f"{sys.executable} {code} {disk} {mode}"], env=env, capture_output=True, text=True,
                          timeout=600)


_SMALL_DISK = r"""
import os, subprocess, sys
import numpy
import gemmlab as gl
disk, mode = sys.argv[1], sys.argv[2]
gl.load(code="__global__ void one(int* x) { x[0] = 1; }").get("one")
if mode == "full":                      # a disk with 200 KiB left: room for the source, not the library
    with open(os.path.join(disk, "filler"), "wb") as f:
        try:
            while True:
                f.write(bytes(1 << 16))
        except OSError:
            pass
    os.truncate(os.path.join(disk, "filler"), os.path.getsize(os.path.join(disk, "filler")) - 200 * 1024)
else:
    subprocess.run(["mount", "-o", "remount,ro", disk], check=True)
out = numpy.zeros(1, dtype=numpy.int32)
gl.load(code="__global__ void two(int* x) { x[0] = 2; }").get("two")(1, 1, (out,))
assert out[0] == 2
assert gl.exercises.check("axpy", gl.exercises.solution("axpy"), quiet=True) is True
left = [p for p in os.listdir(os.path.join(disk, "emulator")) if p.startswith(".build-")]
print("OK", left)
"""


@emulator_only
@pytest.mark.parametrize("mode", ["full", "read-only"])
def test_a_cache_on_a_full_or_read_only_disk_moves_to_a_private_one_and_says_why(tmp_path, mode):
    """On a real small disk: the build that fails for want of room (or of a writable disk) is not the kernel's
    fault; the process builds in a private cache from then on, says so once, and leaves no build folder."""
    done = _in_a_namespace_with_a_small_disk(_SMALL_DISK, tmp_path, mode)
    if done is None:
        pytest.skip("this machine gives no mount namespace (unshare) for a disk of its own")
    assert done.returncode == 0 and done.stdout.strip() == "OK []", done.stderr[-3000:]
    notices = [line for line in done.stderr.splitlines() if line.startswith("gemmlab:")]
    why = "the disk is full: " if mode == "full" else "a read-only file system: "
    assert len(notices) == 1 and why in notices[0] and "private temporary cache" in notices[0], done.stderr


@emulator_only
def test_a_process_killed_while_it_holds_a_builds_lock_holds_up_nobody(tmp_path):
    """The lock on a cache key belongs to its open file: a holder killed mid-build lets go of it as it dies,
    and the next build of the key goes ahead at once; the killed build's folder is swept by the next process."""
    cache = tmp_path / "emulator"
    cache.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from gemmlab.runtime.emulator import build
        cache = Path({str(cache)!r})
        with build._building(cache, "key"):
            build._build_folder(cache)
            print("holding", flush=True)
            time.sleep(300)
        """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "lib")})
    try:
        assert holder.stdout.readline().strip() == "holding"
        left = list(cache.glob(".build-*"))
        assert len(left) == 1
        holder.kill()
        holder.wait(timeout=30)
        start = time.monotonic()
        with _emulator.build._building(cache, "key"):
            pass
        assert time.monotonic() - start < 2
        _emulator.build._sweep(cache)
        assert not left[0].exists(), "a dead process's build folder is swept at once"
        mine = _emulator.build._build_folder(cache)
        _emulator.build._sweep(cache)
        assert mine.exists(), "a live process's build folder is left alone"
    finally:
        holder.kill()
        holder.wait()


@emulator_only
def test_a_cache_removed_while_a_process_runs_is_made_again(tmp_path, monkeypatch, fresh_cache_state):
    import shutil as _shutil
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    gl.load(code="__global__ void one(int* x) { x[0] = 1; }").get("one")
    _shutil.rmtree(tmp_path / "cache")
    out = numpy.zeros(1, dtype=numpy.int32)
    gl.load(code="__global__ void two(int* x) { x[0] = 2; }").get("two")(1, 1, (out,))
    assert out[0] == 2 and list((tmp_path / "cache" / "emulator").glob("*.so"))


@pytest.mark.parametrize("odd", ["dollar$sign", "hash#mark", "new\nline", "sp ace"])
def test_a_cache_or_kernel_folder_with_make_syntax_in_its_name_builds(tmp_path, odd):
    """A dependency file escapes $ and #, and cannot hold a newline: the build must not read back file names
    from it that do not exist, wherever the cache and the kernel's folder are."""
    if gl.on_gpu:
        pytest.skip("the emulator's build")
    import subprocess
    import sys
    cache, kernels = tmp_path / f"cache {odd}", tmp_path / f"kernels {odd}"
    kernels.mkdir()
    (kernels / "scale.cuh").write_text("__device__ float twice(float v) { return 2 * v; }\n")
    (kernels / "k.cu").write_text('#include "scale.cuh"\n__global__ void k(float* out) { out[threadIdx.x] = twice(threadIdx.x); }\n')
    script = ("import numpy, gemmlab as gl, sys\n"
              "m = gl.load(sys.argv[1])\n"
              "out = numpy.zeros(8, dtype=numpy.float32)\n"
              "m.get('k')(1, 8, (out,))\n"
              "assert (out == 2 * numpy.arange(8)).all(), out\n"
              "print('ok')\n")
    env = {**__import__("os").environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_CACHE_DIR": str(cache)}
    for _ in range(2):                                         # a fresh build, then the cached one
        proc = subprocess.run([sys.executable, "-c", script, str(kernels / "k.cu")], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def _broken_copies(tmp_path, name):
    """The record ``name`` as found in results/, then damaged in the ways a file gets damaged."""
    from gemmlab import record
    good = (record.RESULTS / f"{name}.json").read_text()
    data = json.loads(good)
    prefix = max((p for p in record.SHAPES if name.startswith(p)), key=len)
    first = next(iter(record.SHAPES[prefix]))                     # a field that kind of record must have
    return {"truncated": good[: len(good) // 2], "empty": "", "a list": "[1, 2]",
            "no environment": json.dumps({k: v for k, v in data.items() if k != "environment"}),
            f"no {first}": json.dumps({k: v for k, v in data.items() if k != first}),
            f"{first} of the wrong type": json.dumps({**data, first: "x" if not isinstance(data[first], str) else 3})}


@pytest.mark.parametrize("name", ["tensor-nvidia-h200", "climb-nvidia-h200", "ladder-nvidia-h200", "blas-nvidia-h200",
                                  "ncu-roof-nvidia-h200", "chapter-14-tensor-cores-nvidia-h100-80gb-hbm3", "ceilings-nvidia-h200",
                                  "sanitizer-nvidia-h200", "sass-sm_90"])
def test_a_damaged_record_is_refused_with_its_file_named(tmp_path, monkeypatch, name):
    from gemmlab import record
    for damage, text in _broken_copies(tmp_path, name).items():
        (tmp_path / f"{name}.json").write_text(text)
        monkeypatch.setattr(record, "RESULTS", tmp_path)
        with pytest.raises(ValueError, match=rf"{tmp_path / name}\.json .*(make it again|restore it)") as info:
            record.load(name)
        assert "\n" not in str(info.value), damage


def test_a_truncated_scaling_csv_is_refused_not_read_short(tmp_path):
    from gemmlab import blasbench
    good = blasbench.scaling_path().read_text()
    assert len(blasbench.scaling_rows()) == sum(len(s) * (len(blasbench.FAMILIES[f]) + 1)
                                                for f, s in blasbench.SCALING_SIZES.items())
    lines = good.splitlines(keepends=True)
    cases = {"cut mid-row": good[: len(good) - 40], "last rows gone": "".join(lines[:-7]),
             "a field emptied": good.replace(",0.", ",,", 1), "a word for a number": good.replace(",0.", ",zero", 1),
             "another header": good.replace("family,size,kernel", "family,n,kernel", 1), "empty": ""}
    for damage, text in cases.items():
        path = tmp_path / "blas-scaling-x.csv"
        path.write_text(text)
        with pytest.raises(ValueError, match=rf"{path}: .*python -m gemmlab blas --record"):
            blasbench.scaling_rows(path)


def _slow_kernel(n: int = 3000) -> str:
    """A kernel that takes the C++ compiler several seconds: many small functions, all inlined into one."""
    funcs = "\n".join(f"__device__ float f{i}(float x) {{ return x * {i}.5f + sinf(x * {i}.25f); }}" for i in range(n))
    body = " ".join(f"s += f{i}(s);" for i in range(n))
    return f"{funcs}\n__global__ void slow(float* o) {{ float s = 0.0f; {body} o[0] = s; }}\n"


def _compilers_in(folder) -> list:
    """Processes whose working folder lies in ``folder`` (the emulator's compiler runs in its build folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(Path(os.readlink(proc / "cwd"))).startswith(str(folder)):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "interrupt"])
def test_a_killed_or_interrupted_compile_leaves_nothing_running_and_no_file_behind(tmp_path, how):
    """The emulator page's promise (appendix/emulator.md): killing the Python process (SIGKILL included) or interrupting it as a notebook does
    stops the compiler and everything it started (cc1plus, as), and leaves no temporary file."""
    if gl.on_gpu:
        pytest.skip("the emulator's build")
    cache, scratch = tmp_path / "cache", tmp_path / "tmp"
    scratch.mkdir()
    (tmp_path / "slow.cu").write_text(_slow_kernel())
    script = "import gemmlab as gl, sys\ngl.load(sys.argv[1]).get('slow')\n"
    env = {**os.environ, "GEMMLAB_BACKEND": "emulator", "GEMMLAB_CACHE_DIR": str(cache), "TMPDIR": str(scratch)}
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "slow.cu")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not _compilers_in(cache) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _compilers_in(cache), f"the compile did not start (or ended first): {proc.poll()}"
    time.sleep(0.5)                                     # let cc1plus get going
    if how == "SIGKILL":
        proc.kill()
    else:
        proc.send_signal(signal.SIGINT)                 # what a notebook's interrupt sends
    proc.wait(timeout=60)
    deadline = time.monotonic() + 1.0                  # the compile itself has seconds to go
    while _compilers_in(cache) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _compilers_in(cache) == [], "a compiler process outlived the Python process"
    assert list(scratch.iterdir()) == [], f"left in TMPDIR: {[p.name for p in scratch.iterdir()]}"


def test_a_grouped_child_and_its_children_die_with_an_interrupt_and_results_come_back():
    """processes.run(group=True): the result of a child that ends, its exit status, check=, a timeout, and no
    grandchild left when the wait is interrupted."""
    from gemmlab import processes
    done = processes.run(["sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True, text=True, group=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        processes.run(["false"], group=True, check=True)
    with pytest.raises(ValueError, match="no standard input"):
        processes.run(["cat"], group=True, input="x", text=True)
    marker = f"gemmlab-test-{os.getpid()}-{time.monotonic_ns()}"
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):           # a child whose own child sleeps on
        processes.run(["sh", "-c", f"sh -c 'sleep 30; echo {marker}' & wait"], group=True, timeout=0.5)
    assert time.monotonic() - start < 10
    alive = _running(marker)
    assert alive == [], f"left running: {alive}"


def test_a_grouped_child_ends_as_it_would_alone():
    """Through the group's shell a child killed by a signal still reads as killed (a negative return code,
    no line added to its stderr), a missing program is a FileNotFoundError, and a timeout names the command."""
    from gemmlab import processes
    done = processes.run(["sh", "-c", "echo hi; kill -SEGV $$"], capture_output=True, text=True, group=True)
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGSEGV, "hi\n", "")
    assert processes.run(["sh", "-c", "kill -KILL $$"], group=True).returncode == -signal.SIGKILL
    with pytest.raises(FileNotFoundError):
        processes.run(["no-such-program-gemmlab"], group=True, capture_output=True)
    with pytest.raises(subprocess.TimeoutExpired) as info:
        processes.run(["sleep", "5"], group=True, timeout=0.2)
    assert info.value.cmd == ["sleep", "5"]
    for bad in (dict(stdin=subprocess.PIPE), dict(start_new_session=False)):
        with pytest.raises(ValueError):
            processes.run(["true"], group=True, **bad)
    assert processes.run(["true"], group=True, stdin=subprocess.DEVNULL, input=None).returncode == 0


def test_groups_run_from_worker_threads_are_killed_when_the_caller_is_interrupted():
    """kill_groups: what sanitize and portability call when interrupted, so that their pools do not wait for
    every worker's tool to end on its own."""
    import threading
    from gemmlab import processes
    marker = f"gemmlab-pool-{os.getpid()}-{time.monotonic_ns()}"
    ended = []
    workers = [threading.Thread(target=lambda: ended.append(
        processes.run(["sh", "-c", f"sleep 30; echo {marker}"], group=True).returncode)) for _ in range(3)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 10
    while len(processes._groups) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    start = time.monotonic()
    processes.kill_groups()
    for w in workers:
        w.join(timeout=10)
    assert time.monotonic() - start < 5 and sorted(ended) == [-signal.SIGKILL] * 3
    alive = _running(marker)
    assert alive == [], f"left running: {alive}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PDEATHSIG is Linux's")
def test_a_group_dies_with_a_parent_that_ignores_sigterm(tmp_path):
    """A parent started with SIGTERM ignored (some job runners do that) passes the ignore on to its children;
    the group's shell must still be told when the parent dies, and kill its group."""
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    marker = f"gemmlab-ign-{tag}"                  # (the script spells it in two pieces: only the group has it)
    script = ("import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "from gemmlab import processes\n"
              f"processes.run(['sh', '-c', 'sleep 30; echo ' + 'gemmlab-ign-' + '{tag}'], group=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout:
        time.sleep(0.05)
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout, "the group did not start"
    proc.kill()
    proc.wait()
    alive = _running(marker)
    assert alive == [], f"left running: {alive}"


ASYNC_COPIES = r'''
#include <cuda_pipeline.h>
// each thread copies in[t] into shared memory asynchronously (WAIT 0: and never waits, only __syncthreads), then
// reads it back
template <int WAIT>
__global__ void staged(const float* in, float* out)
{
    __shared__ __align__(16) float tile[128];
    const int t = threadIdx.x;
    __pipeline_memcpy_async(&tile[t], &in[t], sizeof(float));
    __pipeline_commit();
    if (WAIT) __pipeline_wait_prior(0);
    __syncthreads();
    out[t] = tile[t];
}
// PTX: two groups of copies, x into a, then y into b; wait_group 1 lets the second stay in flight
__global__ void two_groups(const float* x, const float* y, float* out)
{
    __shared__ __align__(16) float a[32], b[32];
    const int t = threadIdx.x;
    const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(&a[t]));
    const unsigned sb = static_cast<unsigned>(__cvta_generic_to_shared(&b[t]));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(x + t) : "memory");
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sb), "l"(y + t) : "memory");
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    out[t] = a[t];
    out[32 + t] = b[t];                                  // (not waited for: a race on a GPU)
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    out[64 + t] = b[t];
}
'''


@pytest.mark.parametrize("wait", [1, 0])
def test_an_asynchronous_copy_read_before_its_wait_is_not_there_yet(wait):
    if not wait and gl.backend != "emulator":
        pytest.skip("a race on a GPU: the emulator makes its wrong answer certain")
    mod = gl.load(code=ASYNC_COPIES)
    x = gl.xp.arange(1, 129, dtype=numpy.float32)
    out = gl.xp.full(128, -1.0, dtype=numpy.float32)
    mod.get(f"staged<{wait}>")(1, 128, (x, out))
    got = gl.to_host(out)
    if wait:
        assert (got == numpy.arange(1, 129)).all()
    else:                                                # (its copy lands when the thread exits)
        assert (got == 0).all()


@emulator_only
def test_a_ptx_wait_group_lands_the_older_groups_only():
    mod = gl.load(code=ASYNC_COPIES, options=("-arch=sm_80",))
    x = numpy.arange(32, dtype=numpy.float32) + 1
    y = 100 + x
    out = numpy.full(96, -1.0, dtype=numpy.float32)
    mod.get("two_groups")(1, 32, (x, y, out))
    assert (out[:32] == x).all() and (out[32:64] == 0).all() and (out[64:] == y).all()
