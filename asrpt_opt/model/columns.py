"""Abstract jobs and their schedules as columns: millions of jobs without an object each.

:class:`JobColumns` holds what an :class:`~asrpt_opt.model.instance.Instance` of abstract
jobs holds, one numpy array per field; :class:`ScheduleColumns` holds a schedule the way the
compiled simulator produces it (one row per segment, allocations in a pool). A run of 10^7
multiserver-job jobs keeps a few arrays instead of tens of millions of records
(:func:`~asrpt_opt.sim.stream.simulate_stream`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from asrpt_opt.errors import InstanceError, ScheduleError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job

__all__ = ["JobColumns", "ScheduleColumns", "jobs_from_columns"]


def _frozen(values: ArrayLike, dtype: type, name: str, n: int | None) -> NDArray[Any]:
    try:
        raw = np.asarray(values)
        whole = raw.dtype.kind in "iu" or (
            raw.dtype.kind == "f" and bool(np.all(np.isfinite(raw) & (raw == np.round(raw))))
        )
        if dtype is np.int64 and not whole:
            raise InstanceError(f"columns: {name} must be whole numbers")
        array: NDArray[Any] = np.array(raw, dtype=dtype)  # a copy: nobody else can change it
    except (TypeError, ValueError) as exc:
        raise InstanceError(f"columns: {name} must be numbers ({exc})") from None
    if array.ndim != 1 or (n is not None and array.shape[0] != n):
        raise InstanceError(f"columns: {name} must be one value per job, got shape {array.shape}")
    array.flags.writeable = False
    return array


def _first_bad(name: str, ok: NDArray[np.bool_], values: NDArray[Any], rule: str) -> None:
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise InstanceError(f"columns: {name}[{i}] = {values[i].item()!r}: {rule}")


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class JobColumns:
    """Abstract jobs as columns, in release order.

    Job ``i`` is the abstract job ``Job(id=job_id(i), release_s=release_s[i], gpus=gpus[i],
    duration_s=duration_s[i], weight=weight[i], spread_slowdown=spread_slowdown[i])``; the
    arrays are copied and read-only.

    Parameters
    ----------
    name : str
    cluster : Cluster
    release_s : array_like of float
        Finite, >= 0 and non-decreasing (the columns are in release order).
    gpus : array_like of int
        Each in [1, the cluster's GPUs].
    duration_s : array_like of float
        Finite, > 0.
    weight, spread_slowdown : array_like of float, optional
        Finite; weights > 0, slowdowns >= 1. Default 1 (no array is kept).
    provenance : mapping, optional
    """

    name: str
    cluster: Cluster
    release_s: NDArray[np.float64]
    gpus: NDArray[np.int64]
    duration_s: NDArray[np.float64]
    weight: NDArray[np.float64] | None = None
    spread_slowdown: NDArray[np.float64] | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        release = _frozen(self.release_s, np.float64, "release_s", None)
        n = release.shape[0]
        if n < 1:
            raise InstanceError("columns: at least one job is needed")
        set_(self, "release_s", release)
        set_(self, "gpus", _frozen(self.gpus, np.int64, "gpus", n))
        set_(self, "duration_s", _frozen(self.duration_s, np.float64, "duration_s", n))
        for name in ("weight", "spread_slowdown"):
            if getattr(self, name) is not None:
                set_(self, name, _frozen(getattr(self, name), np.float64, name, n))
        set_(self, "provenance", MappingProxyType(dict(self.provenance)))
        self._check_values()

    def _check_values(self) -> None:
        release, gpus, duration = self.release_s, self.gpus, self.duration_s
        _first_bad("release_s", np.isfinite(release) & (release >= 0), release, "must be >= 0")
        in_order = np.concatenate(([True], release[1:] >= release[:-1]))
        _first_bad("release_s", in_order, release, "earlier than the job before (release order)")
        total = self.cluster.total_gpus
        _first_bad("gpus", (gpus >= 1) & (gpus <= total), gpus, f"must be in [1, {total}]")
        _first_bad("duration_s", np.isfinite(duration) & (duration > 0), duration, "must be > 0")
        if self.weight is not None:
            w = self.weight
            _first_bad("weight", np.isfinite(w) & (w > 0), w, "must be > 0")
        if self.spread_slowdown is not None:
            s = self.spread_slowdown
            _first_bad("spread_slowdown", np.isfinite(s) & (s >= 1), s, "must be >= 1")

    @property
    def n_jobs(self) -> int:
        """The number of jobs."""
        return int(self.release_s.shape[0])

    def job_id(self, i: int) -> str:
        """The id job ``i`` has in :meth:`to_instance` (``j`` and its zero-padded index)."""
        return f"j{i:0{len(str(self.n_jobs - 1))}d}"

    def weights(self) -> NDArray[np.float64]:
        """Every job's weight (ones when none were given)."""
        return np.ones(self.n_jobs) if self.weight is None else self.weight

    def slowdowns(self) -> NDArray[np.float64]:
        """Every job's spread slowdown (ones when none were given)."""
        return np.ones(self.n_jobs) if self.spread_slowdown is None else self.spread_slowdown

    def best_rates(self) -> NDArray[np.float64]:
        """Every job's best rate at the abstract speed model: 1 when it fits on the largest
        server, else ``1 / spread_slowdown``."""
        fits = self.gpus <= self.cluster.max_server_gpus
        return np.where(fits, 1.0, 1.0 / self.slowdowns())

    def take(self, lo: int, hi: int) -> JobColumns:
        """Jobs ``lo`` to ``hi - 1`` as columns of their own.

        Parameters
        ----------
        lo, hi : int

        Returns
        -------
        JobColumns
        """

        def part(values: NDArray[Any] | None) -> NDArray[Any] | None:
            return None if values is None else values[lo:hi]

        return JobColumns(
            name=f"{self.name}[{lo}:{hi}]",
            cluster=self.cluster,
            release_s=self.release_s[lo:hi],
            gpus=self.gpus[lo:hi],
            duration_s=self.duration_s[lo:hi],
            weight=part(self.weight),
            spread_slowdown=part(self.spread_slowdown),
        )

    def to_instance(self) -> Instance:
        """The same jobs as an :class:`~asrpt_opt.model.instance.Instance` (one object each).

        Returns
        -------
        Instance
        """
        return Instance(
            name=self.name,
            cluster=self.cluster,
            jobs=jobs_from_columns(
                self.release_s,
                self.duration_s,
                self.gpus,
                weight=self.weight,
                spread_slowdown=self.spread_slowdown,
            ),
            provenance=self.provenance,
        )


def jobs_from_columns(
    release: NDArray[Any],
    duration: NDArray[Any],
    gpus: NDArray[Any],
    *,
    weight: NDArray[Any] | None = None,
    spread_slowdown: NDArray[Any] | None = None,
    prefix: str = "j",
) -> tuple[Job, ...]:
    """Abstract jobs from columns, with ids ``j000``, ``j001``... (zero-padded).

    Parameters
    ----------
    release, duration, gpus : ndarray
    weight, spread_slowdown : ndarray, optional
        Default 1.
    prefix : str

    Returns
    -------
    tuple of Job
    """
    n = len(duration)
    width = len(str(n - 1))
    release_list, duration_list, gpus_list = (
        np.asarray(release, dtype=np.float64).tolist(),
        np.asarray(duration, dtype=np.float64).tolist(),
        np.asarray(gpus).tolist(),
    )
    weights = [1.0] * n if weight is None else np.asarray(weight, dtype=np.float64).tolist()
    spreads = (
        [1.0] * n
        if spread_slowdown is None
        else np.asarray(spread_slowdown, dtype=np.float64).tolist()
    )
    return tuple(
        Job(
            id=f"{prefix}{i:0{width}d}",
            release_s=release_list[i],
            gpus=int(gpus_list[i]),
            duration_s=duration_list[i],
            weight=weights[i],
            spread_slowdown=spreads[i],
        )
        for i in range(n)
    )


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class ScheduleColumns:
    """A schedule of :class:`JobColumns` as arrays, the compiled simulator's output.

    Segment ``k`` runs job ``job[k]`` over ``[start_s[k], end_s[k])`` on the ``length[k]``
    allocation entries ``(server[e], count[e])`` for ``e`` from ``offset[k]``; a job's
    segments appear in time order (segments of different jobs in any order).

    Parameters
    ----------
    completion_s : ndarray of float
        One per job.
    job : ndarray of int
    start_s, end_s : ndarray of float
    offset, length : ndarray of int
    server, count : ndarray of int
        The allocation pool.
    restore_overhead_s : float
        As :class:`~asrpt_opt.model.schedule.Schedule`'s.
    """

    completion_s: NDArray[np.float64]
    job: NDArray[np.int64]
    start_s: NDArray[np.float64]
    end_s: NDArray[np.float64]
    offset: NDArray[np.int64]
    length: NDArray[np.int64]
    server: NDArray[np.int64]
    count: NDArray[np.int64]
    restore_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        m = self.job.shape[0]
        for name in ("start_s", "end_s", "offset", "length"):
            if getattr(self, name).shape != (m,):
                raise ScheduleError(f"schedule columns: {name} must have one value per segment")
        if self.server.shape != self.count.shape:
            raise ScheduleError("schedule columns: server and count must have one value each")

    def head(self, n_jobs: int) -> ScheduleColumns:
        """The schedule of the first ``n_jobs`` jobs alone (the pool is shared).

        Parameters
        ----------
        n_jobs : int

        Returns
        -------
        ScheduleColumns
        """
        keep = self.job < n_jobs
        return ScheduleColumns(
            completion_s=self.completion_s[:n_jobs],
            job=self.job[keep],
            start_s=self.start_s[keep],
            end_s=self.end_s[keep],
            offset=self.offset[keep],
            length=self.length[keep],
            server=self.server,
            count=self.count,
            restore_overhead_s=self.restore_overhead_s,
        )
