"""Consolidating placement: best fit on one server, else fewest servers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asrpt_opt.errors import UsageError
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


@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=150),
    st.lists(
        st.tuples(st.integers(0, 149), st.integers(0, 12), st.integers(1, 40)),
        min_size=1,
        max_size=30,
    ),
)
def test_best_fit_buckets_choose_as_consolidate(free, changes):
    # One BestFit follows a vector through a sequence of changes, as in a simulation.
    from asrpt_opt.placement.consolidate import BestFit

    fit = BestFit()
    vector = np.array(free, dtype=np.int64)
    for server, count, gpus in changes:
        vector[server % vector.size] = count
        assert fit(vector, gpus) == consolidate(vector, gpus)


def test_best_fit_hand_computed_spread_after_changes():
    from asrpt_opt.placement.consolidate import BestFit

    fit = BestFit()
    assert fit(np.array([3, 2, 4]), 6) == ((1, 2), (2, 4))
    # Server 1 fills up: the fullest server is filled, the remainder fits on server 0.
    assert fit(np.array([3, 0, 4]), 6) == ((0, 2), (2, 4))
    assert fit(np.array([3, 0, 4]), 8) is None
    with pytest.raises(UsageError):
        fit(np.array([3, 0, 4]), 0)
