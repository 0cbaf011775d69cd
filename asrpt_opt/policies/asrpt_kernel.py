"""The compiled form of :class:`~asrpt_opt.policies.asrpt.ASRPT`, for
:mod:`asrpt_opt.sim.compiled.loop`.

The same steps as the Python class: the virtual single machine runs preemptive SRPT on the
jobs' predicted virtual sizes (a heap of ``(remaining, job, version)``), queued jobs are
re-keyed as it advances, running jobs past their prediction have it raised (the adaptive
rule, watched through a heap of ``(time, job, sequence)``), and the real cluster is guided
either by ServerFilling on the ranking (``guide="fill"``, with
:mod:`asrpt_opt.policies._selection_kernel`'s serving) or by
:mod:`asrpt_opt.policies.list_scheduler_kernel` with A-SRPT's keys (``guide="list"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.heaps import heap_pop, push
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.policies import _selection_kernel as sk
from asrpt_opt.policies import list_scheduler_kernel as lk
from asrpt_opt.policies.asrpt import ADAPTIVE_RULES, GUIDES, MARGIN
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import attained
from asrpt_opt.sim.view import RUNNING, WAITING

__all__ = ["AsrptState", "new_state"]

_DOUBLE = ADAPTIVE_RULES.index("double")
_NO_RAISE = ADAPTIVE_RULES.index("none")
_AUTO, _FILL = GUIDES.index("auto"), GUIDES.index("fill")


@structref.register
class AsrptStateType(StateType):
    """The numba type of :class:`AsrptState`."""


class AsrptState(structref.StructRefProxy):
    """A-SRPT's virtual machine, predictions and overrun watches (:func:`new_state`)."""


structref.define_proxy(
    AsrptState,
    AsrptStateType,
    [
        "lst", "adaptive", "finished_remaining", "watch", "key", "pred", "first", "vdone",
        "vver", "v_t", "v_i", "v_n", "vt", "scale", "x_t", "x_i", "x_n", "x_seq", "started",
        "fill", "act", "act_pos", "n_act", "n_slot", "active_gpus", "mark",
    ],
)  # fmt: skip


@njit(cache=True)
def new_state(s: Any, adaptive: int, finished_remaining: bool, guide: int, backfill: bool) -> Any:
    """An empty virtual machine for the jobs of ``s``; ``adaptive`` and ``guide`` are indices
    of :data:`~asrpt_opt.policies.asrpt.ADAPTIVE_RULES` and
    :data:`~asrpt_opt.policies.asrpt.GUIDES` (``auto`` resolved as
    :func:`~asrpt_opt.policies.asrpt.resolve_guide` does)."""
    n = s.n
    fill = guide == _FILL or (guide == _AUTO and s.capacity.shape[0] == 1)
    lst = lk.new_state(s, lk.OTHER, backfill, np.zeros(0))
    watch = adaptive != _NO_RAISE and not s.never_low
    return AsrptState(
        lst, adaptive, finished_remaining, watch, np.zeros(n), np.zeros(n), np.zeros(n),
        np.zeros(n, np.bool_), np.zeros(n, np.int64), np.empty(max(16, n)),
        np.empty((max(16, n), 2), np.int64), 0, 0.0, 1.0 / float(s.total_gpus), np.empty(16),
        np.empty((16, 2), np.int64), 0, np.zeros(n, np.int64), np.zeros(n, np.bool_),
        fill, np.empty(n if fill else 1, np.int64), np.full(n if fill else 1, -1, np.int64), 0,
        0, 0, np.zeros(n if fill else 1, np.bool_),
    )  # fmt: skip


# --------------------------------------------------------------------------- loop hooks
@implement(loop.arrive, AsrptStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    _on_arrival(policy, sim, job, now)


@implement(loop.finish, AsrptStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    policy.x_seq[job] += 1  # stop watching it
    if policy.fill:
        sk.deactivate(policy, sim, job)


@implement(loop.advance, AsrptStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    _advance_virtual(policy, sim, now)


@implement(loop.decide, AsrptStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    if policy.watch:
        _raise_overruns(policy, sim, now)
    if policy.fill:
        _fill(policy, sim, now)
    else:
        lk.decide_list(policy.lst, sim, now, policy)
    if policy.watch:
        return _watch_starts(policy, sim, now)
    return np.nan


# --------------------------------------------------------------------------- key hooks
@implement(lk.running_keys, AsrptStateType)
def _running_keys(keys: Any, lst: Any, s: Any, now: float) -> float:
    run_list, r_key, r_alive = s.run_list, lst.r_key, lst.r_alive
    a_key, vdone, pred, remaining = keys.key, keys.vdone, keys.pred, keys.finished_remaining
    gpus, att_work, work_start, rate, best_rate = (
        s.gpus,
        s.att_work,
        s.work_start,
        s.rate,
        s.best_rate,
    )
    top = -np.inf
    for r in range(s.n_run):
        j = run_list[r]
        key = a_key[j]
        if remaining and vdone[j]:
            # ASRPT.running_keys, in its (array) order of operations.
            done = att_work[j] + max(now - work_start[j], 0.0) * rate[j]
            service = float(gpus[j]) * max(pred[j] - done, 0.0) / best_rate[j]
            key = -1.0 / (1.0 + service)
        r_key[r] = key
        r_alive[r] = True
        if key > top:
            top = key
    return top


@implement(lk.worth_preempting, AsrptStateType)
def _worth_preempting(keys: Any, lst: Any, s: Any, now: float, first: int) -> bool:
    # ASRPT.worth_preempting: no victim about to finish.
    if s.restore_s > 0:
        for v in range(first, s.n_pre):
            victim = s.preempts[v]
            left = (keys.pred[victim] - attained(s, victim, now)) / s.best_rate[victim]
            if left <= s.restore_s:
                return False
    return True


@implement(lk.requeue_key, AsrptStateType)
def _requeue_key(keys: Any, lst: Any, s: Any, j: int, now: float) -> float:
    return _finished_key(keys, lst, s, j, now)


@njit(cache=True)
def _finished_key(keys: Any, lst: Any, s: Any, j: int, now: float) -> float:
    # The key a job queues with: its virtual remaining size, or (finished on the virtual
    # machine, under finished_order="remaining") ranked by its real remaining service.
    key = keys.key[j]
    if keys.finished_remaining and keys.vdone[j]:
        left = max(keys.pred[j] - attained(s, j, now), 0.0) / s.best_rate[j]
        key = -1.0 / (1.0 + float(s.gpus[j]) * left)
    return key


# --------------------------------------------------------------------------- the steps
@njit(cache=True)
def _on_arrival(policy: Any, sim: Any, job: int, now: float) -> None:
    # The job joins the virtual machine with its predicted size, and the queue.
    p, s, j = policy, sim, job
    p.pred[j] = s.predicted[j]
    p.first[j] = s.predicted[j]
    size = float(s.gpus[j]) * s.predicted[j] / s.best_rate[j] * p.scale
    p.vver[j] += 1
    p.v_t, p.v_i = push(p.v_t, p.v_i, p.v_n, size, j, p.vver[j], 0)
    p.v_n += 1
    p.key[j] = size
    if p.fill:
        sk.activate(p, s, j)
    else:
        lk.enqueue(p.lst, j, size)


@njit(cache=True)
def _fill(p: Any, s: Any, now: float) -> None:
    # guide="fill" (ASRPT._fill): ServerFilling on the ranking, then backfill; running jobs
    # outside the chosen set are preempted unless about to finish.
    if p.n_act == 0:
        return
    fits = p.active_gpus <= s.total_gpus
    jobs = sk.active_by_index(p)  # ties go to the lower index
    if fits:
        jobs = jobs[s.status[jobs] == WAITING]
    ranked = jobs[np.argsort(_rank_keys(p, s, jobs, now), kind="mergesort")]
    chosen = sk.fill_choice(p, s, ranked, fits, s.capacity.max())
    if not fits:
        chosen = _keep_finishing(p, s, chosen, now)
    sk.serve(p, s, chosen, fits)


@njit(cache=True)
def _rank_keys(p: Any, s: Any, jobs: Any, now: float) -> Any:
    # ASRPT.rank_keys: the virtual remaining work; finished virtually, the real remaining
    # service (finished_order="remaining"), below zero.
    keys = p.key[jobs].copy()
    if p.finished_remaining:
        for i in range(jobs.shape[0]):
            j = jobs[i]
            if p.vdone[j]:
                left = max(p.pred[j] - attained(s, j, now), 0.0) / s.best_rate[j]
                keys[i] = -1.0 / (1.0 + float(s.gpus[j]) * left)
    return keys


@njit(cache=True)
def _keep_finishing(p: Any, s: Any, chosen: Any, now: float) -> Any:
    # ASRPT._not_worth_preempting: running jobs outside ``chosen`` that would finish within
    # the restore overhead stay (appended: they are running, so none starts).
    if s.restore_s <= 0:
        return chosen
    for j in chosen:
        p.mark[j] = True
    kept = np.empty(s.n_run, np.int64)
    n_kept = 0
    for r in range(s.n_run):
        v = s.run_list[r]
        if not p.mark[v] and (p.pred[v] - attained(s, v, now)) / s.best_rate[v] <= s.restore_s:
            kept[n_kept] = v
            n_kept += 1
    for j in chosen:
        p.mark[j] = False
    return np.concatenate((chosen, kept[:n_kept]))


@njit(cache=True)
def _advance_virtual(policy: Any, sim: Any, now: float) -> None:
    # ASRPT._advance: run the virtual machine to now, re-keying queued jobs.
    p, s = policy, sim
    tv = p.vt
    while p.v_n > 0 and tv < now:
        rv, jv, verv = p.v_t[0], p.v_i[0, 0], p.v_i[0, 1]
        if verv != p.vver[jv]:
            heap_pop(p.v_t, p.v_i, p.v_n)
            p.v_n -= 1
            continue
        if tv + rv <= now:
            heap_pop(p.v_t, p.v_i, p.v_n)
            p.v_n -= 1
            tv += rv
            p.vdone[jv] = True
            if p.finished_remaining:
                left = max(p.pred[jv] - attained(s, jv, now), 0.0) / s.best_rate[jv]
                key = -1.0 / (1.0 + float(s.gpus[jv]) * left)
            else:
                key = -1.0 / (1.0 + tv)
        else:
            key = rv - (now - tv)
            p.v_t[0] = key  # heapreplace with a smaller key: the root stays the root
            tv = now
        p.key[jv] = key
        if p.lst.queued[jv]:
            lk.rekey(p.lst, jv, key)
    p.vt = max(tv, now)


@njit(cache=True)
def _raise_overruns(p: Any, s: Any, now: float) -> None:
    # ASRPT._raise_overrun: raise the predictions of running jobs past them.
    while p.x_n > 0 and p.x_t[0] <= now:
        jx, seq = p.x_i[0, 0], p.x_i[0, 1]
        heap_pop(p.x_t, p.x_i, p.x_n)
        p.x_n -= 1
        if seq != p.x_seq[jx] or s.status[jx] != RUNNING:
            continue
        done = attained(s, jx, now)
        if done >= p.pred[jx] * (1.0 + MARGIN):
            new = 2.0 * done if p.adaptive == _DOUBLE else done + p.first[jx]
            extra = float(s.gpus[jx]) * (new - p.pred[jx]) / s.best_rate[jx] * p.scale
            p.pred[jx] = new
            current = p.key[jx]
            size = (current if current > 0 else 0.0) + extra
            p.vdone[jx] = False
            p.vver[jx] += 1
            p.v_t, p.v_i = push(p.v_t, p.v_i, p.v_n, size, jx, p.vver[jx], 0)
            p.v_n += 1
            p.key[jx] = size  # running, so not queued: nothing to re-queue
        _watch(p, s, jx, s.rate[jx], s.work_start[jx], now)


@njit(cache=True)
def _watch(p: Any, s: Any, j: int, r: float, progress_s: float, now: float) -> None:
    # ASRPT._watch: when ``j``, running at ``r`` from ``progress_s``, passes its prediction.
    p.x_seq[j] += 1
    left = p.pred[j] * (1.0 + 2.0 * MARGIN) - attained(s, j, now)
    when = max(progress_s, now) + max(left, 0.0) / r
    p.x_t, p.x_i = push(p.x_t, p.x_i, p.x_n, when, j, p.x_seq[j], 0)
    p.x_n += 1


@njit(cache=True)
def _watch_starts(p: Any, s: Any, now: float) -> float:
    # ASRPT.wake_time: watch the started jobs, forget the preempted ones; the next watch.
    for v in range(s.n_pre):
        p.x_seq[s.preempts[v]] += 1
    for a in range(s.n_starts):
        j = s.starts[a]
        progress = now + (s.restore_s if p.started[j] else 0.0)
        speed = 1.0 if s.start_len[a] == 1 else 1.0 / s.slowdown[j]
        _watch(p, s, j, speed, progress, now)
        p.started[j] = True
    while p.x_n > 0 and p.x_i[0, 1] != p.x_seq[p.x_i[0, 0]]:
        heap_pop(p.x_t, p.x_i, p.x_n)
        p.x_n -= 1
    if p.x_n > 0 and p.x_t[0] > now:
        return p.x_t[0]
    return np.nan
