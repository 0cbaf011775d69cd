"""The compiled form of the policies that choose a set of jobs to serve at each decision
(:mod:`asrpt_opt.policies._selection`): the multiserver-job policies
(:mod:`asrpt_opt.policies.serverfilling`: ServerFilling, ServerFilling-SRPT, FirstFit-SRPT,
Greedy-SRPT, MaxWeight) and Preferential Round-Robin
(:class:`~asrpt_opt.policies.prr.PreferentialRoundRobin`), for
:mod:`asrpt_opt.sim.compiled.loop`.

Both keep the released, unfinished ("active") jobs in arrival order, rank them at each
decision, choose a set that fits, and serve it: the running jobs not chosen are preempted,
the chosen waiting ones start where consolidation places them. The rules that rank by
remaining time or area keep that ranking between decisions instead of sorting every active
job (:mod:`asrpt_opt.policies._ranking_kernel`). The same steps, ties and floating-point
operations as the Python classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.policies import _ranking_kernel as rk
from asrpt_opt.policies._active_kernel import (
    activate,
    active,
    active_by_index,
    covering_prefix,
    deactivate,
)
from asrpt_opt.policies.serverfilling import ORDERS
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import attained, consolidate, record_start
from asrpt_opt.sim.view import RUNNING, WAITING

__all__ = [
    "RULES",
    "SelectionState",
    "activate",
    "active",
    "active_by_index",
    "deactivate",
    "fill_choice",
    "new_state",
    "serve",
    "server_filling",
    "widest_first",
]

#: The selection rules, by code.
RULES = ("serverfilling-srpt", "prr", "serverfilling", "firstfit-srpt", "greedy-srpt", "maxweight")
_SF, _PRR, _SF_ARRIVAL, _FIRSTFIT, _GREEDY, _MAXWEIGHT = range(len(RULES))
_AREA, _ARRIVAL = ORDERS.index("area"), ORDERS.index("arrival")


@structref.register
class SelectionStateType(StateType):
    """The numba type of :class:`SelectionState`."""


class SelectionState(structref.StructRefProxy):
    """The active jobs, PRR's quanta and MaxWeight's list (:func:`new_state`)."""


structref.define_proxy(
    SelectionState,
    SelectionStateType,
    [
        "rule", "order", "trust", "quantum_s", "act", "act_pos", "n_act", "n_slot",
        "active_gpus", "released", "length_sum", "quantum", "quantum_end", "mark",
        "shadow", "n_shadow", "widths", "width_of", "counts",
        "ranked", "wkey", "wjob", "n_w", "pend", "n_pend", "rkey", "rjob", "n_r", "inr",
        "merged", "tie", "mode", "wmode", "rmode", "gen", "wgen", "n_stale",
        "last_rank", "n_sorted",
    ],
)  # fmt: skip


@njit(cache=True)
def new_state(s: Any, rule: int, order: int, trust: float, quantum_s: float) -> Any:
    """No active job yet, for rule ``rule`` (a code of :data:`RULES`) ranking by ``order``
    (an index of :data:`~asrpt_opt.policies.serverfilling.ORDERS`); PRR's ``trust`` and
    ``quantum_s`` (NaN: half the mean predicted length)."""
    n = s.n
    mw = rule == _MAXWEIGHT
    widths = np.unique(s.gpus)
    # The rules that rank by remaining time or area, and PRR, keep their waiting jobs sorted.
    ranked = (order != _ARRIVAL and rule in (_SF, _FIRSTFIT, _GREEDY)) or rule == _PRR
    m = n if ranked else 1
    r = min(n, s.total_gpus) if ranked else 1  # at most one running job per GPU
    # PRR's key changes with its quanta (-1: no order kept yet).
    mode = -1
    if rule != _PRR:
        mode = rk.AREA if order == _AREA else rk.TIME
    n_shadow = n if mw else 1
    return SelectionState(
        rule, order, trust, quantum_s, np.empty(n, np.int64), np.full(n, -1, np.int64), 0, 0,
        0, 0, 0.0, -1, -np.inf, np.zeros(n, np.bool_),
        np.empty(n_shadow, np.int64), 0, widths,
        np.searchsorted(widths, s.gpus).astype(np.int64), np.zeros(widths.shape[0], np.int64),
        ranked, np.empty(m), np.empty(m, np.int64), 0, np.empty(m, np.int64), 0,
        np.empty(r), np.empty(r, np.int64), 0, np.zeros(m, np.bool_), np.empty(m, np.int64),
        np.empty(m, np.int64), mode, mode, mode, np.zeros(m, np.int64), np.empty(m, np.int64), 0,
        np.full(widths.shape[0], -1, np.int64), -1,
    )  # fmt: skip


@implement(loop.arrive, SelectionStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    activate(policy, sim, job)
    if policy.ranked:
        rk.pending(policy, job)
        # Ties: PRR's to the earlier arrival, the others' to the lower index.
        policy.tie[job] = policy.released if policy.rule == _PRR else job
    if policy.rule == _MAXWEIGHT:
        policy.shadow[policy.n_shadow] = job
        policy.n_shadow += 1
        policy.counts[policy.width_of[job]] += 1
    if policy.rule == _PRR:
        policy.released += 1
        policy.length_sum += sim.predicted[job] / sim.best_rate[job]


@implement(loop.finish, SelectionStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    deactivate(policy, sim, job)
    if policy.rule == _MAXWEIGHT:
        policy.counts[policy.width_of[job]] -= 1


@implement(loop.advance, SelectionStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    pass


@implement(loop.decide, SelectionStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    return _select_and_serve(policy, sim, now)


@njit(cache=True)
def _select_and_serve(p: Any, s: Any, now: float) -> float:
    # ServerFillingSRPT.decide and PreferentialRoundRobin.decide, then serve(); returns the
    # wake-up time (NaN: none).
    if p.n_act == 0:
        return np.nan
    if p.rule == _PRR:
        _next_quantum(p, s, now)
    if p.ranked:
        return _ranked_select_and_serve(p, s, now)
    fits = p.active_gpus <= s.total_gpus
    if p.rule == _MAXWEIGHT and not fits:
        serve(p, s, _max_weight(p, s), fits)  # from its own lists, not the ranking
        return np.nan
    if p.rule == _SF_ARRIVAL and not fits:
        serve(p, s, _server_filling_by_arrival(p, s), fits)
        return np.nan
    jobs = active(p) if p.order == _ARRIVAL else active_by_index(p)
    if fits:
        # Every released job fits: only the waiting ones need an order.
        jobs = jobs[s.status[jobs] == WAITING]
    serve(p, s, _fit(p, s, _rank(p, s, jobs, now), fits), fits)
    return np.nan


@njit(cache=True)
def _server_filling_by_arrival(p: Any, s: Any) -> Any:
    # ServerFilling's choice from the active jobs in arrival order when they do not all fit,
    # read only as far as the shortest prefix covering the GPUs: a burst's waiting jobs
    # behind it are not read at every decision. The choice is server_filling()'s on every
    # active job: its pass beyond the paper reads past the prefix only while GPUs are left,
    # and then the whole order is read.
    prefix = covering_prefix(p, s)
    chosen = server_filling(prefix, s.gpus, s.total_gpus, p.mark, s.total_gpus)
    if s.gpus[chosen].sum() < s.total_gpus and prefix.shape[0] < p.n_act:
        return server_filling(active(p), s.gpus, s.total_gpus, p.mark, s.total_gpus)
    return chosen


@njit(cache=True)
def _next_quantum(p: Any, s: Any, now: float) -> None:
    # PRR: a new quantum when the last one is over; its kind sets the key.
    if now >= p.quantum_end - 1e-12:
        p.quantum += 1
        # A fixed quantum, or (NaN) half the mean predicted length.
        q = p.quantum_s
        length = q if q == q else 0.5 * p.length_sum / max(p.released, 1)
        p.quantum_end = now + max(length, 2.0 * s.restore_s, 1e-6)
    q, trust = p.quantum, p.trust
    trusted = np.floor((q + 1) * trust + 1e-12) > np.floor(q * trust + 1e-12)
    p.mode = rk.PREDICTED if trusted else rk.ATTAINED


@njit(cache=True)
def _rank(p: Any, s: Any, jobs: Any, now: float) -> Any:
    # The multiserver-job policies' ranking: arrival order as it is, or by predicted
    # remaining time or area (a stable sort of jobs in index order: ties to the lower index).
    if p.order == _ARRIVAL:
        return jobs
    done = np.empty(jobs.shape[0])
    for i in range(jobs.shape[0]):
        done[i] = attained(s, jobs[i], now)
    left = (s.predicted[jobs] - done) / s.best_rate[jobs]
    if p.order == _AREA:
        left = left * s.gpus[jobs]
    return jobs[np.argsort(left, kind="mergesort")]


@njit(cache=True)
def _fit(p: Any, s: Any, ranked: Any, fits: bool) -> Any:
    # The jobs to serve from the ranking: ServerFilling, first fit, or greedy.
    if p.rule == _SF or p.rule == _SF_ARRIVAL:
        return fill_choice(p, s, ranked, fits, s.total_gpus)
    if fits:
        return ranked
    return _first_fit(s, ranked, p.rule == _GREEDY)


@njit(cache=True)
def _max_weight(p: Any, s: Any) -> Any:
    # MaxWeight.select when not every active job fits: the heaviest class alone if it fills
    # the GPUs, else first fit on the persistent list stably re-sorted by class weight. The
    # class counts follow arrivals and completions; the list is re-sorted only when the
    # classes' order changed or jobs joined it (else it is sorted already), and the jobs
    # that left it are skipped until they are as many as those in it.
    total = s.total_gpus
    best, heaviest = -1, -1
    for k in range(p.widths.shape[0]):  # ascending widths: ties to the widest
        if p.counts[k] > 0 and p.counts[k] * total // p.widths[k] >= heaviest:
            best, heaviest = k, p.counts[k] * total // p.widths[k]
    if p.widths[best] * p.counts[best] >= total:
        return _oldest_of_class(p, best, total // p.widths[best])
    weight = np.empty(p.widths.shape[0], np.int64)
    for k in range(weight.shape[0]):
        weight[k] = -(p.counts[k] * total // p.widths[k])
    rank = _dense_rank(weight)
    unchanged = p.n_sorted == p.n_shadow and np.array_equal(rank, p.last_rank)
    if not unchanged or p.n_shadow > 2 * p.n_act + 64:
        m = 0
        for i in range(p.n_shadow):
            j = p.shadow[i]
            if s.status[j] == WAITING or s.status[j] == RUNNING:
                p.shadow[m] = j
                m += 1
        p.n_shadow = m
        if not unchanged:
            p.shadow[:m] = _by_bucket(p.shadow[:m], rank[p.width_of[p.shadow[:m]]], rank.max() + 1)
            p.last_rank[:] = rank
        p.n_sorted = m
    return _shadow_first_fit(p, s)


@njit(cache=True)
def _oldest_of_class(p: Any, k: int, need: int) -> Any:
    # The first ``need`` active jobs of class ``k`` in arrival order (past the holes the
    # finished jobs left, closed once they outnumber the active jobs).
    if p.n_slot > 2 * p.n_act + 64:
        active(p)
    out = np.empty(need, np.int64)
    m = 0
    for i in range(p.n_slot):
        j = p.act[i]
        if p.act_pos[j] == i and p.width_of[j] == k:
            out[m] = j
            m += 1
            if m == need:
                break
    return out[:m]


@njit(cache=True)
def _shadow_first_fit(p: Any, s: Any) -> Any:
    # _first_fit on the persistent list's active jobs.
    chosen = np.empty(min(p.n_act, s.total_gpus), np.int64)
    n_chosen = 0
    used = 0
    for i in range(p.n_shadow):
        if used == s.total_gpus:
            break  # nothing fits any more
        j = p.shadow[i]
        if s.status[j] != WAITING and s.status[j] != RUNNING:
            continue
        if used + s.gpus[j] <= s.total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += s.gpus[j]
    return chosen[:n_chosen]


@njit(cache=True)
def _dense_rank(weight: Any) -> Any:
    # Each class's rank by ``weight``, equal weights sharing one (0: the lowest).
    classes = np.argsort(weight, kind="mergesort")
    rank = np.empty(weight.shape[0], np.int64)
    r = -1
    for t in range(classes.shape[0]):
        if t == 0 or weight[classes[t]] != weight[classes[t - 1]]:
            r += 1
        rank[classes[t]] = r
    return rank


@njit(cache=True)
def _by_bucket(jobs: Any, bucket: Any, n_buckets: int) -> Any:
    # ``jobs`` stably ordered by ``bucket`` (aligned with them, in [0, n_buckets)): a
    # counting sort, linear in the jobs.
    at = np.zeros(n_buckets, np.int64)
    for b in bucket:
        at[b] += 1
    first = 0
    for b in range(n_buckets):
        at[b], first = first, first + at[b]
    out = np.empty(jobs.shape[0], np.int64)
    for i in range(jobs.shape[0]):
        out[at[bucket[i]]] = jobs[i]
        at[bucket[i]] += 1
    return out


@njit(cache=True)
def fill_choice(p: Any, s: Any, ranked: Any, fits: bool, cap: int) -> Any:
    """ServerFilling's choice from ``ranked``: when every active job ``fits``, all of them
    (the waiting ones given), widest first; else :func:`server_filling` (widths capped at
    ``cap`` for the order)."""
    if fits:
        return widest_first(ranked, s.gpus, s.total_gpus)
    return server_filling(ranked, s.gpus, s.total_gpus, p.mark, cap)


@njit(cache=True)
def _first_fit(s: Any, ranked: Any, greedy: bool) -> Any:
    # The ranked jobs that fit in turn; ``greedy`` stops at the first that does not.
    chosen = np.empty(ranked.shape[0], np.int64)
    n_chosen = 0
    used = 0
    for j in ranked:
        if used == s.total_gpus:
            break  # nothing fits any more
        if used + s.gpus[j] <= s.total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += s.gpus[j]
        elif greedy:
            break
    return chosen[:n_chosen]


@njit(cache=True)
def serve(p: Any, s: Any, chosen: Any, fits: bool) -> None:
    """_selection.serve: unless every active job ``fits``, preempt the running jobs not in
    ``chosen``; then start the chosen waiting ones in order where consolidation places
    them (``p.mark`` is scratch, all false)."""
    s.d_free[:] = s.free
    if not fits:
        for j in chosen:
            p.mark[j] = True
        for r in range(s.n_run):
            j = s.run_list[r]
            if not p.mark[j]:
                for k in range(s.cur_off[j], s.cur_off[j] + s.cur_len[j]):
                    s.d_free[s.pool_s[k]] += s.pool_c[k]
                s.preempts[s.n_pre] = j
                s.n_pre += 1
        for j in chosen:
            p.mark[j] = False
    for j in chosen:
        if s.status[j] != WAITING:
            continue
        used = consolidate(s.d_free, s.gpus[j], s.out_s, s.out_c)
        if used == 0:
            continue
        record_start(s, s.n_starts, used)
        s.starts[s.n_starts] = j
        s.n_starts += 1


@njit(cache=True)
def widest_first(jobs: Any, gpus: Any, cap: int) -> Any:
    """``jobs`` by width capped at ``cap``, widest first, in their order among equals: a
    counting sort, linear in the jobs (the prefix ServerFilling sorts at every decision holds
    as many jobs as fill the cluster)."""
    if jobs.shape[0] == 0:
        return jobs.copy()
    width = np.minimum(gpus[jobs], cap)
    top = width.max()
    return _by_bucket(jobs, top - width, top + 1)


@njit(cache=True)
def server_filling(ranked: Any, gpus: Any, total_gpus: int, mark: Any, cap: int) -> Any:
    """:func:`asrpt_opt.policies.serverfilling.server_filling` (``mark``: scratch, all
    false; ``cap``: ``server_gpus``, or ``total_gpus`` for the paper's rule)."""
    m = ranked.shape[0]
    k = 0
    covered = 0
    while k < m and covered < total_gpus:
        covered += gpus[ranked[k]]
        k += 1
    prefix = widest_first(ranked[:k], gpus, cap)
    chosen = np.empty(m, np.int64)
    n_chosen = 0
    used = 0
    for j in prefix:
        if used + gpus[j] <= total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += gpus[j]
            mark[j] = True
    # Beyond the paper: fill the GPUs a non-dividing width left idle.
    for j in ranked:
        if used >= total_gpus:
            break
        if not mark[j] and used + gpus[j] <= total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += gpus[j]
            mark[j] = True
    for i in range(n_chosen):
        mark[chosen[i]] = False
    return chosen[:n_chosen]


@njit(cache=True)
def _ranked_select_and_serve(p: Any, s: Any, now: float) -> float:
    # _select_and_serve for the rules ranking by remaining time or area, from the sorted
    # waiting jobs and the running ones re-ranked (_MultiserverPolicy.select).
    fits = p.active_gpus <= s.total_gpus
    # Every waiting job is read when all fit: the started ones are dropped first.
    rk.sync_waiting(p, s, now, p.wmode != p.mode, fits)
    p.wmode = p.mode
    # The choice is a new array or the sorted waiting jobs themselves, which serve() reads
    # and nothing changes before the next decision.
    if fits:
        chosen = p.wjob[: p.n_w] if p.rule == _PRR else _fit(p, s, p.wjob[: p.n_w], True)
    else:
        rk.rank_running(p, s, now, p.rmode != p.mode)
        p.rmode = p.mode
        upto = min(p.n_w, max(32, 2 * s.total_free))
        greedy = p.rule == _GREEDY
        while True:
            ranked = rk.merge(p, s, upto)
            chosen = _first_fit(s, ranked, False) if p.rule == _PRR else _fit(p, s, ranked, False)
            if upto == p.n_w or rk.decided(s, ranked, chosen, greedy):
                break
            upto = min(p.n_w, 2 * upto)
    first, started = s.n_pre, s.n_starts
    serve(p, s, chosen, fits)
    p.n_stale += s.n_starts - started  # each left its entry among the waiting jobs
    for i in range(first, s.n_pre):
        rk.pending(p, s.preempts[i])
    if p.rule == _PRR and not fits and chosen.shape[0] < p.n_act:
        return p.quantum_end  # another quantum matters while a job is left out
    return np.nan
