"""The active (released, unfinished) jobs of a compiled selection policy, in arrival order
(:mod:`asrpt_opt.policies._selection_kernel`, :mod:`asrpt_opt.policies.asrpt_kernel`).

A policy state keeps them in ``act[:n_slot]``, each job's slot in ``act_pos`` (-1 once it
has finished). A finished job leaves a hole rather than shifting the jobs behind it, which
a burst's thousands of active jobs would cost at every completion; the holes are closed when
the whole list is read (:func:`active`), or when a read of its front passes more holes than
jobs (:func:`covering_prefix`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit

__all__ = ["activate", "active", "active_by_index", "covering_prefix", "deactivate"]


@njit(cache=True)
def activate(p: Any, s: Any, job: int) -> None:
    """``job`` joins the active jobs of ``p`` (a state with ``act``, ``act_pos``, ``n_act``,
    ``n_slot`` and ``active_gpus``), at the end: they stay in arrival order."""
    p.act[p.n_slot] = job
    p.act_pos[job] = p.n_slot
    p.n_slot += 1
    p.n_act += 1
    p.active_gpus += s.gpus[job]


@njit(cache=True)
def deactivate(p: Any, s: Any, job: int) -> None:
    """``job`` leaves the active jobs. Its slot is left as a hole until :func:`active` reads
    them all or :func:`covering_prefix` passes too many: the rules that keep a ranking
    never do, and a burst's thousands of active jobs would be shifted at every completion."""
    p.act_pos[job] = -1
    p.n_act -= 1
    p.active_gpus -= s.gpus[job]


@njit(cache=True)
def active(p: Any) -> Any:
    """The active jobs of ``p`` in arrival order (the holes the finished ones left closed,
    so the rest keep their order: PRR's ties, and usually already index order)."""
    if p.n_slot != p.n_act:
        k = 0
        for i in range(p.n_slot):
            j = p.act[i]
            if p.act_pos[j] != -1:
                p.act[k] = j
                p.act_pos[j] = k
                k += 1
        p.n_slot = k
    return p.act[: p.n_act]


@njit(cache=True)
def active_by_index(p: Any) -> Any:
    """The active jobs of ``p`` in index order (usually already: arrival order)."""
    jobs = active(p)
    for i in range(1, p.n_act):
        if jobs[i] < jobs[i - 1]:
            return np.sort(jobs)
    return jobs


@njit(cache=True)
def covering_prefix(p: Any, s: Any) -> Any:
    # The shortest prefix of the active jobs in arrival order whose widths cover the GPUs
    # (all of them if none does), read past the holes the finished jobs left. The holes are
    # closed once a read passes more of them than jobs (plus 64), so each decision reads
    # O(prefix) slots and a closing is paid for by as many completions.
    out = np.empty(p.n_act, np.int64)
    k, covered, holes, i = 0, 0, 0, 0
    while i < p.n_slot and covered < s.total_gpus:
        j = p.act[i]
        if p.act_pos[j] == i:
            out[k] = j
            k += 1
            covered += s.gpus[j]
        else:
            holes += 1
        i += 1
    if holes > k + 64:
        active(p)
    return out[:k]
