"""Shortest remaining time first and shortest remaining service first."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM
from asrpt_opt.sim.view import ClusterView

__all__ = ["SRPT", "SRSF", "SRTF"]


class SRTF(ListScheduler):
    """Shortest remaining (predicted) time first, preemptive.

    The key is ``(predicted_work - attained_work) / best_rate``: the predicted remaining time
    on the job's best placement. A waiting job preempts running jobs with a larger key. This is
    SRPT [1]_ generalised to gang jobs by list scheduling.

    Parameters
    ----------
    backfill : bool

    References
    ----------
    .. [1] L. Schrage, "A proof of the optimality of the shortest remaining processing time
       discipline", Operations Research 16(3):687-690, 1968.
    """

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name = "srtf"
    _core = "srtf"
    preemptive = True

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Predicted remaining time."""
        left = view.predicted_work[job] - view.attained_work(job)
        return float(left / view.best_rate[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Predicted remaining times of the running jobs."""
        left = view.predicted_work[jobs] - view.running_attained_work()
        out: NDArray[np.float64] = left / view.best_rate[jobs]
        return out


class SRSF(SRTF):
    """Shortest remaining (predicted) service first, preemptive.

    The key is the predicted remaining GPU-time, ``gpus * remaining time``, the "service"
    Tiresias' SRSF baseline orders by [1]_.

    Parameters
    ----------
    backfill : bool

    References
    ----------
    .. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
       NSDI 2019.
    """

    name = "srsf"
    _core = "srsf"

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Predicted remaining GPU-seconds."""
        return super().waiting_key(job, view) * float(view.job_gpus[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Predicted remaining GPU-seconds of the running jobs."""
        out: NDArray[np.float64] = super().running_keys(jobs, view) * view.job_gpus[jobs]
        return out


class SRPT(SRTF):
    """Alias of :class:`SRTF` under the name ``srpt`` (the name theorists use).

    References
    ----------
    .. [1] L. Schrage, Operations Research 16(3):687-690, 1968.
    """

    name = "srpt"
    _core = "srtf"
