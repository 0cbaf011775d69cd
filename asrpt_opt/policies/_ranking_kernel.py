"""The ranking the multiserver-job kernels that rank by remaining time or area keep
between decisions (:mod:`asrpt_opt.policies._selection_kernel`), as the Python rule does
(:meth:`asrpt_opt.policies.serverfilling._MultiserverPolicy.select`).

A waiting job's key is fixed, so the waiting jobs stay sorted (``wkey``/``wjob``, merged
with the jobs that arrived or were preempted, ``pend``); the running ones are re-keyed at
each decision and re-sorted from their previous order (``rkey``/``rjob``); the fit rule
reads the merged ranking in growing parts, each a true prefix of the whole, until it has
decided. Keys tie to the lower job index, as a stable sort of the jobs in index order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit
from asrpt_opt.sim.compiled.state import attained
from asrpt_opt.sim.view import RUNNING, WAITING

__all__ = ["decided", "merge", "rank_running", "sync_waiting"]


@njit(cache=True)
def _key(s: Any, j: int, now: float, area: bool) -> float:
    # _MultiserverPolicy._keys for one job: predicted remaining time, or ``area``.
    left = (s.predicted[j] - attained(s, j, now)) / s.best_rate[j]
    return left * s.gpus[j] if area else left


@njit(cache=True)
def _before(ka: float, a: int, kb: float, b: int) -> bool:
    # The ranking's order: by key, ties to the lower index.
    return ka < kb or (ka == kb and a < b)


@njit(cache=True)
def sync_waiting(p: Any, s: Any, now: float, area: bool) -> None:
    """Drop the waiting jobs that started, and merge in those that arrived or were
    preempted: a waiting job's key is fixed, so the waiting jobs stay sorted."""
    kept = 0
    for i in range(p.n_w):
        if s.status[p.wjob[i]] == WAITING:
            p.wjob[kept] = p.wjob[i]
            p.wkey[kept] = p.wkey[i]
            kept += 1
    k = p.n_pend
    jobs = np.sort(p.pend[:k])
    keys = np.empty(k)
    for i in range(k):
        keys[i] = _key(s, jobs[i], now, area)
    by = np.argsort(keys, kind="mergesort")  # stable: ties stay in index order
    i, m, dest = k - 1, kept - 1, kept + k - 1  # merge from the back, in place
    while i >= 0:
        j, key = jobs[by[i]], keys[by[i]]
        if m >= 0 and _before(key, j, p.wkey[m], p.wjob[m]):
            p.wjob[dest] = p.wjob[m]
            p.wkey[dest] = p.wkey[m]
            m -= 1
        else:
            p.wjob[dest] = j
            p.wkey[dest] = key
            i -= 1
        dest -= 1
    p.n_w = kept + k
    p.n_pend = 0


@njit(cache=True)
def rank_running(p: Any, s: Any, now: float, area: bool) -> None:
    """The running jobs by (key, index), starting from the previous decision's order: their
    keys fall while they run and rarely cross, so insertion sort does little."""
    m = 0
    for i in range(p.n_r):
        j = p.rjob[i]
        if s.status[j] == RUNNING:
            p.rjob[m] = j
            m += 1
        else:
            p.inr[j] = False
    for r in range(s.n_run):
        j = s.run_list[r]
        if not p.inr[j]:
            p.inr[j] = True
            p.rjob[m] = j
            m += 1
    p.n_r = m
    for i in range(m):
        j, key = p.rjob[i], _key(s, p.rjob[i], now, area)
        k = i
        while k > 0 and _before(key, j, p.rkey[k - 1], p.rjob[k - 1]):
            p.rkey[k] = p.rkey[k - 1]
            p.rjob[k] = p.rjob[k - 1]
            k -= 1
        p.rkey[k] = key
        p.rjob[k] = j


@njit(cache=True)
def merge(p: Any, upto: int) -> Any:
    # The start of the ranking: the running jobs and the ``upto`` most urgent waiting ones
    # in rank order, up to the last of those (past it, unread waiting jobs may come first).
    a, b, k = 0, 0, 0
    out = p.merged
    while a < p.n_r or b < upto:
        if b == upto and upto < p.n_w:
            break
        if b == upto or (a < p.n_r and _before(p.rkey[a], p.rjob[a], p.wkey[b], p.wjob[b])):
            out[k] = p.rjob[a]
            a += 1
        else:
            out[k] = p.wjob[b]
            b += 1
        k += 1
    return out[:k]


@njit(cache=True)
def decided(s: Any, ranked: Any, chosen: Any, greedy: bool) -> bool:
    # Whether the fit rule's choice from the first part of the ranking is its choice from
    # the whole: the GPUs are full (ServerFilling's prefix then lies in the part, as the
    # chosen jobs cover the GPUs), or greedy stopped at a job that did not fit.
    used = 0
    for j in chosen:
        used += s.gpus[j]
    return used >= s.total_gpus or (greedy and chosen.shape[0] < ranked.shape[0])
