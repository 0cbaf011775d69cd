"""The job-size sample behind Tiresias' Gittins index, compiled (numba), and the index of a
job's attained service from it.

The sample is kept in sorted blocks with in-block and per-block prefix sums: a size learned
at a completion costs O(sqrt n) and an index O(log n), where the Python policy's sorted array
costs O(n) per completion (numpy) and the reference rebuilds its whole table.
:mod:`asrpt_opt.policies.tiresias_kernel` orders Tiresias' queues with it; the Python
policy's sample is :mod:`asrpt_opt.policies._gittins_sample`.

References
----------
.. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
   NSDI 2019.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit

__all__ = ["gittins_index", "new_sample", "sample_add", "sample_count", "sample_total"]

_BLOCK = 256  # sizes per sample block at most; a full block splits into two halves


@njit(cache=True)
def new_sample(capacity: int, delta: int) -> Any:
    """An empty sample for up to ``capacity`` sizes: ``(values, in-block prefix sums, block
    lengths, blocks in order, counts before each block, sums before each block, [blocks,
    sizes, delta], largest size of each block in order)``."""
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
        np.zeros(n_blocks, np.int64),
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
def _block_above(top: Any, lo: int, n_blocks: int, x: int) -> int:
    # The first block (position in order) from lo on whose largest size is above x; the
    # number of blocks when none is. The largest sizes sit in one array of their own: a
    # search reads a few kilobytes, not a row of each block it visits.
    hi = n_blocks
    while lo < hi:
        mid = (lo + hi) >> 1
        if top[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _in_block(values: Any, b: int, base: int, size: int, x: int) -> int:
    # Sizes of block b at most x (bisect_right), knowing the first ``base`` of them are,
    # without branches to mispredict.
    n = size - base
    if n == 0 or values[b, base] > x:
        return base
    while n > 1:
        half = n >> 1
        base = base + half if values[b, base + half] <= x else base
        n -= half
    return base + 1


@njit(cache=True)
def sample_add(sample: Any, size: int) -> None:
    """Insert a size: O(block) in its block, O(blocks) for the sums before each block."""
    values, prefix, length, order, _, _, meta, top = sample
    if meta[0] == 0:
        values[0, 0] = size
        prefix[0, 1] = size
        length[0] = 1
        order[0] = 0
        meta[0] = 1
        meta[1] = 1
        _sums_from(sample, 0)
        return
    k = min(_block_above(top, 0, meta[0], size), meta[0] - 1)
    b = order[k]
    m = length[b]
    pos = _in_block(values, b, 0, m, size)
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
    values, prefix, length, order, before_n, before_s, meta, top = sample
    for i in range(k, meta[0]):
        b = order[i]
        top[i] = values[b, length[b] - 1]
        before_n[i + 1] = before_n[i] + length[b]
        before_s[i + 1] = before_s[i] + prefix[b, length[b]]


@njit(cache=True, inline="always")
def gittins_index(
    values: Any,
    prefix: Any,
    length: Any,
    order: Any,
    before_n: Any,
    before_s: Any,
    meta: Any,
    top: Any,
    attained: int,
) -> float:
    """The Gittins index of ``attained`` GPU-seconds, as ``SizeSample.indices`` computes
    it (:mod:`asrpt_opt.policies._gittins_sample`), from a non-empty sample (its arrays, passed one
    by one: unpacking the tuple at every call would count references to each array)."""
    num, delta = meta[1], meta[2]
    n_blocks = meta[0]
    k = _block_above(top, 0, n_blocks, attained)
    if k == n_blocks:
        return 0.0
    b = order[k]
    pos = _in_block(values, b, 0, length[b], attained)
    lo = before_n[k] + pos
    below_lo = before_s[k] + prefix[b, pos]
    last = top[n_blocks - 1]
    nxt = values[b, pos] - 1 + delta
    if nxt > last - 1:
        hi = num - 1
        below_hi = before_s[n_blocks] - last
    else:
        # hi counts the sizes up to nxt, which include those up to the first size above
        # attained: the search starts where lo's ended.
        if top[k] <= nxt:
            k = _block_above(top, k + 1, n_blocks, nxt)
            b = order[k]
            pos = 0
        pos = _in_block(values, b, pos, length[b], nxt)
        hi = before_n[k] + pos
        below_hi = before_s[k] + prefix[b, pos]
    p = np.floor((hi - lo) / (num - lo) * 100000.0 + 0.5) / 100000.0
    e = float((below_hi - below_lo + delta * (num - hi)) // (num - lo))
    return np.floor(p * 1000000 / e * 10000.0 + 0.5) / 10000.0
