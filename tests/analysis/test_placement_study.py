"""The placement study: rows for every (load, bandwidth, policy, placement)."""

from __future__ import annotations

from asrpt_opt.analysis.placement_study import placement_study


def test_small_study_has_every_row_and_consistent_metrics():
    pairs = (("a-srpt", "mincut"), ("a-srpt", "consolidate"))
    rows = placement_study(
        60, servers=(8, 8, 8), loads=(0.9,), inter_gbps=(12.5, 50.0), pairs=pairs
    )
    assert [(r.inter_gbps, r.placement) for r in rows] == [
        (12.5, "mincut"),
        (12.5, "consolidate"),
        (50.0, "mincut"),
        (50.0, "consolidate"),
    ]
    for r in rows:
        assert r.placement_slowdown >= 1.0 - 1e-12
        assert r.p95_jct_s >= r.mean_jct_s * 0.5
    # Faster links make spreading cheaper: placement slowdown falls with bandwidth.
    assert rows[2].placement_slowdown <= rows[0].placement_slowdown
