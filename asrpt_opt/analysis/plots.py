"""Figures: policy comparison, Gantt charts, worker graphs and prediction calibration.

This module never selects a matplotlib backend (a notebook keeps its own); the command line
selects the non-interactive ``Agg`` backend before it draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import write_atomically
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.model.workers import WorkerGraph
from asrpt_opt.prediction.evaluate import PredictionScore
from asrpt_opt.sim.metrics import Metrics

__all__ = [
    "gpu_lanes",
    "plot_calibration",
    "plot_comparison",
    "plot_gantt",
    "plot_ratios",
    "plot_worker_graph",
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


def plot_comparison(
    metrics: Mapping[str, Metrics],
    path: str | PathLike[str],
    *,
    lower_bound_s: float | None = None,
    title: str = "",
) -> None:
    """Bar charts of mean and p95 JCT and of the objective's ratio to a lower bound.

    Parameters
    ----------
    metrics : mapping of policy name to Metrics
    path : path-like
        PNG file to write.
    lower_bound_s : float, optional
        A lower bound on sum w_j C_j; adds the ratio panel.
    title : str
    """
    names = list(metrics)
    x = np.arange(len(names))
    panels = 3 if lower_bound_s else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.6))
    hours = 3600.0
    axes[0].bar(x, [metrics[n].mean_jct_s / hours for n in names], color="tab:blue")
    axes[0].set_ylabel("mean JCT (h)")
    axes[1].bar(x, [metrics[n].p95_jct_s / hours for n in names], color="tab:orange")
    axes[1].set_ylabel("p95 JCT (h)")
    if lower_bound_s:
        ratio = [metrics[n].total_weighted_completion_s / lower_bound_s for n in names]
        axes[2].bar(x, ratio, color="tab:green")
        axes[2].axhline(1.0, color="black", lw=0.8)
        axes[2].set_ylabel("sum wC / lower bound")
    for ax in axes:
        ax.set_xticks(x, names, rotation=30, ha="right")
        ax.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def gpu_lanes(instance: Instance, schedule: Schedule) -> list[tuple[int, float, float, list[int]]]:
    """Assign each segment concrete GPU indices within its servers (for drawing).

    A schedule only says how many GPUs of each server a segment holds; this picks the lowest
    free GPU indices, processing releases before acquisitions at equal times.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule

    Returns
    -------
    list of (job index, start, end, global GPU rows)
    """
    offsets = np.concatenate([[0], np.cumsum(instance.cluster.servers)[:-1]])
    events = []
    for j, run in enumerate(schedule.runs):
        for k, seg in enumerate(run.segments):
            events.append((seg.end_s, 0, j, k))
            events.append((seg.start_s, 1, j, k))
    events.sort()
    free = [set(range(g)) for g in instance.cluster.servers]
    held: dict[tuple[int, int], list[tuple[int, int]]] = {}
    out = []
    for _, kind, j, k in events:
        seg = schedule.runs[j].segments[k]
        if kind == 0:
            for s, g in held.pop((j, k)):
                free[s].add(g)
            continue
        taken: list[tuple[int, int]] = []
        for s, c in seg.allocation:
            picked = sorted(free[s])[:c]
            free[s].difference_update(picked)
            taken.extend((s, g) for g in picked)
        held[(j, k)] = taken
        out.append((j, seg.start_s, seg.end_s, [int(offsets[s]) + g for s, g in taken]))
    return out


def plot_gantt(
    instance: Instance,
    schedule: Schedule,
    path: str | PathLike[str],
    *,
    title: str = "",
    label_jobs: Sequence[str] | None = None,
) -> None:
    """Draw a schedule as a Gantt chart: one row per GPU, one colour per job.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    path : path-like
        PNG file to write.
    title : str
    label_jobs : sequence of str, optional
        Job ids to label inside their bars (default: all, when there are at most 30 jobs).
    """
    lanes = gpu_lanes(instance, schedule)
    m = instance.cluster.total_gpus
    n = instance.n_jobs
    if label_jobs is None:
        label_jobs = [j.id for j in instance.jobs] if n <= 30 else []
    labels = set(label_jobs)
    cmap = plt.get_cmap("tab20")
    horizon = max((end for _, _, end, _ in lanes), default=0.0)
    unit, scale = ("h", 3600.0) if horizon > 3 * 3600 else ("s", 1.0)
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.18 * m + 1.5)))
    for j, start, end, rows in lanes:
        colour = cmap(j % 20)
        x0, width = start / scale, (end - start) / scale
        for r in rows:
            ax.broken_barh([(x0, width)], (r - 0.4, 0.8), facecolors=colour, lw=0)
        job_id = instance.jobs[j].id
        if job_id in labels and rows:
            mid = float(np.mean(rows))
            ax.text(x0 + width / 2, mid, job_id, ha="center", va="center", fontsize=7)
    bounds = np.cumsum(instance.cluster.servers)[:-1]
    for b in bounds:
        ax.axhline(b - 0.5, color="black", lw=0.6)
    ax.set_ylim(-0.5, m - 0.5)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("GPU (servers separated by lines)")
    ax.set_title(title or f"{instance.name}: {n} jobs on {m} GPUs")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def plot_worker_graph(
    wg: WorkerGraph,
    path: str | PathLike[str],
    *,
    assignment: Sequence[int] | None = None,
) -> None:
    """Draw a worker graph: workers on a (stage, replica x rank) grid, edge width by bytes,
    colour by server when ``assignment`` is given (cut edges dashed).

    Parameters
    ----------
    wg : WorkerGraph
    path : path-like
    assignment : sequence of int, optional
        Server of each worker.
    """
    g = wg.graph
    par = wg.parallelism
    pos = {w: (g.nodes[w]["pp"], -(g.nodes[w]["dp"] * par.tp + g.nodes[w]["tp"])) for w in g.nodes}
    fig, ax = plt.subplots(figsize=(2 + 1.4 * par.pp, 1.5 + 0.45 * par.dp * par.tp))
    top = max((d["bytes"] for _, _, d in g.edges(data=True)), default=1.0)
    style = {"pipeline": "tab:blue", "tensor": "tab:orange", "data": "tab:green"}
    for a, b, d in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        cut = assignment is not None and assignment[a] != assignment[b]
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
    for kind, colour in style.items():
        ax.plot([], [], color=colour, label=kind)
    ax.legend(loc="upper right", fontsize=7)
    ax.set_xticks(range(par.pp), [f"stage {p}" for p in range(par.pp)])
    ax.set_yticks([])
    title = f"{wg.model}: dp={par.dp}, pp={par.pp}, tp={par.tp}"
    if assignment is not None:
        title += " (colour = server, dashed = cut)"
    ax.set_title(title, fontsize=9)
    ax.set_xlim(-0.5, par.pp - 0.5 + 0.4)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def plot_calibration(scores: Sequence[PredictionScore], path: str | PathLike[str]) -> None:
    """Predicted vs true length on log axes, one panel per predictor (PNG).

    Parameters
    ----------
    scores : sequence of PredictionScore
    path : path-like
    """
    k = len(scores)
    fig, axes = plt.subplots(1, k, figsize=(3.2 * k, 3.2), squeeze=False)
    lo = min(float(min(s.truth.min(), s.predicted.min())) for s in scores)
    hi = max(float(max(s.truth.max(), s.predicted.max())) for s in scores)
    for ax, s in zip(axes[0], scores, strict=True):
        ax.scatter(s.truth, s.predicted, s=4, alpha=0.4)
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{s.name}: R2(log) {s.r2_log:.2f}", fontsize=9)
        ax.set_xlabel("true length")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("predicted length")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def plot_ratios(
    payloads: list[dict[str, Any]], policies: Sequence[str], out_dir: str
) -> list[str]:
    """Write the ratio CDF per policy and ratio vs offered load (PNG).

    Unproven instances are drawn at the upper end of their interval (the pessimistic value).

    Parameters
    ----------
    payloads : list of dict
    policies : sequence of str
    out_dir : str

    Returns
    -------
    list of str
        The files written.
    """
    from pathlib import Path

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in policies:
        r = np.sort([p["policies"][name]["ratio_hi"] for p in payloads])
        ax.step(r, np.arange(1, r.size + 1) / r.size, where="post", label=name)
    ax.set_xlabel("ALG / OPT (upper end of the interval when OPT is not proven)")
    ax.set_ylabel("fraction of instances")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    cdf = out / "ratio-cdf.png"
    save_figure(fig, cdf)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    load = [p["load"] for p in payloads]
    for name in policies:
        ax.scatter(load, [p["policies"][name]["ratio_hi"] for p in payloads], s=12, label=name)
    ax.set_xlabel("offered load")
    ax.set_ylabel("ALG / OPT")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    vs = out / "ratio-vs-load.png"
    save_figure(fig, vs)
    plt.close(fig)
    return [str(cdf), str(vs)]
