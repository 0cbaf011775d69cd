"""Job speed for simulations with DNN jobs: the worker-graph iteration-time model."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asrpt_opt.errors import ModelError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Job, Parallelism
from asrpt_opt.model.workers import WorkerGraph, worker_graph
from asrpt_opt.placement.methods import place
from asrpt_opt.speed._shapes import fits, shapes
from asrpt_opt.speed.base import AbstractSpeed

__all__ = ["SHAPE_BUDGET", "BestShape", "ClusterSpeed", "worker_graph_of"]

logger = logging.getLogger(__name__)

#: Allocations whose rate a tiered cluster's speed model remembers before starting afresh.
_SEEN_LIMIT = 1 << 18

#: How many allocation shapes :meth:`ClusterSpeed.best_shape` evaluates at most per job type.
SHAPE_BUDGET = 400


@dataclass(frozen=True, kw_only=True, slots=True)
class BestShape:
    """The fastest allocation shape of a job found on an empty cluster.

    Attributes
    ----------
    rate : float
        Iterations per second: the best rate over every shape when ``exact``, otherwise a
        proven upper bound on it.
    counts : tuple of int
        The fastest shape evaluated (GPUs per server, decreasing).
    exact : bool
        True when the search proved ``rate`` is the maximum (and ``counts`` attain it).
    """

    rate: float
    counts: tuple[int, ...]
    exact: bool


@lru_cache(maxsize=256)
def _graph(model: str, dp: int, pp: int, tp: int) -> WorkerGraph:
    return worker_graph(load_model(model), Parallelism(dp=dp, pp=pp, tp=tp))


def worker_graph_of(job: Job) -> WorkerGraph:
    """The worker graph of a DNN job (cached per model and parallelism).

    Parameters
    ----------
    job : Job
        A DNN job.

    Returns
    -------
    WorkerGraph
    """
    if job.model is None or job.parallelism is None:
        raise ModelError(f"job {job.id!r} is abstract: it has no worker graph")
    p = job.parallelism
    return _graph(job.model, p.dp, p.pp, p.tp)


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
        self._cache: dict[tuple[object, ...], tuple[float, float]] = {}
        self._best: dict[tuple[object, ...], BestShape] = {}
        self._levels: dict[tuple[object, ...], tuple[float, ...]] = {}
        self._seen: dict[tuple[object, ...], tuple[float, float]] = {}
        topology = cluster.topology
        self._rack: list[int] = [] if topology is None else topology.domains[0].tolist()

    def _bandwidths(self, job: Job) -> tuple[float, float]:
        """Inside a server, and between servers of one domain of the first tier (of any two
        servers without tiers): the one-tier model a shape is evaluated in."""
        intra, inter = self.cluster.intra_server_gbps, self.cluster.inter_server_gbps
        if intra is None or inter is None:
            raise ModelError(
                f"job {job.id!r} is a DNN job: the cluster needs intra_server_gbps and "
                "inter_server_gbps"
            )
        topology = self.cluster.topology
        return intra, inter if topology is None else topology.tiers[0].gbps

    def _tiered(self, job: Job, key: tuple[object, ...]) -> tuple[float, float]:
        """(iteration time, cross-server bytes) of a tiered shape key, the workers arranged by
        ``method`` down the tiers; never faster than the same counts inside one domain of the
        first tier (cached)."""
        assert job.parallelism is not None
        assert job.model is not None
        p = job.parallelism
        topology = self.cluster.topology
        assert topology is not None
        cache_key = (job.model, p.dp, p.pp, p.tp, key, self.method, "tiers")
        found = self._cache.get(cache_key)
        if found is None:
            counts, sub = topology.of_shape(key)
            intra, inter = self.cluster.level_gbps[0], self.cluster.level_gbps[-1]
            res = place(
                _graph(job.model, p.dp, p.pp, p.tp),
                np.array(counts),
                method=self.method,
                intra_gbps=intra,
                inter_gbps=inter,
                seed=0,
                topology=sub,
            )
            # The heuristics may arrange a spread job better than the same GPUs in one rack;
            # an optimal arrangement never would, so the model keeps tiers monotone.
            flat = self._arranged(job, tuple(sorted(counts, reverse=True)))
            tau = max(res.iteration_time_s, flat[0])
            found = self._cache[cache_key] = (tau, res.cross_server_bytes)
            self._levels[cache_key] = tuple(b for _, b in res.cross_tier_bytes)
        return found

    def cross_tier_bytes(self, job: Job, allocation: Allocation) -> tuple[float, ...]:
        """Bytes per iteration a DNN job sends over each link level above the server (between
        servers of one rack, between racks of one pod, ..., across the spine); one entry,
        the cross-server bytes, on a cluster without tiers; zeros for an abstract job.

        Parameters
        ----------
        job : Job
        allocation : Allocation

        Returns
        -------
        tuple of float
        """
        topology = self.cluster.topology
        levels = 1 if topology is None else len(topology.tiers) + 1
        if job.is_abstract:
            return (0.0,) * levels
        cross = self._of(job, allocation)[1]
        key = self._nested(allocation)
        if key is None:
            return (cross,) + (0.0,) * (levels - 1)
        assert job.parallelism is not None
        p = job.parallelism
        return self._levels[(job.model, p.dp, p.pp, p.tp, key, self.method, "tiers")]

    def _nested(self, allocation: Allocation) -> tuple[object, ...] | None:
        """The allocation's shape nested by tiers, or None when it lies inside one domain of
        the first tier, where the one-tier model at that tier's bandwidth applies."""
        topology = self.cluster.topology
        if topology is None or len({self._rack[s] for s, _ in allocation}) == 1:
            return None
        return topology.shape_key(*zip(*allocation, strict=True))

    def _of(self, job: Job, allocation: Allocation) -> tuple[float, float]:
        if self.cluster.topology is None:
            return self._arranged(job, tuple(sorted((c for _, c in allocation), reverse=True)))
        # With tiers the shape takes a nesting per call: remember allocations already seen.
        assert job.parallelism is not None
        p = job.parallelism
        seen = (job.model, p.dp, p.pp, p.tp, allocation)
        found = self._seen.get(seen)
        if found is None:
            key = self._nested(allocation)
            if key is None:
                counts = tuple(sorted((c for _, c in allocation), reverse=True))
                found = self._arranged(job, counts)
            else:
                found = self._tiered(job, key)
            if len(self._seen) >= _SEEN_LIMIT:
                self._seen.clear()  # bounded memory on long runs; a miss only costs time
            self._seen[seen] = found
        return found

    def _arranged(self, job: Job, counts: tuple[int, ...]) -> tuple[float, float]:
        """(iteration time, cross-server bytes per iteration) with the workers arranged by
        ``method`` inside per-server ``counts``; cached."""
        assert job.parallelism is not None
        assert job.model is not None
        p = job.parallelism
        key = (job.model, p.dp, p.pp, p.tp, counts, self.method)
        found = self._cache.get(key)
        if found is None:
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
            found = self._cache[key] = (res.iteration_time_s, res.cross_server_bytes)
        return found

    def _tau(self, job: Job, counts: tuple[int, ...]) -> float:
        return self._arranged(job, counts)[0]

    def cross_server_bytes(self, job: Job, allocation: Allocation) -> float:
        """Bytes per iteration a DNN job sends across servers on ``allocation`` (0 for an
        abstract job).

        Parameters
        ----------
        job : Job
        allocation : Allocation

        Returns
        -------
        float
        """
        if job.is_abstract:
            return 0.0
        return self._of(job, allocation)[1]

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
        # Only the shape (nested by tiers) matters: the workers fill exactly these counts.
        return 1.0 / self._of(job, allocation)[0]

    def best_rate(self, job: Job, cluster: Cluster) -> float:
        """The highest rate ``job`` reaches on any allocation that fits an empty ``cluster``.

        See :meth:`best_shape`: the maximum over every shape when the search completes,
        otherwise a proven upper bound on it; either way no allocation runs faster, so the
        lengths built on it bound every schedule from below.

        Parameters
        ----------
        job : Job
        cluster : Cluster

        Returns
        -------
        float
        """
        if job.is_abstract:
            return super().best_rate(job, cluster)
        return self.best_shape(job, cluster).rate

    def best_shape(self, job: Job, cluster: Cluster) -> BestShape:
        """Search the allocation shapes of a DNN job for the fastest (branch and bound).

        On a cluster with tiers, shapes are evaluated as if inside one domain of the first
        tier (a rack), which no placement across racks beats (:meth:`rate` keeps the model
        monotone); the result is exact when the best shape fits in one rack, otherwise a
        proven upper bound.

        Shapes are grouped by their largest per-server count m; every shape of a group is
        at least as slow as :meth:`~asrpt_opt.model.workers.WorkerGraph.iteration_time_lower_bound`
        of m. Groups are visited by increasing bound and skipped once the bound reaches the
        best iteration time found, so the search is exact when it completes; a job that fits
        on one server is settled by its first shape (all links intra-server, the global lower
        bound when intra >= inter). After :data:`SHAPE_BUDGET` evaluated shapes the search stops
        and reports the larger of the best rate found and one over the bound of what is left:
        still no allocation is faster.

        Parameters
        ----------
        job : Job
            A DNN job.
        cluster : Cluster

        Returns
        -------
        BestShape
        """
        assert job.parallelism is not None
        assert job.model is not None
        p = job.parallelism
        servers = cluster.servers_desc
        key = (job.model, p.dp, p.pp, p.tp, job.gpus, servers, self.method)
        found = self._best.get(key)
        if found is None:
            found = self._search(job, servers)
            if found.exact and not _fits_one_domain(found.counts, cluster):
                # Searched at the first tier's bandwidth: spread wider, it is only a bound.
                found = BestShape(rate=found.rate, counts=found.counts, exact=False)
            self._best[key] = found
        return found

    def _search(self, job: Job, servers: tuple[int, ...]) -> BestShape:
        assert job.parallelism is not None
        assert job.model is not None
        p = job.parallelism
        intra, inter = self._bandwidths(job)
        wg = _graph(job.model, p.dp, p.pp, p.tp)
        q = job.gpus
        bounds = {
            m: wg.iteration_time_lower_bound(m, intra_gbps=intra, inter_gbps=inter)
            for m in range(1, min(q, servers[0]) + 1)
        }
        best_tau = float("inf")
        best_counts: tuple[int, ...] = ()
        evaluated = 0
        for m in sorted(bounds, key=lambda m: (bounds[m], -m)):
            if bounds[m] >= best_tau:
                break  # no shape left can be faster
            for counts in shapes(q, m, servers):
                if evaluated >= SHAPE_BUDGET:
                    rate = max(1.0 / best_tau, 1.0 / bounds[m])
                    logger.debug("best shape of %s not proven: rate bound %.6g", job.id, rate)
                    return BestShape(rate=rate, counts=best_counts, exact=False)
                evaluated += 1
                tau = self._tau(job, counts)
                if tau < best_tau:
                    best_tau, best_counts = tau, counts
                if best_tau <= bounds[m]:
                    break  # this group's bound is met: nothing in it is faster
        return BestShape(rate=1.0 / best_tau, counts=best_counts, exact=True)


def _fits_one_domain(counts: tuple[int, ...], cluster: Cluster) -> bool:
    """Whether per-server ``counts`` fit inside one domain of the first tier (always, when
    the cluster has no tiers or every link between servers has the first tier's speed)."""
    if cluster.topology is None or len(counts) <= 1 or len(set(cluster.level_gbps[1:])) == 1:
        return True
    row = cluster.topology.domains[0]
    sizes = np.asarray(cluster.servers)
    need = tuple(sorted(counts, reverse=True))
    return any(
        fits(need, tuple(sorted(sizes[row == d].tolist(), reverse=True)))
        for d in range(int(row.max()) + 1)
    )
