"""One validated simulation: :func:`simulate` runs a :class:`~asrpt_opt.sim.engine.Simulator`,
passes its schedule through the independent validator and recomputes the metrics from it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.prediction import OraclePredictor, Predictor
from asrpt_opt.sim.engine import Simulator
from asrpt_opt.sim.metrics import compute_metrics
from asrpt_opt.sim.placer import Placement, Placer
from asrpt_opt.sim.result import SimulationResult, segment_costs
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.sim.view import (
    Policy,
)
from asrpt_opt.speed.base import SpeedModel
from asrpt_opt.speed.default import default_speed

if TYPE_CHECKING:
    pass

__all__ = ["simulate"]

logger = logging.getLogger(__name__)


def simulate(
    instance: Instance,
    policy: Policy,
    *,
    predictor: Predictor | None = None,
    speed: SpeedModel | None = None,
    restore_overhead_s: float = 0.0,
    seed: int | np.random.Generator | None = None,
    refit_every: int | None = None,
    history: Sequence[Job] | None = None,
    placement: str | Callable[..., Any] | Placement | None = None,
    engine: str = "auto",
) -> SimulationResult:
    """Simulate ``policy`` on ``instance`` and return the validated schedule and its metrics.

    Parameters
    ----------
    instance : Instance
    policy : Policy
        A policy object; :func:`asrpt_opt.simulate` (:func:`asrpt_opt.policies.simulate`)
        also takes a registered name and the policy's parameters.
    predictor : Predictor, optional
        Predicts each job's work at its arrival; defaults to the oracle (the truth).
    speed : SpeedModel, optional
        Defaults to :func:`~asrpt_opt.speed.default.default_speed`: the instance's
        ``speed_model``, else :class:`~asrpt_opt.speed.base.AbstractSpeed` for abstract instances
        and :class:`~asrpt_opt.speed.cluster.ClusterSpeed` (worker-graph iteration times, workers
        arranged by min-cut) when the instance has DNN jobs.
    restore_overhead_s : float
        Seconds a resumed job holds its GPUs before making progress again.
    seed : int, Generator or None
        Randomness for the policy and the predictor.
    refit_every : int, optional
        Refit the predictor on the completed jobs (plus ``history``) after every this many
        completions; never on a job that has not completed.
    history : sequence of Job, optional
        Jobs completed before the simulation starts; the predictor is fitted on them first.
        Without it, a predictor that is not yet fitted is fitted on no jobs (its fallback).
    placement : str or callable, optional
        How a starting DNN job's GPUs are chosen: a placement method of
        :data:`~asrpt_opt.placement.METHODS` (``mincut``, ``ilp``, ``greedy``,
        ``consolidate``, ...) or a callable with :func:`~asrpt_opt.placement.place`'s
        contract (see :mod:`asrpt_opt.sim.placer`). Defaults to the policy's
        ``default_placement``: Tiresias' ``consolidate`` for every built-in policy
        (docs/placement.md says why A-SRPT's is not a graph method). A
        :class:`~asrpt_opt.sim.placer.Placement` adds how to choose among candidates
        (``choice="fragmentation"`` keeps whole servers and racks free within a tolerance).
        Abstract jobs are always consolidated.
    engine : {"auto", "python", "compiled"}
        Where the event loop runs (:mod:`asrpt_opt.sim.compiled`): ``auto`` runs the built-in
        list policies on abstract jobs of :data:`~asrpt_opt.sim.compiled.COMPILED_FROM` jobs
        or more (a policy's own ``compiles_from`` where it has one: Tiresias' Gittins
        order from 3,000, the other preemptive policies and EASY backfilling from
        :data:`~asrpt_opt.sim.compiled.PREEMPTIVE_FROM`) in the compiled core, everything
        else in Python; ``compiled`` insists (and
        refuses what the core cannot run); ``python`` never compiles. Both give the same
        schedule.
    Returns
    -------
    SimulationResult

    Raises
    ------
    UsageError
        For a policy name: the simulator takes policy objects (names are resolved above it).
    PolicyError
        If the policy makes an infeasible decision or stalls.
    ScheduleError
        If the schedule fails validation (a simulator bug).

    Examples
    --------
    >>> from asrpt_opt.model import Cluster, Instance, Job
    >>> inst = Instance(name="x", cluster=Cluster(servers=(2,)), jobs=(
    ...     Job(id="a", release_s=0, gpus=2, duration_s=6),
    ...     Job(id="b", release_s=2, gpus=2, duration_s=2)))
    >>> from asrpt_opt.policies import SRTF
    >>> simulate(inst, SRTF()).metrics.total_weighted_completion_s
    12.0
    """
    if isinstance(policy, str):
        raise UsageError(
            f"asrpt_opt.sim.simulate takes a policy object, got the name {policy!r}: "
            "asrpt_opt.simulate (asrpt_opt.policies.simulate) takes names"
        )
    rng = np.random.default_rng(seed)
    pol = policy
    speed = speed or default_speed(instance)
    if predictor is None:
        predictor = OraclePredictor()
    if history is not None:
        predictor.fit(list(history))
    elif not _is_fitted(predictor):
        predictor.fit([])
    own = getattr(pol, "default_placement", "consolidate")
    if placement is None:
        placement = own
    elif isinstance(placement, Placement) and placement.method is None:
        placement = replace(placement, method=own)
    sim = Simulator(
        instance,
        pol,
        placer=Placer(instance, placement, speed),
        speed=speed,
        predictor=predictor,
        restore_overhead_s=restore_overhead_s,
        rng=rng,
        refit_every=refit_every,
        history=history or (),
        engine=engine,
    )
    schedule = sim.run()
    predicted, placed_by = sim.predicted.copy(), sim.placer.name
    del sim  # its per-job state, before the validator's (a million-job run's peak)
    validate_schedule(instance, schedule, speed=speed)
    metrics = compute_metrics(instance, schedule, speed=speed)
    logger.debug("simulated %s on %s: %s", pol.name, instance.name, metrics)
    return SimulationResult(
        policy=pol.name,
        schedule=schedule,
        metrics=metrics,
        predicted_work=predicted,
        placement=placed_by,
        segment_costs=segment_costs(instance, schedule, speed),
        instance=instance,
        speed=speed,
    )


def _is_fitted(predictor: object) -> bool:
    # scikit-learn's convention: fitting sets public attributes ending in "_".
    return any(k.endswith("_") and not k.startswith("_") for k in vars(predictor))
