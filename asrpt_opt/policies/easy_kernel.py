"""The compiled form of :class:`~asrpt_opt.policies.easy.EasyBackfill`, for
:mod:`asrpt_opt.sim.compiled.loop`.

The waiting jobs form a doubly linked list in arrival order (sentinel ``n``), so a start
unlinks its job at once and a decision walks only waiting jobs. The same steps, ties and
floating-point operations as the Python class.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import attained, consolidate, record_start

__all__ = ["EasyState", "new_state"]


@structref.register
class EasyStateType(StateType):
    """The numba type of :class:`EasyState`."""


class EasyState(structref.StructRefProxy):
    """The FCFS queue and the scratch of a reservation (:func:`new_state`)."""


structref.define_proxy(EasyState, EasyStateType, ["nxt", "prv", "n_waiting", "end", "who"])


@njit(cache=True)
def new_state(s: Any) -> Any:
    """An empty queue for the jobs of ``s``."""
    n = s.n
    nxt = np.full(n + 1, n, np.int64)
    prv = np.full(n + 1, n, np.int64)
    most = min(n, s.total_gpus)
    return EasyState(nxt, prv, 0, np.empty(2 * most + 1), np.empty(2 * most + 1, np.int64))


@implement(loop.arrive, EasyStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    n = sim.n
    last = policy.prv[n]
    policy.nxt[last] = job
    policy.prv[job] = last
    policy.nxt[job] = n
    policy.prv[n] = job
    policy.n_waiting += 1


@implement(loop.finish, EasyStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    pass


@implement(loop.advance, EasyStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    pass


@implement(loop.decide, EasyStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    if policy.n_waiting > 0 and sim.total_free > 0:
        _easy(policy, sim, now)
    return np.nan


@njit(cache=True)
def _easy(p: Any, s: Any, now: float) -> None:
    # EasyBackfill.decide: starts in arrival order, then backfill past the reserved head.
    n = s.n
    total = s.total_free
    s.d_free[:] = s.free
    shadow, extra = np.nan, 0
    job = p.nxt[n]
    while job != n and total > 0:
        after = p.nxt[job]
        width = s.gpus[job]
        if (
            not np.isnan(shadow)
            and width > extra
            and now + s.predicted[job] / s.best_rate[job] > shadow
        ):
            job = after  # _candidates: it cannot end by the shadow time at any rate
            continue
        used = consolidate(s.d_free, width, s.out_s, s.out_c) if width <= total else 0
        if used == 0:
            if np.isnan(shadow):
                shadow, extra = _reserve(p, s, now, width, total)
            job = after
            continue
        rate = 1.0 if used == 1 else 1.0 / s.slowdown[job]
        end = now + s.predicted[job] / rate
        if not np.isnan(shadow) and end > shadow:
            if width > extra:
                job = after
                continue
            extra -= width
        record_start(s, s.n_starts, used)
        p.end[s.n_starts] = end
        s.starts[s.n_starts] = job
        s.n_starts += 1
        total -= width
        p.nxt[p.prv[job]] = after
        p.prv[after] = p.prv[job]
        p.n_waiting -= 1
        job = after


@njit(cache=True)
def _reserve(p: Any, s: Any, now: float, width: int, total: int) -> tuple[float, int]:
    # _reserve of the Python class: this decision's starts (their ends already in p.end),
    # then the running jobs, by predicted end and job index.
    if total >= width:
        return now, total - width
    k = s.n_starts
    for a in range(k):
        p.who[a] = s.starts[a]
    for r in range(s.n_run):
        j = s.run_list[r]
        left = max(s.predicted[j] - attained(s, j, now), 0.0)
        p.end[k] = now + left / s.rate[j]
        p.who[k] = j
        k += 1
    # Each job frees at least one GPU, so the first ``need`` ends decide: sort only the jobs
    # ending no later than the need-th end (all of them, ties included, come first).
    need = min(width - total, k)
    last = np.partition(p.end[:k], need - 1)[need - 1]
    near = np.flatnonzero(p.end[:k] <= last)
    by_job = near[np.argsort(p.who[near], kind="mergesort")]
    order = by_job[np.argsort(p.end[by_job], kind="mergesort")]
    avail = total
    for i in order:
        avail += s.gpus[p.who[i]]
        if avail >= width:
            return p.end[i], avail - width
    return np.inf, 0
