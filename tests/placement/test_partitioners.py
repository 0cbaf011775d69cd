"""METIS and KaHIP as placement methods: the repair step, the obvious optima, and a clear
error without the libraries."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from asrpt_opt.errors import UsageError
from asrpt_opt.model import Parallelism
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from asrpt_opt.placement.partitioners import repair

PARTITIONERS = ["metis", "kahip"]


def test_repair_fills_a_part_the_partitioner_left_empty():
    # A path 0-1-2-3 with weights 1, 9, 1, all in one part. Moving 0 or 3 adds 1 to the cut,
    # 1 or 2 adds 10: worker 0 moves (lowest index); then 1 would add 9 - 1 = 8, 3 adds 1:
    # worker 3 moves. Cut 2, the least for two parts of two.
    w = np.zeros((4, 4))
    for a, b, x in [(0, 1, 1.0), (1, 2, 9.0), (2, 3, 1.0)]:
        w[a, b] = w[b, a] = x
    out = repair(np.zeros(4, dtype=np.int64), np.array([2, 2]), w)
    assert np.bincount(out).tolist() == [2, 2]
    assert out.tolist() == [1, 0, 0, 1]


def test_repair_matches_the_largest_part_to_the_largest_share():
    w = np.ones((5, 5)) - np.eye(5)
    out = repair(np.array([7, 7, 7, 3, 3]), np.array([2, 3]), w)
    assert out.tolist() == [1, 1, 1, 0, 0]  # no move needed after relabelling


@pytest.mark.parametrize("method", PARTITIONERS)
def test_tensor_parallel_groups_stay_on_one_server(method):
    # Two TP groups of 4 (heavy all-reduce) with a DP all-reduce between them: on two free
    # servers of 4 the optimum keeps each TP group whole, which mincut finds.
    wg = worker_graph(load_model("gpt2-1.5b"), Parallelism(dp=2, pp=1, tp=4))
    args = {"intra_gbps": 300.0, "inter_gbps": 12.5}
    got = place(wg, [4, 4], method=method, **args)
    best = place(wg, [4, 4], method="mincut", **args)
    assert got.cross_server_bytes == pytest.approx(best.cross_server_bytes)
    assert sorted(got.allocation) == [(0, 4), (1, 4)]


@pytest.mark.parametrize("method", PARTITIONERS)
@pytest.mark.parametrize("free", [[3, 5, 2, 6], [8, 1, 1, 1, 5], [2, 2, 2, 2, 2, 2, 2, 2]])
def test_placements_fit_the_free_gpus_exactly(method, free):
    wg = worker_graph(load_model("gpt2-1.5b"), Parallelism(dp=2, pp=2, tp=4))
    out = place(wg, free, method=method, intra_gbps=300.0, inter_gbps=12.5)
    used = np.bincount(np.asarray(out.assignment), minlength=len(free))
    assert (used <= np.asarray(free)).all()
    assert used.sum() == 16
    again = place(wg, free, method=method, intra_gbps=300.0, inter_gbps=12.5)
    assert again.assignment == out.assignment  # deterministic


@pytest.mark.parametrize(("method", "package"), [("metis", "pymetis"), ("kahip", "kahip")])
def test_a_missing_library_is_one_clear_error(monkeypatch, method, package):
    monkeypatch.setitem(sys.modules, package, None)  # import fails as if not installed
    wg = worker_graph(load_model("gpt2-1.5b"), Parallelism(dp=2, pp=1, tp=2))
    with pytest.raises(UsageError, match=r"asrpt-opt\[partitioners\]"):
        place(wg, [2, 2], method=method, intra_gbps=300.0, inter_gbps=12.5)
