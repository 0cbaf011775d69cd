"""Searching for instances on which a policy's ratio to the proven optimum is worst.

:func:`worst_case` searches one (policy, n); :func:`worst_cases` every pair of a list of
policies and a range of n, growing each n's start from the worst instance found at n - 1.
The engine (moves, restarts, cache, store, workers) is :mod:`asrpt_opt.analysis.adversary`.
Every reported ratio is recomputed at the end from the policy's validated schedule and a
proven optimum (:func:`verify`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np

from asrpt_opt.analysis.adversary import (
    Row,
    Search,
    SearchSpace,
    grow,
    to_instance,
)
from asrpt_opt.analysis.adversary_rounds import SearchInterrupted, search_rounds
from asrpt_opt.analysis.store import AdversaryStore
from asrpt_opt.errors import SolverError, UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.policies.asrpt import resolve_guide
from asrpt_opt.policies.registry import make_policy, simulate
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.speed.base import PooledSpeed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SearchSpace", "WorstCase", "plot_worst_ratios", "verify", "worst_case", "worst_cases"]


@dataclass(frozen=True, kw_only=True)
class WorstCase:
    """The worst instance a search found.

    Attributes
    ----------
    instance : Instance
    ratio : float
        ALG / OPT, recomputed from the validated schedules (OPT proven optimal).
    policy_value_s, optimum_s : float
    evaluations : int
        Instances simulated by this run (cached ones not counted).
    """

    instance: Instance
    ratio: float
    policy_value_s: float
    optimum_s: float
    evaluations: int


def verify(
    policy: str,
    rows: list[Row],
    space: SearchSpace,
    *,
    name: str,
    time_limit_s: float = 60.0,
    preemptive: bool = True,
    evaluations: int = 0,
) -> WorstCase:
    """Re-solve and re-simulate an instance; the ratio from its validated schedules.

    Parameters
    ----------
    policy : str
    rows : list of Row
    space : SearchSpace
    name : str
        The instance's name.
    time_limit_s : float
    preemptive : bool
    evaluations : int
        Carried into the result.

    Returns
    -------
    WorstCase

    Raises
    ------
    SolverError
        When the optimum is not proven again within ``time_limit_s``.
    """
    from asrpt_opt.solvers.solve import SolverParams, solve

    inst = to_instance(rows, space, name=name)
    speed = PooledSpeed()
    off = solve(
        inst,
        preemption="continuous" if preemptive else "none",
        cluster_model="pooled",
        params=SolverParams(time_limit_s=time_limit_s),
    )
    if off.status != "optimal" or off.schedule is None:
        raise SolverError(f"{name}: the optimum was not proven again in {time_limit_s:g} s")
    validate_schedule(inst, off.schedule, speed=speed)
    opt = off.schedule.total_weighted_completion_s(inst)
    result = simulate(inst, policy, speed=speed)
    validate_schedule(inst, result.schedule, speed=speed)
    alg = result.schedule.total_weighted_completion_s(inst)
    ratio = alg / opt
    model = "continuous-time preemptive" if preemptive else "non-preemptive"
    # A policy whose default rule may change (A-SRPT's guide) records the rule it ran.
    guide = getattr(make_policy(policy), "guide", None)
    if guide is not None:
        guide = resolve_guide(guide, len(inst.cluster.servers))
    return WorstCase(
        instance=Instance(
            name=name,
            cluster=inst.cluster,
            jobs=inst.jobs,
            provenance={
                "search": "asrpt_opt.analysis.worst_case",
                "policy": policy,
                **({"guide": guide} if guide is not None else {}),
                "ratio": ratio,
                "opt": f"{model} optimum, pooled cluster",
                "preemptive_opt": preemptive,
            },
        ),
        ratio=ratio,
        policy_value_s=alg,
        optimum_s=opt,
        evaluations=evaluations,
    )


def _executor(workers: int):  # type: ignore[no-untyped-def]
    if workers <= 1:
        return None
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers)


class SearchKnobs(TypedDict, total=False):
    """The knobs of :func:`worst_cases` and :func:`worst_case`, all optional."""

    family: str
    budget_s: float
    evaluations: int | None
    time_limit_s: float
    preemptive: bool
    space: SearchSpace | None
    work_limit: float | None


_KNOBS = frozenset(SearchKnobs.__annotations__)


def worst_cases(
    policies: Sequence[str],
    ns: Sequence[int],
    *,
    seed: int | np.random.Generator | None = 0,
    workers: int = 1,
    store: str | Path | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    on_result: Callable[[str, int, WorstCase], None] | None = None,
    **knobs: Unpack[SearchKnobs],
) -> dict[tuple[str, int], WorstCase]:
    """The worst instance found per policy and n, each n grown from n - 1's worst.

    Parameters
    ----------
    policies : sequence of str
    ns : sequence of int
        Jobs per instance, searched in increasing order.
    seed : int, Generator or None
    workers : int
        Searchers in parallel processes.
    store : str or Path, optional
        SQLite file: evaluations and best instances, committed every round (at most 15 s);
        a rerun resumes from it and never solves an instance twice.
    space : SearchSpace, optional
        The cluster and the ranges of durations and releases (default: 2 servers of 4 GPUs,
        durations and releases up to 20).
    progress : callable, optional
        ``progress(elapsed_s, total_s, status)`` after each round.
    on_result : callable, optional
        ``on_result(policy, n, case)`` as soon as a pair is done (to write it at once).
    **knobs
        ``family`` (str, default "poisson"): family of the random restarts;
        ``budget_s`` (float, default 60): wall-clock budget per (policy, n);
        ``evaluations`` (int, optional): a budget of evaluations per (policy, n) instead,
        which makes the search the same on every machine (given the seed and the store);
        ``time_limit_s`` (float, default 5): offline solver limit per evaluation;
        ``work_limit`` (float, optional): deterministic work per evaluation instead (the
        time limit then a safety net): with ``evaluations``, the same search on any machine;
        ``preemptive`` (bool, default true): against the continuous-time preemptive optimum
        or the non-preemptive one;
        ``space`` (:class:`SearchSpace`): the cluster and the ranges of durations and
        releases (default: 2 servers of 4 GPUs, durations and releases up to 20).

    Returns
    -------
    dict of (policy, n) -> WorstCase
        Pairs where no proven instance was found are left out.

    Raises
    ------
    SearchInterrupted
        On Ctrl-C (a KeyboardInterrupt), with the interrupted pair's best instance so far.
    """
    unknown = set(knobs) - _KNOBS
    if unknown:
        raise UsageError(f"unknown search knobs {sorted(unknown)} (knobs: {sorted(_KNOBS)})")
    budget_s = knobs.get("budget_s", 60.0)
    evaluations_cap = knobs.get("evaluations")
    if evaluations_cap is not None and evaluations_cap < 1:
        raise UsageError(f"evaluations must be >= 1, got {evaluations_cap}")
    unit = budget_s if evaluations_cap is None else evaluations_cap  # what progress counts
    time_limit_s = knobs.get("time_limit_s", 5.0)
    preemptive = knobs.get("preemptive", True)
    space = knobs.get("space") or SearchSpace()
    family = knobs.get("family", "poisson")
    ns = sorted(set(ns))
    if not ns or ns[0] < 1 or budget_s <= 0 or workers < 1:
        raise UsageError("n must be >= 1, the budget > 0 and workers >= 1")
    rng = np.random.default_rng(seed)
    db = AdversaryStore(store) if store is not None else None
    pool = _executor(workers)
    total = int(unit * len(ns) * len(policies))
    out: dict[tuple[str, int], WorstCase] = {}
    try:
        for k, policy in enumerate(policies):
            previous: list[Row] | None = None
            for i, n in enumerate(ns):
                offset = int(unit * (k * len(ns) + i))

                def tick(elapsed: int, _budget: int, status: str, offset: int = offset) -> None:
                    if progress is not None:
                        progress(offset + elapsed, total, status)

                start = grow(previous, space, rng) if previous and len(previous) == n - 1 else None
                search = Search(
                    policy=policy,
                    space=space,
                    family=family,
                    time_limit_s=time_limit_s,
                    preemptive=preemptive,
                    work_limit=knobs.get("work_limit"),
                )
                try:
                    rows, _, evaluations = search_rounds(
                        search,
                        n,
                        start=start,
                        rng=rng,
                        budget_s=budget_s,
                        workers=workers,
                        store=db,
                        progress=tick,
                        executor=pool,
                        max_evaluations=evaluations_cap,
                    )
                except SearchInterrupted as stop:
                    stop.policy, stop.n = policy, n
                    if stop.rows is not None:
                        name = f"worst-{policy}-n{n}-interrupted"
                        stop.instance = to_instance(stop.rows, space, name=name)
                    raise
                if rows is None:
                    previous = None
                    continue
                previous = rows
                out[(policy, n)] = case = verify(
                    policy,
                    rows,
                    space,
                    name=f"worst-{policy}-n{n}",
                    time_limit_s=max(60.0, time_limit_s),
                    preemptive=preemptive,
                    evaluations=evaluations,
                )
                if on_result is not None:
                    on_result(policy, n, case)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if db is not None:
            db.close()
    return out


def worst_case(
    policy: str,
    n: int,
    *,
    seed: int | np.random.Generator | None = 0,
    progress: Callable[[int, int, str], None] | None = None,
    workers: int = 1,
    store: str | Path | None = None,
    **knobs: Unpack[SearchKnobs],
) -> WorstCase:
    """Search for an instance maximising ``policy``'s ratio to the proven optimum.

    Local search with restarts (:mod:`asrpt_opt.analysis.adversary`): moves on releases,
    durations and widths, pushes to the edges of the space, clones, aligned releases,
    replaced jobs and refinement of the time grid; restarts from a kicked best, a family
    instance and a random one. Only instances whose optimum is proven count.

    Parameters
    ----------
    policy : str
    n : int
    seed : int, Generator or None
    progress : callable, optional
        ``progress(elapsed_s, budget_s, status)`` after each round (whole seconds).
    workers : int
        Searchers in parallel processes.
    store : str or Path, optional
        SQLite file to resume from and commit to (see :func:`worst_cases`).
    **knobs
        ``family``, ``budget_s`` (the wall-clock budget), ``evaluations`` (a budget of
        evaluations instead), ``time_limit_s``, ``preemptive`` and ``space``, as
        :func:`worst_cases` takes them.

    Returns
    -------
    WorstCase

    Raises
    ------
    SolverError
        When no instance with a proven optimum was found within the budget.
    """
    found = worst_cases(
        [policy], [n], seed=seed, workers=workers, store=store, progress=progress, **knobs
    )
    if (policy, n) not in found:
        raise SolverError("no instance with a proven optimum was found within the budget")
    if progress is not None:  # the budget is spent: the bar ends full
        budget = int(knobs.get("evaluations") or knobs.get("budget_s", 60.0))
        progress(budget, budget, f"best ratio {found[(policy, n)].ratio:.4f}")
    return found[(policy, n)]


def plot_worst_ratios(
    found: dict[tuple[str, int], WorstCase], *, ax: Axes | None = None
) -> Figure:
    """The worst ratio found against n, one line per policy.

    Parameters
    ----------
    found : dict of (policy, n) -> WorstCase
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from asrpt_opt.analysis.plots import policy_colours

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 3.2))
    names = list(dict.fromkeys(p for p, _ in found))
    for name, colour in zip(names, policy_colours(names), strict=True):
        ns = sorted(n for p, n in found if p == name)
        ax.plot(
            ns,
            [found[(name, n)].ratio for n in ns],
            marker="o",
            ms=3,
            lw=2.0 if name == "a-srpt" else 1.2,
            color=colour,
            label=name,
        )
    ax.set_xlabel("jobs n")
    ax.set_ylabel("worst ALG / OPT found")
    ax.set_title("worst ratio found (OPT: proven optimum)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    fig.tight_layout()
    return fig
