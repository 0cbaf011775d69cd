"""Gavel's Philly-derived trace and measured throughputs (bundled, MIT licence).

The trace lists job type, total training steps, arrival time and GPU count; the throughput
table gives measured steps per second per job type and GPU count, on GPUs of one server
(*consolidated*) and spread across servers (*unconsolidated*). Together they give each job a
length and a spread slowdown [1]_.

References
----------
.. [1] D. Narayanan, K. Santhanam, F. Kazhamiaka, A. Phanishayee, M. Zaharia,
   "Heterogeneity-aware cluster scheduling policies for deep learning workloads", OSDI 2020.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import input_problem
from asrpt_opt.model.job import Job
from asrpt_opt.traces._rows import ENCODING, ERRORS, bad_text, nothing_left, read_rows

__all__ = [
    "GavelJob",
    "gavel_instance",
    "gavel_throughputs",
    "read_gavel_trace",
]

_BATCH = re.compile(r"^(?P<model>.*?) \(batch size (?P<bs>\d+)\)$")


@dataclass(frozen=True, kw_only=True, slots=True)
class GavelJob:
    """One row of a Gavel trace."""

    line: int
    job_type: str
    total_steps: int
    arrival_s: float
    gpus: int


def _bundled(name: str) -> Path:
    return Path(str(resources.files("asrpt_opt") / "data" / "gavel" / name))


def read_gavel_trace(
    path: str | PathLike[str] | None = None, *, errors: list[str] | None = None
) -> list[GavelJob]:
    """Read a Gavel trace (tab-separated, 7 columns, no header).

    Parameters
    ----------
    path : path-like, optional
        Defaults to the bundled ``msr_seed0_ee9e8c.trace``.
    errors : list, optional
        Collect bad rows' messages here and skip them; by default the first bad row raises.

    Returns
    -------
    list of GavelJob

    Raises
    ------
    InstanceError
        Naming the file, the line and the reason, for the first malformed row.
    """
    file = Path(path) if path is not None else _bundled("msr_seed0_ee9e8c.trace")
    return read_rows(_tsv_rows(file), _parse_gavel, source=str(file), errors=errors)


def _tsv_rows(file: Path) -> Iterator[tuple[int, list[str] | InstanceError]]:
    # Streamed line by line; lines end at "\n" only (a form feed or Unicode separator is
    # data, not a new row), and undecodable bytes spoil only their own line.
    problem = input_problem(file)
    if problem is not None:
        raise InstanceError(problem, source=str(file))
    try:
        handle = open(file, encoding=ENCODING, errors=ERRORS, newline="\n")  # noqa: SIM115
    except OSError as exc:
        raise InstanceError(f"cannot read file: {exc.strerror or exc}", source=str(file)) from None
    with handle:
        for n, line in enumerate(handle, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            if bad_text([line]):
                yield n, InstanceError("is not UTF-8 text")
            else:
                yield n, line.split("\t")


def _parse_gavel(lineno: int, cols: list[str]) -> GavelJob:
    if len(cols) != 7:
        raise InstanceError(f"expected 7 tab-separated columns, got {len(cols)}")
    try:
        steps, arrival, gpus = int(cols[4]), float(cols[5]), int(cols[6])
    except ValueError as exc:
        raise InstanceError(f"bad number: {exc}") from None
    if steps < 1 or gpus < 1 or not math.isfinite(arrival) or arrival < 0:
        raise InstanceError("total steps and GPUs must be >= 1, arrival >= 0")
    return GavelJob(line=lineno, job_type=cols[0], total_steps=steps, arrival_s=arrival, gpus=gpus)


@cache
def gavel_throughputs() -> dict[str, Any]:
    """The bundled throughput table (steps/s), keyed by GPU kind then ``"('<type>', <gpus>)"``.

    Returns
    -------
    dict
    """
    with _bundled("simulation_throughputs.json").open(encoding="utf-8") as fh:
        table: dict[str, Any] = json.load(fh)
    return table


def _throughput(table: dict[str, Any], job_type: str, gpus: int) -> tuple[float, bool]:
    """Steps/s for ``gpus`` GPUs, and whether it was imputed by linear scaling."""
    key = str((job_type, gpus))
    if key in table:
        return float(table[key]["null"]), False
    known = [g for g in (8, 4, 2, 1) if str((job_type, g)) in table]
    if not known:
        raise InstanceError(f"job type {job_type!r} has no throughput measurement")
    base = known[0]
    return float(table[str((job_type, base))]["null"]) * gpus / base, True


def gavel_instance(
    *,
    n_jobs: int = 400,
    servers: tuple[int, ...] = (8,) * 8,
    gpu_kind: str = "v100",
    trace: str | PathLike[str] | None = None,
    name: str | None = None,
    errors: list[str] | None = None,
) -> Instance:
    """Build an instance of abstract jobs from the first ``n_jobs`` rows of a Gavel trace.

    Each job's duration is its total steps over the measured consolidated throughput for its
    type and GPU count on ``gpu_kind``; its spread slowdown is the consolidated over the
    unconsolidated throughput (at least 1). Where the table has no row for a GPU count (16 or
    32 GPUs, for example), throughput is imputed by scaling the largest measured count
    linearly, and the spread slowdown is taken from that count; the number of imputed jobs is
    recorded in the instance's provenance.

    Parameters
    ----------
    n_jobs : int
    servers : tuple of int
    gpu_kind : {"v100", "p100", "k80"}
    trace : path-like, optional
        Defaults to the bundled trace.
    name : str, optional
    errors : list, optional
        Collect bad rows (malformed, or a job type without any throughput measurement)
        here and skip them; by default the first one raises.

    Returns
    -------
    Instance
    """
    table = gavel_throughputs()
    if gpu_kind not in table:
        raise InstanceError(f"unknown GPU kind {gpu_kind!r}", path="gpu_kind")
    cons, uncons = table[gpu_kind], table[f"{gpu_kind}_unconsolidated"]
    rows = read_gavel_trace(trace, errors=errors)[:n_jobs]
    source = str(trace) if trace is not None else "msr_seed0_ee9e8c.trace"
    cluster = Cluster(servers=servers)
    jobs = []
    imputed = 0
    t0 = rows[0].arrival_s if rows else 0.0
    for row in rows:
        try:
            if row.gpus > cluster.total_gpus:
                raise InstanceError(f"{row.gpus} GPUs exceed the cluster's {cluster.total_gpus}")
            tput, was_imputed = _throughput(cons, row.job_type, row.gpus)
        except InstanceError as exc:
            err = exc.within(path=f"line {row.line}", source=source)
            if errors is None:
                raise err from None
            errors.append(str(err))
            continue
        imputed += was_imputed
        known = [
            g for g in (row.gpus, 8, 4, 2) if g <= row.gpus and str((row.job_type, g)) in uncons
        ]
        slowdown = 1.0
        if known:
            g = known[0]
            spread = float(uncons[str((row.job_type, g))]["null"])
            slowdown = max(1.0, float(cons[str((row.job_type, g))]["null"]) / spread)
        m = _BATCH.match(row.job_type)
        features: dict[str, str | int] = {"job_type": row.job_type}
        if m:
            features["model"] = m.group("model")
            features["batch_size"] = int(m.group("bs"))
        else:
            features["model"] = row.job_type
        jobs.append(
            Job(
                id=f"gavel-{row.line}",
                release_s=round(row.arrival_s - t0, 3),
                gpus=row.gpus,
                duration_s=round(row.total_steps / tput, 3),
                spread_slowdown=round(slowdown, 4),
                features=features,
            )
        )
    if not jobs:
        raise nothing_left(source, errors)
    return Instance(
        name=name or f"gavel-philly-{len(jobs)}",
        cluster=cluster,
        jobs=tuple(jobs),
        provenance={
            "source": "Gavel msr_seed0_ee9e8c.trace + simulation_throughputs.json (MIT)",
            "gpu_kind": gpu_kind,
            "rows": len(rows),
            "rows_skipped": len(errors) if errors is not None else 0,
            "duration": "total_steps / consolidated throughput",
            "spread_slowdown": "consolidated / unconsolidated throughput, >= 1",
            "imputed_throughputs": imputed,
            "imputation": "missing GPU counts scaled linearly from the largest measured count",
        },
    )
