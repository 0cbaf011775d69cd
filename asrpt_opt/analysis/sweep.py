"""Ratio sweeps: what to compute per instance, and the executors (the resumable SQLite store
is :class:`~asrpt_opt.analysis.store.ResultStore`).

For each instance of a family, the online policies are simulated on the pooled cluster (every
family has no spread slowdown, so the pooled model is the instance as written), the offline
optimum is computed (by default the continuous-time preemptive optimum, exact for small n), and
per policy the ratio ALG/OPT is recorded, or the interval ALG/UB .. ALG/LB when the optimum is
not proven. Results go to an SQLite store one instance at a time, so an
interrupted sweep resumes without redoing or losing finished instances.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from os import PathLike

import numpy as np

from asrpt_opt.analysis.executors import EXECUTORS, run_tasks
from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.analysis.ratio import (
    InstanceOutcome,
    PolicyOutcome,
    PolicySummary,
    instance_ratio,
    summarise,
)
from asrpt_opt.analysis.store import STORE_COLUMNS, STORE_SCHEMA, ResultStore
from asrpt_opt.errors import lookup
from asrpt_opt.policies.registry import simulate
from asrpt_opt.relaxation.bounds import lower_bounds, min_lengths, virtual_sizes
from asrpt_opt.relaxation.srpt import srpt
from asrpt_opt.speed.base import PooledSpeed

__all__ = [
    "EXECUTORS",
    "STORE_COLUMNS",
    "STORE_SCHEMA",
    "RatioConfig",
    "RatioSweep",
    "ResultStore",
    "evaluate_instance",
    "ratio_sweep",
    "run_sweep",
]


@dataclass(frozen=True, kw_only=True)
class RatioConfig:
    """What a sweep computes for every instance.

    Parameters
    ----------
    family : str
    n : int
        Jobs per instance.
    policies : tuple of str
    preemptive : bool
        Offline model: preemptive (the default, matching preemptive policies) or
        non-preemptive.
    preemption : {"continuous", "grid"}
        With ``preemptive``: preemption at any time (the default: OPT over every preemptive
        schedule), or only at multiples of the time unit (``grid``, an upper bound on it,
        what asrpt-opt 0.1 computed).
    solver : str
        Offline solver (``portfolio``, ``cpsat``, ``milp``).
    time_limit_s : float
        Per instance (a safety net when ``work_limit`` is set).
    work_limit : float, optional
        Deterministic work units per instance
        (:attr:`~asrpt_opt.solvers.params.SolverParams.work_limit`): the sweep then gives the
        same table on any machine, busy or quiet, unless a solve hit the safety net (its
        ``offline_stopped_by`` says ``time``).
    """

    family: str
    n: int
    policies: tuple[str, ...]
    preemptive: bool = True
    solver: str = "portfolio"
    time_limit_s: float = 10.0
    preemption: str = "continuous"
    work_limit: float | None = None

    def __post_init__(self) -> None:
        from asrpt_opt.solvers.solve import PREEMPTION_MODELS

        lookup(dict.fromkeys(PREEMPTION_MODELS), self.preemption, what="preemption model")

    def key(self, seed: int) -> str:
        """A stable key of (config, seed) for the store."""
        # "backend" was the solver's field name when the first stores were written, and they
        # held grid optima: keep those keys, so that existing stores still resume.
        doc = asdict(self)
        doc["backend"] = doc.pop("solver")
        if doc["preemption"] == "grid" or not self.preemptive:
            del doc["preemption"]
        if doc["work_limit"] is None:  # wall-clock sweeps keep the keys they always had
            del doc["work_limit"]
        text = json.dumps({**doc, "seed": seed}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def evaluate_instance(config: RatioConfig, seed: int) -> InstanceOutcome:
    """Solve one instance offline and simulate every policy on it.

    Parameters
    ----------
    config : RatioConfig
    seed : int

    Returns
    -------
    InstanceOutcome
    """
    from asrpt_opt.solvers.solve import SolverParams, solve

    inst = make_family_instance(config.family, config.n, seed)
    t0 = time.perf_counter()
    off = solve(
        inst,
        preemption=config.preemption if config.preemptive else "none",
        cluster_model="pooled",
        solver=config.solver,
        params=SolverParams(time_limit_s=config.time_limit_s, work_limit=config.work_limit),
    )
    wall = time.perf_counter() - t0
    speed = PooledSpeed()
    lengths = min_lengths(inst, speed=speed)
    release = np.array([j.release_s for j in inst.jobs])
    virtual = srpt(release, virtual_sizes(inst, lengths)).completion_s
    lb = lower_bounds(inst, speed=speed).lower_bound_s
    bound = max(off.bound_s or 0.0, lb)
    area = float(sum(j.gpus * p for j, p in zip(inst.jobs, lengths, strict=True)))
    span = float(release.max() + lengths.max())
    policies = {}
    for name in config.policies:
        res = simulate(inst, name, speed=speed)
        value = res.metrics.total_weighted_completion_s
        policies[name] = PolicyOutcome(
            value_s=value,
            completion_s=tuple(r.completion_s for r in res.schedule.runs),
            estimate=instance_ratio(value, off.objective_s, bound, off.status == "optimal"),
        )
    return InstanceOutcome(
        family=config.family,
        n=config.n,
        seed=seed,
        load=area / (inst.cluster.total_gpus * span),
        offline_status=off.status,
        offline_value_s=off.objective_s,
        offline_bound_s=bound,
        offline_wall_s=wall,
        offline_stopped_by=str(off.params.get("stopped_by", "unknown")),
        lengths_s=tuple(lengths.tolist()),
        virtual_completion_s=tuple(virtual.tolist()),
        policies=policies,
    )


def _evaluate(task: tuple[RatioConfig, int]) -> InstanceOutcome:
    return evaluate_instance(*task)


def run_sweep(
    config: RatioConfig,
    seeds: Sequence[int],
    *,
    store: ResultStore,
    workers: int = 1,
    executor: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[InstanceOutcome]:
    """Evaluate every seed not yet in ``store``, then return every outcome in seed order.

    Parameters
    ----------
    config : RatioConfig
    seeds : sequence of int
    store : ResultStore
    workers, executor, scheduler
        Where instances are evaluated, as :func:`~asrpt_opt.analysis.executors.run_tasks`.
    progress : callable, optional
        Called as ``progress(done, total)`` after each instance.

    Returns
    -------
    list of InstanceOutcome
    """
    seeds = list(seeds)
    finished = store.done(config)
    todo = [s for s in seeds if s not in finished]
    done = len(seeds) - len(todo)
    if progress:
        progress(done, len(seeds))
    tasks = [(config, seed) for seed in todo]
    runs = run_tasks(_evaluate, tasks, workers=workers, executor=executor, scheduler=scheduler)
    for (_, seed), outcome in runs:
        store.put(config, seed, outcome)
        done += 1
        if progress:
            progress(done, len(seeds))
    return store.load(config, seeds)


@dataclass(frozen=True, kw_only=True)
class RatioSweep:
    """What :func:`ratio_sweep` found.

    Attributes
    ----------
    config : RatioConfig
    outcomes : tuple of InstanceOutcome
        One per seed, in seed order.
    summary : dict of str -> PolicySummary
        Per policy: the ratios over proven instances, the intervals of the others, (a, b).
    """

    config: RatioConfig
    outcomes: tuple[InstanceOutcome, ...]
    summary: dict[str, PolicySummary]


def ratio_sweep(
    family: str,
    *,
    n: int,
    policies: Sequence[str],
    seeds: int | Sequence[int] = 10,
    store: str | PathLike[str] | ResultStore = ":memory:",
    workers: int = 1,
    executor: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **config: object,
) -> RatioSweep:
    """Competitive ratios of online policies against offline optima, over seeded instances.

    The front door of a sweep: it builds the :class:`RatioConfig`, runs :func:`run_sweep`
    (resuming from ``store``) and summarises per policy.

    Parameters
    ----------
    family : str
        Instance family (``asrpt_opt.analysis.families.FAMILIES``).
    n : int
        Jobs per instance.
    policies : sequence of str
        Registered policy names.
    seeds : int or sequence of int
        The seeds (an int ``k`` means ``range(k)``).
    store : path-like or ResultStore
        Where finished instances are kept (a file resumes an interrupted sweep); in memory
        by default.
    workers, executor, scheduler
        As :func:`run_sweep`.
    progress : callable, optional
        ``progress(done, total)`` after each instance.
    **config
        The other fields of :class:`RatioConfig` (``preemptive``, ``preemption``, ``solver``,
        ``time_limit_s``).

    Returns
    -------
    RatioSweep

    Examples
    --------
    >>> sweep = ratio_sweep("poisson", n=4, policies=["a-srpt", "fifo"], seeds=2)
    >>> sorted(sweep.summary)
    ['a-srpt', 'fifo']
    """
    cfg = RatioConfig(family=family, n=n, policies=tuple(policies), **config)  # type: ignore[arg-type]
    owned = not isinstance(store, ResultStore)
    db = ResultStore(store) if not isinstance(store, ResultStore) else store
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    try:
        outcomes = run_sweep(
            cfg,
            seed_list,
            store=db,
            workers=workers,
            executor=executor,
            scheduler=scheduler,
            progress=progress,
        )
    finally:
        if owned:
            db.close()
    return RatioSweep(
        config=cfg, outcomes=tuple(outcomes), summary=summarise(outcomes, cfg.policies)
    )
