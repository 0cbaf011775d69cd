"""An honest interval when the integer-time models cannot be used.

The exact backends work on integer time (:mod:`asrpt_opt.solvers._data`). Data with no usable
common unit (times from 1e-9 s to 1e12 s, a subnormal duration) or too many jobs to list
schedule within the time limit leaves them nothing to solve, although the problem itself,
non-preemptive or preemptive in continuous time, needs no grid. This module answers such
instances with what holds for any data: the best validated schedule of the online policies
(simulated under the model's speed rule) and the relaxation bounds, an interval that contains
the optimum of the model asked for.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from asrpt_opt.errors import ScheduleError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.solvers._data import validate_for_model
from asrpt_opt.solvers.result import Deadline, SolveResult, SolveStatus, StoppedBy, meets
from asrpt_opt.speed.default import offline_speed

__all__ = ["NON_PREEMPTIVE_POLICIES", "PREEMPTIVE_POLICIES", "policy_interval"]

logger = logging.getLogger(__name__)

#: Policies whose schedules never preempt: feasible for every model.
NON_PREEMPTIVE_POLICIES = ("fifo", "sjf")
#: Policies tried in addition when the model allows preemption.
PREEMPTIVE_POLICIES = ("srtf", "a-srpt", "srsf")


@dataclass(frozen=True, kw_only=True)
class _Best:
    policy: str
    schedule: Schedule
    value: float


def _feasible(
    instance: Instance, schedule: Schedule, *, cluster_model: str, preemptive: bool
) -> bool:
    """Whether the independent validator accepts ``schedule`` for the model."""
    try:
        validate_for_model(instance, schedule, cluster_model)
    except ScheduleError as exc:
        logger.info("policy schedule rejected: %s", exc)
        return False
    return preemptive or all(len(run.segments) == 1 for run in schedule.runs)


def _best_policy(
    instance: Instance, *, cluster_model: str, preemptive: bool, deadline: Deadline
) -> _Best | None:
    from asrpt_opt.policies.registry import simulate

    policies = NON_PREEMPTIVE_POLICIES + (PREEMPTIVE_POLICIES if preemptive else ())
    best: _Best | None = None
    for policy in policies:
        if best is not None and deadline.left_s() <= 0:
            break
        result = simulate(instance, policy, speed=offline_speed(cluster_model))
        if not _feasible(
            instance, result.schedule, cluster_model=cluster_model, preemptive=preemptive
        ):
            continue
        value = result.schedule.total_weighted_completion_s(instance)
        if best is None or value < best.value:
            best = _Best(policy=policy, schedule=result.schedule, value=value)
    return best


def policy_interval(
    instance: Instance,
    *,
    cluster_model: str,
    preemptive: bool,
    reason: str,
    relation: str,
    time_limit_s: float,
    stopped_by: StoppedBy = StoppedBy.NONE,
) -> SolveResult:
    """The best validated policy schedule and the relaxation bound, as a solve result.

    Parameters
    ----------
    instance : Instance
        Abstract jobs.
    cluster_model : {"pooled", "server-local", "spread"}
    preemptive : bool
        Whether preemptive policies may supply the schedule (preemption at any time).
    reason : str
        Why the integer-time models were not used; it starts the result's message.
    relation : str
        The model's relation to the instance as written.
    time_limit_s : float
        No further policy is simulated once it has passed (one always is).
    stopped_by : StoppedBy
        Whether a limit stopped the work before (recorded in ``params``).

    Returns
    -------
    SolveResult
        ``OPTIMAL`` only when the best schedule meets the bound; ``FEASIBLE`` otherwise, with
        ``bound_s`` valid for every schedule of the model.
    """
    t0 = time.perf_counter()
    deadline = Deadline(time_limit_s)
    best = _best_policy(
        instance, cluster_model=cluster_model, preemptive=preemptive, deadline=deadline
    )
    bound = lower_bounds(instance, speed=offline_speed(cluster_model)).lower_bound_s
    message = (
        f"{reason}; the exact integer-time models were not run, so the result is the best "
        "online policy's schedule and the relaxation bound (round releases and durations to "
        "a coarser grid for the exact models)"
    )
    if best is None:
        status, value, schedule = SolveStatus.TIME_LIMIT_NO_SOLUTION, None, None
        message += "; no policy schedule was accepted by the validator"
    else:
        value, schedule = best.value, best.schedule
        proven = meets(value, bound)
        status = SolveStatus.OPTIMAL if proven else SolveStatus.FEASIBLE
        bound = value if proven else min(bound, value)
        message += f"; schedule from {best.policy}"
    return SolveResult(
        status=status,
        objective_s=value,
        bound_s=bound,
        schedule=schedule,
        backend="policies",
        cluster_model=cluster_model,
        preemptive=preemptive,
        wall_s=time.perf_counter() - t0,
        solver="asrpt-opt simulator",
        params={"time_limit_s": time_limit_s, "stopped_by": stopped_by.value},
        message=message,
        relation=relation,
        preemption="continuous" if preemptive else None,
    )
