"""The exact continuous-time preemptive optimum on a pooled cluster, for small instances.

Jobs are gangs: job j holds ``q_j`` GPUs whenever it runs, for ``p_j`` seconds in all, from
its release ``r_j`` on; it may be preempted and resumed on other GPUs at any real time
(migration is free, as in the pooled model). The objective is sum w_j C_j.

Any such schedule has an *event sequence*: its distinct release times and its completions,
in time order. Between two consecutive events the set of jobs that may run is fixed, and
only how long each *configuration* (a set of available jobs that fits in the pool) runs
matters, not when inside the interval. So, for a fixed event sequence, the best schedule is
a linear program: the completion times and the configuration lengths are the variables,
each interval is at least as long as the configurations it holds, and each job receives
exactly its processing before its completion event. The optimum is the least of these LPs
over all event sequences.

:func:`continuous_preemptive_optimum` enumerates event sequences depth first, one event at
a time, and solves the LP of every prefix: completed jobs as above, and each unfinished job
finishing no earlier than the prefix's last event plus its unprocessed time. That LP is a
relaxation of every sequence that extends the prefix, so a prefix whose LP reaches the
incumbent is pruned. Identical jobs complete in index order (swapping them changes
nothing). When the search ends, the incumbent is optimal; when time runs out, the least LP
value over unexplored prefixes is a lower bound valid for every preemptive schedule.

The unit-slot models of :mod:`asrpt_opt.solvers.cpsat` and :mod:`asrpt_opt.solvers.milp`
only preempt at multiples of a time unit; this model preempts anywhere, so its optimum is
at most theirs (2 GPUs, jobs (r, q, p) = (0, 1, 1) x 3 and (0, 2, 1): 6.5 here, 7 on the
unit grid).

References
----------
.. [1] J. Labetoulle, E. L. Lawler, J. K. Lenstra, A. H. G. Rinnooy Kan, "Preemptive
   scheduling of uniform machines subject to release dates", Progress in Combinatorial
   Optimization, 245-261, 1984 (intervals between events, and an LP per interval).
.. [2] J. Blazewicz, M. Drabowski, J. Weglarz, "Scheduling multiprocessor tasks to
   minimize schedule length", IEEE Transactions on Computers C-35(5):389-393, 1986
   (configurations of multiprocessor tasks and a linear program over their lengths).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from asrpt_opt.errors import SolverError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.solvers._prefix_lp import Event, PrefixLP
from asrpt_opt.solvers.params import (
    CONTINUOUS_MAX_JOBS,
    SEARCH_NODES_PER_WORK,
    SolverParams,
    work_nodes,
)
from asrpt_opt.solvers.result import (
    Deadline,
    GridOptimum,
    SolveResult,
    SolveStatus,
    StoppedBy,
    meets,
    tolerance,
)
from asrpt_opt.speed.base import PooledSpeed
from asrpt_opt.speed.default import offline_speed

__all__ = [
    "MAX_JOBS",
    "ContinuousOptimum",
    "continuous_preemptive_optimum",
    "solve_continuous",
]

#: The most jobs the search is tried on: the number of event sequences grows like
#: (2n - 1)!!, and the configurations of n available jobs like 2**n.
MAX_JOBS = CONTINUOUS_MAX_JOBS


@dataclass(frozen=True, kw_only=True)
class ContinuousOptimum:
    """What the continuous-time search proved.

    Attributes
    ----------
    status : SolveStatus
        ``OPTIMAL`` when the search finished: ``objective_s`` (or the upper bound it was
        given, when nothing beat it) is the continuous-time preemptive optimum, up to the LP
        tolerance (relative 1e-9). ``FEASIBLE`` when time ran out with a schedule,
        ``TIME_LIMIT_NO_SOLUTION`` without one.
    objective_s : float or None
        sum w_j C_j of the best schedule the search found, recomputed from it; None if it
        found none better than the upper bound it was given.
    bound_s : float
        A lower bound on sum w_j C_j of every preemptive schedule of the pooled model.
    schedule : Schedule or None
        The schedule of ``objective_s`` (servers assigned; not yet validated).
    nodes : int
        Event-sequence prefixes whose LP was solved.
    wall_s : float
    stopped_by : StoppedBy
        The limit that stopped the search, if one did.
    """

    status: SolveStatus
    objective_s: float | None
    bound_s: float
    schedule: Schedule | None
    nodes: int
    wall_s: float
    stopped_by: StoppedBy = StoppedBy.NONE


def continuous_preemptive_optimum(
    instance: Instance,
    *,
    time_limit_s: float = 60.0,
    upper_bound_s: float | None = None,
    deadline: Deadline | None = None,
    max_nodes: int | None = None,
) -> ContinuousOptimum:
    """The least sum w_j C_j over preemptive schedules on the pooled cluster, in real time.

    Parameters
    ----------
    instance : Instance
        Abstract jobs (``duration_s``); at most :data:`MAX_JOBS` of them.
    time_limit_s : float
        Stop searching after this many seconds.
    upper_bound_s : float, optional
        The value of a known schedule (say, the unit-grid optimum): prefixes that cannot
        beat it are pruned from the start.
    deadline : Deadline, optional
        A deadline shared with other work; the search stops at the earlier of the two.
    max_nodes : int, optional
        Stop after this many prefix LPs: a deterministic limit, the same on every machine.

    Returns
    -------
    ContinuousOptimum

    Raises
    ------
    SolverError
        When the instance has more than :data:`MAX_JOBS` jobs, DNN jobs, or a job wider
        than the cluster.

    References
    ----------
    .. [1] J. Labetoulle, E. L. Lawler, J. K. Lenstra, A. H. G. Rinnooy Kan, "Preemptive
       scheduling of uniform machines subject to release dates", Progress in Combinatorial
       Optimization, 245-261, 1984.

    Examples
    --------
    >>> from asrpt_opt.model.instance import Instance
    >>> from asrpt_opt.model.cluster import Cluster
    >>> from asrpt_opt.model.job import Job
    >>> widths = [1, 1, 1, 2]
    >>> jobs = [Job(id=str(i), release_s=0, gpus=q, duration_s=1) for i, q in enumerate(widths)]
    >>> inst = Instance(name="half", cluster=Cluster.uniform(1, 2), jobs=tuple(jobs))
    >>> round(continuous_preemptive_optimum(inst).objective_s, 6)
    6.5
    """
    if len(instance.jobs) > MAX_JOBS:
        raise SolverError(
            f"the continuous-time search handles at most {MAX_JOBS} jobs, not {len(instance.jobs)}"
        )
    t0 = time.perf_counter()
    own = Deadline(time_limit_s)
    search = PrefixLP(instance)
    best_value = math.inf if upper_bound_s is None else upper_bound_s
    best: Schedule | None = None
    nodes = 0

    def out_of_time() -> bool:
        return own.left_s() <= 0 or (deadline is not None and deadline.left_s() <= 0)

    def out_of_work() -> bool:
        return max_nodes is not None and nodes >= max_nodes

    # The relaxation bounds hold for every preemptive schedule: a search that cannot go
    # below them stops there, and one stopped by time never reports less.
    relaxed = lower_bounds(instance, speed=PooledSpeed()).lower_bound_s
    root: list[Event] = [(0, 0)]
    solved = search.lp(root)
    nodes += 1
    if solved is None:
        raise SolverError("no preemptive schedule exists")  # a job wider than the pool
    stack: list[tuple[float, list[Event]]] = [(solved[0], root)]
    stopped = StoppedBy.NONE
    while stack and best_value > relaxed + tolerance(best_value):
        if out_of_work() or out_of_time():
            stopped = StoppedBy.WORK if out_of_work() else StoppedBy.TIME
            break
        bound, events = stack.pop()
        if bound >= best_value - tolerance(best_value):
            continue
        found = []
        for event in search.children(events):
            child = [*events, event]
            solved = search.lp(child)
            nodes += 1
            if solved is None or solved[0] >= best_value - tolerance(best_value):
                continue
            value, x = solved
            if len(child) - len(search.releases) == search.n:  # every job completed
                schedule = search.schedule(child, x)
                recomputed = schedule.total_weighted_completion_s(instance)
                if recomputed < best_value:
                    best_value, best = recomputed, schedule
                continue
            found.append((value, child))
        # Depth first, the most promising child on top.
        found.sort(key=lambda item: -item[0])
        stack.extend(found)
    open_bound = min((b for b, _ in stack), default=math.inf)
    # A finished search proves best_value optimal (to the LP tolerance).
    bound_s = (
        max(relaxed, min(best_value, open_bound) - tolerance(best_value))
        if stopped != StoppedBy.NONE
        else best_value
    )
    if stopped == StoppedBy.NONE:
        status = SolveStatus.OPTIMAL
    elif best is not None or upper_bound_s is not None:
        status = SolveStatus.FEASIBLE
    else:
        status = SolveStatus.TIME_LIMIT_NO_SOLUTION
    return ContinuousOptimum(
        status=status,
        objective_s=None if best is None else best_value,
        bound_s=bound_s,
        schedule=best,
        nodes=nodes,
        wall_s=time.perf_counter() - t0,
        stopped_by=stopped,
    )


def solve_continuous(
    instance: Instance,
    *,
    cluster_model: str,
    params: SolverParams,
    grid_solve: Callable[[SolverParams], SolveResult],
) -> SolveResult:
    """The preemptive optimum in continuous time: the unit-grid solve, then the event search.

    Parameters
    ----------
    instance : Instance
    cluster_model : {"pooled", "server-local"}
        The search runs on the pooled model; under ``server-local`` only the grid solve and
        the relaxation bounds are available, so the result is an interval.
    params : SolverParams
        ``time_limit_s`` covers both steps: the grid solve gets half when the search
        follows.
    grid_solve : callable
        Solves the unit-grid model within the given parameters.

    Returns
    -------
    SolveResult
        ``objective_s`` of the best validated schedule of either step, ``bound_s`` valid for
        every preemptive schedule (relaxation bounds, raised to the search's proof), and
        ``grid`` the unit-grid result.
    """
    t0 = time.perf_counter()
    searchable = cluster_model == "pooled" and len(instance.jobs) <= MAX_JOBS
    share = 0.5 if searchable else 1.0
    grid = grid_solve(
        replace(params, time_limit_s=params.time_limit_s * share, work_limit=params.share(share))
    )
    # Without a time unit the grid model was not built (gridless): no grid record.
    record = (
        GridOptimum(
            time_unit_s=grid.params["time_unit_s"],
            status=grid.status,
            objective_s=grid.objective_s,
            bound_s=grid.bound_s,
        )
        if "time_unit_s" in grid.params
        else None
    )
    if grid.status == SolveStatus.INFEASIBLE or grid.objective_s is None:
        return replace(grid, preemption="continuous", grid=record)
    speed = offline_speed(cluster_model)
    value, schedule = grid.objective_s, grid.schedule
    stops = [StoppedBy(grid.params.get("stopped_by", "none"))]
    prefix = "grid: " if record is not None else ""
    messages = [prefix + grid.message] if grid.message else []
    solver = grid.solver
    out = None
    if searchable:
        try:
            out = continuous_preemptive_optimum(
                instance,
                time_limit_s=max(params.time_limit_s - (time.perf_counter() - t0), 0.0),
                upper_bound_s=value,
                max_nodes=work_nodes(params.share(1 - share), SEARCH_NODES_PER_WORK),
            )
        except SolverError as exc:
            # Data spanning more magnitudes than the LPs' doubles resolve: keep the interval.
            messages.append(f"the event search failed ({exc}): the bound is the relaxation's")
    if out is not None:
        if out.schedule is not None:
            validate_schedule(instance, out.schedule, speed=speed)
            found = out.schedule.total_weighted_completion_s(instance)
            if found < value:
                value, schedule = found, out.schedule
        bound = out.bound_s  # at least the relaxation bounds, which the search starts from
        stopped = (
            "" if out.stopped_by == StoppedBy.NONE else f", stopped by the {out.stopped_by} limit"
        )
        messages.append(f"event search: {out.nodes} prefix LPs{stopped}")
        stops.append(out.stopped_by)
        solver += f"; HiGHS {_highs_version()} (event-sequence LPs)"
    else:
        bound = lower_bounds(instance, speed=speed).lower_bound_s
        if not searchable:
            why = (
                "the server-local model"
                if cluster_model != "pooled"
                else f"more than {MAX_JOBS} jobs"
            )
            messages.append(
                f"no continuous-time search for {why}: the bound is the relaxation's, the "
                "schedule the grid's"
            )
    proven = meets(value, bound)
    return replace(
        grid,
        status=SolveStatus.OPTIMAL if proven else SolveStatus.FEASIBLE,
        objective_s=value,
        bound_s=value if proven else min(bound, value),
        schedule=schedule,
        backend=grid.backend + ("+events" if out is not None else ""),
        wall_s=time.perf_counter() - t0,
        solver=solver,
        params={
            **grid.params,
            "time_limit_s": params.time_limit_s,
            **({} if params.work_limit is None else {"work_limit": params.work_limit}),
            "stopped_by": StoppedBy.worst(stops).value,
        },
        message="; ".join(messages),
        preemption="continuous",
        grid=record,
    )


def _highs_version() -> str:
    from importlib.metadata import version

    return version("highspy")
