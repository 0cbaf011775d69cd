"""Policies under growing prediction error: mean JCT and the ratio to the lower bound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.policies.registry import simulate
from asrpt_opt.prediction.oracle import NoisyOraclePredictor
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.speed.default import default_speed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "SensitivityPoint",
    "SensitivityReport",
    "ci95_half_width",
    "plot_sensitivity",
    "sensitivity",
]


def ci95_half_width(values: Any) -> float:
    """Half-width of the 95% confidence interval of the mean (Student's t); 0 below 2 values.

    Parameters
    ----------
    values : array-like of float

    Returns
    -------
    float
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return 0.0
    from scipy.stats import t as student

    return float(student.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))


@dataclass(frozen=True, kw_only=True, slots=True)
class SensitivityPoint:
    """One policy at one distortion.

    Attributes
    ----------
    mu : float
        Predictions lie within a factor ``mu`` of the truth.
    mean_jct_s : float
        Averaged over the seeds.
    ratio_to_lower_bound : float
        sum w_j C_j over the instance's lower bound, averaged over the seeds.
    mean_jct_per_seed_s : tuple of float
        The mean JCT of each seed (one value with one seed).
    """

    mu: float
    mean_jct_s: float
    ratio_to_lower_bound: float
    mean_jct_per_seed_s: tuple[float, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SensitivityReport:
    """Every policy at every distortion.

    Attributes
    ----------
    instance : str
    lower_bound_s : float
    seed : int
    mus : tuple of float
    points : dict of policy -> tuple of SensitivityPoint
        In the order of ``mus``.
    """

    instance: str
    lower_bound_s: float
    seed: int
    mus: tuple[float, ...]
    points: dict[str, tuple[SensitivityPoint, ...]]

    def to_json(self) -> dict[str, Any]:
        """The ``sensitivity --json`` object (without the plot's file name)."""
        return {
            "instance": self.instance,
            "lower_bound_s": self.lower_bound_s,
            "seed": self.seed,
            "policies": {
                name: [
                    {
                        "mu": p.mu,
                        "mean_jct_s": p.mean_jct_s,
                        "ratio_to_lower_bound": p.ratio_to_lower_bound,
                        "mean_jct_per_seed_s": list(p.mean_jct_per_seed_s),
                    }
                    for p in rows
                ]
                for name, rows in self.points.items()
            },
        }


def sensitivity(
    instance: Instance,
    policies: Sequence[str],
    mus: Sequence[float],
    *,
    seed: int = 0,
    seeds: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> SensitivityReport:
    """Simulate every policy with noisy-oracle predictions at every distortion ``mu``.

    Parameters
    ----------
    instance : Instance
    policies : sequence of str
        Registered policy names.
    mus : sequence of float
        Distortions, each >= 1 (1 is the oracle).
    seed : int
        First seed of the predictions' noise and of the policies.
    seeds : int
        Number of seeds (``seed``, ``seed + 1``, ...); values are averaged over them and
        :func:`plot_sensitivity` draws a 95% confidence interval of the mean as a band.
    progress : callable, optional
        ``progress(done, total)`` after each simulation.

    Returns
    -------
    SensitivityReport
    """
    mus = tuple(float(m) for m in mus)
    if not mus or min(mus) < 1:
        raise UsageError(f"distortions must be numbers >= 1, got {list(mus)}")
    if seeds < 1:
        raise UsageError(f"seeds must be >= 1, got {seeds}")
    lb = lower_bounds(instance, speed=default_speed(instance)).lower_bound_s
    points: dict[str, tuple[SensitivityPoint, ...]] = {}
    total = len(policies) * len(mus) * seeds
    done = 0
    for name in policies:
        rows = []
        for mu in mus:
            jct, ratio = [], []
            for s in range(seed, seed + seeds):
                pred = NoisyOraclePredictor(mu=mu, seed=s).fit([])
                m = simulate(instance, name, predictor=pred, seed=s).metrics
                jct.append(m.mean_jct_s)
                ratio.append(m.total_weighted_completion_s / lb)
                done += 1
                if progress is not None:
                    progress(done, total)
            rows.append(
                SensitivityPoint(
                    mu=mu,
                    mean_jct_s=float(np.mean(jct)),
                    ratio_to_lower_bound=float(np.mean(ratio)),
                    mean_jct_per_seed_s=tuple(jct),
                )
            )
        points[name] = tuple(rows)
    return SensitivityReport(
        instance=instance.name, lower_bound_s=lb, seed=seed, mus=mus, points=points
    )


def plot_sensitivity(report: SensitivityReport, *, ax: Axes | None = None) -> Figure:
    """Mean JCT against the distortion, one line per policy.

    Parameters
    ----------
    report : SensitivityReport
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from asrpt_opt.analysis.plots import policy_colours

    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 3.2))
    names = list(report.points)
    n_seeds = 1
    for name, colour in zip(names, policy_colours(names), strict=True):
        rows = report.points[name]
        x = [p.mu for p in rows]
        ax.plot(x, [p.mean_jct_s / 3600 for p in rows], marker="o", ms=3, label=name, color=colour)
        per_seed = [np.asarray(p.mean_jct_per_seed_s) / 3600 for p in rows]
        if all(v.size > 1 for v in per_seed):
            n_seeds = per_seed[0].size
            half = [ci95_half_width(v) for v in per_seed]
            mid = [float(v.mean()) for v in per_seed]
            lo = [m - h for m, h in zip(mid, half, strict=True)]
            hi = [m + h for m, h in zip(mid, half, strict=True)]
            ax.fill_between(x, lo, hi, color=colour, alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(report.mus, [f"{m:g}" for m in report.mus])
    ax.minorticks_off()
    ax.set_xlabel("prediction distortion mu (within a factor mu)")
    ax.set_ylabel("mean JCT (h)")
    band = f"; bands: 95% CI over {n_seeds} seeds" if n_seeds > 1 else ""
    ax.set_title(f"{report.instance}{band}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    fig.tight_layout()
    return fig
