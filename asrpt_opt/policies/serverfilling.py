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
from asrpt_opt.policies._selection import (
    ArrivalQueue,
    RankedWaiting,
    by_key_then,
    fit_in_order,
    selection_state,
    serve,
)
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
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

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name: str
    preemptive = True
    _fit: ClassVar[str]
    #: It decides from the jobs in the system alone, so it remembers nothing once the
    #: cluster empties: :func:`~asrpt_opt.sim.stream.simulate_stream` may cut runs there.
    regenerative = True

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
        self._waiting = RankedWaiting()
        self._active_gpus = 0

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """The job joins the released, unfinished jobs."""
        self._active.add(job)
        self._waiting.add((job,))
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
        return [int(j) for j in jobs[np.lexsort((jobs, self._keys(jobs, view)))]]

    def _keys(
        self,
        jobs: NDArray[np.int64],
        view: ClusterView,
        attained: NDArray[np.float64] | None = None,
    ) -> NDArray[np.float64]:
        # The rank keys of ``jobs`` (``attained``: their attained work, when known).
        if self.order == "arrival":
            return view.job_release_s[jobs]
        done = view.attained_work_of(jobs) if attained is None else attained
        left = (view.predicted_work[jobs] - done) / view.best_rate[jobs]
        return left * view.job_gpus[jobs] if self.order == "area" else left

    def select(self, view: ClusterView) -> list[int]:
        """The jobs served now, in the order they are started.

        Parameters
        ----------
        view : ClusterView

        Returns
        -------
        list of int
        """
        # A waiting job's key is fixed, so the waiting jobs stay sorted and only the running
        # ones are re-keyed. The rule reads the ranking of the running jobs and the ``m``
        # most urgent waiting ones, which is exact up to the last of those; ``m`` doubles
        # until the rule has decided within that part.
        self._waiting.sync(lambda jobs: self._keys(jobs, view))
        running = view.running_jobs()
        keys = self._keys(running, view, view.running_attained_work())
        queue = self._waiting
        m = min(len(queue), max(32, 2 * view.total_free))
        while True:
            jobs = np.concatenate([running, queue.jobs[:m]])
            order = by_key_then(np.concatenate([keys, queue.keys[:m]]), jobs)
            known = order.size if m == len(queue) else int(np.argmax(order == order.size - 1)) + 1
            chosen = self._fit_ranked(jobs[order], view, known, complete=m == len(queue))
            if chosen is not None:
                return chosen
            m = min(len(queue), 2 * m)

    def _fit_ranked(
        self, ranked: NDArray[np.int64], view: ClusterView, known: int, *, complete: bool
    ) -> list[int] | None:
        # The chosen jobs, if the fit rule decides within ``ranked[:known]``.
        gpus = view.job_gpus[ranked[:known]]
        total = view.total_gpus
        if self._fit == "serverfilling":
            picked = fill_ranked(gpus, total, complete=complete)
        else:
            taken, stopped = fit_in_order(gpus, total, greedy=self._fit == "greedy")
            picked = np.flatnonzero(taken) if stopped or complete else None
        return None if picked is None else ranked[picked].tolist()

    def decide(self, view: ClusterView) -> Decision:
        """Preempt the running jobs not selected, then start the selected waiting ones."""
        if not self._active:
            return NO_DECISION
        # Key the jobs that started waiting now, whichever way select() goes, so that the
        # starts below are taken out of one sorted array.
        self._waiting.sync(lambda jobs: self._keys(jobs, view))
        if self._active_gpus <= view.total_gpus:
            # Every released job fits: start the waiting ones (widest first under
            # ServerFilling, as select() would order them).
            order = self._waiting.jobs.tolist()
            if self._fit == "serverfilling":
                gpus = view.job_gpus
                order = sorted(order, key=lambda j: -int(gpus[j]))  # stable: rank among equals
            starts, preempts = serve(order, view, preempt_others=False)
        else:
            starts, preempts = serve(self.select(view), view)
        self._waiting.remove([st.job for st in starts])
        self._waiting.add(preempts)
        if not starts and not preempts:
            return NO_DECISION
        return Decision(starts=starts, preempts=preempts)


def fill_ranked(
    gpus: NDArray[np.int64], total: int, *, cap: int | None = None, complete: bool = True
) -> NDArray[np.int64] | None:
    """ServerFilling on a ranking given by its widths: :func:`server_filling`'s rule, as
    positions in the ranking, in the order the jobs start.

    Parameters
    ----------
    gpus : ndarray of int
        Widths of the ranked jobs known so far.
    total : int
    cap : int, optional
        As ``server_gpus`` of :func:`server_filling`.
    complete : bool
        Whether ``gpus`` is the whole ranking; if not, None is returned when the rule would
        need to look past it.

    Returns
    -------
    ndarray of int or None
    """
    covered = np.cumsum(gpus)
    prefix = int(np.searchsorted(covered, total, side="left")) + 1
    if prefix > gpus.size and not complete:
        return None
    width = np.minimum(gpus[:prefix], total if cap is None else cap)
    head = np.argsort(-width, kind="stable")  # widest first, in rank order among equals
    taken, _ = fit_in_order(gpus[head], total, greedy=False)
    picked = head[taken]
    left = total - int(gpus[picked].sum())
    if left == 0:
        return picked
    unpicked = np.ones(gpus.size, bool)
    unpicked[picked] = False
    rest = np.flatnonzero(unpicked)
    more, stopped = fit_in_order(gpus[rest], left, greedy=False)
    if not (stopped or complete):
        return None
    return np.concatenate([picked, rest[more]])


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
    picked = fill_ranked(np.asarray(gpus, dtype=np.int64), total, cap=server_gpus)
    assert picked is not None
    return [ranked[k] for k in picked.tolist()]


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
        self._released = ArrivalQueue(view.job_gpus.shape[0])
        self._count: dict[int, int] = {}  # released jobs by width
        self._shadow = np.empty(0, np.int64)  # the persistent list, then the newcomers
        self._new: list[int] = []

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """The job joins the released jobs and the end of the persistent list."""
        super().on_arrival(job, view)
        width = int(view.job_gpus[job])
        self._count[width] = self._count.get(width, 0) + 1
        self._released.append(job)
        self._new.append(job)

    def on_completion(self, job: int, view: ClusterView) -> None:
        """The job leaves."""
        if job in self._released:
            self._released.discard(job)
            self._count[int(view.job_gpus[job])] -= 1
        super().on_completion(job, view)

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
        weight = {w: c * total // w for w, c in self._count.items() if c}
        best = max(weight, key=lambda w: (weight[w], w))
        if best * self._count[best] >= total:
            released = self._released.members()
            return released[gpus[released] == best][: total // best].tolist()
        shadow = np.concatenate([self._shadow, np.array(self._new, np.int64)])
        self._new = []
        shadow = shadow[self._released.mask(shadow)]
        lookup = np.zeros(int(gpus.max()) + 1, np.int64)
        lookup[list(weight)] = list(weight.values())
        self._shadow = shadow[np.argsort(-lookup[gpus[shadow]], kind="stable")]
        taken, _ = fit_in_order(gpus[self._shadow], total, greedy=False)
        return self._shadow[taken].tolist()


_BUILT_IN = (ServerFillingSRPT, ServerFilling, FirstFitSRPT, GreedySRPT, MaxWeight)
