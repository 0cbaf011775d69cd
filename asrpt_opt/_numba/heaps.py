"""The binary heap the compiled kernels share: items ``(key, ints...)`` in two arrays.

A heap of ``size`` items is a float array of keys and an int64 array of rows (one or more
columns); items compare as Python tuples do (the key, then the ints column by column), so a
compiled heap yields the items in exactly the order Python's :mod:`heapq` yields the same
tuples. The caller keeps the size; :func:`push` grows the arrays when full.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit

__all__ = ["grow", "heap_pop", "heap_push", "heap_replace", "heapify", "push", "tuple_less"]


@njit(cache=True)
def grow(a: Any) -> Any:
    """``a`` with twice the rows (the new ones uninitialised)."""
    return np.concatenate((a, np.empty_like(a)))


@njit(cache=True)
def push(t: Any, i: Any, size: int, key: float, a: int, b: int, c: int) -> Any:
    """Push ``(key, a, b[, c])`` on a heap of ``size`` items, growing it when full; returns
    the (possibly new) arrays."""
    if size == t.shape[0]:
        t, i = grow(t), grow(i)
    ints = np.empty(i.shape[1], np.int64)
    ints[0] = a
    if ints.shape[0] > 1:
        ints[1] = b
    if ints.shape[0] > 2:
        ints[2] = c
    heap_push(t, i, size, key, ints)
    return t, i


@njit(cache=True)
def tuple_less(ta: float, ia: Any, tb: float, ib: Any) -> bool:
    """``(ta, *ia) < (tb, *ib)``."""
    if ta != tb:
        return ta < tb
    for col in range(ia.shape[0]):
        if ia[col] != ib[col]:
            return ia[col] < ib[col]
    return False


@njit(cache=True)
def heap_push(t: Any, i: Any, size: int, key: float, ints: Any) -> None:
    """Add ``(key, *ints)`` to a heap of ``size`` items (the caller has made room)."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if tuple_less(key, ints, t[parent], i[parent]):
            t[pos] = t[parent]
            i[pos] = i[parent]
            pos = parent
        else:
            break
    t[pos] = key
    i[pos] = ints


@njit(cache=True)
def heap_pop(t: Any, i: Any, size: int) -> None:
    """Remove the root of a heap of ``size`` items (the caller decrements its size)."""
    last = size - 1
    if last > 0:
        heap_replace(t, i, last, t[last], i[last].copy())


@njit(cache=True)
def heap_replace(t: Any, i: Any, size: int, key: float, ints: Any) -> None:
    """Replace the root of a heap of ``size`` items by ``(key, *ints)`` (heapq.heapreplace)."""
    _sift_down(t, i, size, 0, key, ints)


@njit(cache=True)
def heapify(t: Any, i: Any, size: int) -> None:
    """Make the first ``size`` items a heap (heapq.heapify): items compare as tuples, all
    distinct, so it yields them in the order any heap of them would."""
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(t, i, size, pos, t[pos], i[pos].copy())


@njit(cache=True)
def _sift_down(t: Any, i: Any, size: int, pos: int, key: float, ints: Any) -> None:
    # Put (key, *ints) at pos and move it down below its smaller children.
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        right = child + 1
        if right < size and tuple_less(t[right], i[right], t[child], i[child]):
            child = right
        if tuple_less(t[child], i[child], key, ints):
            t[pos] = t[child]
            i[pos] = i[child]
            pos = child
        else:
            break
    t[pos] = key
    i[pos] = ints
