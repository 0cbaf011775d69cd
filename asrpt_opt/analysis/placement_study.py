"""Same policy with different placement, same placement with different policies.

:func:`placement_study` simulates policy x placement-method pairs on :func:`dnn_mix`
workloads over a grid of offered loads and inter-server bandwidths, the experiment README
reports ("Placement inside the scheduler").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.policies.registry import simulate
from asrpt_opt.traces.synthetic import dnn_mix

__all__ = ["DEFAULT_PAIRS", "StudyRow", "placement_study"]

#: A-SRPT with graph placement and with consolidation; the baselines with both.
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (
    ("a-srpt", "mincut"),
    ("a-srpt", "consolidate"),
    ("fifo", "consolidate"),
    ("fifo", "mincut"),
    ("srtf", "consolidate"),
    ("srtf", "mincut"),
    ("2d-las", "consolidate"),
    ("2d-las", "mincut"),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class StudyRow:
    """One policy with one placement method on one workload.

    Attributes
    ----------
    load : float
    inter_gbps : float
    policy, placement : str
    mean_jct_s, p95_jct_s : float
    placement_slowdown : float
    cross_server_gb : float
    """

    load: float
    inter_gbps: float
    policy: str
    placement: str
    mean_jct_s: float
    p95_jct_s: float
    placement_slowdown: float
    cross_server_gb: float

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict."""
        return asdict(self)


def placement_study(
    n_jobs: int = 1000,
    *,
    servers: Sequence[int] = (8,) * 16,
    loads: Sequence[float] = (0.5, 0.7, 0.9),
    inter_gbps: Sequence[float] = (12.5, 25.0, 50.0),
    intra_gbps: float = 300.0,
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[StudyRow]:
    """Simulate every (policy, placement) pair on a DNN-mix workload per load and bandwidth.

    The workload of a load is drawn once (same jobs and arrivals for every bandwidth, whose
    iteration counts follow the cluster of the first bandwidth), so rows of one load differ
    only by what is compared.

    Parameters
    ----------
    n_jobs : int
    servers : sequence of int
    loads, inter_gbps : sequence of float
    intra_gbps : float
    pairs : sequence of (policy, placement method)
    seed : int
    progress : callable, optional
        ``progress(done, total)`` after each simulation.

    Returns
    -------
    list of StudyRow
    """
    from asrpt_opt.model.instance import Instance

    total = len(loads) * len(inter_gbps) * len(pairs)
    rows: list[StudyRow] = []
    for load in loads:
        first = Cluster(
            servers=tuple(servers), intra_server_gbps=intra_gbps, inter_server_gbps=inter_gbps[0]
        )
        base = dnn_mix(n_jobs, first, load=load, seed=seed)
        for bw in inter_gbps:
            cluster = Cluster(
                servers=tuple(servers), intra_server_gbps=intra_gbps, inter_server_gbps=bw
            )
            inst = Instance(
                name=base.name, cluster=cluster, jobs=base.jobs, provenance=base.provenance
            )
            for policy, method in pairs:
                m = simulate(inst, policy, placement=method, seed=seed).metrics
                rows.append(
                    StudyRow(
                        load=load,
                        inter_gbps=bw,
                        policy=policy,
                        placement=method,
                        mean_jct_s=m.mean_jct_s,
                        p95_jct_s=m.p95_jct_s,
                        placement_slowdown=m.placement_slowdown,
                        cross_server_gb=m.cross_server_gb,
                    )
                )
                if progress:
                    progress(len(rows), total)
    return rows
