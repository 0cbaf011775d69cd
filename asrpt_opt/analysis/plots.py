"""Figures: policy comparison, worker graphs, prediction calibration, ratios (the Gantt chart
is in :mod:`asrpt_opt.analysis.gantt`).

Every function draws into ``ax=`` (a new figure when None) and returns the Figure; writing a
file is the caller's (:func:`save_figure`, whose file type follows the extension). Sizes
suit a two-column paper (about 3.3 inches a column, 7 inches across). This module never
selects a matplotlib backend (a notebook keeps its own); the command line selects the
non-interactive ``Agg`` backend before it draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from asrpt_opt.model.io import write_atomically
from asrpt_opt.model.workers import WorkerGraph
from asrpt_opt.prediction.evaluate import PredictionScore
from asrpt_opt.sim.metrics import Metrics
from asrpt_opt.sim.stability import Verdict

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from asrpt_opt.analysis.load_sweep import LoadPoint, LoadSweepReport
    from asrpt_opt.analysis.ratio import InstanceOutcome

__all__ = [
    "figure_for",
    "plot_calibration",
    "plot_comparison",
    "plot_load_sweep",
    "plot_ratio_cdf",
    "plot_ratio_vs_load",
    "plot_worker_graph",
    "policy_colours",
    "save_figure",
]


def save_figure(fig: Any, path: str | PathLike[str], *, dpi: int = 120) -> None:
    """Write a figure atomically; the file type follows the extension (PNG, SVG, PDF...).

    Parameters
    ----------
    fig : matplotlib Figure
    path : path-like
    dpi : int
    """
    kind = Path(path).suffix.lstrip(".").lower() or "png"
    write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=kind))


def figure_for(ax: Any, size: tuple[float, float]) -> tuple[Figure, Any]:
    """``(figure, axes)`` for a plot function's ``ax=``.

    Parameters
    ----------
    ax : matplotlib Axes or None
    size : (float, float)
        Inches of a new figure.

    Returns
    -------
    (Figure, Axes)
        The axes given and their figure, or a new figure with one axes.
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=size)
        return fig, ax
    return ax.get_figure(root=True), ax


def _figure_axes(axes: Any, count: int, size: tuple[float, float]) -> tuple[Figure, list[Any]]:
    """``(figure, list of count axes)``: the given axes, or a new row of ``count``.

    Parameters
    ----------
    axes : sequence of Axes or None
    count : int
    size : (float, float)

    Returns
    -------
    (Figure, list of Axes)
    """
    if axes is None:
        fig, made = plt.subplots(1, count, figsize=size, squeeze=False)
        return fig, list(made[0])
    axes = list(np.ravel(axes))
    if len(axes) != count:
        raise ValueError(f"expected {count} axes, got {len(axes)}")
    return axes[0].get_figure(root=True), axes


#: The colour of A-SRPT in every comparison.
HIGHLIGHT = "tab:red"


def policy_colours(names: Sequence[str]) -> list[Any]:
    """One distinct colour per policy name: A-SRPT in :data:`HIGHLIGHT`, the others from
    ``tab20`` then ``tab20b`` (their reds left out, they are A-SRPT's alone), so up to 26
    baselines never share a colour.

    Parameters
    ----------
    names : sequence of str

    Returns
    -------
    list
        A matplotlib colour per name.
    """
    from matplotlib.colors import to_rgb

    def reddish(colour: Any) -> bool:
        r, g, b = to_rgb(colour)
        return r > 0.75 and g < 0.6 and b < 0.6

    # Dark shades first (tab20 alternates dark and light), then the light ones.
    # Then tab20b's, for a registry past 18 baselines.
    tab20, tab20b = plt.get_cmap("tab20"), plt.get_cmap("tab20b")
    shades = [tab20(i) for i in range(0, 20, 2)] + [tab20(i) for i in range(1, 20, 2)]
    shades += [tab20b(i) for i in range(0, 20, 2)]
    others = [c for c in shades if not reddish(c)]
    out: list[Any] = []
    k = 0
    for name in names:
        if name == "a-srpt":
            out.append(HIGHLIGHT)
        else:
            out.append(others[k % len(others)])
            k += 1
    return out


def plot_comparison(
    metrics: Mapping[str, Metrics] | Mapping[str, Sequence[Metrics]],
    *,
    lower_bound_s: float | Sequence[float] | None = None,
    title: str = "",
    ax: Any = None,
) -> Figure:
    """Horizontal bars of mean and p95 JCT and of sum w_j C_j over a lower bound, one colour
    per policy (A-SRPT highlighted); with several seeds per policy, bars are means with
    min-max error bars.

    Policy names label the rows once, so they never overlap however many policies there are.
    The JCT axes start at zero; the ratio axis starts at 1, the least a ratio to a lower
    bound can be, and says so.

    Parameters
    ----------
    metrics : mapping of policy name to Metrics, or to a sequence of Metrics (one per seed)
    lower_bound_s : float or sequence of float, optional
        A lower bound on sum w_j C_j (one per seed); adds the ratio panel.
    title : str
        Name the instance, its cluster and its job count here (the figure cannot know them).
    ax : sequence of matplotlib Axes, optional
        Two axes (three with ``lower_bound_s``) to draw into; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = list(metrics)
    runs = {n: [m] if isinstance(m, Metrics) else list(m) for n, m in metrics.items()}
    panels = 3 if lower_bound_s else 2
    fig, axes = _figure_axes(ax, panels, (7.0, max(2.2, 0.9 + 0.24 * len(names))))
    hours = 3600.0
    _bars(axes[0], names, [[m.mean_jct_s / hours for m in runs[n]] for n in names], "mean JCT (h)")
    _bars(axes[1], names, [[m.p95_jct_s / hours for m in runs[n]] for n in names], "p95 JCT (h)")
    if lower_bound_s:
        bounds = (
            [float(lower_bound_s)]
            if isinstance(lower_bound_s, int | float)
            else [float(b) for b in lower_bound_s]
        )
        ratios = [
            [
                m.total_weighted_completion_s / bounds[i % len(bounds)]
                for i, m in enumerate(runs[n])
            ]
            for n in names
        ]
        _bars(axes[2], names, ratios, "sum w_j C_j / lower bound\n(axis starts at 1)", start=1.0)
    for a in axes[1:]:
        a.tick_params(axis="y", labelleft=False)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _bars(
    ax: Any, names: list[str], values: list[list[float]], label: str, *, start: float = 0.0
) -> None:
    """One horizontal bar per policy (mean over runs, min-max whiskers), first on top."""
    y = np.arange(len(names))
    mean = np.array([np.mean(v) for v in values])
    err = None
    if any(len(v) > 1 for v in values):
        err = np.vstack(
            [mean - [np.min(v) for v in values], np.array([np.max(v) for v in values]) - mean]
        )
    colours = policy_colours(names)
    ax.barh(
        y, mean - start, left=start, color=colours, xerr=err, capsize=2 if err is not None else 0
    )
    ax.set_yticks(y, names, fontsize=7)
    for tick, name in zip(ax.get_yticklabels(), names, strict=True):
        if name == "a-srpt":
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    top = float(np.max(mean if err is None else mean + err[1]))
    ax.set_xlim(start, start + 1.08 * (top - start) if top > start else start + 1.0)
    ax.set_xlabel(label, fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def plot_worker_graph(
    wg: WorkerGraph,
    *,
    assignment: Sequence[int] | None = None,
    ax: Any = None,
) -> Figure:
    """Draw a worker graph: workers on a (stage, replica x rank) grid, edge width by bytes,
    colour by server when ``assignment`` is given (cut edges dashed), with a key for the
    edge types present, the servers and cut edges.

    Parameters
    ----------
    wg : WorkerGraph
    assignment : sequence of int, optional
        Server of each worker.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.lines import Line2D

    g = wg.graph
    par = wg.parallelism
    pos = {w: (g.nodes[w]["pp"], -(g.nodes[w]["dp"] * par.tp + g.nodes[w]["tp"])) for w in g.nodes}
    fig, ax = figure_for(ax, (2.6 + 1.4 * par.pp, 1.5 + 0.45 * par.dp * par.tp))
    top = max((d["bytes"] for _, _, d in g.edges(data=True)), default=1.0)
    style = {"pipeline": "tab:blue", "tensor": "tab:orange", "data": "tab:green"}
    kinds = set()
    any_cut = False
    for a, b, d in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        cut = assignment is not None and assignment[a] != assignment[b]
        any_cut |= cut
        kinds.add(d["kind"])
        if x0 == x1 and abs(y1 - y0) > 1:
            # Ring edges that wrap around are drawn as arcs beside the column.
            xs = [x0, x0 + 0.25, x0 + 0.25, x1]
            ys = [y0, y0, y1, y1]
        else:
            xs, ys = [x0, x1], [y0, y1]
        ax.plot(
            xs,
            ys,
            color=style[d["kind"]],
            lw=0.5 + 3.5 * d["bytes"] / top,
            ls="--" if cut else "-",
            alpha=0.8,
            zorder=1,
        )
    colours = plt.get_cmap("tab20")
    for w, (x, y) in pos.items():
        c = colours(assignment[w] % 20) if assignment is not None else "white"
        ax.scatter([x], [y], s=260, color=c, edgecolors="black", zorder=2)
        ax.text(x, y, str(w), ha="center", va="center", fontsize=7, zorder=3)
    handles = [Line2D([], [], color=style[k], label=f"{k} traffic") for k in style if k in kinds]
    if any_cut:
        handles.append(Line2D([], [], color="black", ls="--", label="cut (crosses servers)"))
    if assignment is not None:
        for srv in sorted(set(assignment)):
            handles.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    ls="",
                    markerfacecolor=colours(srv % 20),
                    markeredgecolor="black",
                    label=f"server {srv}",
                )
            )
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False
    )
    ax.set_xticks(range(par.pp), [f"stage {p}" for p in range(par.pp)])
    ax.set_yticks([])
    ax.set_title(f"{wg.model}: dp={par.dp}, pp={par.pp}, tp={par.tp}", fontsize=9)
    ax.set_xlim(-0.5, par.pp - 0.5 + 0.4)
    fig.tight_layout()
    return fig


def plot_calibration(scores: Sequence[PredictionScore], *, ax: Any = None) -> Figure:
    """Predicted vs true length on log axes, one panel per predictor, in a grid of at most
    three columns.

    Parameters
    ----------
    scores : sequence of PredictionScore
    ax : sequence of matplotlib Axes, optional
        One per score; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    k = len(scores)
    if ax is None:
        cols = min(3, k)
        rows = -(-k // cols)
        fig, grid = plt.subplots(rows, cols, figsize=(2.4 * cols, 2.3 * rows), squeeze=False)
        axes = list(grid.ravel())
        for extra in axes[k:]:
            extra.set_visible(False)
    else:
        fig, axes = _figure_axes(ax, k, (0, 0))
    lo = min(float(min(s.truth.min(), s.predicted.min())) for s in scores) / 3600
    hi = max(float(max(s.truth.max(), s.predicted.max())) for s in scores) / 3600
    for a, s in zip(axes, scores, strict=False):
        a.scatter(s.truth / 3600, s.predicted / 3600, s=3, alpha=0.4)
        a.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_title(f"{s.name}: R² (log) {s.r2_log:.2f}", fontsize=8)
        a.set_xlabel("true length (h)", fontsize=8)
        a.set_ylabel("predicted (h)", fontsize=8)
        a.tick_params(labelsize=7)
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig


_MARKERS = "osD^v<>pX*"


def plot_ratio_cdf(
    outcomes: Sequence[InstanceOutcome],
    policies: Sequence[str],
    *,
    title: str = "",
    ax: Any = None,
) -> Figure:
    """The empirical CDF of ALG/OPT per policy (the upper end of the interval when OPT is not
    proven: the pessimistic value).

    Parameters
    ----------
    outcomes : sequence of InstanceOutcome
        One per instance, as a ratio sweep stores them.
    policies : sequence of str
    title : str
        For example the family, n and seeds.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = figure_for(ax, (4.5, 3.2))
    for name, colour, marker in zip(policies, policy_colours(policies), _MARKERS, strict=False):
        r = np.sort([o.policies[name].estimate.ratio_hi for o in outcomes])
        y = np.arange(1, r.size + 1) / r.size
        ax.step(r, y, where="post", label=name, color=colour, marker=marker, ms=3)
    ax.set_xlabel("ALG / OPT")
    ax.set_ylabel("fraction of instances")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_ratio_vs_load(
    outcomes: Sequence[InstanceOutcome],
    policies: Sequence[str],
    *,
    title: str = "",
    ax: Any = None,
) -> Figure:
    """ALG/OPT (upper end) of every instance against its offered load, one marker per policy.

    Parameters
    ----------
    outcomes : sequence of InstanceOutcome
    policies : sequence of str
    title : str
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = figure_for(ax, (4.5, 3.2))
    load = [o.load for o in outcomes]
    for name, colour, marker in zip(policies, policy_colours(policies), _MARKERS, strict=False):
        ratio = [o.policies[name].estimate.ratio_hi for o in outcomes]
        ax.scatter(load, ratio, s=14, label=name, color=colour, marker=marker, alpha=0.8)
    ax.set_xlabel("offered load")
    ax.set_ylabel("ALG / OPT")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_load_sweep(report: LoadSweepReport, *, ax: Axes | None = None) -> Figure:
    """Mean response time against load on a log axis, one line per policy, as in the
    multiserver-job papers; intervals as error bars, unstable points as crosses near the
    top of the axes (their mean is not a steady-state value).

    Parameters
    ----------
    report : LoadSweepReport
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    assert ax is not None
    by_policy: dict[str, list[LoadPoint]] = {}
    for point in report.points:
        by_policy.setdefault(point.policy, []).append(point)
    for k, (policy, points) in enumerate(by_policy.items()):
        colour = f"C{k % 10}"
        ok = [p for p in points if p.verdict is not Verdict.UNSTABLE]
        if ok:
            y = np.array([p.mean_response for p in ok])
            err = np.array(
                [
                    [p.mean_response - p.ci_low for p in ok],
                    [p.ci_high - p.mean_response for p in ok],
                ]
            )
            ax.errorbar(
                [p.load for p in ok],
                y,
                yerr=np.maximum(err, 0),
                marker="o",
                ms=3,
                capsize=2,
                color=colour,
                label=policy,
            )
        bad = [p.load for p in points if p.verdict is Verdict.UNSTABLE]
        if bad:
            # Near the top of the axes (an unstable run has no steady-state mean), one row
            # per policy so that no cross hides another.
            ax.plot(
                bad,
                [0.96 - 0.035 * k] * len(bad),
                "x",
                color=colour,
                transform=ax.get_xaxis_transform(),
                label=None if ok else f"{policy} (unstable)",
            )
    ax.set_yscale("log")
    ax.set_xlabel("offered load ρ")
    unit = "time units" if report.config.family == "msj" else "s"
    ax.set_ylabel(f"mean response time E[T] ({unit})")
    seeds = len(report.seeds)
    ax.set_title(f"{report.config.family}: {report.config.n:,} jobs x {seeds} seeds (x: unstable)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax.figure  # type: ignore[return-value]
