"""Load sweeps: mean response time against offered load, with confidence intervals and a
stability verdict per point, as in the multiserver-job papers.

For every policy, load and seed, one instance of a load family (:data:`LOAD_FAMILIES`) is
simulated; the run's mean response time and stability verdict
(:func:`~asrpt_opt.sim.stability.stability`) are kept in a resumable SQLite store
(:class:`~asrpt_opt.analysis.store.LoadSweepStore`), one row per run, so an interrupted sweep
loses nothing finished and a rerun skips it. The figure is
:func:`~asrpt_opt.analysis.plots.plot_load_sweep`. A point's interval is Student's t over the
seeds' means (with two seeds or more), else over 20 batch means of the one run.

A ``msj`` run of a policy that forgets when the cluster empties (``regenerative``), long
enough for ``engine="auto"`` to compile it, is simulated from columns in chunks
(:func:`~asrpt_opt.sim.stream.simulate_stream`): the same run in bounded memory, 10^7 jobs in
about a minute and under 2 GB.

A run that is clearly unstable can take hours at 10^6 jobs (its queue, and each decision's
work, grows without bound). With ``screen_jobs``, a longer run first simulates its first
``screen_jobs`` jobs, then four times as many, and so on below ``n``: the first stable
screen sends the run to its full length; a screen that is unstable with at least
:data:`SCREEN_QUEUE` jobs in the system on average, or the last screen when every one was
unstable, ends the run there. It is then recorded as unstable, ``screened``, with that
screen's mean (a lower bound of what the full run would show, not an estimate of it). Two
unstable screens of disjoint windows, or a queue that a stable run at these loads never
holds, keep a false alarm of a short screen from cutting a stable run short.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.analysis.executors import run_tasks
from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.model.instance import Instance
from asrpt_opt.policies.registry import POLICIES, check_policy_params, make_policy, simulate
from asrpt_opt.sim.compiled import compiles_from
from asrpt_opt.sim.stability import Stability, Verdict, t_quantile
from asrpt_opt.sim.stream import simulate_stream
from asrpt_opt.traces.synthetic import msj, msj_columns, philly_like

if TYPE_CHECKING:
    from asrpt_opt.analysis.store import LoadSweepStore

__all__ = [
    "LOAD_FAMILIES",
    "LoadPoint",
    "LoadRun",
    "LoadSweepConfig",
    "LoadSweepReport",
    "evaluate_run",
    "run_load_sweep",
    "summarise_runs",
]


def _philly_like(n: int, *, load: float, seed: int) -> Instance:
    return philly_like(n, load=load, seed=seed)


#: Workloads with an offered load: name -> ``(n, *, load, seed) -> Instance``. ``msj`` is
#: Grosof et al.'s multiserver-job workload (:func:`~asrpt_opt.traces.synthetic.msj`, time
#: unit 1,000 s); ``philly-like`` the Philly-shaped abstract jobs on 16 servers of 8 GPUs.
LOAD_FAMILIES: dict[str, Callable[..., Instance]] = {"msj": msj, "philly-like": _philly_like}

#: What a run's mean response time is over (:class:`LoadSweepConfig`).
MEASURES = ("all", "completions")
#: Arrivals beyond ``n`` with ``measure="completions"``: a fraction of ``n``, at least 1,000.
EXTRA_ARRIVALS = 0.05

#: Batches of a single run's jobs (in arrival order) for its batch-means interval.
BATCHES = 20
#: A screen this unstable, with at least this many jobs in the system on average, ends its
#: run at once (module docstring).
SCREEN_QUEUE = 1000


@dataclass(frozen=True, kw_only=True)
class LoadSweepConfig:
    """What a load sweep computes at every (policy, load, seed).

    Parameters
    ----------
    family : str
        A key of :data:`LOAD_FAMILIES`.
    n : int
        Jobs per run.
    policies : tuple of str
    params : mapping of policy -> mapping, optional
        Keyword parameters per policy (JSON values).
    screen_jobs : int or None
        Screen longer runs on their first ``screen_jobs`` jobs (module docstring); None
        never screens.
    measure : {"all", "completions"}
        ``all``: the mean response time of all ``n`` jobs, the last ones draining after
        the arrivals stop. ``completions``: of the first ``n`` jobs to complete while
        arrivals continue (the run is given :data:`EXTRA_ARRIVALS` more), the protocol of
        the reference simulator ``isaacg1/msj-simulator``, which stops at its n-th
        completion: the jobs still in the system then, the longest waiting, do not count.
    """

    family: str
    n: int
    policies: tuple[str, ...]
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    screen_jobs: int | None = 50_000
    measure: str = "all"

    def __post_init__(self) -> None:
        lookup(LOAD_FAMILIES, self.family, what="load family")
        if self.n < 1:
            raise UsageError(f"n must be >= 1, got {self.n}")
        if not self.policies:
            raise UsageError("give at least one policy")
        for name in self.policies:
            lookup(POLICIES, name, what="policy")
            check_policy_params(name, dict(self.params.get(name, {})))
        lookup(dict.fromkeys(MEASURES), self.measure, what="measure")
        if self.screen_jobs is not None and self.screen_jobs < 1000:
            raise UsageError(f"screen_jobs must be >= 1000, got {self.screen_jobs}")

    def key(self, policy: str, load: float, seed: int) -> str:
        """A stable key of one run for the store."""
        doc = {
            "family": self.family,
            "n": self.n,
            "policy": policy,
            "params": dict(self.params.get(policy, {})),
            "load": float(load),
            "seed": int(seed),
            "screen_jobs": self.screen_jobs,
        }
        if self.measure != "all":  # keys of stores written before the option stay valid
            doc["measure"] = self.measure
        text = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True, kw_only=True)
class LoadRun:
    """One simulated run of a load sweep.

    Attributes
    ----------
    policy : str
    load : float
    seed : int
    n : int
        Jobs simulated (fewer than the configuration's when ``screened``).
    unit_s : float
        The family's time unit (``msj``: mean job area in GPU-seconds; else 1 s).
    mean_response_s : float
        Mean of completion minus release.
    batch_half_width_s : float
        Half-width of the 95% interval from batch means of this run.
    verdict : str
        The run's stability verdict.
    growth : float
        Growth of the number in system over the second half of the arrivals, relative.
    screened : bool
        True when the run ended after an unstable screen.
    wall_s : float
    """

    policy: str
    load: float
    seed: int
    n: int
    unit_s: float
    mean_response_s: float
    batch_half_width_s: float
    verdict: str
    growth: float
    screened: bool
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        """The run as a JSON-ready dict."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class LoadPoint:
    """A (policy, load) point over its seeds, in the family's time unit.

    Attributes
    ----------
    policy : str
    load : float
    runs : int
    mean_response : float
        Mean over the seeds of each run's mean response time, in time units.
    ci_low, ci_high : float
        Its 95% interval (over seeds with two or more, else the run's batch means).
    verdict : Verdict
        Unstable when most runs are, stable when none is, else inconclusive.
    unstable_runs : int
    """

    policy: str
    load: float
    runs: int
    mean_response: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    unstable_runs: int

    def to_json(self) -> dict[str, Any]:
        """The point as a JSON-ready dict."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class LoadSweepReport:
    """Every run of a sweep and the points they make (:func:`run_load_sweep`)."""

    config: LoadSweepConfig
    loads: tuple[float, ...]
    seeds: tuple[int, ...]
    runs: tuple[LoadRun, ...]
    points: tuple[LoadPoint, ...]

    def to_json(self) -> dict[str, Any]:
        """The ``load-sweep --json`` object (docs/output-format.md)."""
        return {
            "family": self.config.family,
            "n": self.config.n,
            "loads": list(self.loads),
            "seeds": list(self.seeds),
            "points": [p.to_json() for p in self.points],
            "runs": [r.to_json() for r in self.runs],
        }


def _jobs(config: LoadSweepConfig) -> int:
    n = config.n
    if config.measure == "completions":
        n += max(1000, math.ceil(EXTRA_ARRIVALS * n))
    return n


def _measured(config: LoadSweepConfig, release: np.ndarray, completion: np.ndarray) -> np.ndarray:
    # The response times the configuration's measure averages (see LoadSweepConfig).
    response = completion - release
    if config.measure == "all" or response.size <= config.n:
        return response
    # A stable run holds far fewer than the extra arrivals when its n-th job completes, so
    # arrivals were still coming then, as in the reference; an unstable run's mean means
    # nothing either way.
    first = np.argsort(completion, kind="stable")[: config.n]
    return response[np.sort(first)]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Outcome:
    """What a sweep keeps of a simulated run (of all its jobs or of a screen)."""

    release_s: np.ndarray
    completion_s: np.ndarray
    stability: Stability


def _runner(
    config: LoadSweepConfig, policy: str, load: float, seed: int
) -> tuple[Callable[[int], _Outcome], float]:
    # Simulates the first k jobs of the run's instance; and the family's time unit. Runs
    # that engine="auto" would compile, of a policy that forgets when the cluster empties,
    # are simulated in chunks from columns (simulate_stream: the same schedule, in bounded
    # memory); the others from an Instance.
    params = dict(config.params.get(policy, {}))
    n = _jobs(config)
    pol = make_policy(policy, **params)
    if config.family == "msj" and getattr(pol, "regenerative", False) and n >= compiles_from(pol):
        columns = msj_columns(n, load=load, seed=seed)

        def stream(k: int) -> _Outcome:
            part = columns if k >= n else columns.take(0, k)
            out = simulate_stream(part, make_policy(policy, **params))
            return _Outcome(
                release_s=part.release_s,
                completion_s=out.completion_s,
                stability=out.metrics.stability,
            )

        return stream, float(columns.provenance["unit_s"])
    inst = LOAD_FAMILIES[config.family](n, load=load, seed=seed)

    def whole(k: int) -> _Outcome:
        part = inst if k >= n else _prefix(inst, k)
        result = simulate(part, policy, seed=seed, **params)
        return _Outcome(
            release_s=np.array([j.release_s for j in part.jobs]),
            completion_s=np.array([r.completion_s for r in result.schedule.runs]),
            stability=result.metrics.stability,
        )

    return whole, float(inst.provenance.get("unit_s", 1.0))


def _prefix(inst: Instance, k: int) -> Instance:
    return Instance(
        name=f"{inst.name}-first{k}",
        cluster=inst.cluster,
        jobs=inst.jobs[:k],
        provenance=inst.provenance,
    )


def evaluate_run(task: tuple[LoadSweepConfig, str, float, int]) -> LoadRun:
    """Simulate one (policy, load, seed) of a sweep.

    Parameters
    ----------
    task : (LoadSweepConfig, str, float, int)
        The configuration, policy, load and seed.

    Returns
    -------
    LoadRun
    """
    config, policy, load, seed = task
    t0 = time.perf_counter()
    run, unit = _runner(config, policy, load, seed)
    n = _jobs(config)
    outcome = _screen(run, n, config.screen_jobs)
    screened = outcome is not None
    if outcome is None:
        outcome = run(n)
    response = _measured(config, outcome.release_s, outcome.completion_s)
    stab = outcome.stability
    return LoadRun(
        policy=policy,
        load=float(load),
        seed=int(seed),
        n=int(response.size),
        unit_s=unit,
        mean_response_s=float(response.mean()),
        batch_half_width_s=_batch_half_width(response),
        verdict=str(stab.verdict),
        growth=float(stab.growth),
        screened=screened,
        wall_s=time.perf_counter() - t0,
    )


def _screen(run: Callable[[int], _Outcome], n: int, jobs: int | None) -> _Outcome | None:
    # The last unstable screen when the run should end there, else None (module docstring).
    outcome = None
    while jobs is not None and jobs < n:
        outcome = run(jobs)
        if outcome.stability.verdict is not Verdict.UNSTABLE:
            return None
        if outcome.stability.mean_in_system >= SCREEN_QUEUE:
            return outcome
        jobs *= 4
    return outcome


def _batch_half_width(values: np.ndarray) -> float:
    if values.size < 2 * BATCHES:
        return math.nan
    means = np.array([b.mean() for b in np.array_split(values, BATCHES)])
    return t_quantile(0.975, BATCHES - 1) * float(means.std(ddof=1)) / math.sqrt(BATCHES)


def summarise_runs(runs: Sequence[LoadRun]) -> list[LoadPoint]:
    """The (policy, load) points of ``runs``, in the order they first appear.

    Parameters
    ----------
    runs : sequence of LoadRun

    Returns
    -------
    list of LoadPoint
    """
    groups: dict[tuple[str, float], list[LoadRun]] = {}
    for run in runs:
        groups.setdefault((run.policy, run.load), []).append(run)
    return [_point(policy, load, group) for (policy, load), group in groups.items()]


def _point(policy: str, load: float, runs: list[LoadRun]) -> LoadPoint:
    means = np.array([r.mean_response_s / r.unit_s for r in runs])
    mean = float(means.mean())
    if len(runs) >= 2:
        dof = len(runs) - 1
        half = t_quantile(0.975, dof) * float(means.std(ddof=1)) / math.sqrt(len(runs))
    else:
        half = runs[0].batch_half_width_s / runs[0].unit_s
    unstable = sum(r.verdict == Verdict.UNSTABLE for r in runs)
    verdict = (
        Verdict.UNSTABLE
        if 2 * unstable > len(runs)
        else Verdict.STABLE
        if unstable == 0
        else Verdict.INCONCLUSIVE
    )
    return LoadPoint(
        policy=policy,
        load=load,
        runs=len(runs),
        mean_response=mean,
        ci_low=mean - half,
        ci_high=mean + half,
        verdict=verdict,
        unstable_runs=unstable,
    )


def run_load_sweep(
    config: LoadSweepConfig,
    loads: Sequence[float],
    seeds: Sequence[int],
    *,
    store: LoadSweepStore | None = None,
    workers: int = 1,
    executor: str = "loky",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LoadSweepReport:
    """Simulate every (policy, load, seed) not yet in ``store`` and summarise.

    Parameters
    ----------
    config : LoadSweepConfig
    loads : sequence of float
        Offered loads, each in (0, inf).
    seeds : sequence of int
    store : LoadSweepStore, optional
        Where finished runs are kept (an in-memory store when None).
    workers, executor, scheduler
        As :func:`~asrpt_opt.analysis.executors.run_tasks`.
    progress : callable, optional
        Called as ``progress(done, total)`` after each run.

    Returns
    -------
    LoadSweepReport
    """
    from asrpt_opt.analysis.store import LoadSweepStore

    loads = tuple(float(x) for x in loads)
    seeds = tuple(int(s) for s in seeds)
    if not loads or not seeds or any(not (x > 0 and math.isfinite(x)) for x in loads):
        raise UsageError(f"give at least one seed and loads in (0, inf), got {list(loads)}")
    store = store if store is not None else LoadSweepStore()
    tasks = [(config, p, x, s) for p in config.policies for x in loads for s in seeds]
    finished = store.done([config.key(*t[1:]) for t in tasks])
    todo = [t for t in tasks if config.key(*t[1:]) not in finished]
    done = len(tasks) - len(todo)
    if progress:
        progress(done, len(tasks))
    runs = run_tasks(evaluate_run, todo, workers=workers, executor=executor, scheduler=scheduler)
    for task, run in runs:
        store.put(config.key(*task[1:]), config.family, config.n, run)
        done += 1
        if progress:
            progress(done, len(tasks))
    kept = store.load([config.key(*t[1:]) for t in tasks])
    return LoadSweepReport(
        config=config,
        loads=loads,
        seeds=seeds,
        runs=tuple(kept),
        points=tuple(summarise_runs(kept)),
    )
