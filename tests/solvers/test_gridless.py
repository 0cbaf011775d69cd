"""Instances the integer-time models cannot take: list scheduling on step profiles, the
policies' interval, the size guard of the slot-indexed models."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.errors import SolverError
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.solvers import solve
from asrpt_opt.solvers._data import (
    MAX_SLOT_VARIABLES,
    OffGrid,
    check_slot_variables,
    discretise,
    list_schedule,
)
from asrpt_opt.solvers.params import SolverParams
from asrpt_opt.solvers.result import SolveStatus
from asrpt_opt.speed.default import offline_speed
from tests.conftest import instances, make_instance


def _brute_list_schedule(data, order):
    """Earliest fit on unit-time arrays: the definition the step profiles must meet."""
    horizon = max(data.release) + sum(data.dur) + 1
    pooled = data.cluster_model == "pooled"
    free = np.array([[data.total_gpus]] if pooled else [[c] for c in data.caps]) * np.ones(
        horizon, dtype=int
    )
    out = {}
    for k in order:
        best = None
        for s in range(free.shape[0]):
            if data.gpus[k] > free[s, -1]:
                continue
            t = data.release[k]
            while (free[s, t : t + data.dur[k]] < data.gpus[k]).any():
                t += 1
            if best is None or t < best[0]:
                best = (t, s)
        t, s = best
        free[s, t : t + data.dur[k]] -= data.gpus[k]
        out[k] = t
    return [out[k] for k in range(data.n)]


@settings(max_examples=40, deadline=None)
@given(
    inst=instances(max_jobs=8),
    model=st.sampled_from(["pooled", "server-local"]),
    seed=st.integers(0, 1000),
)
def test_list_schedule_is_the_earliest_fit(inst, model, seed):
    if model == "server-local" and max(j.gpus for j in inst.jobs) > max(inst.cluster.servers):
        return
    data = discretise(inst, model, preemptive=False)
    order = list(np.random.default_rng(seed).permutation(data.n))
    got = list_schedule(data, order)
    assert [start for start, _, _ in got] == _brute_list_schedule(data, order)


def test_range_beyond_the_grid_gets_the_policies_interval():
    # 1e-9 s next to 1e12 s: no common unit of at least 1e-6 s.
    inst = make_instance([(0, 1, 1e-9), (0, 4, 1e12), (3, 2, 7)])
    with pytest.raises(OffGrid, match="resolution"):
        discretise(inst, "pooled", preemptive=False)
    res = solve(inst)
    assert res.backend == "policies"
    assert "resolution" in res.message
    validate_schedule(inst, res.schedule, speed=offline_speed("pooled"))
    assert res.objective_s == pytest.approx(res.schedule.total_weighted_completion_s(inst))
    # All three run at once from their releases: sum of r + p is optimal, and proven.
    assert res.status == SolveStatus.OPTIMAL
    assert res.objective_s == pytest.approx(1e12 + 10 + 1e-9, rel=1e-12)


def test_interval_when_the_policies_do_not_meet_the_bound():
    # Two 3-GPU jobs on a 4-GPU cluster, a subnormal job beside them: an interval.
    inst = make_instance([(0, 3, 5e-324), (0, 3, 2), (0, 3, 3)], servers=(4,))
    res = solve(inst)
    assert res.backend == "policies"
    assert res.bound_s <= res.objective_s
    assert res.objective_s == pytest.approx(2 + 5)  # sjf: the short job first
    assert res.status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE)


def test_grid_model_off_the_grid_is_one_clear_error():
    inst = make_instance([(0, 1, 5e-324), (0, 2, 3)])
    with pytest.raises(SolverError, match=r"grid model cannot be built.*resolution"):
        solve(inst, preemption="grid")
    res = solve(inst, preemption="continuous")
    assert res.status == SolveStatus.OPTIMAL
    assert res.grid is None  # no grid model was built


def test_continuous_search_works_on_huge_times():
    jobs = [(1e11 * i, g, 1e11 * d) for i, (g, d) in enumerate([(4, 3), (2, 5), (4, 1), (1, 2)])]
    inst = make_instance(jobs)
    res = solve(inst, preemption="continuous")
    assert res.status == SolveStatus.OPTIMAL
    small = solve(
        make_instance([(r / 1e11, g, d / 1e11) for r, g, d in jobs]), preemption="continuous"
    )
    assert res.objective_s == pytest.approx(small.objective_s * 1e11, rel=1e-9)


def test_slot_models_refuse_before_building():
    inst = make_instance([(0, 1, 1000)] * 500)
    data = discretise(inst, "pooled", preemptive=True)
    with pytest.raises(SolverError, match=f"limit {MAX_SLOT_VARIABLES}"):
        check_slot_variables(data, preemptive=True, pooled=True, what="x")
    small = discretise(make_instance([(0, 1, 3)] * 3), "pooled", preemptive=True)
    check_slot_variables(small, preemptive=True, pooled=True, what="x")  # no error


@pytest.mark.parametrize("preemption", ["none", "grid"])
def test_a_big_burst_keeps_the_time_limit_and_memory(preemption):
    # 3,000 jobs at one instant: the slot-indexed models are refused up front (they would
    # need billions of variables) and list scheduling takes linear memory.
    rng = np.random.default_rng(0)
    jobs = [(0, int(rng.choice([1, 2, 4])), int(rng.integers(1, 100))) for _ in range(3000)]
    inst = make_instance(jobs)
    t0 = time.perf_counter()
    # The limit also bounds the list-scheduling warm start (about 1 s here): leave headroom
    # for a busy machine, where 2 s once ran out.
    res = solve(inst, preemption=preemption, params=SolverParams(time_limit_s=10.0))
    # Generous: the point is that it returns (it ran for minutes and out of memory).
    assert time.perf_counter() - t0 < 60
    assert res.status == SolveStatus.FEASIBLE
    assert res.bound_s <= res.objective_s
    assert "slot variables" in res.message
