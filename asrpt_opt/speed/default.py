"""The one place that chooses a speed model for an instance.

An instance states which speed model its jobs run at (``Instance.speed_model``, the
top-level ``speed_model`` field of its file); when it states none, abstract jobs follow the
model's own rules (:class:`~asrpt_opt.speed.base.AbstractSpeed`) and DNN jobs run at their
worker graph's modelled iteration time (:class:`~asrpt_opt.speed.cluster.ClusterSpeed`).
Only :func:`~asrpt_opt.sim.simulation.simulate` and the command line call :func:`default_speed`;
every other function (validator, metrics, bounds) takes its speed model as an argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asrpt_opt.errors import lookup
from asrpt_opt.model.instance import Instance
from asrpt_opt.speed.base import AbstractSpeed, PooledSpeed, SpeedModel

__all__ = [
    "CLUSTER_MODELS",
    "SOLVE_CLUSTER_MODELS",
    "SPEED_MODELS",
    "default_speed",
    "instance_cluster_model",
    "make_speed",
    "offline_speed",
]


def _measured_pollux(instance: Instance, **params: Any) -> SpeedModel:
    from asrpt_opt.speed.measured import PolluxSpeed

    return PolluxSpeed(**params)


def _model_rules(instance: Instance, *, placement: str = "mincut") -> SpeedModel:
    if instance.is_abstract:
        return AbstractSpeed()
    # Worker graphs (networkx) and the placement kernels load only for DNN jobs.
    from asrpt_opt.speed.cluster import ClusterSpeed

    return ClusterSpeed(instance.cluster, method=placement)


#: Speed models by the name an instance gives in ``speed_model``; ``default`` (the field
#: absent) is the model's own rules.
SPEED_MODELS: dict[str, Callable[..., SpeedModel]] = {
    "default": _model_rules,
    "measured-pollux": _measured_pollux,
}


def make_speed(name: str | None, instance: Instance, **params: Any) -> SpeedModel:
    """Build the speed model registered as ``name`` for ``instance``.

    Parameters
    ----------
    name : str or None
        A key of :data:`SPEED_MODELS`; None means ``default``, the model's own rules.
    instance : Instance
    **params
        Parameters of that speed model (for the model's rules: ``placement``, the method that
        arranges a DNN job's workers inside its GPUs).

    Returns
    -------
    SpeedModel
    """
    factory = lookup(SPEED_MODELS, "default" if name is None else name, what="speed model")
    return factory(instance, **params)


def default_speed(instance: Instance, *, placement: str = "mincut") -> SpeedModel:
    """The speed model ``instance`` asks for.

    Parameters
    ----------
    instance : Instance
    placement : str
        Placement method that arranges DNN jobs' workers inside their GPUs (only used by the
        worker-graph model).

    Returns
    -------
    SpeedModel
        :class:`~asrpt_opt.speed.measured.PolluxSpeed` for ``speed_model: measured-pollux``;
        otherwise :class:`~asrpt_opt.speed.base.AbstractSpeed` for an all-abstract instance
        and :class:`~asrpt_opt.speed.cluster.ClusterSpeed` when it has DNN jobs.
    """
    if instance.speed_model is None:
        return make_speed("default", instance, placement=placement)
    return make_speed(instance.speed_model, instance)


#: The offline models' GPU-sharing rules (``solve --cluster-model``).
CLUSTER_MODELS = ("pooled", "server-local", "spread")

#: What ``solve --cluster-model`` accepts: the instance's own model, or a named one.
SOLVE_CLUSTER_MODELS = ("instance", *CLUSTER_MODELS)


def offline_speed(cluster_model: str) -> SpeedModel:
    """The speed model under which a schedule of an offline cluster model is validated.

    Parameters
    ----------
    cluster_model : {"pooled", "server-local", "spread"}
        ``pooled`` treats the cluster as one pool of GPUs (spreading costs nothing); the
        others are the abstract jobs' rules.

    Returns
    -------
    SpeedModel
    """
    lookup(dict.fromkeys(CLUSTER_MODELS), cluster_model, what="cluster model")
    return PooledSpeed() if cluster_model == "pooled" else AbstractSpeed()


def instance_cluster_model(instance: Instance) -> str:
    """The offline cluster model that is the instance as written.

    ``spread`` when some job spans servers at a slowdown (its ``spread_slowdown`` > 1),
    else ``pooled``: with every slowdown 1 a job runs as fast across servers as within one,
    which is exactly the pooled model.

    Parameters
    ----------
    instance : Instance

    Returns
    -------
    str
        ``"spread"`` or ``"pooled"``.
    """
    return "spread" if any(j.spread_slowdown != 1.0 for j in instance.jobs) else "pooled"
