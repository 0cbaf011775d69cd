"""Multiserver-job (MSJ) policies: ServerFilling, ServerFilling-SRPT, FirstFit-SRPT and
Greedy-SRPT (Grosof, Scully, Harchol-Balter, Scheller-Wolf), for gang jobs on a cluster.

Each is preemptive and, at every arrival and completion, ranks the released jobs and chooses
the set to serve; the running jobs not chosen are preempted and the chosen waiting ones start
where the simulation's placement method puts them (a job it cannot place waits):

- **order**: ``area`` (the predicted remaining GPU-time, remaining time x GPUs: the MSJ
  literature's SRPT), ``time`` (the predicted remaining time) or ``arrival`` (release time);
  ties go to the lower job index.
- **fit**: ``serverfilling`` takes the shortest prefix of the ranking whose widths add up to
  at least the cluster's GPUs (all jobs if they do not) and serves it widest first while it
  fits; ``firstfit`` serves the ranking in order, skipping jobs that do not fit; ``greedy``
  serves it in order up to the first job that does not fit.

With widths that are powers of two dividing the number of GPUs, ServerFilling keeps every GPU
busy while enough work waits, which makes ServerFilling-SRPT optimal in heavy traffic [1]_.
For other widths GPUs can stay idle; ServerFilling then starts the other released jobs in
rank order where they fit (our extension, a no-op under the paper's assumptions).

References
----------
.. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in the
   multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
   (SIGMETRICS) 6(3), 2022.
"""

from __future__ import annotations

import math
from functools import partial
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.policies._selection import selection_state, serve
from asrpt_opt.sim.compiled import Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision

__all__ = [
    "FITS",
    "ORDERS",
    "FirstFitSRPT",
    "GreedySRPT",
    "MaxWeight",
    "ServerFilling",
    "ServerFillingSRPT",
    "server_filling",
]

#: How a multiserver-job policy ranks the released jobs.
ORDERS = ("area", "time", "arrival")
#: How it chooses the jobs to serve from the ranking.
FITS = ("serverfilling", "firstfit", "greedy")


class _MultiserverPolicy:
    """A ranking and a fit rule (see the module docstring); subclasses name both."""

    name: str
    preemptive = True
    _fit: ClassVar[str]

    def __init__(self, *, order: str) -> None:
        if order not in ORDERS:
            raise UsageError(f"order must be one of {ORDERS}, got {order!r}")
        self.order = order

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies._selection_kernel`); None
        for a subclass, which may change any step.

        Returns
        -------
        Kernel or None
        """
        if type(self) not in _BUILT_IN:
            return None
        build = partial(selection_state, self.name, math.nan, math.nan, order=self.order)
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

    def rank(self, jobs: NDArray[np.int64], view: ClusterView) -> list[int]:
        """``jobs`` in this policy's order (ties to the lower index).

        Parameters
        ----------
        jobs : ndarray of int
        view : ClusterView

        Returns
        -------
        list of int
        """
        if self.order == "arrival":
            return [int(j) for j in jobs[np.lexsort((jobs, view.job_release_s[jobs]))]]
        left = (view.predicted_work[jobs] - view.attained_work_of(jobs)) / view.best_rate[jobs]
        if self.order == "area":
            left = left * view.job_gpus[jobs]
        return [int(j) for j in jobs[np.lexsort((jobs, left))]]

    def select(self, view: ClusterView) -> list[int]:
        """The jobs served now, in the order they are started.

        Parameters
        ----------
        view : ClusterView

        Returns
        -------
        list of int
        """
        ranked = self.rank(np.fromiter(self._active, np.int64, len(self._active)), view)
        gpus = view.job_gpus[ranked].tolist()
        if self._fit == "serverfilling":
            return server_filling(ranked, gpus, view.total_gpus)
        return _first_fit(ranked, gpus, view.total_gpus, greedy=self._fit == "greedy")

    def decide(self, view: ClusterView) -> Decision:
        """Preempt the running jobs not selected, then start the selected waiting ones."""
        if not self._active:
            return NO_DECISION
        if self._active_gpus <= view.total_gpus:
            # Every released job fits: start the waiting ones (widest first under
            # ServerFilling, as select() would order them).
            order = self.rank(np.fromiter(self._waiting, np.int64, len(self._waiting)), view)
            if self._fit == "serverfilling":
                gpus = view.job_gpus
                order = sorted(order, key=lambda j: -int(gpus[j]))  # stable: rank among equals
            starts, preempts = serve(order, view, preempt_others=False)
        else:
            starts, preempts = serve(self.select(view), view)
        self._waiting.difference_update(st.job for st in starts)
        self._waiting.update(preempts)
        if not starts and not preempts:
            return NO_DECISION
        return Decision(starts=starts, preempts=preempts)


def _first_fit(ranked: list[int], gpus: list[int], total: int, *, greedy: bool) -> list[int]:
    # The ranked jobs that fit in turn in ``total`` GPUs; ``greedy`` stops at the first that
    # does not.
    chosen, used = [], 0
    for j, g in zip(ranked, gpus, strict=True):
        if used + g <= total:
            chosen.append(j)
            used += g
        elif greedy:
            break
    return chosen


def server_filling(
    ranked: list[int], gpus: list[int], total: int, *, server_gpus: int | None = None
) -> list[int]:
    """ServerFilling's choice from a ranking: the shortest prefix covering ``total`` GPUs,
    widest first while it fits; then (beyond the paper) the rest of the ranking where it
    fits.

    Parameters
    ----------
    ranked : list of int
        Jobs, most urgent first.
    gpus : list of int
        Their widths.
    total : int
        The cluster's GPUs.
    server_gpus : int, optional
        Order the prefix by width up to this many GPUs only: jobs at least this wide keep
        their rank order among themselves (A-SRPT's fill guide passes the largest server;
        docs/asrpt.md). Default: by width (the paper's rule).

    Returns
    -------
    list of int
        The jobs to serve, in the order they start.

    Examples
    --------
    >>> server_filling([0, 1, 2, 3], [1, 4, 1, 2], 4)  # prefix {0, 1}: 1 alone fills it
    [1]
    >>> server_filling([0, 1, 2], [2, 1, 1], 4)
    [0, 1, 2]
    >>> server_filling([0, 1, 2], [4, 8, 4], 16, server_gpus=4)  # 8 counts as 4: rank order
    [0, 1, 2]
    """
    cap = total if server_gpus is None else server_gpus
    prefix: list[int] = []
    covered = 0
    for k in range(len(ranked)):
        if covered >= total:
            break
        prefix.append(k)
        covered += gpus[k]
    chosen: list[int] = []
    used = 0
    for k in sorted(prefix, key=lambda k: (-min(gpus[k], cap), k)):
        if used + gpus[k] <= total:
            chosen.append(ranked[k])
            used += gpus[k]
    picked = set(chosen)
    for k, j in enumerate(ranked):
        if used >= total:
            break
        if j not in picked and used + gpus[k] <= total:
            chosen.append(j)
            picked.add(j)
            used += gpus[k]
    return chosen


class ServerFillingSRPT(_MultiserverPolicy):
    """ServerFilling-SRPT: ServerFilling on the jobs ranked by predicted remaining area
    (``order="area"``, as the MSJ literature ranks them) or time (``order="time"``).

    Parameters
    ----------
    order : {"area", "time"}

    References
    ----------
    .. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.
    """

    name = "serverfilling-srpt"
    _fit = "serverfilling"

    def __init__(self, *, order: str = "area") -> None:
        if order == "arrival":
            raise UsageError("serverfilling-srpt ranks by 'area' or 'time'; see serverfilling")
        super().__init__(order=order)


class ServerFilling(_MultiserverPolicy):
    """ServerFilling in arrival order (Grosof et al.): the shortest prefix of the released
    jobs, oldest first, that covers the GPUs, served widest first.

    References
    ----------
    .. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.
    """

    name = "serverfilling"
    _fit = "serverfilling"

    def __init__(self) -> None:
        super().__init__(order="arrival")


class FirstFitSRPT(_MultiserverPolicy):
    """FirstFit-SRPT: the released jobs by predicted remaining area, each served when it
    fits in what the earlier ones left (preemptive).

    References
    ----------
    .. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.
    """

    name = "firstfit-srpt"
    _fit = "firstfit"

    def __init__(self) -> None:
        super().__init__(order="area")


class GreedySRPT(_MultiserverPolicy):
    """Greedy-SRPT: the released jobs by predicted remaining area, served in that order up to
    the first one that does not fit (no skipping; preemptive).

    References
    ----------
    .. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.
    """

    name = "greedy-srpt"
    _fit = "greedy"

    def __init__(self) -> None:
        super().__init__(order="area")


class MaxWeight(_MultiserverPolicy):
    """MaxWeight for multiserver jobs [1]_, as the reference simulator runs it [2]_.

    At every arrival and completion, with ``n_w`` released jobs of width ``w`` and ``N``
    GPUs, class ``w`` has weight ``n_w * N // w`` (its jobs times how many fit). If the
    heaviest class alone fills the cluster (``w * n_w >= N``), its ``N // w`` oldest jobs
    are served. Otherwise the released jobs, kept in one persistent list (arrivals
    appended), are stably re-sorted by decreasing class weight and served first-fit until
    the GPUs are full; jobs of equal weight keep the order of the previous such decision, as
    in the reference. The reference breaks ties between heaviest classes by hash order
    (in effect at random); we take the widest, which measured closest to its published
    values (docs/stability.md). Preemptive, size-blind; throughput-optimal [1]_.
    On several servers the chosen set is placed by the simulation's placement method and a
    job it cannot place waits.

    References
    ----------
    .. [1] S. T. Maguluri, R. Srikant, L. Ying, "Stochastic models of load balancing and
       scheduling in cloud computing clusters", IEEE INFOCOM 2012.
    .. [2] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022 (MaxWeight among the policies compared;
       ``isaacg1/msj-simulator``).
    """

    name = "maxweight"
    _fit = "maxweight"

    def __init__(self) -> None:
        super().__init__(order="arrival")

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Forget every job."""
        super().reset(view, rng)
        self._shadow: list[int] = []

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """The job joins the released jobs and the end of the persistent list."""
        super().on_arrival(job, view)
        self._shadow.append(job)

    def select(self, view: ClusterView) -> list[int]:
        """The jobs served now (see the class docstring).

        Parameters
        ----------
        view : ClusterView

        Returns
        -------
        list of int
        """
        total = view.total_gpus
        gpus = view.job_gpus
        ranked = self.rank(np.fromiter(self._active, np.int64, len(self._active)), view)
        widths, counts = np.unique(gpus[ranked], return_counts=True)
        weight = {int(w): int(c) * total // int(w) for w, c in zip(widths, counts, strict=True)}
        best = max(weight, key=lambda w: (weight[w], w))
        if best * int(counts[np.searchsorted(widths, best)]) >= total:
            return [j for j in ranked if gpus[j] == best][: total // best]
        self._shadow = [j for j in self._shadow if j in self._active]
        self._shadow.sort(key=lambda j: -weight[int(gpus[j])])
        return _first_fit(self._shadow, gpus[self._shadow].tolist(), total, greedy=False)


_BUILT_IN = (ServerFillingSRPT, ServerFilling, FirstFitSRPT, GreedySRPT, MaxWeight)
