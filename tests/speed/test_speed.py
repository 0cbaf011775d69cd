"""Speed models: hand-computed rates, the shape search against brute force, and the rules
that pick a model for an instance."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.datasets import load_example
from asrpt_opt.errors import InstanceError, ModelError, UnknownNameError
from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.speed import AbstractSpeed, PooledSpeed
from asrpt_opt.speed._shapes import fits, shapes
from asrpt_opt.speed.cluster import ClusterSpeed
from asrpt_opt.speed.default import (
    default_speed,
    instance_cluster_model,
    make_speed,
    offline_speed,
)
from asrpt_opt.speed.measured import PolluxSpeed

CLUSTER = Cluster(servers=(8, 4))
WIDE = Job(id="w", release_s=0, gpus=6, duration_s=10, spread_slowdown=1.5)


def test_abstract_speed_is_one_on_a_server_and_slower_across():
    speed = AbstractSpeed()
    assert speed.work(WIDE) == 10
    assert speed.rate(WIDE, ((0, 6),)) == 1.0
    assert speed.rate(WIDE, ((0, 4), (1, 2))) == pytest.approx(1 / 1.5)
    assert speed.best_rate(WIDE, CLUSTER) == 1.0  # fits on the 8-GPU server
    too_wide = Job(id="t", release_s=0, gpus=10, duration_s=10, spread_slowdown=2.0)
    assert speed.best_rate(too_wide, CLUSTER) == 0.5


def test_pooled_speed_never_charges_spreading():
    speed = PooledSpeed()
    assert speed.rate(WIDE, ((0, 4), (1, 2))) == 1.0
    assert speed.best_rate(WIDE, Cluster(servers=(2, 2, 2))) == 1.0


def test_abstract_models_refuse_dnn_jobs():
    dnn = next(j for j in load_example("p01-resnet50-dp").jobs if j.duration_s is None)
    for speed in (AbstractSpeed(), PooledSpeed()):
        with pytest.raises(ModelError, match="DNN job"):
            speed.work(dnn)


@settings(max_examples=60, deadline=None)
@given(
    servers=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    q=st.integers(1, 12),
)
def test_shapes_are_exactly_the_partitions_that_fit(servers, q):
    desc = tuple(sorted(servers, reverse=True))
    found = [s for largest in range(1, q + 1) for s in shapes(q, largest, desc)]
    # Brute force: every multiset of positive counts summing to q, matched greedily.
    brute = set()
    for k in range(1, len(desc) + 1):
        for counts in itertools.product(range(1, q + 1), repeat=k):
            shape = tuple(sorted(counts, reverse=True))
            if sum(shape) == q and fits(shape, desc):
                brute.add(shape)
    assert sorted(found) == sorted(brute)
    assert len(found) == len(set(found))


def test_fits_matches_largest_with_largest():
    assert fits((4, 2), (4, 2))
    assert not fits((3, 3), (4, 2))
    assert not fits((1, 1, 1), (4, 4))


def test_cluster_speed_best_rate_bounds_every_allocation():
    inst = load_example("p07-two-servers")
    speed = ClusterSpeed(inst.cluster)
    for job in inst.jobs:
        best = speed.best_shape(job, inst.cluster)
        assert best.rate == pytest.approx(speed.best_rate(job, inst.cluster))
        assert sum(best.counts) == job.gpus
        desc = tuple(sorted(inst.cluster.servers, reverse=True))
        for largest in range(1, job.gpus + 1):
            for shape in shapes(job.gpus, largest, desc):
                allocation = tuple(enumerate(shape))
                assert speed.rate(job, allocation) <= best.rate * (1 + 1e-9)
        if best.exact:
            allocation = tuple(enumerate(best.counts))
            assert speed.rate(job, allocation) == pytest.approx(best.rate)


def test_pollux_speed_is_one_on_the_best_layout_and_bounded_by_best_rate():
    job = Job(
        id="c",
        release_s=0,
        gpus=8,
        duration_s=100,
        features={"model": "cifar10", "batch_size": 512},
    )
    speed = PolluxSpeed()
    assert speed.work(job) == 100
    assert speed.rate(job, ((0, 4), (1, 4))) == pytest.approx(1.0)  # the best layout
    cluster = Cluster(servers=(4, 4, 4, 4))
    best = speed.best_rate(job, cluster)
    for layout in (((0, 4), (1, 4)), ((0, 2), (1, 2), (2, 2), (3, 2)), ((0, 4), (1, 2), (2, 2))):
        assert 0 < speed.rate(job, layout) <= best * (1 + 1e-12)
    with pytest.raises(InstanceError, match="no Pollux measurements"):
        speed.rate(Job(id="x", release_s=0, gpus=1, duration_s=1), ((0, 1),))


def test_the_instance_chooses_its_speed_model():
    assert type(default_speed(load_example("tiny-abstract"))) is AbstractSpeed
    assert type(default_speed(load_example("p01-resnet50-dp"))) is ClusterSpeed
    assert type(default_speed(load_example("pollux-workload-1"))) is PolluxSpeed
    with pytest.raises(UnknownNameError, match="speed model"):
        make_speed("warp", load_example("tiny-abstract"))


def test_offline_cluster_models():
    assert type(offline_speed("pooled")) is PooledSpeed
    assert type(offline_speed("server-local")) is AbstractSpeed
    assert type(offline_speed("spread")) is AbstractSpeed
    with pytest.raises(UnknownNameError, match="cluster model"):
        offline_speed("ring")
    flat = Instance(
        name="f", cluster=CLUSTER, jobs=(Job(id="a", release_s=0, gpus=2, duration_s=1),)
    )
    spread = Instance(name="s", cluster=CLUSTER, jobs=(WIDE,))
    assert instance_cluster_model(flat) == "pooled"
    assert instance_cluster_model(spread) == "spread"


def _tiered_cluster():
    from asrpt_opt.model.topology import Topology

    topology = Topology.regular(5, [("rack", 2, 50.0), ("pod", 2, 25.0)])
    return Cluster(
        servers=(4, 4, 4, 2, 4), intra_server_gbps=300, inter_server_gbps=12.5, topology=topology
    )


@pytest.mark.parametrize(
    ("model", "dp", "pp", "tp"),
    [("resnet50", 2, 1, 1), ("gnmt", 2, 2, 2), ("vgg16", 4, 2, 1), ("resnet18", 3, 1, 4)],
)
def test_on_tiers_best_rate_bounds_every_allocation_and_is_exact_inside_a_rack(model, dp, pp, tp):
    from asrpt_opt.model.job import Parallelism

    cluster = _tiered_cluster()
    job = Job(
        id="j", release_s=0, gpus=dp * pp * tp, model=model,
        parallelism=Parallelism(dp=dp, pp=pp, tp=tp), iterations=10,
    )  # fmt: skip
    speed = ClusterSpeed(cluster)
    best = speed.best_shape(job, cluster)
    rates = {}
    for counts in itertools.product(*(range(g + 1) for g in cluster.servers)):
        if sum(counts) == job.gpus:
            allocation = tuple((s, c) for s, c in enumerate(counts) if c)
            rates[allocation] = speed.rate(job, allocation)
    assert max(rates.values()) <= best.rate * (1 + 1e-9)
    # Inside one rack the tiers are the one-tier model at the rack's bandwidth.
    flat = ClusterSpeed(Cluster(servers=(4, 4), intra_server_gbps=300, inter_server_gbps=50))
    for allocation, rate in rates.items():
        if {s // 2 for s, _ in allocation} == {0}:
            assert rate == pytest.approx(flat.rate(job, allocation))
    if best.exact:
        assert max(rates.values()) == pytest.approx(best.rate)
    else:
        assert job.gpus > 8  # the best shape spans racks


def test_on_tiers_spreading_across_racks_and_pods_is_slower():
    from asrpt_opt.model.job import Parallelism

    cluster = _tiered_cluster()
    job = Job(
        id="j", release_s=0, gpus=4, model="vgg16",
        parallelism=Parallelism(dp=4, pp=1, tp=1), iterations=10,
    )  # fmt: skip
    speed = ClusterSpeed(cluster)
    rack = speed.rate(job, ((0, 2), (1, 2)))
    pod = speed.rate(job, ((0, 2), (2, 2)))
    spine = speed.rate(job, ((0, 2), (4, 2)))
    assert speed.rate(job, ((0, 4),)) > rack > pod > spine
