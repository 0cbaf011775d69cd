"""The continuous-time preemptive optimum: golden values, grids above it, bounds and policies below
it, honest intervals when time runs out."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings

from asrpt_opt.cli.main import main
from asrpt_opt.errors import SolverError
from asrpt_opt.model import Job
from asrpt_opt.policies import POLICIES, simulate
from asrpt_opt.relaxation import lower_bounds
from asrpt_opt.sim import validate_schedule
from asrpt_opt.solvers import SolverParams, solve
from asrpt_opt.solvers.continuous import MAX_JOBS, continuous_preemptive_optimum
from asrpt_opt.speed.base import PooledSpeed
from tests.conftest import instances, make_instance

#: 2 GPUs, jobs (r, q, p) = (0,1,1) x 3 and (0,2,1): half-unit slots give 6.5, unit slots 7.
HALF = make_instance([(0, 1, 1), (0, 1, 1), (0, 1, 1), (0, 2, 1)], (2,), name="half")


def test_the_half_unit_case_is_six_and_a_half_and_the_grid_seven():
    res = solve(HALF, preemption="continuous")
    assert res.status == "optimal"
    assert res.objective_s == pytest.approx(6.5)
    assert res.bound_s == pytest.approx(6.5)
    assert res.model()["time"] == "continuous"
    assert res.grid is not None
    assert res.grid.objective_s == 7.0
    assert res.grid.status == "optimal"
    validate_schedule(HALF, res.schedule, speed=PooledSpeed())
    assert res.schedule.total_weighted_completion_s(HALF) == pytest.approx(6.5)
    grid = solve(HALF, preemption="grid")
    assert grid.objective_s == 7.0
    assert grid.model()["time"] == "preemption at multiples of 1 s"


def test_policies_on_the_half_unit_case_are_above_one(capsys, tmp_path):
    path = tmp_path / "half.json"
    path.write_text(
        json.dumps(
            {
                "format": "asrpt-instance/1",
                "name": "half",
                "cluster": {"servers": [2]},
                "jobs": [
                    {"id": f"j{i}", "release_s": 0, "gpus": q, "duration_s": 1}
                    for i, q in enumerate([1, 1, 1, 2])
                ],
            }
        )
    )
    assert main(["solve", str(path), "--preemptive", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["objective_s"] == pytest.approx(6.5)
    assert data["grid"]["objective_s"] == 7.0
    assert data["model"]["time"] == "continuous"
    srtf = simulate(HALF, "srtf", speed=PooledSpeed()).metrics.total_weighted_completion_s
    assert srtf / data["objective_s"] == pytest.approx(7 / 6.5)


def test_one_gpu_unit_widths_matches_srpt(known_answers):
    # 1|r_j,pmtn|sum C_j: SRPT is optimal, and preempting at integer times loses nothing.
    from tests.solvers.test_solvers import _cases

    for inst, opt in _cases(known_answers, "1|r_j,pmtn|sum C_j"):
        if len(inst.jobs) > 8:
            continue
        out = continuous_preemptive_optimum(inst)
        assert out.status == "optimal"
        assert out.objective_s is None or out.objective_s == pytest.approx(opt)
        assert out.bound_s == pytest.approx(opt)


def _half_grid(inst):
    """The instance with every time doubled: its unit grid is the original's half-unit grid."""
    jobs = tuple(
        replace(j, release_s=2 * j.release_s, duration_s=2 * j.duration_s) for j in inst.jobs
    )
    return replace(inst, jobs=jobs)


def _check_sandwich(inst, *, refined: bool):
    inst = replace(inst, jobs=tuple(replace(j, spread_slowdown=1.0) for j in inst.jobs))
    params = SolverParams(time_limit_s=60)
    res = solve(inst, preemption="continuous", cluster_model="pooled", params=params)
    assert res.status == "optimal", res.message
    opt = res.objective_s
    validate_schedule(inst, res.schedule, speed=PooledSpeed())
    assert res.schedule.total_weighted_completion_s(inst) == pytest.approx(opt, abs=1e-9)
    tol = 1e-7 * max(1.0, opt)
    assert opt <= res.grid.objective_s + tol
    assert opt >= lower_bounds(inst, speed=PooledSpeed()).lower_bound_s - tol
    for name in POLICIES:
        value = simulate(inst, name, speed=PooledSpeed()).metrics.total_weighted_completion_s
        assert opt <= value + tol, name
    if refined:
        half = solve(_half_grid(inst), preemption="grid", cluster_model="pooled")
        if half.status == "optimal":
            assert opt <= half.objective_s / 2 + tol  # the half-unit grid is still above
            assert half.objective_s / 2 <= res.grid.objective_s + tol


@settings(max_examples=15, deadline=None)
@given(inst=instances(max_jobs=5, weighted=True))
def test_continuous_optimum_lies_between_bounds_and_grids(inst):
    _check_sandwich(inst, refined=True)


@pytest.mark.slow
def test_two_hundred_random_instances():
    # The must-hold: n <= 6, weights 1-4, 1-3 servers of 1-4 GPUs, halves and quarters.
    rng = np.random.default_rng(2026)
    for _ in range(200):
        servers = tuple(int(x) for x in rng.integers(1, 5, size=rng.integers(1, 4)))
        n = int(rng.integers(2, 7))
        jobs = [
            (
                int(rng.integers(0, 10)),
                int(rng.integers(1, sum(servers) + 1)),
                int(rng.integers(1, 9)) / int(rng.choice([1, 2])),
                float(rng.integers(1, 5)),
            )
            for _ in range(n)
        ]
        _check_sandwich(make_instance(jobs, servers), refined=False)


def test_out_of_time_gives_an_interval_that_holds():
    rng = np.random.default_rng(5)
    jobs = [
        (int(rng.integers(0, 30)), 1, int(rng.integers(1, 11)), float(rng.integers(1, 4)))
        for _ in range(MAX_JOBS)
    ]
    inst = make_instance(jobs, (1,), name="single-12")
    out = continuous_preemptive_optimum(inst, time_limit_s=0.3)
    assert out.status == "feasible"
    assert out.objective_s is not None
    assert out.bound_s < out.objective_s
    assert out.bound_s >= lower_bounds(inst, speed=PooledSpeed()).lower_bound_s - 1e-6
    validate_schedule(inst, out.schedule, speed=PooledSpeed())
    res = solve(inst, preemption="continuous", params=SolverParams(time_limit_s=1))
    assert res.status == "feasible"
    assert res.bound_s <= res.objective_s <= res.grid.objective_s
    assert "stopped by the time limit" in res.message


def test_too_many_jobs_is_an_interval_with_a_reason():
    jobs = [(i, 1, 1) for i in range(MAX_JOBS + 1)]
    inst = make_instance(jobs, (2,), name="many")
    with pytest.raises(SolverError, match=f"at most {MAX_JOBS} jobs"):
        continuous_preemptive_optimum(inst)
    res = solve(inst, preemption="continuous")
    # Every job runs alone as soon as it is released: the bounds meet, no search needed.
    assert res.status == "optimal"
    assert res.objective_s == pytest.approx(sum(range(1, MAX_JOBS + 2)))
    assert f"more than {MAX_JOBS} jobs" in res.message


def test_server_local_is_not_searched_and_says_so():
    inst = make_instance([(0, 1, 2), (0, 2, 1), (1, 1, 3)], (2, 2), name="local")
    res = solve(inst, preemption="continuous", cluster_model="server-local")
    assert res.preemption == "continuous"
    assert "server-local" in res.message
    assert res.bound_s <= res.objective_s


def test_identical_jobs_are_not_searched_twice():
    jobs = [Job(id=f"j{i}", release_s=0, gpus=1, duration_s=2) for i in range(6)]
    inst = replace(HALF, jobs=tuple(jobs), name="twins")
    out = continuous_preemptive_optimum(inst)
    assert out.status == "optimal"
    # Two GPUs, six jobs of 2 s: pairs finish at 2, 4, 6.
    assert out.bound_s == pytest.approx(2 * (2 + 4 + 6))
    assert out.nodes < 40  # one completion order of six identical jobs, not 720
