"""The Gantt chart of a schedule: bars per GPU grouped in server lanes, or a utilisation
strip per server when there are too many jobs to read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from asrpt_opt.analysis.plots import figure_for
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule

__all__ = ["GANTT_DETAIL_MAX_JOBS", "gpu_lanes", "job_classes", "plot_gantt"]


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


def job_classes(instance: Instance, *, most: int = 8) -> tuple[list[str], list[int]]:
    """Group jobs into at most ``most`` classes for colouring: by model (or job type) when
    the jobs have one, else by width; the rarest fall into "other".

    Parameters
    ----------
    instance : Instance
    most : int

    Returns
    -------
    names : list of str
        Class names, most frequent first ("other" last when used).
    of_job : list of int
        Each job's class index.
    """
    keys = []
    for job in instance.jobs:
        model = job.model or job.features.get("model")
        keys.append(str(model) if model is not None else f"{job.gpus} GPU" + "s" * (job.gpus > 1))
    counts = Counter(keys)
    top = [k for k, _ in counts.most_common(most if len(counts) <= most else most - 1)]
    names = top + (["other"] if len(counts) > len(top) else [])
    index = {k: i for i, k in enumerate(top)}
    other = len(top)
    return names, [index.get(k, other) for k in keys]


#: Above this many jobs, :func:`plot_gantt` draws the utilisation summary instead of bars.
GANTT_DETAIL_MAX_JOBS = 400


def plot_gantt(
    instance: Instance,
    schedule: Schedule,
    *,
    title: str = "",
    label_jobs: Sequence[str] | None = None,
    summary: bool | None = None,
    ax: Any = None,
) -> Figure:
    """Draw a schedule: one row per GPU, servers as labelled lanes, bars coloured by job class
    (model, or width) with a key; or, for many jobs, a utilisation heat strip per server.

    Bars are drawn as one collection, so thousands of jobs draw in well under a second.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    title : str
    label_jobs : sequence of str, optional
        Job ids to label inside their bars (default: all, when there are at most 30 jobs).
    summary : bool, optional
        Draw the per-server utilisation strip instead of bars; by default when the instance
        has more than :data:`GANTT_DETAIL_MAX_JOBS` jobs.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.collections import PolyCollection

    n = instance.n_jobs
    servers = instance.cluster.servers
    m = instance.cluster.total_gpus
    if summary is None:
        summary = n > GANTT_DETAIL_MAX_JOBS
    horizon = max((r.completion_s for r in schedule.runs), default=0.0)
    unit, scale = ("h", 3600.0) if horizon > 3 * 3600 else ("s", 1.0)
    height = 2.2 + (0.22 * len(servers) if summary else min(0.06 * m, 6.0))
    fig, ax = figure_for(ax, (7.0, height))
    ax.set_title(
        title or f"{instance.name}: {n} jobs on {len(servers)} servers, {m} GPUs", fontsize=9
    )
    ax.set_xlabel(f"time ({unit})")
    if summary:
        ax.set_title(f"{ax.get_title()} (GPU utilisation per server)", fontsize=9)
        _utilisation_strip(ax, instance, schedule, scale)
        fig.tight_layout()
        return fig
    names, of_job = job_classes(instance)
    cmap = plt.get_cmap("tab10")
    palette = [
        cmap(i % 10) if name != "other" else (0.6, 0.6, 0.6, 1.0) for i, name in enumerate(names)
    ]
    if label_jobs is None:
        label_jobs = [j.id for j in instance.jobs] if n <= 30 else []
    labels = set(label_jobs)
    boxes = []
    colours = []
    for j, start, end, rows in gpu_lanes(instance, schedule):
        x0, x1 = start / scale, end / scale
        for r in rows:
            boxes.append(((x0, r - 0.42), (x0, r + 0.42), (x1, r + 0.42), (x1, r - 0.42)))
            colours.append(palette[of_job[j]])
        job_id = instance.jobs[j].id
        if job_id in labels and rows:
            ax.text(
                (x0 + x1) / 2, float(np.mean(rows)), job_id, ha="center", va="center", fontsize=6
            )
    ax.add_collection(PolyCollection(boxes, facecolors=colours, edgecolors="none"))
    ax.set_xlim(0, max(horizon / scale, 1e-9))
    offsets = np.concatenate([[0], np.cumsum(servers)])
    for b in offsets[1:-1]:
        ax.axhline(b - 0.5, color="black", lw=0.5)
    ax.set_ylim(m - 0.5, -0.5)
    step = max(1, len(servers) // 16)
    ticks = [(offsets[s] + offsets[s + 1] - 1) / 2 for s in range(0, len(servers), step)]
    ax.set_yticks(ticks, [f"server {s}" for s in range(0, len(servers), step)], fontsize=7)
    ax.tick_params(axis="y", length=0)
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=c, label=name) for name, c in zip(names, palette, strict=True)],
        title="job class",
        fontsize=7,
        title_fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    fig.tight_layout()
    return fig


def _utilisation_strip(ax: Any, instance: Instance, schedule: Schedule, scale: float) -> None:
    """Per server, the fraction of its GPUs busy in each of 400 time bins (a heat strip)."""
    servers = instance.cluster.servers
    horizon = max((r.completion_s for r in schedule.runs), default=0.0) or 1.0
    bins = 400
    edges = np.linspace(0.0, horizon, bins + 1)
    busy = np.zeros((len(servers), bins))
    width = horizon / bins
    for run in schedule.runs:
        for seg in run.segments:
            a, b = seg.start_s / width, seg.end_s / width
            lo, hi = int(a), min(int(np.ceil(b)), bins)
            # GPU-seconds of this segment in each bin it overlaps.
            cover = np.clip(
                np.minimum(b, np.arange(lo, hi) + 1) - np.maximum(a, np.arange(lo, hi)), 0, 1
            )
            for s, count in seg.allocation:
                busy[s, lo:hi] += count * cover
    busy /= np.asarray(servers, dtype=float)[:, None]
    image = ax.imshow(
        busy,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0.0, edges[-1] / scale, len(servers) - 0.5, -0.5),
    )
    step = max(1, len(servers) // 16)
    ax.set_yticks(
        range(0, len(servers), step),
        [f"server {s}" for s in range(0, len(servers), step)],
        fontsize=7,
    )
    ax.figure.colorbar(image, ax=ax, label="GPUs busy (fraction)", pad=0.01)
