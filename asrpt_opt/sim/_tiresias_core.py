"""Tiresias' discretized 2D-LAS and its Gittins variant, compiled (numba).

The compiled counterparts of :class:`~asrpt_opt.policies.tiresias.TiresiasDLAS` and
:class:`~asrpt_opt.policies.tiresias.TiresiasGittins`: the same queues, the same updates of
whole attained seconds, the same walks, orders and queue jumps, step for step.
:func:`asrpt_opt.sim._core.run_core` calls :func:`arrive`, :func:`leave` and :func:`decide`
where the Python loop calls the policy's ``on_arrival``, ``on_completion`` and ``decide``.

The job-size sample behind the Gittins index is kept in sorted blocks with in-block and
per-block prefix sums: a size learned at a completion costs O(sqrt n) and an index O(log n),
where the Python policy's sorted array costs O(n) per completion (numpy) and the reference
rebuilds its whole table.

Numba caches :func:`~asrpt_opt.sim._core.run_core` with these functions compiled in, and
its cache follows ``_core.py`` only: after editing this module, clear the ``.nbi``/``.nbc``
files under ``asrpt_opt/sim/__pycache__`` (an installed release rewrites both files).

References
----------
.. [1] J. Gu, M. Chowdhury, K. G. Shin, Y. Zhu, M. Jeon, J. Qian, H. Liu, C. Guo, "Tiresias:
   A GPU cluster manager for distributed deep learning", NSDI 2019.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "arrive",
    "decide",
    "gittins_index",
    "job_index",
    "learn_size",
    "leave",
    "new_sample",
    "new_state",
    "sample_add",
]

_BLOCK = 256  # sizes per sample block at most; a full block splits into two halves
#: Attained GPU-seconds and sums of sizes stay below this: Python's integers are unbounded,
#: the core's are 64-bit, and a run that would pass it stops (OVERFLOW) instead of wrapping.
_SAFE = 1 << 62
_SAFE_FLOAT = float(_SAFE)


# --------------------------------------------------------------------------- policy state
@njit(cache=True)
def new_state(n: int, limits: Any, release: Any) -> Any:
    """The policy's state for ``n`` jobs: ``(limits, queues, queue lengths, runnable jobs,
    counts, queue of each job, executed whole seconds, last check, running flags, whole
    releases, marks, learned sizes, cached brackets, cached indices)``. ``counts`` holds the
    number of runnable jobs and 1 once the run needs integers past the core's
    (:data:`_SAFE`); the last three are :func:`job_index`'s."""
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
        np.zeros((3, n + 1), np.int64),
        np.full((6, n), -1, np.int64),
        np.zeros(n),
    )


@njit(cache=True)
def arrive(state: Any, j: int, now: float) -> None:
    """``on_arrival``: the job joins the runnable jobs and the end of queue 0."""
    _, queues, qlen, runnable, counts, _, _, last_check, _, _, _, _, _, _ = state
    runnable[counts[0]] = j
    counts[0] += 1
    queues[0, qlen[0]] = j
    qlen[0] += 1
    last_check[j] = now


@njit(cache=True)
def leave(state: Any, j: int, sample: Any, learn: bool, gpus: Any) -> None:
    """``on_completion``: learn the job's size (when learning online) and forget the job."""
    _, queues, qlen, runnable, counts, queue_of, executed, _, running, _, _, log, _, _ = state
    if learn:
        size = max(1, executed[j] * gpus[j])
        if _total(sample) >= _SAFE - size:
            counts[1] = 1  # the sum of the sizes would pass 64-bit integers
        else:
            learn_size(sample, log, size)
    _remove(runnable, counts[0], j)
    counts[0] -= 1
    q = queue_of[j]
    _remove(queues[q], qlen[q], j)
    qlen[q] -= 1
    running[j] = False


@njit(cache=True)
def learn_size(sample: Any, log: Any, size: int) -> None:
    """Add a learned size to the sample and to ``log``, the sizes learned with the count, sum
    and largest size after each, by which a cached index follows the sample
    (:func:`job_index`)."""
    v = _count(sample)
    sample_add(sample, size)
    log[0, v] = size
    log[1, v] = _total(sample)
    log[2, v] = max(size, log[2, v - 1]) if v else size


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
    limits, queues, qlen, runnable, counts, queue_of, executed, last_check, running, _, mark = (
        state[:11]
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
        if gittins and _count(sample) > 0 and qlen[q] >= 2:
            _gittins_order(queues[q], qlen[q], sample, state, gpus)
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
def _gittins_order(queue: Any, m: int, sample: Any, state: Any, gpus: Any) -> None:
    # TiresiasGittins._order: higher index first, then the earlier release, then queue
    # order: a stable sort on (-index, release).
    executed, release, log, brackets, cached = state[6], state[9], state[11], state[12], state[13]
    index = np.empty(m)
    whole = np.empty(m, np.int64)
    for k in range(m):
        j = queue[k]
        index[k] = job_index(j, executed[j] * gpus[j], sample, log, brackets, cached)
        whole[k] = release[j]
    # The queue is a few sorted runs: the previous decision sorted it, then moved its waiting
    # jobs behind its running ones (two runs, if no index changed). A natural merge sort
    # costs O(m log runs) and is stable.
    rank = np.arange(m)
    bounds = np.empty(m + 1, np.int64)
    n_runs = 0
    bounds[0] = 0
    for i in range(1, m):
        if _before(rank[i], rank[i - 1], index, whole):
            n_runs += 1
            bounds[n_runs] = i
    if n_runs == 0:
        return  # already in order
    n_runs += 1
    bounds[n_runs] = m
    spare = np.empty(m, np.int64)
    while n_runs > 1:
        merged = 0
        for r in range(0, n_runs - 1, 2):
            lo, mid, hi = bounds[r], bounds[r + 1], bounds[r + 2]
            i, k, out = lo, mid, lo
            while i < mid and k < hi:
                # Ties go to the left run: stable.
                if _before(rank[k], rank[i], index, whole):
                    spare[out] = rank[k]
                    k += 1
                else:
                    spare[out] = rank[i]
                    i += 1
                out += 1
            spare[out : out + mid - i] = rank[i:mid]
            out += mid - i
            spare[out : out + hi - k] = rank[k:hi]
            bounds[merged] = lo
            merged += 1
        if n_runs % 2:
            lo = bounds[n_runs - 1]
            spare[lo:m] = rank[lo:m]
            bounds[merged] = lo
            merged += 1
        bounds[merged] = m
        n_runs = merged
        rank, spare = spare, rank
    ordered = queue[:m][rank]
    queue[:m] = ordered


@njit(cache=True, inline="always")
def _before(a: int, b: int, index: Any, whole: Any) -> bool:
    # Position a goes strictly before position b: a higher index, or the same and an
    # earlier release.
    return index[a] > index[b] or (index[a] == index[b] and whole[a] < whole[b])


_LAG = 16  # learned sizes a cached index follows one by one; past that, two rank queries


@njit(cache=True)
def job_index(j: int, attained: int, sample: Any, log: Any, brackets: Any, cached: Any) -> float:
    """:func:`gittins_index` of job ``j``'s ``attained`` GPU-seconds (which never decrease
    from one call to the next), from what the job's previous index left in ``brackets`` and
    ``cached``.

    The index depends on the attained service only through its bracket between two sizes of
    the sample, and on the sample through five whole numbers: the sizes at most the attained
    service and their sum, the first size above it, the sizes up to that size - 1 + delta
    and their sum. While the service stays in its bracket, those follow each size learned
    since (``log``, :func:`learn_size`) in O(1), where a fresh index costs two rank queries.
    """
    values, prefix, length, order, before_n, before_s, meta = sample
    num, delta = meta[1], meta[2]
    ver = brackets[0, j]
    above = brackets[3, j]
    if ver >= 0 and (above < 0 or attained < above) and num - ver <= _LAG:
        if ver == num:
            return cached[j]
        lo, below_lo, hi, below_hi = brackets[1, j], brackets[2, j], brackets[4, j], brackets[5, j]
        fresh = False
        for v in range(ver, num):
            size, total, last = log[0, v], log[1, v], log[2, v]
            if size <= attained:
                lo += 1
                below_lo += size
            elif above < 0 or size < above:
                above = size
                nxt = above - 1 + delta
                if nxt > last - 1:
                    hi = v
                    below_hi = total - last
                    continue
                fresh = True  # the new bracket's end needs a rank query
                break
            if above < 0:
                continue  # past every size: index 0
            nxt = above - 1 + delta
            if nxt > last - 1:
                hi = v
                below_hi = total - last
            elif nxt > log[2, v - 1] - 1:
                hi = v  # every earlier size, not this one
                below_hi = log[1, v - 1]
            elif size <= nxt:
                hi += 1
                below_hi += size
        if not fresh:
            return _remember(j, num, lo, below_lo, above, hi, below_hi, delta, brackets, cached)
    lo, below_lo, above = _rank_sum(
        values, prefix, length, order, before_n, before_s, meta, attained
    )
    hi = below_hi = 0
    if lo < num:
        b = order[meta[0] - 1]
        last = values[b, length[b] - 1]
        nxt = above - 1 + delta
        if nxt > last - 1:
            hi = num - 1
            below_hi = before_s[meta[0]] - last
        else:
            hi, below_hi, _ = _rank_sum(
                values, prefix, length, order, before_n, before_s, meta, nxt
            )
    return _remember(j, num, lo, below_lo, above, hi, below_hi, delta, brackets, cached)


@njit(cache=True, inline="always")
def _remember(
    j: int,
    num: int,
    lo: int,
    below_lo: int,
    above: int,
    hi: int,
    below_hi: int,
    delta: int,
    brackets: Any,
    cached: Any,
) -> float:
    brackets[0, j] = num
    brackets[1, j] = lo
    brackets[2, j] = below_lo
    brackets[3, j] = above
    brackets[4, j] = hi
    brackets[5, j] = below_hi
    index = _index_of(num, lo, below_lo, hi, below_hi, delta)
    cached[j] = index
    return index


@njit(cache=True, inline="always")
def _index_of(num: int, lo: int, below_lo: int, hi: int, below_hi: int, delta: int) -> float:
    # The reference's arithmetic, rounded as Python 2 rounds; 0 past the largest size.
    if lo == num:
        return 0.0
    p = np.floor((hi - lo) / (num - lo) * 100000.0 + 0.5) / 100000.0
    e = float((below_hi - below_lo + delta * (num - hi)) // (num - lo))
    return np.floor(p * 1000000 / e * 10000.0 + 0.5) / 10000.0


# --------------------------------------------------------------------------- size sample
@njit(cache=True)
def new_sample(capacity: int, delta: int) -> Any:
    """An empty sample for up to ``capacity`` sizes: ``(values, in-block prefix sums, block
    lengths, blocks in order, counts before each block, sums before each block, [blocks,
    sizes, delta])``."""
    # Blocks split only when full, into halves: all but the first hold half a block or more.
    n_blocks = capacity // (_BLOCK // 2) + 2
    meta = np.zeros(3, np.int64)
    meta[2] = delta
    return (
        np.empty((n_blocks, _BLOCK), np.int64),
        np.zeros((n_blocks, _BLOCK + 1), np.int64),
        np.zeros(n_blocks, np.int64),
        np.empty(n_blocks, np.int64),
        np.zeros(n_blocks + 1, np.int64),
        np.zeros(n_blocks + 1, np.int64),
        meta,
    )


@njit(cache=True, inline="always")
def _count(sample: Any) -> int:
    # Sizes in the sample.
    return sample[6][1]


@njit(cache=True, inline="always")
def _total(sample: Any) -> int:
    # Their sum: the sum before the block past the last.
    return sample[5][sample[6][0]]


@njit(cache=True, inline="always")
def _block_above(values: Any, length: Any, order: Any, n_blocks: int, x: int) -> int:
    # The first block (position in order) whose largest size is above x; the number of
    # blocks when none is.
    lo, hi = 0, n_blocks
    while lo < hi:
        mid = (lo + hi) >> 1
        b = order[mid]
        if values[b, length[b] - 1] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _in_block(values: Any, b: int, size: int, x: int) -> int:
    # Sizes of block b at most x (bisect_right), without branches to mispredict.
    if size == 0 or values[b, 0] > x:
        return 0
    base = 0
    while size > 1:
        half = size >> 1
        base = base + half if values[b, base + half] <= x else base
        size -= half
    return base + 1


@njit(cache=True)
def sample_add(sample: Any, size: int) -> None:
    """Insert a size: O(block) in its block, O(blocks) for the sums before each block."""
    values, prefix, length, order, _, _, meta = sample
    if meta[0] == 0:
        values[0, 0] = size
        prefix[0, 1] = size
        length[0] = 1
        order[0] = 0
        meta[0] = 1
        meta[1] = 1
        _sums_from(sample, 0)
        return
    k = min(_block_above(values, length, order, meta[0], size), meta[0] - 1)
    b = order[k]
    m = length[b]
    pos = _in_block(values, b, m, size)
    for i in range(m, pos, -1):
        values[b, i] = values[b, i - 1]
    values[b, pos] = size
    m += 1
    length[b] = m
    for i in range(pos, m):
        prefix[b, i + 1] = prefix[b, i] + values[b, i]
    meta[1] += 1
    if m == _BLOCK:
        # Split: the upper half becomes a new block, right after this one.
        new = meta[0]
        half = m // 2
        for i in range(half, m):
            values[new, i - half] = values[b, i]
        length[new] = m - half
        length[b] = half
        prefix[new, 0] = 0
        for i in range(m - half):
            prefix[new, i + 1] = prefix[new, i] + values[new, i]
        for i in range(meta[0], k + 1, -1):
            order[i] = order[i - 1]
        order[k + 1] = new
        meta[0] += 1
    _sums_from(sample, k)


@njit(cache=True)
def _sums_from(sample: Any, k: int) -> None:
    # Counts and sums before each block, from the block at position k on.
    _, prefix, length, order, before_n, before_s, meta = sample
    for i in range(k, meta[0]):
        b = order[i]
        before_n[i + 1] = before_n[i] + length[b]
        before_s[i + 1] = before_s[i] + prefix[b, length[b]]


@njit(cache=True, inline="always")
def _rank_sum(
    values: Any,
    prefix: Any,
    length: Any,
    order: Any,
    before_n: Any,
    before_s: Any,
    meta: Any,
    x: int,
) -> Any:
    # (sizes at most x, their sum, the first size above x or -1).
    k = _block_above(values, length, order, meta[0], x)
    if k == meta[0]:
        return meta[1], before_s[k], -1
    b = order[k]
    pos = _in_block(values, b, length[b], x)
    return before_n[k] + pos, before_s[k] + prefix[b, pos], values[b, pos]


@njit(cache=True, inline="always")
def gittins_index(
    values: Any,
    prefix: Any,
    length: Any,
    order: Any,
    before_n: Any,
    before_s: Any,
    meta: Any,
    attained: int,
) -> float:
    """The Gittins index of ``attained`` GPU-seconds, as ``SizeSample.indices`` computes
    it (:mod:`asrpt_opt.policies._gittins_sample`), from a non-empty sample (its arrays, passed one
    by one: unpacking the tuple at every call would count references to each array)."""
    num, delta = meta[1], meta[2]
    lo, below_lo, above = _rank_sum(
        values, prefix, length, order, before_n, before_s, meta, attained
    )
    if lo == num:
        return 0.0
    b = order[meta[0] - 1]
    last = values[b, length[b] - 1]
    nxt = above - 1 + delta
    if nxt > last - 1:
        hi = num - 1
        below_hi = before_s[meta[0]] - last
    else:
        hi, below_hi, _ = _rank_sum(values, prefix, length, order, before_n, before_s, meta, nxt)
    return _index_of(num, lo, below_lo, hi, below_hi, delta)
