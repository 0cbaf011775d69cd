"""The compiled simulator's state, one record, and the transitions every policy shares.

:class:`SimState` is a numba structref: one mutable record holding what
:class:`~asrpt_opt.sim.engine.Simulator` holds for abstract jobs (their status, remaining
and attained work, running segments, the free GPUs, the events) and the scratch of one
decision. The compiled loop (:mod:`asrpt_opt.sim.compiled.loop`) and every policy kernel
read and update it; a policy kernel reports a decision through ``starts``/``n_starts`` (with
their allocations appended to the pool, :func:`record_start`) and ``preempts``/``n_pre``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.heaps import grow
from asrpt_opt._numba.hooks import StateType
from asrpt_opt.sim.view import COMPLETION, DONE, RUNNING, UNRELEASED, WAITING, WAKE

__all__ = [
    "COMPLETION",
    "IDLE_WAKES",
    "OK",
    "OVERFLOW",
    "STALLED",
    "WAKE",
    "SimState",
    "attained",
    "consolidate",
    "free_preempted",
    "new_state",
    "record_start",
]

#: Exit codes of the compiled loop (IDLE_WAKES: past :class:`~asrpt_opt.sim.view.IdleWakeLimit`).
OK, STALLED, OVERFLOW, IDLE_WAKES = 0, 1, 2, 3
_STATUSES = (UNRELEASED, WAITING, RUNNING, DONE)


@structref.register
class SimStateType(StateType):
    """The numba type of :class:`SimState`."""


class SimState(structref.StructRefProxy):
    """The compiled simulator's state (see the module docstring); built by
    :func:`new_state`."""


_FIELDS = (
    # The instance (read only).
    "n", "capacity", "release", "order", "gpus", "work", "slowdown", "best_rate",
    "predicted", "restore_s", "never_low", "total_gpus",
    # Jobs.
    "status", "rem", "att_work", "att_gpu", "rate", "seg_start0", "work_start", "version",
    "n_segments", "completion", "cur_off", "cur_len",
    # GPUs, running jobs, allocations and segments (pools grown by doubling).
    "free", "total_free", "run_list", "run_pos", "n_run", "pool_s", "pool_c", "pool_n",
    "seg_t", "seg_i", "seg_n",
    # Events and progress.
    "ev_t", "ev_i", "ev_n", "wake_version", "next_arrival", "finished", "code",
    # One decision: its starts (allocations at start_off/start_len in the pool), its
    # preemptions, and scratch.
    "starts", "start_off", "start_len", "n_starts", "preempts", "n_pre", "d_free", "out_s",
    "out_c",
)  # fmt: skip
structref.define_proxy(SimState, SimStateType, list(_FIELDS))


@njit(cache=True)
def new_state(
    capacity: Any,
    release: Any,
    order: Any,
    gpus: Any,
    work: Any,
    slowdown: Any,
    best_rate: Any,
    predicted: Any,
    restore_s: float,
    never_low: bool,
) -> Any:
    """The state before the first event: every job unreleased, every GPU free.

    ``order`` lists the jobs by release (stable); ``never_low`` says the predictions never
    fall short of the work (A-SRPT then watches no overrun).
    """
    n = release.shape[0]
    n_servers = capacity.shape[0]
    total_gpus = 0
    for s in range(n_servers):
        total_gpus += capacity[s]
    # What holds running jobs only is sized by the GPUs (a million-job run stays small).
    most = min(n, total_gpus)
    room = max(16, n)
    return SimState(
        n, capacity, release, order, gpus, work, slowdown, best_rate, predicted,
        float(restore_s), bool(never_low), total_gpus,
        np.zeros(n, np.int64), work.copy(), np.zeros(n), np.zeros(n), np.zeros(n),
        np.zeros(n), np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64),
        np.full(n, np.nan), np.zeros(n, np.int64), np.zeros(n, np.int64),
        capacity.copy(), total_gpus, np.empty(most, np.int64), np.full(n, -1, np.int64), 0,
        np.empty(room, np.int64), np.empty(room, np.int64), 0,
        np.empty((room, 2)), np.empty((room, 3), np.int64), 0,
        np.empty(max(16, 2 * most)), np.empty((max(16, 2 * most), 3), np.int64), 0, 0, 0, 0,
        OK,
        np.empty(most, np.int64), np.empty(most, np.int64), np.empty(most, np.int64), 0,
        np.empty(most, np.int64), 0, np.empty(n_servers, np.int64),
        np.empty(n_servers, np.int64), np.empty(n_servers, np.int64),
    )  # fmt: skip


@njit(cache=True)
def attained(s: Any, j: int, now: float) -> float:
    """Simulator.attained_work: the work ``j`` has done by ``now``."""
    if s.status[j] == RUNNING:
        busy = now - s.work_start[j]
        return s.att_work[j] + (busy * s.rate[j] if busy > 0 else 0.0)
    return s.att_work[j]


# --------------------------------------------------------------------------- placement
@njit(cache=True)
def consolidate(free: Any, gpus: int, out_s: Any, out_c: Any) -> int:
    """:func:`~asrpt_opt.placement.consolidate.consolidate` into ``out``; returns the number
    of servers used (0: too few GPUs free)."""
    n = free.shape[0]
    fit = -1
    for s in range(n):
        if free[s] >= gpus and (fit < 0 or free[s] < free[fit]):
            fit = s
    if fit >= 0:
        out_s[0] = fit
        out_c[0] = gpus
        return 1
    total = 0
    for s in range(n):
        total += free[s]
    if total < gpus:
        return 0
    k = _fill_fullest(free, gpus, out_s, out_c)
    # Sorted by server (insertion sort: a handful of entries).
    for a in range(1, k):
        s, c = out_s[a], out_c[a]
        b = a - 1
        while b >= 0 and out_s[b] > s:
            out_s[b + 1] = out_s[b]
            out_c[b + 1] = out_c[b]
            b -= 1
        out_s[b + 1] = s
        out_c[b + 1] = c
    return k


@njit(cache=True)
def _fill_fullest(free: Any, gpus: int, out_s: Any, out_c: Any) -> int:
    # Fullest servers first (lowest index among equals), filled whole until the next can
    # take the remainder; the remainder goes to the best fit among the servers not filled.
    n = free.shape[0]
    taken = np.zeros(n, np.bool_)
    need = gpus
    k = 0
    while True:
        best = -1
        for s in range(n):
            if not taken[s] and (best < 0 or free[s] > free[best]):
                best = s
        if free[best] >= need:
            last = -1
            for s in range(n):
                if not taken[s] and free[s] >= need and (last < 0 or free[s] < free[last]):
                    last = s
            out_s[k] = last
            out_c[k] = need
            return k + 1
        taken[best] = True
        out_s[k] = best
        out_c[k] = free[best]
        need -= free[best]
        k += 1


@njit(cache=True)
def free_preempted(s: Any, first: int, sign: int) -> int:
    """Give the GPUs of ``preempts[first:n_pre]`` back to ``d_free`` (``sign`` 1), or take
    them again (-1); returns their number of GPUs."""
    total = 0
    for v in range(first, s.n_pre):
        victim = s.preempts[v]
        for k in range(s.cur_off[victim], s.cur_off[victim] + s.cur_len[victim]):
            s.d_free[s.pool_s[k]] += sign * s.pool_c[k]
        total += s.gpus[victim]
    return total


@njit(cache=True)
def record_start(s: Any, a: int, used: int) -> None:
    """Start ``a`` of the decision gets the ``used`` entries of ``out_s``/``out_c``: they
    are taken from ``d_free`` and appended to the allocation pool."""
    while s.pool_n + used > s.pool_s.shape[0]:
        s.pool_s = grow(s.pool_s)
        s.pool_c = grow(s.pool_c)
    s.start_off[a] = s.pool_n
    s.start_len[a] = used
    for k in range(used):
        s.d_free[s.out_s[k]] -= s.out_c[k]
        s.pool_s[s.pool_n] = s.out_s[k]
        s.pool_c[s.pool_n] = s.out_c[k]
        s.pool_n += 1
