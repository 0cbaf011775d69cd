"""The adversary's rounds: searchers (:func:`~asrpt_opt.analysis.adversary.climb`) run in
parallel for a round, their evaluations and best instance committed to the store after each,
so an interrupted search resumes where it stopped. The budget is wall-clock seconds, or a
number of evaluations, which makes a search the same on every machine.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from asrpt_opt.analysis.adversary import Evaluator, Row, Search, climb
from asrpt_opt.analysis.store import AdversaryStore

__all__ = ["ROUND_EVALUATIONS", "Progress", "SearchInterrupted", "run_round", "search_rounds"]


def run_round(
    search: Search,
    n: int,
    start: list[Row] | None,
    seed: int,
    budget_s: float,
    cache: dict[str, tuple[float, float, float]],
    max_evaluations: int | None = None,
) -> tuple[list[Row] | None, float, dict[str, tuple[float, float, float]], int]:
    """One searcher for one round (runs in a worker process).

    Parameters
    ----------
    search : Search
    n, start, seed, budget_s, max_evaluations
        As :func:`climb` takes them (``seed`` for its generator).
    cache : dict
        Evaluations known so far (:class:`Evaluator`'s).

    Returns
    -------
    (best rows or None, best ratio, new evaluations, evaluations)
    """
    evaluator = Evaluator(
        search.policy,
        search.space,
        time_limit_s=search.time_limit_s,
        cache=dict(cache),
        preemptive=search.preemptive,
        work_limit=search.work_limit,
    )
    best, ratio = climb(
        evaluator,
        n,
        start=start,
        family=search.family,
        rng=np.random.default_rng(seed),
        budget_s=budget_s,
        max_evaluations=max_evaluations,
    )
    return best, ratio, evaluator.new, evaluator.evaluations


#: ``progress(elapsed_s, budget_s, status)``.
Progress = Callable[[int, int, str], None]

#: Evaluations per searcher and round when the budget is counted in evaluations.
ROUND_EVALUATIONS = 100


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a search, carrying the best candidate found before it (its ratio as the
    search measured it, not re-verified); :func:`~asrpt_opt.analysis.worst_case.worst_cases`
    adds the policy, n and the instance.

    Parameters
    ----------
    rows : list of Row, optional
        The best candidate so far; None when nothing was proven yet.
    ratio : float
    """

    def __init__(self, rows: list[Row] | None, ratio: float) -> None:
        super().__init__()
        self.rows = rows
        self.ratio = ratio
        self.policy = ""
        self.n = 0
        self.instance: Any = None


def search_rounds(
    search: Search,
    n: int,
    *,
    start: list[Row] | None,
    rng: np.random.Generator,
    budget_s: float,
    workers: int,
    store: AdversaryStore | None,
    progress: Progress | None = None,
    executor: Any = None,
    max_evaluations: int | None = None,
) -> tuple[list[Row] | None, float, int]:
    """Search in rounds of at most 15 s, ``workers`` searchers per round, committing each.

    With ``max_evaluations`` the wall clock plays no part: rounds are of
    :data:`ROUND_EVALUATIONS` evaluations per searcher until that many are made in all, so
    the same seed (and store) gives the same search on any machine; ``progress`` then
    counts evaluations instead of seconds.

    Parameters
    ----------
    search : Search
    n, start, rng, budget_s
        See :func:`climb`.
    workers : int
        Searchers per round, each in its own process when > 1 (``executor``).
    store : AdversaryStore, optional
        Evaluations and best instances are read from it first and committed every round.
    progress : callable, optional
    executor : concurrent.futures.Executor, optional
        Runs the searchers when ``workers`` > 1.
    max_evaluations : int, optional
        An evaluation budget replacing ``budget_s``.

    Returns
    -------
    (best rows or None, best ratio, evaluations)
    """
    key, space, policy = search.store_key, search.space, search.policy
    cache = store.cache(key, space) if store is not None else {}
    best: tuple[list[Row], float] | None = None
    if store is not None:
        best = store.best(key, space, n)
    if best is not None:
        start = best[0]
    t0 = time.perf_counter()
    evaluations = 0
    round_s = min(15.0, budget_s)
    try:
        while True:
            left = budget_s - (time.perf_counter() - t0)
            share: int | None = None
            if max_evaluations is not None:
                left, share = math.inf, -(-(max_evaluations - evaluations) // workers)
                share = min(share, ROUND_EVALUATIONS)
                if share <= 0:
                    break
            elif left <= 0.05:
                break
            # Counted in evaluations, a round has no clock: 15 s cut rounds short on a busy
            # machine and made the search depend on it.
            this = math.inf if max_evaluations is not None else min(round_s, left)
            seeds = [int(s) for s in rng.integers(2**31, size=workers)]
            args = [(search, n, start, s, this, cache, share) for s in seeds]
            if workers > 1 and executor is not None:
                results = list(executor.map(run_round, *zip(*args, strict=True)))
            else:
                results = [run_round(*a) for a in args]
            new: dict[str, tuple[float, float, float]] = {}
            for rows, ratio, found, count in results:
                new.update(found)
                evaluations += count
                if rows is not None and (best is None or ratio > best[1]):
                    best = (rows, ratio)
            cache.update(new)
            if best is not None:
                start = best[0]
            if store is not None:
                store.commit(key, space, n, new, best)
            if progress is not None:
                status = f"{policy} n={n}: best {best[1]:.4f}" if best else "nothing proven yet"
                if max_evaluations is not None:
                    done = min(evaluations, max_evaluations)
                    progress(done, max_evaluations, f"{status}, {evaluations} evaluations")
                else:
                    elapsed = min(int(time.perf_counter() - t0), int(budget_s))
                    progress(elapsed, int(budget_s), f"{status}, {evaluations} evaluations")
    except KeyboardInterrupt:
        # What finished rounds found is committed to the store already; say what it was.
        raise SearchInterrupted(*(best if best is not None else (None, 0.0))) from None
    if best is None:
        return None, 0.0, evaluations
    return best[0], best[1], evaluations
