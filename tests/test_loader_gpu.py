"""The CUDA path of the loader: compile, launch, and the checks that need a real device."""
import numpy
import pytest

import gemmlab as gl

pytestmark = pytest.mark.gpu

TEMPLATED = r'''
#include "scale.cuh"
template <int STEP, typename T>
__global__ void fill(T* out, int n, T value)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * STEP;
    if (i < n) out[i] = scaled(value);
}
extern "C" __global__ void plain(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = i; }
__global__ void big_shared(float* out)
{
    extern __shared__ float tile[];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
'''


@pytest.fixture
def module(tmp_path):
    (tmp_path / "scale.cuh").write_text("template <typename T> __device__ T scaled(T v) { return 2 * v; }\n")
    (tmp_path / "k.cu").write_text(TEMPLATED)
    return gl.load(tmp_path / "k.cu")


def test_template_instances_and_includes(module):
    out = gl.xp.full(10, numpy.nan, dtype=numpy.float64)
    k = module.get("fill", STEP=2, T="double")
    assert k.name == "fill<2, double>"
    k(1, 32, (out, 10, 1.5))
    host = gl.to_host(out)
    assert (host[::2] == 3.0).all() and numpy.isnan(host[1::2]).all()


def test_extern_c_kernel(module):
    out = gl.xp.zeros(100, dtype=numpy.float32)
    module.get("plain")(4, 32, (out, 100))
    assert (gl.to_host(out) == numpy.arange(100)).all()


def test_dynamic_shared_memory_over_48k_opts_in(module):
    k = module.get("big_shared")
    out = gl.xp.zeros(1024, dtype=numpy.float32)
    k(1, 1024, (out,), shared_mem=64 * 1024)          # over the default 48 KiB: needs the opt-in
    assert (gl.to_host(out) == numpy.arange(1023, -1, -1)).all()
    with pytest.raises(ValueError, match="shared memory per block"):
        k(1, 32, (out,), shared_mem=k.limits.shared_per_block_optin + 4)


def test_host_arrays_are_refused(module):
    with pytest.raises(ValueError, match="NumPy array in host memory"):
        module.get("plain")(1, 32, (numpy.zeros(4, dtype=numpy.float32), 4))


def test_register_heavy_kernels_report_their_resources():
    k = gl.load("sgemm/01_naive.cu").get("sgemm_naive")
    assert 0 < k.num_regs <= 255 and k.max_threads_per_block >= 256
    assert "registers/thread" in repr(k)
