"""The compiled heap yields items in exactly heapq's order, built by pushes or heapified."""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt._numba.heaps import heap_pop, heapify, push

ITEMS = st.lists(
    st.tuples(st.sampled_from([0.0, 1.0, 2.5, 7.0]), st.integers(0, 3), st.integers(0, 5)),
    unique=True,
    max_size=60,
)


def _drain(t, i, size):
    out = []
    while size:
        out.append((float(t[0]), int(i[0, 0]), int(i[0, 1])))
        heap_pop(t, i, size)
        size -= 1
    return out


@settings(deadline=None)
@given(ITEMS, st.integers(0, 60))
def test_pushes_then_heapify_pop_in_heapqs_order(items, drop):
    t, i = np.empty(2), np.empty((2, 2), np.int64)
    for n, (key, a, b) in enumerate(items):
        t, i = push(t, i, n, key, a, b, 0)
    # Drop some items (as the simulator drops superseded events), then heapify the rest.
    keep = [k for k in range(len(items)) if (k * 7 + drop) % 3]
    t, i = t[keep].copy(), i[keep].copy()
    heapify(t, i, len(keep))
    expected = [(float(t[k]), int(i[k, 0]), int(i[k, 1])) for k in range(len(keep))]
    heapq.heapify(expected)
    assert _drain(t, i, len(keep)) == [heapq.heappop(expected) for _ in range(len(keep))]
