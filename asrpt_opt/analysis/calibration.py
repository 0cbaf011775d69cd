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

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.dnn import load_model
from asrpt_opt.speed.measured import POLLUX_MODELS, FitReport, fit_pollux, load_pollux
from asrpt_opt.traces.gavel import gavel_throughputs

# The Pollux fit lives with the speed model that uses it; it is re-exported here so that both
# calibrations are reachable from one module.
__all__ = ["POLLUX_MODELS", "FitReport", "fit_gavel", "fit_pollux", "load_pollux"]


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
