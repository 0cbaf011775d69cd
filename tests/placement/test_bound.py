"""The configuration-LP lower bound: hand-computed, valid against CP-SAT, and proving a
64-worker job that CP-SAT's own bound cannot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from asrpt_opt.placement.bound import configuration_bound, integer_weights
from asrpt_opt.placement.cpsat import min_cut_placement


def test_ring_of_four_on_two_pairs():
    # A tensor-parallel ring of four equal edges on two servers of two: any split cuts at
    # least two ring edges. Prices of half an edge per worker make every pair worth
    # nothing, so the bound is total - 4 * e/2 = 2e.
    wg = worker_graph(load_model("vgg16"), Parallelism(tp=4))
    edge = float(wg.nbytes[0])
    assert np.allclose(wg.nbytes, edge)
    assert wg.nbytes.size == 4
    b = configuration_bound(wg, np.array([2, 2]), np.array([0, 0, 1, 1]))
    assert b.proven
    assert b.lower_bound_bytes == pytest.approx(2 * edge)
    assert b.cut_bytes == pytest.approx(2 * edge)
    # A worse placement (alternating) is not proven, but the bound stays 2e.
    worse = configuration_bound(wg, np.array([2, 2]), np.array([0, 1, 0, 1]))
    assert not worse.proven
    assert worse.cut_bytes == pytest.approx(4 * edge)
    assert worse.lower_bound_bytes <= 2 * edge + 1e-6


def test_integer_weights_are_exact():
    wg = worker_graph(load_model("gpt2-1.5b"), Parallelism(dp=3, pp=2, tp=2))
    w, scale = integer_weights(wg)
    assert scale == 6
    assert w.sum() / 2 / scale == pytest.approx(wg.nbytes.sum(), rel=1e-12)
    assert np.array_equal(w, w.T)


@settings(max_examples=20, deadline=None)
@given(
    model=st.sampled_from(["resnet18", "vgg16", "gpt2-1.5b", "gnmt"]),
    dims=st.tuples(st.integers(1, 4), st.sampled_from([1, 2]), st.sampled_from([1, 2])),
    free=st.lists(st.integers(0, 5), min_size=2, max_size=5),
)
def test_bound_never_exceeds_the_proven_optimum(model, dims, free):
    par = Parallelism(dp=dims[0], pp=dims[1], tp=dims[2])
    if par.workers > sum(free):
        return
    wg = worker_graph(load_model(model), par)
    rooms = np.array(free, dtype=np.int64)
    heuristic = np.array(place(wg, rooms, method="greedy", intra_gbps=1, inter_gbps=1).assignment)
    exact = min_cut_placement(wg, rooms, time_limit_s=30)
    assert exact.optimal
    opt = wg.cross_server_bytes(exact.assignment)
    b = configuration_bound(wg, rooms, heuristic)
    assert b.lower_bound_bytes <= opt * (1 + 1e-9) + 1e-6
    if b.proven:
        assert b.cut_bytes == pytest.approx(opt, rel=1e-9, abs=1e-6)


def test_proves_tensor_parallel_groups_filling_identical_servers():
    # GPT-3 6.7B as 4 x 4 x 4 on 16 servers of 4: CP-SAT's bound reaches 18% of the
    # optimum in 15 s; the configuration LP proves one TP group per server optimal.
    wg = worker_graph(load_model("gpt3-6.7b"), Parallelism(dp=4, pp=4, tp=4))
    rooms = np.full(16, 4, dtype=np.int64)
    groups = np.arange(64) // 4  # worker w = (d*pp + p)*tp + t: one TP group per server
    b = configuration_bound(wg, rooms, groups, time_limit_s=30)
    assert b.proven
    assert b.rounds == 0  # the heuristic's own prices already close it
    tensor = wg.nbytes[wg.kind == 1].sum()
    assert b.cut_bytes == pytest.approx(wg.nbytes.sum() - tensor)
    res = place(wg, rooms, method="ilp", intra_gbps=300, inter_gbps=12.5, time_limit_s=30)
    assert res.optimal
    assert res.lower_bound_bytes == res.cross_server_bytes == pytest.approx(b.cut_bytes)
