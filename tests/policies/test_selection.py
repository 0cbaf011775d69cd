"""The array forms of the selection rules against plain list versions, and the sorted queue
of waiting jobs against a sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.policies._selection import RankedWaiting, by_key_then, fit_in_order
from asrpt_opt.policies.serverfilling import fill_ranked

widths = st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=0, max_size=40)


def _first_fit(gpus: list[int], total: int, *, greedy: bool) -> list[int]:
    taken, used = [], 0
    for k, g in enumerate(gpus):
        if used + g <= total:
            taken.append(k)
            used += g
        elif greedy:
            break
    return taken


def _server_filling(gpus: list[int], total: int, cap: int) -> list[int]:
    prefix, covered = [], 0
    for k, g in enumerate(gpus):
        if covered >= total:
            break
        prefix.append(k)
        covered += g
    chosen, used = [], 0
    for k in sorted(prefix, key=lambda k: (-min(gpus[k], cap), k)):
        if used + gpus[k] <= total:
            chosen.append(k)
            used += gpus[k]
    for k, g in enumerate(gpus):
        if k not in chosen and used < total and used + g <= total:
            chosen.append(k)
            used += g
    return chosen


@given(widths, st.integers(1, 20), st.booleans())
def test_first_fit_in_blocks_takes_what_the_loop_takes(gpus, total, greedy):
    taken, _ = fit_in_order(np.array(gpus, dtype=np.int64), total, greedy=greedy)
    assert np.flatnonzero(taken).tolist() == _first_fit(gpus, total, greedy=greedy)


@given(widths, st.integers(1, 20), st.integers(1, 8), st.integers(0, 40))
def test_server_filling_on_part_of_a_ranking_is_exact_or_asks_for_more(gpus, total, cap, known):
    full = fill_ranked(np.array(gpus, dtype=np.int64), total, cap=cap)
    assert full is not None
    assert full.tolist() == _server_filling(gpus, total, cap)
    part = fill_ranked(np.array(gpus[:known], dtype=np.int64), total, cap=cap, complete=False)
    # Deciding on the first ``known`` jobs is either the whole ranking's decision or None.
    assert part is None or part.tolist() == full.tolist()


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5)), max_size=60), st.randoms())
def test_ranked_waiting_stays_sorted_by_key_then_job(ops, rnd):
    key = {}  # the fixed key each job gets when it first waits
    queue, waiting = RankedWaiting(), set()
    for job, k in ops:
        if job in waiting:
            queue.sync(lambda jobs: np.array([key[j] for j in jobs.tolist()], float))
            queue.remove([job])
            waiting.discard(job)
        else:
            key.setdefault(job, float(k))
            queue.add([job])
            waiting.add(job)
        if rnd.random() < 0.5:
            queue.sync(lambda jobs: np.array([key[j] for j in jobs.tolist()], float))
    queue.sync(lambda jobs: np.array([key[j] for j in jobs.tolist()], float))
    assert queue.jobs.tolist() == sorted(waiting, key=lambda j: (key[j], j))
    assert queue.keys.tolist() == [key[j] for j in queue.jobs.tolist()]


@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 1.5, 2.0, 1e300]), st.integers(0, 10**9))))
def test_two_sorts_order_as_a_lexicographic_sort(pairs):
    keys = np.array([k for k, _ in pairs], dtype=float)
    ties = np.array(list(dict.fromkeys(t for _, t in pairs)), dtype=np.int64)[: len(pairs)]
    keys = keys[: ties.size]
    assert by_key_then(keys, ties).tolist() == np.lexsort((ties, keys)).tolist()
