"""`solve` solves the instance as written unless a relaxation is asked for by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from asrpt_opt.cli import main
from asrpt_opt.datasets import load_example
from asrpt_opt.errors import SolverError
from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.sim import validate_schedule
from asrpt_opt.solvers import solve
from asrpt_opt.speed.base import AbstractSpeed
from asrpt_opt.speed.default import instance_cluster_model


def _spread_instance(seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    jobs = tuple(
        Job(
            id=f"j{k}",
            release_s=float(rng.integers(0, 4)),
            gpus=int(rng.choice([2, 3, 4, 6])),
            duration_s=float(rng.integers(1, 6)),
            spread_slowdown=2.0,
        )
        for k in range(5)
    )
    return Instance(name=f"spread-{seed}", cluster=Cluster(servers=(4, 4)), jobs=jobs)


@pytest.mark.parametrize("seed", range(6))
def test_the_default_is_the_instance_and_its_schedule_is_valid_for_it(seed):
    inst = _spread_instance(seed)
    own = solve(inst)
    assert own.cluster_model == "spread"
    assert own.relation == "exact"
    assert own.status == "optimal"
    # Valid for the instance itself: spread jobs run at their slowdown.
    validate_schedule(inst, own.schedule, speed=AbstractSpeed())
    assert own.schedule.total_weighted_completion_s(inst) == pytest.approx(own.objective_s)
    pooled = solve(inst, cluster_model="pooled")
    assert pooled.relation == "relaxation"
    assert pooled.objective_s <= own.objective_s + 1e-9


def test_tiny_abstract_hidden_spread_optimum(capsys):
    # j1 (8 GPUs) must span both servers at slowdown 1.5: the pooled model's 51 is a
    # relaxation; the instance's optimum is 57 (recorded in instances/optima).
    assert main(["solve", "tiny-abstract", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "optimal"
    assert data["objective_s"] == 57.0
    assert data["model"] == {
        "preemptive": False,
        "cluster_model": "spread",
        "relation": "exact",
        "time": "continuous",
    }
    assert main(["solve", "tiny-abstract", "--json", "--cluster-model", "pooled"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["objective_s"] == 51.0
    assert data["model"]["relation"] == "relaxation"


def test_instances_without_slowdowns_are_pooled_and_exact():
    inst = load_example("bursty-n12-s0")
    assert instance_cluster_model(inst) == "pooled"
    res = solve(inst, preemption="grid")
    assert res.relation == "exact"
    assert res.model()["time"].startswith("preemption at multiples of")


def test_preemption_with_slowdowns_is_refused_with_the_alternatives():
    with pytest.raises(SolverError, match="cluster-model pooled"):
        solve(_spread_instance(0), preemption="continuous")
