"""The compiled event loops give the Python loops' results bit for bit."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asrpt_opt.relaxation  # noqa: F401  (the module, not the function of the same name)

SRPT = sys.modules["asrpt_opt.relaxation.srpt"]

values = st.one_of(
    st.integers(0, 6).map(float), st.floats(0, 10, allow_nan=False, allow_infinity=False)
)


def _both(fn, *args):
    old = SRPT.COMPILED_FROM
    try:
        SRPT.COMPILED_FROM = 10**12
        python = fn(*args)
        SRPT.COMPILED_FROM = 0
        compiled = fn(*args)
    finally:
        SRPT.COMPILED_FROM = old
    return python, compiled


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(values, values, st.integers(1, 4)), min_size=1, max_size=40))
def test_srpt_and_wspt_compiled_equal_python(rows):
    r = np.array([a for a, _, _ in rows])
    p = np.array([b for _, b, _ in rows])
    w = np.array([float(c) for _, _, c in rows])
    a, b = _both(SRPT.srpt, r, p)
    assert np.array_equal(a.completion_s, b.completion_s)
    assert a.total_completion_s == b.total_completion_s
    a, b = _both(SRPT.preemptive_wspt, r, p + 0.25, w)
    assert np.array_equal(a.completion_s, b.completion_s)
    assert np.array_equal(a.mean_busy_s, b.mean_busy_s)


def test_hand_computed_example_compiled():
    python, compiled = _both(SRPT.srpt, [0, 2, 2, 6, 7, 9], [6, 2, 5, 2, 8, 2])
    assert compiled.total_completion_s == python.total_completion_s == pytest.approx(76.0)
