"""Pollux's Philly-derived workloads (bundled, Apache-2.0).

Each workload lists 160 jobs: name, arrival time (s), application, replicas and batch size.
The files give no job lengths; the application was chosen by the Philly job's GPU-time bucket
(cifar10 and ncf below 1 GPU-hour, deepspeech2 and bert below 10, yolov3 below 100, imagenet
100 or more) [1]_. :func:`pollux_instance` imputes each job's GPU-time log-uniformly within its
application's bucket (seeded) and records that in the instance's provenance.

References
----------
.. [1] A. Qiao et al., "Pollux: co-adaptive cluster scheduling for goodput-optimized deep
   learning", OSDI 2021.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from os import PathLike
from pathlib import Path

import numpy as np

from asrpt_opt.errors import InstanceError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.traces._rows import csv_file, nothing_left, read_rows

__all__ = [
    "GPU_HOUR_BUCKETS",
    "PolluxJob",
    "pollux_instance",
    "read_pollux_workload",
]

#: GPU-hour range of each application (Pollux's selection rule); imagenet capped at 1000.
GPU_HOUR_BUCKETS = {
    "cifar10": (0.1, 1.0),
    "ncf": (0.1, 1.0),
    "deepspeech2": (1.0, 10.0),
    "bert": (1.0, 10.0),
    "yolov3": (10.0, 100.0),
    "imagenet": (100.0, 1000.0),
}
_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


@dataclass(frozen=True, kw_only=True, slots=True)
class PolluxJob:
    """One row of a Pollux workload."""

    line: int
    name: str
    arrival_s: float
    application: str
    replicas: int
    batch_size: int


def read_pollux_workload(
    source: int | str | PathLike[str] = 1, *, errors: list[str] | None = None
) -> list[PolluxJob]:
    """Read a Pollux workload CSV.

    Parameters
    ----------
    source : int or path-like
        1..8 for a bundled workload, or a file.
    errors : list, optional
        Collect bad rows' messages here and skip them; by default the first bad row raises.

    Returns
    -------
    list of PolluxJob

    Raises
    ------
    InstanceError
        Naming the file, the line and the reason for the first bad row.
    """
    if isinstance(source, int):
        if not 1 <= source <= 8:
            raise InstanceError(f"bundled Pollux workloads are 1..8, not {source}")
        path = Path(
            str(
                resources.files("asrpt_opt")
                / "data"
                / "pollux"
                / "workloads"
                / f"workload-{source}.csv"
            )
        )
    else:
        path = Path(source)
    return read_rows(csv_file(path, _COLUMNS), _parse_pollux, source=str(path), errors=errors)


def _parse_pollux(lineno: int, row: list[str]) -> PolluxJob:
    if len(row) != len(_COLUMNS):
        raise InstanceError(f"expected {len(_COLUMNS)} columns, got {len(row)}")
    try:
        arrival, replicas, batch = float(row[1]), int(row[3]), int(row[4])
    except ValueError as exc:
        raise InstanceError(f"bad number: {exc}") from None
    if row[2] not in GPU_HOUR_BUCKETS:
        raise InstanceError(f"unknown application {row[2]!r}")
    if not math.isfinite(arrival) or arrival < 0 or replicas < 1 or batch < 1:
        raise InstanceError("time must be >= 0, replicas and batch size >= 1")
    return PolluxJob(
        line=lineno,
        name=row[0],
        arrival_s=arrival,
        application=row[2],
        replicas=replicas,
        batch_size=batch,
    )


def pollux_instance(
    workload: int | str | PathLike[str] = 1,
    *,
    servers: tuple[int, ...] = (4,) * 16,
    seed: int | np.random.Generator | None = 0,
    errors: list[str] | None = None,
) -> Instance:
    """Build an instance of abstract jobs from a Pollux workload, imputing lengths.

    A job's GPU-time is drawn log-uniformly in its application's bucket
    (:data:`GPU_HOUR_BUCKETS`) and divided by its replicas to give ``duration_s``.

    Parameters
    ----------
    workload : int or path-like
    servers : tuple of int
        Pollux's testbed had 4 GPUs per node.
    seed : int, Generator or None
    errors : list, optional
        Collect bad rows here and skip them; by default the first one raises.

    Returns
    -------
    Instance
    """
    rows = read_pollux_workload(workload, errors=errors)
    rng = np.random.default_rng(seed)
    jobs = []
    cluster = Cluster(servers=servers)
    seen: set[str] = set()
    for row in rows:
        problem = None
        if row.replicas > cluster.total_gpus:
            problem = f"{row.replicas} replicas exceed the cluster's {cluster.total_gpus} GPUs"
        elif row.name in seen:
            problem = f"job name {row.name!r} appears again"
        if problem is not None:
            err = InstanceError(problem, path=f"line {row.line}", source=_source_of(workload))
            if errors is None:
                raise err
            errors.append(str(err))
            continue
        seen.add(row.name)
        lo, hi = GPU_HOUR_BUCKETS[row.application]
        gpu_hours = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        jobs.append(
            Job(
                id=row.name,
                release_s=row.arrival_s,
                gpus=row.replicas,
                duration_s=round(gpu_hours * 3600.0 / row.replicas, 3),
                features={
                    "model": row.application,
                    "batch_size": row.batch_size,
                    "recurrence_key": row.application,
                },
            )
        )
    if not jobs:
        raise nothing_left(_source_of(workload), errors)
    label = workload if isinstance(workload, int) else Path(workload).stem
    return Instance(
        name=f"pollux-workload-{label}",
        cluster=cluster,
        jobs=tuple(jobs),
        speed_model="measured-pollux",
        provenance={
            "source": "Pollux osdi21-artifact simulator/workloads (Apache-2.0)",
            "imputed": "duration_s = log-uniform GPU-hours in the application's bucket / replicas",
            "seed": str(seed),
            "rows_skipped": len(errors) if errors is not None else 0,
        },
    )


def _source_of(workload: int | str | PathLike[str]) -> str:
    return f"bundled Pollux workload {workload}" if isinstance(workload, int) else str(workload)
