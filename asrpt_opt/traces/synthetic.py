"""Seeded synthetic workloads.

``philly_like`` draws jobs whose widths and lengths follow the shape reported for Microsoft's
Philly cluster (Jeon et al., USENIX ATC 2019): most jobs use one GPU, a minority 8 or more,
and lengths are heavy-tailed (log-normal, minutes to days). Arrivals are Poisson with the
rate that makes the offered load (GPU-seconds requested per second over GPUs) equal ``load``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job

__all__ = ["PHILLY_WIDTHS", "philly_like"]

#: GPU widths and their probabilities (Philly-like: half the jobs use one GPU).
PHILLY_WIDTHS: dict[int, float] = {1: 0.50, 2: 0.10, 4: 0.15, 8: 0.20, 16: 0.04, 32: 0.01}


def philly_like(
    n_jobs: int,
    *,
    servers: Sequence[int] = (8,) * 16,
    load: float = 0.9,
    median_duration_s: float = 3600.0,
    sigma: float = 1.5,
    max_duration_s: float = 14 * 86400.0,
    weighted: bool = False,
    seed: int | np.random.Generator | None = None,
    name: str | None = None,
) -> Instance:
    """Draw a Philly-like instance of abstract jobs.

    Parameters
    ----------
    n_jobs : int
        Number of jobs (>= 1).
    servers : sequence of int
        GPUs per server.
    load : float
        Offered load, > 0 (1.0 = the cluster's GPU-seconds are requested exactly as fast as
        they exist).
    median_duration_s, sigma : float
        Log-normal length: median and shape. Lengths are clipped to [60 s, max_duration_s].
    max_duration_s : float
    weighted : bool
        Draw integer weights 1..5 (otherwise every weight is 1).
    seed : int, Generator or None
    name : str, optional

    Returns
    -------
    Instance
        Jobs in arrival order; wide jobs get a spread slowdown of 1.0 to 1.5.

    References
    ----------
    .. [1] M. Jeon et al., "Analysis of large-scale multi-tenant GPU clusters for DNN training
       workloads", USENIX ATC 2019.
    """
    if n_jobs < 1:
        raise ValueError("n_jobs must be >= 1")
    if not load > 0:
        raise ValueError("load must be > 0")
    rng = np.random.default_rng(seed)
    cluster = Cluster(servers=tuple(servers))
    m = cluster.total_gpus
    widths = np.array([w for w in PHILLY_WIDTHS if w <= m])
    probs = np.array([PHILLY_WIDTHS[w] for w in widths])
    gpus = rng.choice(widths, size=n_jobs, p=probs / probs.sum())
    dur = np.exp(rng.normal(np.log(median_duration_s), sigma, size=n_jobs))
    dur = np.clip(np.round(dur), 60.0, max_duration_s)
    slow = np.where(gpus > 1, np.round(1.0 + 0.5 * rng.random(n_jobs), 3), 1.0)
    rate = load * m / float(np.mean(gpus * dur))
    release = np.round(np.cumsum(rng.exponential(1.0 / rate, size=n_jobs)), 3)
    release -= release[0]
    weights = rng.integers(1, 6, size=n_jobs) if weighted else np.ones(n_jobs, dtype=np.int64)
    width = len(str(n_jobs - 1))
    jobs = tuple(
        Job(
            id=f"j{i:0{width}d}",
            release_s=float(release[i]),
            gpus=int(gpus[i]),
            duration_s=float(dur[i]),
            spread_slowdown=float(slow[i]),
            weight=float(weights[i]),
        )
        for i in range(n_jobs)
    )
    return Instance(
        name=name or f"philly-like-{n_jobs}",
        cluster=cluster,
        jobs=jobs,
        provenance={"generator": "asrpt_opt.traces.synthetic.philly_like", "load": load},
    )
