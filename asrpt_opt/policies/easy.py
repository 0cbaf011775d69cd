"""First come, first served with EASY backfilling on predicted run times."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation
from asrpt_opt.policies._selection import ArrivalQueue
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision, Start

__all__ = ["EasyBackfill"]


class EasyBackfill:
    """FCFS with EASY backfilling [1]_ [2]_: the first waiting job holds a reservation, later
    jobs start early only if they do not delay it.

    At every decision the waiting jobs are walked in arrival order (release time, then
    instance order). Jobs start while they fit. The first job that does not fit (the *head*)
    gets a reservation: going through the running jobs (and those started in this decision)
    by predicted end time, the *shadow time* is the first end at which enough GPUs are free
    for it, and the *extra* GPUs are those free then beyond its need. A later waiting job
    that fits starts only if it is predicted to end by the shadow time, or if it needs no
    more than the extra GPUs (which it then uses up). Non-preemptive.

    Predicted run times come from the simulation's predictor: a job's predicted work over its
    rate on the GPUs it is given; a running job that has passed its prediction is expected
    to end now. The reservation counts GPUs, as EASY counts a cluster's nodes: with several
    servers the GPUs free at the shadow time can be spread so that the head's placement runs
    slower, or (with a placement method that refuses) cannot start then, in which case it
    keeps waiting and the reservation is recomputed at the next decision.

    References
    ----------
    .. [1] D. A. Lifka, "The ANL/IBM SP scheduling system", Job Scheduling Strategies for
       Parallel Processing (JSSPP), LNCS 949, 1995.
    .. [2] A. W. Mu'alem, D. G. Feitelson, "Utilization, predictability, workloads, and user
       runtime estimates in scheduling the IBM SP2 with backfilling", IEEE Transactions on
       Parallel and Distributed Systems 12(6):529-543, 2001.
    """

    name = "easy-backfill"
    preemptive = False
    #: It decides from the jobs in the system alone, so it remembers nothing once the
    #: cluster empties: :func:`~asrpt_opt.sim.stream.simulate_stream` may cut runs there.
    regenerative = True
    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions look through
    #: every waiting job behind the head for one to backfill.
    compiles_from = PREEMPTIVE_FROM
    #: The placement method :func:`~asrpt_opt.sim.simulation.simulate` uses when none is given.
    default_placement = "consolidate"

    def kernel(self) -> Kernel | None:
        """The compiled form (:mod:`asrpt_opt.policies.easy_kernel`); None for a subclass.

        Returns
        -------
        Kernel or None
        """
        if type(self) is not EasyBackfill:
            return None
        return Kernel(name=self.name, build=_easy_state)

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Empty the queue."""
        self._queue = ArrivalQueue(view.job_gpus.shape[0])  # the waiting jobs

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """Queue the job last."""
        self._queue.append(job)

    def on_completion(self, job: int, view: ClusterView) -> None:
        """Nothing to do: running jobs are not queued."""

    def decide(self, view: ClusterView) -> Decision:
        """Start jobs in arrival order; past the first that cannot start, backfill only
        what does not delay its reservation."""
        total = view.total_free
        if not total:
            return NO_DECISION
        queue = self._queue.members()
        if not queue.size:
            return NO_DECISION
        free = view.free_gpus.copy()
        starts: list[Start] = []
        ends: list[float] = []
        head = len(queue)
        for k in range(queue.size):  # usually a few: converting the whole queue would cost more
            job = int(queue[k])
            width = int(view.job_gpus[job])
            allocation = view.place(job, free) if width <= total else None
            if allocation is None:
                head = k
                break
            total = self._start(view, job, allocation, free, total, starts, ends)
            if total == 0:
                break
        if total and head < len(queue):
            shadow, extra = _reserve(view, int(view.job_gpus[queue[head]]), total, starts, ends)
            jobs, soonest = _candidates(view, queue[head + 1 :], total, shadow, extra)
            for job, first_end in zip(jobs.tolist(), soonest.tolist(), strict=True):
                width = int(view.job_gpus[job])
                if width > extra and first_end > shadow:
                    continue  # the extra GPUs went to earlier backfills
                allocation = view.place(job, free) if width <= total else None
                if allocation is None:
                    continue
                end = view.now_s + float(view.predicted_work[job]) / view.rate_on(job, allocation)
                if end > shadow:
                    if width > extra:
                        continue
                    extra -= width
                total = self._start(view, job, allocation, free, total, starts, ends, end)
                if total == 0:
                    break
        if not starts:
            return NO_DECISION
        return Decision(starts=tuple(starts))

    def _start(
        self,
        view: ClusterView,
        job: int,
        allocation: Allocation,
        free: NDArray[np.int64],
        total: int,
        starts: list[Start],
        ends: list[float],
        end: float | None = None,
    ) -> int:
        # Start ``job`` on ``allocation``: the GPUs left free in all.
        if end is None:
            end = view.now_s + float(view.predicted_work[job]) / view.rate_on(job, allocation)
        for s, c in allocation:
            free[s] -= c
        starts.append(Start(job, allocation))
        ends.append(end)
        self._queue.discard(job)
        return total - int(view.job_gpus[job])


def _candidates(
    view: ClusterView, rest: NDArray[np.int64], total: int, shadow: float, extra: int
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    # The jobs behind the head that backfilling might start, with their soonest predicted
    # ends: they fit in the free GPUs, and either need no more than the extra GPUs or could
    # end by the shadow time at their best rate (a job's rate never exceeds its best rate,
    # so no other job can pass the tests).
    width = view.job_gpus[rest]
    soonest = view.now_s + view.predicted_work[rest] / view.best_rate[rest]
    keep = (width <= total) & ((width <= extra) | (soonest <= shadow))
    return rest[keep], soonest[keep]


def _reserve(
    view: ClusterView, width: int, total: int, starts: list[Start], ends: list[float]
) -> tuple[float, int]:
    # The head's shadow time and extra GPUs: running jobs and this decision's starts by
    # predicted end (then job index), until enough GPUs are free for it (now, when they
    # are free but the placement refused).
    if total >= width:
        return view.now_s, total - width
    running = view.running_jobs()
    left = np.maximum(view.predicted_work[running] - view.running_attained_work(), 0.0)
    jobs = np.concatenate([running, np.array([s.job for s in starts], np.int64)])
    end = np.concatenate([view.now_s + left / view.running_rate(), np.array(ends)])
    # Each job frees at least one GPU, so the first ``need`` ends decide: sort only the jobs
    # ending no later than the need-th end (all of them, ties included, come first).
    need = min(width - total, end.size)
    near = np.flatnonzero(end <= np.partition(end, need - 1)[need - 1])
    jobs, end = jobs[near], end[near]
    order = np.lexsort((jobs, end))
    avail = total + np.cumsum(view.job_gpus[jobs[order]])
    first = int(np.searchsorted(avail, width))  # the first end with enough GPUs free
    if first == order.size:
        return np.inf, 0  # cannot happen: every job fits the empty cluster
    return float(end[order[first]]), int(avail[first]) - width


def _easy_state(state: Any) -> Any:
    """The compiled state of :class:`EasyBackfill` for the compiled simulator ``state``."""
    from asrpt_opt.policies import easy_kernel

    return easy_kernel.new_state(state)
