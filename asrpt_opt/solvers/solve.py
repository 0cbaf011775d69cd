"""The front door of the offline solvers: :func:`solve`.

``solve`` discretises the instance, builds a verified incumbent by list scheduling, runs the
chosen solver (``cpsat``, ``milp`` or the ``portfolio`` of both), checks every schedule with the
independent validator, recomputes the objective from it, and calls the result optimal only when
a proven bound meets it. OR-Tools and PuLP load when a backend is first built.
"""

from __future__ import annotations

import logging
import math
import time

from asrpt_opt.errors import AsrptError, SolverError, UnknownNameError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.solvers._data import (
    Discrete,
    InfeasibleInstance,
    OffGrid,
    discretise,
    list_schedule,
    to_schedule,
    validate_for_model,
)
from asrpt_opt.solvers._request import (
    PREEMPTION_MODELS,
    model_relation,
    preemption_model,
    renamed,
)
from asrpt_opt.solvers.backends import BACKENDS, SOLVERS, VERSIONS, make_backend
from asrpt_opt.solvers.params import SolverParams, load_preset
from asrpt_opt.solvers.result import (
    Deadline,
    OutOfTime,
    Runs,
    SolveResult,
    SolveStatus,
    StoppedBy,
    meets,
    quiet_stdout,
)
from asrpt_opt.speed.default import (
    CLUSTER_MODELS,
    SOLVE_CLUSTER_MODELS,
    instance_cluster_model,
    offline_speed,
)

__all__ = [
    "BACKENDS",
    "PREEMPTION_MODELS",
    "SOLVERS",
    "SOLVE_CLUSTER_MODELS",
    "SolverParams",
    "load_preset",
    "make_backend",
    "solve",
]

logger = logging.getLogger(__name__)


def _verify(
    instance: Instance, data: Discrete, runs: Runs, cluster_model: str
) -> tuple[Schedule, float]:
    schedule = to_schedule(data, runs)
    validate_for_model(instance, schedule, cluster_model)
    return schedule, schedule.total_weighted_completion_s(instance)


def _online_incumbent(
    instance: Instance, *, preemptive: bool, cluster_model: str
) -> tuple[Schedule, float] | None:
    """Best schedule of the preemptive online policies on the pooled cluster, as a warm start.

    On integer data these policies preempt only at integer times (every event is a release
    or a completion), so their schedules are feasible for the unit-slot preemptive model.
    """
    if not (preemptive and cluster_model == "pooled"):
        return None
    from asrpt_opt.policies.registry import simulate

    best: tuple[Schedule, float] | None = None
    for policy in ("srtf", "a-srpt", "srsf"):
        result = simulate(instance, policy, speed=offline_speed("pooled"))
        times = [
            x
            for run in result.schedule.runs
            for seg in run.segments
            for x in (seg.start_s, seg.end_s)
        ]
        if any(abs(x - round(x)) > 1e-9 for x in times):
            continue
        value = result.schedule.total_weighted_completion_s(instance)
        if best is None or value < best[1]:
            best = (result.schedule, value)
    return best


def _check_model(cluster_model: str, solver: str, preemptive: bool) -> None:
    if cluster_model not in CLUSTER_MODELS:
        raise UnknownNameError("cluster model", cluster_model, SOLVE_CLUSTER_MODELS)
    if solver not in SOLVERS:
        raise UnknownNameError("solver", solver, SOLVERS)
    if cluster_model == "spread" and solver == "milp":
        raise SolverError(
            "the spread cluster model (variable per-server split) is modelled by the cpsat "
            "solver only; use --solver cpsat or portfolio"
        )
    if preemptive and cluster_model == "spread":
        raise SolverError(
            "preemptive schedules of jobs that spread at a slowdown are not modelled; "
            "--cluster-model pooled solves the relaxation that ignores the slowdowns (its "
            "optimum is a lower bound), server-local the restriction that never spreads"
        )


def solve(
    instance: Instance,
    *,
    preemption: str = "none",
    cluster_model: str = "instance",
    solver: str = "portfolio",
    params: SolverParams | None = None,
    lp_bound: bool = True,
    preemptive: bool | None = None,
    placement: str | None = None,
    backend: str | None = None,
) -> SolveResult:
    """Compute the offline optimum of sum w_j C_j (or the best proven interval).

    Parameters
    ----------
    instance : Instance
        Abstract jobs only.
    preemption : {"none", "continuous", "grid"}
        ``none`` (the default): jobs run without interruption. ``continuous`` is the model of
        every preemptive schedule, jobs preempted and resumed at any real time. Its optimum is
        computed exactly on the pooled cluster for up to
        :data:`~asrpt_opt.solvers.continuous.MAX_JOBS` jobs
        (:func:`~asrpt_opt.solvers.continuous.continuous_preemptive_optimum`, after a
        unit-grid solve that supplies an incumbent and is reported as ``grid``); its
        ``bound_s`` holds for every preemptive schedule. ``grid`` restricts preemption to
        integer multiples of the instance's time unit (the largest unit that divides every
        release and duration): an upper bound on the continuous optimum.
    cluster_model : {"instance", "pooled", "server-local", "spread"}
        How jobs share the cluster's GPUs. ``instance`` (the default): the instance as written
        (:func:`~asrpt_opt.speed.default.instance_cluster_model`: ``spread`` when some job
        spreads at a slowdown, else ``pooled``). ``pooled``: one pool of GPUs (spreading
        costs nothing; a relaxation when slowdowns exceed 1); ``server-local``: every job on
        one server (a restriction); ``spread``: a job may span servers at its
        ``spread_slowdown`` (non-preemptive, cpsat only). The result's ``relation`` says
        which of these the solved model is to the instance.
    solver : {"portfolio", "cpsat", "milp"}
        ``portfolio`` runs cpsat, then the MILP if cpsat did not prove optimality, and keeps
        the best proven bound and the best verified schedule.
    params : SolverParams, optional
        ``params.time_limit_s`` bounds the whole solve, model building included: CP-SAT gets
        half of it when the MILP follows, the LP bound (when needed) comes next, and the
        MILP has the rest. A backend still busy building its model at the deadline is
        skipped; HiGHS is stopped at the deadline and can take up to about two seconds to
        answer (measured on 40-job preemptive models), the one tolerance of the limit.
    lp_bound : bool
        When optimality is not proven, also compute the LP relaxation bound.
    preemptive : bool, optional
        Deprecated: ``preemptive=True`` is ``preemption="continuous"`` (or the ``grid`` given
        with it), ``preemptive=False`` is ``preemption="none"``.
    placement, backend : str, optional
        Deprecated names of ``cluster_model`` and ``solver``.

    Returns
    -------
    SolveResult

    References
    ----------
    .. [1] M. E. Dyer, L. A. Wolsey, "Formulating the single machine sequencing problem with
       release dates as a mixed integer program", Discrete Applied Mathematics 26:255-270,
       1990.
    .. [2] L. Perron, F. Didier, CP-SAT, Google OR-Tools.
    """
    cluster_model = renamed("placement", "cluster_model", placement, cluster_model)
    solver = renamed("backend", "solver", backend, solver)
    if cluster_model == "instance":
        cluster_model = instance_cluster_model(instance)
    preemption = preemption_model(preemption, preemptive)
    preemptive = preemption != "none"
    _check_model(cluster_model, solver, preemptive)
    params = params or SolverParams()
    if preemptive and preemption == "continuous":
        from asrpt_opt.solvers.continuous import solve_continuous

        return solve_continuous(
            instance,
            cluster_model=cluster_model,
            params=params,
            grid_solve=lambda p: _solve_grid(
                instance,
                preemptive=True,
                cluster_model=cluster_model,
                solver=solver,
                params=p,
                lp_bound=lp_bound,
            ),
        )
    return _solve_grid(
        instance,
        preemptive=preemptive,
        cluster_model=cluster_model,
        solver=solver,
        params=params,
        lp_bound=lp_bound,
        grid_only=preemptive,
    )


def _solve_grid(
    instance: Instance,
    *,
    preemptive: bool,
    cluster_model: str,
    solver: str,
    params: SolverParams,
    lp_bound: bool,
    grid_only: bool = False,
) -> SolveResult:
    """Solve the non-preemptive model, or the preemptive one on the unit grid.

    Data the integer-time models cannot take (off any grid, or too many jobs to list
    schedule in time) gets the policies' interval (:mod:`asrpt_opt.solvers.gridless`), or
    with ``grid_only`` (the grid model itself was asked for) its one-line reason.
    """
    relation = model_relation(instance, cluster_model)
    t0 = time.perf_counter()
    deadline = Deadline(params.time_limit_s)
    online = _online_incumbent(instance, preemptive=preemptive, cluster_model=cluster_model)
    try:
        data = discretise(
            instance,
            cluster_model,
            preemptive=preemptive,
            upper_bound_s=None if online is None else online[1],
            deadline=deadline,
        )
    except (OffGrid, OutOfTime) as exc:
        if grid_only:
            raise SolverError(f"the grid model cannot be built: {exc}") from None
        from asrpt_opt.solvers.gridless import policy_interval

        return policy_interval(
            instance,
            cluster_model=cluster_model,
            preemptive=preemptive,
            reason=str(exc),
            relation=relation,
            time_limit_s=max(deadline.left_s(), 0.0),
            stopped_by=StoppedBy.TIME if isinstance(exc, OutOfTime) else StoppedBy.NONE,
        )
    except InfeasibleInstance as exc:
        return SolveResult(
            status=SolveStatus.INFEASIBLE,
            objective_s=None,
            bound_s=None,
            schedule=None,
            backend=solver,
            cluster_model=cluster_model,
            preemptive=preemptive,
            wall_s=time.perf_counter() - t0,
            solver="",
            message=str(exc),
            relation=relation,
            preemption="grid" if preemptive else None,
        )
    run = _Run(instance, data, cluster_model=cluster_model, preemptive=preemptive)
    if online is not None and online[1] < run.value:
        run.incumbent, run.value = online
    if run.proven():
        run.messages.append("a heuristic schedule meets the relaxation bound: no solver needed")
        order: list[str] = []
    elif solver == "portfolio":
        order = ["cpsat"] if cluster_model == "spread" else ["cpsat", "milp"]
    else:
        order = [solver]
    # One deadline covers the whole solve, model building included. CP-SAT gets half of what
    # is left when the MILP follows; then (unless proven) the LP bound, which is cheap and
    # valid whatever the backends reach; then the MILP the rest. A single backend keeps a
    # tenth of the limit for the LP bound after it.
    steps = [*order[:1], "lp", *order[1:]] if lp_bound else list(order)
    for i, step in enumerate(steps):
        if run.proven():
            break
        if step == "lp":
            run.lp_bound(deadline)
            continue
        later = steps[i + 1 :]
        reserve = 0.1 * params.time_limit_s if "lp" in later else 0.0
        share = 0.5 if any(x != "lp" for x in later) else 1.0
        budget = (deadline.left_s() - reserve) * share
        # Work is shared by position, not by what the wall clock left: reproducible.
        work = params.share(0.5 if any(x != "lp" for x in steps if x != step) else 1.0)
        try:
            if budget <= 0:
                raise OutOfTime(f"the {params.time_limit_s:g} s limit ran out before it started")
            run.backend(step, params, budget=budget, deadline=deadline, work=work)
        except OutOfTime as exc:
            run.stops.append(StoppedBy.TIME)
            run.messages.append(f"{step}: {exc}")
        except SolverError as exc:
            run.messages.append(f"{step}: {exc}")
            if solver != "portfolio":
                raise
    if preemptive:
        run.messages.append(
            f"optimum over schedules that preempt at multiples of {data.unit_s:g} s only"
        )
    return SolveResult(
        status=SolveStatus.OPTIMAL if run.proven() else SolveStatus.FEASIBLE,
        objective_s=run.value,
        bound_s=min(run.bound, run.value),
        schedule=run.incumbent,
        backend=solver if solver != "portfolio" else "portfolio(" + ",".join(run.used) + ")",
        cluster_model=cluster_model,
        preemptive=preemptive,
        wall_s=time.perf_counter() - t0,
        solver="; ".join(VERSIONS[u]() for u in run.used) or "list scheduling only",
        params={
            "time_limit_s": params.time_limit_s,
            "relative_gap": params.relative_gap,
            "threads": params.threads,
            "seed": params.seed,
            "time_unit_s": data.unit_s,
            **({} if params.work_limit is None else {"work_limit": params.work_limit}),
            "stopped_by": StoppedBy.worst(run.stops).value,
        },
        message="; ".join(run.messages),
        relation=relation,
        preemption="grid" if preemptive else None,
    )


class _Run:
    """The state of one solve: best verified schedule, best proven bound, what ran."""

    def __init__(
        self, instance: Instance, data: Discrete, *, cluster_model: str, preemptive: bool
    ) -> None:
        self.instance = instance
        self.data = data
        self.cluster_model = cluster_model
        self.preemptive = preemptive
        self.bound = lower_bounds(instance, speed=offline_speed(cluster_model)).lower_bound_s
        self.messages: list[str] = []
        self.used: list[str] = []
        self.stops: list[StoppedBy] = []
        # A verified incumbent before any solver runs: the best list schedule.
        self.hint = data.heuristic if data.heuristic is not None else list_schedule(data)
        self.incumbent, self.value = _verify(
            instance, data, [[(t, t + p, a)] for t, p, a in self.hint], cluster_model
        )

    def proven(self) -> bool:
        """Whether the incumbent's value meets the proven bound."""
        return meets(self.value, self.bound)

    def lp_bound(self, deadline: Deadline) -> None:
        """Raise the bound to the LP relaxation's, if it is built and solved in time."""
        from asrpt_opt.solvers.milp import lp_bound_units

        try:
            with quiet_stdout():
                lp = lp_bound_units(
                    self.data,
                    preemptive=self.preemptive,
                    time_limit_s=max(deadline.left_s(), 0.05),
                    deadline=deadline,
                )
        except SolverError as exc:  # out of time, or too large to build
            if isinstance(exc, OutOfTime):
                self.stops.append(StoppedBy.TIME)
            self.messages.append(f"LP bound: {exc}")
            return
        if math.isfinite(lp):
            self.bound = max(self.bound, lp * self.data.unit_s)
        else:  # not solved within the time left
            self.stops.append(StoppedBy.TIME)

    def backend(
        self,
        name: str,
        params: SolverParams,
        *,
        budget: float,
        deadline: Deadline,
        work: float | None = None,
    ) -> None:
        """Run backend ``name`` within ``budget`` seconds, building included; keep its bound
        and its schedule if the validator accepts it."""
        own = Deadline(min(budget, deadline.left_s()))
        with quiet_stdout():
            model = make_backend(
                name, self.data, preemptive=self.preemptive, hint=self.hint, deadline=own
            )
            built_s = own.limit_s - own.left_s()
            # A model that took longer to build than the time left would not even get through
            # the solver's presolve, and a solver stopped mid-phase overruns the deadline.
            if own.left_s() <= max(0.01, built_s):
                raise OutOfTime(
                    f"{own.left_s():.3g} s of its {budget:.3g} s share were left after "
                    f"building the model ({built_s:.3g} s)"
                )
            out = model.solve(
                time_limit_s=own.left_s(),
                threads=params.threads,
                gap=params.relative_gap,
                seed=params.seed,
                work=work,
            )
        self.used.append(name)
        self.stops.append(out.stopped_by)
        logger.info(
            "%s: %s after %.1f s, bound %.6g",
            name,
            out.status.value,
            out.wall_s,
            out.bound_units * self.data.unit_s,
        )
        if math.isfinite(out.bound_units):
            self.bound = max(self.bound, out.bound_units * self.data.unit_s)
        if out.runs is not None:
            try:
                schedule, obj = _verify(self.instance, self.data, out.runs, self.cluster_model)
            except AsrptError as exc:
                self.messages.append(f"{name}: schedule rejected by the validator: {exc}")
                return
            if obj < self.value:
                self.incumbent, self.value = schedule, obj
        if out.status == SolveStatus.INFEASIBLE:
            self.messages.append(f"{name}: reported infeasible")
