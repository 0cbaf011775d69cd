"""Calibrating and validating the iteration-time model against real measurements.

* **Pollux** (Qiao et al., OSDI 2021): step and all-reduce times of six data-parallel models
  for many GPU layouts (4 GPUs per node) and local batch sizes. For data parallelism the
  worker-graph model reduces to ``step = compute(local batch) + 2 (d-1)/d * V / B``, with ``B``
  the slowest link of the ring: intra-node when every replica shares a node, else inter-node.
  Per model we fit ``compute = alpha + beta * local_bsz`` and the two all-reduce constants
  ``V/B_intra`` and ``V/B_inter`` by non-negative least squares, then report
  the relative error of the predicted step time on every measured row.
* **Gavel** (Narayanan et al., OSDI 2020): throughput of ResNet-18/50 on 1-8 V100s,
  consolidated and spread. With the PipeDream profiles' parameter bytes and the measured
  single-GPU step time as compute, we fit one intra- and one inter-server bandwidth and report
  the error of the predicted multi-GPU throughputs.

References
----------
.. [1] A. Qiao et al., "Pollux: co-adaptive cluster scheduling for goodput-optimized deep
   learning", OSDI 2021.
.. [2] D. Narayanan et al., "Heterogeneity-aware cluster scheduling policies for deep learning
   workloads", OSDI 2020.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.dnn import load_model
from asrpt_opt.traces.gavel import gavel_throughputs

__all__ = ["POLLUX_MODELS", "FitReport", "fit_gavel", "fit_pollux", "load_pollux"]

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
    if model not in POLLUX_MODELS:
        raise KeyError(f"unknown Pollux model {model!r} (known: {', '.join(POLLUX_MODELS)})")
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


def _gavel_points(job_type: str) -> tuple[float, list[tuple[int, bool, float]]]:
    table = gavel_throughputs()
    one = float(table["v100"][str((job_type, 1))]["null"])
    points = []
    for k in (2, 4, 8):
        for spread, kind in ((False, "v100"), (True, "v100_unconsolidated")):
            entry = table[kind].get(str((job_type, k)))
            if entry is not None:
                points.append((k, spread, float(entry["null"])))
    return one, points


def _predict(
    one: float, k: int, spread: bool, grad_bytes: float, bw: NDArray[np.float64]
) -> float:
    compute = 1.0 / one
    link = bw[1] if spread else bw[0]
    step = compute + 2 * (k - 1) / k * grad_bytes / (link * 1e9)
    return k / step  # Gavel counts steps of every replica


def fit_gavel(
    job_types: tuple[tuple[str, str], ...] = (
        ("ResNet-18 (batch size 64)", "resnet18"),
        ("ResNet-50 (batch size 64)", "resnet50"),
    ),
) -> list[FitReport]:
    """Fit intra/inter bandwidths to Gavel's multi-GPU throughputs; report per-model errors.

    Parameters
    ----------
    job_types : tuple of (Gavel job type, PipeDream model)

    Returns
    -------
    list of FitReport
        One per job type; all share the fitted bandwidths.
    """
    data = []
    for job_type, model in job_types:
        one, points = _gavel_points(job_type)
        data.append((job_type, one, points, load_model(model).total_parameter_bytes))
    grid = np.geomspace(0.1, 400, 160)
    best = (np.inf, np.array([1.0, 1.0]))
    for intra in grid:
        for inter in grid[grid <= intra]:
            bw = np.array([intra, inter])
            err_list = [
                abs(_predict(one, k, s, v, bw) - y) / y
                for _, one, points, v in data
                for k, s, y in points
            ]
            score = float(np.median(err_list))
            if score < best[0]:
                best = (score, bw)
    bw = best[1]
    out = []
    for job_type, one, points, v in data:
        err = np.array([abs(_predict(one, k, s, v, bw) - y) / y for k, s, y in points])
        out.append(
            FitReport(
                name=job_type,
                n_rows=len(points),
                median_error=float(np.median(err)),
                worst_error=float(err.max()),
                params={"intra_gbps": float(bw[0]), "inter_gbps": float(bw[1])},
            )
        )
    return out
