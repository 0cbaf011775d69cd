"""Per-job tables of a simulation: one row per job, as researchers load them into pandas.

:func:`per_job_table` computes the columns from the validated schedule (never from the
simulator's internal state); :func:`write_table` writes any table as CSV (the standard
library) or Parquet (pyarrow), chosen by the file's extension; :func:`to_frame` turns one into
a pandas DataFrame. pandas and pyarrow are optional: ``pip install "asrpt-opt[tables]"``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.io import write_atomically
from asrpt_opt.model.schedule import Schedule
from asrpt_opt.sim.metrics import segment_costs
from asrpt_opt.speed.base import AbstractSpeed, SpeedModel

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = ["PER_JOB_COLUMNS", "Table", "per_job_table", "to_frame", "write_table"]

#: The columns of a per-job table, in order (docs/output-format.md describes each).
PER_JOB_COLUMNS = (
    "policy",
    "id",
    "release_s",
    "first_start_s",
    "completion_s",
    "jct_s",
    "gpus",
    "weight",
    "work",
    "predicted_work",
    "preemptions",
    "servers_used",
    "placement_slowdown",
    "cross_server_bytes",
)

#: Table formats :func:`write_table` writes, by file extension.
TABLE_FORMATS = {".csv": "csv", ".parquet": "parquet"}


@dataclass(frozen=True, kw_only=True)
class Table:
    """A table as named columns of equal length.

    Attributes
    ----------
    columns : tuple of str
        Column names, in order.
    rows : tuple of tuple
        One tuple per row, in column order.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __post_init__(self) -> None:
        for k, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"row {k} has {len(row)} values for {len(self.columns)} columns")

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``."""
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)


def per_job_table(
    instance: Instance,
    schedule: Schedule,
    *,
    policy: str,
    predicted_work: Sequence[float] | NDArray[Any] | None = None,
    speed: SpeedModel | None = None,
) -> Table:
    """One row per job of a schedule (columns :data:`PER_JOB_COLUMNS`).

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
        A schedule of ``instance`` (validated).
    policy : str
        Written in the ``policy`` column.
    predicted_work : sequence of float, optional
        The prediction each job received (work units); empty cells when None.
    speed : SpeedModel, optional
        The speed model the schedule ran under (default :class:`AbstractSpeed`).

    Returns
    -------
    Table
        ``work`` is in the speed model's work units (seconds on one server for abstract
        jobs, iterations for DNN jobs); ``placement_slowdown`` is the GPU-time-weighted best
        rate over the rate the job ran at (1 when it always ran as fast as it can);
        ``cross_server_bytes`` is empty for jobs without a worker graph.
    """
    speed = speed or AbstractSpeed()
    n = instance.n_jobs
    held = [0.0] * n
    slowed = [0.0] * n
    sent: list[float | None] = [None] * n
    for j, gpu_s, slow_s, nbytes in segment_costs(instance, schedule, speed):
        held[j] += gpu_s
        slowed[j] += slow_s
        if nbytes is not None:
            sent[j] = (sent[j] or 0.0) + nbytes
    rows = []
    for j, (job, run) in enumerate(zip(instance.jobs, schedule.runs, strict=True)):
        servers = {s for seg in run.segments for s, _ in seg.allocation}
        predicted = None if predicted_work is None else float(predicted_work[j])
        rows.append(
            (
                policy,
                job.id,
                job.release_s,
                run.segments[0].start_s,
                run.completion_s,
                run.completion_s - job.release_s,
                job.gpus,
                job.weight,
                float(speed.work(job)),
                predicted,
                len(run.segments) - 1,
                len(servers),
                slowed[j] / held[j] if held[j] > 0 else 1.0,
                sent[j],
            )
        )
    return Table(columns=PER_JOB_COLUMNS, rows=tuple(rows))


def concat(tables: Sequence[Table]) -> Table:
    """The rows of several tables with the same columns, one after the other."""
    if not tables:
        raise ValueError("no table to concatenate")
    columns = tables[0].columns
    for t in tables[1:]:
        if t.columns != columns:
            raise ValueError("tables with different columns")
    return Table(columns=columns, rows=tuple(row for t in tables for row in t.rows))


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise UsageError(
            'tables as DataFrames need pandas: pip install "asrpt-opt[tables]"'
        ) from None
    return pandas


def to_frame(table: Table, *, dtypes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The table as a pandas DataFrame (``pip install "asrpt-opt[tables]"``).

    Parameters
    ----------
    table : Table
    dtypes : mapping, optional
        Column name to pandas dtype; by default pandas infers them (missing values are NaN
        in float columns).

    Returns
    -------
    pandas.DataFrame
    """
    pd = _pandas()
    frame = pd.DataFrame.from_records(list(table.rows), columns=list(table.columns))
    for name, dtype in (dtypes or {}).items():
        frame[name] = frame[name].astype(dtype)
    return frame


def table_format(path: str | PathLike[str]) -> str:
    """``"csv"`` or ``"parquet"`` from the file's extension, or a :class:`UsageError`."""
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise UsageError(
            f"{path}: a table is written as .csv or .parquet, not {suffix or 'no extension'!r}"
        )
    return TABLE_FORMATS[suffix]


def write_table(table: Table, path: str | PathLike[str]) -> None:
    """Write a table atomically as CSV or Parquet, by the file's extension.

    CSV needs nothing beyond Python (missing values are empty cells, floats written with
    ``repr`` so they read back exactly); Parquet needs pandas and pyarrow
    (``pip install "asrpt-opt[tables]"``).

    Parameters
    ----------
    table : Table
    path : path-like
        Ending in ``.csv`` or ``.parquet``.
    """
    kind = table_format(path)
    if kind == "parquet":
        frame = to_frame(table)
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError(
                f'{path}: Parquet needs pyarrow: pip install "asrpt-opt[tables]"'
            ) from None
        write_atomically(path, lambda tmp: frame.to_parquet(tmp, index=False))
        return

    def cell(value: Any) -> Any:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return repr(value) if isinstance(value, float) else value

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(table.columns)
            out.writerows([cell(v) for v in row] for row in table.rows)

    write_atomically(path, write)
