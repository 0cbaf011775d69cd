"""The independent validator rejects every kind of infeasible schedule."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.errors import ScheduleError
from asrpt_opt.model.columns import JobColumns, ScheduleColumns
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.sim import validate_schedule
from asrpt_opt.sim.validate import validate_columns
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


VIOLATIONS = [
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
]


@pytest.mark.parametrize(("runs", "words"), VIOLATIONS)
def test_violations_are_named(runs, words):
    with pytest.raises(ScheduleError, match=words):
        validate_schedule(INST, sched(*runs))


def test_an_allocation_equal_to_a_valid_one_is_still_checked():
    # ((0.0, 2),) equals ((0, 2),), which passed before it, yet a server is an integer.
    with pytest.raises(ScheduleError, match=r"server 0\.0 does not exist"):
        validate_schedule(INST, sched([(0, 4, ((0, 2),))], [(5, 7, ((0.0, 2),))]))


def test_one_allocation_object_shared_by_overlapping_segments_is_over_capacity():
    # The compiled simulator shares one tuple per server and count: every segment that
    # holds it counts towards the server's capacity.
    both = ((0, 2),)
    validate_schedule(INST, sched([(0, 4, both)], [(4, 6, both)]))
    with pytest.raises(ScheduleError, match="server 0: 4 GPUs in use at t=1"):
        validate_schedule(INST, sched([(0, 4, both)], [(1, 3, both)]))


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


# ----------------------------------------------------------------- the columnar form
def as_columns(instance: Instance, schedule: Schedule) -> tuple[JobColumns, ScheduleColumns]:
    """The instance and schedule as arrays, segments listed job after job."""
    jobs = instance.jobs
    columns = JobColumns(
        name=instance.name,
        cluster=instance.cluster,
        release_s=[j.release_s for j in jobs],
        gpus=[j.gpus for j in jobs],
        duration_s=[j.duration_s for j in jobs],
        spread_slowdown=[j.spread_slowdown for j in jobs],
    )
    seg: dict[str, list] = {k: [] for k in ("job", "start", "end", "offset", "length")}
    server: list[int] = []
    count: list[int] = []
    for i, run in enumerate(schedule.runs):
        for segment in run.segments:
            for key, value in zip(
                seg,
                (i, segment.start_s, segment.end_s, len(server), len(segment.allocation)),
                strict=True,
            ):
                seg[key].append(value)
            server.extend(s for s, _ in segment.allocation)
            count.extend(c for _, c in segment.allocation)
    ints = np.int64
    return columns, ScheduleColumns(
        completion_s=np.array([r.completion_s for r in schedule.runs], dtype=float),
        job=np.array(seg["job"], dtype=ints),
        start_s=np.array(seg["start"], dtype=float),
        end_s=np.array(seg["end"], dtype=float),
        offset=np.array(seg["offset"], dtype=ints),
        length=np.array(seg["length"], dtype=ints),
        server=np.array(server, dtype=ints),
        count=np.array(count, dtype=ints),
        restore_overhead_s=schedule.restore_overhead_s,
    )


def test_columns_accept_what_the_validator_accepts():
    ok = sched([(0, 1, ((0, 2),)), (2, 6, ((1, 2),))], [(1, 3, ((0, 2),))], overhead=1.0)
    validate_columns(*as_columns(INST, ok))
    spread = sched([(0, 4, ((0, 2),))], [(4, 8, ((0, 1), (1, 1)))])
    validate_columns(*as_columns(INST, spread))


@pytest.mark.parametrize(("runs", "words"), VIOLATIONS)
def test_columns_name_the_same_violations(runs, words):
    with pytest.raises(ScheduleError, match=words):
        validate_columns(*as_columns(INST, sched(*runs)))


def test_columns_name_overhead_and_completion_violations():
    short = sched([(0, 1, ((0, 2),)), (2, 5, ((1, 2),))], [(1, 3, ((0, 2),))], overhead=1.0)
    with pytest.raises(ScheduleError, match="processed"):
        validate_columns(*as_columns(INST, short))
    columns, good = as_columns(INST, sched([(0, 4, ((0, 2),))], [(1, 3, ((1, 2),))]))
    late = ScheduleColumns(
        completion_s=np.array([4.0, 2.5]),
        job=good.job,
        start_s=good.start_s,
        end_s=good.end_s,
        offset=good.offset,
        length=good.length,
        server=good.server,
        count=good.count,
    )
    with pytest.raises(ScheduleError, match=r"job 1 \('j1'\): completion 2\.5"):
        validate_columns(columns, late)
    with pytest.raises(ScheduleError, match="2 jobs, instance has 3"):
        validate_columns(_three(), good)


def _three() -> JobColumns:
    return JobColumns(
        name="t", cluster=INST.cluster, release_s=[0, 0, 0], gpus=[1, 1, 1], duration_s=[1, 1, 1]
    )


def test_columns_agree_with_the_validator_on_simulated_schedules():
    from asrpt_opt.policies import make_policy
    from asrpt_opt.sim import simulate
    from asrpt_opt.traces.synthetic import philly_like

    inst = philly_like(300, servers=(4, 4, 8), load=1.2, seed=5)
    for name in ("srtf", "a-srpt", "serverfilling-srpt"):
        result = simulate(inst, make_policy(name), restore_overhead_s=30.0)
        validate_columns(*as_columns(inst, result.schedule))
