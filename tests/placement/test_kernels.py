"""The compiled placement kernels: refinement escapes single-move optima, never breaks room."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.placement import _kernels


def _cut(w: np.ndarray, out: np.ndarray) -> float:
    return float((w * (out[:, None] != out[None, :])).sum() / 2)


def _pairs_example() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Three heavy pairs A=(0,1), B=(2,3), C=(4,5); B talks to C (2-4, 3-5, 3 bytes each).
    w = np.zeros((6, 6))
    for a, b, nb in [(0, 1, 10), (2, 3, 10), (4, 5, 10), (2, 4, 3), (3, 5, 3)]:
        w[a, b] = w[b, a] = nb
    free = np.array([4, 4], dtype=np.int64)
    start = np.array([0, 0, 0, 0, 1, 1], dtype=np.int64)  # B sits with A, away from C
    return w, free, start


def test_single_moves_are_stuck_but_the_v_cycle_moves_the_pair():
    w, free, start = _pairs_example()
    assert _cut(w, start) == 6.0
    # Moving one worker of B splits B (-10) to gain 3: every move and swap is worse.
    flat = _kernels._refine_sized(w, np.ones(6, dtype=np.int64), free, start)
    assert _cut(w, flat) == 6.0
    # Matched into pairs, B moves whole into the spare room of server 1: nothing is cut.
    out = _kernels.refine(w, free, start)
    assert _cut(w, out) == 0.0
    assert out.tolist() == [0, 0, 1, 1, 1, 1]


def test_sized_moves_respect_room():
    # Coarse nodes A, B, C of two workers each; B-C carry 6 bytes. Server 1 (room 3) has a
    # single spare GPU, so B cannot move there; swapping A and C is the only way to join B, C.
    coarse_w = np.array([[0, 0, 0], [0, 0, 6.0], [0, 6.0, 0]])
    sizes = np.array([2, 2, 2], dtype=np.int64)
    out = _kernels._refine_sized(coarse_w, sizes, np.array([4, 3]), np.array([0, 0, 1]))
    assert out.tolist() == [1, 0, 0]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 14),
    rooms=st.lists(st.integers(0, 6), min_size=2, max_size=5),
    seed=st.integers(0, 2**16),
)
def test_refine_and_multistart_keep_room_and_never_worsen(n, rooms, seed):
    free = np.array(rooms, dtype=np.int64)
    if free.sum() < n:
        free[0] += n - free.sum()
    rng = np.random.default_rng(seed)
    w = np.triu(rng.integers(0, 5, size=(n, n)).astype(float), 1)
    w = w + w.T
    start = np.repeat(np.arange(free.size), free)[rng.permutation(int(free.sum()))][:n]
    out = _kernels.refine(w, free, start)
    assert np.all(np.bincount(out, minlength=free.size) <= free)
    assert _cut(w, out) <= _cut(w, start) + 1e-9
    order = np.argsort(-free, kind="stable")
    counts = np.minimum(free[order], n - np.concatenate([[0], np.cumsum(free[order])[:-1]]))
    keep = counts > 0
    caps = np.arange(1, int(free.max()) + 1)
    best = _kernels.multistart(w, free, order[keep], counts[keep], caps)
    assert np.all(np.bincount(best, minlength=free.size) <= free)
    assert best.size == n
