"""The records offline solves return, and the honest status vocabulary."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from asrpt_opt.errors import SolverError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule

__all__ = [
    "STATUSES",
    "BackendOutcome",
    "Deadline",
    "GridOptimum",
    "OutOfTime",
    "SolveResult",
    "SolveStatus",
    "StoppedBy",
    "meets",
    "optimum_record",
    "quiet_stdout",
    "tolerance",
]


class StoppedBy(StrEnum):
    """Which limit stopped a solve: none (everything finished), the deterministic work limit
    (reproducible on any machine) or the wall-clock time limit (depends on the machine)."""

    NONE = "none"
    WORK = "work"
    TIME = "time"

    @staticmethod
    def worst(stops: list[StoppedBy]) -> StoppedBy:
        """The least reproducible of several stops."""
        for kind in (StoppedBy.TIME, StoppedBy.WORK):
            if kind in stops:
                return kind
        return StoppedBy.NONE


class SolveStatus(StrEnum):
    """What a solve proved. ``OPTIMAL`` only when a proven bound meets the incumbent's value.

    The members are strings (``SolveStatus.OPTIMAL == "optimal"``), so they print and serialise
    as the ``--json`` contract's status words.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT_NO_SOLUTION = "time_limit_no_solution"
    ERROR = "error"


class OutOfTime(SolverError):
    """The time limit ran out while a model was still being built."""


class Deadline:
    """The moment (``time.perf_counter()``) by which a whole solve must end.

    Parameters
    ----------
    limit_s : float
        Seconds from now; ``math.inf`` for no limit.
    """

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.at = time.perf_counter() + limit_s

    def left_s(self) -> float:
        """Seconds left (negative once passed)."""
        return self.at - time.perf_counter()

    def check(self, what: str) -> None:
        """Raise :class:`OutOfTime` naming ``what`` when the deadline has passed."""
        if time.perf_counter() > self.at:
            raise OutOfTime(f"the {self.limit_s:.3g} s time limit ran out while {what}")


def tolerance(value: float) -> float:
    """How close a schedule's value must come to a bound to meet it (the LPs' and solvers'
    accuracy: relative 1e-9 plus 1e-9); 0 for an infinite value.

    Parameters
    ----------
    value : float

    Returns
    -------
    float
    """
    return 1e-9 * max(1.0, abs(value)) + 1e-9 if math.isfinite(value) else 0.0


def meets(value: float, bound: float) -> bool:
    """Whether a schedule of ``value`` is proven optimal by the lower bound ``bound``.

    Parameters
    ----------
    value, bound : float

    Returns
    -------
    bool
    """
    return value <= bound + tolerance(value)


#: The status words, in the order of :class:`SolveStatus`.
STATUSES = tuple(s.value for s in SolveStatus)

#: Per job, the pieces a backend schedules: (start, end, allocation) in time units.
Runs = list[list[tuple[int, int, Allocation]]]


@dataclass(frozen=True, kw_only=True)
class BackendOutcome:
    """What one backend (CP-SAT or the MILP) reports about one discretised model.

    Attributes
    ----------
    status : SolveStatus
        The backend's own verdict, before the schedule is validated.
    bound_units : float
        Best proven lower bound on the weighted objective, in time units (-inf if none).
    runs : list or None
        Per job, its pieces (start, end, allocation) in time units; None without a solution.
    wall_s : float
    stopped_by : StoppedBy
        The limit that stopped the backend, if one did.
    """

    status: SolveStatus
    bound_units: float
    runs: Runs | None
    wall_s: float
    stopped_by: StoppedBy = StoppedBy.NONE


@dataclass(frozen=True, kw_only=True)
class GridOptimum:
    """The unit-grid preemptive solve behind a continuous-time preemptive result.

    Attributes
    ----------
    time_unit_s : float
        Preemption happened only at multiples of this.
    status : SolveStatus
        ``OPTIMAL``: ``objective_s`` is the optimum among schedules on the grid (an upper
        bound on the continuous-time optimum, not a lower one).
    objective_s, bound_s : float or None
        The grid model's best value and its proven bound (valid on the grid only).
    """

    time_unit_s: float
    status: SolveStatus
    objective_s: float | None
    bound_s: float | None

    def to_json(self) -> dict[str, Any]:
        """Encode as ``{"time_unit_s", "status", "objective_s", "bound_s"}``."""
        return {
            "time_unit_s": self.time_unit_s,
            "status": self.status.value,
            "objective_s": self.objective_s,
            "bound_s": self.bound_s,
        }


@dataclass(frozen=True, kw_only=True)
class SolveResult:
    """Outcome of an offline solve.

    Attributes
    ----------
    status : SolveStatus
    objective_s : float or None
        sum w_j C_j of the best verified schedule, recomputed from it.
    bound_s : float or None
        A proven lower bound on the model's optimum (the solver's dual bound, the LP
        relaxation or the relaxation bounds, whichever is largest); None when infeasible.
    schedule : Schedule or None
        The best verified schedule.
    backend : str
    cluster_model : str
        The offline model's GPU-sharing rule (``pooled``, ``server-local`` or ``spread``).
    preemptive : bool
    wall_s : float
    solver : str
        Solver name and version.
    params : dict
        Parameters the solve used (time limit, gap, threads, seed, time unit...).
    message : str
        Why the status is what it is, when that needs saying.
    relation : str
        What the solved model is to the instance as written: ``exact`` (the instance's own
        GPU-sharing rule), ``relaxation`` (pooled while jobs spread at a slowdown: its
        optimum is a lower bound on the instance's) or ``restriction`` (server-local: an
        upper bound).
    preemption : {"continuous", "grid"} or None
        For preemptive models: preemption at any time, or only on the unit grid
        (``model["time"]`` in :meth:`to_json`).
    grid : GridOptimum or None
        With continuous preemption, the unit-grid solve it started from.
    """

    status: SolveStatus
    objective_s: float | None
    bound_s: float | None
    schedule: Schedule | None
    backend: str
    cluster_model: str
    preemptive: bool
    wall_s: float
    solver: str
    params: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    relation: str = "exact"
    preemption: str | None = None
    grid: GridOptimum | None = None

    def model(self) -> dict[str, Any]:
        """The model solved: ``preemptive``, ``cluster_model``, ``relation`` to the instance
        as written, and ``time``: ``continuous`` (without preemption, or with preemption at
        any time) or preemption on a grid of ``time_unit_s``, so that the optimum is over
        those schedules only.

        Returns
        -------
        dict
        """
        unit = self.params.get("time_unit_s")
        return {
            "preemptive": self.preemptive,
            "cluster_model": self.cluster_model,
            "relation": self.relation,
            "time": f"preemption at multiples of {unit:g} s"
            if self.preemptive and self.preemption == "grid" and unit is not None
            else "continuous",
        }

    def to_json(self) -> dict[str, Any]:
        """The ``solve --json`` object (docs/output-format.md), plus provenance."""
        return {
            "status": self.status.value,
            "objective_s": self.objective_s,
            "bound_s": self.bound_s,
            "backend": self.backend,
            "placement": self.cluster_model,
            "preemptive": self.preemptive,
            "model": self.model(),
            **({"grid": self.grid.to_json()} if self.grid is not None else {}),
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
    # The C library writes to file descriptor 1 whatever ``sys.stdout`` is: in Jupyter,
    # ``sys.stdout`` is a Python stream without a file descriptor of its own, and the kernel
    # forwards descriptor 1 into the cell's output.
    fd = 1
    try:
        sys.stdout.flush()
        saved = os.dup(fd)
    except (AttributeError, OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def optimum_record(result: SolveResult, instance: Instance, *, source: str) -> dict[str, Any]:
    """A solve's result with its provenance, as kept in ``instances/optima/``.

    Parameters
    ----------
    result : SolveResult
    instance : Instance
        The instance solved (its SHA-256 is recorded).
    source : str
        The instance file's name.

    Returns
    -------
    dict
        JSON-ready: instance file and hash, model, status, objective, bound, solver, parameters,
        wall time, package version and date.
    """
    import datetime
    import hashlib
    from importlib.metadata import version

    from asrpt_opt.model.io import dumps_instance

    return {
        "instance": source,
        "instance_sha256": hashlib.sha256(dumps_instance(instance).encode()).hexdigest(),
        "preemptive": result.preemptive,
        "placement": result.cluster_model,
        "model": result.model(),
        "status": result.status.value,
        "objective_s": result.objective_s,
        "bound_s": result.bound_s,
        "backend": result.backend,
        "solver": result.solver,
        "params": result.params,
        "wall_s": round(result.wall_s, 3),
        "asrpt_opt": version("asrpt-opt"),
        "date": datetime.date.today().isoformat(),
        "message": result.message,
    }
