"""A scheduling instance: a cluster and the jobs submitted to it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.job import Job

__all__ = ["SPEED_MODELS", "Instance"]

#: Values of an instance's ``speed_model`` (the top-level field of the file). ``None`` (the
#: field absent) means the model's own rules: abstract jobs at rate 1 on one server and
#: ``1 / spread_slowdown`` across servers, DNN jobs at their worker graph's iteration time.
#: ``asrpt_opt.speed.SPEED_MODELS`` maps each name to its speed model.
SPEED_MODELS = ("measured-pollux",)


@dataclass(frozen=True, kw_only=True, slots=True)
class Instance:
    """A cluster and a set of jobs.

    Parameters
    ----------
    name : str
        A label (used in reports).
    cluster : Cluster
        The servers.
    jobs : tuple of Job
        The jobs, with unique ids; their order is the instance order that every result keeps.
    speed_model : str, optional
        Which speed model the jobs run at, one of :data:`SPEED_MODELS`; ``None`` (default)
        means the model's own rules (see :data:`SPEED_MODELS`).
    provenance : mapping, optional
        Free-form notes on where the instance came from and how missing data was imputed
        (an extension of ``asrpt-instance/1``; strings, numbers or booleans).

    Examples
    --------
    >>> inst = Instance(name="t", cluster=Cluster(servers=(2,)),
    ...                 jobs=(Job(id="a", release_s=0, gpus=1, duration_s=3),))
    >>> inst.n_jobs
    1
    """

    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    speed_model: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _checks.string(self.name, "name")
        if self.speed_model is not None and self.speed_model not in SPEED_MODELS:
            raise InstanceError(
                f"unknown speed model {self.speed_model!r} (known: {', '.join(SPEED_MODELS)})",
                path="speed_model",
            )
        if not isinstance(self.cluster, Cluster):
            raise InstanceError("must be a Cluster", path="cluster")
        jobs = tuple(self.jobs)
        object.__setattr__(self, "jobs", jobs)
        if not jobs:
            raise InstanceError("must list at least one job", path="jobs")
        total = self.cluster.total_gpus
        seen: dict[str, int] = {}
        for i, job in enumerate(jobs):
            if not isinstance(job, Job):
                raise InstanceError("must be a Job", path=f"jobs[{i}]")
            if job.id in seen:
                raise InstanceError(
                    f"duplicate id {job.id!r} (also jobs[{seen[job.id]}])", path=f"jobs[{i}].id"
                )
            seen[job.id] = i
            if job.gpus > total:
                raise InstanceError(
                    f"{job.gpus} exceeds the cluster's {total} GPUs", path=f"jobs[{i}].gpus"
                )
        prov = _checks.mapping(dict(self.provenance), "provenance")
        for key, value in prov.items():
            _checks.plain_value(value, f"provenance.{key}")
        dnn = next((i for i, job in enumerate(jobs) if not job.is_abstract), None)
        c = self.cluster
        if dnn is not None and (c.intra_server_gbps is None or c.inter_server_gbps is None):
            raise InstanceError(
                f"jobs[{dnn}] is a DNN job, so the cluster needs intra_server_gbps and "
                "inter_server_gbps",
                path="cluster",
            )
        object.__setattr__(self, "provenance", MappingProxyType(prov))

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def is_abstract(self) -> bool:
        """True when every job is abstract (has a duration)."""
        return all(job.is_abstract for job in self.jobs)

    def job_index(self, job_id: str) -> int:
        """Position of the job named ``job_id`` in :attr:`jobs`.

        Parameters
        ----------
        job_id : str

        Returns
        -------
        int
        """
        for i, job in enumerate(self.jobs):
            if job.id == job_id:
                return i
        raise KeyError(job_id)
