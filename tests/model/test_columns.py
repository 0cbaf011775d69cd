"""Abstract jobs as columns: validated like jobs, the same instance, slices and heads."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.errors import InstanceError, ScheduleError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.columns import JobColumns, ScheduleColumns
from asrpt_opt.traces.synthetic import msj, msj_columns

CLUSTER = Cluster(servers=(4, 8))


def columns(**change):
    fields = {
        "name": "c",
        "cluster": CLUSTER,
        "release_s": [0.0, 1.0, 1.0],
        "gpus": [1, 12, 4],
        "duration_s": [2.0, 3.0, 1.5],
    }
    return JobColumns(**{**fields, **change})


def test_columns_are_the_instance_msj_draws():
    cols = msj_columns(500, load=0.7, seed=4)
    assert cols.to_instance() == msj(500, load=0.7, seed=4)
    assert cols.job_id(7) == "j007"


def test_columns_are_copied_and_read_only():
    release = np.array([0.0, 1.0, 1.0])
    cols = columns(release_s=release)
    release[0] = 5.0
    assert cols.release_s[0] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        cols.gpus[0] = 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"release_s": [0.0, 2.0, 1.0]}, r"release_s\[2\] = 1.0: earlier than the job before"),
        ({"release_s": [-1.0, 2.0, 3.0]}, r"release_s\[0\] = .*must be >= 0"),
        ({"gpus": [1, 13, 4]}, r"gpus\[1\] = 13: must be in \[1, 12\]"),
        ({"gpus": [1, 1.5, 4]}, "gpus must be whole numbers"),
        ({"gpus": [1, 2]}, "one value per job"),
        ({"duration_s": [2.0, 0.0, 1.0]}, r"duration_s\[1\] = .*must be > 0"),
        ({"duration_s": [2.0, "x", 1.0]}, "duration_s must be numbers"),
        ({"weight": [1.0, -1.0, 1.0]}, r"weight\[1\] = .*must be > 0"),
        ({"spread_slowdown": [1.0, 0.5, 1.0]}, r"spread_slowdown\[1\] = .*must be >= 1"),
        ({"release_s": []}, "at least one job"),
    ],
)
def test_bad_columns_are_named(change, words):
    with pytest.raises(InstanceError, match=words):
        columns(**change)


def test_rates_and_slices():
    cols = columns(spread_slowdown=[1.0, 2.0, 1.5])
    # Job 1 needs 12 GPUs: more than the largest server, so its best rate is 1 / 2.
    assert cols.best_rates().tolist() == [1.0, 0.5, 1.0]
    assert cols.weights().tolist() == [1.0, 1.0, 1.0]
    part = cols.take(1, 3)
    assert part.gpus.tolist() == [12, 4]
    assert part.slowdowns().tolist() == [2.0, 1.5]


def test_a_schedules_head_keeps_its_first_jobs_segments():
    ints = np.int64
    sched = ScheduleColumns(
        completion_s=np.array([2.0, 4.0, 5.0]),
        job=np.array([0, 2, 1], ints),
        start_s=np.array([0.0, 3.5, 1.0]),
        end_s=np.array([2.0, 5.0, 4.0]),
        offset=np.array([0, 1, 2], ints),
        length=np.ones(3, ints),
        server=np.array([0, 1, 1], ints),
        count=np.array([1, 4, 12], ints),
    )
    head = sched.head(2)
    assert head.job.tolist() == [0, 1]
    assert head.start_s.tolist() == [0.0, 1.0]
    assert head.completion_s.tolist() == [2.0, 4.0]
    with pytest.raises(ScheduleError, match="one value per segment"):
        ScheduleColumns(
            completion_s=sched.completion_s,
            job=sched.job,
            start_s=sched.start_s[:2],
            end_s=sched.end_s,
            offset=sched.offset,
            length=sched.length,
            server=sched.server,
            count=sched.count,
        )
