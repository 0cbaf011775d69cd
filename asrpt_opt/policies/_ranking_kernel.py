"""The ranking the multiserver-job kernels that rank by remaining time or area, and PRR,
keep between decisions (:mod:`asrpt_opt.policies._selection_kernel`), as the Python rules do
(:meth:`asrpt_opt.policies.serverfilling._MultiserverPolicy.select`,
:meth:`asrpt_opt.policies.prr.PreferentialRoundRobin.decide`).

A waiting job's key is fixed, so the waiting jobs stay sorted (``wkey``/``wjob``, merged
with the jobs that arrived or were preempted, ``pend``; a job that starts leaves its entry
behind, skipped as stale until enough of them are dropped at once); the running ones are
re-keyed at each decision and re-sorted from their previous order (``rkey``/``rjob``); the fit rule
reads the merged ranking in growing parts, each a true prefix of the whole, until it has
decided. The key is the state's ``mode``: predicted remaining time or area (ties to the
lower job index, as a stable sort of the jobs in index order), or PRR's predicted remaining
or attained time (ties to the earlier arrival); ``tie[j]`` is that index or arrival number.
When PRR's quantum changes the key, both orders are rebuilt (``fresh``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit
from asrpt_opt.sim.compiled.state import attained
from asrpt_opt.sim.view import RUNNING, WAITING

__all__ = ["AREA", "ATTAINED", "PREDICTED", "TIME", "decided", "merge", "pending",
           "rank_running", "sync_waiting"]  # fmt: skip

#: The keys (a state's ``mode``): _MultiserverPolicy's predicted remaining time or area,
#: PRR's predicted remaining time (never below 0) or attained time.
TIME, AREA, PREDICTED, ATTAINED = range(4)


@njit(cache=True)
def _key(p: Any, s: Any, j: int, now: float) -> float:
    # The key of job j under the state's mode, with the Python rules' operations.
    done = attained(s, j, now)
    if p.mode == ATTAINED:
        return done / s.best_rate[j]
    if p.mode == PREDICTED:
        return max(s.predicted[j] - done, 0.0) / s.best_rate[j]
    left = (s.predicted[j] - done) / s.best_rate[j]
    return left * s.gpus[j] if p.mode == AREA else left


@njit(cache=True)
def _before(ka: float, ta: int, kb: float, tb: int) -> bool:
    # The ranking's order: by key, ties to the lower tie number.
    return ka < kb or (ka == kb and ta < tb)


@njit(cache=True)
def pending(p: Any, job: int) -> None:
    """``job`` arrived or was preempted: it joins the waiting jobs at the next decision, and
    any entry it left among them is stale."""
    p.pend[p.n_pend] = job
    p.n_pend += 1
    p.gen[job] += 1


@njit(cache=True)
def _live(p: Any, s: Any, i: int) -> bool:
    # Whether waiting entry i is its job's current one: a job that started leaves its entry
    # behind (counted in ``n_stale``) until the entries are compacted.
    j = p.wjob[i]
    return s.status[j] == WAITING and p.wgen[i] == p.gen[j]


@njit(cache=True)
def sync_waiting(p: Any, s: Any, now: float, fresh: bool, compact: bool) -> None:
    """Merge in the waiting jobs that arrived or were preempted: a waiting job's key is
    fixed, so the waiting jobs stay sorted. The entries of the jobs that started are dropped
    when ``compact`` is asked, when they are half the entries or when the new ones would
    not fit, not at every decision, which would read every waiting job (``fresh``: the key
    changed, every waiting job is keyed again)."""
    kept = p.n_w
    size = p.wjob.shape[0]
    if fresh or compact or 2 * p.n_stale > p.n_w or p.n_w + p.n_pend > size:
        kept = 0
        for i in range(p.n_w):
            if _live(p, s, i):
                if fresh:
                    pending(p, p.wjob[i])
                else:
                    p.wjob[kept] = p.wjob[i]
                    p.wkey[kept] = p.wkey[i]
                    p.wgen[kept] = p.wgen[i]
                    kept += 1
        p.n_stale = 0
    k = p.n_pend
    pend = p.pend[:k]
    jobs = pend[np.argsort(p.tie[pend])]
    keys = np.empty(k)
    for i in range(k):
        keys[i] = _key(p, s, jobs[i], now)
    by = np.argsort(keys, kind="mergesort")  # stable: ties stay in tie order
    i, m, dest = k - 1, kept - 1, kept + k - 1  # merge from the back, in place
    while i >= 0:
        j, key = jobs[by[i]], keys[by[i]]
        if m >= 0 and _before(key, p.tie[j], p.wkey[m], p.tie[p.wjob[m]]):
            p.wjob[dest] = p.wjob[m]
            p.wkey[dest] = p.wkey[m]
            p.wgen[dest] = p.wgen[m]
            m -= 1
        else:
            p.wjob[dest] = j
            p.wkey[dest] = key
            p.wgen[dest] = p.gen[j]
            i -= 1
        dest -= 1
    p.n_w = kept + k
    p.n_pend = 0


@njit(cache=True)
def rank_running(p: Any, s: Any, now: float, fresh: bool) -> None:
    """The running jobs by (key, tie), starting from the previous decision's order: their
    keys move together while they run and rarely cross, so insertion sort does little
    (``fresh``: the key changed, they are sorted afresh)."""
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
    if fresh:
        _sort_running(p, s, now)
        return
    for i in range(m):
        j, key = p.rjob[i], _key(p, s, p.rjob[i], now)
        tie = p.tie[j]
        k = i
        while k > 0 and _before(key, tie, p.rkey[k - 1], p.tie[p.rjob[k - 1]]):
            p.rkey[k] = p.rkey[k - 1]
            p.rjob[k] = p.rjob[k - 1]
            k -= 1
        p.rkey[k] = key
        p.rjob[k] = j


@njit(cache=True)
def _sort_running(p: Any, s: Any, now: float) -> None:
    jobs = p.rjob[: p.n_r]
    jobs = jobs[np.argsort(p.tie[jobs])]
    keys = np.empty(jobs.shape[0])
    for i in range(jobs.shape[0]):
        keys[i] = _key(p, s, jobs[i], now)
    by = np.argsort(keys, kind="mergesort")
    p.rjob[: p.n_r] = jobs[by]
    p.rkey[: p.n_r] = keys[by]


@njit(cache=True)
def merge(p: Any, s: Any, upto: int) -> Any:
    # The start of the ranking: the running jobs and the live ones among the first ``upto``
    # waiting entries in rank order, up to the last of those (past it, unread waiting jobs
    # may come first).
    a, b, k = 0, 0, 0
    out = p.merged
    while True:
        while b < upto and not _live(p, s, b):
            b += 1
        if a == p.n_r and b == upto:
            break
        if b == upto and upto < p.n_w:
            break
        if b == upto or (
            a < p.n_r and _before(p.rkey[a], p.tie[p.rjob[a]], p.wkey[b], p.tie[p.wjob[b]])
        ):
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
