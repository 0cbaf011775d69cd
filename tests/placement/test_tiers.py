"""Placement on network tiers: the tiered ILP against an exhaustive search, the heuristics
down the hierarchy, consolidation into the smallest domain, and the reported costs."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.model.dnn import MODELS, load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.topology import Tier, Topology
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import METHODS, place
from asrpt_opt.placement.tiers import (
    consolidate_tiered,
    level_costs,
    tier_cost_s,
    tiered_cut_placement,
)

TWO_RACKS = Topology.regular(4, [("rack", 2, 50.0)])
GBPS = (300.0, 50.0, 12.5)


def _all_assignments(n: int, k: int) -> np.ndarray:
    """Every assignment of ``n`` workers to ``k`` servers, one per row."""
    return np.indices((k,) * n).reshape(n, -1).T if n else np.zeros((1, 0), dtype=np.int64)


def exhaustive_tier_cost(wg, free, topology, gbps) -> float:
    """The smallest tier-weighted cut over every feasible assignment (meet in the middle:
    the two halves of the workers enumerated apart, the edges between them per pair)."""
    n, k = wg.n_workers, free.size
    a, b = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    pair = level_costs(gbps)[topology.level_of(a.ravel(), b.ravel())].reshape(k, k)
    h = n // 2
    left, right = _all_assignments(h, k), _all_assignments(n - h, k)
    lc = np.stack([np.bincount(r, minlength=k) for r in left]) if h else np.zeros((1, k), int)
    rc = np.stack([np.bincount(r, minlength=k) for r in right])
    cost = np.zeros((left.shape[0], right.shape[0]))
    for u, v, nb in zip(wg.u.tolist(), wg.v.tolist(), wg.nbytes.tolist(), strict=True):
        su = left[:, u][:, None] if u < h else right[:, u - h][None, :]
        sv = left[:, v][:, None] if v < h else right[:, v - h][None, :]
        cost = cost + nb * pair[su, sv]
    feasible = np.all(lc[:, None, :] + rc[None, :, :] <= free, axis=2)
    return float(cost[feasible].min())


def _random_case(rng: np.random.Generator):
    names = [m for m in MODELS if not m.startswith("gpt")]
    while True:
        dp, pp, tp = (int(x) for x in rng.choice([1, 1, 2, 2, 3, 4], size=3))
        if 2 <= dp * pp * tp <= 12:
            break
    model = load_model(str(rng.choice(names)))
    if pp > len(model.order):
        pp = 1
    wg = worker_graph(model, Parallelism(dp=dp, pp=pp, tp=tp))
    k = int(rng.integers(3, 5))
    racks = np.sort(rng.integers(0, k, size=k))
    racks = np.unique(racks, return_inverse=True)[1]
    tiers = [Tier(name="rack", gbps=50.0, parent=tuple(racks.tolist()))]
    n_racks = int(racks.max()) + 1
    gbps: tuple[float, ...] = (300.0, 50.0, 12.5)
    if n_racks > 1 and rng.random() < 0.5:
        pods = np.unique(np.sort(rng.integers(0, n_racks, size=n_racks)), return_inverse=True)[1]
        tiers.append(Tier(name="pod", gbps=25.0, parent=tuple(pods.tolist())))
        gbps = (300.0, 50.0, 25.0, 12.5)
    free = rng.integers(1, 7, size=k)
    while free.sum() < wg.n_workers:
        free[rng.integers(k)] += 1
    return wg, free.astype(np.int64), Topology(tiers=tuple(tiers)), gbps


def _ilp_matches_exhaustive(seed: int) -> None:
    wg, free, topology, gbps = _random_case(np.random.default_rng(seed))
    sol = tiered_cut_placement(wg, free, topology, gbps, time_limit_s=60)
    best = exhaustive_tier_cost(wg, free, topology, gbps)
    found = tier_cost_s(wg, sol.assignment, topology, gbps)
    assert sol.optimal
    assert np.all(np.bincount(sol.assignment, minlength=free.size) <= free)
    assert found == pytest.approx(best, rel=1e-9, abs=1e-15)
    assert sol.lower_bound_s <= best * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("seed", range(8))
def test_the_tiered_ilp_is_optimal_by_exhaustive_search(seed):
    _ilp_matches_exhaustive(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 108))
def test_the_tiered_ilp_is_optimal_by_exhaustive_search_on_100_jobs(seed):
    _ilp_matches_exhaustive(seed)


def test_the_exhaustive_reference_sees_the_tiers():
    # Two workers with one edge: same server costs 0, same rack 1/50-1/300 per GB, else more.
    wg = worker_graph(load_model("resnet18"), Parallelism(dp=2, pp=1, tp=1))
    nb = float(wg.nbytes.sum())
    c = level_costs(GBPS)
    assert exhaustive_tier_cost(wg, np.array([2, 0, 0, 0]), TWO_RACKS, GBPS) == 0.0
    assert exhaustive_tier_cost(wg, np.array([1, 1, 0, 0]), TWO_RACKS, GBPS) == pytest.approx(
        nb * c[1]
    )
    assert exhaustive_tier_cost(wg, np.array([1, 0, 1, 0]), TWO_RACKS, GBPS) == pytest.approx(
        nb * c[2]
    )


def test_level_costs_are_extra_seconds_per_byte():
    assert level_costs((100.0, 50.0, 10.0)).tolist() == pytest.approx([0.0, 1e-11, 9e-11])


def test_consolidation_goes_into_the_smallest_domain_that_holds_the_job():
    topology = Topology.regular(6, [("rack", 2, 50.0), ("pod", 2, 25.0)])
    free = np.array([4, 4, 3, 2, 4, 1])  # racks hold 8, 5, 5; pods 13, 5
    assert consolidate_tiered(free, 3, topology) == ((2, 3),)  # one server, best fit
    assert consolidate_tiered(free, 5, topology) == ((2, 3), (3, 2))  # rack 1: best fit
    assert consolidate_tiered(free, 12, topology) == ((0, 4), (1, 4), (2, 3), (3, 1))  # pod 0
    assert consolidate_tiered(free, 14, topology) == ((0, 4), (1, 4), (3, 2), (4, 4))
    assert consolidate_tiered(free, 99, topology) is None


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_places_on_tiers_and_reports_each_tier(method):
    wg = worker_graph(load_model("gnmt"), Parallelism(dp=2, pp=2, tp=2))
    topology = Topology.regular(6, [("rack", 2, 50.0), ("pod", 2, 25.0)])
    free = np.array([3, 2, 2, 2, 4, 1])
    res = place(
        wg, free, method=method, intra_gbps=300, inter_gbps=12.5, topology=topology, seed=1
    )
    per = dict(res.cross_tier_bytes)
    assert list(per) == ["server", "rack", "pod"]
    assert sum(per.values()) == pytest.approx(res.cross_server_bytes)
    assert res.tier_cost_s == pytest.approx(
        tier_cost_s(wg, np.array(res.assignment), topology, (300, 50, 25, 12.5))
    )
    assert np.all(np.bincount(res.assignment, minlength=6) <= free)
    if method == "ilp":
        assert res.optimal
        assert res.lower_bound_tier_cost_s == pytest.approx(res.tier_cost_s)


def test_the_heuristics_keep_a_job_inside_the_rack_that_holds_it():
    # 8 workers; rack 0 has 6 free GPUs, rack 1 exactly 8: going down the tiers, the whole
    # job lands in rack 1 and no byte crosses racks.
    wg = worker_graph(load_model("resnet50"), Parallelism(dp=4, pp=2, tp=1))
    free = np.array([3, 3, 4, 4])
    for method in ("mincut", "greedy", "kl"):
        res = place(wg, free, method=method, intra_gbps=300, inter_gbps=12.5, topology=TWO_RACKS)
        assert dict(res.cross_tier_bytes)["rack"] == 0.0
        assert set(res.assignment) == {2, 3}


def test_a_cluster_level_link_is_as_slow_as_the_spine():
    wg = worker_graph(load_model("resnet50"), Parallelism(dp=2, pp=1, tp=1))
    one = place(wg, [1, 0, 1, 0], method="mincut", intra_gbps=300, inter_gbps=12.5)
    tiered = place(
        wg, [1, 0, 1, 0], method="mincut", intra_gbps=300, inter_gbps=12.5, topology=TWO_RACKS
    )
    near = place(
        wg, [1, 1, 0, 0], method="mincut", intra_gbps=300, inter_gbps=12.5, topology=TWO_RACKS
    )
    assert tiered.iteration_time_s == pytest.approx(one.iteration_time_s)  # across racks
    assert near.iteration_time_s < tiered.iteration_time_s  # inside a rack, at 50 GB/s
    assert near.iteration_time_s == pytest.approx(
        place(wg, [1, 1], method="mincut", intra_gbps=300, inter_gbps=50).iteration_time_s
    )
