"""The adversary's engine: moves, restarts, an evaluation cache and a resumable store.

An instance is a list of rows ``(release, gpus, duration, weight)`` on a fixed cluster (the
:class:`SearchSpace`). Its score is the policy's sum w_j C_j over the proven continuous-time
preemptive optimum (pooled cluster), cached under the instance's canonical form (rows
sorted), so no instance is solved twice, in a run or across runs sharing a store.

:func:`climb` is one searcher: hill climbing that accepts equal scores (plateaus), with
moves that shift one number, push one to the edge of the space, clone a job onto another,
align releases, replace a job by a random one, or double every time (a finer grid for later
moves); after ``stale`` moves without improvement it restarts, in turn from a kicked copy of
the best instance, a fresh family instance and a uniformly random one. A candidate whose
policy value over the relaxation's lower bound cannot reach the current score is rejected
without solving (ALG / LB bounds its ratio from above).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.errors import UsageError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.policies.registry import simulate
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.speed.base import PooledSpeed

__all__ = [
    "Evaluator",
    "Row",
    "Search",
    "SearchSpace",
    "climb",
    "grow",
    "to_instance",
]

#: One job: (release_s, gpus, duration_s, weight).
Row = tuple[float, int, float, float]


@dataclass(frozen=True, kw_only=True)
class SearchSpace:
    """Where the adversary looks.

    Parameters
    ----------
    servers : tuple of int
        GPUs per server (default 2 servers of 4).
    max_duration_s : float
        Durations are integers in [1, max_duration_s] (halves after a refinement).
    max_release_s : float
        Releases lie in [0, max_release_s].
    """

    servers: tuple[int, ...] = (4, 4)
    max_duration_s: float = 20.0
    max_release_s: float = 20.0

    def __post_init__(self) -> None:
        if not self.servers or any(s < 1 for s in self.servers):
            raise UsageError(f"servers must be positive GPU counts, got {self.servers}")
        if not (self.max_duration_s >= 1 and self.max_release_s >= 0):
            raise UsageError("max_duration_s must be >= 1 and max_release_s >= 0")

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return sum(self.servers)


@dataclass(frozen=True, kw_only=True)
class Search:
    """What one adversarial search asks: ``policy``'s worst ratio over ``space``.

    Parameters
    ----------
    policy : str
    space : SearchSpace
    family : str
        Family of the fresh restarts.
    time_limit_s : float
        Offline solver limit per evaluation.
    preemptive : bool
        Against the continuous-time preemptive optimum (default) or the non-preemptive one.
    work_limit : float, optional
        Deterministic work per evaluation
        (:attr:`~asrpt_opt.solvers.params.SolverParams.work_limit`): which candidates count
        as proven is then the same on every machine, and with an evaluation budget so is
        the whole search; ``time_limit_s`` stays a safety net.
    """

    policy: str
    space: SearchSpace = field(default_factory=SearchSpace)
    family: str = "poisson"
    time_limit_s: float = 5.0
    preemptive: bool = True
    work_limit: float | None = None

    @property
    def store_key(self) -> str:
        """The name its evaluations are stored under (one offline model and limit rule per
        name: a candidate unproven in 5 s may be proven within a work limit)."""
        key = self.policy if self.preemptive else f"{self.policy} (non-preemptive OPT)"
        return key if self.work_limit is None else f"{key} (work {self.work_limit:g})"


def canonical(rows: list[Row]) -> str:
    """The instance's key: its rows sorted, as text (job order does not change a ratio)."""
    return json.dumps(sorted(rows))


def to_instance(rows: list[Row], space: SearchSpace, name: str = "candidate") -> Instance:
    """Build the instance of ``rows`` on the space's cluster.

    Parameters
    ----------
    rows : list of (release_s, gpus, duration_s, weight)
    space : SearchSpace
    name : str

    Returns
    -------
    Instance
    """
    jobs = tuple(
        Job(id=f"j{i}", release_s=r, gpus=q, duration_s=p, weight=w)
        for i, (r, q, p, w) in enumerate(sorted(rows))
    )
    return Instance(name=name, cluster=Cluster(servers=space.servers), jobs=jobs)


class Evaluator:
    """Scores instances for one policy, with a cache keyed by canonical form.

    Parameters
    ----------
    policy : str
    space : SearchSpace
    time_limit_s : float
        For each optimum; an instance not proven within it scores nothing.
    cache : dict, optional
        ``key -> (ratio, policy value, optimum)``; ratio NaN when not proven.
    preemptive : bool
        Against the continuous-time preemptive optimum (default) or the non-preemptive one.
    work_limit : float, optional
        Deterministic work per optimum (see :class:`Search`).
    """

    def __init__(
        self,
        policy: str,
        space: SearchSpace,
        *,
        time_limit_s: float,
        cache: dict[str, tuple[float, float, float]] | None = None,
        preemptive: bool = True,
        work_limit: float | None = None,
    ) -> None:
        from asrpt_opt.solvers.solve import SolverParams

        self.preemptive = preemptive
        self.policy = policy
        self.space = space
        self.params = SolverParams(time_limit_s=time_limit_s, work_limit=work_limit)
        self.cache = {} if cache is None else cache
        self.new: dict[str, tuple[float, float, float]] = {}
        self.evaluations = 0
        self.solved = 0

    def score(self, rows: list[Row], *, floor: float = 0.0) -> float | None:
        """ALG/OPT of ``rows``, or None when unproven or provably below ``floor``.

        Parameters
        ----------
        rows : list of Row
        floor : float
            Skip the solve when ALG / (relaxation lower bound) < floor.

        Returns
        -------
        float or None
        """
        from asrpt_opt.solvers.solve import solve

        key = canonical(rows)
        hit = self.cache.get(key)
        if hit is not None:
            return None if math.isnan(hit[0]) else hit[0]
        self.evaluations += 1
        inst = to_instance(rows, self.space)
        speed = PooledSpeed()
        alg = simulate(inst, self.policy, speed=speed).metrics.total_weighted_completion_s
        if alg < floor * lower_bounds(inst, speed=speed).lower_bound_s * (1 - 1e-12):
            return None  # its ratio is below the floor whatever OPT is; not cached
        self.solved += 1
        if self.preemptive:
            entry = self._continuous(inst, alg)
        else:
            off = solve(inst, preemption="none", cluster_model="pooled", params=self.params)
            opt = off.objective_s if off.status == "optimal" and off.objective_s else math.nan
            entry = (alg / opt, alg, opt)
        self.cache[key] = self.new[key] = entry
        return None if math.isnan(entry[0]) else entry[0]

    def _continuous(self, inst: Instance, alg: float) -> tuple[float, float, float]:
        """(ratio, ALG, OPT) against the continuous-time optimum, NaN when unproven.

        The event search runs directly (no unit-grid solve first), its incumbent the best of
        the policy's and SRTF's validated schedules.
        """
        from asrpt_opt.solvers.continuous import continuous_preemptive_optimum
        from asrpt_opt.solvers.params import SEARCH_NODES_PER_WORK, work_nodes

        speed = PooledSpeed()
        upper = min(alg, simulate(inst, "srtf", speed=speed).metrics.total_weighted_completion_s)
        out = continuous_preemptive_optimum(
            inst,
            time_limit_s=self.params.time_limit_s,
            upper_bound_s=upper,
            max_nodes=work_nodes(self.params.work_limit, SEARCH_NODES_PER_WORK),
        )
        if out.status != "optimal":
            return (math.nan, alg, math.nan)
        opt = upper if out.objective_s is None else out.objective_s
        return (alg / opt, alg, opt)


def _random_row(space: SearchSpace, rng: np.random.Generator) -> Row:
    return (
        float(rng.integers(0, int(space.max_release_s) + 1)),
        int(rng.integers(1, space.total_gpus + 1)),
        float(rng.integers(1, int(space.max_duration_s) + 1)),
        1.0,
    )


def _clip(row: Row, space: SearchSpace) -> Row:
    r, q, p, w = row
    return (
        min(max(r, 0.0), space.max_release_s),
        min(max(q, 1), space.total_gpus),
        min(max(p, 1.0), space.max_duration_s),
        w,
    )


def mutate(rows: list[Row], space: SearchSpace, rng: np.random.Generator) -> list[Row]:
    """One random move.

    Parameters
    ----------
    rows : list of Row
    space : SearchSpace
    rng : numpy Generator

    Returns
    -------
    list of Row
        A new list; ``rows`` is not changed.
    """
    out = list(rows)
    n = len(out)
    a, b = (int(x) for x in rng.integers(n, size=2))
    r, q, p, w = out[a]
    move = int(rng.integers(8))
    if move == 0:  # shift a release
        out[a] = (r + float(rng.choice([-3, -2, -1, 1, 2, 3])), q, p, w)
    elif move == 1:  # shift a duration
        out[a] = (r, q, p + float(rng.choice([-5, -2, -1, 1, 2, 5])), w)
    elif move == 2:  # another width
        out[a] = (r, int(rng.integers(1, space.total_gpus + 1)), p, w)
    elif move == 3:  # to the edge of the space
        edge = int(rng.integers(4))
        q2 = space.total_gpus if edge == 0 else 1 if edge == 1 else q
        p2 = space.max_duration_s if edge == 2 else 1.0 if edge == 3 else p
        out[a] = (r, q2, p2, w)
    elif move == 4:  # clone job a onto job b (its release kept or not)
        keep = bool(rng.integers(2))
        out[b] = (out[b][0] if keep else r, q, p, w)
    elif move == 5:  # align b's release with a's
        out[b] = (r, *out[b][1:])
    elif move == 6:  # replace a job
        out[a] = _random_row(space, rng)
    else:  # refine: double every time where the space allows, else a small shift
        if max(x[2] for x in out) * 2 <= space.max_duration_s and (
            max(x[0] for x in out) * 2 <= space.max_release_s
        ):
            out = [(2 * x[0], x[1], 2 * x[2], x[3]) for x in out]
        else:
            out[a] = (r + 1.0, q, p, w)
    return [_clip(x, space) for x in out]


def grow(rows: list[Row], space: SearchSpace, rng: np.random.Generator) -> list[Row]:
    """Add one job: a clone of an existing one (half the time) or a random one.

    Parameters
    ----------
    rows : list of Row
    space : SearchSpace
    rng : numpy Generator

    Returns
    -------
    list of Row
    """
    if rows and rng.integers(2):
        return [*rows, rows[int(rng.integers(len(rows)))]]
    return [*rows, _random_row(space, rng)]


def _family_rows(family: str, n: int, rng: np.random.Generator) -> list[Row]:
    inst = make_family_instance(family, n, rng)
    return [(j.release_s, j.gpus, float(j.duration_s or 1), 1.0) for j in inst.jobs]


def climb(
    evaluator: Evaluator,
    n: int,
    *,
    start: list[Row] | None,
    family: str,
    rng: np.random.Generator,
    budget_s: float,
    stale: int = 60,
    max_evaluations: int | None = None,
) -> tuple[list[Row] | None, float]:
    """Search for ``budget_s`` seconds (or until ``evaluator`` has made ``max_evaluations``
    evaluations); return the best rows found and their ratio.

    Parameters
    ----------
    evaluator : Evaluator
    n : int
        Jobs per instance.
    start : list of Row, optional
        Where to begin (and what restarts kick); a random instance otherwise.
    family : str
        Family of the fresh restarts.
    rng : numpy Generator
    budget_s : float
    stale : int
        Moves without improvement before a restart.
    max_evaluations : int, optional
        Stop once the evaluator has evaluated this many instances (cache hits do not
        count): with ``budget_s`` infinite, the search then depends on ``rng`` only.

    Returns
    -------
    (list of Row or None, float)
        None and 0 when nothing was proven.
    """
    space = evaluator.space
    end = time.perf_counter() + budget_s
    cap = math.inf if max_evaluations is None else max_evaluations
    moves = 0  # a safety stop: cache hits make moves without evaluations

    def going() -> bool:
        return time.perf_counter() < end and evaluator.evaluations < cap and moves < 100 * cap

    best: list[Row] | None = None
    best_ratio = 0.0
    restarts = 0
    while going():
        kind = restarts % 3
        restarts += 1
        if start is not None and restarts == 1:
            current = list(start)
        elif kind == 0 and (best is not None or start is not None):
            current = list(best if best is not None else start)  # type: ignore[arg-type]
            for _ in range(3):
                current = mutate(current, space, rng)
        elif kind == 1:
            current = [_clip(x, space) for x in _family_rows(family, n, rng)]
        else:
            current = [_random_row(space, rng) for _ in range(n)]
        score = evaluator.score(current)
        if score is None:
            continue
        if score > best_ratio:
            best, best_ratio = current, score
        idle = 0
        while idle < stale and going():
            moves += 1
            cand = mutate(current, space, rng)
            got = evaluator.score(cand, floor=score)
            if got is not None and got >= score:
                idle = 0 if got > score else idle + 1
                current, score = cand, got
                if score > best_ratio:
                    best, best_ratio = current, score
            else:
                idle += 1
    return best, best_ratio
