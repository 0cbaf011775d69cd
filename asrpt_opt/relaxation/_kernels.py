"""Compiled (numba) event loops of :func:`~asrpt_opt.relaxation.srpt.srpt` and
:func:`~asrpt_opt.relaxation.srpt.preemptive_wspt` for large inputs.

They perform the same floating-point operations in the same order as the Python loops, on a
binary heap of ``(key, index)`` pairs ordered lexicographically
(:mod:`asrpt_opt._numba.heaps`); since the indices are unique
the heap always yields the same job as Python's ``heapq``, so both paths give identical
results (the tests compare them bit for bit). The Python loops stay the reference and serve
small inputs, for which importing numba would cost more than it saves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit
from asrpt_opt._numba.heaps import heap_pop, heap_push, heap_replace

__all__ = ["srpt_loop", "wspt_loop"]


@njit(cache=True)
def srpt_loop(r: Any, p: Any, idx: Any) -> Any:
    """Completion times by input index; ``r``, ``p`` sorted by release, ``idx`` their input
    indices."""
    n = r.size
    done = np.zeros(n)
    keys = np.empty(n)
    ids = np.empty((n, 1), np.int64)
    one = np.empty(1, np.int64)
    size = 0
    t = 0.0
    i = 0
    while i < n or size > 0:
        if size == 0 and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            one[0] = idx[i]
            heap_push(keys, ids, size, p[i], one)
            size += 1
            i += 1
        nxt = r[i] if i < n else np.inf
        rem = keys[0]
        k = ids[0, 0]
        if t + rem <= nxt:
            heap_pop(keys, ids, size)
            size -= 1
            t += rem
            done[k] = t
        else:
            one[0] = k
            heap_replace(keys, ids, size, rem - (nxt - t), one)
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
    ids = np.empty((n, 1), np.int64)
    one = np.empty(1, np.int64)
    size = 0
    t = 0.0
    i = 0
    while i < n or size > 0:
        if size == 0 and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            one[0] = i
            heap_push(keys, ids, size, key[i], one)
            size += 1
            i += 1
        nxt = r[i] if i < n else np.inf
        k = ids[0, 0]
        if remaining[k] <= nxt - t:
            run = remaining[k]
            busy[k] += run * (t + run / 2.0)
            t += run
            remaining[k] = 0.0
            heap_pop(keys, ids, size)
            size -= 1
            done[k] = t
        else:
            run = nxt - t
            busy[k] += run * (t + run / 2.0)
            remaining[k] -= run
            t = nxt
    return done, busy
