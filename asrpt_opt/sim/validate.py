"""The one independent schedule validator.

Every schedule a policy or a solver produces passes through :func:`validate_schedule`, which
trusts nothing but the instance: it re-derives capacity use, gang width, release times,
processed work and completion times from the segments alone.
"""

from __future__ import annotations

import math

import numpy as np

from asrpt_opt.errors import ScheduleError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule, Segment
from asrpt_opt.speed.base import AbstractSpeed, SpeedModel

__all__ = ["validate_schedule"]


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


def _check_capacity(
    capacity: tuple[int, ...], srv: list[int], tim: list[float], dlt: list[int]
) -> None:
    if not srv:
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
