"""Every lower bound holds for every validated schedule: DNN jobs and measured speeds too."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.model import Cluster, Instance, Job, Parallelism, instance_from_dict, load_instance
from asrpt_opt.policies import PRIMARY, simulate
from asrpt_opt.relaxation import lower_bounds, min_lengths
from asrpt_opt.speed import default_speed
from tests.conftest import ROOT

MODELS = ("resnet18", "resnet50", "vgg16", "gnmt", "alexnet")
BANDWIDTHS = ((300.0, 12.5), (50.0, 25.0))

LB_CASE = {
    "format": "asrpt-instance/1",
    "name": "lb",
    "cluster": {"servers": [8, 8, 6, 2], "intra_server_gbps": 300, "inter_server_gbps": 12.5},
    "jobs": [
        {"id": "blocker", "release_s": 0, "gpus": 8, "duration_s": 10},
        {
            "id": "vgg",
            "release_s": 0,
            "gpus": 16,
            "model": "vgg16",
            "parallelism": {"dp": 4, "pp": 4, "tp": 1},
            "iterations": 1000,
        },
    ],
}


def _assert_bounds_hold(inst: Instance, methods=("consolidate",), **sim) -> None:
    speed = default_speed(inst)
    lb = lower_bounds(inst, speed=speed).lower_bound_s
    p_min = min_lengths(inst, speed=speed)
    for policy in PRIMARY:
        for method in methods:
            res = simulate(inst, policy, placement=method, **sim)  # validated inside
            value = res.metrics.total_weighted_completion_s
            assert lb <= value * (1 + 1e-9), f"{policy}/{method}: bound {lb} above {value}"
            for job, run, p in zip(inst.jobs, res.schedule.runs, p_min, strict=True):
                assert run.completion_s >= (job.release_s + p) * (1 - 1e-9), (policy, job.id)


@st.composite
def dnn_instances(draw) -> Instance:
    servers = tuple(draw(st.lists(st.integers(1, 8), min_size=2, max_size=4)))
    intra, inter = draw(st.sampled_from(BANDWIDTHS))
    total = sum(servers)
    jobs = []
    for i in range(draw(st.integers(2, 5))):
        if draw(st.booleans()):
            dp = draw(st.sampled_from([1, 2, 4]))
            pp = draw(st.sampled_from([1, 2]))
            if dp * pp > total:
                dp, pp = 1, 1
            jobs.append(
                Job(
                    id=f"d{i}",
                    release_s=float(draw(st.integers(0, 20))),
                    gpus=dp * pp,
                    model=draw(st.sampled_from(MODELS)),
                    parallelism=Parallelism(dp=dp, pp=pp),
                    iterations=draw(st.integers(20, 400)),
                )
            )
        else:
            jobs.append(
                Job(
                    id=f"a{i}",
                    release_s=float(draw(st.integers(0, 20))),
                    gpus=draw(st.integers(1, total)),
                    duration_s=float(draw(st.integers(1, 30))),
                    spread_slowdown=draw(st.sampled_from([1.0, 1.3])),
                )
            )
    cluster = Cluster(servers=servers, intra_server_gbps=intra, inter_server_gbps=inter)
    return Instance(name="dnn", cluster=cluster, jobs=tuple(jobs))


GRAPH_METHODS = ("consolidate", "mincut", "kl", "greedy", "random", "spread")


@settings(max_examples=20, deadline=None)
@given(dnn_instances(), st.sampled_from([0.0, 2.0]))
def test_bounds_hold_for_dnn_jobs_with_every_placement_method(inst, overhead):
    _assert_bounds_hold(inst, GRAPH_METHODS, restore_overhead_s=overhead)


def test_bounds_hold_where_consolidation_is_not_fastest():
    # vgg16 dp4 pp4 runs faster on 8+6+2 than on the consolidated 8+8.
    inst = instance_from_dict(LB_CASE)
    speed = default_speed(inst)
    best = speed.best_shape(inst.jobs[1], inst.cluster)
    assert best.exact
    assert best.counts == (8, 6, 2)
    consolidated = speed.rate(inst.jobs[1], ((0, 8), (1, 8)))
    assert best.rate > consolidated * 1.1
    _assert_bounds_hold(inst, (*GRAPH_METHODS, "ilp"))


@pytest.fixture(scope="module")
def pollux():
    return load_instance(ROOT / "instances" / "replay" / "pollux-workload-1.json")


def test_bounds_hold_under_pollux_measured_speeds(pollux):
    speed = default_speed(pollux)
    rates = np.array([speed.best_rate(j, pollux.cluster) for j in pollux.jobs])
    assert rates.max() > 1.5  # some measured layouts beat the fewest-nodes one
    _assert_bounds_hold(pollux)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 12))
def test_bounds_hold_on_pollux_subsets(pollux, seed, n):
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(pollux.n_jobs, size=n, replace=False).tolist())
    jobs = tuple(pollux.jobs[i] for i in pick)
    inst = Instance(
        name="pollux-subset", cluster=pollux.cluster, jobs=jobs, speed_model=pollux.speed_model
    )
    _assert_bounds_hold(inst)
