"""The independent validator rejects every kind of infeasible schedule."""

from __future__ import annotations

import pytest

from asrpt_opt.errors import ScheduleError
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.sim import validate_schedule
from tests.conftest import make_instance

INST = make_instance([(0, 2, 4.0), (1, 2, 2.0, 1.0, 2.0)], servers=(2, 2))


def sched(*runs, overhead=0.0):
    return Schedule(
        runs=tuple(
            JobRun(
                id=f"j{i}",
                release_s=INST.jobs[i].release_s,
                completion_s=segs[-1][1] if segs else 0.0,
                segments=tuple(Segment(start_s=a, end_s=b, allocation=al) for a, b, al in segs),
            )
            for i, segs in enumerate(runs)
        ),
        restore_overhead_s=overhead,
    )


def test_feasible_schedule_passes():
    validate_schedule(INST, sched([(0, 4, ((0, 2),))], [(1, 3, ((1, 2),))]))


def test_spread_job_runs_slower():
    # j1 spread over two servers: slowdown 2, so 2 s of work take 4 s.
    validate_schedule(INST, sched([(0, 4, ((0, 2),))], [(4, 8, ((0, 1), (1, 1)))]))
    with pytest.raises(ScheduleError, match="processed"):
        validate_schedule(INST, sched([(0, 4, ((0, 2),))], [(4, 6, ((0, 1), (1, 1)))]))


def test_preempted_job_with_restore_overhead():
    ok = sched([(0, 1, ((0, 2),)), (2, 6, ((1, 2),))], [(1, 3, ((0, 2),))], overhead=1.0)
    validate_schedule(INST, ok)
    with pytest.raises(ScheduleError, match="processed"):
        validate_schedule(
            INST, sched([(0, 1, ((0, 2),)), (2, 5, ((1, 2),))], [(1, 3, ((0, 2),))], overhead=1.0)
        )


@pytest.mark.parametrize(
    ("runs", "words"),
    [
        (([(0, 4, ((0, 2),))], [(1, 3, ((0, 2),))]), "server 0: 4 GPUs in use"),
        (([(0, 4, ((0, 1),))], [(1, 3, ((1, 2),))]), "holds 1 GPUs"),
        (([(0, 4, ((0, 2),))], [(0.5, 2.5, ((1, 2),))]), "starts before the release"),
        (([(0, 4, ((5, 2),))], [(1, 3, ((1, 2),))]), "server 5 does not exist"),
        (([(0, 4, ((0, 0), (1, 2)))], [(5, 7, ((1, 2),))]), "is not >= 1"),
        (([(0, 4, ((1, 1), (0, 1)))], [(5, 7, ((1, 2),))]), "listed once, in order"),
        (([(0, 2, ((0, 2),)), (1, 3, ((0, 2),))], [(5, 7, ((1, 2),))]), "previous segment"),
        (([(0, 3, ((0, 2),))], [(1, 3, ((1, 2),))]), "processed"),
        (([(0, 4, ((0, 2),))], []), "no segments"),
        (([(0, 4, ((0, 2),)), (4, 4, ((0, 2),))], [(1, 3, ((1, 2),))]), "empty or reversed"),
    ],
)
def test_violations_are_named(runs, words):
    with pytest.raises(ScheduleError, match=words):
        validate_schedule(INST, sched(*runs))


def test_completion_must_match_last_segment():
    s = sched([(0, 4, ((0, 2),))], [(1, 3, ((1, 2),))])
    bad = Schedule(
        runs=(
            s.runs[0],
            JobRun(id="j1", release_s=1, completion_s=2.5, segments=s.runs[1].segments),
        )
    )
    with pytest.raises(ScheduleError, match=r"completion 2\.5"):
        validate_schedule(INST, bad)


def test_wrong_job_count_or_label():
    s = sched([(0, 4, ((0, 2),))], [(1, 3, ((1, 2),))])
    with pytest.raises(ScheduleError, match="2 jobs, instance has"):
        validate_schedule(make_instance([(0, 1, 1.0)] * 3), s)
    swapped = Schedule(runs=(s.runs[1], s.runs[0]))
    with pytest.raises(ScheduleError, match="labelled"):
        validate_schedule(INST, swapped)


def test_back_to_back_segments_share_gpus():
    # One job ends at 4 on server 0 and another starts there at 4: no overlap.
    inst = make_instance([(0, 2, 4.0), (0, 2, 1.0)], servers=(2,))
    validate_schedule(
        inst,
        Schedule(
            runs=(
                JobRun(
                    id="j0",
                    release_s=0,
                    completion_s=4,
                    segments=(Segment(start_s=0, end_s=4, allocation=((0, 2),)),),
                ),
                JobRun(
                    id="j1",
                    release_s=0,
                    completion_s=5,
                    segments=(Segment(start_s=4, end_s=5, allocation=((0, 2),)),),
                ),
            )
        ),
    )
