"""The one independent schedule validator.

Every schedule a policy or a solver produces passes through :func:`validate_schedule`, which
trusts nothing but the instance: it re-derives capacity use, gang width, release times,
processed work and completion times from the segments alone. :func:`validate_columns`
applies the same rules to a schedule held as arrays (the compiled simulator's, for millions
of abstract jobs), with the same messages.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from asrpt_opt.errors import ScheduleError
from asrpt_opt.model.columns import JobColumns, ScheduleColumns
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule, Segment
from asrpt_opt.speed.base import AbstractSpeed, SpeedModel

__all__ = ["validate_columns", "validate_schedule"]


def validate_schedule(
    instance: Instance,
    schedule: Schedule,
    *,
    speed: SpeedModel | None = None,
    rtol: float = 1e-9,
) -> None:
    """Check that ``schedule`` is a feasible, complete schedule of ``instance``.

    Checks, for every job: one run per job in instance order with the job's id and release;
    segments in time order, non-overlapping, starting no earlier than the release; each
    segment holding exactly ``gpus`` GPUs on valid servers; the work processed (at the speed
    model's rate, after the restore overhead of every resumed segment) equal to the job's
    work; completion at the end of the last segment. For every server: at no instant do the
    segments on it use more GPUs than it has.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    speed : SpeedModel, optional
        Defaults to :class:`~asrpt_opt.speed.base.AbstractSpeed`.
    rtol : float
        Relative tolerance for floating-point comparisons.

    Raises
    ------
    ScheduleError
        Naming the job (or server), the instant and the violated rule.
    """
    speed = speed or AbstractSpeed()
    cluster = instance.cluster
    if len(schedule.runs) != instance.n_jobs:
        raise ScheduleError(
            f"schedule has {len(schedule.runs)} jobs, instance has {instance.n_jobs}"
        )
    overhead = schedule.restore_overhead_s
    n_servers = cluster.n_servers
    isfinite = math.isfinite
    rate, work_of = speed.rate, speed.work
    srv: list[int] = []
    tim: list[float] = []
    dlt: list[int] = []
    for job, run in zip(instance.jobs, schedule.runs, strict=True):
        if run.id != job.id:
            raise ScheduleError(f"job {job.id!r}: run is labelled {run.id!r}")
        if not run.segments:
            raise ScheduleError(f"job {job.id!r}: has no segments")
        work = work_of(job)
        scale = max(1.0, abs(run.completion_s), work)
        tol = rtol * scale
        prev_end = job.release_s
        done = 0.0
        for k, seg in enumerate(run.segments):
            start, end, allocation = seg.start_s, seg.end_s, seg.allocation
            if not (isfinite(start) and isfinite(end) and start >= prev_end - tol and end > start):
                _segment_times(job.id, k, seg, prev_end, tol)
            width = 0
            last = -1
            for s, c in allocation:
                # Plain ints pass at once; anything else is checked (and named) in full.
                if not (type(s) is int and last < s < n_servers and type(c) is int and c >= 1):
                    _server_entry(job.id, k, seg, s, c, last, n_servers)
                last = s = int(s)
                c = int(c)
                width += c
                srv.append(s)
                srv.append(s)
                tim.append(start)
                tim.append(end)
                dlt.append(c)
                dlt.append(-c)
            if width != job.gpus:
                raise ScheduleError(
                    f"{_at(job.id, k, seg)}: holds {width} GPUs, the job needs exactly {job.gpus}"
                )
            busy = end - start - (overhead if k > 0 else 0.0)
            done += max(0.0, busy) * rate(job, allocation)
            prev_end = end
        if abs(done - work) > tol:
            raise ScheduleError(f"job {job.id!r}: processed {done!r} work units, needs {work!r}")
        if abs(run.completion_s - prev_end) > tol:
            raise ScheduleError(
                f"job {job.id!r}: completion {run.completion_s} differs from its last segment's "
                f"end {prev_end}"
            )
    _check_capacity(cluster.servers, srv, tim, dlt)


def _at(job_id: str, k: int, seg: Segment) -> str:
    return f"job {job_id!r} segment {k} [{seg.start_s}, {seg.end_s})"


def _segment_times(job_id: str, k: int, seg: Segment, prev_end: float, tol: float) -> None:
    at = _at(job_id, k, seg)
    if not (math.isfinite(seg.start_s) and math.isfinite(seg.end_s)):
        raise ScheduleError(f"{at}: times must be finite")
    if seg.start_s < prev_end - tol:
        rule = "release" if k == 0 else "end of the previous segment"
        raise ScheduleError(f"{at}: starts before the {rule} {prev_end}")
    raise ScheduleError(f"{at}: is empty or reversed")


def _server_entry(
    job_id: str, k: int, seg: Segment, s: object, c: object, last: int, n_servers: int
) -> None:
    at = _at(job_id, k, seg)
    if not (isinstance(s, int | np.integer) and 0 <= s < n_servers):
        raise ScheduleError(f"{at}: server {s!r} does not exist")
    if s <= last:
        raise ScheduleError(f"{at}: servers must be listed once, in order")
    if not (isinstance(c, int | np.integer) and c >= 1):
        raise ScheduleError(f"{at}: GPU count {c!r} on server {s} is not >= 1")


def _check_capacity(capacity: tuple[int, ...], srv: Any, tim: Any, dlt: Any) -> None:
    if not len(srv):
        return
    s = np.asarray(srv, dtype=np.int64)
    t = np.asarray(tim, dtype=np.float64)
    d = np.asarray(dlt, dtype=np.int64)
    # Sort by server, then time, releases before acquisitions at the same instant; every
    # server's deltas sum to zero, so one running sum gives each server's occupancy.
    order = np.lexsort((d, t, s))
    used = np.cumsum(d[order])
    cap = np.asarray(capacity, dtype=np.int64)[s[order]]
    over = np.flatnonzero(used > cap)
    if over.size:
        i = order[over[0]]
        raise ScheduleError(
            f"server {s[i]}: {used[over[0]]} GPUs in use at t={t[i]}, capacity {capacity[s[i]]}"
        )


def validate_columns(
    columns: JobColumns, schedule: ScheduleColumns, *, rtol: float = 1e-9
) -> None:
    """:func:`validate_schedule`'s checks on a schedule of abstract jobs held as arrays.

    The same rules at the abstract speed model (rate 1 on one server, ``1 /
    spread_slowdown`` across servers), evaluated on whole arrays; the first violation found
    is reported, naming the job by its index and id.

    Parameters
    ----------
    columns : JobColumns
    schedule : ScheduleColumns
    rtol : float
        Relative tolerance for floating-point comparisons.

    Raises
    ------
    ScheduleError
        Naming the job (or server), the instant and the violated rule.
    """
    n = columns.n_jobs
    completion = schedule.completion_s
    if completion.shape != (n,):
        raise ScheduleError(f"schedule has {completion.shape[0]} jobs, instance has {n}")
    job = schedule.job
    if job.size and (job.min() < 0 or job.max() >= n):
        raise ScheduleError(
            f"a segment names job index {job.min()} or {job.max()}, not in [0, {n})"
        )
    by_job = np.argsort(job, kind="stable")  # each job's segments, in time order
    job = job[by_job]
    counts = np.bincount(job, minlength=n)
    if not counts.all():
        raise ScheduleError(f"{_name(columns, int(np.argmin(counts)))}: has no segments")
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    tol = rtol * np.maximum(np.maximum(1.0, np.abs(completion)), columns.duration_s)
    start, end = schedule.start_s[by_job], schedule.end_s[by_job]
    _check_segment_times(columns, job, first, start, end, tol)
    length = schedule.length[by_job]
    entry_seg, server, count = _entries(schedule, by_job, length)
    _check_allocations(columns, job, entry_seg, server, count, start, end)
    is_first = np.zeros(job.shape[0], np.bool_)
    is_first[first] = True
    busy = end - start - np.where(is_first, 0.0, schedule.restore_overhead_s)
    rate = np.where(length == 1, 1.0, 1.0 / columns.slowdowns()[job])
    done = np.add.reduceat(np.maximum(0.0, busy) * rate, first)
    work = columns.duration_s
    bad = np.flatnonzero(np.abs(done - work) > tol)
    if bad.size:
        i = int(bad[0])
        raise ScheduleError(
            f"{_name(columns, i)}: processed {done[i]!r} work units, needs {work[i]!r}"
        )
    last = end[first + counts - 1]
    bad = np.flatnonzero(np.abs(completion - last) > tol)
    if bad.size:
        i = int(bad[0])
        raise ScheduleError(
            f"{_name(columns, i)}: completion {completion[i]} differs from its last segment's "
            f"end {last[i]}"
        )
    times = np.stack((start[entry_seg], end[entry_seg]), axis=1).ravel()
    _check_capacity(
        columns.cluster.servers,
        np.repeat(server, 2),
        times,
        np.stack((count, -count), axis=1).ravel(),
    )


def _name(columns: JobColumns, i: int) -> str:
    return f"job {i} ({columns.job_id(i)!r})"


def _check_segment_times(
    columns: JobColumns,
    job: Any,
    first: Any,
    start: Any,
    end: Any,
    tol: Any,
) -> None:
    prev_end = np.empty_like(start)
    prev_end[1:] = end[:-1]
    prev_end[first] = columns.release_s
    t = tol[job]
    ok = np.isfinite(start) & np.isfinite(end) & (start >= prev_end - t) & (end > start)
    if ok.all():
        return
    k = int(np.flatnonzero(~ok)[0])
    i = int(job[k])
    at = f"{_name(columns, i)} segment {k - int(first[i])} [{start[k]}, {end[k]})"
    if not (math.isfinite(start[k]) and math.isfinite(end[k])):
        raise ScheduleError(f"{at}: times must be finite")
    if start[k] < prev_end[k] - t[k]:
        rule = "release" if k == first[i] else "end of the previous segment"
        raise ScheduleError(f"{at}: starts before the {rule} {prev_end[k]}")
    raise ScheduleError(f"{at}: is empty or reversed")


def _entries(schedule: ScheduleColumns, by_job: Any, length: Any) -> tuple[Any, Any, Any]:
    # Every allocation entry, with the (job-ordered) segment it belongs to.
    if length.size and length.min() < 1:
        raise ScheduleError("a segment holds no allocation entry")
    offset = schedule.offset[by_job]
    entry_seg = np.repeat(np.arange(length.shape[0]), length)
    starts = np.cumsum(length) - length
    pool = offset[entry_seg] + (np.arange(entry_seg.shape[0]) - starts[entry_seg])
    if pool.size and (pool.min() < 0 or pool.max() >= schedule.server.shape[0]):
        raise ScheduleError("a segment's allocation lies outside the allocation pool")
    return entry_seg, schedule.server[pool], schedule.count[pool]


def _check_allocations(
    columns: JobColumns,
    job: Any,
    entry_seg: Any,
    server: Any,
    count: Any,
    start: Any,
    end: Any,
) -> None:
    n_servers = columns.cluster.n_servers
    same = np.zeros(entry_seg.shape[0], np.bool_)
    same[1:] = entry_seg[1:] == entry_seg[:-1]
    ascending = np.ones_like(same)
    ascending[1:] = server[1:] > server[:-1]
    ok = (server >= 0) & (server < n_servers) & (count >= 1) & (~same | ascending)
    if not ok.all():
        e = int(np.flatnonzero(~ok)[0])
        k = int(entry_seg[e])
        at = f"{_name(columns, int(job[k]))} segment [{start[k]}, {end[k]})"
        s, c = int(server[e]), int(count[e])
        if not 0 <= s < n_servers:
            raise ScheduleError(f"{at}: server {s} does not exist")
        if c < 1:
            raise ScheduleError(f"{at}: GPU count {c} on server {s} is not >= 1")
        raise ScheduleError(f"{at}: servers must be listed once, in order")
    width = np.bincount(entry_seg, weights=count, minlength=job.shape[0])
    bad = np.flatnonzero(width != columns.gpus[job])
    if bad.size:
        k = int(bad[0])
        i = int(job[k])
        raise ScheduleError(
            f"{_name(columns, i)} segment [{start[k]}, {end[k]}): holds {int(width[k])} GPUs, "
            f"the job needs exactly {columns.gpus[i]}"
        )
