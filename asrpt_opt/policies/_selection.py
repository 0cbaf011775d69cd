"""Serving a chosen set of jobs: the decision that preempts the others and starts the rest.

Policies that pick, at each decision, the whole set of jobs that should hold GPUs
(the multiserver-job policies of :mod:`asrpt_opt.policies.serverfilling`, PRR) share this
step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation
from asrpt_opt.sim.view import WAITING, ClusterView, Start

__all__ = [
    "ArrivalQueue",
    "RankedWaiting",
    "by_key_then",
    "fit_in_order",
    "selection_state",
    "serve",
]


def serve(
    chosen: Sequence[int],
    view: ClusterView,
    *,
    preempt_others: bool = True,
    place: Callable[[int, NDArray[np.int64]], Allocation | None] | None = None,
) -> tuple[tuple[Start, ...], tuple[int, ...]]:
    """Preempt the running jobs not in ``chosen``, then start its waiting jobs in order.

    GPUs freed by the preemptions count as free; a chosen job the simulation's placement
    cannot place now waits.

    Parameters
    ----------
    chosen : sequence of int
        The jobs to serve, in the order they are started.
    view : ClusterView
    preempt_others : bool
        False when every running job is chosen too (``chosen`` may then list only waiting
        jobs): nothing is preempted.
    place : callable, optional
        ``place(job, free)``: GPUs for a job among ``free``, or None; the simulation's
        placement method (``view.place``) by default.

    Returns
    -------
    (tuple of Start, tuple of int)
        The starts and the preemptions.
    """
    # Membership as arrays: a decision touches each running job in C, and in Python only
    # the jobs it preempts or starts.
    chosen_arr = np.asarray(chosen, dtype=np.int64)
    running = view.running_jobs()
    free = view.free_gpus.copy()
    preempts = running[~np.isin(running, chosen_arr)].tolist() if preempt_others else []
    for j in preempts:
        held = view.allocation(j)
        assert held is not None
        for s, c in held:
            free[s] += c
    starts = []
    for j in chosen_arr[~np.isin(chosen_arr, running)].tolist():
        if view.status(j) != WAITING:
            continue
        allocation = view.place(j, free) if place is None else place(j, free)
        if allocation is None:
            continue
        for s, c in allocation:
            free[s] -= c
        starts.append(Start(j, allocation))
    return tuple(starts), tuple(preempts)


def by_key_then(keys: NDArray[np.float64], ties: NDArray[np.int64]) -> NDArray[np.intp]:
    """The order of ``np.lexsort((ties, keys))``: by key, equal keys by ``ties``.

    Two plain sorts instead of a lexicographic one, several times faster on the thousands
    of jobs a decision ranks: by key, then by (group of equal keys, tie-break) packed in
    one integer.

    Parameters
    ----------
    keys : ndarray of float
    ties : ndarray of int
        Non-negative, distinct among equal keys.

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> by_key_then(np.array([2.0, 1.0, 2.0, 1.0]), np.array([5, 9, 3, 4])).tolist()
    [3, 1, 2, 0]
    """
    first = np.argsort(keys)
    ordered = keys[first]
    change = ordered[1:] != ordered[:-1]
    if change.all():
        return first
    group = np.concatenate([[0], np.cumsum(change)])
    packed = group * (int(ties.max()) + 1) + ties[first]
    return first[np.argsort(packed)]


def fit_in_order(
    gpus: NDArray[np.int64], total: int, *, greedy: bool
) -> tuple[NDArray[np.bool_], bool]:
    """First fit in order: which jobs of widths ``gpus`` fit in turn in ``total`` GPUs.

    Parameters
    ----------
    gpus : ndarray of int
        Widths, in the order the jobs are considered.
    total : int
        GPUs to fill.
    greedy : bool
        Stop at the first job that does not fit instead of skipping it.

    Returns
    -------
    (ndarray of bool, bool)
        The jobs taken, and whether the rule stopped by itself (the GPUs are full, or
        ``greedy`` met a job that does not fit) rather than at the end of ``gpus``.

    Examples
    --------
    >>> fit_in_order(np.array([2, 4, 1, 1]), 4, greedy=False)
    (array([ True, False,  True,  True]), True)
    >>> fit_in_order(np.array([2, 4, 1, 1]), 4, greedy=True)
    (array([ True, False, False, False]), True)
    """
    taken = np.zeros(gpus.size, bool)
    pos, left = 0, total
    while pos < gpus.size and left > 0:
        # A run of jobs that fit one after another, then skip to the next that fits.
        run = int(np.searchsorted(np.cumsum(gpus[pos:]), left, side="right"))
        taken[pos : pos + run] = True
        left -= int(gpus[pos : pos + run].sum())
        pos += run
        if pos == gpus.size or left == 0:
            break
        if greedy:
            return taken, True
        fits = np.flatnonzero(gpus[pos:] <= left)
        if fits.size == 0:
            return taken, False
        pos += int(fits[0])
    return taken, left == 0


class ArrivalQueue:
    """Jobs in arrival order, less those taken out: appended and discarded in O(1), read as
    one array (the discarded jobs ahead of the first member are skipped for good).
    """

    def __init__(self, n_jobs: int) -> None:
        self._order = np.empty(n_jobs, np.int64)
        self._member = np.zeros(n_jobs, bool)
        self._lo = self._n = 0

    def __contains__(self, job: int) -> bool:
        return bool(self._member[job])

    def append(self, job: int) -> None:
        """Add ``job`` last."""
        self._order[self._n] = job
        self._n += 1
        self._member[job] = True

    def discard(self, job: int) -> None:
        """Take ``job`` out."""
        self._member[job] = False

    def members(self) -> NDArray[np.int64]:
        """The jobs in the queue, in arrival order.

        Returns
        -------
        ndarray of int
        """
        window = self._order[self._lo : self._n]
        member = self._member[window]
        self._lo += int(np.argmax(member)) if member.any() else window.size
        return window[member]

    def mask(self, jobs: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which of ``jobs`` are in the queue.

        Parameters
        ----------
        jobs : ndarray of int

        Returns
        -------
        ndarray of bool
        """
        return self._member[jobs]


class RankedWaiting:
    """The waiting jobs of a policy whose rank key does not change while a job waits, kept
    sorted by (key, job).

    Jobs that start waiting (:meth:`add`) get their key at the next :meth:`sync`, from the
    simulation's own state at that instant; :meth:`remove` takes started jobs out. A
    decision then reads the most urgent waiting jobs as a slice instead of ranking them all.
    """

    def __init__(self) -> None:
        self.jobs: NDArray[np.int64] = np.empty(0, np.int64)
        self.keys: NDArray[np.float64] = np.empty(0, np.float64)
        self._pending: list[int] = []

    def __len__(self) -> int:
        return self.jobs.size + len(self._pending)

    def add(self, jobs: Iterable[int]) -> None:
        """Jobs that start waiting."""
        self._pending.extend(jobs)

    def remove(self, jobs: Sequence[int]) -> None:
        """Jobs that no longer wait (after a :meth:`sync`: none may be pending)."""
        assert not self._pending, "sync() before remove()"
        if len(jobs):
            keep = ~np.isin(self.jobs, np.asarray(jobs, dtype=np.int64))
            self.jobs, self.keys = self.jobs[keep], self.keys[keep]

    def sync(self, key_of: Callable[[NDArray[np.int64]], NDArray[np.float64]]) -> None:
        """Key the pending jobs with ``key_of(jobs)`` and merge them in."""
        if not self._pending:
            return
        new = np.array(self._pending, dtype=np.int64)
        self._pending = []
        keys = np.asarray(key_of(new), dtype=np.float64)
        order = np.lexsort((new, keys))
        new, keys = new[order], keys[order]
        at = np.searchsorted(self.keys, keys, side="left")
        end = np.searchsorted(self.keys, keys, side="right")
        for k in np.flatnonzero(at < end).tolist():  # equal keys: by job index among them
            at[k] += np.searchsorted(self.jobs[at[k] : end[k]], new[k])
        self.jobs = np.insert(self.jobs, at, new)
        self.keys = np.insert(self.keys, at, keys)


def selection_state(
    rule: str, trust: float, quantum_s: float, state: Any, *, order: str = "time"
) -> Any:
    """The compiled state (:mod:`asrpt_opt.policies._selection_kernel`) of a selection rule.

    Parameters
    ----------
    rule : str
        A name of :data:`~asrpt_opt.policies._selection_kernel.RULES`.
    trust, quantum_s : float
        PRR's knobs (``quantum_s`` NaN: half the mean predicted length).
    state : SimState
        The compiled simulator's state.
    order : {"area", "time", "arrival"}
        The multiserver-job policies' ranking (:data:`~asrpt_opt.policies.serverfilling.ORDERS`).

    Returns
    -------
    SelectionState
    """
    from asrpt_opt.policies import _selection_kernel as kernel
    from asrpt_opt.policies.serverfilling import ORDERS

    return kernel.new_state(state, kernel.RULES.index(rule), ORDERS.index(order), trust, quantum_s)
