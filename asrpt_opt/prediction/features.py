"""Features of a job for length prediction, with causal history statistics.

Static features: model, dataset, user and recurrence key (ordinal codes learned in ``fit``;
a value never seen in training maps to -1), batch size, dp/pp/tp, GPUs, and the submit hour
and weekday derived from ``release_s``. History features of the job's recurrence key: how many
earlier jobs of the key there were, their mean log length, and the last one's log length.
"Earlier" means released before the job (for a training row) or anywhere in the fitted
history (for a prediction): nothing a job could not have known at its arrival is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.job import Job

__all__ = [
    "FEATURE_NAMES",
    "HistoryStats",
    "job_key",
    "learn_codes",
    "static_row",
    "training_matrix",
]

_CATS = ("model", "dataset", "user", "key")
FEATURE_NAMES: tuple[str, ...] = (
    *_CATS,
    "batch_size",
    "dp",
    "pp",
    "tp",
    "gpus",
    "hour",
    "weekday",
    "key_count",
    "key_mean_log",
    "key_last_log",
)


def job_key(job: Job) -> str:
    """The job's recurrence key.

    Parameters
    ----------
    job : Job

    Returns
    -------
    str
        ``features["recurrence_key"]`` if given, else its model, dataset, batch size, user
        and width joined by ``|``.
    """
    feats = job.features
    if "recurrence_key" in feats:
        return str(feats["recurrence_key"])
    model = job.model or feats.get("model") or feats.get("job_type") or ""
    parts = [model, feats.get("dataset", ""), feats.get("batch_size", ""), feats.get("user", "")]
    return "|".join(str(p) for p in [*parts, job.gpus])


def _category(job: Job, name: str) -> str:
    if name == "key":
        return job_key(job)
    if name == "model":
        return str(job.model or job.features.get("model") or job.features.get("job_type") or "")
    return str(job.features.get(name, ""))


def static_row(job: Job, codes: dict[str, dict[str, int]]) -> list[float]:
    """Categorical codes and numeric features of one job (history features not included).

    Parameters
    ----------
    job : Job
    codes : dict
        From :func:`learn_codes`.

    Returns
    -------
    list of float
    """
    par = job.parallelism
    dp, pp, tp = (par.dp, par.pp, par.tp) if par is not None else (job.gpus, 1, 1)
    batch = job.features.get("batch_size", -1)
    try:
        batch_f = float(batch)
    except (TypeError, ValueError):
        batch_f = -1.0
    return [
        *(float(codes[c].get(_category(job, c), -1)) for c in _CATS),
        batch_f,
        float(dp),
        float(pp),
        float(tp),
        float(job.gpus),
        float((job.release_s // 3600) % 24),
        float((job.release_s // 86400) % 7),
    ]


@dataclass
class HistoryStats:
    """Running per-key statistics of log lengths."""

    count: dict[str, int] = field(default_factory=dict)
    total: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)

    def row(self, key: str) -> list[float]:
        """``[count, mean log, last log]`` of ``key`` (-1 where unknown)."""
        c = self.count.get(key, 0)
        if c == 0:
            return [0.0, -1.0, -1.0]
        return [float(c), self.total[key] / c, self.last[key]]

    def add(self, key: str, log_value: float) -> None:
        """Record one more completed job of ``key``."""
        self.count[key] = self.count.get(key, 0) + 1
        self.total[key] = self.total.get(key, 0.0) + log_value
        self.last[key] = log_value


def learn_codes(jobs: Sequence[Job]) -> dict[str, dict[str, int]]:
    """Ordinal codes of every categorical value seen in ``jobs`` (in first-seen order).

    Parameters
    ----------
    jobs : sequence of Job

    Returns
    -------
    dict
        Per categorical feature, value -> code.
    """
    codes: dict[str, dict[str, int]] = {c: {} for c in _CATS}
    for job in jobs:
        for c in _CATS:
            codes[c].setdefault(_category(job, c), len(codes[c]))
    return codes


def training_matrix(
    jobs: Sequence[Job], targets: NDArray[np.float64], codes: dict[str, dict[str, int]]
) -> tuple[NDArray[np.float64], HistoryStats]:
    """Feature rows with causal history features.

    Parameters
    ----------
    jobs : sequence of Job
    targets : ndarray
        Their true lengths.
    codes : dict
        From :func:`learn_codes`.

    Returns
    -------
    (ndarray, HistoryStats)
        One row per job (in input order, history from earlier releases only), and the
        statistics over all of ``jobs`` for later predictions.
    """
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].release_s, i))
    stats = HistoryStats()
    rows: list[list[float]] = [[]] * len(jobs)
    for i in order:
        key = job_key(jobs[i])
        rows[i] = static_row(jobs[i], codes) + stats.row(key)
        stats.add(key, math.log1p(float(targets[i])))
    return np.asarray(rows, dtype=np.float64).reshape(len(jobs), len(FEATURE_NAMES)), stats
