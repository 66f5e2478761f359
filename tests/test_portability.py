"""Every configuration a chapter, a study or gl.blas uses compiles with nvcc for every architecture of the
profile table it claims, and launches within each profile's limits or is refused (gemmlab.portability).
CI has no GPU; these tests make a T4's or an A100's compile error, or an over-limit launch, fail here."""
import shutil

import pytest

import gemmlab as gl
from gemmlab import portability, registry

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_the_architectures_are_the_profile_tables():
    assert portability.architectures() == [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0)]
    assert {p.key for p in gl.profiles.PROFILES.values()} >= {"T4", "L4", "RTX 4090", "A100", "H100", "H200"}


def test_used_configurations_cover_the_studies_and_blas_and_are_legal():
    used = {(k, tuple(sorted(p.items()))) for k, p in portability.used()}
    for key, params in gl.climb.CANDIDATES + gl.tensor.TC_CANDIDATES + [(gl.blas.GEMM, gl.blas.GEMM_LARGE)]:
        assert (key, tuple(sorted(registry.get(key).resolve(**params).items()))) in used, key
    assert {k for k, _ in used} == set(registry.REGISTRY)           # every variant, its defaults at least


@nvcc
def test_every_used_configuration_compiles_for_every_architecture_it_claims():
    result = portability.check(jobs=2)
    assert not result["problems"], "\n\n".join(result["problems"])
    assert result["architectures"] == ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"]
    # refusals are declared, not failures: tc/05 and the Hopper kernels on a T4, BF16 / TF32 WMMA below 8.0
    assert result["refused"] > 0 and result["compiled"] > 1000
    assert result["measured"] == result["compiled"]          # ptxas's registers read for every kernel


@nvcc
def test_an_undeclared_refusal_fails_the_check(monkeypatch):
    """tc/05's mma.sync m16n8k16 does not exist on sm_75: without its declaration the check must fail."""
    import dataclasses
    five = registry.get("tc/05_mma_sync")
    monkeypatch.setitem(registry.REGISTRY, five.key, dataclasses.replace(five, needs=()))
    monkeypatch.setattr(portability, "used", lambda: [(five.key, five.resolve())])
    problems = portability.check(jobs=2)["problems"]
    assert any("tc/05_mma_sync.cu does not compile for sm_75" in p for p in problems), problems


@nvcc
def test_an_over_limit_launch_that_is_not_refused_fails_the_check(monkeypatch):
    """A variant whose refusal of an over-limit launch is missing (does_not_fit says nothing) is reported."""
    v = registry.get("sgemm/11_cp_async")
    big = v.resolve(BM=128, BN=256, BK=16, WM=64, WN=64, STAGES=4, AT=1, MINB=1)      # 97 KiB: over a T4's 64
    monkeypatch.setattr(portability, "used", lambda: [(v.key, big)])
    monkeypatch.setattr(type(v), "does_not_fit", lambda self, problem, params, profile=None: None)
    problems = portability.check(jobs=2)["problems"]
    assert any("on T4 (sm_75)" in p and "exceed its limits" in p for p in problems), problems
