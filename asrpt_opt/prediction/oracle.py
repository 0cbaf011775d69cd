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

__all__ = ["AdversarialPredictor", "NoisyOraclePredictor", "OraclePredictor", "true_work"]


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


#: The logarithms of the least positive normal and the largest finite float.
_LOG_TINY, _LOG_HUGE = float(np.log(np.finfo(float).tiny)), float(np.log(np.finfo(float).max))


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
    .. [1] M. Purohit, Z. Svitkina, R. Kumar, "Improving online algorithms via ML
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
        noise = self.rng_.uniform(-spread, spread, size=truth.size)
        # In logarithms, so that an extreme bias or mu (1e-300, 1e300) never rounds a
        # prediction to 0 or infinity: it stays a positive float, at worst the extreme one.
        log = np.log(truth) + np.log(self.bias) + noise
        return np.exp(np.clip(log, _LOG_TINY, _LOG_HUGE))


class AdversarialPredictor(ParamsMixin):
    """Predictions that reverse the order of the true lengths: ``pivot**2 / truth``.

    A job of length ``pivot`` is predicted exactly; every longer job is predicted shorter
    than every shorter one. With ``pivot = sqrt(min * max)`` of an instance's lengths every
    prediction is within a factor ``max / min`` of the truth, and a policy that trusts the
    predictions runs the jobs longest first: the adversarial end of a robustness curve.

    Parameters
    ----------
    pivot : float
        The length predicted exactly, > 0, in work units.
    """

    def __init__(self, pivot: float = 1.0) -> None:
        self.pivot = pivot

    @property
    def never_underestimates(self) -> bool:
        """False: every job longer than ``pivot`` is underestimated."""
        return False

    def fit(self, history: Sequence[Job] = ()) -> AdversarialPredictor:
        """Validate ``pivot``.

        Parameters
        ----------
        history : sequence of Job
            Ignored.

        Returns
        -------
        self
        """
        if not (self.pivot > 0 and np.isfinite(self.pivot)):
            raise UsageError(f"pivot must be a finite number > 0, got {self.pivot!r}")
        self.n_history_ = len(history)
        return self

    def predict(self, jobs: Sequence[Job]) -> NDArray[np.float64]:
        """Return ``pivot**2 / truth``.

        Parameters
        ----------
        jobs : sequence of Job

        Returns
        -------
        ndarray
        """
        truth = np.array([true_work(j) for j in jobs], dtype=np.float64)
        out: NDArray[np.float64] = self.pivot**2 / truth
        return out
