"""SRPT against the known answers, brute force, and the bounds' validity."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.relaxation import lower_bounds, preemptive_wspt, srpt
from tests.conftest import instances, make_instance


def test_known_answers_pmtn(known_answers):
    cases = known_answers["1|r_j,pmtn|sum C_j"]["instances"]
    assert len(cases) == 12
    for case in cases:
        res = srpt(case["r"], case["p"])
        assert res.total_completion_s == case["opt_sum_C"]
        assert res.completion_s.tolist() == case["srpt_completion_times"]


def test_srpt_bounds_nonpreemptive_optimum(known_answers):
    for case in known_answers["1|r_j|sum C_j"]["instances"]:
        res = srpt(case["r"], case["p"])
        assert res.total_completion_s == case["srpt_preemptive_lower_bound"]
        assert res.total_completion_s <= case["opt_sum_C"]


def _priority_schedule(r: list[float], p: list[float], order: tuple[int, ...]) -> float:
    """Preemptive schedule that always runs the released unfinished job earliest in ``order``."""
    rank = {j: k for k, j in enumerate(order)}
    rem = list(p)
    t = 0.0
    total = 0.0
    left = len(p)
    while left:
        ready = [j for j in range(len(p)) if r[j] <= t and rem[j] > 0]
        if not ready:
            t = min(r[j] for j in range(len(p)) if rem[j] > 0)
            continue
        j = min(ready, key=rank.__getitem__)
        nxt = min([r[k] for k in range(len(p)) if r[k] > t] + [np.inf])
        run = min(rem[j], nxt - t)
        t += run
        rem[j] -= run
        if rem[j] <= 1e-12:
            rem[j] = 0
            total += t
            left -= 1
    return total


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10), st.integers(1, 8)), min_size=1, max_size=6),
)
def test_srpt_equals_best_priority_order(jobs):
    # Some priority order is optimal for 1|r_j,pmtn|sum C_j (SRPT's completion order is one).
    r = [float(a) for a, _ in jobs]
    p = [float(b) for _, b in jobs]
    best = min(_priority_schedule(r, p, o) for o in itertools.permutations(range(len(jobs))))
    assert srpt(r, p).total_completion_s == pytest.approx(best)


def test_srpt_input_checks():
    with pytest.raises(ValueError, match="entries"):
        srpt([0, 1], [1])
    with pytest.raises(ValueError, match=">= 0"):
        srpt([0], [-1])
    assert srpt([], []).total_completion_s == 0.0


def test_wspt_mean_busy_time_hand_computed():
    # Job 0 runs [0,2); job 1 (ratio 3/1) arrives at 1 and preempts: 0 on [0,1) and [2,3).
    res = preemptive_wspt([0, 1], [2, 1], [1, 3])
    assert res.completion_s.tolist() == [3.0, 2.0]
    assert res.mean_busy_s is not None
    assert res.mean_busy_s.tolist() == [(0.5 + 2.5) / 2, 1.5]


def test_lower_bounds_hand_computed():
    # One 2-GPU server; jobs of width 2 (area p) and width 1 (area p/2).
    inst = make_instance([(0, 2, 4.0), (1, 1, 2.0)], servers=(2,))
    lb = lower_bounds(inst)
    # Virtual sizes 4 and 1: SRPT -> job 1 runs [1,2), job 0 ends at 5: 2 + 5 = 7.
    assert lb.srpt_area_bound_s == 7.0
    assert lb.release_plus_length_bound_s == 4.0 + 3.0
    assert lb.lower_bound_s == 7.0
    assert not lb.weighted
    assert lb.virtual_completion_s.tolist() == [5.0, 2.0]


def test_weighted_instance_does_not_use_srpt():
    inst = make_instance([(0, 1, 10.0, 1.0), (0, 1, 1.0, 5.0)], servers=(1,))
    lb = lower_bounds(inst)
    assert lb.weighted
    assert lb.lower_bound_kind != "srpt_area"
    # Optimum runs the heavy short job first: 5*1 + 1*11 = 16.
    assert lb.lower_bound_s <= 16.0


def test_spread_slowdown_enters_min_length():
    inst = make_instance([(0, 4, 2.0, 1.0, 1.5)], servers=(2, 2))
    lb = lower_bounds(inst)
    assert lb.release_plus_length_bound_s == pytest.approx(3.0)


@settings(max_examples=50, deadline=None)
@given(instances(weighted=True))
def test_bounds_are_ordered_and_consistent(inst):
    lb = lower_bounds(inst)
    valid = [lb.release_plus_length_bound_s, lb.mean_busy_time_bound_s]
    if not lb.weighted:
        valid.append(inst.jobs[0].weight * lb.srpt_area_bound_s)
    assert lb.lower_bound_s == max(valid)
    assert lb.srpt_area_bound_s >= sum(j.release_s for j in inst.jobs)
