"""Is the number of jobs in the system still growing? A stability verdict from a schedule.

A queue that cannot keep up with its arrivals accumulates jobs at a steady rate; a stable
one fluctuates around a mean. The test looks at the number of jobs in the system N(t)
(released, not yet complete) over the second half of the arrival period, where a stable
system has left its empty start behind and arrivals have not stopped yet:

1. Split the window into ``batches`` equal intervals and compute the time-average of N(t)
   in each (exactly, from the release and completion times).
2. Fit a straight line to the batch means by least squares; its slope is the trend, with
   a Student-t confidence interval from the residuals.
3. The run is **unstable** when the interval lies above zero *and* the fitted growth over
   the window is at least ``min_growth`` times the window's mean number in system. A
   queue that grows linearly from an empty start grows by two thirds of its window mean,
   whatever the rate; a stable queue's growth is a fluctuation around zero. It is
   **inconclusive** when the window holds fewer than ``min_jobs`` arrivals.

The batch means of a heavily loaded stable queue are correlated, which makes the interval
too narrow; the growth threshold is what keeps false alarms rare (docs/stability.md
measures the rate on stable runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MIN_GROWTH", "MIN_JOBS", "T975", "Stability", "Verdict", "stability", "t_quantile"]

#: Growth over the window, relative to the window's mean number in system, that counts as
#: unstable (with a trend significantly above zero).
MIN_GROWTH = 0.5
#: Arrivals the window must hold for a verdict.
MIN_JOBS = 500


class Verdict(StrEnum):
    """Whether the number of jobs in the system keeps growing."""

    STABLE = "stable"
    UNSTABLE = "unstable"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, kw_only=True, slots=True)
class Stability:
    """The stability test's verdict and the figures behind it (module docstring).

    Attributes
    ----------
    verdict : Verdict
    window_start_s, window_end_s : float
        The window: the second half of the arrival period.
    jobs_in_window : int
        Arrivals inside the window.
    mean_in_system : float
        Time-average number of jobs in the system over the window.
    trend_per_s : float
        Least-squares slope of the batch means (jobs per second).
    trend_low_per_s, trend_high_per_s : float
        Its confidence interval.
    growth : float
        Fitted growth over the window divided by ``mean_in_system``.
    """

    verdict: Verdict
    window_start_s: float
    window_end_s: float
    jobs_in_window: int
    mean_in_system: float
    trend_per_s: float
    trend_low_per_s: float
    trend_high_per_s: float
    growth: float

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return {name: getattr(self, name) for name in self.__slots__}


def stability(
    release_s: ArrayLike,
    completion_s: ArrayLike,
    *,
    batches: int = 20,
    level: float = 0.95,
    min_growth: float = MIN_GROWTH,
    min_jobs: int = MIN_JOBS,
) -> Stability:
    """Whether the number of jobs in the system keeps growing (module docstring).

    Parameters
    ----------
    release_s, completion_s : array_like of float
        Per job; a job that never completed has ``inf``.
    batches : int
        Intervals the window is split into (at least 12).
    level : float
        Confidence level of the trend's interval.
    min_growth : float
        Relative growth over the window that counts as unstable.
    min_jobs : int
        Arrivals the window needs for a verdict.

    Returns
    -------
    Stability

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(4000.0)
    >>> stability(t, t + 2.5).verdict  # every job leaves 2.5 s after it came
    <Verdict.STABLE: 'stable'>
    >>> stability(t, 2 * t + 1).verdict  # job j waits j seconds: the queue grows
    <Verdict.UNSTABLE: 'unstable'>
    """
    if batches < 12:
        raise ValueError(f"batches must be at least 12, got {batches}")
    release = np.sort(np.asarray(release_s, dtype=np.float64))
    completion = np.sort(np.asarray(completion_s, dtype=np.float64))
    first, last = (float(release[0]), float(release[-1])) if release.size else (0.0, 0.0)
    start = first + (last - first) / 2
    edges = np.linspace(start, last, batches + 1)
    in_window = int(release.size - np.searchsorted(release, start, side="left"))
    if in_window < min_jobs or last <= start:
        return _record(Verdict.INCONCLUSIVE, start, last, in_window, 0.0, (0.0, 0.0, 0.0), 0.0)
    area = _integral(release, edges) - _integral(completion, edges)
    means = np.diff(area) / np.diff(edges)
    mean = float(means.mean())
    slope, low, high = _trend(0.5 * (edges[:-1] + edges[1:]), means, level)
    growth = slope * (last - start) / mean if mean > 0 else 0.0
    unstable = low > 0 and growth >= min_growth
    verdict = Verdict.UNSTABLE if unstable else Verdict.STABLE
    return _record(verdict, start, last, in_window, mean, (slope, low, high), growth)


def _record(
    verdict: Verdict,
    start: float,
    end: float,
    jobs: int,
    mean: float,
    trend: tuple[float, float, float],
    growth: float,
) -> Stability:
    return Stability(
        verdict=verdict,
        window_start_s=start,
        window_end_s=end,
        jobs_in_window=jobs,
        mean_in_system=mean,
        trend_per_s=trend[0],
        trend_low_per_s=trend[1],
        trend_high_per_s=trend[2],
        growth=growth,
    )


def _integral(times: NDArray[np.float64], at: NDArray[np.float64]) -> NDArray[np.float64]:
    # The integral from -inf to each ``at`` of the count of sorted ``times`` <= t, that is
    # sum over times <= x of (x - time); infinite times never count.
    finite = times[np.isfinite(times)]
    count = np.searchsorted(finite, at, side="right")
    before = np.concatenate(([0.0], np.cumsum(finite)))
    out: NDArray[np.float64] = count * at - before[count]
    return out


def _trend(x: NDArray[np.float64], y: NDArray[np.float64], level: float) -> tuple[float, ...]:
    # Least-squares slope of y on x with its Student-t interval.
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * xc
    dof = x.size - 2
    se = math.sqrt(float(resid @ resid) / dof / sxx)
    half = t_quantile(0.5 + level / 2, dof) * se
    return slope, slope - half, slope + half


#: Student's t 97.5% quantiles for 1-9 degrees of freedom (tables), where the expansion of
#: :func:`t_quantile` is not accurate.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)


def t_quantile(p: float, dof: int) -> float:
    """Quantile ``p`` of Student's t with ``dof`` degrees of freedom, by the Cornish-Fisher
    expansion (Abramowitz and Stegun 26.7.5): within 1e-4 of the exact value from 10
    degrees of freedom on, for p up to 0.995 (a test checks it against scipy); below 10
    degrees of freedom the 97.5% quantile comes from the table (:data:`T975`). Avoids
    importing scipy.stats in every simulation.

    Parameters
    ----------
    p : float
        In (0, 1).
    dof : int
        At least 1 for ``p = 0.975``; at least 10 otherwise for the stated accuracy.

    Returns
    -------
    float

    References
    ----------
    .. [1] M. Abramowitz, I. A. Stegun, *Handbook of Mathematical Functions*, 1964, 26.7.5.
    """
    if p == 0.975 and 1 <= dof <= len(T975):
        return T975[dof - 1]
    z = NormalDist().inv_cdf(p)
    z2 = z * z
    g1 = z * (z2 + 1) / 4
    g2 = z * ((5 * z2 + 16) * z2 + 3) / 96
    g3 = z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384
    g4 = z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160
    v = float(dof)
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4
