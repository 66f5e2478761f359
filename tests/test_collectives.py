"""The cost model of a GEMM over several GPUs (gemmlab.models.collectives): the bytes a ring collective moves per
GPU, the two ways to shard C = A B, the figures a measured step is judged by, and bad input refused by name."""
from __future__ import annotations

import pytest

from gemmlab.models import collectives as cc

GB = 1e9


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_a_ring_moves_all_but_one_share_of_the_buffer_and_an_all_reduce_twice_that(gpus):
    total = 64 * 2**20
    ag, rs, ar = (cc.bytes_per_gpu(c, total, gpus) for c in cc.COLLECTIVES)
    assert ag == rs == total * (gpus - 1) / gpus and ar == 2 * ag
    assert cc.collective_seconds("all-gather", total, gpus, 400 * GB) == pytest.approx(ag / (400 * GB))
    if gpus == 1:
        assert ar == 0.0                       # nothing leaves one GPU


def test_the_two_shardings_count_the_same_flops_and_move_a_or_c():
    ag = cc.ShardedGemm(m=4096, n=28672, k=8192, gpus=8, pattern="all-gather")
    rs = cc.ShardedGemm(m=4096, n=28672, k=8192, gpus=8, pattern="reduce-scatter")
    assert ag.flops_per_gpu == rs.flops_per_gpu == 2 * 4096 * 28672 * 8192 / 8
    assert ag.moved == 4096 * 8192 * 2 and rs.moved == 4096 * 28672 * 2          # A in FP16; C in FP16
    assert ag.comm_bytes() == pytest.approx(7 / 8 * 4096 * 8192 * 2)
    # FLOPs per byte sent: 2 N / ((p - 1) b) for the all-gather, 2 K / ((p - 1) b) for the reduce-scatter
    assert ag.intensity() == pytest.approx(2 * 28672 / (7 * 2)) and rs.intensity() == pytest.approx(2 * 8192 / (7 * 2))
    assert cc.ShardedGemm(m=64, n=64, k=64, gpus=1).intensity() == float("inf")


def test_a_step_is_compute_bound_when_its_gemm_outlasts_its_collective():
    step = cc.ShardedGemm(m=4096, n=28672, k=8192, gpus=8)
    rate, bw = 700e12, 400 * GB
    assert step.gemm_seconds(rate) == pytest.approx(step.flops_per_gpu / rate)
    assert step.bound(bw, rate) == "compute" and step.floor(bw, rate) == step.gemm_seconds(rate)
    assert step.serial(bw, rate) == pytest.approx(step.gemm_seconds(rate) + step.comm_seconds(bw))
    # the same links, a GEMM 100 times faster: the collective is the floor
    assert step.bound(bw, rate * 100) == "communication" and step.floor(bw, rate * 100) == step.comm_seconds(bw)
    # the rate above which the links bound the step: bandwidth x intensity
    edge = bw * step.intensity()
    assert step.bound(bw, edge * 0.99) == "compute" and step.bound(bw, edge * 1.01) == "communication"


def test_hidden_is_zero_for_back_to_back_one_for_a_perfect_overlap_and_negative_when_overlap_costs():
    assert cc.hidden(1.0, 3.0, 4.0) == 0.0
    assert cc.hidden(1.0, 3.0, 3.0) == 1.0
    assert cc.hidden(1.0, 3.0, 3.1) == pytest.approx(0.9)
    assert cc.hidden(1.0, 3.0, 4.5) < 0
    assert cc.share_of_ideal(3.0, 3.3) == pytest.approx(3.0 / 3.3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=4096, n=28672, k=8192, gpus=3), "M = 4096 does not split into 3 equal shards"),
    (dict(m=4096, n=28670, k=8192, gpus=4), "N = 28670 does not split into 4"),
    (dict(m=4096, n=28672, k=8190, gpus=4, pattern="reduce-scatter"), "K = 8190 does not split into 4"),
    (dict(m=4096, n=28672, k=8192, gpus=0), "gpus must be an integer of at least 1, got 0"),
    (dict(m=4096, n=28672, k=8192, gpus=2.0), "gpus must be an integer"),
    (dict(m=-1, n=8, k=8, gpus=1), "m must be an integer of at least 1"),
    (dict(m=8, n=8, k=8, gpus=1, pattern="all-to-all"), "pattern must be one of all-gather, reduce-scatter"),
])
def test_shards_of_unequal_or_wrong_shape_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cc.ShardedGemm(**kwargs)


@pytest.mark.parametrize("call, match", [
    (lambda: cc.bytes_per_gpu("broadcast", 1, 2), "collective must be one of"),
    (lambda: cc.bytes_per_gpu("all-gather", -1, 2), "total_bytes must be a number of bytes"),
    (lambda: cc.collective_seconds("all-gather", 1, 2, 0), "bandwidth must be a positive number, got 0"),
    (lambda: cc.collective_seconds("all-gather", 1, 2, float("nan")), "bandwidth must be a positive number"),
    (lambda: cc.hidden(0, 1, 1), "comm_s must be a positive number"),
    (lambda: cc.ShardedGemm(m=8, n=8, k=8, gpus=1).gemm_seconds(float("inf")), "rate must be a positive number"),
])
def test_bad_figures_are_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()
