"""Rolling-origin evaluation of predictors: train on the past, predict the next window.

Jobs are ordered by release and cut into ``windows`` equal parts; for each part after the
first, every predictor is fitted on all earlier jobs and predicts the part. (Using release
rather than completion order lets a training job that would still run at the window's start
count as known: a mild optimism the simulator, which trains on completed jobs only, does not
have.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.job import Job
from asrpt_opt.prediction.oracle import true_work

__all__ = ["PredictionScore", "rolling_origin"]


@dataclass(frozen=True, kw_only=True)
class PredictionScore:
    """Accuracy of one predictor over all evaluation windows.

    Attributes
    ----------
    name : str
    n : int
        Predicted jobs.
    mae : float
        Mean absolute error (work units).
    mdape : float
        Median absolute percentage error, |pred - true| / true.
    r2_log : float
        Coefficient of determination on log(1 + length).
    truth, predicted : ndarray
        For plots.
    """

    name: str
    n: int
    mae: float
    mdape: float
    r2_log: float
    truth: NDArray[np.float64]
    predicted: NDArray[np.float64]

    def to_json(self) -> dict[str, Any]:
        """Scores as a JSON-ready dict."""
        return {
            "predictor": self.name,
            "n": self.n,
            "mae": self.mae,
            "mdape": self.mdape,
            "r2_log": self.r2_log,
        }


def rolling_origin(
    jobs: Sequence[Job],
    predictors: Mapping[str, Any],
    *,
    windows: int = 10,
    progress: Callable[[int, int], None] | None = None,
) -> list[PredictionScore]:
    """Score each predictor by rolling-origin evaluation.

    Parameters
    ----------
    jobs : sequence of Job
        At least ``windows`` jobs.
    predictors : mapping of name to unfitted estimator
        Each is cloned per window (scikit-learn ``clone``).
    windows : int
        >= 2.
    progress : callable, optional
        ``progress(done, total)`` after each fit (predictors x windows).

    Returns
    -------
    list of PredictionScore
    """
    from sklearn.base import clone

    if windows < 2:
        raise UsageError("windows must be >= 2")
    if len(jobs) < windows:
        raise UsageError(f"need at least {windows} jobs, got {len(jobs)}")
    order = sorted(jobs, key=lambda j: j.release_s)
    edges = np.linspace(0, len(order), windows + 1).astype(int)
    out: list[PredictionScore] = []
    for name, est in predictors.items():
        truth: list[float] = []
        pred: list[float] = []
        for k in range(1, windows):
            train, test = order[: edges[k]], order[edges[k] : edges[k + 1]]
            model = clone(est).fit(train)
            pred.extend(np.asarray(model.predict(test), dtype=float).tolist())
            truth.extend(true_work(j) for j in test)
            if progress is not None:
                progress(len(out) * (windows - 1) + k, len(predictors) * (windows - 1))
        y, p = np.asarray(truth), np.asarray(pred)
        ly, lp = np.log1p(y), np.log1p(p)
        ss = float(((ly - ly.mean()) ** 2).sum())
        out.append(
            PredictionScore(
                name=name,
                n=y.size,
                mae=float(np.abs(p - y).mean()),
                mdape=float(np.median(np.abs(p - y) / y)),
                r2_log=1.0 - float(((ly - lp) ** 2).sum()) / ss if ss > 0 else math.nan,
                truth=y,
                predicted=p,
            )
        )
    return out
