"""Solver parameters, as the TOML presets of the top-level ``solvers/`` folder hold them."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from asrpt_opt.errors import SolverError
from asrpt_opt.model.io import input_problem

__all__ = [
    "CONTINUOUS_MAX_JOBS",
    "MILP_NODES_PER_WORK",
    "SEARCH_NODES_PER_WORK",
    "WORK_SAFETY_S",
    "SolverParams",
    "load_preset",
    "work_nodes",
]

#: The most jobs the exact continuous-time preemptive search is tried on (the number of event
#: sequences grows like (2n - 1)!!); :mod:`asrpt_opt.solvers.continuous` uses it.
CONTINUOUS_MAX_JOBS = 12

#: Units of deterministic work: one is one CP-SAT deterministic second
#: (``max_deterministic_time``), this many branch-and-bound nodes of the MILP (HiGHS'
#: ``mip_max_nodes``), and this many prefix LPs of the continuous-time search.
MILP_NODES_PER_WORK = 100
SEARCH_NODES_PER_WORK = 200
#: The commands' wall-clock safety net behind a work limit (seconds per solve).
WORK_SAFETY_S = 120.0


def work_nodes(work: float | None, per_work: int) -> int | None:
    """A node limit from ``work`` units at ``per_work`` nodes each (None without a limit).

    Parameters
    ----------
    work : float or None
    per_work : int
        :data:`MILP_NODES_PER_WORK` or :data:`SEARCH_NODES_PER_WORK`.

    Returns
    -------
    int or None
        At least 1.
    """
    return None if work is None else max(1, round(work * per_work))


@dataclass(frozen=True, kw_only=True)
class SolverParams:
    """Solver parameters, as in the TOML presets of the top-level ``solvers/`` folder.

    Parameters
    ----------
    time_limit_s : float
        For the whole solve (model building included), > 0; see :func:`solve` for how it is
        shared.
    relative_gap : float
        Stop when the gap is below this (0 = prove optimality).
    threads : int
        CP-SAT with more than one worker is not deterministic, whatever the limits.
    seed : int
    work_limit : float, optional
        Deterministic work units for the whole solve (see :data:`SEARCH_NODES_PER_WORK`):
        a solve stopped by work gives the same result on any machine, busy or quiet, where
        one stopped by ``time_limit_s`` depends on the machine's speed and load. With a work
        limit, ``time_limit_s`` is a safety net; the result's ``params["stopped_by"]`` says
        which limit stopped it (``work``, ``time``, or ``none``).
    """

    time_limit_s: float = 10.0
    relative_gap: float = 0.0
    threads: int = 1
    seed: int = 0
    work_limit: float | None = None

    def __post_init__(self) -> None:
        for name in ("time_limit_s", "relative_gap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise SolverError(f"{name} must be a number, got {value!r}")
        if not (self.time_limit_s > 0 and math.isfinite(self.time_limit_s)):
            raise SolverError(
                f"time_limit_s must be a finite number > 0, got {self.time_limit_s!r}"
            )
        if not 0 <= self.relative_gap < 1:
            raise SolverError(f"relative_gap must be in [0, 1), got {self.relative_gap!r}")
        for name in ("threads", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise SolverError(f"{name} must be a whole number, got {value!r}")
        if self.threads < 1:
            raise SolverError(f"threads must be >= 1, got {self.threads!r}")
        if self.seed < 0:
            raise SolverError(f"seed must be >= 0, got {self.seed!r}")
        work = self.work_limit
        if work is not None and (
            isinstance(work, bool)
            or not isinstance(work, int | float)
            or not (work > 0 and math.isfinite(work))
        ):
            raise SolverError(f"work_limit must be a finite number > 0, got {work!r}")

    def share(self, fraction: float) -> float | None:
        """``fraction`` of the work limit (None without one)."""
        return None if self.work_limit is None else self.work_limit * fraction


def load_preset(path: str | PathLike[str]) -> SolverParams:
    """Read a TOML solver preset.

    Parameters
    ----------
    path : path-like
        A file with any of ``time_limit_s``, ``relative_gap``, ``threads``, ``seed``,
        ``work_limit``.

    Returns
    -------
    SolverParams
    """
    problem = input_problem(path)
    if problem is not None:
        raise SolverError(
            f"{path}: cannot read preset: {problem.removeprefix('cannot read file: ')}"
        )
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SolverError(f"{path}: cannot read preset: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SolverError(f"{path}: is not UTF-8 text (a TOML preset is)") from None
    except tomllib.TOMLDecodeError as exc:
        raise SolverError(f"{path}: invalid TOML: {exc}") from None
    known = {"time_limit_s", "relative_gap", "threads", "seed", "work_limit"}
    for key in data:
        if key not in known:
            raise SolverError(f"{path}: unknown key {key!r} (allowed: {', '.join(sorted(known))})")
    try:
        return SolverParams(**data)
    except (TypeError, SolverError) as exc:
        raise SolverError(f"{path}: {exc}") from None
