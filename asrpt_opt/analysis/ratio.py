"""Empirical competitive ratios against exact offline optima.

For each instance of a family, the online policies are simulated on the pooled cluster (every
family has integer data and no spread slowdown, so preemptive policies preempt only at integer
times and their schedules are feasible for the unit-slot offline model), the offline optimum is
computed, and per policy the ratio ALG/OPT is recorded, or the interval ALG/UB .. ALG/LB when
the optimum is not proven. Results go to an SQLite store one instance at a time, so an
interrupted sweep resumes without redoing or losing finished instances.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any

import numpy as np

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.speed import PooledSpeed
from asrpt_opt.relaxation.bounds import lower_bounds, min_lengths, virtual_sizes
from asrpt_opt.relaxation.srpt import srpt
from asrpt_opt.sim.engine import simulate

__all__ = [
    "RatioConfig",
    "ResultStore",
    "evaluate_instance",
    "fit_ab",
    "instance_ratio",
    "plot_ratios",
    "run_sweep",
    "summarise",
    "worst_case",
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
        Offline model: preemptive (unit slots, the default, matching preemptive policies)
        or non-preemptive.
    backend : str
        Offline backend (``portfolio``, ``cpsat``, ``milp``).
    time_limit_s : float
        Per backend and instance.
    """

    family: str
    n: int
    policies: tuple[str, ...]
    preemptive: bool = True
    backend: str = "portfolio"
    time_limit_s: float = 10.0

    def key(self, seed: int) -> str:
        """A stable key of (config, seed) for the store."""
        text = json.dumps({**asdict(self), "seed": seed}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def evaluate_instance(config: RatioConfig, seed: int) -> dict[str, Any]:
    """Solve one instance offline and simulate every policy on it.

    Parameters
    ----------
    config : RatioConfig
    seed : int

    Returns
    -------
    dict
        JSON-ready: instance data, offline status/value/bound, and per policy the value,
        the ratio interval and the per-job completion times.
    """
    from asrpt_opt.solvers import SolverParams, solve

    inst = make_family_instance(config.family, config.n, seed)
    t0 = time.perf_counter()
    off = solve(
        inst,
        preemptive=config.preemptive,
        placement="pooled",
        backend=config.backend,
        params=SolverParams(time_limit_s=config.time_limit_s),
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
    out: dict[str, Any] = {
        "family": config.family,
        "n": config.n,
        "seed": seed,
        "load": area / (inst.cluster.total_gpus * span),
        "offline_status": off.status,
        "offline_value_s": off.objective_s,
        "offline_bound_s": bound,
        "offline_wall_s": wall,
        "lengths_s": lengths.tolist(),
        "virtual_completion_s": virtual.tolist(),
        "policies": {},
    }
    for name in config.policies:
        res = simulate(inst, name, speed=speed)
        value = res.metrics.total_weighted_completion_s
        out["policies"][name] = {
            "value_s": value,
            "completion_s": [r.completion_s for r in res.schedule.runs],
            **instance_ratio(value, off.objective_s, bound, off.status == "optimal"),
        }
    return out


def instance_ratio(
    value: float, upper: float | None, lower: float, proven: bool
) -> dict[str, float | bool | None]:
    """ALG/OPT when OPT is proven, else the interval ALG/UB .. ALG/LB.

    Parameters
    ----------
    value : float
        The policy's objective.
    upper : float or None
        Best verified offline value (an upper bound on OPT).
    lower : float
        Proven lower bound on OPT.
    proven : bool

    Returns
    -------
    dict
        ``ratio`` (None unless proven), ``ratio_lo``, ``ratio_hi``, ``proven``.
    """
    lo = value / upper if upper else math.nan
    hi = value / lower if lower > 0 else math.inf
    if proven and upper:
        return {
            "ratio": value / upper,
            "ratio_lo": value / upper,
            "ratio_hi": value / upper,
            "proven": True,
        }
    return {"ratio": None, "ratio_lo": lo, "ratio_hi": hi, "proven": False}


def fit_ab(
    completion: Sequence[float], virtual: Sequence[float], length: Sequence[float]
) -> dict[str, float]:
    """Smallest constants with C_j <= a * C~_j + b * p_j for every job (DESIGN.md 2.5).

    There is a trade-off curve of such pairs; this returns the pair minimising a + b (a
    two-variable LP), the smallest a with b = 0, and the smallest b with a = 1.

    Parameters
    ----------
    completion : sequence of float
        C_j of the online schedule.
    virtual : sequence of float
        C~_j, completion on the virtual single machine.
    length : sequence of float
        p_j.

    Returns
    -------
    dict
        ``a``, ``b`` (min a + b), ``a_when_b0``, ``b_when_a1``.
    """
    from scipy.optimize import linprog

    c = np.asarray(completion, dtype=float)
    v = np.asarray(virtual, dtype=float)
    p = np.asarray(length, dtype=float)
    res = linprog(
        [1.0, 1.0],
        A_ub=-np.column_stack([v, p]),
        b_ub=-c,
        bounds=[(0, None), (0, None)],
        method="highs",
    )
    a, b = (float(x) for x in res.x) if res.success else (math.nan, math.nan)
    return {
        "a": a,
        "b": b,
        "a_when_b0": float(np.max(c / v)),
        "b_when_a1": float(max(0.0, np.max((c - v) / p))),
    }


class ResultStore:
    """An SQLite file holding one row per finished (config, seed).

    Each row is committed as soon as it is written, so killing a sweep loses nothing that
    finished and a rerun skips it.
    """

    def __init__(self, path: str | PathLike[str] = ":memory:") -> None:
        self.path = str(path)
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, family TEXT, n INTEGER,"
            " seed INTEGER, config TEXT, payload TEXT, created REAL)"
        )
        self.db.commit()

    def done(self, config: RatioConfig) -> set[int]:
        """Seeds already finished for ``config``."""
        rows = self.db.execute(
            "SELECT seed, key FROM results WHERE family=? AND n=?", (config.family, config.n)
        )
        return {seed for seed, key in rows if key == config.key(seed)}

    def put(self, config: RatioConfig, seed: int, payload: dict[str, Any]) -> None:
        """Store one finished instance (atomically)."""
        self.db.execute(
            "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                config.key(seed),
                config.family,
                config.n,
                seed,
                json.dumps(asdict(config), sort_keys=True),
                json.dumps(payload),
                time.time(),
            ),
        )
        self.db.commit()

    def load(self, config: RatioConfig, seeds: Sequence[int]) -> list[dict[str, Any]]:
        """Payloads of ``seeds`` (those present), in seed order."""
        out = []
        for seed in seeds:
            row = self.db.execute(
                "SELECT payload FROM results WHERE key=?", (config.key(seed),)
            ).fetchone()
            if row is not None:
                out.append(json.loads(row[0]))
        return out

    def close(self) -> None:
        """Close the database."""
        self.db.close()


def _results(
    config: RatioConfig, seeds: list[int], workers: int, backend: str, scheduler: str | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    if backend == "dask":
        from dask.distributed import Client, as_completed

        client = Client(scheduler) if scheduler else Client(processes=True, n_workers=workers)
        try:
            futures = {client.submit(evaluate_instance, config, s, pure=False): s for s in seeds}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            client.close()
        return
    if backend != "loky":
        raise ValueError(f"backend must be 'loky' or 'dask', got {backend!r}")
    if workers <= 1:
        for s in seeds:
            yield s, evaluate_instance(config, s)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=workers, backend="loky", return_as="generator_unordered")
    tasks = (delayed(_tagged)(config, s) for s in seeds)
    yield from parallel(tasks)


def _tagged(config: RatioConfig, seed: int) -> tuple[int, dict[str, Any]]:
    return seed, evaluate_instance(config, seed)


def run_sweep(
    config: RatioConfig,
    seeds: Sequence[int],
    *,
    store: ResultStore,
    workers: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every seed not yet in ``store``, then return all payloads in seed order.

    Parameters
    ----------
    config : RatioConfig
    seeds : sequence of int
    store : ResultStore
    workers : int
        Processes on this machine (``loky``) or local Dask workers when no scheduler is given.
    backend : {"loky", "dask"}
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``).
    progress : callable, optional
        Called as ``progress(done, total)`` after each instance.

    Returns
    -------
    list of dict
    """
    seeds = list(seeds)
    finished = store.done(config)
    todo = [s for s in seeds if s not in finished]
    done = len(seeds) - len(todo)
    if progress:
        progress(done, len(seeds))
    for seed, payload in _results(config, todo, workers, backend, scheduler):
        store.put(config, seed, payload)
        done += 1
        if progress:
            progress(done, len(seeds))
    return store.load(config, seeds)


def summarise(payloads: list[dict[str, Any]], policies: Sequence[str]) -> dict[str, Any]:
    """Per policy: ratio distribution over proven instances, intervals for the rest, (a, b).

    Parameters
    ----------
    payloads : list of dict
        From :func:`run_sweep`.
    policies : sequence of str

    Returns
    -------
    dict
    """
    out: dict[str, Any] = {}
    for name in policies:
        rows = [p["policies"][name] for p in payloads]
        proven = np.array([r["ratio"] for r in rows if r["proven"]], dtype=float)
        lo = np.array([r["ratio_lo"] for r in rows], dtype=float)
        hi = np.array([r["ratio_hi"] for r in rows], dtype=float)
        comp = [c for p in payloads for c in p["policies"][name]["completion_s"]]
        virt = [c for p in payloads for c in p["virtual_completion_s"]]
        lens = [c for p in payloads for c in p["lengths_s"]]
        out[name] = {
            "instances": len(rows),
            "proven": int(proven.size),
            "ratio_mean": float(proven.mean()) if proven.size else None,
            "ratio_p95": float(np.percentile(proven, 95)) if proven.size else None,
            "ratio_max": float(proven.max()) if proven.size else None,
            "unproven_intervals": [
                [float(a), float(b)]
                for a, b, r in zip(lo, hi, rows, strict=True)
                if not r["proven"]
            ],
            "ratio_hi_max": float(hi.max()) if hi.size else None,
            "fit": fit_ab(comp, virt, lens) if comp else None,
        }
    return out


def plot_ratios(
    payloads: list[dict[str, Any]], policies: Sequence[str], out_dir: str
) -> list[str]:
    """Write the ratio CDF per policy and ratio vs offered load (PNG).

    Unproven instances are drawn at the upper end of their interval (the pessimistic value).

    Parameters
    ----------
    payloads : list of dict
    policies : sequence of str
    out_dir : str

    Returns
    -------
    list of str
        The files written.
    """
    from pathlib import Path

    from asrpt_opt.analysis.plots import plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in policies:
        r = np.sort([p["policies"][name]["ratio_hi"] for p in payloads])
        ax.step(r, np.arange(1, r.size + 1) / r.size, where="post", label=name)
    ax.set_xlabel("ALG / OPT (upper end of the interval when OPT is not proven)")
    ax.set_ylabel("fraction of instances")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    cdf = out / "ratio-cdf.png"
    fig.savefig(cdf, dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    load = [p["load"] for p in payloads]
    for name in policies:
        ax.scatter(load, [p["policies"][name]["ratio_hi"] for p in payloads], s=12, label=name)
    ax.set_xlabel("offered load")
    ax.set_ylabel("ALG / OPT")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    vs = out / "ratio-vs-load.png"
    fig.savefig(vs, dpi=120)
    plt.close(fig)
    return [str(cdf), str(vs)]


@dataclass(frozen=True, kw_only=True)
class WorstCase:
    """The worst instance a local search found.

    Attributes
    ----------
    instance : Instance
    ratio : float
        ALG / OPT (OPT proven optimal).
    policy_value_s, optimum_s : float
    evaluations : int
    """

    instance: Instance
    ratio: float
    policy_value_s: float
    optimum_s: float
    evaluations: int


def worst_case(
    policy: str,
    n: int,
    *,
    family: str = "poisson",
    budget_s: float = 60.0,
    time_limit_s: float = 5.0,
    preemptive: bool = True,
    seed: int | np.random.Generator | None = 0,
) -> WorstCase:
    """Hill-climb over small instances to maximise ``policy``'s ratio to the proven optimum.

    Starting from a random instance of ``family``, each step changes one job's release,
    duration or width by a small random amount and keeps the change if the ratio does not
    drop; only instances whose optimum is proven count. Restarts from a fresh instance after
    50 steps without improvement.

    Parameters
    ----------
    policy : str
    n : int
    family : str
    budget_s : float
        Wall-clock budget.
    time_limit_s : float
        Offline solver limit per evaluation.
    preemptive : bool
        Offline model.
    seed : int, Generator or None

    Returns
    -------
    WorstCase
    """
    from asrpt_opt.model.job import Job
    from asrpt_opt.solvers import SolverParams, solve

    rng = np.random.default_rng(seed)
    params = SolverParams(time_limit_s=time_limit_s)
    speed = PooledSpeed()

    def score(inst: Instance) -> tuple[float, float, float] | None:
        off = solve(inst, preemptive=preemptive, params=params)
        if off.status != "optimal" or not off.objective_s:
            return None
        alg = simulate(inst, policy, speed=speed).metrics.total_weighted_completion_s
        return alg / off.objective_s, alg, off.objective_s

    def mutate(inst: Instance) -> Instance:
        jobs = list(inst.jobs)
        k = int(rng.integers(len(jobs)))
        j = jobs[k]
        what = rng.integers(3)
        m = inst.cluster.total_gpus
        release, dur, gpus = j.release_s, float(j.duration_s or 1), j.gpus
        step = int(rng.choice([-2, -1, 1, 2]))
        if what == 0:
            release = max(0.0, release + step)
        elif what == 1:
            dur = float(min(20, max(1, dur + step)))
        else:
            gpus = int(min(m, max(1, gpus + step)))
        jobs[k] = Job(id=j.id, release_s=release, gpus=gpus, duration_s=dur, weight=j.weight)
        return Instance(name=inst.name, cluster=inst.cluster, jobs=tuple(jobs))

    start = time.perf_counter()
    best: WorstCase | None = None
    evaluations = 0
    while time.perf_counter() - start < budget_s:
        current = make_family_instance(family, n, rng)
        cur = score(current)
        evaluations += 1
        if cur is None:
            continue
        stale = 0
        while stale < 50 and time.perf_counter() - start < budget_s:
            cand = mutate(current)
            got = score(cand)
            evaluations += 1
            if got is not None and got[0] >= cur[0]:
                stale = 0 if got[0] > cur[0] else stale + 1
                current, cur = cand, got
            else:
                stale += 1
            if best is None or cur[0] > best.ratio:
                best = WorstCase(
                    instance=current,
                    ratio=cur[0],
                    policy_value_s=cur[1],
                    optimum_s=cur[2],
                    evaluations=evaluations,
                )
        if best is None or cur[0] > best.ratio:
            best = WorstCase(
                instance=current,
                ratio=cur[0],
                policy_value_s=cur[1],
                optimum_s=cur[2],
                evaluations=evaluations,
            )
    if best is None:
        raise RuntimeError("no instance with a proven optimum was found within the budget")
    return WorstCase(
        instance=Instance(
            name=f"worst-{policy}-n{n}",
            cluster=best.instance.cluster,
            jobs=best.instance.jobs,
            provenance={
                "search": "asrpt_opt.analysis.ratio.worst_case",
                "policy": policy,
                "ratio": best.ratio,
                "preemptive_opt": preemptive,
            },
        ),
        ratio=best.ratio,
        policy_value_s=best.policy_value_s,
        optimum_s=best.optimum_s,
        evaluations=evaluations,
    )
