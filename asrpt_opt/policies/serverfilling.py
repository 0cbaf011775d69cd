"""ServerFilling-SRPT (Grosof, Harchol-Balter, Scheller-Wolf), for gang jobs on a cluster."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from asrpt_opt.policies._selection import selection_state, serve
from asrpt_opt.sim.compiled import Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision

__all__ = ["ServerFillingSRPT"]


class ServerFillingSRPT:
    """ServerFilling-SRPT, preemptive, on predicted remaining time.

    At every arrival and completion: order the released jobs by predicted remaining time
    (SRPT; ties by index), take the shortest prefix whose widths add up to at least the
    cluster's GPUs (all jobs if they do not), and serve the jobs of that prefix widest first
    while they fit. With widths that are powers of two dividing the number of GPUs this fills
    every GPU, which makes the policy optimal in heavy traffic for multiserver jobs [1]_. For
    other widths GPUs can stay idle; we then start the other released jobs in SRPT order
    where they fit (our extension, a no-op under the paper's assumptions). Running jobs that
    stay selected keep their GPUs; jobs not selected are preempted. GPUs are chosen by the
    simulation's placement method; a job it cannot place waits.

    References
    ----------
    .. [1] I. Grosof, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in the
       multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022/2023.
    """

    name = "serverfilling-srpt"
    preemptive = True

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies._selection_kernel`); None
        for a subclass, which may change any step.

        Returns
        -------
        Kernel or None
        """
        if type(self) is not ServerFillingSRPT:
            return None
        build = partial(selection_state, self.name, math.nan, math.nan)
        return Kernel(name=self.name, build=build)

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Forget every job."""
        self._active: set[int] = set()
        self._waiting: set[int] = set()
        self._active_gpus = 0

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """The job joins the released, unfinished jobs."""
        self._active.add(job)
        self._waiting.add(job)
        self._active_gpus += int(view.job_gpus[job])

    def on_completion(self, job: int, view: ClusterView) -> None:
        """The job leaves."""
        if job in self._active:
            self._active.discard(job)
            self._active_gpus -= int(view.job_gpus[job])

    def _remaining_s(self, job: int, view: ClusterView) -> float:
        left = view.predicted_work[job] - view.attained_work(job)
        return float(left / view.best_rate[job])

    def select(self, view: ClusterView) -> list[int]:
        """The jobs ServerFilling serves now, in the order they are started.

        Parameters
        ----------
        view : ClusterView

        Returns
        -------
        list of int
        """
        width = view.job_gpus
        total = view.total_gpus
        # SRPT order of the released jobs (ties to the lower index), as arrays: the remaining
        # times are _remaining_s's, computed for all of them at once.
        active = np.fromiter(self._active, np.int64, len(self._active))
        left = (view.predicted_work[active] - view.attained_work_of(active)) / view.best_rate[
            active
        ]
        srpt = active[np.lexsort((active, left))].tolist()
        gpus = width[srpt].tolist()
        prefix: list[int] = []
        covered = 0
        for k in range(len(srpt)):
            if covered >= total:
                break
            prefix.append(k)
            covered += gpus[k]
        chosen: list[int] = []
        used = 0
        for k in sorted(prefix, key=lambda k: (-gpus[k], k)):
            if used + gpus[k] <= total:
                chosen.append(srpt[k])
                used += gpus[k]
        picked = set(chosen)
        # Beyond the paper: fill the GPUs a non-dividing width left idle.
        for k, j in enumerate(srpt):
            if used >= total:
                break
            if j not in picked and used + gpus[k] <= total:
                chosen.append(j)
                picked.add(j)
                used += gpus[k]
        return chosen

    def decide(self, view: ClusterView) -> Decision:
        """Preempt the running jobs not selected, then start the selected waiting ones."""
        if not self._active:
            return NO_DECISION
        if self._active_gpus <= view.total_gpus:
            # The prefix is every released job and all of them fit: start the waiting ones
            # widest first, SRPT order among equals (what select() would give them).
            gpus = view.job_gpus
            order = sorted(
                self._waiting,
                key=lambda j: (-int(gpus[j]), self._remaining_s(j, view), j),
            )
            starts, preempts = serve(order, view, preempt_others=False)
        else:
            starts, preempts = serve(self.select(view), view)
        self._waiting.difference_update(st.job for st in starts)
        self._waiting.update(preempts)
        if not starts and not preempts:
            return NO_DECISION
        return Decision(starts=starts, preempts=preempts)
