"""Properties every policy must have on random instances."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.policies import POLICIES, make_policy, simulate
from asrpt_opt.prediction import NoisyOraclePredictor
from asrpt_opt.relaxation import lower_bounds
from asrpt_opt.sim import validate_schedule
from tests.conftest import instances

VARIANTS = [(name, {}) for name in sorted(POLICIES)] + [
    ("a-srpt", {"finished_order": "virtual"}),
    ("a-srpt", {"adaptive": "additive"}),
    ("fifo", {"backfill": False}),
    ("srtf", {"backfill": False}),
]


@pytest.mark.parametrize(("policy", "params"), VARIANTS)
@settings(max_examples=40, deadline=None)
@given(
    inst=instances(max_jobs=10, weighted=True),
    overhead=st.sampled_from([0.0, 0.5]),
    noisy=st.booleans(),
)
def test_schedules_are_valid_and_above_the_lower_bound(policy, params, inst, overhead, noisy):
    predictor = NoisyOraclePredictor(mu=3.0, seed=7) if noisy else None
    res = simulate(
        inst, policy, predictor=predictor, restore_overhead_s=overhead, seed=1, **params
    )
    validate_schedule(inst, res.schedule)  # simulate validated too; check independently
    lb = lower_bounds(inst)
    value = res.metrics.total_weighted_completion_s
    assert value >= lb.lower_bound_s * (1 - 1e-9)
    assert res.metrics.total_completion_s >= lb.srpt_area_bound_s * (1 - 1e-9)
    assert value == pytest.approx(res.schedule.total_weighted_completion_s(inst))
    for job, run in zip(inst.jobs, res.schedule.runs, strict=True):
        assert run.segments[0].start_s >= job.release_s


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
@settings(max_examples=30, deadline=None)
@given(inst=instances(max_jobs=8))
def test_nonpreemptive_policies_never_preempt(policy, inst):
    res = simulate(inst, policy)
    assert res.metrics.preemptions == 0


@settings(max_examples=30, deadline=None)
@given(inst=instances(max_jobs=8))
def test_work_conserving_when_everything_fits(inst):
    # A cluster with room for every job at once: each starts at its release under any policy.
    from asrpt_opt.model import Cluster, Instance

    big = Instance(
        name="big", cluster=Cluster(servers=(sum(j.gpus for j in inst.jobs),)), jobs=inst.jobs
    )
    for name in POLICIES:
        res = simulate(big, make_policy(name))
        for job, run in zip(big.jobs, res.schedule.runs, strict=True):
            assert run.completion_s == pytest.approx(job.release_s + job.duration_s)
