"""Branch and price: the sized pricing kernel by hand, a triangle whose LP bound needs a
branch, agreement with CP-SAT's proven optima, and the 64-worker job it closes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import _kernels, place
from asrpt_opt.placement.bound import configuration_bound
from asrpt_opt.placement.branch import BranchAndPrice, branch_and_price
from asrpt_opt.placement.cpsat import min_cut_placement


def _csr(n, edges):
    w = np.zeros((n, n))
    for a, b, x in edges:
        w[a, b] = w[b, a] = x
    rows, cols = np.nonzero(w)
    indptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    return indptr, cols.astype(np.int64), w[rows, cols]


def _apart(n, pairs):
    ends = sorted({p for a, b in pairs for p in ((a, b), (b, a))})
    first = np.array([a for a, _ in ends], dtype=np.int64)
    ptr = np.searchsorted(first, np.arange(n + 1)).astype(np.int64)
    return ptr, np.array([b for _, b in ends], dtype=np.int64)


@pytest.mark.parametrize(
    ("apart", "expected"),
    [
        ([], [10.0, 6.0]),  # {1,2}: 2*5, {0,1}: 2*3, both 3 GPUs
        ([(0, 1)], [10.0, 0.0]),  # {0,1} may not share a server
    ],
)
def test_sized_pricing_by_hand(apart, expected):
    # Path 0 -3- 1 -5- 2 where node 1 is a merged pair (2 GPUs); room 3, no prices: the
    # whole path (4 GPUs) does not fit, and singletons are worth nothing.
    indptr, nbr, wt = _csr(3, [(0, 1, 3.0), (1, 2, 5.0)])
    ptr, far = _apart(3, apart)
    size = np.array([1, 2, 1], dtype=np.int64)
    values, sets, visits = _kernels.best_connected(
        indptr, nbr, wt, np.zeros(3), size, ptr, far, 3, 2, 1000
    )
    assert visits > 0
    assert values[3].tolist() == expected
    assert sorted(sets[3, 0][sets[3, 0] >= 0].tolist()) == [1, 2]
    assert not values[1:3].any()
    assert not values[4:].any()


@pytest.fixture
def triangle():
    """Three workers in a tensor-parallel ring (a triangle of equal edges e) on two servers
    of two: the configuration LP takes each pair half, keeping 1.5 e inside, so its bound
    is 3e - 1.5e = 1.5e, while every placement cuts 2e."""
    wg = worker_graph(load_model("vgg16"), Parallelism(tp=3))
    edge = float(wg.nbytes[0])
    assert wg.nbytes.size == 3
    assert np.allclose(wg.nbytes, edge)
    return wg, np.array([2, 2], dtype=np.int64), edge


def test_configuration_bound_on_the_triangle(triangle):
    wg, rooms, edge = triangle
    b = configuration_bound(wg, rooms, np.array([0, 0, 1]), time_limit_s=30)
    assert not b.proven
    assert b.lower_bound_bytes == pytest.approx(1.5 * edge)
    assert b.cut_bytes == pytest.approx(2 * edge)


def test_branching_closes_the_triangle(triangle):
    wg, rooms, edge = triangle
    res = branch_and_price(wg, rooms, np.array([0, 0, 1]), time_limit_s=30)
    assert res.proven
    assert res.nodes >= 2  # the root's bound alone is 1.5 e
    assert res.cut_bytes == res.lower_bound_bytes == pytest.approx(2 * edge)


def test_improve_sees_the_columns_and_its_placement_counts():
    # A ring of four on two pairs, started from the alternating placement (cut 4e).
    wg = worker_graph(load_model("vgg16"), Parallelism(tp=4))
    edge = float(wg.nbytes[0])
    seen = []

    def improve(columns):
        seen.extend(columns)
        return np.array([0, 0, 1, 1])

    res = branch_and_price(wg, np.array([2, 2]), np.array([0, 1, 0, 1]), improve=improve)
    assert seen
    assert all(room == 2 and len(members) <= 2 for members, room in seen)
    assert res.proven
    assert res.cut_bytes == pytest.approx(2 * edge)
    assert wg.cross_server_bytes(res.assignment) == pytest.approx(2 * edge)


def test_no_time_returns_the_start_with_a_valid_bound(triangle):
    wg, rooms, edge = triangle
    res = branch_and_price(wg, rooms, np.array([0, 1, 1]), time_limit_s=0)
    assert not res.proven
    assert res.nodes == 0
    assert res.assignment.tolist() == [0, 1, 1]
    assert res.lower_bound_bytes <= res.cut_bytes == pytest.approx(2 * edge)


def test_a_search_run_in_slices_resumes_where_it_stopped(triangle):
    wg, rooms, edge = triangle
    search = BranchAndPrice(wg, rooms, np.array([0, 1, 1]))
    first = search.run(0)
    assert not first.proven
    assert first.nodes == 0
    res = search.run(30)
    assert res.proven
    assert res.nodes >= 2
    assert res.cut_bytes == res.lower_bound_bytes == pytest.approx(2 * edge)
    # Nothing is left to explore: another run changes nothing.
    assert search.run(30) == replace(res, wall_s=search.wall_s)


def test_a_bound_proven_elsewhere_closes_the_search(triangle):
    wg, rooms, edge = triangle
    search = BranchAndPrice(wg, rooms, np.array([0, 1, 1]))
    search.offer(None, lower_bound_bytes=1.9 * edge)
    assert not search.result().proven  # 1.9 e is not the incumbent's 2 e
    search.offer(None, lower_bound_bytes=2 * edge)
    res = search.run(30)
    assert res.proven
    assert res.nodes == 0
    assert res.lower_bound_bytes == pytest.approx(2 * edge)


def test_stop_is_checked_between_nodes(triangle):
    wg, rooms, _ = triangle
    res = BranchAndPrice(wg, rooms, np.array([0, 1, 1])).run(30, stop=lambda: True)
    assert res.nodes == 0
    assert not res.proven


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["resnet18", "vgg16", "gpt2-1.5b", "gnmt"]),
    dims=st.tuples(st.integers(1, 4), st.sampled_from([1, 2]), st.sampled_from([1, 2, 3])),
    free=st.lists(st.integers(0, 5), min_size=2, max_size=5),
)
def test_agrees_with_cp_sat(model, dims, free):
    par = Parallelism(dp=dims[0], pp=dims[1], tp=dims[2])
    rooms = np.array(free, dtype=np.int64)
    if par.workers > rooms.sum():
        return
    wg = worker_graph(load_model(model), par)
    start = np.array(place(wg, rooms, method="greedy", intra_gbps=1, inter_gbps=1).assignment)
    exact = min_cut_placement(wg, rooms, time_limit_s=30)
    assert exact.optimal
    opt = wg.cross_server_bytes(exact.assignment)
    res = branch_and_price(wg, rooms, start, time_limit_s=30)
    assert res.proven
    assert res.cut_bytes == pytest.approx(opt, rel=1e-9, abs=1e-6)
    assert wg.cross_server_bytes(res.assignment) == pytest.approx(res.cut_bytes)
    assert np.all(np.bincount(res.assignment, minlength=rooms.size) <= rooms)


@pytest.mark.slow
def test_ilp_proves_gpt3_on_fragmented_servers():
    # 64 workers on 16 fragmented servers: CP-SAT's bound stalls far below the optimum and
    # the root LP leaves a gap; the LP's columns and the search close it.
    wg = worker_graph(load_model("gpt3-6.7b"), Parallelism(dp=8, pp=4, tp=2))
    rooms = np.array([3, 5, 2, 6, 4, 4, 8, 1] * 2)
    res = place(wg, rooms, method="ilp", intra_gbps=300, inter_gbps=12.5, time_limit_s=60)
    heuristic = place(wg, rooms, method="mincut", intra_gbps=300, inter_gbps=12.5)
    assert res.optimal
    assert res.lower_bound_bytes == pytest.approx(res.cross_server_bytes)
    assert res.cross_server_bytes < heuristic.cross_server_bytes
