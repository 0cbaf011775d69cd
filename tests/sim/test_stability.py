"""The stability verdict: hand-computed queues, its invariances, and simulated MSJ runs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from asrpt_opt.policies import simulate
from asrpt_opt.sim.stability import MIN_JOBS, Verdict, stability, t_quantile
from asrpt_opt.traces.synthetic import msj

ARRIVALS = np.arange(4000.0)


@pytest.mark.parametrize("dof", [10, 12, 18, 30, 60, 200])
@pytest.mark.parametrize("p", [0.9, 0.95, 0.975, 0.995])
def test_t_quantile_matches_scipy(dof, p):
    assert t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), abs=1e-4)


@pytest.mark.parametrize("dof", range(1, 10))
def test_small_samples_use_the_t_table(dof):
    assert t_quantile(0.975, dof) == pytest.approx(stats.t.ppf(0.975, dof), abs=1e-3)


def test_a_queue_of_constant_length_is_stable_with_its_exact_mean():
    # Every job stays 2.5 s and one arrives every second: 3 jobs in the system for the first
    # half of each second, 2 for the second half. The window [1999.5, 3999] starts with
    # half a second at 2, then 1,999 seconds at 2.5 on average.
    result = stability(ARRIVALS, ARRIVALS + 2.5)
    assert result.verdict is Verdict.STABLE
    assert result.mean_in_system == pytest.approx((0.5 * 2 + 1999 * 2.5) / 1999.5, rel=1e-12)
    assert result.jobs_in_window == 2000  # arrivals 2000 to 3999
    assert abs(result.trend_per_s) < 1e-12


def test_a_linearly_growing_queue_is_unstable_by_two_thirds_of_its_mean():
    # Job j completes at 2j + 1: in the window [T/2, T] N(t) ~ t / 2, so the fitted growth
    # T/4 over a mean of 3T/8 is 2/3.
    result = stability(ARRIVALS, 2 * ARRIVALS + 1)
    assert result.verdict is Verdict.UNSTABLE
    assert result.trend_per_s == pytest.approx(0.5, rel=1e-6)
    assert result.growth == pytest.approx(2 / 3, abs=2e-3)
    assert result.trend_low_per_s <= result.trend_per_s <= result.trend_high_per_s


def test_jobs_that_never_complete_stay_in_the_system():
    completion = np.where(ARRIVALS % 2 == 0, ARRIVALS + 1.0, np.inf)
    assert stability(ARRIVALS, completion).verdict is Verdict.UNSTABLE


def test_too_few_arrivals_or_one_burst_is_inconclusive():
    few = np.arange(float(MIN_JOBS))
    assert stability(few, few + 1).verdict is Verdict.INCONCLUSIVE
    burst = np.zeros(5000)
    assert stability(burst, burst + 1).verdict is Verdict.INCONCLUSIVE
    assert stability([], []).verdict is Verdict.INCONCLUSIVE


def test_bad_batches_are_refused():
    with pytest.raises(ValueError, match="batches"):
        stability(ARRIVALS, ARRIVALS + 1, batches=4)


@settings(max_examples=30, deadline=None)
@given(
    scale=st.floats(min_value=1e-3, max_value=1e4),
    shift=st.floats(min_value=-1e6, max_value=1e6),
    grow=st.booleans(),
)
def test_the_verdict_does_not_depend_on_the_time_unit_or_origin(scale, shift, grow):
    completion = 2 * ARRIVALS + 1 if grow else ARRIVALS + 3.0
    base = stability(ARRIVALS, completion)
    moved = stability(ARRIVALS * scale + shift, completion * scale + shift)
    assert moved.verdict is base.verdict
    assert moved.growth == pytest.approx(base.growth, abs=1e-6)
    assert moved.mean_in_system == pytest.approx(base.mean_in_system, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("policy", "params", "verdict"),
    [
        ("serverfilling-srpt", {}, Verdict.STABLE),
        ("a-srpt", {"guide": "fill"}, Verdict.STABLE),
        ("a-srpt", {}, Verdict.STABLE),  # the default guide is fill on one server
        ("a-srpt", {"guide": "list"}, Verdict.UNSTABLE),  # FirstFit on the area ranking
    ],
)
def test_msj_runs_at_load_09(policy, params, verdict):
    result = simulate(msj(8000, load=0.9, seed=1), policy, **params)
    assert result.metrics.stability.verdict is verdict
    assert result.metrics.to_json()["stability"]["verdict"] == verdict.value
    assert math.isfinite(result.metrics.stability.growth)
