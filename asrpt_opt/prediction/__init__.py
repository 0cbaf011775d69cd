"""Predicting how long jobs run (in work units), for policies that use lengths.

>>> sorted(PREDICTORS)
['global', 'history', 'last', 'median', 'noisy', 'oracle', 'rf']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.job import Job
from asrpt_opt.prediction.learned import (
    GlobalMedian,
    HistoryMean,
    LastValue,
    RandomForestIterations,
)
from asrpt_opt.prediction.oracle import NoisyOraclePredictor, OraclePredictor, true_work


class Predictor(Protocol):
    """What the simulator needs from a predictor."""

    def fit(self, history: Sequence[Job]) -> Predictor:
        """Learn from completed jobs."""

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Predicted work units of each job."""


#: Predictor names (as used by ``--predictors``) and their constructors.
PREDICTORS: dict[str, Callable[..., Any]] = {
    "rf": RandomForestIterations,
    "history": HistoryMean,
    "median": lambda **kw: HistoryMean(statistic="median", **kw),
    "last": LastValue,
    "global": GlobalMedian,
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
    """
    try:
        factory = PREDICTORS[name]
    except KeyError:
        raise KeyError(
            f"unknown predictor {name!r} (known: {', '.join(sorted(PREDICTORS))})"
        ) from None
    return factory(**params)


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
    "true_work",
]
