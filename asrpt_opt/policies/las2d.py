"""Tiresias' discretized two-dimensional least-attained-service (2D-LAS)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.policies.list_scheduler import ListScheduler, _list_state
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import ClusterView, Start

__all__ = ["TwoDimensionalLAS"]

_LEVEL = float(1 << 31)


class TwoDimensionalLAS(ListScheduler):
    """Discretized 2D-LAS: priority queues by attained GPU-time, FIFO within a queue.

    A job's *attained service* is the GPU-seconds it has held (GPUs times time, Tiresias' two
    dimensions). Queue ``k`` holds jobs whose service lies in ``[T_{k-1}, T_k)`` for the
    thresholds ``T``; lower queues run first and preempt higher ones, and within a queue jobs
    run in arrival order. The policy needs no knowledge of job lengths. Tiresias' starvation
    promotion is not modelled.

    Parameters
    ----------
    thresholds_gpu_s : sequence of float
        Increasing queue thresholds in GPU-seconds (K thresholds give K + 1 queues).
    backfill : bool
    max_placement_slowdown : float, optional
        The placement-aware start rule of
        :class:`~asrpt_opt.policies.list_scheduler.ListScheduler` (off by default).

    References
    ----------
    .. [1] J. Gu, M. Chowdhury, K. G. Shin, Y. Zhu, M. Jeon, J. Qian, H. Liu, C. Guo,
       "Tiresias: A GPU cluster manager for distributed deep learning", NSDI 2019.
    """

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name = "2d-las"
    _core = "2d-las"
    preemptive = True

    def __init__(
        self,
        *,
        thresholds_gpu_s: Sequence[float] = (3600.0, 36000.0),
        backfill: bool = True,
        max_placement_slowdown: float | None = None,
    ) -> None:
        super().__init__(backfill=backfill, max_placement_slowdown=max_placement_slowdown)
        self.thresholds_gpu_s = thresholds_gpu_s

    def kernel(self) -> Kernel | None:
        """The compiled 2D-LAS with these thresholds (None for a subclass).

        Returns
        -------
        Kernel or None
        """
        if not self._compiles():
            return None
        build = partial(_list_state, "2d-las", bool(self.backfill), self.thresholds_gpu_s)
        return Kernel(name="2d-las", build=build)

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Validate the thresholds and empty the queues."""
        t = np.asarray(self.thresholds_gpu_s, dtype=np.float64)
        if t.ndim != 1 or np.any(t <= 0) or np.any(np.diff(t) <= 0):
            raise UsageError(f"thresholds_gpu_s must be positive and increasing, got {t}")
        self._t = t
        self._rank = np.zeros(view.n_jobs)
        self._arrivals = 0
        super().reset(view, rng)

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """Record the arrival order, then queue the job."""
        self._rank[job] = self._arrivals
        self._arrivals += 1
        super().on_arrival(job, view)

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Queue level, then arrival order."""
        level = int(np.searchsorted(self._t, view.attained_gpu_s(job), side="right"))
        return level * _LEVEL + float(self._rank[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Queue levels of the running jobs (from their service now), then arrival order."""
        level = np.searchsorted(self._t, view.running_attained_gpu_s(), side="right")
        out: NDArray[np.float64] = level * _LEVEL + self._rank[jobs]
        return out

    def wake_time(
        self, view: ClusterView, starts: list[Start], preempts: list[int]
    ) -> float | None:
        """The next instant a running job crosses a threshold, if anyone is waiting."""
        if self._n_waiting == 0:
            return None
        jobs = view.running_jobs()
        service = view.running_attained_gpu_s()
        keep = ~np.isin(jobs, preempts) if preempts else np.ones(jobs.size, dtype=bool)
        new = np.array([s.job for s in starts], dtype=np.int64)
        new_service = np.array([view.attained_gpu_s(int(j)) for j in new], dtype=np.float64)
        all_jobs = np.concatenate([jobs[keep], new])
        all_service = np.concatenate([service[keep], new_service])
        level = np.searchsorted(self._t, all_service, side="right")
        below = level < self._t.size
        if not below.any():
            return None
        gap = self._t[level[below]] - all_service[below]
        wake = view.now_s + float(np.min(gap / view.job_gpus[all_jobs[below]]))
        return wake if wake > view.now_s else None
