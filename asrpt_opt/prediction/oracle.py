"""Oracle predictors: the truth, and the truth with controlled error.

Predictors follow the scikit-learn estimator contract: parameters are set in ``__init__`` and
stored unchanged, ``fit(history)`` returns ``self`` and sets attributes ending in ``_``, and
``predict(jobs)`` returns one prediction per job, in *work units* (seconds on one server for
an abstract job, iterations for a DNN job).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.job import Job
from asrpt_opt.prediction._params import ParamsMixin

__all__ = ["NoisyOraclePredictor", "OraclePredictor", "true_work"]


def true_work(job: Job) -> float:
    """A job's true length in work units: ``duration_s``, or ``iterations`` for a DNN job.

    Parameters
    ----------
    job : Job

    Returns
    -------
    float
    """
    if job.duration_s is not None:
        return job.duration_s
    assert job.iterations is not None
    return float(job.iterations)


class OraclePredictor(ParamsMixin):
    """Predicts every job's true length (the clairvoyant baseline).

    Examples
    --------
    >>> from asrpt_opt.model import Job
    >>> OraclePredictor().fit([]).predict([Job(id="a", release_s=0, gpus=1, duration_s=4)])
    array([4.])
    """

    #: Its predictions are never below the truth, so a policy need not watch for overruns.
    never_underestimates = True

    def fit(self, history: Sequence[Job] = ()) -> OraclePredictor:
        """Do nothing: the oracle needs no history.

        Parameters
        ----------
        history : sequence of Job
            Ignored.

        Returns
        -------
        self
        """
        self.n_history_ = len(history)
        return self

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Return the true work of each job.

        Parameters
        ----------
        jobs : sequence of Job

        Returns
        -------
        ndarray
        """
        return np.array([true_work(j) for j in jobs], dtype=np.float64)


class NoisyOraclePredictor(ParamsMixin):
    """The truth times a random factor: ``bias * exp(U)``, U uniform on [-ln mu, ln mu].

    With ``mu = 1`` and ``bias = 1`` it is the oracle. Every prediction is within a factor
    ``mu`` of ``bias`` times the truth, the error model of learning-augmented scheduling.

    Parameters
    ----------
    mu : float
        Distortion, >= 1.
    bias : float
        Multiplicative bias, > 0.
    seed : int, Generator or None
        Randomness; normalised with :func:`numpy.random.default_rng` in :meth:`fit`.

    References
    ----------
    .. [1] S. Purohit, Z. Svitkina, R. Kumar, "Improving online algorithms via ML
       predictions", NeurIPS 2018.
    """

    def __init__(
        self, mu: float = 2.0, bias: float = 1.0, seed: int | np.random.Generator | None = None
    ) -> None:
        self.mu = mu
        self.bias = bias
        self.seed = seed

    @property
    def never_underestimates(self) -> bool:
        """True when no prediction can be below the truth (``mu == 1`` and ``bias >= 1``)."""
        return self.mu == 1 and self.bias >= 1

    def fit(self, history: Sequence[Job] = ()) -> NoisyOraclePredictor:
        """Validate the parameters and start the random stream.

        Parameters
        ----------
        history : sequence of Job
            Ignored.

        Returns
        -------
        self
        """
        if not self.mu >= 1:
            raise UsageError(f"mu must be >= 1, got {self.mu!r}")
        if not np.isfinite(self.mu) or not np.isfinite(self.bias):
            raise UsageError(f"mu and bias must be finite, got {self.mu!r} and {self.bias!r}")
        if not self.bias > 0:
            raise UsageError(f"bias must be > 0, got {self.bias!r}")
        self.rng_ = np.random.default_rng(self.seed)
        self.n_history_ = len(history)
        return self

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Return distorted true work.

        Parameters
        ----------
        jobs : sequence of Job

        Returns
        -------
        ndarray
        """
        if not hasattr(self, "rng_"):
            self.fit()
        truth = np.array([true_work(j) for j in jobs], dtype=np.float64)
        spread = np.log(self.mu)
        return truth * self.bias * np.exp(self.rng_.uniform(-spread, spread, size=truth.size))
