"""Consistency and robustness: ALG/OPT against prediction error, to a proven optimum.

A learning-augmented policy is *consistent* when it is near-optimal with exact predictions and
*robust* when its ratio stays bounded however wrong they are [1]_. :func:`robustness` measures
both on a family of small instances: per instance the continuous-time preemptive optimum is
proven once (:func:`~asrpt_opt.solvers.solve`), then every policy is simulated with
predictions at every error level, from exact (1) through noisy-oracle distortions (within a
factor ``mu`` of the truth) to ``adversarial`` (the order of the lengths reversed,
:class:`~asrpt_opt.prediction.oracle.AdversarialPredictor`).

References
----------
.. [1] M. Purohit, Z. Svitkina, R. Kumar, "Improving online algorithms via ML predictions",
   NeurIPS 2018.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.analysis.sensitivity import ci95_half_width
from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.policies.registry import simulate
from asrpt_opt.prediction.oracle import AdversarialPredictor, NoisyOraclePredictor, true_work
from asrpt_opt.speed.base import PooledSpeed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ADVERSARIAL",
    "RobustnessPoint",
    "RobustnessReport",
    "parse_errors",
    "plot_robustness",
    "robustness",
]

#: The error level whose predictions reverse the order of the true lengths.
ADVERSARIAL = "adversarial"


def parse_errors(text: str) -> tuple[str, ...]:
    """Read ``"1,1.5,2,adversarial"`` into error labels, checking each.

    Parameters
    ----------
    text : str
        Comma-separated distortions (numbers >= 1) and/or ``adversarial``.

    Returns
    -------
    tuple of str
        Normalised labels (``"1"``, ``"1.5"``, ``"adversarial"``).

    Raises
    ------
    UsageError
        On an empty list, a number below 1, or a word other than ``adversarial``.
    """
    out = []
    for raw in text.split(","):
        word = raw.strip().lower()
        if word == ADVERSARIAL:
            out.append(ADVERSARIAL)
            continue
        try:
            value = float(word)
        except ValueError:
            raise UsageError(
                f"invalid error level {raw.strip()!r}: give numbers >= 1 or {ADVERSARIAL!r}"
            ) from None
        if not (value >= 1 and math.isfinite(value)):
            raise UsageError(f"invalid error level {raw.strip()!r}: distortions must be >= 1")
        out.append(f"{value:g}")
    if not out:
        raise UsageError("give at least one error level")
    return tuple(out)


def _predictor(error: str, instance: Instance, seed: int) -> Any:
    if error == ADVERSARIAL:
        lengths = [true_work(j) for j in instance.jobs]
        return AdversarialPredictor(pivot=math.sqrt(min(lengths) * max(lengths)))
    return NoisyOraclePredictor(mu=float(error), seed=seed)


@dataclass(frozen=True, kw_only=True, slots=True)
class RobustnessPoint:
    """One policy at one error level, over the instances whose optimum was proven.

    Attributes
    ----------
    error : str
        ``"1"`` (exact), a distortion such as ``"4"``, or ``"adversarial"``.
    mean_ratio, worst_ratio : float
        Mean and largest ALG/OPT.
    ci95 : float
        Half-width of the 95% confidence interval of the mean (Student's t; 0 with one
        instance).
    ratios : tuple of float
        ALG/OPT per instance, in seed order.
    """

    error: str
    mean_ratio: float
    worst_ratio: float
    ci95: float
    ratios: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class RobustnessReport:
    """Every policy at every error level.

    Attributes
    ----------
    family : str
    n : int
    seeds : tuple of int
        The instances whose optimum was proven (the ratios' instances).
    unproven : tuple of int
        Seeds left out because the optimum was not proven within the time limit.
    errors : tuple of str
    points : dict of policy -> tuple of RobustnessPoint
        In the order of ``errors``.
    """

    family: str
    n: int
    seeds: tuple[int, ...]
    unproven: tuple[int, ...]
    errors: tuple[str, ...]
    points: dict[str, tuple[RobustnessPoint, ...]]

    def to_json(self) -> dict[str, Any]:
        """The ``robustness --json`` object (without the plot's file name)."""
        return {
            "family": self.family,
            "n": self.n,
            "opt": "continuous-time preemptive optimum, pooled cluster (proven)",
            "seeds": list(self.seeds),
            "unproven_seeds": list(self.unproven),
            "errors": list(self.errors),
            "policies": {
                name: [
                    {
                        "error": p.error,
                        "mean_ratio": p.mean_ratio,
                        "worst_ratio": p.worst_ratio,
                        "ci95": p.ci95,
                        "ratios": list(p.ratios),
                    }
                    for p in rows
                ]
                for name, rows in self.points.items()
            },
        }


def robustness(
    family: str,
    n: int,
    policies: Sequence[str],
    errors: Sequence[str],
    *,
    seeds: int = 30,
    first_seed: int = 0,
    time_limit_s: float = 10.0,
    progress: Callable[[int, int], None] | None = None,
) -> RobustnessReport:
    """ALG/OPT of every policy at every prediction error, on ``seeds`` instances of a family.

    Parameters
    ----------
    family : str
        A key of :data:`~asrpt_opt.analysis.families.FAMILIES`.
    n : int
        Jobs per instance.
    policies : sequence of str
        Registered policy names.
    errors : sequence of str
        Error levels (see :func:`parse_errors`).
    seeds : int
        Instances ``first_seed``, ``first_seed + 1``, ...; the noisy predictions of instance
        ``s`` use seed ``s`` too.
    first_seed : int
    time_limit_s : float
        For each instance's optimum; instances not proven within it are left out and
        listed in ``unproven``.
    progress : callable, optional
        ``progress(done, total)`` after each instance.

    Returns
    -------
    RobustnessReport

    References
    ----------
    .. [1] M. Purohit, Z. Svitkina, R. Kumar, "Improving online algorithms via ML
       predictions", NeurIPS 2018.
    """
    from asrpt_opt.solvers.solve import SolverParams, solve

    if seeds < 1 or n < 1:
        raise UsageError("n and seeds must be >= 1")
    errors = tuple(errors)
    ratios: dict[tuple[str, str], list[float]] = {(p, e): [] for p in policies for e in errors}
    proven, unproven = [], []
    speed = PooledSpeed()
    for k, s in enumerate(range(first_seed, first_seed + seeds)):
        inst = make_family_instance(family, n, s)
        opt = solve(
            inst,
            preemption="continuous",
            cluster_model="pooled",
            params=SolverParams(time_limit_s=time_limit_s),
        )
        if opt.status != "optimal" or opt.objective_s is None:
            unproven.append(s)
        else:
            proven.append(s)
            for error in errors:
                for name in policies:
                    predictor = _predictor(error, inst, s)
                    value = simulate(
                        inst, name, predictor=predictor, speed=speed, seed=s
                    ).metrics.total_weighted_completion_s
                    ratios[(name, error)].append(value / opt.objective_s)
        if progress is not None:
            progress(k + 1, seeds)
    points = {}
    for name in policies:
        rows = []
        for error in errors:
            values = np.asarray(ratios[(name, error)])
            rows.append(
                RobustnessPoint(
                    error=error,
                    mean_ratio=float(values.mean()) if values.size else math.nan,
                    worst_ratio=float(values.max()) if values.size else math.nan,
                    ci95=ci95_half_width(values),
                    ratios=tuple(float(v) for v in values),
                )
            )
        points[name] = tuple(rows)
    return RobustnessReport(
        family=family,
        n=n,
        seeds=tuple(proven),
        unproven=tuple(unproven),
        errors=errors,
        points=points,
    )


def plot_robustness(report: RobustnessReport, *, ax: Axes | None = None) -> Figure:
    """Mean ALG/OPT (solid, with a 95% band) and worst (dashed) against prediction error.

    Parameters
    ----------
    report : RobustnessReport
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from asrpt_opt.analysis.plots import policy_colours

    if ax is None:
        _, ax = plt.subplots(figsize=(6.0, 3.6))
    names = list(report.points)
    x = np.arange(len(report.errors))
    for name, colour in zip(names, policy_colours(names), strict=True):
        rows = report.points[name]
        mean = np.array([p.mean_ratio for p in rows])
        half = np.array([p.ci95 for p in rows])
        width = 2.0 if name == "a-srpt" else 1.2
        ax.plot(x, mean, marker="o", ms=3, lw=width, color=colour, label=name)
        # ALG/OPT is at least 1: the normal interval is cut there.
        low = np.maximum(mean - half, 1.0)
        ax.fill_between(x, low, mean + half, color=colour, alpha=0.15, lw=0)
        worst = [p.worst_ratio for p in rows]
        ax.plot(x, worst, ls="--", marker="^", ms=3, lw=0.9, color=colour)
    ax.set_xticks(x, ["adv." if e == ADVERSARIAL else e for e in report.errors])
    ax.set_xlabel("prediction error: within a factor mu (adv.: order reversed)")
    ax.set_ylabel("ALG / OPT")
    ax.set_title(
        f"{report.family}, n = {report.n}, {len(report.seeds)} instances "
        "(OPT: continuous-time preemptive optimum)",
        fontsize=8,
    )
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="grey", lw=1.2, label="mean (band: 95% CI, cut at 1)"),
        Line2D([], [], color="grey", ls="--", marker="^", ms=3, lw=0.9, label="worst"),
    ]
    ax.legend(
        handles=handles,
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    fig = ax.get_figure(root=True)
    assert isinstance(fig, Figure)
    fig.tight_layout()
    return fig
