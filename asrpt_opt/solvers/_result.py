"""The record every offline solve returns, and the honest status vocabulary."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from asrpt_opt.model.schedule import Schedule

__all__ = ["STATUSES", "SolveResult", "quiet_stdout"]

#: ``optimal`` only when the solver proved it (incumbent value equals the proven bound).
STATUSES = ("optimal", "feasible", "infeasible", "time_limit_no_solution", "error")


@dataclass(frozen=True, kw_only=True)
class SolveResult:
    """Outcome of an offline solve.

    Attributes
    ----------
    status : str
        One of :data:`STATUSES`.
    objective_s : float or None
        sum w_j C_j of the best verified schedule, recomputed from it.
    bound_s : float or None
        A proven lower bound on the model's optimum (the solver's dual bound, the LP
        relaxation or the relaxation bounds, whichever is largest); None when infeasible.
    schedule : Schedule or None
        The best verified schedule.
    backend : str
    placement : str
    preemptive : bool
    wall_s : float
    solver : str
        Solver name and version.
    params : dict
        Parameters the solve used (time limit, gap, threads, seed, time unit...).
    message : str
        Why the status is what it is, when that needs saying.
    """

    status: str
    objective_s: float | None
    bound_s: float | None
    schedule: Schedule | None
    backend: str
    placement: str
    preemptive: bool
    wall_s: float
    solver: str
    params: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        """The ``solve --json`` object of DESIGN.md section 5, plus provenance."""
        return {
            "status": self.status,
            "objective_s": self.objective_s,
            "bound_s": self.bound_s,
            "backend": self.backend,
            "placement": self.placement,
            "preemptive": self.preemptive,
            "solver": self.solver,
            "wall_s": self.wall_s,
            "params": self.params,
            "message": self.message,
            "jobs": [run.to_json() for run in self.schedule.runs] if self.schedule else [],
        }


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence C-level writes to stdout (HiGHS prints a banner when a model is created),
    so that library calls never print and ``--json`` output stays clean.

    Returns
    -------
    context manager
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
