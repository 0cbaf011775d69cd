"""Quasi-shortest-service-first (Helios), non-preemptive, on predicted GPU-time."""

from __future__ import annotations

from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.sim.view import ClusterView

__all__ = ["QSSF"]


class QSSF(ListScheduler):
    """Shortest predicted *service* first: the key is the predicted GPU-time
    ``gpus * predicted_work / best_rate``; a started job runs to completion, and later jobs
    backfill GPUs an earlier one cannot use.

    Helios [1]_ proposed QSSF with the service predicted from a job's history (user, name,
    GPU count); here the prediction is whatever predictor the simulation uses (``--predictor
    rf`` learns from completed jobs' features). Unlike :class:`~asrpt_opt.policies.sjf.SJF`,
    which orders by predicted time, a wide job ranks behind a narrow one of the same length.

    Parameters
    ----------
    backfill : bool

    References
    ----------
    .. [1] Q. Hu, P. Sun, S. Yan, Y. Wen, T. Zhang, "Characterization and prediction of deep
       learning workloads in large-scale GPU datacenters", SC 2021.
    """

    name = "qssf"
    preemptive = False
    _core = "qssf"

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Predicted GPU-seconds."""
        seconds = view.predicted_work[job] / view.best_rate[job]
        return float(seconds * view.job_gpus[job])
