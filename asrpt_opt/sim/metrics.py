"""Schedule metrics, always recomputed from the schedule itself."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.columns import JobColumns
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.sim.stability import Stability, stability
from asrpt_opt.speed.base import AbstractSpeed, SpeedModel

__all__ = ["Metrics", "columns_metrics", "compute_metrics", "exact_parts", "segment_costs"]

_BLOCK = 1 << 18  # values summed by one math.fsum call of exact_parts


@dataclass(frozen=True, kw_only=True, slots=True)
class Metrics:
    """Summary of a schedule. Times in seconds.

    Attributes
    ----------
    n_jobs : int
    total_weighted_completion_s : float
        sum w_j C_j, the objective.
    total_completion_s : float
        sum C_j.
    mean_jct_s, p50_jct_s, p95_jct_s, p99_jct_s, max_jct_s : float
        Job completion time C_j - r_j: mean and percentiles (linear interpolation).
    makespan_s : float
        Last completion.
    mean_slowdown, p95_slowdown : float
        JCT divided by the job's best-case length.
    utilisation : float
        GPU-seconds held divided by GPUs times (makespan - first release).
    mean_queueing_delay_s : float
        First start minus release, averaged.
    preemptions : int
        Segments beyond each job's first, summed.
    placement_slowdown : float
        GPU-time-weighted mean, over every segment, of the job's best rate on an empty cluster
        over its rate on the GPUs it held (1 when every job always ran as fast as it can;
        an abstract job spread over servers counts its spread slowdown).
    cross_server_gb : float
        Gigabytes DNN jobs sent across servers in total (iterations run times bytes per
        iteration across servers; 0 for speed models without a worker graph).
    stability : Stability
        Whether the number of jobs in the system keeps growing over the second half of the
        arrivals (:func:`~asrpt_opt.sim.stability.stability`; docs/stability.md).
    """

    n_jobs: int
    total_weighted_completion_s: float
    total_completion_s: float
    mean_jct_s: float
    p50_jct_s: float
    p95_jct_s: float
    p99_jct_s: float
    max_jct_s: float
    makespan_s: float
    mean_slowdown: float
    p95_slowdown: float
    utilisation: float
    mean_queueing_delay_s: float
    preemptions: int
    placement_slowdown: float
    cross_server_gb: float
    stability: Stability

    def to_json(self) -> dict[str, Any]:
        """The metrics as a JSON-ready dict (``stability`` as a nested object)."""
        out = asdict(self)
        out["stability"] = self.stability.to_json()
        return out


def compute_metrics(
    instance: Instance, schedule: Schedule, *, speed: SpeedModel | None = None
) -> Metrics:
    """Compute :class:`Metrics` of ``schedule``.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    speed : SpeedModel, optional
        For the best-case lengths in the slowdown; defaults to abstract jobs.

    Returns
    -------
    Metrics
    """
    speed = speed or AbstractSpeed()
    jobs = instance.jobs
    runs = schedule.runs
    release = np.array([j.release_s for j in jobs])
    weight = np.array([j.weight for j in jobs])
    completion = np.array([r.completion_s for r in runs])
    first_start = np.array([r.segments[0].start_s for r in runs])
    best = np.array([speed.work(j) / speed.best_rate(j, instance.cluster) for j in jobs])
    held = math.fsum(
        (seg.end_s - seg.start_s) * job.gpus
        for job, run in zip(jobs, runs, strict=True)
        for seg in run.segments
    )
    slowdown_sum, weight_sum, cross = _placement_costs(instance, schedule, speed)
    return _summary(
        (release, weight, completion, first_start, best),
        (held, slowdown_sum, weight_sum, cross),
        sum(len(r.segments) - 1 for r in runs),
        instance.cluster.total_gpus,
    )


def exact_parts(values: NDArray[np.float64]) -> list[float]:
    """A few floats whose sum, as real numbers, is exactly the sum of ``values``.

    ``math.fsum(exact_parts(x))`` is ``math.fsum(x)`` (both are the exact sum, correctly
    rounded), and partial results of blocks of values can be joined: a sum over 10^7 values
    needs neither a list of them all nor their order.

    Parameters
    ----------
    values : ndarray of float
        Finite.

    Returns
    -------
    list of float
    """
    parts: list[float] = []
    for lo in range(0, values.shape[0], _BLOCK):
        block = values[lo : lo + _BLOCK].tolist()
        # Peel off the correctly rounded sum until nothing remains: every double is a
        # multiple of 2**-1074, so a remainder that is not zero does not round to zero.
        while (total := math.fsum(block)) != 0.0:
            parts.append(total)
            block.append(-total)
    return parts


def columns_metrics(
    columns: JobColumns,
    *,
    completion_s: NDArray[np.float64],
    first_start_s: NDArray[np.float64],
    held_s: float,
    slowed_s: float,
    preemptions: int,
) -> Metrics:
    """:func:`compute_metrics` of a schedule of abstract jobs held as arrays, at the abstract
    speed model: the same values from the same numbers.

    Parameters
    ----------
    columns : JobColumns
    completion_s, first_start_s : ndarray
        Per job.
    held_s, slowed_s : float
        Summed over the segments (:func:`math.fsum`, or :func:`exact_parts` of parts):
        GPU-seconds held, and that times the job's best rate over its rate in the segment.
    preemptions : int
        Segments beyond each job's first, summed.

    Returns
    -------
    Metrics
    """
    best = columns.duration_s / columns.best_rates()
    return _summary(
        (columns.release_s, columns.weights(), completion_s, first_start_s, best),
        (held_s, slowed_s, held_s, 0.0),
        preemptions,
        columns.cluster.total_gpus,
    )


def _summary(
    per_job: tuple[NDArray[np.float64], ...],
    sums: tuple[float, float, float, float],
    preemptions: int,
    total_gpus: int,
) -> Metrics:
    # per_job: release, weight, completion, first start, best-case length; sums: GPU-seconds
    # held, the placement slowdown's numerator and denominator, cross-server bytes.
    release, weight, completion, first_start, best = per_job
    held, slowdown_sum, weight_sum, cross = sums
    jct = completion - release
    slowdown = jct / best
    makespan = float(completion.max())
    span = makespan - float(release.min())
    util = held / (total_gpus * span) if span > 0 else 0.0
    p50, p95, p99 = np.percentile(jct, [50, 95, 99]).tolist()
    return Metrics(
        n_jobs=len(release),
        total_weighted_completion_s=math.fsum(exact_parts(weight * completion)),
        total_completion_s=math.fsum(exact_parts(completion)),
        mean_jct_s=float(jct.mean()),
        p50_jct_s=p50,
        p95_jct_s=p95,
        p99_jct_s=p99,
        max_jct_s=float(jct.max()),
        makespan_s=makespan,
        mean_slowdown=float(slowdown.mean()),
        p95_slowdown=float(np.percentile(slowdown, 95)),
        utilisation=util,
        mean_queueing_delay_s=float((first_start - release).mean()),
        preemptions=preemptions,
        placement_slowdown=slowdown_sum / weight_sum if weight_sum > 0 else 1.0,
        cross_server_gb=cross / 1e9,
        stability=stability(release, completion),
    )


def _placement_costs(
    instance: Instance, schedule: Schedule, speed: SpeedModel
) -> tuple[float, float, float]:
    """(sum of GPU-time x best/actual rate, sum of GPU-time, cross-server bytes)."""
    slow: list[float] = []
    weight: list[float] = []
    cross: list[float] = []
    for _, held, slowed, nbytes in segment_costs(instance, schedule, speed):
        slow.append(slowed)
        weight.append(held)
        if nbytes is not None:
            cross.append(nbytes)
    return math.fsum(slow), math.fsum(weight), math.fsum(cross)


def segment_costs(
    instance: Instance, schedule: Schedule, speed: SpeedModel
) -> Iterator[tuple[int, float, float, float | None]]:
    """Per segment: ``(job index, GPU-seconds held, GPU-seconds x best rate / rate,
    cross-server bytes sent or None)``.

    The third entry over the second, summed, is the placement slowdown; bytes are None for
    abstract jobs and speed models without a worker graph.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    speed : SpeedModel

    Returns
    -------
    iterator of tuple
        One per segment, jobs in instance order.
    """
    cross_bytes = getattr(speed, "cross_server_bytes", None)
    overhead = schedule.restore_overhead_s
    for j, (job, run) in enumerate(zip(instance.jobs, schedule.runs, strict=True)):
        best = speed.best_rate(job, instance.cluster)
        for k, seg in enumerate(run.segments):
            held = (seg.end_s - seg.start_s) * job.gpus
            rate = speed.rate(job, seg.allocation)
            nbytes = None
            if cross_bytes is not None and not job.is_abstract:
                busy = max(seg.end_s - seg.start_s - (overhead if k else 0.0), 0.0)
                nbytes = busy * rate * cross_bytes(job, seg.allocation)
            yield j, held, held * best / rate, nbytes
