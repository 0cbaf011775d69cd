"""Compiled (numba) event loops of :func:`~asrpt_opt.relaxation.srpt.srpt` and
:func:`~asrpt_opt.relaxation.srpt.preemptive_wspt` for large inputs.

They perform the same floating-point operations in the same order as the Python loops, on a
binary heap of ``(key, index)`` pairs ordered lexicographically; since the indices are unique
the heap always yields the same job as Python's ``heapq``, so both paths give identical
results (the tests compare them bit for bit). The Python loops stay the reference and serve
small inputs, for which importing numba would cost more than it saves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

__all__ = ["srpt_loop", "wspt_loop"]


@njit(cache=True, inline="always")
def _less(ka: float, ia: int, kb: float, ib: int) -> bool:
    return ka < kb or (ka == kb and ia < ib)


@njit(cache=True)
def _push(keys: Any, ids: Any, size: int, key: float, ident: int) -> None:
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if _less(key, ident, keys[parent], ids[parent]):
            keys[pos] = keys[parent]
            ids[pos] = ids[parent]
            pos = parent
        else:
            break
    keys[pos] = key
    ids[pos] = ident


@njit(cache=True)
def _sift_down(keys: Any, ids: Any, size: int, key: float, ident: int) -> None:
    """Put (key, ident) at the root of a heap of ``size`` items and restore the order."""
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _less(keys[right], ids[right], keys[child], ids[child]):
            child = right
        if _less(keys[child], ids[child], key, ident):
            keys[pos] = keys[child]
            ids[pos] = ids[child]
            pos = child
        else:
            break
    keys[pos] = key
    ids[pos] = ident


@njit(cache=True)
def srpt_loop(r: Any, p: Any, idx: Any) -> Any:
    """Completion times by input index; ``r``, ``p`` sorted by release, ``idx`` their input
    indices."""
    n = r.size
    done = np.zeros(n)
    keys = np.empty(n)
    ids = np.empty(n, np.int64)
    size = 0
    t = 0.0
    i = 0
    while i < n or size > 0:
        if size == 0 and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            _push(keys, ids, size, p[i], idx[i])
            size += 1
            i += 1
        nxt = r[i] if i < n else np.inf
        rem = keys[0]
        k = ids[0]
        if t + rem <= nxt:
            size -= 1
            if size > 0:
                _sift_down(keys, ids, size, keys[size], ids[size])
            t += rem
            done[k] = t
        else:
            _sift_down(keys, ids, size, rem - (nxt - t), k)
            t = nxt
    return done


@njit(cache=True)
def wspt_loop(r: Any, p: Any, key: Any) -> Any:
    """(completion, busy-time integral) per sorted position; ``key`` is -w/p in that order."""
    n = r.size
    remaining = p.copy()
    busy = np.zeros(n)
    done = np.zeros(n)
    keys = np.empty(n)
    ids = np.empty(n, np.int64)
    size = 0
    t = 0.0
    i = 0
    while i < n or size > 0:
        if size == 0 and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            _push(keys, ids, size, key[i], i)
            size += 1
            i += 1
        nxt = r[i] if i < n else np.inf
        k = ids[0]
        if remaining[k] <= nxt - t:
            run = remaining[k]
            busy[k] += run * (t + run / 2.0)
            t += run
            remaining[k] = 0.0
            size -= 1
            if size > 0:
                _sift_down(keys, ids, size, keys[size], ids[size])
            done[k] = t
        else:
            run = nxt - t
            busy[k] += run * (t + run / 2.0)
            remaining[k] -= run
            t = nxt
    return done, busy
