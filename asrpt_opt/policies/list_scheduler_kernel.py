"""The compiled form of :class:`~asrpt_opt.policies.list_scheduler.ListScheduler` and its
key rules (FIFO, SJF, SRTF, SRSF, QSSF, 2D-LAS), for :mod:`asrpt_opt.sim.compiled.loop`.

The same decision as the Python class, step for step: waiting jobs in one heap of
``(key, job, version)`` per width, the best head first, preemption of the running jobs with
the largest keys when a job does not fit (the more urgent victims spared when the others
make room), backfill past a job that cannot start, and preempted jobs queued again after the
decision with their running keys. A policy that extends the list scheduler (A-SRPT,
:mod:`asrpt_opt.policies.asrpt_kernel`) keeps a :class:`ListState` and answers the three
key hooks :func:`running_keys`, :func:`worth_preempting` and :func:`requeue_key` for its own
state's type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.heaps import heap_pop, heap_push
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import consolidate, free_preempted, record_start

__all__ = [
    "KEYS",
    "OTHER",
    "ListState",
    "decide_list",
    "enqueue",
    "new_state",
    "requeue_key",
    "running_keys",
    "worth_preempting",
]

#: The key rules, by code (a policy's ``_core`` names one).
KEYS = ("fifo", "sjf", "srtf", "srsf", "2d-las", "qssf", "msf", "msf-nonpreemptive")
_FIFO, _SJF, _SRTF, _SRSF, _LAS, _QSSF, _MSF, _MSF_NP = range(len(KEYS))
#: The code of a list state whose keys come from another policy's hooks (A-SRPT's).
OTHER = len(KEYS)
#: 2D-LAS orders by queue level, then arrival order.
_LEVEL = float(1 << 31)


@structref.register
class ListStateType(StateType):
    """The numba type of :class:`ListState`."""


class ListState(structref.StructRefProxy):
    """A list scheduler's queues and the scratch of its decisions (:func:`new_state`)."""


structref.define_proxy(
    ListState,
    ListStateType,
    [
        "rule", "backfill", "preemptive", "thresholds", "widths", "width_of",
        "q_t", "q_i", "q_n", "q_version", "queued", "n_waiting",
        "c_t", "c_i", "r_key", "r_alive", "las_rank", "arrivals",
    ],
)  # fmt: skip


@njit(cache=True)
def new_state(s: Any, rule: int, backfill: bool, thresholds: Any) -> Any:
    """Empty queues for the jobs of ``s`` (a :class:`~asrpt_opt.sim.compiled.state.SimState`)
    ranked by key rule ``rule`` (a code of :data:`KEYS`, or :data:`OTHER`)."""
    n = s.n
    widths = np.unique(s.gpus)
    n_w = widths.shape[0]
    width_of = np.searchsorted(widths, s.gpus).astype(np.int64)
    most = min(n, s.total_gpus)
    preemptive = rule != _FIFO and rule != _SJF and rule != _QSSF and rule != _MSF_NP
    return ListState(
        rule, backfill, preemptive, thresholds, widths, width_of,
        np.empty((n_w, 16)), np.empty((n_w, 16, 2), np.int64), np.zeros(n_w, np.int64),
        np.zeros(n, np.int64), np.zeros(n, np.bool_), 0,
        np.empty(n_w), np.empty((n_w, 3), np.int64), np.empty(most), np.empty(most, np.bool_),
        np.zeros(n if rule == _LAS else 1), 0,
    )  # fmt: skip


# --------------------------------------------------------------------------- key hooks
def running_keys(keys: Any, lst: Any, s: Any, now: float) -> float:
    """Hook: every running job's key at ``now`` into ``lst.r_key`` (aligned with
    ``s.run_list``), each marked alive in ``lst.r_alive``.

    All at once, not job by job: a kernel reads its record's arrays once per decision (each
    read of a record's field costs a reference count in numba).

    Parameters
    ----------
    keys : structref
        The policy's compiled state (its type selects the implementation).
    lst : ListState
    s : SimState
    now : float

    Returns
    -------
    float
        The largest key (-inf when nothing runs).
    """
    raise NotImplementedError


def worth_preempting(keys: Any, lst: Any, s: Any, now: float, first: int) -> bool:
    """Hook: whether the victims ``s.preempts[first:s.n_pre]`` should be preempted.

    Parameters
    ----------
    keys : structref
        The policy's compiled state (its type selects the implementation).
    lst : ListState
    s : SimState
    now : float
    first : int

    Returns
    -------
    bool
    """
    raise NotImplementedError


def requeue_key(keys: Any, lst: Any, s: Any, j: int, now: float) -> float:
    """Hook: the key preempted job ``j`` queues with.

    Parameters
    ----------
    keys : structref
        The policy's compiled state (its type selects the implementation).
    lst : ListState
    s : SimState
    j : int
    now : float

    Returns
    -------
    float
    """
    raise NotImplementedError


@implement(running_keys, ListStateType)
def _list_running_keys(keys: Any, lst: Any, s: Any, now: float) -> float:
    run_list, r_key, r_alive, rule = s.run_list, lst.r_key, lst.r_alive, lst.rule
    gpus, att_work, work_start, rate = s.gpus, s.att_work, s.work_start, s.rate
    att_gpu, seg_start0, predicted, best_rate = s.att_gpu, s.seg_start0, s.predicted, s.best_rate
    thresholds, las_rank = lst.thresholds, lst.las_rank
    top = -np.inf
    for r in range(s.n_run):
        j = run_list[r]
        if rule == _LAS:
            service = att_gpu[j] + (now - seg_start0[j]) * float(gpus[j])
            key = _level(thresholds, service) * _LEVEL + las_rank[j]
        elif rule == _MSF:
            key = -float(gpus[j])
        else:
            busy = now - work_start[j]
            attained = att_work[j] + (busy * rate[j] if busy > 0 else 0.0)
            key = (predicted[j] - attained) / best_rate[j]
            if rule == _SRSF:
                key = key * float(gpus[j])
        r_key[r] = key
        r_alive[r] = True
        if key > top:
            top = key
    return top


@implement(worth_preempting, ListStateType)
def _always_worth(keys: Any, lst: Any, s: Any, now: float, first: int) -> bool:
    return True


@implement(requeue_key, ListStateType)
def _running_key_again(keys: Any, lst: Any, s: Any, j: int, now: float) -> float:
    return lst.r_key[s.run_pos[j]]  # its running key, computed this decision


# --------------------------------------------------------------------------- loop hooks
@implement(loop.arrive, ListStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    if policy.rule == _LAS:
        policy.las_rank[job] = policy.arrivals
        policy.arrivals += 1
    enqueue(policy, job, _waiting_key(policy, sim, job))


@implement(loop.finish, ListStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    pass


@implement(loop.advance, ListStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    pass


@implement(loop.decide, ListStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    decide_list(policy, sim, now, policy)
    if policy.rule == _LAS and policy.n_waiting > 0:
        return _las_wake(policy, sim, now)
    return np.nan


# --------------------------------------------------------------------------- the decision
@njit(cache=True)
def decide_list(lst: Any, s: Any, now: float, keys: Any) -> None:
    """ListScheduler.decide: start the best heads that fit (preempting larger running keys
    when preemptive), backfilling past a job that cannot start; ``keys`` answers the key
    hooks."""
    if lst.n_waiting == 0 or (s.total_free == 0 and not lst.preemptive):
        return
    d_total_free = s.total_free
    spare = s.total_gpus - s.total_free if lst.preemptive else 0
    s.d_free[:] = s.free
    keys_ready = False
    max_key = np.inf
    n_c = 0  # candidates: the head of each width's heap
    for w in range(lst.widths.shape[0]):
        n_c = _candidate(lst, w, n_c)
    while n_c > 0:
        key, job, w = lst.c_t[0], lst.c_i[0, 0], lst.c_i[0, 2]
        heap_pop(lst.c_t, lst.c_i, n_c)
        n_c -= 1
        width = lst.widths[w]
        first = s.n_pre
        if width > d_total_free:
            if width <= d_total_free + spare:
                if not keys_ready:
                    max_key = running_keys(keys, lst, s, now)
                    keys_ready = True
                if key < max_key:
                    max_key = _make_room(lst, s, now, keys, key, width - d_total_free)
            if s.n_pre == first:
                if not lst.backfill:
                    break
                continue
            room = free_preempted(s, first, 1)
            d_total_free += room
            spare -= room
        used = consolidate(s.d_free, width, s.out_s, s.out_c)
        if used == 0:
            # No placement (cannot happen for consolidation with room): undo.
            room = free_preempted(s, first, -1)
            d_total_free -= room
            spare += room
            s.n_pre = first
            if not lst.backfill:
                break
            continue
        record_start(s, s.n_starts, used)
        d_total_free -= width
        heap_pop(lst.q_t[w], lst.q_i[w], lst.q_n[w])
        lst.q_n[w] -= 1
        lst.queued[job] = False
        lst.n_waiting -= 1
        s.starts[s.n_starts] = job
        s.n_starts += 1
        n_c = _candidate(lst, w, n_c)
    # Preempted jobs queue again only now, keyed (as ListScheduler does) before their stop
    # is applied: a waiting key reads the service a running job has attained.
    for v in range(s.n_pre):
        victim = s.preempts[v]
        enqueue(lst, victim, requeue_key(keys, lst, s, victim, now))


@njit(cache=True)
def _make_room(lst: Any, s: Any, now: float, keys: Any, key: float, need: int) -> float:
    # Choose victims for a job of key ``key`` needing ``need`` more GPUs (none when the
    # policy finds them not worth preempting); returns the largest running key left.
    first = s.n_pre
    top = _victims(lst, s, key, need)
    if s.n_pre > first and not worth_preempting(keys, lst, s, now, first):
        for v in range(first, s.n_pre):
            lst.r_alive[s.run_pos[s.preempts[v]]] = True
        top = -np.inf
        for r in range(s.n_run):
            if lst.r_alive[r] and lst.r_key[r] > top:
                top = lst.r_key[r]
        s.n_pre = first
    return top


@njit(cache=True)
def enqueue(lst: Any, job: int, key: float) -> None:
    """Queue waiting job ``job`` with ``key``."""
    rekey(lst, job, key)
    lst.queued[job] = True
    lst.n_waiting += 1


@njit(cache=True)
def rekey(lst: Any, job: int, key: float) -> None:
    """ListScheduler._enqueue: push (key, job, new version) on its width's heap (an older
    entry of the job becomes stale)."""
    w = lst.width_of[job]
    if lst.q_n[w] == lst.q_t.shape[1]:
        cap = lst.q_t.shape[1]
        t = np.empty((lst.q_t.shape[0], cap * 2))
        i = np.empty((lst.q_i.shape[0], cap * 2, 2), np.int64)
        t[:, :cap] = lst.q_t
        i[:, :cap] = lst.q_i
        lst.q_t, lst.q_i = t, i
    lst.q_version[job] += 1
    ints = np.empty(2, np.int64)
    ints[0] = job
    ints[1] = lst.q_version[job]
    heap_push(lst.q_t[w], lst.q_i[w], lst.q_n[w], key, ints)
    lst.q_n[w] += 1


@njit(cache=True)
def _candidate(lst: Any, w: int, n_c: int) -> int:
    # Push width ``w``'s head, if any, on the candidate heap of ``n_c`` items.
    q_t, q_i, q_n = lst.q_t[w], lst.q_i[w], lst.q_n
    while q_n[w] > 0:  # ListScheduler._head: drop stale entries
        job, ver = q_i[0, 0], q_i[0, 1]
        if lst.queued[job] and ver == lst.q_version[job]:
            break
        heap_pop(q_t, q_i, q_n[w])
        q_n[w] -= 1
    if q_n[w] == 0:
        return n_c
    ints = np.empty(3, np.int64)
    ints[0] = q_i[0, 0]
    ints[1] = q_i[0, 1]
    ints[2] = w
    heap_push(lst.c_t, lst.c_i, n_c, q_t[0], ints)
    return n_c + 1


@njit(cache=True)
def _level(thresholds: Any, service: float) -> int:
    # np.searchsorted(thresholds, service, side="right")
    k = 0
    while k < thresholds.shape[0] and thresholds[k] <= service:
        k += 1
    return k


@njit(cache=True)
def _waiting_key(lst: Any, s: Any, j: int) -> float:
    rule = lst.rule
    if rule == _FIFO:
        return s.release[j]
    if rule == _SJF:
        return s.predicted[j] / s.best_rate[j]
    if rule == _SRTF:
        return (s.predicted[j] - s.att_work[j]) / s.best_rate[j]
    if rule == _SRSF:
        return (s.predicted[j] - s.att_work[j]) / s.best_rate[j] * float(s.gpus[j])
    if rule == _QSSF:
        return s.predicted[j] / s.best_rate[j] * float(s.gpus[j])
    if rule in (_MSF, _MSF_NP):
        return -float(s.gpus[j])
    return _level(lst.thresholds, s.att_gpu[j]) * _LEVEL + lst.las_rank[j]


@njit(cache=True)
def _victims(lst: Any, s: Any, key: float, need: int) -> float:
    # ListScheduler's _Running.victims: append the victims to ``preempts`` (none when they
    # cannot make room); returns the largest key still alive.
    run_list, r_key, r_alive, gpus, preempts = (
        s.run_list,
        lst.r_key,
        lst.r_alive,
        s.gpus,
        s.preempts,
    )
    room = 0
    for r in range(s.n_run):
        if r_alive[r] and r_key[r] > key:
            room += gpus[run_list[r]]
    if room >= need:
        got = 0
        first = s.n_pre
        while got < need:  # largest key first, ties to the larger job index
            best = -1
            for r in range(s.n_run):
                if (
                    r_alive[r]
                    and r_key[r] > key
                    and (
                        best < 0
                        or r_key[r] > r_key[best]
                        or (r_key[r] == r_key[best] and run_list[r] > run_list[best])
                    )
                ):
                    best = r
            r_alive[best] = False
            preempts[s.n_pre] = best  # a running-list position for now
            s.n_pre += 1
            got += gpus[run_list[best]]
        # Spare the more urgent of the chosen victims when the others already make room.
        k = s.n_pre - 2
        while k >= first:
            g = gpus[run_list[preempts[k]]]
            if got - g >= need:
                r_alive[preempts[k]] = True
                got -= g
                for m in range(k, s.n_pre - 1):
                    preempts[m] = preempts[m + 1]
                s.n_pre -= 1
            k -= 1
        for m in range(first, s.n_pre):
            preempts[m] = run_list[preempts[m]]
    top = -np.inf
    for r in range(s.n_run):
        if r_alive[r] and r_key[r] > top:
            top = r_key[r]
    return top


@njit(cache=True)
def _las_wake(lst: Any, s: Any, now: float) -> float:
    # TwoDimensionalLAS.wake_time: the next instant a running job crosses a threshold.
    thresholds = lst.thresholds
    best = np.inf
    found = False
    for r in range(s.n_run + s.n_starts):
        if r < s.n_run:
            j = s.run_list[r]
            gone = False
            for v in range(s.n_pre):
                if s.preempts[v] == j:
                    gone = True
            if gone:
                continue
            service = s.att_gpu[j] + (now - s.seg_start0[j]) * float(s.gpus[j])
        else:
            j = s.starts[r - s.n_run]
            service = s.att_gpu[j]
        level = _level(thresholds, service)
        if level < thresholds.shape[0]:
            gap = (thresholds[level] - service) / s.gpus[j]
            if not found or gap < best:
                best = gap
                found = True
    if not found:
        return np.nan
    wake = now + best
    return wake if wake > now else np.nan
