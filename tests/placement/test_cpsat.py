"""CP-SAT placement search in the background: it finds what the foreground call finds, and
it stops when asked."""

from __future__ import annotations

import time

import numpy as np

from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from asrpt_opt.placement.cpsat import CutSearch, min_cut_placement


def _hint(wg, free):
    return np.array(place(wg, free, method="greedy", intra_gbps=1, inter_gbps=1).assignment)


def test_background_search_finds_the_foreground_optimum():
    wg = worker_graph(load_model("gnmt"), Parallelism(dp=2, pp=2, tp=2))
    free = np.array([3, 3, 2, 2], dtype=np.int64)
    exact = min_cut_placement(wg, free, time_limit_s=30)
    search = CutSearch(wg, free, hint=_hint(wg, free), time_limit_s=30)
    res = search.result()
    assert search.done()
    assert exact.optimal
    assert res.optimal
    assert wg.cross_server_bytes(res.assignment) == wg.cross_server_bytes(exact.assignment)
    assert np.all(np.bincount(res.assignment, minlength=free.size) <= free)


def test_stop_ends_a_long_search_with_a_valid_placement():
    # 64 workers whose optimum CP-SAT cannot prove in minutes: stop must end it, whether
    # it lands while the model is built or during the search.
    wg = worker_graph(load_model("gpt3-6.7b"), Parallelism(dp=4, pp=4, tp=4))
    free = np.full(16, 4, dtype=np.int64)
    hint = _hint(wg, free)
    for wait_s in (0.0, 0.5):
        t0 = time.perf_counter()
        search = CutSearch(wg, free, hint=hint, time_limit_s=600)
        time.sleep(wait_s)
        search.stop()
        assert search.done()
        assert time.perf_counter() - t0 < 60  # far below the 600 s limit
        res = search.result()
        assert not res.optimal
        assert wg.cross_server_bytes(res.assignment) <= wg.cross_server_bytes(hint)
        assert np.bincount(res.assignment, minlength=free.size).tolist() == free.tolist()
