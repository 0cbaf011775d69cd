"""Simulations of millions of abstract jobs in bounded memory.

A policy that decides from the jobs in the system alone (their sizes, widths, attained
service and release order) forgets everything when the cluster empties: after an instant at
which every released job has completed, the schedule of the jobs still to come is the
schedule they would get on their own. :func:`simulate_stream` runs the compiled loop on a
chunk of jobs (:class:`~asrpt_opt.model.columns.JobColumns`), keeps the jobs released before
the chunk's last such instant, passes their segments through the independent validator
(:func:`~asrpt_opt.sim.validate.validate_columns`), folds them into the metrics and starts
the next chunk at that instant. Its memory is one chunk's simulation plus a few numbers
per job (the columns, each job's completion and first start): 10^7 multiserver-job jobs
peak at about 1.5 GB, where a whole run through an Instance took 12.8 GB.

Only policies that declare ``regenerative = True`` run this way, and every cut is checked:
the jobs after a cut that completed before the chunk's next job arrives must complete at the
same instants when the next chunk simulates them afresh, or the run stops with a
:class:`~asrpt_opt.errors.PolicyError` (tests compare whole runs with chunked ones,
bit for bit).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import PolicyError, UsageError
from asrpt_opt.model.columns import JobColumns, ScheduleColumns
from asrpt_opt.sim.compiled import Kernel, run_columns
from asrpt_opt.sim.metrics import Metrics, columns_metrics, exact_parts
from asrpt_opt.sim.validate import validate_columns
from asrpt_opt.sim.view import Policy

__all__ = ["CHUNK_JOBS", "StreamResult", "simulate_stream"]

logger = logging.getLogger(__name__)

#: Jobs a chunk starts with (it doubles while its last empty instant falls in its first
#: quarter, or it has none).
CHUNK_JOBS = 500_000
_MIN_CUT = 0.25  # a cut must keep at least this share of its chunk
#: Jobs a cut leaves after it when it can (a share of the chunk, at least 64): the next
#: chunk simulates them again, and those that completed before the chunk's next arrival are
#: the cut's check.
_OVERLAP = 0.01


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamResult:
    """A chunked simulation's outcome.

    Attributes
    ----------
    policy : str
    metrics : Metrics
        Recomputed from every job's validated segments, as
        :func:`~asrpt_opt.sim.metrics.compute_metrics` computes them.
    completion_s : ndarray
        Every job's completion time, in the columns' order.
    chunks : int
        Chunks kept.
    resimulated_jobs : int
        Jobs simulated more than once (after a chunk's cut, or in a chunk that found none).
    checked_jobs : int
        Jobs whose completions two chunks computed independently and found equal (the
        cuts' checks).
    """

    policy: str
    metrics: Metrics
    completion_s: NDArray[np.float64]
    chunks: int
    resimulated_jobs: int
    checked_jobs: int


class _Folded:
    """What the metrics need of the kept jobs: per job, per segment, and a count."""

    def __init__(self, columns: JobColumns) -> None:
        n = columns.n_jobs
        self.columns = columns
        self.completion = np.empty(n)
        self.first_start = np.empty(n)
        # Exact partial sums (the metrics' math.fsum of every segment, without keeping them).
        self.held: list[float] = []
        self.slowed: list[float] = []
        self.preemptions = 0

    def add(self, lo: int, part: JobColumns, schedule: ScheduleColumns) -> None:
        n = part.n_jobs
        self.completion[lo : lo + n] = schedule.completion_s
        job = schedule.job
        first = np.full(n, np.inf)
        np.minimum.at(first, job, schedule.start_s)
        self.first_start[lo : lo + n] = first
        held = (schedule.end_s - schedule.start_s) * part.gpus[job]
        rate = np.where(schedule.length == 1, 1.0, 1.0 / part.slowdowns()[job])
        self.held += exact_parts(held)
        self.slowed += exact_parts(held * part.best_rates()[job] / rate)
        self.preemptions += job.shape[0] - n

    def metrics(self) -> Metrics:
        return columns_metrics(
            self.columns,
            completion_s=self.completion,
            first_start_s=self.first_start,
            held_s=math.fsum(self.held),
            slowed_s=math.fsum(self.slowed),
            preemptions=self.preemptions,
        )


def simulate_stream(
    columns: JobColumns,
    policy: Policy,
    *,
    chunk_jobs: int = CHUNK_JOBS,
    restore_overhead_s: float = 0.0,
) -> StreamResult:
    """Simulate ``policy`` on abstract jobs in chunks cut where the cluster empties.

    The schedule is the one :func:`~asrpt_opt.sim.simulation.simulate` gives on
    ``columns.to_instance()`` with exact predictions (the oracle) at the abstract speed
    model, and so are the metrics; only they and the completion times are kept.

    Parameters
    ----------
    columns : JobColumns
    policy : Policy
        A policy object with a compiled kernel that declares ``regenerative = True`` (the
        list policies, the multiserver-job policies and A-SRPT).
    chunk_jobs : int
        Jobs in a chunk; a chunk whose last empty instant falls in its first quarter (or
        that has none) doubles. Peak memory grows with it.
    restore_overhead_s : float
        Seconds a resumed job holds its GPUs before making progress again.

    Returns
    -------
    StreamResult

    Raises
    ------
    UsageError
        For a policy that is not regenerative or has no compiled kernel.
    PolicyError
        When a cut's check fails (the policy remembered something across an empty cluster),
        or the policy stalls.
    ScheduleError
        If a chunk's schedule fails validation (a simulator bug).

    Examples
    --------
    >>> from asrpt_opt.policies import FIFO
    >>> from asrpt_opt.traces.synthetic import msj_columns
    >>> out = simulate_stream(msj_columns(2_000, load=0.5, seed=1), FIFO(), chunk_jobs=500)
    >>> out.metrics.n_jobs, out.chunks > 1
    (2000, True)
    """
    if chunk_jobs < 2:
        raise UsageError(f"chunk_jobs must be >= 2, got {chunk_jobs}")
    kernel = _kernel(policy)
    n = columns.n_jobs
    folded = _Folded(columns)
    lo, hi, size, chunks, again, checked = 0, 0, chunk_jobs, 0, 0, 0
    check: tuple[NDArray[np.int64], NDArray[np.float64]] | None = None
    while lo < n:
        hi = min(n, max(lo + size, hi))  # past the jobs the last cut's check names
        part = columns.take(lo, hi)
        schedule = run_columns(
            part, kernel, policy=policy.name, restore_overhead_s=restore_overhead_s
        )
        if check is not None:
            _check_cut(policy.name, lo, check, schedule.completion_s)
            checked += check[0].shape[0]
            check = None  # a retried chunk repeats the same comparison
        cut = hi - lo if hi == n else _last_empty(part, schedule.completion_s)
        if cut < _MIN_CUT * (hi - lo):
            again += hi - lo
            size *= 2
            logger.info("no empty cluster in jobs %d-%d: a chunk of %d jobs", lo, hi, size)
            continue
        kept = schedule.head(cut)
        done = part.take(0, cut)
        validate_columns(done, kept)
        folded.add(lo, done, kept)
        check = _after_cut(columns, lo, cut, hi, schedule.completion_s) if hi < n else None
        again += hi - lo - cut
        lo += cut
        chunks += 1
        size = chunk_jobs
    return StreamResult(
        policy=policy.name,
        metrics=folded.metrics(),
        completion_s=folded.completion,
        chunks=chunks,
        resimulated_jobs=again,
        checked_jobs=checked,
    )


def _kernel(policy: Policy) -> Kernel:
    get = getattr(policy, "kernel", None)
    kernel = get() if callable(get) else None
    if kernel is None or not getattr(policy, "regenerative", False):
        raise UsageError(
            f"policy {policy.name!r} cannot be simulated in chunks: only built-in policies "
            "with a compiled kernel that decide from the jobs in the system alone "
            "(regenerative = True) can; simulate() runs any policy"
        )
    return kernel


def _last_empty(part: JobColumns, completion: NDArray[np.float64]) -> int:
    # A job whose predecessors all completed strictly before it arrived: the last one that
    # leaves _OVERLAP of the chunk after it, else the last one.
    done_before = np.maximum.accumulate(completion[:-1])
    empty = np.flatnonzero(done_before < part.release_s[1:]) + 1
    if not empty.size:
        return 0
    room = part.n_jobs - max(64, int(_OVERLAP * part.n_jobs))
    early = empty[empty <= room]
    return int(early[-1] if early.size else empty[-1])


def _after_cut(
    columns: JobColumns, lo: int, cut: int, hi: int, completion: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    # The jobs after the cut that completed before the next chunk's first arrival: the next
    # chunk, starting afresh at the cut, must give them the same completion times.
    after = completion[cut:]
    sure = np.flatnonzero(after < columns.release_s[hi]) + lo + cut
    return sure, after[sure - lo - cut]


def _check_cut(
    name: str,
    lo: int,
    check: tuple[NDArray[np.int64], NDArray[np.float64]],
    completion: NDArray[np.float64],
) -> None:
    jobs, expected = check
    differ = np.flatnonzero(completion[jobs - lo] != expected)
    if differ.size:
        j = int(jobs[differ[0]])
        raise PolicyError(
            f"policy {name!r} is not regenerative: job {j} completes at "
            f"{completion[j - lo]!r} when simulated from the empty cluster at job {lo}, "
            f"at {expected[differ[0]]!r} after the jobs before it"
        )
