"""Exact offline optima and bounds (the only subpackage that imports OR-Tools or PuLP).

``solve`` is the front door: it discretises the instance, builds a verified incumbent by list
scheduling, runs the chosen backends (``cpsat``, ``milp`` or the ``portfolio`` of both), checks
every schedule with the independent validator, recomputes the objective from it, and calls
the result optimal only when a proven bound meets it.
"""

from __future__ import annotations

import logging
import math
import time
import tomllib
from dataclasses import dataclass
from importlib.metadata import version
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import AsrptError, ScheduleError, SolverError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.solvers._data import (
    PLACEMENTS,
    Discrete,
    InfeasibleInstance,
    discretise,
    list_schedule,
    speed_for,
    to_schedule,
)
from asrpt_opt.solvers._result import STATUSES, SolveResult, quiet_stdout
from asrpt_opt.solvers.cpsat import CPSATModel
from asrpt_opt.solvers.milp import TimeIndexedMILP, lp_bound_units

__all__ = [
    "BACKENDS",
    "PLACEMENTS",
    "STATUSES",
    "SolveResult",
    "SolverParams",
    "load_preset",
    "solve",
]

logger = logging.getLogger(__name__)

BACKENDS = ("portfolio", "cpsat", "milp")


@dataclass(frozen=True, kw_only=True)
class SolverParams:
    """Solver parameters, as in the TOML presets of the top-level ``solvers/`` folder.

    Parameters
    ----------
    time_limit_s : float
        Per backend, > 0.
    relative_gap : float
        Stop when the gap is below this (0 = prove optimality).
    threads : int
    seed : int
    """

    time_limit_s: float = 10.0
    relative_gap: float = 0.0
    threads: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.time_limit_s > 0:
            raise SolverError(f"time_limit_s must be > 0, got {self.time_limit_s!r}")
        if not 0 <= self.relative_gap < 1:
            raise SolverError(f"relative_gap must be in [0, 1), got {self.relative_gap!r}")
        if self.threads < 1:
            raise SolverError(f"threads must be >= 1, got {self.threads!r}")


def load_preset(path: str | PathLike[str]) -> SolverParams:
    """Read a TOML solver preset.

    Parameters
    ----------
    path : path-like
        A file with any of ``time_limit_s``, ``relative_gap``, ``threads``, ``seed``.

    Returns
    -------
    SolverParams
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SolverError(f"{path}: cannot read preset: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SolverError(f"{path}: invalid TOML: {exc}") from None
    known = {"time_limit_s", "relative_gap", "threads", "seed"}
    for key in data:
        if key not in known:
            raise SolverError(f"{path}: unknown key {key!r} (allowed: {', '.join(sorted(known))})")
    try:
        return SolverParams(**data)
    except (TypeError, SolverError) as exc:
        raise SolverError(f"{path}: {exc}") from None


def _verify(
    instance: Instance, data: Discrete, runs: Any, placement: str
) -> tuple[Schedule, float]:
    schedule = to_schedule(data, runs)
    validate_schedule(instance, schedule, speed=speed_for(placement))
    if placement == "server-local":
        for run in schedule.runs:
            if any(len(seg.allocation) != 1 for seg in run.segments):
                raise ScheduleError(f"job {run.id!r} spans servers under server-local placement")
    return schedule, schedule.total_weighted_completion_s(instance)


def _online_incumbent(
    instance: Instance, *, preemptive: bool, placement: str
) -> tuple[Schedule, float] | None:
    """Best schedule of the preemptive online policies on the pooled cluster, as a warm start.

    On integer data these policies preempt only at integer times (every event is a release
    or a completion), so their schedules are feasible for the unit-slot preemptive model.
    """
    if not (preemptive and placement == "pooled"):
        return None
    from asrpt_opt.sim.engine import simulate

    best: tuple[Schedule, float] | None = None
    for policy in ("srtf", "a-srpt", "srsf"):
        result = simulate(instance, policy, speed=speed_for("pooled"))
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


def solve(
    instance: Instance,
    *,
    preemptive: bool = False,
    placement: str = "pooled",
    backend: str = "portfolio",
    params: SolverParams | None = None,
    lp_bound: bool = True,
) -> SolveResult:
    """Compute the offline optimum of sum w_j C_j (or the best proven interval).

    Parameters
    ----------
    instance : Instance
        Abstract jobs only.
    preemptive : bool
        Allow preemption at integer multiples of the instance's time unit (the largest unit
        that divides every release and duration); otherwise jobs run without interruption.
    placement : {"pooled", "server-local", "spread"}
        ``pooled``: the cluster is one pool of GPUs (spreading costs nothing);
        ``server-local``: every job on one server; ``spread``: a job may span servers at its
        ``spread_slowdown`` (non-preemptive, cpsat only).
    backend : {"portfolio", "cpsat", "milp"}
        ``portfolio`` runs cpsat, then the MILP if cpsat did not prove optimality, and keeps
        the best proven bound and the best verified schedule.
    params : SolverParams, optional
    lp_bound : bool
        When optimality is not proven, also compute the LP relaxation bound.

    Returns
    -------
    SolveResult

    References
    ----------
    .. [1] M. E. Dyer, L. A. Wolsey, Discrete Applied Mathematics 26:255-270, 1990.
    .. [2] L. Perron, F. Didier, CP-SAT, Google OR-Tools.
    """
    if backend not in BACKENDS:
        raise SolverError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if placement == "spread" and backend == "milp":
        raise SolverError(
            "spread placement (variable per-server split) is modelled by the cpsat backend "
            "only; use --backend cpsat or portfolio"
        )
    if preemptive and placement == "spread":
        raise SolverError("preemptive models support pooled and server-local placement only")
    params = params or SolverParams()
    t0 = time.perf_counter()
    online = _online_incumbent(instance, preemptive=preemptive, placement=placement)
    try:
        data = discretise(
            instance,
            placement,
            preemptive=preemptive,
            upper_bound_s=None if online is None else online[1],
        )
    except InfeasibleInstance as exc:
        return SolveResult(
            status="infeasible",
            objective_s=None,
            bound_s=None,
            schedule=None,
            backend=backend,
            placement=placement,
            preemptive=preemptive,
            wall_s=time.perf_counter() - t0,
            solver="",
            message=str(exc),
        )
    unit = data.unit_s
    relax = lower_bounds(instance, speed=speed_for(placement))
    best_bound = relax.lower_bound_s
    messages: list[str] = []
    # A verified incumbent before any solver runs: the best list schedule.
    heuristic = list_schedule(data)
    incumbent, value = _verify(
        instance, data, [[(t, t + p, a)] for t, p, a in heuristic], placement
    )
    if online is not None and online[1] < value:
        incumbent, value = online
    used: list[str] = []
    if value <= best_bound * (1 + 1e-9) + 1e-9:
        messages.append("a heuristic schedule meets the relaxation bound: no solver needed")
        order: list[str] = []
    elif backend == "portfolio":
        order = ["cpsat"] if placement == "spread" else ["cpsat", "milp"]
    else:
        order = [backend]
    for name in order:
        try:
            with quiet_stdout():
                if name == "cpsat":
                    model: Any = CPSATModel(data, preemptive=preemptive, hint=heuristic)
                else:
                    model = TimeIndexedMILP(data, preemptive=preemptive)
                out = model.solve(
                    time_limit_s=params.time_limit_s,
                    threads=params.threads,
                    gap=params.relative_gap,
                    seed=params.seed,
                )
        except SolverError as exc:
            messages.append(f"{name}: {exc}")
            if backend != "portfolio":
                raise
            continue
        used.append(name)
        if math.isfinite(out["bound"]):
            best_bound = max(best_bound, out["bound"] * unit)
        if out["runs"] is not None:
            try:
                schedule, obj = _verify(instance, data, out["runs"], placement)
            except AsrptError as exc:
                messages.append(f"{name}: schedule rejected by the validator: {exc}")
                continue
            if obj < value:
                incumbent, value = schedule, obj
        if out["status"] == "infeasible":
            messages.append(f"{name}: reported infeasible")
        if value <= best_bound * (1 + 1e-9) + 1e-9:
            break
    tol = 1e-9 * max(1.0, abs(value)) + 1e-9
    if lp_bound and value > best_bound + tol:
        with quiet_stdout():
            lp = lp_bound_units(data, preemptive=preemptive, time_limit_s=params.time_limit_s)
        if math.isfinite(lp):
            best_bound = max(best_bound, lp * unit)
    status = "optimal" if value <= best_bound + tol else "feasible"
    if preemptive:
        messages.append(
            f"preemptive optimum is over schedules that preempt at multiples of {unit:g} s"
        )
    solvers = {
        "cpsat": f"ortools {version('ortools')}",
        "milp": f"pulp {version('pulp')} + HiGHS {version('highspy')}",
    }
    return SolveResult(
        status=status,
        objective_s=value,
        bound_s=min(best_bound, value),
        schedule=incumbent,
        backend=backend if backend != "portfolio" else "portfolio(" + ",".join(used) + ")",
        placement=placement,
        preemptive=preemptive,
        wall_s=time.perf_counter() - t0,
        solver="; ".join(solvers[u] for u in used) or "list scheduling only",
        params={
            "time_limit_s": params.time_limit_s,
            "relative_gap": params.relative_gap,
            "threads": params.threads,
            "seed": params.seed,
            "time_unit_s": unit,
        },
        message="; ".join(messages),
    )
