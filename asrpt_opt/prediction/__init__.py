"""Predicting how long jobs run (in work units), for policies that use lengths.

The oracle predictors load with the package; the learned ones (scikit-learn) load when first
built or accessed.

>>> sorted(PREDICTORS)
['global', 'history', 'last', 'median', 'noisy', 'oracle', 'rf']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import lookup
from asrpt_opt.model.job import Job
from asrpt_opt.prediction.oracle import NoisyOraclePredictor, OraclePredictor, true_work


class Predictor(Protocol):
    """What the simulator needs from a predictor."""

    def fit(self, history: Sequence[Job]) -> Predictor:
        """Learn from completed jobs."""

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Predicted work units of each job."""


_LEARNED = ("GlobalMedian", "HistoryMean", "LastValue", "RandomForestIterations")


def _learned(cls: str, **fixed: Any) -> Callable[..., Any]:
    def build(**params: Any) -> Any:
        module = importlib.import_module("asrpt_opt.prediction.learned")
        return getattr(module, cls)(**fixed, **params)

    build.__name__ = cls
    return build


#: Predictor names (as used by ``--predictors``) and their constructors.
PREDICTORS: dict[str, Callable[..., Any]] = {
    "rf": _learned("RandomForestIterations"),
    "history": _learned("HistoryMean"),
    "median": _learned("HistoryMean", statistic="median"),
    "last": _learned("LastValue"),
    "global": _learned("GlobalMedian"),
    "oracle": OraclePredictor,
    "noisy": NoisyOraclePredictor,
}


def make_predictor(name: str, **params: Any) -> Any:
    """Build a registered predictor by name.

    Parameters
    ----------
    name : str
        A key of :data:`PREDICTORS`.
    **params
        Constructor parameters.

    Returns
    -------
    Predictor

    Raises
    ------
    UnknownNameError
        If no predictor has that name; the message lists the known ones.
    """
    return lookup(PREDICTORS, name, what="predictor")(**params)


#: The constructor parameter through which each randomised predictor takes its seed.
_SEED_PARAMS = {"rf": "random_state", "noisy": "seed"}


def seed_params(name: str, seed: int | None) -> dict[str, Any]:
    """The constructor parameters that seed predictor ``name`` (empty for deterministic ones).

    Parameters
    ----------
    name : str
        A key of :data:`PREDICTORS`.
    seed : int or None

    Returns
    -------
    dict

    Examples
    --------
    >>> seed_params("rf", 3), seed_params("oracle", 3)
    ({'random_state': 3}, {})
    """
    lookup(PREDICTORS, name, what="predictor")
    return {_SEED_PARAMS[name]: seed} if name in _SEED_PARAMS else {}


def __getattr__(name: str) -> Any:
    if name in _LEARNED:
        return getattr(importlib.import_module("asrpt_opt.prediction.learned"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "PREDICTORS",
    "GlobalMedian",
    "HistoryMean",
    "LastValue",
    "NoisyOraclePredictor",
    "OraclePredictor",
    "Predictor",
    "RandomForestIterations",
    "make_predictor",
    "seed_params",
    "true_work",
]
