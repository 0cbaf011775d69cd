"""The exact backends of :func:`~asrpt_opt.solvers.solve.solve`, by name: each builds a model
of one discretised instance (:class:`~asrpt_opt.solvers._data.Discrete`) that a solver can
solve. OR-Tools and PuLP load when a backend is first built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from asrpt_opt.errors import lookup
from asrpt_opt.solvers._data import Discrete
from asrpt_opt.solvers.result import BackendOutcome, Deadline

__all__ = ["BACKENDS", "SOLVERS", "VERSIONS", "Backend", "make_backend"]


class Backend(Protocol):
    """A model of one discretised instance that a solver can solve."""

    def solve(
        self,
        *,
        time_limit_s: float,
        threads: int = 1,
        gap: float = 0.0,
        seed: int = 0,
        work: float | None = None,
    ) -> BackendOutcome:
        """Solve within the limits and report what was proven."""


def _cpsat(data: Discrete, *, preemptive: bool, hint: Any, deadline: Deadline | None) -> Backend:
    from asrpt_opt.solvers.cpsat import CPSATModel

    return CPSATModel(data, preemptive=preemptive, hint=hint, deadline=deadline)


def _milp(data: Discrete, *, preemptive: bool, hint: Any, deadline: Deadline | None) -> Backend:
    from asrpt_opt.solvers.milp import TimeIndexedMILP

    del hint  # the MILP is not warm-started
    return TimeIndexedMILP(data, preemptive=preemptive, deadline=deadline)


#: Exact backends by name: each builds a model of a discretised instance.
BACKENDS: dict[str, Callable[..., Backend]] = {"cpsat": _cpsat, "milp": _milp}

#: What ``solve --solver`` accepts: a backend, or the portfolio (CP-SAT, then the MILP).
SOLVERS = ("portfolio", *BACKENDS)


def _version(package: str) -> str:
    # importlib.metadata loads only when a result names its solvers, not at every start.
    from importlib.metadata import version

    return version(package)


#: Per backend, the solver versions it reports.
VERSIONS = {
    "cpsat": lambda: f"ortools {_version('ortools')}",
    "milp": lambda: f"pulp {_version('pulp')} + HiGHS {_version('highspy')}",
}


def make_backend(
    name: str,
    data: Discrete,
    *,
    preemptive: bool,
    hint: Any = None,
    deadline: Deadline | None = None,
) -> Backend:
    """Build the exact backend ``name`` for ``data``.

    Parameters
    ----------
    name : str
        A key of :data:`BACKENDS`.
    data : Discrete
        The discretised instance.
    preemptive : bool
    hint : list, optional
        A feasible non-preemptive schedule to warm-start from (CP-SAT only).
    deadline : Deadline, optional
        Building raises :class:`~asrpt_opt.solvers.result.OutOfTime` once it passes.

    Returns
    -------
    Backend
    """
    build = lookup(BACKENDS, name, what="solver")
    return build(data, preemptive=preemptive, hint=hint, deadline=deadline)
