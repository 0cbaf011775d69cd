"""Policies under growing prediction error: mean JCT and the ratio to the lower bound."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.prediction.oracle import NoisyOraclePredictor
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.engine import simulate
from asrpt_opt.speed.default import default_speed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["SensitivityPoint", "SensitivityReport", "plot_sensitivity", "sensitivity"]


@dataclass(frozen=True, kw_only=True, slots=True)
class SensitivityPoint:
    """One policy at one distortion.

    Attributes
    ----------
    mu : float
        Predictions lie within a factor ``mu`` of the truth.
    mean_jct_s : float
    ratio_to_lower_bound : float
        sum w_j C_j over the instance's lower bound.
    """

    mu: float
    mean_jct_s: float
    ratio_to_lower_bound: float


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
                    }
                    for p in rows
                ]
                for name, rows in self.points.items()
            },
        }


def sensitivity(
    instance: Instance, policies: Sequence[str], mus: Sequence[float], *, seed: int = 0
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
        Seed of the predictions' noise and of the policies.

    Returns
    -------
    SensitivityReport
    """
    mus = tuple(float(m) for m in mus)
    if not mus or min(mus) < 1:
        raise UsageError(f"distortions must be numbers >= 1, got {list(mus)}")
    lb = lower_bounds(instance, speed=default_speed(instance)).lower_bound_s
    points: dict[str, tuple[SensitivityPoint, ...]] = {}
    for name in policies:
        rows = []
        for mu in mus:
            pred = NoisyOraclePredictor(mu=mu, seed=seed).fit([])
            m = simulate(instance, name, predictor=pred, seed=seed).metrics
            rows.append(
                SensitivityPoint(
                    mu=mu,
                    mean_jct_s=m.mean_jct_s,
                    ratio_to_lower_bound=m.total_weighted_completion_s / lb,
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

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name, rows in report.points.items():
        ax.plot([p.mu for p in rows], [p.mean_jct_s / 3600 for p in rows], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("prediction distortion mu (predictions within a factor mu)")
    ax.set_ylabel("mean JCT (h)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    fig.tight_layout()
    return fig
