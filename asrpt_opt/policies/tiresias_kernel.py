"""The compiled form of Tiresias' discretized 2D-LAS and its Gittins variant
(:class:`~asrpt_opt.policies.tiresias.TiresiasDLAS`,
:class:`~asrpt_opt.policies.tiresias.TiresiasGittins`), for
:mod:`asrpt_opt.sim.compiled.loop`.

The same queues, the same updates of whole attained seconds, the same walks, orders and
queue jumps, step for step; the starts are consolidated on the GPUs free once the
preemptions are applied (``TiresiasDLAS._allocate``). The job-size sample behind the Gittins
index is :mod:`asrpt_opt.policies._gittins_sample_kernel`'s.

References
----------
.. [1] J. Gu, M. Chowdhury, K. G. Shin, Y. Zhu, M. Jeon, J. Qian, H. Liu, C. Guo, "Tiresias:
   A GPU cluster manager for distributed deep learning", NSDI 2019.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.policies._gittins_sample_kernel import (
    gittins_index,
    new_sample,
    sample_add,
    sample_count,
    sample_total,
)
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import OVERFLOW, consolidate, free_preempted, record_start

__all__ = ["TiresiasState", "new_state", "sort_by_index"]

#: Attained GPU-seconds and sums of sizes stay below this: Python's integers are unbounded,
#: the kernel's are 64-bit, and a run that would pass it stops (OVERFLOW) instead of wrapping.
_SAFE = 1 << 62
_SAFE_FLOAT = float(_SAFE)
#: Moves per job an insertion sort of a queue may make before a merge sort takes over.
_SORT_MOVES = 8


@structref.register
class TiresiasStateType(StateType):
    """The numba type of :class:`TiresiasState`."""


class TiresiasState(structref.StructRefProxy):
    """Tiresias' queues and, for its Gittins order, the job-size sample (:func:`new_state`)."""


structref.define_proxy(TiresiasState, TiresiasStateType, ["queues", "sample", "gittins", "learn"])


@njit(cache=True)
def new_state(s: Any, limits: Any, gittins: bool, delta: int, sizes: Any) -> Any:
    """Empty queues with ``limits`` for the jobs of ``s``; under ``gittins``, the sample
    ``sizes`` (learned from the completed jobs when empty) with quantum ``delta``."""
    queues = _new_queues(s.n, limits, s.release)
    sample = new_sample(s.n + sizes.shape[0] if gittins else 0, max(delta, 1))
    for size in sizes:
        sample_add(sample, size)
    return TiresiasState(queues, sample, gittins, gittins and sizes.shape[0] == 0)


@implement(loop.arrive, TiresiasStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    arrive(policy.queues, job, now)


@implement(loop.finish, TiresiasStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    leave(policy.queues, job, policy.sample, policy.learn, sim.gpus)


@implement(loop.advance, TiresiasStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    pass


@implement(loop.decide, TiresiasStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    return _decide_and_place(policy, sim, now)


@njit(cache=True)
def _decide_and_place(policy: Any, sim: Any, now: float) -> float:
    s = sim
    n_starts, n_pre, wake = decide(
        policy.queues, policy.sample, policy.gittins, now, s.gpus, s.total_gpus, s.starts,
        s.preempts,
    )  # fmt: skip
    if policy.queues[4][1]:
        s.code = OVERFLOW
        return np.nan
    s.n_starts = n_starts
    s.n_pre = n_pre
    # TiresiasDLAS._allocate: consolidate the starts on the GPUs the preempted free.
    s.d_free[:] = s.free
    free_preempted(s, 0, 1)
    for a in range(n_starts):
        used = consolidate(s.d_free, s.gpus[s.starts[a]], s.out_s, s.out_c)
        record_start(s, a, used)
    return wake


# --------------------------------------------------------------------------- policy state
@njit(cache=True)
def _new_queues(n: int, limits: Any, release: Any) -> Any:
    """The policy's state for ``n`` jobs: ``(limits, queues, queue lengths, runnable jobs,
    counts, queue of each job, executed whole seconds, last check, running flags, whole
    releases, marks)``. ``counts`` holds the number of runnable jobs and 1 once the run
    needs integers past the core's (:data:`_SAFE`)."""
    n_queues = limits.shape[0] + 1
    queues = np.empty((n_queues, max(n, 1)), np.int64)
    whole_release = np.empty(n, np.int64)
    for j in range(n):
        whole_release[j] = int(release[j])
    return (
        limits,
        queues,
        np.zeros(n_queues, np.int64),
        np.empty(max(n, 1), np.int64),
        np.zeros(2, np.int64),
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.zeros(n),
        np.zeros(n, np.bool_),
        whole_release,
        np.zeros(n, np.bool_),
    )


@njit(cache=True)
def arrive(state: Any, j: int, now: float) -> None:
    """``on_arrival``: the job joins the runnable jobs and the end of queue 0."""
    _, queues, qlen, runnable, counts, _, _, last_check, _, _, _ = state
    runnable[counts[0]] = j
    counts[0] += 1
    queues[0, qlen[0]] = j
    qlen[0] += 1
    last_check[j] = now


@njit(cache=True)
def leave(state: Any, j: int, sample: Any, learn: bool, gpus: Any) -> None:
    """``on_completion``: learn the job's size (when learning online) and forget the job."""
    _, queues, qlen, runnable, counts, queue_of, executed, _, running, _, _ = state
    if learn:
        size = max(1, executed[j] * gpus[j])
        if sample_total(sample) >= _SAFE - size:
            counts[1] = 1  # the sum of the sizes would pass 64-bit integers
        else:
            sample_add(sample, size)
    _remove(runnable, counts[0], j)
    counts[0] -= 1
    q = queue_of[j]
    _remove(queues[q], qlen[q], j)
    qlen[q] -= 1
    running[j] = False


@njit(cache=True)
def _remove(items: Any, size: int, j: int) -> None:
    # list.remove: the first occurrence, the rest moved up.
    k = 0
    while items[k] != j:
        k += 1
    for m in range(k, size - 1):
        items[m] = items[m + 1]


@njit(cache=True)
def decide(
    state: Any,
    sample: Any,
    gittins: bool,
    now: float,
    gpus: Any,
    total_gpus: int,
    starts: Any,
    preempts: Any,
) -> Any:
    """``TiresiasDLAS.decide`` up to the allocation: returns ``(starts, preemptions, wake)``
    with the jobs to start (in queue order) in ``starts`` and those to preempt (in arrival
    order) in ``preempts``; ``wake`` is NaN for none."""
    limits, queues, qlen, runnable, counts, queue_of, executed, last_check, running, rel, mark = (
        state
    )
    if counts[1]:
        return 0, 0, np.nan
    n_queues = qlen.shape[0]
    last_queue = n_queues - 1
    n_run = counts[0]
    # _update: whole seconds attained, at most one demotion per job.
    for r in range(n_run):
        j = runnable[r]
        if running[j]:
            since = now - last_check[j]
            # In floating point (a multiplication, no division), a factor 2 short of int64.
            if (executed[j] + since) * gpus[j] >= _SAFE_FLOAT:
                counts[1] = 1  # attained GPU-seconds past 64-bit integers: stop here
                return 0, 0, np.nan
            executed[j] += int(since)
            q = queue_of[j]
            if q < last_queue and executed[j] * gpus[j] >= limits[q]:
                _remove(queues[q], qlen[q], j)
                qlen[q] -= 1
                queues[q + 1, qlen[q + 1]] = j
                qlen[q + 1] += 1
                queue_of[j] = q + 1
        last_check[j] = now
    # Walk the queues from the top, each in its order, running every job that fits.
    free_count = total_gpus
    for q in range(n_queues):
        if gittins and sample_count(sample) > 0 and qlen[q] >= 2:
            _gittins_order(queues[q], qlen[q], sample, executed, gpus, rel)
        for k in range(qlen[q]):
            j = queues[q, k]
            if free_count >= gpus[j]:
                mark[j] = True
                free_count -= gpus[j]
    n_pre = 0
    for r in range(n_run):
        j = runnable[r]
        if running[j] and not mark[j]:
            preempts[n_pre] = j
            n_pre += 1
    n_starts = 0
    for q in range(n_queues):
        for k in range(qlen[q]):
            j = queues[q, k]
            if mark[j]:
                mark[j] = False
                if not running[j]:
                    starts[n_starts] = j
                    n_starts += 1
    for v in range(n_pre):
        running[preempts[v]] = False
    for a in range(n_starts):
        running[starts[a]] = True
    # Waiting jobs move behind the running ones, keeping their order.
    for q in range(n_queues):
        m = qlen[q]
        waiting = np.empty(m, np.int64)
        n_wait = 0
        k = 0
        for i in range(m):
            j = queues[q, i]
            if running[j]:
                queues[q, k] = j
                k += 1
            else:
                waiting[n_wait] = j
                n_wait += 1
        queues[q, k:m] = waiting[:n_wait]
    # _next_jump: the earliest queue jump, if after now.
    wake = np.inf
    found = False
    for r in range(n_run):
        j = runnable[r]
        q = queue_of[j]
        if running[j] and q < last_queue:
            jump = now + float((limits[q] - executed[j]) // gpus[j])
            if not found or jump < wake:
                wake = jump
                found = True
    if not found or not wake > now:
        wake = np.nan
    return n_starts, n_pre, wake


@njit(cache=True)
def _gittins_order(
    queue: Any, m: int, sample: Any, executed: Any, gpus: Any, release: Any
) -> None:
    # TiresiasGittins._order: higher index first, then the earlier release, then queue
    # order.
    values, prefix, length, order, before_n, before_s, meta, top = sample
    index = np.empty(m)
    whole = np.empty(m, np.int64)
    for k in range(m):
        j = queue[k]
        attained = executed[j] * gpus[j]
        index[k] = gittins_index(
            values, prefix, length, order, before_n, before_s, meta, top, attained
        )
        whole[k] = release[j]
    sort_by_index(queue, m, index, whole)


@njit(cache=True)
def sort_by_index(queue: Any, m: int, index: Any, release: Any) -> None:
    """Sort ``queue[:m]`` by higher ``index`` first, then the earlier ``release``, then queue
    order (stable), moving ``index`` and ``release`` (aligned with the queue) along.

    A queue's order persists from one decision to the next and the indices move little in
    between, so an insertion sort has few moves to make. It gives up after
    :data:`_SORT_MOVES` moves per job, when a full sort is cheaper; the stable sort it falls
    back on yields the same order, since the insertions so far kept equal keys in queue
    order.
    """
    budget = _SORT_MOVES * m
    for i in range(1, m):
        x, r, j = index[i], release[i], queue[i]
        k = i - 1
        while k >= 0 and (index[k] < x or (index[k] == x and release[k] > r)):
            index[k + 1] = index[k]
            release[k + 1] = release[k]
            queue[k + 1] = queue[k]
            k -= 1
        index[k + 1] = x
        release[k + 1] = r
        queue[k + 1] = j
        budget -= i - 1 - k
        if budget < 0:
            _merge_sort(queue, m, index, release)
            return


@njit(cache=True)
def _merge_sort(queue: Any, m: int, index: Any, release: Any) -> None:
    # The order of sort_by_index in O(m log m): stable sorts on the release, then on the
    # index.
    rank = np.argsort(release[:m], kind="mergesort")
    rank = rank[np.argsort(-index[:m][rank], kind="mergesort")]
    queue[:m] = queue[:m][rank]
    index[:m] = index[:m][rank]
    release[:m] = release[:m][rank]
