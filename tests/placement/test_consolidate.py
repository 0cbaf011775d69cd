"""Consolidating placement: best fit on one server, else fewest servers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asrpt_opt.placement import consolidate


@pytest.mark.parametrize(
    ("free", "gpus", "expected"),
    [
        ([3, 2, 8], 2, ((1, 2),)),
        ([3, 2, 8], 3, ((0, 3),)),
        ([4, 4], 4, ((0, 4),)),
        ([3, 2, 4], 6, ((1, 2), (2, 4))),
        ([8, 8, 1, 8], 17, ((0, 8), (1, 8), (2, 1))),
        ([1, 1, 1], 3, ((0, 1), (1, 1), (2, 1))),
        ([3, 2, 4], 10, None),
        ([0, 0], 1, None),
    ],
)
def test_hand_computed(free, gpus, expected):
    assert consolidate(np.array(free), gpus) == expected


def test_rejects_zero_width():
    with pytest.raises(ValueError, match=">= 1"):
        consolidate(np.array([2]), 0)


@given(st.lists(st.integers(0, 8), min_size=1, max_size=12), st.integers(1, 40))
def test_valid_and_uses_fewest_servers(free_list, gpus):
    free = np.array(free_list)
    alloc = consolidate(free, gpus)
    if free.sum() < gpus:
        assert alloc is None
        return
    assert alloc is not None
    assert sum(c for _, c in alloc) == gpus
    assert all(1 <= c <= free[s] for s, c in alloc)
    assert [s for s, _ in alloc] == sorted({s for s, _ in alloc})
    fewest = int(np.searchsorted(np.cumsum(np.sort(free)[::-1]), gpus)) + 1
    assert len(alloc) == fewest
