"""Predictors that learn from completed jobs: random forest and per-key baselines.

All follow the scikit-learn estimator contract: ``__init__`` only stores parameters,
``fit(history)`` validates them, learns attributes ending in ``_`` and returns ``self``, and
``predict(jobs)`` returns predicted work units (iterations for DNN jobs, seconds for abstract
ones). ``predict`` before ``fit`` raises :class:`sklearn.exceptions.NotFittedError`.

Fallbacks (documented, never silent errors): fitted on an empty history, every predictor
answers its ``fallback``; a job whose recurrence key (or any categorical value) was never
seen gets the global median of the history (per-key baselines) or the forest's answer with
that value coded as "unseen" (random forest).

References
----------
.. [1] L. Breiman, "Random forests", Machine Learning 45:5-32, 2001.
.. [2] Z. Luo, J. Liu, M. Lee, N. B. Shroff, "Prediction-assisted online distributed deep
   learning workload scheduling in GPU clusters", IEEE INFOCOM 2025, arXiv:2501.05563
   (random-forest prediction of recurring jobs' iterations).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import NotFittedError

from asrpt_opt.errors import UsageError
from asrpt_opt.model.job import Job
from asrpt_opt.prediction.features import (
    FEATURE_NAMES,
    job_key,
    learn_codes,
    static_row,
    training_matrix,
)
from asrpt_opt.prediction.oracle import true_work

__all__ = ["GlobalMedian", "HistoryMean", "LastValue", "RandomForestIterations"]


def _targets(history: Sequence[Job]) -> NDArray[np.float64]:
    y = np.array([true_work(j) for j in history], dtype=np.float64)
    if y.size and (not np.all(np.isfinite(y)) or np.any(y <= 0)):
        bad = int(np.flatnonzero(~np.isfinite(y) | (y <= 0))[0])
        raise UsageError(f"job {history[bad].id!r} has a non-positive length {y[bad]!r}")
    return y


def _check_fallback(value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise UsageError(f"fallback must be a positive number, got {value!r}")


def _require_fitted(est: BaseEstimator, attr: str) -> None:
    if not hasattr(est, attr):
        raise NotFittedError(f"{type(est).__name__} is not fitted yet; call fit(history) first")


class RandomForestIterations(BaseEstimator):
    """Random-forest regression of log length on job features (A-SRPT's predictor).

    Parameters
    ----------
    n_estimators : int
    max_depth : int or None
    min_samples_leaf : int
    max_features : float
        Fraction of the features each split considers (scikit-learn's ``max_features``).
    fallback : float
        Prediction when fitted on an empty history.
    random_state : int, Generator or None
    n_jobs : int or None
        Passed to scikit-learn.

    Examples
    --------
    >>> from asrpt_opt.model import Job
    >>> jobs = [Job(id=str(i), release_s=i, gpus=1, duration_s=10.0 * (1 + i % 2),
    ...             features={"recurrence_key": str(i % 2)}) for i in range(20)]
    >>> rf = RandomForestIterations(n_estimators=10, random_state=0).fit(jobs)
    >>> [round(float(p)) for p in rf.predict(jobs[:2])]
    [10, 20]
    """

    def __init__(
        self,
        n_estimators: int = 100,
        max_depth: int | None = None,
        min_samples_leaf: int = 2,
        max_features: float = 0.5,
        fallback: float = 3600.0,
        random_state: int | np.random.Generator | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.fallback = fallback
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, history: Sequence[Job]) -> RandomForestIterations:
        """Learn from completed jobs.

        Parameters
        ----------
        history : sequence of Job
            Completed jobs (their true lengths are known).

        Returns
        -------
        self
        """
        _check_fallback(self.fallback)
        if not (isinstance(self.n_estimators, int) and self.n_estimators >= 1):
            raise UsageError(f"n_estimators must be a positive integer, got {self.n_estimators!r}")
        y = _targets(history)
        self.n_history_ = len(history)
        self.codes_ = learn_codes(history)
        x, self.stats_ = training_matrix(history, y, self.codes_)
        self.forest_: RandomForestRegressor | None = None
        if len(history):
            seed = self.random_state
            if isinstance(seed, np.random.Generator):
                seed = int(seed.integers(2**31))
            self.forest_ = RandomForestRegressor(
                n_estimators=self.n_estimators,
                max_depth=self.max_depth,
                min_samples_leaf=self.min_samples_leaf,
                max_features=self.max_features,
                random_state=seed,
                n_jobs=self.n_jobs,
            ).fit(x, np.log1p(y))
        self.n_features_in_ = len(FEATURE_NAMES)
        return self

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Predicted work of each job.

        Parameters
        ----------
        jobs : sequence of Job

        Returns
        -------
        ndarray
        """
        _require_fitted(self, "forest_")
        if self.forest_ is None or not jobs:
            return np.full(len(jobs), float(self.fallback))
        x = np.array(
            [static_row(j, self.codes_) + self.stats_.row(job_key(j)) for j in jobs],
            dtype=np.float64,
        )
        out: NDArray[np.float64] = np.expm1(self.forest_.predict(x))
        return np.maximum(out, 1e-9)


class _PerKey(BaseEstimator):
    """Shared machinery of the per-key baselines."""

    fallback: float

    def _fit_groups(self, history: Sequence[Job]) -> dict[str, list[float]]:
        _check_fallback(self.fallback)
        y = _targets(history)
        order = sorted(range(len(history)), key=lambda i: (history[i].release_s, i))
        groups: dict[str, list[float]] = {}
        for i in order:
            groups.setdefault(job_key(history[i]), []).append(float(y[i]))
        self.global_ = float(np.median(y)) if y.size else float(self.fallback)
        self.n_history_ = len(history)
        return groups

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Per-key statistic, or the global median for an unseen key."""
        _require_fitted(self, "table_")
        return np.array(
            [self.table_.get(job_key(j), self.global_) for j in jobs], dtype=np.float64
        )


class HistoryMean(_PerKey):
    """Mean (or median) length of the earlier jobs with the same recurrence key.

    Parameters
    ----------
    statistic : {"mean", "median"}
    fallback : float
    """

    def __init__(self, statistic: str = "mean", fallback: float = 3600.0) -> None:
        self.statistic = statistic
        self.fallback = fallback

    def fit(self, history: Sequence[Job]) -> HistoryMean:
        """Tabulate per-key statistics.

        Parameters
        ----------
        history : sequence of Job

        Returns
        -------
        self
        """
        if self.statistic not in ("mean", "median"):
            raise UsageError(f"statistic must be 'mean' or 'median', got {self.statistic!r}")
        groups = self._fit_groups(history)
        agg: Any = np.mean if self.statistic == "mean" else np.median
        self.table_ = {k: float(agg(v)) for k, v in groups.items()}
        return self


class LastValue(_PerKey):
    """Length of the most recently released earlier job with the same key.

    Parameters
    ----------
    fallback : float
    """

    def __init__(self, fallback: float = 3600.0) -> None:
        self.fallback = fallback

    def fit(self, history: Sequence[Job]) -> LastValue:
        """Remember the last length per key.

        Parameters
        ----------
        history : sequence of Job

        Returns
        -------
        self
        """
        self.table_ = {k: v[-1] for k, v in self._fit_groups(history).items()}
        return self


class GlobalMedian(_PerKey):
    """The median length of all completed jobs, whatever the key.

    Parameters
    ----------
    fallback : float
    """

    def __init__(self, fallback: float = 3600.0) -> None:
        self.fallback = fallback

    def fit(self, history: Sequence[Job]) -> GlobalMedian:
        """Compute the median.

        Parameters
        ----------
        history : sequence of Job

        Returns
        -------
        self
        """
        self._fit_groups(history)
        self.table_: dict[str, float] = {}
        return self
