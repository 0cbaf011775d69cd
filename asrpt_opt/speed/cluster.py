"""Job speed for simulations with DNN jobs: the worker-graph iteration-time model."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from asrpt_opt.errors import ModelError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Job, Parallelism
from asrpt_opt.model.workers import WorkerGraph, worker_graph
from asrpt_opt.placement.consolidate import consolidate
from asrpt_opt.placement.methods import place
from asrpt_opt.speed.base import AbstractSpeed

__all__ = ["ClusterSpeed"]


@lru_cache(maxsize=256)
def _graph(model: str, dp: int, pp: int, tp: int) -> WorkerGraph:
    return worker_graph(load_model(model), Parallelism(dp=dp, pp=pp, tp=tp))


class ClusterSpeed(AbstractSpeed):
    """Speed of abstract and DNN jobs on a cluster.

    An abstract job behaves as in :class:`~asrpt_opt.speed.base.AbstractSpeed`. A DNN job's
    work is its iterations and its rate on an allocation (GPUs per server) is one over the
    iteration time of its worker graph when the workers are arranged within that allocation by
    ``method`` (default ``mincut``). Rates are cached per model, parallelism and allocation
    shape.

    Parameters
    ----------
    cluster : Cluster
        Must give both bandwidths when the instance has DNN jobs.
    method : str
        Placement method used to arrange workers inside an allocation.
    """

    def __init__(self, cluster: Cluster, *, method: str = "mincut") -> None:
        self.cluster = cluster
        self.method = method
        self._cache: dict[tuple[object, ...], float] = {}

    def _bandwidths(self, job: Job) -> tuple[float, float]:
        intra, inter = self.cluster.intra_server_gbps, self.cluster.inter_server_gbps
        if intra is None or inter is None:
            raise ModelError(
                f"job {job.id!r} is a DNN job: the cluster needs intra_server_gbps and "
                "inter_server_gbps"
            )
        return intra, inter

    def _tau(self, job: Job, counts: tuple[int, ...]) -> float:
        assert job.parallelism is not None
        assert job.model is not None
        p = job.parallelism
        key = (job.model, p.dp, p.pp, p.tp, counts, self.method)
        if key not in self._cache:
            intra, inter = self._bandwidths(job)
            wg = _graph(job.model, p.dp, p.pp, p.tp)
            res = place(
                wg,
                np.array(counts),
                method=self.method,
                intra_gbps=intra,
                inter_gbps=inter,
                seed=0,
            )
            self._cache[key] = res.iteration_time_s
        return self._cache[key]

    def work(self, job: Job) -> float:
        """Iterations of a DNN job, ``duration_s`` of an abstract one."""
        if job.is_abstract:
            return super().work(job)
        assert job.iterations is not None
        return float(job.iterations)

    def rate(self, job: Job, allocation: Allocation) -> float:
        """Iterations (or abstract work) per second on ``allocation``."""
        if job.is_abstract:
            return super().rate(job, allocation)
        # Only the shape matters: the workers fill exactly these per-server counts.
        counts = tuple(sorted((c for _, c in allocation), reverse=True))
        return 1.0 / self._tau(job, counts)

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """Rate on the best consolidated allocation of an empty cluster."""
        if job.is_abstract:
            return super().best_rate(job, cluster)
        alloc = consolidate(np.asarray(cluster.servers, dtype=np.int64), job.gpus)
        assert alloc is not None
        return self.rate(job, alloc)
