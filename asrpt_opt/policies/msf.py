"""Most servers first (MSF): the widest waiting job first, arrival order among equals."""

from __future__ import annotations

from functools import partial

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.policies.list_scheduler import ListScheduler, _list_state
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import ClusterView

__all__ = ["MostServersFirst"]


class MostServersFirst(ListScheduler):
    """Most servers first: jobs needing more GPUs go first, earlier arrivals first among
    jobs of one width (the list scheduler's tie rule: the lower job index), backfilling
    GPUs a wider job cannot use.

    Preemptive by default, as in the multiserver-job literature's comparisons [1]_: a waiting
    job preempts narrower running jobs when it does not fit (never one of its own width).
    With widths that are powers of two dividing every server's GPUs, serving the widest first
    leaves no GPU idle while enough jobs wait, the property MSF shares with ServerFilling;
    it ignores job sizes, so its response times are those of a throughput-optimal but
    size-blind policy.

    Parameters
    ----------
    preemptive : bool
        False: a started job runs to completion (the non-preemptive MSF of the literature).
    backfill : bool
    max_placement_slowdown : float, optional
        As :class:`~asrpt_opt.policies.list_scheduler.ListScheduler`.

    References
    ----------
    .. [1] I. Grosof, M. Harchol-Balter, A. Scheller-Wolf, "WCFS: a new framework for
       analyzing multiserver systems", Queueing Systems 102:143-174, 2022 (MSF among the
       multiserver-job policies compared).
    """

    name = "msf"
    #: ``engine="auto"`` compiles it from this many jobs, as the other preemptive policies.
    compiles_from = PREEMPTIVE_FROM
    _core = "msf"

    def __init__(
        self,
        *,
        preemptive: bool = True,
        backfill: bool = True,
        max_placement_slowdown: float | None = None,
    ) -> None:
        super().__init__(backfill=backfill, max_placement_slowdown=max_placement_slowdown)
        self.preemptive = bool(preemptive)

    def kernel(self) -> Kernel | None:
        """The list kernel's ``msf`` rule, or ``msf-nonpreemptive``.

        Returns
        -------
        Kernel or None
        """
        if not self._compiles():
            return None
        rule = "msf" if self.preemptive else "msf-nonpreemptive"
        return Kernel(name=rule, build=partial(_list_state, rule, bool(self.backfill), ()))

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Minus the job's GPUs."""
        return -float(view.job_gpus[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Minus the running jobs' GPUs."""
        out: NDArray[np.float64] = -view.job_gpus[jobs].astype(np.float64)
        return out
