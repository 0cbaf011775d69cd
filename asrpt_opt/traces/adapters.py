"""Adapters for public GPU-cluster traces: Tiresias, Philly, Helios and Alibaba PAI 2020.

Every adapter reads its format's real layout, validates each row's columns and types, and
either stops at the first bad row (``errors=None``) or reports every bad row with file, line
and reason in ``errors`` and skips it. Rows that are valid but not GPU training jobs (for
example CPU-only jobs) are counted in ``skipped``, never dropped silently.

What the traces lack is imputed the same way for all: jobs are *abstract*, with
``duration_s`` the run time the trace measured, release at the submit time (relative to the
earliest submit in the file), width the GPUs the job held; descriptive columns (user, virtual
cluster, model name, status) become features. :func:`trace_instance` records this in the
instance's provenance, so an experiment is reproducible from the instance file alone.

References
----------
.. [1] J. Gu et al., Tiresias, NSDI 2019 (simulator job CSV).
.. [2] M. Jeon et al., "Analysis of large-scale multi-tenant GPU clusters for DNN training
   workloads", USENIX ATC 2019 (Philly ``cluster_job_log``).
.. [3] Q. Hu et al., "Characterization and prediction of deep learning workloads in
   large-scale GPU datacenters", SC 2021 (Helios ``cluster_log.csv``).
.. [4] Q. Weng et al., "MLaaS in the wild: workload analysis and scheduling in large-scale
   heterogeneous GPU clusters", NSDI 2022 (Alibaba PAI 2020 tables).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from typing import Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import parse_json
from asrpt_opt.model.job import Job, shared_features
from asrpt_opt.traces._rows import csv_file, nothing_left, read_rows
from asrpt_opt.traces._rows import read_text as _read_text

__all__ = [
    "Reader",
    "TraceJob",
    "read_helios",
    "read_pai",
    "read_philly",
    "read_tiresias",
    "trace_instance",
]

logger = logging.getLogger(__name__)

# The one layout the traces use; checked before the (faster, more lenient) fromisoformat.
_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", re.ASCII)


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceJob:
    """One GPU job read from a trace (times in seconds, absolute as in the trace)."""

    line: int
    id: str
    submit_s: float
    gpus: int
    duration_s: float
    features: Mapping[str, Any] = field(default_factory=dict)


def _stamp(value: Any, column: str) -> float:
    if value is None or value == "":
        raise InstanceError(f"{column} is missing")
    text = str(value)
    try:
        if not _TIME.fullmatch(text):
            raise ValueError(text)
        # Trace times carry no zone; reading them as UTC keeps differences exact (no DST).
        return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise InstanceError(f"{column} {value!r} is not a 'YYYY-MM-DD HH:MM:SS' time") from None


def _number(value: str, column: str) -> float:
    try:
        out = float(value)
    except ValueError:
        raise InstanceError(f"{column} {value!r} is not a number") from None
    if not math.isfinite(out):
        raise InstanceError(f"{column} {value!r} is not finite")
    return out


def _gpu_count(value: str, column: str) -> int:
    count = _number(value, column)
    if count != int(count) or count < 0:
        raise InstanceError(f"{column} {value!r} is not a whole number >= 0")
    return int(count)


def _positive_duration(value: float) -> float:
    if not value > 0:
        raise InstanceError(f"run time {value!r} s is not positive")
    return value


def _width(row: list[str], n: int) -> None:
    if len(row) != n:
        raise InstanceError(f"expected {n} columns, got {len(row)}")


_TIRESIAS = (
    "job_id",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "interval",
)


def read_tiresias(
    path: str | PathLike[str],
    *,
    errors: list[str] | None = None,
    skipped: Counter[str] | None = None,
) -> list[TraceJob]:
    """Read a Tiresias simulator job CSV (``job_id,num_gpu,submit_time,iterations,model_name,
    duration,interval``).

    Parameters
    ----------
    path : path-like
    errors : list, optional
        Collect bad rows here instead of raising on the first.
    skipped : Counter, optional
        Counts of valid rows that are not GPU jobs, by reason.

    Returns
    -------
    list of TraceJob
    """
    source = str(path)
    skipped = skipped if skipped is not None else Counter()

    def parse(n: int, r: list[str]) -> TraceJob | None:
        _width(r, len(_TIRESIAS))
        gpus = _gpu_count(r[1], "num_gpu")
        if gpus == 0:
            skipped["no GPUs"] += 1
            return None
        return TraceJob(
            line=n,
            id=r[0],
            submit_s=_number(r[2], "submit_time"),
            gpus=int(gpus),
            duration_s=_positive_duration(_number(r[5], "duration")),
            features=shared_features({"model": r[4], "iterations": r[3]}),
        )

    rows = read_rows(csv_file(path, _TIRESIAS), parse, source=source, errors=errors)
    return [j for j in rows if j is not None]


def read_philly(
    path: str | PathLike[str],
    *,
    errors: list[str] | None = None,
    skipped: Counter[str] | None = None,
) -> list[TraceJob]:
    """Read Philly's ``cluster_job_log`` (a JSON list of jobs with attempts).

    A job's GPUs are those of its last attempt's ``detail`` entries and its run time is that
    attempt's ``end_time - start_time`` (earlier attempts failed and were retried). "Line" in
    messages is the job's position in the list (1-based).

    Parameters
    ----------
    path : path-like
    errors : list, optional
    skipped : Counter, optional

    Returns
    -------
    list of TraceJob
    """
    text, source = _read_text(path)
    skipped = skipped if skipped is not None else Counter()
    doc = parse_json(text, source=source)
    if not isinstance(doc, list):
        raise InstanceError("must be a JSON list of jobs", source=source)

    def parse(n: int, rec: list[Any]) -> TraceJob | None:
        job = rec[0]
        if not isinstance(job, dict) or "jobid" not in job:
            raise InstanceError("job must be an object with a jobid")
        attempts = job.get("attempts")
        if not isinstance(attempts, list):
            raise InstanceError("attempts must be a list")
        if not attempts:
            skipped["never started"] += 1
            return None
        last = attempts[-1]
        if not isinstance(last, dict):
            raise InstanceError("an attempt must be an object")
        detail = last.get("detail", [])
        if not isinstance(detail, list):
            raise InstanceError(f"detail must be a list of machines, got {detail!r:.40}")
        gpus = 0
        for d in detail:
            if not isinstance(d, dict) or not isinstance(d.get("gpus", []), list):
                raise InstanceError(
                    f"a detail entry must be an object with a gpus list: {d!r:.40}"
                )
            gpus += len(d.get("gpus", []))
        if gpus == 0:
            skipped["no GPUs"] += 1
            return None
        start = _stamp(last.get("start_time"), "start_time")
        end = _stamp(last.get("end_time"), "end_time")
        return TraceJob(
            line=n,
            id=str(job["jobid"]),
            submit_s=_stamp(job.get("submitted_time"), "submitted_time"),
            gpus=gpus,
            duration_s=_positive_duration(end - start),
            features=shared_features(
                {
                    "user": str(job.get("user", "")),
                    "vc": str(job.get("vc", "")),
                    "status": str(job.get("status", "")),
                }
            ),
        )

    numbered = [(n, [job]) for n, job in enumerate(doc, start=1)]
    rows = read_rows(numbered, parse, source=source, errors=errors)
    return [j for j in rows if j is not None]


_HELIOS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)


def _never_started(start_time: str, duration: str) -> bool:
    """A Helios row of a job that never ran (cancelled while queued): no start time, or a
    run time of exactly 0 s."""
    return start_time.strip() in ("", "nan", "NaN") or duration.strip() in ("0", "0.0")


def read_helios(
    path: str | PathLike[str],
    *,
    errors: list[str] | None = None,
    skipped: Counter[str] | None = None,
) -> list[TraceJob]:
    """Read a Helios ``cluster_log.csv`` (SenseTime; times ``YYYY-MM-DD HH:MM:SS``).

    Parameters
    ----------
    path : path-like
    errors : list, optional
    skipped : Counter, optional
        CPU-only jobs (``gpu_num`` 0) are counted here.

    Returns
    -------
    list of TraceJob
    """
    source = str(path)
    skipped = skipped if skipped is not None else Counter()

    def parse(n: int, r: list[str]) -> TraceJob | None:
        _width(r, len(_HELIOS))
        gpus = _gpu_count(r[3], "gpu_num")
        if gpus == 0:
            skipped["CPU-only"] += 1
            return None
        if _never_started(r[8], r[10]):
            skipped["never started"] += 1
            return None
        return TraceJob(
            line=n,
            id=r[0],
            submit_s=_stamp(r[7], "submit_time"),
            gpus=int(gpus),
            duration_s=_positive_duration(_number(r[10], "duration")),
            features=shared_features({"user": r[1], "vc": r[2], "status": r[6]}),
        )

    rows = read_rows(csv_file(path, _HELIOS), parse, source=source, errors=errors)
    return [j for j in rows if j is not None]


def read_pai(
    directory: str | PathLike[str],
    *,
    errors: list[str] | None = None,
    skipped: Counter[str] | None = None,
) -> list[TraceJob]:
    """Read Alibaba PAI 2020's ``pai_task_table.csv`` (and ``pai_job_table.csv`` if present).

    Both files are headerless. Task columns: ``job_name,task_name,inst_num,status,start_time,
    end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`` with ``plan_gpu`` in percent of a GPU per
    instance. A job holds sum(inst_num * plan_gpu / 100) GPUs over its tasks, rounded up to a
    whole GPU, from its first task start (used as release: the tables have no submit time) to
    its last task end. The job table (``job_name,inst_id,user,status,start_time,end_time``)
    adds the user.

    Parameters
    ----------
    directory : path-like
        Folder holding the two tables, or the task table itself.
    errors : list, optional
    skipped : Counter, optional

    Returns
    -------
    list of TraceJob
    """
    folder = Path(directory)
    task_path = folder / "pai_task_table.csv" if folder.is_dir() else folder
    source = str(task_path)
    skipped = skipped if skipped is not None else Counter()

    def parse(n: int, r: list[str]) -> tuple[int, str, float, float, float, str]:
        _width(r, 10)
        if r[4] == "" or r[5] == "":
            raise InstanceError("start_time and end_time are required")
        start, end = _number(r[4], "start_time"), _number(r[5], "end_time")
        inst = _number(r[2], "inst_num") if r[2] else 1.0
        plan = _number(r[8], "plan_gpu") if r[8] else 0.0
        if inst < 0 or plan < 0:
            raise InstanceError("inst_num and plan_gpu must be >= 0")
        return n, r[0], start, end, inst * plan / 100.0, r[3]

    tasks = read_rows(csv_file(task_path, None), parse, source=source, errors=errors)
    users: dict[str, str] = {}
    job_path = task_path.parent / "pai_job_table.csv"
    if job_path.exists():
        jsource = str(job_path)

        def parse_job(n: int, r: list[str]) -> tuple[str, str]:
            _width(r, 6)
            return r[0], r[2]

        users = dict(read_rows(csv_file(job_path, None), parse_job, source=jsource, errors=errors))
    jobs: dict[str, list[tuple[int, str, float, float, float, str]]] = {}
    for task in tasks:
        jobs.setdefault(task[1], []).append(task)
    out = []
    for name, parts in jobs.items():
        gpus = math.ceil(sum(p[4] for p in parts) - 1e-9)
        if gpus <= 0:
            skipped["no GPUs"] += 1
            continue
        start = min(p[2] for p in parts)
        end = max(p[3] for p in parts)
        line = min(p[0] for p in parts)
        if not end > start:
            msg = f"{source}: line {line}: job {name!r} runs {end - start!r} s"
            if errors is None:
                raise InstanceError(msg)
            errors.append(msg)
            continue
        out.append(
            TraceJob(
                line=line,
                id=name,
                submit_s=start,
                gpus=gpus,
                duration_s=end - start,
                features=shared_features({"user": users.get(name, ""), "status": parts[0][5]}),
            )
        )
    return sorted(out, key=lambda j: (j.submit_s, j.line))


#: A row reader: ``read(source, *, errors, skipped) -> list of TraceJob``.
Reader = Callable[..., list[TraceJob]]


def trace_instance(
    fmt: str,
    read: Reader,
    source: str | PathLike[str],
    *,
    servers: tuple[int, ...] = (8,) * 16,
    n_jobs: int | None = None,
    errors: list[str] | None = None,
    name: str | None = None,
) -> Instance:
    """Read a trace and build an instance of abstract jobs (see the module docstring).

    Jobs wider than the cluster are bad rows (reported, or raised without ``errors``).

    Parameters
    ----------
    fmt : str
        The format's name (for the instance's name and provenance).
    read : callable
        Its row reader (:func:`read_tiresias`, :func:`read_philly`, :func:`read_helios`,
        :func:`read_pai`); the formats are registered in
        :data:`asrpt_opt.traces.importers.TRACE_FORMATS`.
    source : path-like
    servers : tuple of int
    n_jobs : int, optional
        Keep the first N jobs by submit time.
    errors : list, optional
    name : str, optional

    Returns
    -------
    Instance
    """
    skipped: Counter[str] = Counter()
    jobs = sorted(read(source, errors=errors, skipped=skipped), key=lambda j: (j.submit_s, j.line))
    cluster = Cluster(servers=servers)
    kept = []
    for job in jobs:
        if job.gpus > cluster.total_gpus:
            msg = (
                f"{source}: line {job.line}: job {job.id!r} needs {job.gpus} GPUs, the "
                f"cluster has {cluster.total_gpus}"
            )
            if errors is None:
                raise InstanceError(msg)
            errors.append(msg)
            continue
        kept.append(job)
    kept = kept[:n_jobs] if n_jobs is not None else kept
    if not kept:
        raise nothing_left(str(source), errors, skipped)
    t0 = kept[0].submit_s
    seen: Counter[str] = Counter()
    out = []
    renamed = 0
    del jobs
    kept.reverse()
    while kept:
        job = kept.pop()  # each trace row is freed as its job is built: memory stays flat
        seen[job.id] += 1
        ident = job.id if seen[job.id] == 1 else f"{job.id}#{seen[job.id]}"
        if seen[job.id] > 1:
            renamed += 1
            logger.warning(
                "%s: line %d: job id %r appears again; imported as %r",
                source,
                job.line,
                job.id,
                ident,
            )
        out.append(
            Job(
                id=ident,
                release_s=round(job.submit_s - t0, 3),
                gpus=job.gpus,
                duration_s=round(job.duration_s, 3),
                features={k: v for k, v in job.features.items() if v != ""},
            )
        )
    provenance: dict[str, str | int] = {
        "source": f"{fmt} trace {Path(source).name}",
        "imputation": "abstract jobs: duration_s = run time measured by the trace; release = "
        "submit time relative to the first; width = GPUs held",
        "rows_skipped_bad": len(errors) if errors is not None else 0,
        "duplicate_ids_renamed": renamed,
    }
    for reason, count in sorted(skipped.items()):
        provenance[f"rows_skipped_{reason.replace(' ', '_').replace('-', '_').lower()}"] = count
    return Instance(
        name=name or f"{fmt}-{Path(source).stem}",
        cluster=cluster,
        jobs=tuple(out),
        provenance=provenance,
    )
