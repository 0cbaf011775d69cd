"""The compiled form of Tiresias' discretized 2D-LAS and its Gittins variant
(:class:`~asrpt_opt.policies.tiresias.TiresiasDLAS`,
:class:`~asrpt_opt.policies.tiresias.TiresiasGittins`), for
:mod:`asrpt_opt.sim.compiled.loop`.

The same queues, updates of whole attained seconds, walks, orders and queue jumps, with the
same results; the starts are consolidated on the GPUs free once the preemptions are applied
(``TiresiasDLAS._allocate``). A decision touches the running jobs and the part of each queue
the walk reads, not every runnable job: under bursts thousands wait behind the running ones.
The job-size sample behind the Gittins index is
:mod:`asrpt_opt.policies._gittins_sample_kernel`'s.

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
    """The policy's state for ``n`` jobs: ``(limits, queues, queue lengths, running jobs,
    counts, queue of each job, executed whole seconds, last check, running flags, whole
    releases, marks, position among the running jobs, arrival rank, scratch, position in
    its queue, jobs in each queue)``. ``counts`` holds the number of running jobs, 1 once
    the run needs integers past the core's (:data:`_SAFE`), the arrivals so far and the
    decisions so far (a job is marked to run at a decision when its mark is that decision's
    number). A job that leaves its queue leaves a hole (-1) there, skipped, until the holes
    are as many as the jobs: a queue holds thousands of waiting jobs behind the running
    ones, which would move up at every completion."""
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
        np.zeros(4, np.int64),
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.zeros(n),
        np.zeros(n, np.bool_),
        whole_release,
        np.full(n, -1, np.int64),
        np.full(n, -1, np.int64),
        np.zeros(n, np.int64),
        np.empty(max(n, 1), np.int64),
        np.zeros(n, np.int64),
        np.zeros(n_queues, np.int64),
    )


@njit(cache=True)
def arrive(state: Any, j: int, now: float) -> None:
    """``on_arrival``: the job joins the end of queue 0."""
    counts, arrived = state[4], state[12]
    _append(state, j, 0)
    arrived[j] = counts[2]
    counts[2] += 1


@njit(cache=True)
def leave(state: Any, j: int, sample: Any, learn: bool, gpus: Any) -> None:
    """``on_completion``: learn the job's size (when learning online) and forget the job."""
    counts, executed, running = state[4], state[6], state[8]
    if learn:
        size = max(1, executed[j] * gpus[j])
        if sample_total(sample) >= _SAFE - size:
            counts[1] = 1  # the sum of the sizes would pass 64-bit integers
        else:
            sample_add(sample, size)
    _drop(state, j)
    if running[j]:
        _stop_running(state, j)


@njit(cache=True)
def _append(state: Any, j: int, q: int) -> None:
    # ``j`` joins the end of queue ``q``.
    queues, qlen, queue_of, qpos, qlive = state[1], state[2], state[5], state[14], state[15]
    if qlen[q] == queues.shape[1]:
        _compact(state, q)
    queues[q, qlen[q]] = j
    qpos[j] = qlen[q]
    qlen[q] += 1
    qlive[q] += 1
    queue_of[j] = q


@njit(cache=True)
def _drop(state: Any, j: int) -> None:
    # ``j`` leaves its queue, the others keep their order: a hole, and the holes dropped
    # once they are as many as the jobs.
    queues, qlen, q, qlive = state[1], state[2], state[5][j], state[15]
    queues[q, state[14][j]] = -1
    qlive[q] -= 1
    if qlen[q] > 2 * qlive[q] + 64:
        _compact(state, q)


@njit(cache=True)
def _compact(state: Any, q: int) -> None:
    # Queue ``q`` without its holes.
    queue, qlen, qpos = state[1][q], state[2], state[14]
    k = 0
    for i in range(qlen[q]):
        j = queue[i]
        if j >= 0:
            queue[k] = j
            qpos[j] = k
            k += 1
    qlen[q] = k


@njit(cache=True)
def _start_running(state: Any, j: int, now: float) -> None:
    # ``j`` joins the running jobs (in no particular order: each use sorts or takes a
    # minimum); a job's seconds count from the check at which it starts.
    run, counts, last_check, running, run_pos = (
        state[3], state[4], state[7], state[8], state[11]
    )  # fmt: skip
    run[counts[0]] = j
    run_pos[j] = counts[0]
    counts[0] += 1
    running[j] = True
    last_check[j] = now


@njit(cache=True)
def _stop_running(state: Any, j: int) -> None:
    run, counts, running, run_pos = state[3], state[4], state[8], state[11]
    k = run_pos[j]
    moved = run[counts[0] - 1]
    run[k] = moved
    run_pos[moved] = k
    run_pos[j] = -1
    counts[0] -= 1
    running[j] = False


@njit(cache=True)
def _by_arrival(jobs: Any, m: int, arrived: Any) -> None:
    # ``jobs[:m]`` (a few) in arrival order, as the reference iterates its runnable jobs.
    for i in range(1, m):
        j = jobs[i]
        k = i - 1
        while k >= 0 and arrived[jobs[k]] > arrived[j]:
            jobs[k + 1] = jobs[k]
            k -= 1
        jobs[k + 1] = j


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
    order) in ``preempts``; ``wake`` is NaN for none.

    The reference updates, walks and re-orders every runnable job at every decision; the
    same steps here touch the running jobs and each queue's part the walk read: only running
    jobs gain seconds, the walk stops once no GPU is free, and a queue changes order only
    between its first job left out and its last job chosen.
    """
    counts = state[4]
    if counts[1] or not _update(state, now, gpus, preempts):
        return 0, 0, np.nan
    counts[3] += 1
    n_starts, n_kept = _walk(state, sample, gittins, gpus, total_gpus, starts)
    run, mark, arrived = state[3], state[10], state[12]
    n_pre = 0
    for r in range(counts[0] if n_kept < counts[0] else 0):  # no running job left out: none
        if mark[run[r]] != counts[3]:
            preempts[n_pre] = run[r]
            n_pre += 1
    _by_arrival(preempts, n_pre, arrived)
    for v in range(n_pre):
        _stop_running(state, preempts[v])
    for a in range(n_starts):
        _start_running(state, starts[a], now)
    return n_starts, n_pre, _next_jump(state, now, gpus)


@njit(cache=True)
def _update(state: Any, now: float, gpus: Any, demoted: Any) -> bool:
    # _update: whole seconds attained by the running jobs, at most one demotion per job, to
    # the end of the next queue in arrival order (``demoted``: scratch). False: the run
    # needs integers past 64 bits.
    limits, qlen, run, counts, queue_of, executed, last_check = (
        state[0], state[2], state[3], state[4], state[5], state[6], state[7]
    )  # fmt: skip
    last_queue = qlen.shape[0] - 1
    n_d = 0
    for r in range(counts[0]):
        j = run[r]
        since = now - last_check[j]
        # In floating point (a multiplication, no division), a factor 2 short of int64.
        if (executed[j] + since) * gpus[j] >= _SAFE_FLOAT:
            counts[1] = 1  # attained GPU-seconds past 64-bit integers: stop here
            return False
        executed[j] += int(since)
        last_check[j] = now
        q = queue_of[j]
        if q < last_queue and executed[j] * gpus[j] >= limits[q]:
            demoted[n_d] = j
            n_d += 1
    _by_arrival(demoted, n_d, state[12])
    for i in range(n_d):
        j = demoted[i]
        q = queue_of[j]
        _drop(state, j)
        _append(state, j, q + 1)
    return True


@njit(cache=True)
def _walk(state: Any, sample: Any, gittins: bool, gpus: Any, total_gpus: int, starts: Any) -> Any:
    # Walk the queues from the top, each in its order (Gittins' first), marking every job
    # that fits; the chosen waiting jobs are the starts, in walk order. Then the jobs left
    # out move behind the chosen ones in each queue, in order. Returns the number of starts
    # and of running jobs chosen.
    queues, qlen, executed, running, rel, mark = (
        state[1], state[2], state[6], state[8], state[9], state[10]
    )  # fmt: skip
    decision = state[4][3]
    free_count = total_gpus
    n_starts, n_kept = 0, 0
    for q in range(qlen.shape[0]):
        if gittins and sample_count(sample) > 0 and state[15][q] >= 2:
            _compact(state, q)
            _gittins_order(queues[q], qlen[q], sample, executed, gpus, rel)
            _place(queues[q], 0, qlen[q], state[14])
        if free_count == 0:
            continue  # no job fits any more: the rest of the walk chooses nothing
        first_out, last_in = -1, -1
        for k in range(qlen[q]):
            j = queues[q, k]
            if j < 0:
                continue
            if free_count >= gpus[j]:
                mark[j] = decision
                free_count -= gpus[j]
                last_in = k
                if running[j]:
                    n_kept += 1
                else:
                    starts[n_starts] = j
                    n_starts += 1
                if free_count == 0:
                    break
            elif first_out < 0:
                first_out = k
        if 0 <= first_out < last_in:
            _partition(queues[q], first_out, last_in + 1, mark, decision, state[13])
            _place(queues[q], first_out, last_in + 1, state[14])
    return n_starts, n_kept


@njit(cache=True)
def _partition(queue: Any, lo: int, hi: int, mark: Any, decision: int, scratch: Any) -> None:
    # queue[lo:hi], the chosen jobs first and then the others (and holes), each in order.
    k, n_out = lo, 0
    for i in range(lo, hi):
        j = queue[i]
        if j >= 0 and mark[j] == decision:
            queue[k] = j
            k += 1
        else:
            scratch[n_out] = j
            n_out += 1
    queue[k:hi] = scratch[:n_out]


@njit(cache=True)
def _place(queue: Any, lo: int, hi: int, qpos: Any) -> None:
    # The positions of the jobs in queue[lo:hi], after they moved.
    for i in range(lo, hi):
        if queue[i] >= 0:
            qpos[queue[i]] = i


@njit(cache=True)
def _next_jump(state: Any, now: float, gpus: Any) -> float:
    # _next_jump: the earliest queue jump of a running job, if after now (NaN: none).
    limits, qlen, run, counts, queue_of, executed = (
        state[0], state[2], state[3], state[4], state[5], state[6]
    )  # fmt: skip
    last_queue = qlen.shape[0] - 1
    wake = np.inf
    found = False
    for r in range(counts[0]):
        j = run[r]
        q = queue_of[j]
        if q < last_queue:
            jump = now + float((limits[q] - executed[j]) // gpus[j])
            if not found or jump < wake:
                wake = jump
                found = True
    if not found or not wake > now:
        wake = np.nan
    return wake


@njit(cache=True)
def _gittins_order(
    queue: Any, m: int, sample: Any, executed: Any, gpus: Any, release: Any
) -> None:
    # TiresiasGittins._order: higher index first, then the earlier release, then queue
    # order.
    values, prefix, length, order, before_n, before_s, meta, top = sample
    index = np.empty(m)
    whole = np.empty(m, np.int64)
    last, value = -1, 0.0
    for k in range(m):
        j = queue[k]
        attained = executed[j] * gpus[j]
        # Equal service, equal index: the jobs that never ran sit together, thousands of
        # them in a burst, and so do those that ran the same whole seconds on one width.
        if attained != last:
            last = attained
            value = gittins_index(
                values, prefix, length, order, before_n, before_s, meta, top, attained
            )
        index[k] = value
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
