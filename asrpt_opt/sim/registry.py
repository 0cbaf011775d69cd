"""The registry of policy names that :func:`~asrpt_opt.sim.engine.simulate` accepts.

The simulator sits below the policies (they build on its view), so it cannot import them;
instead :mod:`asrpt_opt.policies` registers its policies here when the package loads (which
``import asrpt_opt`` always does first). A custom policy becomes usable by name, in
``simulate`` and on the command line, with :func:`register_policy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.sim.view import Policy

__all__ = ["POLICIES", "make_policy", "register_policy"]

#: Policy names (as used by ``--policy``) and their constructors.
POLICIES: dict[str, Callable[..., Policy]] = {}


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
