"""The policy registry: names (as ``--policy`` takes them) and their constructors, and
:func:`simulate` and :func:`simulate_stream`, the simulator's front doors that take a policy by
name.

The simulator (:mod:`asrpt_opt.sim`) sits below the policies and takes policy objects; names
are resolved here, above it. A custom policy becomes usable by name, in :func:`simulate` and
on the command line, with :func:`register_policy`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.policies.asrpt import ASRPT
from asrpt_opt.policies.easy import EasyBackfill
from asrpt_opt.policies.fifo import FIFO
from asrpt_opt.policies.las2d import TwoDimensionalLAS
from asrpt_opt.policies.msf import MostServersFirst
from asrpt_opt.policies.prr import PreferentialRoundRobin
from asrpt_opt.policies.qssf import QSSF
from asrpt_opt.policies.serverfilling import (
    FirstFitSRPT,
    GreedySRPT,
    MaxWeight,
    ServerFilling,
    ServerFillingSRPT,
)
from asrpt_opt.policies.sjf import SJF
from asrpt_opt.policies.srtf import SRPT, SRSF, SRTF
from asrpt_opt.policies.tiresias import Gittins, TiresiasDLAS, TiresiasGittins
from asrpt_opt.sim.view import Policy

if TYPE_CHECKING:
    from asrpt_opt.model.columns import JobColumns
    from asrpt_opt.model.instance import Instance
    from asrpt_opt.sim.result import SimulationResult
    from asrpt_opt.sim.stream import StreamResult

__all__ = [
    "POLICIES",
    "check_policy_params",
    "make_policy",
    "policy_parameters",
    "register_policy",
    "simulate",
    "simulate_stream",
]

#: Policy names and their constructors, in the order reports list them.
POLICIES: dict[str, Callable[..., Policy]] = {
    "a-srpt": ASRPT,
    "fifo": FIFO,
    "sjf": SJF,
    "srtf": SRTF,
    "srpt": SRPT,
    "srsf": SRSF,
    "2d-las": TwoDimensionalLAS,
    "tiresias-2d-las": TiresiasDLAS,
    "tiresias-gittins": TiresiasGittins,
    "qssf": QSSF,
    "serverfilling-srpt": ServerFillingSRPT,
    "serverfilling": ServerFilling,
    "firstfit-srpt": FirstFitSRPT,
    "greedy-srpt": GreedySRPT,
    "msf": MostServersFirst,
    "maxweight": MaxWeight,
    "easy-backfill": EasyBackfill,
    "gittins": Gittins,
    "prr": PreferentialRoundRobin,
}


def simulate(
    instance: Instance, policy: str | Policy = "a-srpt", **kwargs: Any
) -> SimulationResult:
    """:func:`asrpt_opt.sim.simulate` with the policy given by name or as an object.

    Parameters
    ----------
    instance : Instance
    policy : str or Policy
        A name of :data:`POLICIES` or a policy object.
    **kwargs
        :func:`asrpt_opt.sim.simulate`'s keyword parameters (``predictor``, ``seed``,
        ``engine``, ...); the others go to the policy's constructor, with a name only.

    Returns
    -------
    SimulationResult

    Raises
    ------
    UsageError
        For policy parameters given with a policy object, or unknown to the policy.
    UnknownNameError
        For a name that is not registered.

    Examples
    --------
    >>> from asrpt_opt.model import Cluster, Instance, Job
    >>> inst = Instance(name="x", cluster=Cluster(servers=(2,)), jobs=(
    ...     Job(id="a", release_s=0, gpus=2, duration_s=6),
    ...     Job(id="b", release_s=2, gpus=2, duration_s=2)))
    >>> simulate(inst, "srtf").metrics.total_weighted_completion_s
    12.0
    """
    from asrpt_opt.sim import simulation

    result: SimulationResult = _call_with_policy(simulation.simulate, instance, policy, kwargs)
    return result


def simulate_stream(
    columns: JobColumns, policy: str | Policy = "a-srpt", **kwargs: Any
) -> StreamResult:
    """:func:`asrpt_opt.sim.stream.simulate_stream` with the policy given by name or as an
    object: millions of abstract jobs in chunks cut where the cluster empties.

    Parameters
    ----------
    columns : JobColumns
        For example :func:`~asrpt_opt.traces.synthetic.msj_columns`.
    policy : str or Policy
        A regenerative policy (``fifo``, ``srtf``, ``a-srpt``, ``serverfilling-srpt``, ...).
    **kwargs
        :func:`asrpt_opt.sim.stream.simulate_stream`'s keyword parameters (``chunk_jobs``,
        ``restore_overhead_s``); the others go to the policy's constructor, with a name only.

    Returns
    -------
    StreamResult

    Examples
    --------
    >>> from asrpt_opt.traces.synthetic import msj_columns
    >>> out = simulate_stream(msj_columns(1_000, load=0.5, seed=0), "serverfilling-srpt")
    >>> out.metrics.n_jobs
    1000
    """
    from asrpt_opt.sim import stream

    result: StreamResult = _call_with_policy(stream.simulate_stream, columns, policy, kwargs)
    return result


def _call_with_policy(
    fn: Callable[..., Any], data: object, policy: str | Policy, kwargs: dict[str, Any]
) -> Any:
    # fn(data, policy object, **its keyword-only settings); the rest are policy parameters.
    own = _simulation_parameters(fn)
    settings = {k: v for k, v in kwargs.items() if k in own}
    params = {k: v for k, v in kwargs.items() if k not in own}
    if not isinstance(policy, str):
        if params:
            raise UsageError(
                f"policy parameters ({', '.join(sorted(params))}) are only accepted with a "
                "policy name"
            )
        return fn(data, policy, **settings)
    return fn(data, make_policy(policy, **params), **settings)


@functools.cache
def _simulation_parameters(fn: Callable[..., Any]) -> frozenset[str]:
    params = inspect.signature(fn).parameters.values()
    return frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def register_policy(name: str, factory: Callable[..., Policy], *, replace: bool = False) -> None:
    """Make ``factory`` available as policy ``name``.

    Parameters
    ----------
    name : str
    factory : callable
        Called with the policy's keyword parameters; returns a :class:`~asrpt_opt.sim.view.Policy`.
    replace : bool
        Allow replacing a registered name.

    Raises
    ------
    UsageError
        If ``name`` is taken and ``replace`` is false.
    """
    if name in POLICIES and not replace and POLICIES[name] is not factory:
        raise UsageError(f"policy name {name!r} is already registered")
    POLICIES[name] = factory


def make_policy(name: str, **params: Any) -> Policy:
    """Build a registered policy by name.

    Parameters
    ----------
    name : str
        A key of :data:`POLICIES`.
    **params
        Keyword parameters of the policy's constructor.

    Returns
    -------
    Policy

    Raises
    ------
    UnknownNameError
        If no policy has that name; the message lists the known ones.
    """
    return lookup(POLICIES, name, what="policy")(**params)


def policy_parameters(name: str) -> dict[str, Any]:
    """The keyword parameters of policy ``name`` and their defaults.

    Parameters
    ----------
    name : str
        A key of :data:`POLICIES`.

    Returns
    -------
    dict
        Parameter name -> default value.
    """
    factory = lookup(POLICIES, name, what="policy")
    sig = inspect.signature(factory)
    return {
        p.name: p.default
        for p in sig.parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
    }


def check_policy_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Check parameters given to policy ``name`` by name and type; convert where exact.

    A parameter whose default is a bool takes a bool, a number takes a number (an int where
    the default is an int), a sequence takes a sequence; one whose default is None or a
    string takes what it is given (the policy checks its value when it starts).

    Parameters
    ----------
    name : str
    params : dict

    Returns
    -------
    dict
        The parameters, numbers converted to the default's type.

    Raises
    ------
    UsageError
        Naming the policy, the parameter and what it accepts.
    """
    known = policy_parameters(name)
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise UsageError(f"policy {name!r} has no parameter {key!r} (parameters: {listed})")
        default = known[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise UsageError(f"policy {name!r}: {key} must be true or false, got {value!r}")
        elif isinstance(default, int | float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(f"policy {name!r}: {key} must be a number, got {value!r}")
            if isinstance(default, int) and not isinstance(value, int):
                if not float(value).is_integer():
                    raise UsageError(f"policy {name!r}: {key} must be an integer, got {value!r}")
                value = int(value)
        elif isinstance(default, tuple | list):
            if not isinstance(value, tuple | list):
                value = (value,)
            value = tuple(value)
        out[key] = value
    return out
