"""The speed-model protocol and the speed of abstract jobs.

The simulator, the validator and the bounds measure a job's length in *work units* and ask a
speed model for the rate (work units per second) a job achieves on an allocation. For an
abstract job one work unit is one second on GPUs of a single server, so its work is
``duration_s`` and its rate is 1, or ``1 / spread_slowdown`` when its GPUs span servers.
"""

from __future__ import annotations

from typing import Protocol

from asrpt_opt.errors import ModelError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.job import Job

__all__ = ["AbstractSpeed", "PooledSpeed", "SpeedModel"]


class SpeedModel(Protocol):
    """What the simulator needs to know about job speed."""

    def work(self, job: Job) -> float:
        """True amount of work of ``job`` in work units."""

    def rate(self, job: Job, allocation: Allocation) -> float:
        """Work units per second of ``job`` on ``allocation``."""

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """Highest rate ``job`` can reach on an empty ``cluster``."""


class AbstractSpeed:
    """Speed of abstract jobs: rate 1 on one server, ``1 / spread_slowdown`` across servers.

    DNN jobs are refused with a :class:`~asrpt_opt.errors.ModelError`: their speed depends on
    the worker graph and the placement, which this model does not know.
    """

    def _check(self, job: Job) -> float:
        if job.duration_s is None:
            raise ModelError(
                f"job {job.id!r} is a DNN job (model {job.model!r}); simulating it needs the "
                "placement model's iteration-time model, and this speed model handles abstract "
                "jobs only"
            )
        return job.duration_s

    def work(self, job: Job) -> float:
        """Return ``duration_s``.

        Parameters
        ----------
        job : Job

        Returns
        -------
        float
        """
        return self._check(job)

    def rate(self, job: Job, allocation: Allocation) -> float:
        """Return 1 on one server, else ``1 / spread_slowdown``.

        Parameters
        ----------
        job : Job
        allocation : Allocation

        Returns
        -------
        float
        """
        if job.duration_s is None:  # the check inline: this runs at every start
            self._check(job)
        return 1.0 if len(allocation) == 1 else 1.0 / job.spread_slowdown

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """Return 1 when the job fits on the largest server, else ``1 / spread_slowdown``.

        Parameters
        ----------
        job : Job
        cluster : Cluster

        Returns
        -------
        float
        """
        self._check(job)
        return 1.0 if job.gpus <= cluster.max_server_gpus else 1.0 / job.spread_slowdown


class PooledSpeed(AbstractSpeed):
    """Abstract jobs on a pooled cluster: spreading across servers costs nothing (rate 1).

    The offline models' ``placement="pooled"`` treats the cluster as one pool of GPUs; their
    schedules are validated with this model.
    """

    def rate(self, job: Job, allocation: Allocation) -> float:
        """Return 1 wherever the GPUs are.

        Parameters
        ----------
        job : Job
        allocation : Allocation

        Returns
        -------
        float
        """
        self._check(job)
        return 1.0

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """Return 1.

        Parameters
        ----------
        job : Job
        cluster : Cluster

        Returns
        -------
        float
        """
        self._check(job)
        return 1.0
