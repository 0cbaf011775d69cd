"""The outcome of one simulation: :class:`SimulationResult`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import Schedule, runs_json_text
from asrpt_opt.sim.metrics import Metrics
from asrpt_opt.speed.base import SpeedModel

if TYPE_CHECKING:
    import pandas as pd

    from asrpt_opt.sim.tables import Table

__all__ = ["SimulationResult", "segment_costs"]


@dataclass(frozen=True, kw_only=True, slots=True, repr=False)
class SimulationResult:
    """Outcome of one simulation.

    Attributes
    ----------
    policy : str
        Name of the policy.
    schedule : Schedule
        The validated schedule.
    metrics : Metrics
        Recomputed from the schedule.
    predicted_work : ndarray
        The prediction each job received at its arrival (work units).
    placement : str
        The placement method that chose DNN jobs' GPUs.
    segment_costs : tuple
        Per job, None for an abstract job, else per segment ``(iteration_time_s,
        cross_server_bytes)`` on the GPUs it held.
    """

    policy: str
    schedule: Schedule
    metrics: Metrics
    predicted_work: NDArray[np.float64]
    placement: str = "consolidate"
    segment_costs: tuple[tuple[tuple[float, float], ...] | None, ...] = ()
    instance: Instance | None = field(default=None, compare=False)
    speed: SpeedModel | None = field(default=None, compare=False)

    def per_job(self) -> Table:
        """One row per job (:func:`asrpt_opt.sim.tables.per_job_table`); ``.to_frame()``
        of the result, or :func:`asrpt_opt.sim.tables.to_frame`, gives a DataFrame."""
        from asrpt_opt.sim.tables import per_job_table

        if self.instance is None:
            raise UsageError("per_job() needs the result of simulate(), which keeps its instance")
        return per_job_table(
            self.instance,
            self.schedule,
            policy=self.policy,
            predicted_work=self.predicted_work,
            speed=self.speed,
        )

    def to_frame(self) -> pd.DataFrame:
        """The per-job table as a pandas DataFrame (``pip install "asrpt-opt[tables]"``)."""
        from asrpt_opt.sim.tables import to_frame

        return to_frame(self.per_job())

    def __repr__(self) -> str:
        m = self.metrics
        return (
            f"SimulationResult(policy={self.policy!r}, placement={self.placement!r}, "
            f"n_jobs={m.n_jobs}, mean_jct_s={m.mean_jct_s:.6g}, "
            f"total_weighted_completion_s={m.total_weighted_completion_s:.6g})"
        )

    def to_json(self, *, jobs: bool = True) -> dict[str, Any]:
        """The ``simulate --json`` object (docs/output-format.md); without ``jobs`` when
        ``jobs=False``."""
        out = {
            "policy": self.policy,
            "total_weighted_completion_s": self.metrics.total_weighted_completion_s,
            "mean_jct_s": self.metrics.mean_jct_s,
            "metrics": self.metrics.to_json(),
        }
        if jobs:
            out["jobs"] = self._jobs_json()
        return out

    def _jobs_json(self) -> list[dict[str, Any]]:
        out = [run.to_json() for run in self.schedule.runs]
        for run, extra in zip(out, self._segment_extra(), strict=True):
            if extra is not None:
                for seg, more in zip(run["segments"], extra, strict=True):
                    seg.update(more)
        return out

    def _segment_extra(self) -> list[list[dict[str, float]] | None]:
        costs = self.segment_costs or (None,) * len(self.schedule.runs)
        return [
            None
            if cost is None
            else [{"iteration_time_s": tau, "cross_server_bytes": b} for tau, b in cost]
            for cost in costs
        ]

    def to_json_text(self, **extra: Any) -> str:
        """``json.dumps({**self.to_json(), **extra}, separators=(",", ":"))``, with the jobs
        written straight from the schedule (:func:`~asrpt_opt.model.schedule.runs_json_text`)
        rather than through a dict per segment; the command line prints this."""
        text = json.dumps(self.to_json(jobs=False), separators=(",", ":"))[:-1]
        jobs = runs_json_text(self.schedule.runs, self._segment_extra())
        tail = json.dumps(extra, separators=(",", ":"))[1:] if extra else "}"
        return f'{text},"jobs":{jobs}{"," if extra else ""}{tail}'


def segment_costs(
    instance: Instance, schedule: Schedule, speed: SpeedModel
) -> tuple[tuple[tuple[float, float], ...] | None, ...]:
    """Each DNN job's (iteration time, cross-server bytes) per segment, for the schedule's
    records; empty for an abstract instance or a speed model without traffic.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    speed : SpeedModel

    Returns
    -------
    tuple
        Per job, None for an abstract job, else one (seconds, bytes) pair per segment.
    """
    cross = getattr(speed, "cross_server_bytes", None)
    if instance.is_abstract or cross is None:
        return ()
    return tuple(
        None
        if job.is_abstract
        else tuple(
            (1.0 / speed.rate(job, seg.allocation), cross(job, seg.allocation))
            for seg in run.segments
        )
        for job, run in zip(instance.jobs, schedule.runs, strict=True)
    )
