"""Shortest job first, non-preemptive, on predicted length."""

from __future__ import annotations

from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.sim.view import ClusterView

__all__ = ["SJF"]


class SJF(ListScheduler):
    """Shortest (predicted) job first, non-preemptive, with backfill.

    The key is the predicted length on the job's best placement,
    ``predicted_work / best_rate``; a started job runs to completion.

    Parameters
    ----------
    backfill : bool

    References
    ----------
    .. [1] W. E. Smith, "Various optimizers for single-stage production", Naval Research
       Logistics Quarterly 3:59-66, 1956.
    """

    name = "sjf"
    _core = "sjf"
    preemptive = False

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Predicted length in seconds."""
        return float(view.predicted_work[job] / view.best_rate[job])
