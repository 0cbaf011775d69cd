"""Solver parameters, as the TOML presets of the top-level ``solvers/`` folder hold them."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from asrpt_opt.errors import SolverError
from asrpt_opt.model.io import input_problem

__all__ = ["CONTINUOUS_MAX_JOBS", "SolverParams", "load_preset"]

#: The most jobs the exact continuous-time preemptive search is tried on (the number of event
#: sequences grows like (2n - 1)!!); :mod:`asrpt_opt.solvers.continuous` uses it.
CONTINUOUS_MAX_JOBS = 12


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
    seed : int
    """

    time_limit_s: float = 10.0
    relative_gap: float = 0.0
    threads: int = 1
    seed: int = 0

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


def load_preset(path: str | PathLike[str]) -> SolverParams:
    """Read a TOML solver preset.

    Parameters
    ----------
    path : path-like
        A file with any of ``time_limit_s``, ``relative_gap``, ``threads``, ``seed``.

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
    known = {"time_limit_s", "relative_gap", "threads", "seed"}
    for key in data:
        if key not in known:
            raise SolverError(f"{path}: unknown key {key!r} (allowed: {', '.join(sorted(known))})")
    try:
        return SolverParams(**data)
    except (TypeError, SolverError) as exc:
        raise SolverError(f"{path}: {exc}") from None
