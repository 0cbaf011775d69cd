"""Exact offline optima and bounds (with the placement ILP, the only code that imports
OR-Tools or PuLP; they load when a backend is first built).

The front door is :func:`~asrpt_opt.solvers.solve.solve`; results are
:class:`~asrpt_opt.solvers.result.SolveResult` records whose status is a
:class:`~asrpt_opt.solvers.result.SolveStatus`.
"""

from asrpt_opt.solvers.result import STATUSES, BackendOutcome, SolveResult, SolveStatus
from asrpt_opt.solvers.solve import (
    BACKENDS,
    SOLVERS,
    SolverParams,
    load_preset,
    make_backend,
    solve,
)
from asrpt_opt.speed.default import CLUSTER_MODELS

__all__ = [
    "BACKENDS",
    "CLUSTER_MODELS",
    "SOLVERS",
    "STATUSES",
    "BackendOutcome",
    "SolveResult",
    "SolveStatus",
    "SolverParams",
    "load_preset",
    "make_backend",
    "solve",
]
