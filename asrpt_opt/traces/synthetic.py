"""Seeded synthetic workloads.

``philly_like`` draws jobs whose widths and lengths follow the shape reported for Microsoft's
Philly cluster (Jeon et al., USENIX ATC 2019): most jobs use one GPU, a minority 8 or more,
and lengths are heavy-tailed (log-normal, minutes to days). Arrivals are Poisson with the
rate that makes the offered load (GPU-seconds requested per second over GPUs) equal ``load``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.columns import jobs_from_columns
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.traces.msj import msj, msj_columns

__all__ = [
    "DNN_MIX_TYPES",
    "LLM_MIX_TYPES",
    "PHILLY_WIDTHS",
    "abstract_jobs",
    "dnn_mix",
    "msj",
    "msj_columns",
    "philly_like",
    "recurring_jobs",
]

#: GPU widths and their probabilities (Philly-like: half the jobs use one GPU).
PHILLY_WIDTHS: dict[int, float] = {1: 0.50, 2: 0.10, 4: 0.15, 8: 0.20, 16: 0.04, 32: 0.01}


#: Abstract jobs from columns (:func:`~asrpt_opt.model.columns.jobs_from_columns`).
abstract_jobs = jobs_from_columns


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
        raise UsageError("n_jobs must be >= 1")
    if not load > 0:
        raise UsageError("load must be > 0")
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
    jobs = abstract_jobs(release, dur, gpus, weight=weights, spread_slowdown=slow)
    return Instance(
        name=name or f"philly-like-{n_jobs}",
        cluster=cluster,
        jobs=jobs,
        provenance={"generator": "asrpt_opt.traces.synthetic.philly_like", "load": load},
    )


def recurring_jobs(
    n_jobs: int,
    *,
    servers: Sequence[int] = (8,) * 16,
    n_groups: int = 200,
    zipf_a: float = 1.6,
    group_sigma: float = 0.35,
    load: float = 0.8,
    seed: int | np.random.Generator | None = None,
    name: str | None = None,
) -> Instance:
    """Recurring jobs: groups of re-submissions of the same training job.

    Each of ``n_groups`` groups has a recurrence key, a model, dataset, batch size, user and
    width, and a median length drawn log-normally (median 1 h, sigma 1.5). Jobs pick their
    group with Zipf-like heavy-tailed probabilities (exponent ``zipf_a``), so a few groups
    recur very often and many rarely; a job's length is its group's median times a
    log-normal factor with shape ``group_sigma``. Arrivals are Poisson at offered ``load``.

    Parameters
    ----------
    n_jobs : int
    servers : sequence of int
    n_groups : int
    zipf_a : float
        > 1.
    group_sigma : float
        Spread of lengths within a group (log scale).
    load : float
    seed : int, Generator or None
    name : str, optional

    Returns
    -------
    Instance
    """
    if n_jobs < 1 or n_groups < 1:
        raise UsageError("n_jobs and n_groups must be >= 1")
    if not zipf_a > 1:
        raise UsageError("zipf_a must be > 1")
    rng = np.random.default_rng(seed)
    cluster = Cluster(servers=tuple(servers))
    m = cluster.total_gpus
    models = ("resnet50", "vgg16", "gnmt", "resnet18", "inception_v3", "gpt2-1.5b", "bert", "ncf")
    datasets = ("imagenet", "cifar10", "wmt16", "wiki", "movielens", "coco")
    widths = np.array([w for w in PHILLY_WIDTHS if w <= m])
    probs = np.array([PHILLY_WIDTHS[w] for w in widths])
    g_model = rng.choice(models, n_groups)
    g_data = rng.choice(datasets, n_groups)
    g_batch = rng.choice([32, 64, 128, 256], n_groups)
    g_user = rng.integers(0, max(1, n_groups // 4), n_groups)
    g_gpus = rng.choice(widths, n_groups, p=probs / probs.sum())
    g_median = np.exp(rng.normal(np.log(3600.0), 1.5, n_groups))
    weights = 1.0 / np.arange(1, n_groups + 1) ** zipf_a
    group = rng.choice(n_groups, size=n_jobs, p=weights / weights.sum())
    dur = np.clip(
        np.round(g_median[group] * np.exp(rng.normal(0, group_sigma, n_jobs))), 60, 30 * 86400.0
    )
    gpus = g_gpus[group]
    rate = load * m / float(np.mean(gpus * dur))
    release = np.round(np.cumsum(rng.exponential(1.0 / rate, n_jobs)), 3)
    release -= release[0]
    width = len(str(n_jobs - 1))
    jobs = tuple(
        Job(
            id=f"r{i:0{width}d}",
            release_s=float(release[i]),
            gpus=int(gpus[i]),
            duration_s=float(dur[i]),
            features={
                "recurrence_key": f"g{int(group[i])}",
                "model": str(g_model[group[i]]),
                "dataset": str(g_data[group[i]]),
                "batch_size": int(g_batch[group[i]]),
                "user": f"u{int(g_user[group[i]])}",
            },
        )
        for i in range(n_jobs)
    )
    return Instance(
        name=name or f"recurring-{n_jobs}",
        cluster=cluster,
        jobs=jobs,
        provenance={
            "generator": "asrpt_opt.traces.synthetic.recurring_jobs",
            "n_groups": n_groups,
            "zipf_a": zipf_a,
            "group_sigma": group_sigma,
            "load": load,
        },
    )


#: Job types of :func:`dnn_mix`: (model, dp, pp, tp, relative frequency). Data-parallel CNNs
#: (the bundled PipeDream profiles), pipeline-parallel CNNs and translation models, and GPT-2 /
#: GPT-3 with tensor x pipeline x data parallelism, 1 to 64 GPUs.
DNN_MIX_TYPES: tuple[tuple[str, int, int, int, float], ...] = (
    ("resnet18", 1, 1, 1, 0.14),
    ("resnet50", 1, 1, 1, 0.10),
    ("resnet50", 2, 1, 1, 0.08),
    ("resnet50", 4, 1, 1, 0.07),
    ("resnet50", 8, 1, 1, 0.05),
    ("inception_v3", 4, 1, 1, 0.04),
    ("densenet121", 2, 1, 1, 0.04),
    ("vgg16", 8, 1, 1, 0.04),
    ("resnet101", 16, 1, 1, 0.03),
    ("vgg16", 2, 2, 1, 0.05),
    ("vgg16", 4, 4, 1, 0.03),
    ("gnmt", 2, 4, 1, 0.04),
    ("gnmt", 4, 2, 1, 0.03),
    ("gpt2-1.5b", 1, 1, 2, 0.05),
    ("gpt2-1.5b", 1, 2, 4, 0.04),
    ("gpt2-1.5b", 2, 2, 4, 0.03),
    ("gpt2-1.5b", 4, 2, 2, 0.03),
    ("gpt2-1.5b", 2, 4, 4, 0.02),
    ("gpt3-6.7b", 1, 2, 4, 0.02),
    ("gpt3-6.7b", 2, 2, 8, 0.015),
    ("gpt3-6.7b", 2, 4, 4, 0.015),
    ("gpt3-6.7b", 4, 4, 4, 0.01),
    ("gpt3-6.7b", 2, 4, 8, 0.01),
)


#: Job types of an LLM-heavy mix (``dnn_mix(..., types=LLM_MIX_TYPES)``): GPT-2 and GPT-3
#: with tensor parallelism inside a server, pipeline and data parallelism across, 8 to 256
#: GPUs, next to single-GPU CNN jobs (Megatron-style plans, Narayanan et al., SC 2021).
LLM_MIX_TYPES: tuple[tuple[str, int, int, int, float], ...] = (
    ("resnet18", 1, 1, 1, 0.25),
    ("resnet50", 1, 1, 1, 0.20),
    ("gpt2-1.5b", 1, 1, 8, 0.12),
    ("gpt2-1.5b", 2, 1, 8, 0.08),
    ("gpt3-6.7b", 1, 2, 8, 0.06),
    ("gpt2-1.5b", 4, 2, 4, 0.08),
    ("gpt3-6.7b", 2, 4, 8, 0.08),
    ("gpt3-6.7b", 4, 4, 8, 0.07),
    ("gpt3-6.7b", 8, 4, 8, 0.06),
)


def dnn_mix(
    n_jobs: int,
    cluster: Cluster,
    *,
    load: float = 0.7,
    types: Sequence[tuple[str, int, int, int, float]] = DNN_MIX_TYPES,
    median_length_s: float = 3600.0,
    sigma: float = 1.2,
    max_length_s: float = 7 * 86400.0,
    seed: int | np.random.Generator | None = None,
    name: str | None = None,
) -> Instance:
    """Draw an instance of DNN jobs where placement matters.

    Each job's type (model and dp x pp x tp) is drawn from ``types`` (types wider than the
    cluster are left out); its length on its best placement in the empty cluster is
    log-normal (median ``median_length_s``, clipped to [60 s, ``max_length_s``]) and becomes
    ``iterations`` through the worker-graph iteration time. Arrivals are Poisson at the rate
    that makes the offered load (GPU-seconds on best placements requested per second, over
    the cluster's GPUs) equal ``load``. On a cluster with network tiers, a job type whose best
    rate is only bounded (wider than a rack) refers instead to the faster of tier-aware
    consolidation and ``mincut`` on the empty cluster, a placement it can get: the bound
    would understate its length and so the load.

    Parameters
    ----------
    n_jobs : int
    cluster : Cluster
        Must give both bandwidths.
    load : float
        Offered load, > 0.
    types : sequence of (model, dp, pp, tp, relative frequency)
        :data:`DNN_MIX_TYPES` by default; :data:`LLM_MIX_TYPES` for large GPT jobs.
    median_length_s, sigma, max_length_s : float
    seed : int, Generator or None
    name : str, optional

    Returns
    -------
    Instance
        Jobs in arrival order, with ``features`` model, parallelism and recurrence key.
    """
    from asrpt_opt.model.job import Parallelism
    from asrpt_opt.speed.cluster import ClusterSpeed

    if n_jobs < 1:
        raise UsageError("n_jobs must be >= 1")
    if not load > 0:
        raise UsageError("load must be > 0")
    if cluster.intra_server_gbps is None or cluster.inter_server_gbps is None:
        raise UsageError("dnn_mix needs a cluster with intra_server_gbps and inter_server_gbps")
    rng = np.random.default_rng(seed)
    m = cluster.total_gpus
    kinds = {} if tuple(types) == DNN_MIX_TYPES else {"types": _types_name(types)}
    types = [t for t in types if t[1] * t[2] * t[3] <= m]
    freq = np.array([t[4] for t in types])
    speed = ClusterSpeed(cluster)
    taus = []
    for model, dp, pp, tp, _ in types:
        probe = Job(
            id="probe",
            release_s=0,
            gpus=dp * pp * tp,
            model=model,
            parallelism=Parallelism(dp=dp, pp=pp, tp=tp),
            iterations=1,
        )
        taus.append(_reference_tau(speed, probe, cluster))
    kind = rng.choice(len(types), size=n_jobs, p=freq / freq.sum())
    length = np.exp(rng.normal(np.log(median_length_s), sigma, size=n_jobs))
    length = np.clip(length, 60.0, max_length_s)
    tau = np.array(taus)[kind]
    iterations = np.maximum(1, np.round(length / tau)).astype(np.int64)
    gpus = np.array([types[k][1] * types[k][2] * types[k][3] for k in kind])
    rate = load * m / float(np.mean(gpus * iterations * tau))
    release = np.round(np.cumsum(rng.exponential(1.0 / rate, size=n_jobs)), 3)
    release -= release[0]
    width = len(str(n_jobs - 1))
    jobs = []
    for i in range(n_jobs):
        model, dp, pp, tp, _ = types[int(kind[i])]
        jobs.append(
            Job(
                id=f"m{i:0{width}d}",
                release_s=float(release[i]),
                gpus=int(gpus[i]),
                model=model,
                parallelism=Parallelism(dp=dp, pp=pp, tp=tp),
                iterations=int(iterations[i]),
                features={"recurrence_key": f"{model}-{dp}x{pp}x{tp}"},
            )
        )
    return Instance(
        name=name or f"dnn-mix-n{n_jobs}-load{load:g}",
        cluster=cluster,
        jobs=tuple(jobs),
        provenance={
            "generator": "asrpt_opt.traces.synthetic.dnn_mix",
            **kinds,
            "load": load,
            "median_length_s": median_length_s,
            "sigma": sigma,
            "seed": str(seed),
        },
    )


def _types_name(types: Sequence[tuple[str, int, int, int, float]]) -> str:
    return "LLM_MIX_TYPES" if tuple(types) == LLM_MIX_TYPES else "custom"


def _reference_tau(speed: Any, probe: Job, cluster: Cluster) -> float:
    """Seconds per iteration of ``probe`` on its best placement in the empty ``cluster``, or,
    where tiers leave that best only bounded, on the faster of two placements it can get."""
    from asrpt_opt.placement.methods import place
    from asrpt_opt.placement.tiers import consolidate_tiered
    from asrpt_opt.speed.cluster import worker_graph_of

    best = speed.best_shape(probe, cluster)
    if best.exact or cluster.topology is None:
        return float(1.0 / best.rate)
    free = np.asarray(cluster.servers, dtype=np.int64)
    consolidated = consolidate_tiered(free, probe.gpus, cluster.topology)
    assert consolidated is not None
    gbps = cluster.level_gbps
    split = place(
        worker_graph_of(probe),
        free,
        method="mincut",
        intra_gbps=gbps[0],
        inter_gbps=gbps[-1],
        topology=cluster.topology,
    ).allocation
    return float(1.0 / max(speed.rate(probe, consolidated), speed.rate(probe, split)))
