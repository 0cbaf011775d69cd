"""Trace replay experiments: every policy on one instance, with provenance.

A replay simulates each policy, collects its metrics, and writes a results file that makes the
experiment reproducible: the instance's SHA-256, the policy and predictor parameters, the
placement method, the package version and the seed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import atomic_write_text, dumps_instance
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.sim.metrics import Metrics

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from asrpt_opt.sim.placer import Placement
    from asrpt_opt.sim.result import SimulationResult
    from asrpt_opt.sim.tables import Table

__all__ = ["ReplayReport", "plot_jct_cdf", "plot_replay", "plot_timeline", "replay", "timeline"]


@dataclass(frozen=True, kw_only=True)
class ReplayReport:
    """Results of a replay.

    Attributes
    ----------
    instance : Instance
    metrics : dict of policy -> Metrics
    schedules : dict of policy -> Schedule
    wall_s : dict of policy -> float
    lower_bound_s : float
    provenance : dict
    results : dict of policy -> SimulationResult
        Each policy's full result (for per-job tables).
    """

    instance: Instance
    metrics: dict[str, Metrics]
    schedules: dict[str, Schedule]
    wall_s: dict[str, float]
    lower_bound_s: float
    provenance: dict[str, Any] = field(default_factory=dict)
    results: dict[str, SimulationResult] = field(default_factory=dict, repr=False)

    def per_job(self) -> Table:
        """One row per job and policy, the policies one after the other (the columns of
        :data:`asrpt_opt.sim.tables.PER_JOB_COLUMNS`)."""
        from asrpt_opt.sim.tables import concat

        return concat([r.per_job() for r in self.results.values()])

    def to_frame(self) -> pd.DataFrame:
        """:meth:`per_job` as a pandas DataFrame (``pip install "asrpt-opt[tables]"``)."""
        from asrpt_opt.sim.tables import to_frame

        return to_frame(self.per_job())

    def to_json(self) -> dict[str, Any]:
        """Results and provenance as a JSON-ready dict (schedules left out)."""
        return {
            "provenance": self.provenance,
            "lower_bound_s": self.lower_bound_s,
            "policies": {
                name: {
                    **m.to_json(),
                    "ratio_to_lower_bound": m.total_weighted_completion_s / self.lower_bound_s,
                    "wall_s": self.wall_s[name],
                    "jobs_per_s": m.n_jobs / self.wall_s[name] if self.wall_s[name] else None,
                }
                for name, m in self.metrics.items()
            },
        }


def replay(
    instance: Instance,
    policies: Sequence[str],
    *,
    placement: str | Placement | None = None,
    predictor: str = "oracle",
    refit_every: int | None = None,
    seed: int = 0,
    policy_params: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayReport:
    """Simulate every policy on ``instance``.

    Parameters
    ----------
    instance : Instance
    policies : sequence of str
        Registered policy names.
    placement : str or Placement, optional
        Placement method that chooses DNN jobs' GPUs for every policy (abstract jobs are
        always consolidated), optionally with its choice among candidates; by default each
        policy's own (``consolidate`` for the built-in policies).
    predictor : str
        Registered predictor name; a fresh one per policy.
    refit_every : int, optional
        Refit the predictor after every this many completions.
    seed : int
    policy_params : mapping, optional
        Per policy name, keyword parameters of its constructor.
    progress : callable, optional
        ``progress(done, total)`` after each policy.

    Returns
    -------
    ReplayReport
    """
    from importlib.metadata import version

    from asrpt_opt.policies.registry import make_policy, simulate
    from asrpt_opt.prediction import make_predictor, seed_params
    from asrpt_opt.sim.compiled import compile_threshold, compiles_from, warm_up
    from asrpt_opt.speed.default import default_speed

    speed = default_speed(instance)
    placements: dict[str, str] = {}
    metrics: dict[str, Metrics] = {}
    schedules: dict[str, Schedule] = {}
    walls: dict[str, float] = {}
    results: dict[str, SimulationResult] = {}
    params = seed_params(predictor, seed)
    n = instance.n_jobs
    if instance.is_abstract and refit_every is None:
        built = [make_policy(name, **(policy_params or {}).get(name, {})) for name in policies]
        compiling = [p for p in built if n >= compile_threshold(p) and n >= compiles_from(p)]
        if compiling:
            warm_up(*compiling)  # compiled (once) outside every policy's wall time
    for k, name in enumerate(policies):
        pred = make_predictor(predictor, **params)
        t0 = time.perf_counter()
        result = simulate(
            instance,
            name,
            predictor=pred,
            speed=speed,
            seed=seed,
            refit_every=refit_every,
            placement=placement,
            **dict((policy_params or {}).get(name, {})),
        )
        placements[name] = result.placement
        walls[name] = time.perf_counter() - t0
        metrics[name] = result.metrics
        schedules[name] = result.schedule
        results[name] = result
        if progress:
            progress(k + 1, len(policies))
    text = dumps_instance(instance)
    provenance = {
        "instance": instance.name,
        "instance_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "jobs": instance.n_jobs,
        "gpus": instance.cluster.total_gpus,
        "policies": list(policies),
        "policy_params": {k: dict(v) for k, v in (policy_params or {}).items() if v}
        or "registry defaults",
        "predictor": predictor,
        "predictor_params": params,
        "refit_every": refit_every,
        "placement": placements if not instance.is_abstract else "consolidate (abstract jobs)",
        "seed": seed,
        "asrpt_opt": version("asrpt-opt"),
    }
    return ReplayReport(
        instance=instance,
        metrics=metrics,
        schedules=schedules,
        wall_s=walls,
        lower_bound_s=lower_bounds(instance, speed=speed).lower_bound_s,
        provenance=provenance,
        results=results,
    )


def timeline(
    instance: Instance, schedule: Schedule
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Queue length and busy GPUs as step functions of time.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule

    Returns
    -------
    (times, waiting, busy_gpus)
        Values hold from each time until the next.
    """
    t: list[float] = []
    dq: list[int] = []
    db: list[int] = []
    for job, run in zip(instance.jobs, schedule.runs, strict=True):
        t.append(job.release_s)
        dq.append(1)
        db.append(0)
        last = len(run.segments) - 1
        for k, seg in enumerate(run.segments):
            t += [seg.start_s, seg.end_s]
            dq += [-1, 0 if k == last else 1]
            db += [job.gpus, -job.gpus]
    times = np.asarray(t)
    order = np.argsort(times, kind="stable")
    times = times[order]
    waiting = np.cumsum(np.asarray(dq)[order])
    busy = np.cumsum(np.asarray(db)[order])
    # Keep the last value at each instant.
    keep = np.append(times[1:] != times[:-1], True)
    return times[keep], waiting[keep], busy[keep]


def plot_jct_cdf(report: ReplayReport, *, ax: Any = None) -> Figure:
    """The CDF of job completion times, one line per policy (A-SRPT highlighted), and beside
    it each policy's JCT at every quantile over the best policy's at that quantile, which
    separates curves the CDF draws on top of each other.

    Parameters
    ----------
    report : ReplayReport
    ax : matplotlib Axes or a pair of them, optional
        One Axes: the CDF alone. Two: the CDF and the ratio panel. None: a new figure with
        both.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    from asrpt_opt.analysis.plots import policy_colours

    if ax is None:
        _, pair = plt.subplots(1, 2, figsize=(8.0, 3.2))
        axes = list(pair)
    else:
        axes = list(np.ravel(ax)) if isinstance(ax, list | tuple | np.ndarray) else [ax]
    fig = axes[0].get_figure(root=True)
    release = np.array([j.release_s for j in report.instance.jobs])
    names = list(report.schedules)
    jcts = {
        name: np.sort(np.array([r.completion_s for r in report.schedules[name].runs]) - release)
        / 3600.0
        for name in names
    }
    fraction = np.arange(1, release.size + 1) / release.size
    best = np.min(np.vstack(list(jcts.values())), axis=0)
    cdf = axes[0]
    for name, colour in zip(names, policy_colours(names), strict=True):
        width = 2.0 if name == "a-srpt" else 1.2
        cdf.step(jcts[name], fraction, where="post", label=name, color=colour, lw=width)
        if len(axes) > 1:
            ratio = jcts[name] / np.maximum(best, 1e-12)
            axes[1].plot(fraction, ratio, color=colour, lw=width, label=name)
    cdf.set_xscale("log")
    cdf.set_xlabel("job completion time (h)")
    cdf.set_ylabel("fraction of jobs")
    inst = report.instance
    cdf.set_title(f"{inst.name}: {inst.n_jobs} jobs on {inst.cluster.label}", fontsize=9)
    cdf.grid(alpha=0.3)
    cdf.legend(fontsize=7)
    if len(axes) > 1:
        axes[1].set_yscale("log")
        axes[1].set_xlabel("fraction of jobs (quantile)")
        axes[1].set_ylabel("JCT / best policy's JCT\nat that quantile")
        axes[1].axhline(1.0, color="grey", lw=0.6, zorder=0)
        axes[1].grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_timeline(report: ReplayReport, *, ax: Any = None) -> Figure:
    """Jobs waiting (top) and GPU utilisation (bottom) over time, one line per policy.

    Parameters
    ----------
    report : ReplayReport
    ax : pair of matplotlib Axes, optional
        Where to draw; a new figure when None.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    from asrpt_opt.analysis.plots import policy_colours

    if ax is None:
        _, ax = plt.subplots(2, 1, figsize=(7.0, 4.2), sharex=True)
    top, bottom = list(np.ravel(ax))
    fig = top.get_figure(root=True)
    inst = report.instance
    m = inst.cluster.total_gpus
    names = list(report.schedules)
    for name, colour in zip(names, policy_colours(names), strict=True):
        t, waiting, busy = timeline(inst, report.schedules[name])
        step = max(1, t.size // 4000)  # thin very long replays for drawing only
        kw = {"where": "post", "label": name, "lw": 0.8, "color": colour}
        top.step(t[::step] / 3600.0, waiting[::step], **kw)
        bottom.step(t[::step] / 3600.0, busy[::step] / m, **kw)
    top.set_ylabel("jobs waiting")
    bottom.set_ylabel("GPU utilisation")
    bottom.set_xlabel("time (h)")
    top.legend(fontsize=7)
    for a in (top, bottom):
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_replay(report: ReplayReport, out_dir: str | PathLike[str]) -> list[str]:
    """Write ``jct-cdf.png`` (:func:`plot_jct_cdf`), ``timeline.png`` (:func:`plot_timeline`)
    and ``results.json`` into ``out_dir``.

    Parameters
    ----------
    report : ReplayReport
    out_dir : path-like

    Returns
    -------
    list of str
        The files written.
    """
    import matplotlib.pyplot as plt

    from asrpt_opt.analysis.plots import save_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (("jct-cdf.png", plot_jct_cdf), ("timeline.png", plot_timeline)):
        fig = draw(report)
        save_figure(fig, out / name)
        plt.close(fig)
        written.append(str(out / name))
    results = out / "results.json"
    atomic_write_text(results, json.dumps(report.to_json(), indent=2) + "\n")
    return [*written, str(results)]
