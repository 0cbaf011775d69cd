"""Searching for instances on which a policy's ratio to the proven optimum is worst."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.errors import SolverError
from asrpt_opt.model.instance import Instance
from asrpt_opt.sim.engine import simulate
from asrpt_opt.speed.base import PooledSpeed

__all__ = ["WorstCase", "worst_case"]


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
    progress: Callable[[int, int, str], None] | None = None,
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
    progress : callable, optional
        ``progress(elapsed_s, budget_s, status)`` after each evaluation (whole seconds).

    Returns
    -------
    WorstCase
    """
    from asrpt_opt.model.job import Job
    from asrpt_opt.solvers.solve import SolverParams, solve

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
            if progress is not None:
                elapsed = min(int(time.perf_counter() - start), int(budget_s))
                progress(
                    elapsed, int(budget_s), f"best ratio {best.ratio:.4f}, {evaluations} eval"
                )
        if best is None or cur[0] > best.ratio:
            best = WorstCase(
                instance=current,
                ratio=cur[0],
                policy_value_s=cur[1],
                optimum_s=cur[2],
                evaluations=evaluations,
            )
    if progress is not None:  # the budget is spent: the bar ends full
        status = f"best ratio {best.ratio:.4f}" if best is not None else "nothing proven"
        progress(int(budget_s), int(budget_s), status)
    if best is None:
        raise SolverError("no instance with a proven optimum was found within the budget")
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
