"""What a :func:`~asrpt_opt.solvers.solve.solve` call asks for: its preemption model (from
the current or the deprecated spelling) and how the model solved relates to the instance."""

from __future__ import annotations

import warnings

from asrpt_opt.errors import UnknownNameError
from asrpt_opt.model.instance import Instance
from asrpt_opt.speed.default import instance_cluster_model

__all__ = [
    "PREEMPTION_MODELS",
    "SOLVE_PREEMPTION",
    "model_relation",
    "preemption_model",
    "renamed",
]

#: What ``solve --preemption`` accepts with ``--preemptive``: preemption at any time, or on
#: the unit grid.
PREEMPTION_MODELS = ("continuous", "grid")
#: What :func:`solve`'s ``preemption`` accepts: no preemption, or one of those models.
SOLVE_PREEMPTION = ("none", *PREEMPTION_MODELS)


def renamed(old: str, new: str, value: str | None, current: str) -> str:
    """``value`` given under the deprecated name ``old`` (with a warning), else ``current``.

    Parameters
    ----------
    old, new : str
        The deprecated and the current argument names.
    value : str or None
        What was given under ``old``.
    current : str
        What was given under ``new``.

    Returns
    -------
    str
    """
    if value is None:
        return current
    warnings.warn(
        f"solve(..., {old}=) is deprecated; use {new}=", DeprecationWarning, stacklevel=3
    )
    return value


def preemption_model(preemption: str, preemptive: bool | None) -> str:
    """The one preemption model of a solve call, from its deprecated spelling too.

    Parameters
    ----------
    preemption : {"none", "continuous", "grid"}
    preemptive : bool or None
        The deprecated spelling (warns when given).

    Returns
    -------
    str
        One of :data:`SOLVE_PREEMPTION`.
    """
    if preemptive is not None:
        warnings.warn(
            "solve(..., preemptive=) is deprecated; use preemption='none', 'continuous' or 'grid'",
            DeprecationWarning,
            stacklevel=3,
        )
        if not preemptive:
            return "none"
        if preemption == "none":
            return "continuous"
    if preemption not in SOLVE_PREEMPTION:
        raise UnknownNameError("preemption model", preemption, SOLVE_PREEMPTION)
    return preemption


def model_relation(instance: Instance, cluster_model: str) -> str:
    """How the model solved relates to the instance as written.

    Parameters
    ----------
    instance : Instance
    cluster_model : str

    Returns
    -------
    str
        ``exact``, ``relaxation`` (its optimum is a lower bound) or ``restriction`` (an
        upper bound).
    """
    own = instance_cluster_model(instance)
    if cluster_model == own:
        return "exact"
    if cluster_model == "pooled":
        return "relaxation"  # spreading at no cost: its optimum is a lower bound
    if cluster_model == "server-local":
        return "restriction"  # never spreading: its optimum is an upper bound
    return "exact"  # spread with every slowdown 1 is the pooled model
