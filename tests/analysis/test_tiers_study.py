"""The tiered-placement study: every row present, traffic consistent with the tiers, and the
paired summary equal to a hand computation."""

from __future__ import annotations

import pytest

from asrpt_opt.analysis.tiers_study import TierRow, summarize, tiers_study


@pytest.fixture(scope="module")
def rows():
    return tiers_study(
        24,
        servers_per_rack=2,
        racks=4,
        racks_per_pod=2,
        loads=(0.9,),
        oversubscription=(3.0,),
        policies=("a-srpt", "fifo"),
        seeds=(0, 1),
    )


def test_every_policy_placement_and_seed_has_a_row(rows):
    assert len(rows) == 2 * 3 * 2
    assert {(r.policy, r.placement, r.seed) for r in rows} == {
        (p, m, s)
        for p in ("a-srpt", "fifo")
        for m in ("consolidate-flat", "consolidate", "mincut")
        for s in (0, 1)
    }


def test_traffic_is_nested_by_tier(rows):
    for r in rows:
        assert 0 <= r.cross_pod_gb <= r.cross_rack_gb * (1 + 1e-9)
        assert r.cross_rack_gb <= r.cross_server_gb * (1 + 1e-9)
        assert r.placement_slowdown >= 1 - 1e-9


def test_the_tier_aware_consolidation_sends_less_across_racks(rows):
    by = {(r.policy, r.placement, r.seed): r for r in rows}
    for policy in ("a-srpt", "fifo"):
        flat = sum(by[policy, "consolidate-flat", s].cross_rack_gb for s in (0, 1))
        aware = sum(by[policy, "consolidate", s].cross_rack_gb for s in (0, 1))
        assert aware < flat


def _row(seed: int, placement: str, jct: float) -> TierRow:
    return TierRow(
        load=0.9, oversubscription=3.0, seed=seed, policy="p", placement=placement,
        mean_jct_s=jct, p95_jct_s=2 * jct, placement_slowdown=1.0,
        cross_server_gb=0.0, cross_rack_gb=0.0, cross_pod_gb=0.0,
    )  # fmt: skip


def test_the_summary_pairs_each_seed_with_the_reference():
    rows = [_row(0, "consolidate", 100), _row(1, "consolidate", 200)]
    rows += [_row(0, "mincut", 90), _row(1, "mincut", 220)]
    [ref, other] = summarize(rows)
    assert (ref.ratio, ref.ratio_low, ref.ratio_high) == (1.0, 1.0, 1.0)
    assert other.ratio == pytest.approx((0.9 + 1.1) / 2)
    # Student's t with 1 degree of freedom: 12.706 * sd / sqrt(2), sd of (0.9, 1.1) = 0.1414.
    assert other.ratio_high - other.ratio == pytest.approx(12.7062 * 0.141421 / 2**0.5, rel=1e-4)
    assert other.mean_jct_s == 155
