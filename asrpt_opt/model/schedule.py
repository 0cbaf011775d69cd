"""Schedules as small frozen records, shared by the simulator, the solvers and the validator."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from asrpt_opt.model.allocation import Allocation, allocation_to_json
from asrpt_opt.model.instance import Instance

__all__ = ["JobRun", "Schedule", "Segment", "runs_json_text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Segment:
    """An interval during which a job holds a fixed set of GPUs.

    Attributes
    ----------
    start_s, end_s : float
        The interval [start_s, end_s).
    allocation : Allocation
        ``((server, count), ...)``, sorted by server.
    """

    start_s: float
    end_s: float
    allocation: Allocation

    def to_json(self) -> dict[str, Any]:
        """Encode as ``{"start_s", "end_s", "gpus": {"<server>": count}}``."""
        return {
            "start_s": self.start_s,
            "end_s": self.end_s,
            "gpus": allocation_to_json(self.allocation),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class JobRun:
    """What happened to one job: its segments and its completion time.

    Attributes
    ----------
    id : str
    release_s, completion_s : float
    segments : tuple of Segment
        In time order; more than one means the job was preempted.
    """

    id: str
    release_s: float
    completion_s: float
    segments: tuple[Segment, ...]

    def to_json(self) -> dict[str, Any]:
        """Encode as ``{"id", "release_s", "completion_s", "segments"}``."""
        return {
            "id": self.id,
            "release_s": self.release_s,
            "completion_s": self.completion_s,
            "segments": [s.to_json() for s in self.segments],
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Schedule:
    """A complete schedule of an instance: one :class:`JobRun` per job, in instance order.

    Attributes
    ----------
    runs : tuple of JobRun
    restore_overhead_s : float
        Seconds a resumed segment (every segment after a job's first) spends restoring state
        before the job makes progress.
    """

    runs: tuple[JobRun, ...]
    restore_overhead_s: float = 0.0

    def total_weighted_completion_s(self, instance: Instance) -> float:
        """Recompute sum w_j C_j from the schedule.

        Parameters
        ----------
        instance : Instance
            The instance the schedule belongs to (for the weights).

        Returns
        -------
        float
        """
        return math.fsum(
            job.weight * run.completion_s
            for job, run in zip(instance.jobs, self.runs, strict=True)
        )


def runs_json_text(
    runs: Sequence[JobRun],
    extra: Sequence[Sequence[dict[str, Any]] | None] | None = None,
) -> str:
    """The JSON text of ``[run.to_json() for run in runs]``, written directly.

    Byte for byte what :func:`json.dumps` gives with ``separators=(",", ":")``, without building
    a dict per run and segment first (a schedule of 100,000 jobs spent more time there than in
    the encoder).

    Parameters
    ----------
    runs : sequence of JobRun
    extra : sequence, optional
        Per run, None or one dict per segment of keys to append to that segment's object.

    Returns
    -------
    str
    """
    # Times are finite floats (the validator checks them), whose JSON is their repr.
    num = float.__repr__
    # Allocations repeat (a schedule shares one tuple per server and count): each one's
    # text is written once.
    texts: dict[Allocation, str] = {}
    out = []
    for k, run in enumerate(runs):
        more = extra[k] if extra is not None else None
        segments = []
        for i, seg in enumerate(run.segments):
            gpus = texts.get(seg.allocation)
            if gpus is None:
                gpus = texts[seg.allocation] = ",".join(
                    [f'"{s}":{c:d}' for s, c in seg.allocation]
                )
            tail = ""
            if more is not None:
                tail = "," + json.dumps(more[i], separators=(",", ":"))[1:-1]
            segments.append(
                f'{{"start_s":{num(seg.start_s)},"end_s":{num(seg.end_s)},"gpus":{{{gpus}}}{tail}}}'
            )
        out.append(
            f'{{"id":{encode_basestring_ascii(run.id)},"release_s":{num(run.release_s)},'
            f'"completion_s":{num(run.completion_s)},"segments":[{",".join(segments)}]}}'
        )
    return f"[{','.join(out)}]"
