"""Predicting how long jobs run (in work units), for policies that use lengths."""

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.job import Job
from asrpt_opt.prediction.oracle import NoisyOraclePredictor, OraclePredictor, true_work


class Predictor(Protocol):
    """What the simulator needs from a predictor."""

    def fit(self, history: Sequence[Job]) -> "Predictor":
        """Learn from completed jobs."""

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Predicted work units of each job."""


__all__ = ["NoisyOraclePredictor", "OraclePredictor", "Predictor", "true_work"]
