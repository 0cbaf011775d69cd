"""Placement on a cluster with network tiers: does knowing the racks and pods pay?

:func:`tiers_study` simulates policies x placement methods on LLM-heavy :func:`dnn_mix`
workloads on a tiered cluster (:meth:`~asrpt_opt.model.cluster.Cluster.tiered`) over offered
loads, oversubscriptions and seeds; :func:`summarize` pairs each method with a reference
method on the same workloads and gives the mean-JCT ratio with its 95% confidence interval
over the seeds (docs/placement.md, "Placement on tiers inside the scheduler").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.policies.registry import simulate
from asrpt_opt.sim.placer import Placement
from asrpt_opt.traces.synthetic import LLM_MIX_TYPES, dnn_mix

__all__ = ["TierRow", "TierSummary", "summarize", "tiers_study"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TierRow:
    """One policy with one placement method on one workload.

    Attributes
    ----------
    load, oversubscription : float
    seed : int
    policy, placement : str
    mean_jct_s, p95_jct_s : float
    placement_slowdown : float
        Mean over jobs of GPU time held over GPU time at the best rate.
    cross_server_gb, cross_rack_gb, cross_pod_gb : float
        GB sent between servers at all, between racks (pods included), between pods.
    """

    load: float
    oversubscription: float
    seed: int
    policy: str
    placement: str
    mean_jct_s: float
    p95_jct_s: float
    placement_slowdown: float
    cross_server_gb: float
    cross_rack_gb: float
    cross_pod_gb: float

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class TierSummary:
    """A method against the reference method, paired over seeds.

    Attributes
    ----------
    load, oversubscription : float
    policy, placement : str
    runs : int
    mean_jct_s : float
        Mean over seeds.
    ratio, ratio_low, ratio_high : float
        Mean over seeds of mean JCT over the reference's on the same workload, and its 95%
        confidence interval (Student's t; a point with one seed).
    p95_jct_s, cross_rack_gb : float
        Means over seeds.
    """

    load: float
    oversubscription: float
    policy: str
    placement: str
    runs: int
    mean_jct_s: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p95_jct_s: float
    cross_rack_gb: float


def _traffic_gb(inst: Instance, schedule: Any, speed: Any) -> tuple[float, float]:
    """GB between racks and between pods over the whole schedule."""
    rack = pod = 0.0
    for job, run in zip(inst.jobs, schedule.runs, strict=True):
        if job.is_abstract:
            continue
        for k, seg in enumerate(run.segments):
            busy = max(seg.end_s - seg.start_s - (schedule.restore_overhead_s if k else 0.0), 0)
            iters = busy * speed.rate(job, seg.allocation)
            levels = speed.cross_tier_bytes(job, seg.allocation)
            rack += iters * sum(levels[1:])
            pod += iters * sum(levels[2:])
    return rack / 1e9, pod / 1e9


def tiers_study(
    n_jobs: int = 300,
    *,
    servers_per_rack: int = 4,
    racks: int = 32,
    racks_per_pod: int = 4,
    loads: Sequence[float] = (0.5, 0.7, 0.9),
    oversubscription: Sequence[float] = (1.0, 3.0),
    policies: Sequence[str] = ("a-srpt", "fifo", "srtf"),
    placements: Sequence[str | Placement] = ("consolidate-flat", "consolidate", "mincut"),
    seeds: Sequence[int] = (0, 1, 2),
    progress: Callable[[int, int], None] | None = None,
) -> list[TierRow]:
    """Simulate every policy with every placement method on LLM-mix workloads on tiers.

    Each (load, oversubscription, seed) draws one workload (``dnn_mix(..., types=
    LLM_MIX_TYPES)``, its iteration counts from that cluster's best rates), so rows of one
    workload differ only by policy and placement.

    Parameters
    ----------
    n_jobs : int
    servers_per_rack, racks, racks_per_pod : int
        The cluster: 8 pods x 4 racks x 4 servers of 8 GPUs by default (1,024 GPUs).
    loads, oversubscription : sequence of float
    policies : sequence of str
    placements : sequence of str or Placement
        Methods, or methods with a choice among candidates (rows name them as the
        simulation reports them, e.g. ``consolidate+fragmentation``).
    seeds : sequence of int
    progress : callable, optional
        ``progress(done, total)`` after each simulation.

    Returns
    -------
    list of TierRow
    """
    from asrpt_opt.speed.cluster import ClusterSpeed

    total = len(loads) * len(oversubscription) * len(seeds) * len(policies) * len(placements)
    rows: list[TierRow] = []
    for over in oversubscription:
        cluster = Cluster.tiered(
            servers_per_rack=servers_per_rack,
            racks=racks,
            racks_per_pod=racks_per_pod,
            oversubscription=over,
        )
        # One speed model per cluster: its best shapes and arrangements serve every run.
        speed = ClusterSpeed(cluster)
        for load in loads:
            for seed in seeds:
                inst = dnn_mix(n_jobs, cluster, load=load, types=LLM_MIX_TYPES, seed=seed)
                for policy in policies:
                    for method in placements:
                        res = simulate(inst, policy, placement=method, seed=seed, speed=speed)
                        m = res.metrics
                        rack, pod = _traffic_gb(inst, res.schedule, speed)
                        rows.append(
                            TierRow(
                                load=load,
                                oversubscription=over,
                                seed=seed,
                                policy=policy,
                                placement=res.placement,
                                mean_jct_s=m.mean_jct_s,
                                p95_jct_s=m.p95_jct_s,
                                placement_slowdown=m.placement_slowdown,
                                cross_server_gb=m.cross_server_gb,
                                cross_rack_gb=rack,
                                cross_pod_gb=pod,
                            )
                        )
                        if progress:
                            progress(len(rows), total)
    return rows


def summarize(rows: Sequence[TierRow], *, reference: str = "consolidate") -> list[TierSummary]:
    """Pair every method with ``reference`` on the same workloads (same load,
    oversubscription, seed and policy).

    Parameters
    ----------
    rows : sequence of TierRow
    reference : str
        The placement method the ratios are relative to.

    Returns
    -------
    list of TierSummary
        One per (load, oversubscription, policy, placement), in the rows' order.
    """
    from asrpt_opt.analysis.sensitivity import ci95_half_width

    ref = {
        (r.load, r.oversubscription, r.seed, r.policy): r.mean_jct_s
        for r in rows
        if r.placement == reference
    }
    groups: dict[tuple[float, float, str, str], list[TierRow]] = {}
    for r in rows:
        groups.setdefault((r.load, r.oversubscription, r.policy, r.placement), []).append(r)
    out = []
    for (load, over, policy, method), members in groups.items():
        ratios = np.array([r.mean_jct_s / ref[load, over, r.seed, policy] for r in members])
        half = ci95_half_width(ratios)
        out.append(
            TierSummary(
                load=load,
                oversubscription=over,
                policy=policy,
                placement=method,
                runs=len(members),
                mean_jct_s=float(np.mean([r.mean_jct_s for r in members])),
                ratio=float(ratios.mean()),
                ratio_low=float(ratios.mean() - half),
                ratio_high=float(ratios.mean() + half),
                p95_jct_s=float(np.mean([r.p95_jct_s for r in members])),
                cross_rack_gb=float(np.mean([r.cross_rack_gb for r in members])),
            )
        )
    return out
