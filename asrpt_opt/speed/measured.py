"""Job speed from Pollux's measured step times per GPU layout.

Pollux (Qiao et al., OSDI 2021) measured the step and all-reduce times of six data-parallel
models for many GPU layouts (4 GPUs per node) and local batch sizes; the measurements are
bundled (Apache-2.0). :class:`PolluxSpeed` runs abstract jobs of those applications at the
measured step times of the layout they get, and :func:`fit_pollux` fits the data-parallel
step-time model ``step = alpha + beta * local_bsz + 2 (d-1)/d * V / B`` (``B`` the slowest link
of the ring) that covers layouts Pollux did not measure.

An instance asks for this model with ``"speed_model": "measured-pollux"``.

References
----------
.. [1] A. Qiao et al., "Pollux: co-adaptive cluster scheduling for goodput-optimized deep
   learning", OSDI 2021.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from asrpt_opt.errors import InstanceError, lookup
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.job import Job
from asrpt_opt.speed._shapes import shapes

__all__ = ["POLLUX_MODELS", "FitReport", "PolluxSpeed", "fit_pollux", "load_pollux"]

#: The applications Pollux measured.
POLLUX_MODELS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


@dataclass(frozen=True, kw_only=True)
class FitReport:
    """Errors of a fitted model on measurements.

    Attributes
    ----------
    name : str
    n_rows : int
    median_error, worst_error : float
        Relative error |predicted - measured| / measured.
    params : dict
        The fitted constants.
    """

    name: str
    n_rows: int
    median_error: float
    worst_error: float
    params: dict[str, float]


def load_pollux(model: str) -> list[tuple[str, int, float, float]]:
    """Rows of a bundled Pollux trace.

    Parameters
    ----------
    model : str
        One of :data:`POLLUX_MODELS`.

    Returns
    -------
    list of (placement, local_bsz, step_time, sync_time)
    """
    lookup(dict.fromkeys(POLLUX_MODELS), model, what="Pollux model")
    path = Path(str(resources.files("asrpt_opt") / "data" / "pollux" / model / "placements.csv"))
    with path.open(encoding="utf-8") as fh:
        return [
            (r["placement"], int(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"]))
            for r in csv.DictReader(fh)
        ]


def _ring_factor(placement: str) -> tuple[float, bool]:
    d = sum(int(c) for c in placement)
    nodes = sum(1 for c in placement if c != "0")
    return 2 * (d - 1) / d, nodes > 1


def fit_pollux(model: str) -> FitReport:
    """Fit and validate the data-parallel step-time model on one Pollux trace.

    Parameters
    ----------
    model : str
        One of :data:`POLLUX_MODELS`.

    Returns
    -------
    FitReport
    """
    rows = load_pollux(model)
    bsz = np.array([r[1] for r in rows], dtype=float)
    step = np.array([r[2] for r in rows])
    ring = np.array([_ring_factor(r[0])[0] for r in rows])
    spread = np.array([_ring_factor(r[0])[1] for r in rows])
    # Columns: 1, bsz, ring if one node, ring if several nodes.
    x = np.column_stack([np.ones_like(bsz), bsz, ring * ~spread, ring * spread])
    from scipy.optimize import nnls

    # Non-negative least squares: every fitted time must be physical.
    coef, _ = nnls(x, step)
    pred = x @ coef
    err = np.abs(pred - step) / step
    return FitReport(
        name=model,
        n_rows=len(rows),
        median_error=float(np.median(err)),
        worst_error=float(err.max()),
        params={
            "alpha_s": float(coef[0]),
            "beta_s_per_sample": float(coef[1]),
            "intra_allreduce_s": float(coef[2]),
            "inter_allreduce_s": float(coef[3]),
        },
    )


class PolluxSpeed:
    """Job speed from Pollux's measured step times per GPU layout (4 GPUs per node).

    An abstract job of application ``features["model"]`` with global batch
    ``features["batch_size"]`` runs at rate ``step(best) / step(allocation)`` (its
    ``duration_s`` is its length on the best layout: as few nodes as possible). ``step`` is the
    measured step time for the allocation's per-node GPU counts (sorted, as Pollux lists
    layouts) at the measured local batch size nearest to ``batch_size / gpus``; layouts Pollux
    did not measure (more than 4 nodes or 4 GPUs per node) use the data-parallel model fitted
    to that application's measurements (:func:`fit_pollux`).

    Parameters
    ----------
    gpus_per_node : int
        Pollux's testbed had 4.
    """

    def __init__(self, gpus_per_node: int = 4) -> None:
        self.gpus_per_node = gpus_per_node
        self._tables: dict[str, dict[tuple[str, int], float]] = {}
        self._fits: dict[str, dict[str, float]] = {}
        self._cache: dict[tuple[str, int, tuple[int, ...]], float] = {}
        self._best: dict[tuple[object, ...], float] = {}

    def _app(self, job: Job) -> tuple[str, int]:
        app = str(job.features.get("model", ""))
        if app not in POLLUX_MODELS:
            raise InstanceError(f"job {job.id!r}: no Pollux measurements for model {app!r}")
        batch = int(job.features.get("batch_size", job.gpus))
        return app, batch

    def _step(self, app: str, batch: int, counts: tuple[int, ...]) -> float:
        key = (app, batch, counts)
        if key in self._cache:
            return self._cache[key]
        if app not in self._tables:
            table: dict[tuple[str, int], float] = {}
            for placement, bsz, step, _ in load_pollux(app):
                table[(placement, bsz)] = step
            self._tables[app] = table
            self._fits[app] = fit_pollux(app).params
        gpus = sum(counts)
        local = batch / gpus
        layout = "".join(str(c) for c in sorted(counts))
        measured = {b: t for (p, b), t in self._tables[app].items() if p == layout}
        if measured:
            nearest = min(measured, key=lambda b: (abs(b - local), b))
            step = measured[nearest]
        else:
            fit = self._fits[app]
            ring = 2 * (gpus - 1) / gpus
            sync = fit["inter_allreduce_s"] if len(counts) > 1 else fit["intra_allreduce_s"]
            step = fit["alpha_s"] + fit["beta_s_per_sample"] * local + ring * sync
        self._cache[key] = step
        return step

    def _best_layout(self, gpus: int) -> tuple[int, ...]:
        full, rest = divmod(gpus, self.gpus_per_node)
        return tuple([self.gpus_per_node] * full + ([rest] if rest else []))

    def work(self, job: Job) -> float:
        """``duration_s``: the job's length on its best layout."""
        if job.duration_s is None:
            raise InstanceError(f"job {job.id!r}: Pollux speeds apply to abstract jobs")
        return job.duration_s

    def rate(self, job: Job, allocation: Allocation) -> float:
        """Step time on the best layout over the step time on ``allocation``."""
        app, batch = self._app(job)
        counts = tuple(sorted(c for _, c in allocation))
        return self._step(app, batch, self._best_layout(job.gpus)) / self._step(app, batch, counts)

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """The highest rate over every layout of the job's GPUs that fits ``cluster``.

        ``duration_s`` is the length on the layout with the fewest nodes, but Pollux measured
        other layouts faster for some jobs, so the best rate can exceed 1. Every shape is
        evaluated (a job has at most a few thousand), so this is the exact maximum.

        Parameters
        ----------
        job : Job
        cluster : Cluster

        Returns
        -------
        float
        """
        app, batch = self._app(job)
        servers = cluster.servers_desc
        key = (app, batch, job.gpus, servers)
        if key not in self._best:
            base = self._step(app, batch, self._best_layout(job.gpus))
            fastest = min(
                self._step(app, batch, tuple(sorted(counts)))
                for m in range(1, min(job.gpus, servers[0]) + 1)
                for counts in shapes(job.gpus, m, servers)
            )
            self._best[key] = base / fastest
        return self._best[key]
