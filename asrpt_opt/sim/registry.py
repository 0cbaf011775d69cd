"""The registry of policy names that :func:`~asrpt_opt.sim.engine.simulate` accepts.

The simulator sits below the policies (they build on its view), so it cannot import them;
instead :mod:`asrpt_opt.policies` registers its policies here when it loads, and looking a
name up loads it first (``import asrpt_opt`` no longer does, to stay cheap). A custom
policy becomes usable by name, in ``simulate`` and on the command line, with
:func:`register_policy`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.sim.view import Policy

__all__ = [
    "POLICIES",
    "check_policy_params",
    "make_policy",
    "policy_parameters",
    "register_policy",
]

#: Policy names (as used by ``--policy``) and their constructors.
POLICIES: dict[str, Callable[..., Policy]] = {}


def _with_builtins() -> dict[str, Callable[..., Policy]]:
    """:data:`POLICIES` with the built-in policies registered (loading them on first use)."""
    if "a-srpt" not in POLICIES:
        # By name, not by import statement: the policies sit above the simulator.
        importlib.import_module("asrpt_opt.policies")
    return POLICIES


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
    return lookup(_with_builtins(), name, what="policy")(**params)


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
    factory = lookup(_with_builtins(), name, what="policy")
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
