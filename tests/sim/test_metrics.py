"""Metrics recomputed from a hand-made schedule, and the plotting helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asrpt_opt.analysis.gantt import gpu_lanes
from asrpt_opt.analysis.plots import plot_comparison
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.policies import simulate
from asrpt_opt.sim import metrics
from asrpt_opt.sim.metrics import compute_metrics, exact_parts
from tests.conftest import make_instance

INST = make_instance([(0, 2, 4.0, 2.0), (1, 2, 2.0)], servers=(2,))
SCHED = Schedule(
    runs=(
        JobRun(
            id="j0",
            release_s=0,
            completion_s=6.0,
            segments=(
                Segment(start_s=0, end_s=1, allocation=((0, 2),)),
                Segment(start_s=3, end_s=6, allocation=((0, 2),)),
            ),
        ),
        JobRun(
            id="j1",
            release_s=1,
            completion_s=3.0,
            segments=(Segment(start_s=1, end_s=3, allocation=((0, 2),)),),
        ),
    )
)


def test_hand_computed_metrics():
    m = compute_metrics(INST, SCHED)
    assert m.total_weighted_completion_s == 2 * 6 + 3
    assert m.total_completion_s == 9
    assert m.mean_jct_s == (6 + 2) / 2
    assert m.makespan_s == 6
    assert m.mean_slowdown == pytest.approx((6 / 4 + 2 / 2) / 2)
    assert m.utilisation == pytest.approx(12 / 12)
    assert m.mean_queueing_delay_s == 0
    assert m.preemptions == 1
    assert m.p50_jct_s == 4.0
    assert m.to_json()["n_jobs"] == 2


def test_gpu_lanes_never_share_a_gpu():
    inst = make_instance([(i, 1 + i % 3, 2.0 + i % 4) for i in range(12)], servers=(4, 2))
    res = simulate(inst, "srtf")
    lanes = gpu_lanes(inst, res.schedule)
    assert len(lanes) == sum(len(r.segments) for r in res.schedule.runs)
    for j, start, end, rows in lanes:
        assert len(rows) == inst.jobs[j].gpus
        for k, s2, e2, rows2 in lanes:
            if k != j and start < e2 and s2 < end:
                assert not set(rows) & set(rows2)


def test_plot_comparison_draws_three_panels():
    m = compute_metrics(INST, SCHED)
    fig = plot_comparison({"x": m, "y": m}, lower_bound_s=10.0, title="t")
    assert len(fig.axes) == 3
    assert fig.axes[2].get_xlabel().startswith("sum w_j C_j / lower bound")


@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
        max_size=40,
    ),
    st.integers(1, 7),
)
def test_exact_parts_sum_to_fsum_whatever_the_blocks(values, block):
    x = np.array(values, dtype=float)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "_BLOCK", block)
        parts = exact_parts(x)
        cut = len(values) // 2
        joined = exact_parts(x[:cut]) + exact_parts(x[cut:])
    assert math.fsum(parts) == math.fsum(values)
    assert math.fsum(joined) == math.fsum(values)
    assert all(p != 0.0 for p in parts)
