"""Serving a chosen set of jobs: the decision that preempts the others and starts the rest.

Policies that pick, at each decision, the whole set of jobs that should hold GPUs
(the multiserver-job policies of :mod:`asrpt_opt.policies.serverfilling`, PRR) share this
step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation
from asrpt_opt.sim.view import WAITING, ClusterView, Start

__all__ = ["selection_state", "serve"]


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
    keep = set(chosen)
    free = view.free_gpus.copy()
    preempts = []
    for j in view.running_jobs().tolist() if preempt_others else ():
        if j not in keep:
            held = view.allocation(j)
            assert held is not None
            for s, c in held:
                free[s] += c
            preempts.append(j)
    starts = []
    for j in chosen:
        if view.status(j) != WAITING:
            continue
        allocation = view.place(j, free) if place is None else place(j, free)
        if allocation is None:
            continue
        for s, c in allocation:
            free[s] -= c
        starts.append(Start(j, allocation))
    return tuple(starts), tuple(preempts)


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
