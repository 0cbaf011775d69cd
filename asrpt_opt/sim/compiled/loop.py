"""The compiled event loop: what :class:`~asrpt_opt.sim.engine.Simulator` does, for any
policy kernel, knowing none.

:func:`run_loop` processes the same events in the same order as the Python loop
(completions, arrivals, wake-ups, one decision per instant) and applies each decision the
same way (preemptions, then starts), with the same floating-point operations. What a policy
does it asks the policy's kernel through four hooks, each an ``@overload`` a kernel
registers for the numba type of its state (see the policy kernels in
:mod:`asrpt_opt.policies`):

- :func:`arrive` ``(policy, sim, job, now)``: a job is released (its status already waiting);
- :func:`finish` ``(policy, sim, job)``: a running job completed;
- :func:`advance` ``(policy, sim, now)``: once per instant, after the completions and before
  the arrivals;
- :func:`decide` ``(policy, sim, now) -> wake``: fill the decision's starts (with their
  allocations) and preemptions in ``sim``; return when to decide again (NaN: no wake-up);
  set ``sim.code`` to stop the run.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from asrpt_opt._numba import njit
from asrpt_opt._numba.heaps import grow, heap_pop, heapify, push
from asrpt_opt.sim.compiled.state import COMPLETION, IDLE_WAKES, OK, STALLED, WAKE
from asrpt_opt.sim.view import DONE, IDLE_WAKES_BASE, IDLE_WAKES_PER_JOB, RUNNING, WAITING

__all__ = ["advance", "arrive", "decide", "finish", "loop_for", "run_loop"]


def arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    """Hook: ``job`` is released at ``now`` (its status already waiting).

    Parameters
    ----------
    policy : structref
        The policy's compiled state (its numba type selects the implementation).
    sim : SimState
    job : int
    now : float
    """
    raise NotImplementedError


def finish(policy: Any, sim: Any, job: int) -> None:
    """Hook: running ``job`` completed.

    Parameters
    ----------
    policy : structref
        The policy's compiled state (its numba type selects the implementation).
    sim : SimState
    job : int
    """
    raise NotImplementedError


def advance(policy: Any, sim: Any, now: float) -> None:
    """Hook: time moved to ``now`` (after the completions, before the arrivals).

    Parameters
    ----------
    policy : structref
        The policy's compiled state (its numba type selects the implementation).
    sim : SimState
    now : float
    """
    raise NotImplementedError


def decide(policy: Any, sim: Any, now: float) -> float:
    """Hook: the decision at ``now``: fill ``sim``'s starts (their allocations appended to
    the pool) and preemptions; set ``sim.code`` to stop the run.

    Parameters
    ----------
    policy : structref
        The policy's compiled state (its numba type selects the implementation).
    sim : SimState
    now : float

    Returns
    -------
    float
        When to decide again (NaN: no wake-up).
    """
    raise NotImplementedError


def run_loop(s: Any, p: Any) -> Any:
    """Simulate from ``s`` (:func:`~asrpt_opt.sim.compiled.state.new_state`) with the policy
    state ``p``; returns ``(code, completion, seg_job, seg_start, seg_end, seg_off, seg_len,
    alloc_s, alloc_c)``: each segment's job, interval and allocation (``seg_len`` entries of
    ``alloc_s``/``alloc_c`` from ``seg_off``), in the order segments ended.

    Parameters
    ----------
    s : SimState
    p : structref
        The policy's compiled state; the loop compiled for its module runs it
        (:func:`loop_for`).

    Returns
    -------
    tuple
    """
    return loop_for(type(p).__module__)(s, p)


@functools.cache
def loop_for(module: str) -> Any:
    """The loop compiled for the policy states defined in ``module``, with its own cache.

    A cache index lists every state type its function was compiled for, and loading it
    imports their modules: one loop for every kernel made each compiled run import every
    kernel module (about 130 numba functions). Each kernel module's states now get their own
    copy of the loop, whose cache file is named after the module.

    Parameters
    ----------
    module : str
        The module of a policy state's class.

    Returns
    -------
    numba dispatcher
    """
    copy = types.FunctionType(_loop.__code__, _loop.__globals__, "run_loop")
    copy.__qualname__ = "run_loop_" + module.rsplit(".", 1)[-1]
    return njit(cache=True)(copy)


def _loop(s: Any, p: Any) -> Any:
    # run_loop's body, compiled once for each kernel module by loop_for.
    idle_wakes, limit = 0, IDLE_WAKES_BASE + IDLE_WAKES_PER_JOB * s.n
    while s.finished < s.n:
        t = _next_instant(s)
        if t == np.inf:
            s.code = STALLED
            break
        events_before = s.finished + s.next_arrival
        _complete(s, p, t)
        advance(p, s, t)
        _release(s, p, t)
        if s.finished == s.n:
            break
        if s.finished + s.next_arrival == events_before:
            idle_wakes += 1
            if idle_wakes > limit:
                s.code = IDLE_WAKES
                break
        s.n_starts = 0
        s.n_pre = 0
        wake = decide(p, s, t)
        if s.code != OK:
            break
        s.wake_version += 1
        _apply(s, t)
        if s.ev_n > 2 * s.n_run + 64:
            _drop_superseded(s)
        if not np.isnan(wake) and wake > t and wake < np.inf:
            s.ev_t, s.ev_i = push(s.ev_t, s.ev_i, s.ev_n, wake, WAKE, -1, s.wake_version)
            s.ev_n += 1
    n_seg, n_pool = s.seg_n, s.pool_n
    return (
        s.code,
        s.completion,
        s.seg_i[:n_seg, 0].copy(),
        s.seg_t[:n_seg, 0].copy(),
        s.seg_t[:n_seg, 1].copy(),
        s.seg_i[:n_seg, 1].copy(),
        s.seg_i[:n_seg, 2].copy(),
        s.pool_s[:n_pool].copy(),
        s.pool_c[:n_pool].copy(),
    )


@njit(cache=True)
def _next_instant(s: Any) -> float:
    # Drop superseded events; the next event or arrival.
    while s.ev_n > 0:
        kind, j, ver = s.ev_i[0, 0], s.ev_i[0, 1], s.ev_i[0, 2]
        if ver == (s.wake_version if kind == WAKE else s.version[j]):
            break
        heap_pop(s.ev_t, s.ev_i, s.ev_n)
        s.ev_n -= 1
    t = s.ev_t[0] if s.ev_n > 0 else np.inf
    if s.next_arrival < s.n and s.release[s.order[s.next_arrival]] < t:
        t = s.release[s.order[s.next_arrival]]
    return t


@njit(cache=True)
def _drop_superseded(s: Any) -> None:
    # Every preemption leaves its job's completion event behind, superseded: policies that
    # preempt thousands of jobs a decision would keep millions. Valid events (one per
    # running job and a wake-up) keep their order, which is a total one.
    k = 0
    for e in range(s.ev_n):
        kind, j, ver = s.ev_i[e, 0], s.ev_i[e, 1], s.ev_i[e, 2]
        if ver == (s.wake_version if kind == WAKE else s.version[j]):
            s.ev_t[k] = s.ev_t[e]
            s.ev_i[k] = s.ev_i[e]
            k += 1
    s.ev_n = k
    heapify(s.ev_t, s.ev_i, k)


@njit(cache=True)
def _complete(s: Any, p: Any, now: float) -> None:
    # The events due by now (within rounding): completions end their jobs.
    horizon = now + 1e-12 * (now if now > 1.0 else 1.0)
    while s.ev_n > 0 and s.ev_t[0] <= horizon:
        kind, j, ver = s.ev_i[0, 0], s.ev_i[0, 1], s.ev_i[0, 2]
        heap_pop(s.ev_t, s.ev_i, s.ev_n)
        s.ev_n -= 1
        if kind == COMPLETION and ver == s.version[j]:
            stop(s, j, now, True)
            s.total_free += s.gpus[j]
            s.finished += 1
            finish(p, s, j)


@njit(cache=True)
def _release(s: Any, p: Any, now: float) -> None:
    while s.next_arrival < s.n and s.release[s.order[s.next_arrival]] <= now:
        j = s.order[s.next_arrival]
        s.next_arrival += 1
        s.status[j] = WAITING
        arrive(p, s, j, now)


@njit(cache=True)
def stop(s: Any, j: int, now: float, finished: bool) -> None:
    """Simulator._stop: record the segment, account the work, free the GPUs and take ``j``
    out of the running list."""
    if now > s.seg_start0[j]:
        if s.seg_n == s.seg_t.shape[0]:
            s.seg_t, s.seg_i = grow(s.seg_t), grow(s.seg_i)
        s.seg_t[s.seg_n, 0] = s.seg_start0[j]
        s.seg_t[s.seg_n, 1] = now
        s.seg_i[s.seg_n, 0] = j
        s.seg_i[s.seg_n, 1] = s.cur_off[j]
        s.seg_i[s.seg_n, 2] = s.cur_len[j]
        s.seg_n += 1
        s.n_segments[j] += 1
    if finished:
        s.rem[j] = 0.0
        s.att_work[j] = s.work[j]
        s.completion[j] = now
        s.status[j] = DONE
    else:
        busy = now - s.work_start[j]
        done = busy * s.rate[j] if busy > 0 else 0.0
        s.rem[j] = max(s.rem[j] - done, 0.0)
        s.att_work[j] += done
        s.status[j] = WAITING
    s.att_gpu[j] += (now - s.seg_start0[j]) * s.gpus[j]
    for k in range(s.cur_off[j], s.cur_off[j] + s.cur_len[j]):
        s.free[s.pool_s[k]] += s.pool_c[k]
    s.version[j] += 1
    # Out of the running list (O(1): the last entry takes its place).
    p = s.run_pos[j]
    moved = s.run_list[s.n_run - 1]
    s.run_list[p] = moved
    s.run_pos[moved] = p
    s.run_pos[j] = -1
    s.n_run -= 1


@njit(cache=True)
def _apply(s: Any, now: float) -> None:
    # Simulator._apply: preemptions, then starts.
    for v in range(s.n_pre):
        j = s.preempts[v]
        stop(s, j, now, False)
        s.total_free += s.gpus[j]
    for a in range(s.n_starts):
        j = s.starts[a]
        for k in range(s.start_off[a], s.start_off[a] + s.start_len[a]):
            s.free[s.pool_s[k]] -= s.pool_c[k]
        s.total_free -= s.gpus[j]
        s.cur_off[j] = s.start_off[a]
        s.cur_len[j] = s.start_len[a]
        speed = 1.0 if s.start_len[a] == 1 else 1.0 / s.slowdown[j]
        ws = now + s.restore_s if s.n_segments[j] > 0 else now
        s.rate[j] = speed
        s.seg_start0[j] = now
        s.work_start[j] = ws
        s.status[j] = RUNNING
        s.run_list[s.n_run] = j
        s.run_pos[j] = s.n_run
        s.n_run += 1
        s.version[j] += 1
        s.ev_t, s.ev_i = push(
            s.ev_t, s.ev_i, s.ev_n, ws + s.rem[j] / speed, COMPLETION, j, s.version[j]
        )
        s.ev_n += 1
