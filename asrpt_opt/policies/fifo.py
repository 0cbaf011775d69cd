"""First-in first-out with backfill."""

from __future__ import annotations

from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.sim.view import ClusterView

__all__ = ["FIFO"]


class FIFO(ListScheduler):
    """First come, first served, non-preemptive, with greedy backfill.

    Jobs are considered in arrival order (release time, then instance order); with
    ``backfill=True`` a later job starts whenever an earlier one does not fit (the YARN-CS /
    Philly default the Tiresias paper compares against [1]_); with ``backfill=False`` the queue
    blocks at its head.

    Parameters
    ----------
    backfill : bool

    References
    ----------
    .. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
       NSDI 2019.
    """

    name = "fifo"
    _core = "fifo"
    preemptive = False

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Release time (ties go to the lower index)."""
        return float(view.job_release_s[job])
