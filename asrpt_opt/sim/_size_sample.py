"""The job-size sample behind Tiresias' Gittins index, compiled (numba), and the index of a
job's attained service from it.

The sample is kept in sorted blocks with in-block and per-block prefix sums: a size learned
at a completion costs O(sqrt n) and an index O(log n), where the Python policy's sorted array
costs O(n) per completion (numpy) and the reference rebuilds its whole table. A job's index
is cached with the five whole numbers it depends on, which follow each size learned since in
O(1) (:func:`job_index`). :mod:`asrpt_opt.sim._tiresias_core` orders Tiresias' queues with
it.

Editing this module calls for the same care with numba's cache as
:mod:`~asrpt_opt.sim._tiresias_core` says (``run_core``'s cache follows ``_core.py`` only).

References
----------
.. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
   NSDI 2019.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "gittins_index",
    "job_index",
    "learn_size",
    "new_sample",
    "sample_add",
    "sample_count",
    "sample_total",
]

_BLOCK = 256  # sizes per sample block at most; a full block splits into two halves


@njit(cache=True)
def learn_size(sample: Any, log: Any, size: int) -> None:
    """Add a learned size to the sample and to ``log``, the sizes learned with the count, sum
    and largest size after each, by which a cached index follows the sample
    (:func:`job_index`)."""
    v = sample_count(sample)
    sample_add(sample, size)
    log[0, v] = size
    log[1, v] = sample_total(sample)
    log[2, v] = max(size, log[2, v - 1]) if v else size


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
    lo, below_lo, above, hi, below_hi = _bracket(
        values, prefix, length, order, before_n, before_s, meta, attained
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
def sample_count(sample: Any) -> int:
    # Sizes in the sample.
    return sample[6][1]


@njit(cache=True, inline="always")
def sample_total(sample: Any) -> int:
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
    """The Gittins index of ``attained`` GPU-seconds, as ``SizeSample.indices`` computes it
    (:mod:`asrpt_opt.policies._gittins_sample`), from a non-empty sample (its arrays, passed
    one by one: unpacking the tuple at every call would count references to each array)."""
    lo, below_lo, _, hi, below_hi = _bracket(
        values, prefix, length, order, before_n, before_s, meta, attained
    )
    return _index_of(meta[1], lo, below_lo, hi, below_hi, meta[2])


@njit(cache=True, inline="always")
def _bracket(
    values: Any,
    prefix: Any,
    length: Any,
    order: Any,
    before_n: Any,
    before_s: Any,
    meta: Any,
    attained: int,
) -> Any:
    # What the index of the attained service depends on: (sizes at most it, their sum, the
    # first size above it or -1, sizes up to that size - 1 + delta, their sum); the reference
    # caps the window at the largest size (all sizes but it).
    num, delta = meta[1], meta[2]
    lo, below_lo, above = _rank_sum(
        values, prefix, length, order, before_n, before_s, meta, attained
    )
    if lo == num:
        return lo, below_lo, above, 0, 0
    b = order[meta[0] - 1]
    last = values[b, length[b] - 1]
    nxt = above - 1 + delta
    if nxt > last - 1:
        return lo, below_lo, above, num - 1, before_s[meta[0]] - last
    hi, below_hi, _ = _rank_sum(values, prefix, length, order, before_n, before_s, meta, nxt)
    return lo, below_lo, above, hi, below_hi
