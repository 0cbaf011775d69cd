"""A job's worker graph and the iteration-time model.

Worker ``w = (d * pp + p) * tp + t`` is data-parallel replica d, pipeline stage p and
tensor-parallel rank t. Edges carry bytes per training iteration:

* **pipeline** (d,p,t)-(d,p+1,t): forward activations and backward gradients crossing the stage
  boundary, split over the TP ranks: ``2 * boundary_bytes / tp``;
* **tensor** ring over the tp ranks of (d,p): ring all-reduce of the stage's activations,
  ``tp_allreduces_per_layer`` per layer, each ring edge carrying ``2 (tp-1)/tp`` of the volume;
* **data** ring over the dp replicas of (p,t): ring all-reduce of the shard's gradients,
  ``2 (dp-1)/dp * stage_parameter_bytes / tp`` per ring edge (Patarasuk and Yuan).

Stages are contiguous in topological order and balanced by a linear partition that minimises
the largest stage's compute (exact dynamic programme over prefix sums).

The iteration time of a placement (worker -> server) is, with ``m`` micro-batches (``4 pp``
when ``pp > 1``, else 1) and link bandwidth intra- or inter-server by the endpoints:

    tau = (m + pp - 1) * max_p [ (compute_p / tp + tp_ring_p) / m + send_p / m ] + dp_ring

where ``tp_ring_p`` is the slowest TP ring of stage p (its edge bytes over its slowest link),
``send_p`` the slowest boundary transfer out of stage p, and ``dp_ring`` the slowest gradient
ring. Nothing overlaps; the GPipe bubble (pp - 1)/m is explicit.

References
----------
.. [1] P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
   workstations", JPDC 69(2):117-124, 2009.
.. [2] Y. Huang et al., "GPipe: efficient training of giant neural networks using pipeline
   parallelism", NeurIPS 2019.
.. [3] D. Narayanan et al., "Efficient large-scale language model training on GPU clusters
   using Megatron-LM", SC 2021.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError
from asrpt_opt.model.dnn import DNNModel
from asrpt_opt.model.job import Parallelism

__all__ = ["WorkerGraph", "balanced_stages", "worker_graph"]

_GB = 1e9


def balanced_stages(compute: NDArray[np.float64], parts: int) -> list[int]:
    """Split a sequence into ``parts`` contiguous non-empty chunks minimising the largest sum.

    Parameters
    ----------
    compute : ndarray
        Per-layer cost.
    parts : int

    Returns
    -------
    list of int
        The first index of each chunk (starting with 0).

    Examples
    --------
    >>> balanced_stages(np.array([1.0, 1, 1, 3]), 2)
    [0, 3]
    """
    n = compute.size
    if parts < 1 or parts > n:
        raise ModelError(f"cannot split {n} layers into {parts} pipeline stages")
    prefix = np.concatenate([[0.0], np.cumsum(compute)])
    inf = float("inf")
    # best[k][i]: smallest max-chunk cost splitting the first i layers into k chunks.
    best = np.full((parts + 1, n + 1), inf)
    cut = np.zeros((parts + 1, n + 1), dtype=np.int64)
    best[0][0] = 0.0
    for k in range(1, parts + 1):
        for i in range(k, n - (parts - k) + 1):
            j = np.arange(k - 1, i)
            cost = np.maximum(best[k - 1][j], prefix[i] - prefix[j])
            a = int(np.argmin(cost))
            best[k][i], cut[k][i] = cost[a], j[a]
    starts = []
    i = n
    for k in range(parts, 0, -1):
        i = int(cut[k][i])
        starts.append(i)
    return starts[::-1]


@dataclass(frozen=True, kw_only=True)
class WorkerGraph:
    """The workers of one DNN job and the bytes they exchange per iteration.

    Attributes
    ----------
    model : str
    parallelism : Parallelism
    graph : networkx.Graph
        Nodes 0..W-1 with ``dp``, ``pp``, ``tp``, ``compute_s``; edges with ``bytes`` and
        ``kind`` in {"pipeline", "tensor", "data"}.
    stage_compute_s, stage_parameter_bytes : ndarray
        Per pipeline stage.
    boundary_bytes : ndarray
        Activation bytes between consecutive stages.
    microbatches : int
    u, v, nbytes : ndarray
        Edge endpoints and bytes (hot copy of the graph).
    """

    model: str
    parallelism: Parallelism
    graph: nx.Graph
    stage_compute_s: NDArray[np.float64]
    stage_parameter_bytes: NDArray[np.float64]
    boundary_bytes: NDArray[np.float64]
    microbatches: int
    u: NDArray[np.int64]
    v: NDArray[np.int64]
    nbytes: NDArray[np.float64]
    kind: NDArray[np.int64]  # 0 pipeline, 1 tensor, 2 data
    group: NDArray[np.int64]  # which ring or stage boundary the edge belongs to

    @property
    def n_workers(self) -> int:
        """Number of workers (GPUs)."""
        return self.parallelism.workers

    def cross_server_bytes(self, servers: NDArray[np.int64]) -> float:
        """Bytes per iteration on edges whose endpoints sit on different servers.

        Parameters
        ----------
        servers : ndarray of int
            Server of each worker.

        Returns
        -------
        float
        """
        cut = servers[self.u] != servers[self.v]
        return float(self.nbytes[cut].sum())

    def iteration_time(
        self, servers: NDArray[np.int64], *, intra_gbps: float, inter_gbps: float
    ) -> float:
        """Seconds per training iteration when worker w runs on ``servers[w]``.

        Parameters
        ----------
        servers : ndarray of int
        intra_gbps, inter_gbps : float
            Bandwidth inside a server and between servers (GB/s).

        Returns
        -------
        float
        """
        cut = servers[self.u] != servers[self.v]
        return self.iteration_time_of_cut(cut, intra_gbps=intra_gbps, inter_gbps=inter_gbps)

    def iteration_time_of_cut(
        self, cut: NDArray[np.bool_], *, intra_gbps: float, inter_gbps: float
    ) -> float:
        """Seconds per iteration when exactly the edges marked in ``cut`` cross servers.

        Parameters
        ----------
        cut : ndarray of bool
            Per edge (aligned with :attr:`u`, :attr:`v`).
        intra_gbps, inter_gbps : float

        Returns
        -------
        float
        """
        return self._time_of(self.nbytes / (np.where(cut, inter_gbps, intra_gbps) * _GB))

    def iteration_time_of_levels(
        self, level: NDArray[np.int64], level_gbps: tuple[float, ...] | NDArray[np.float64]
    ) -> float:
        """Seconds per iteration when edge ``e`` runs at ``level_gbps[level[e]]``: on a
        cluster with tiers, every edge at the bandwidth of the slowest tier it crosses.

        Parameters
        ----------
        level : ndarray of int
            Per edge, its link level (0 inside a server;
            :meth:`~asrpt_opt.model.cluster.Cluster.link_level`).
        level_gbps : sequence of float
            GB/s of each level.

        Returns
        -------
        float
        """
        return self._time_of(self.nbytes / (np.asarray(level_gbps, dtype=np.float64)[level] * _GB))

    def _time_of(self, seconds: NDArray[np.float64]) -> float:
        par = self.parallelism
        # Each ring or boundary group moves at the pace of its slowest edge.
        slowest = np.zeros(int(self.group.max()) + 1 if self.group.size else 1)
        np.maximum.at(slowest, self.group, seconds)
        per_edge = slowest[self.group]
        m = self.microbatches
        stage = self.stage_compute_s / par.tp
        tp_ring = np.zeros(par.pp)
        send = np.zeros(par.pp)
        stage_of_u = (self.u // par.tp) % par.pp
        for kind, target in ((1, tp_ring), (0, send)):
            mask = self.kind == kind
            if mask.any():
                np.maximum.at(target, stage_of_u[mask], per_edge[mask])
        pipeline = (m + par.pp - 1) * float(np.max((stage + tp_ring + send) / m))
        data = float(per_edge[self.kind == 2].max()) if (self.kind == 2).any() else 0.0
        return pipeline + data

    def group_sizes(self) -> NDArray[np.int64]:
        """Per edge, how many workers its ring (or stage boundary) group connects.

        A ring whose workers outnumber a server's share cannot sit inside one server, so at
        least one of its edges crosses servers (:meth:`iteration_time_lower_bound`).

        Returns
        -------
        ndarray of int
        """
        members: dict[int, set[int]] = {}
        for a, b, g in zip(self.u.tolist(), self.v.tolist(), self.group.tolist(), strict=True):
            members.setdefault(g, set()).update((a, b))
        size = {g: len(m) for g, m in members.items()}
        return np.array([size[g] for g in self.group.tolist()], dtype=np.int64)

    def iteration_time_lower_bound(
        self, largest_part: int, *, intra_gbps: float, inter_gbps: float
    ) -> float:
        """A lower bound on the iteration time of every placement whose largest server share
        is ``largest_part`` workers.

        Every tensor or data ring of more than ``largest_part`` workers has an edge across
        servers (and, when ``largest_part`` is 1, every edge does), and every group moves at
        its slowest edge, whose bytes are the same throughout the group; every other edge,
        stage boundaries included (a boundary only needs each pair of workers together), is
        given the faster of the two links. The iteration time only grows with each edge's
        transfer time, so this relaxation bounds every such placement from below.

        Parameters
        ----------
        largest_part : int
        intra_gbps, inter_gbps : float

        Returns
        -------
        float
        """
        ring = self.kind != 0
        forced = (ring & (self.group_sizes() > largest_part)) | (largest_part <= 1)
        fast = max(intra_gbps, inter_gbps)
        slow = min(intra_gbps, inter_gbps)
        # Expressed with the cut-time formula: forced edges at the slow link, others fast.
        return self.iteration_time_of_cut(forced, intra_gbps=fast, inter_gbps=slow)


def worker_graph(model: DNNModel, parallelism: Parallelism) -> WorkerGraph:
    """Build the worker graph of ``model`` under ``parallelism`` (see the module docstring).

    Parameters
    ----------
    model : DNNModel
    parallelism : Parallelism

    Returns
    -------
    WorkerGraph
    """
    dp, pp, tp = parallelism.dp, parallelism.pp, parallelism.tp
    starts = balanced_stages(model.compute_s, pp)
    bounds = [*starts, len(model.order)]
    stage_compute = np.array([model.compute_s[a:b].sum() for a, b in itertools.pairwise(bounds)])
    stage_params = np.array(
        [model.parameter_bytes[a:b].sum() for a, b in itertools.pairwise(bounds)]
    )
    stage_act = np.array(
        [model.activation_bytes[a:b].sum() for a, b in itertools.pairwise(bounds)]
    )
    boundary = np.array([model.boundary_bytes(s) for s in starts[1:]])
    m = 4 * pp if pp > 1 else 1

    def wid(d: int, p: int, t: int) -> int:
        return (d * pp + p) * tp + t

    g = nx.Graph()
    for d in range(dp):
        for p in range(pp):
            for t in range(tp):
                g.add_node(wid(d, p, t), dp=d, pp=p, tp=t, compute_s=float(stage_compute[p] / tp))
    edges: list[tuple[int, int, float, int, int]] = []
    group = 0
    for p in range(pp - 1):  # one group per boundary: a stage waits for its slowest send
        for d in range(dp):
            for t in range(tp):
                edges.append((wid(d, p, t), wid(d, p + 1, t), 2 * boundary[p] / tp, 0, group))
        group += 1

    def ring(members: list[int], per_edge: float, kind: int) -> None:
        nonlocal group
        k = len(members)
        if k > 1 and per_edge > 0:
            pairs = (
                [(members[0], members[1])]
                if k == 2
                else [(members[i], members[(i + 1) % k]) for i in range(k)]
            )
            for a, b in pairs:
                edges.append((a, b, per_edge, kind, group))
        group += 1

    for d in range(dp):
        for p in range(pp):
            volume = model.tp_allreduces_per_layer * stage_act[p]
            ring([wid(d, p, t) for t in range(tp)], 2 * (tp - 1) / tp * volume, 1)
    for p in range(pp):
        for t in range(tp):
            grads = stage_params[p] / tp
            ring([wid(d, p, t) for d in range(dp)], 2 * (dp - 1) / dp * grads, 2)
    kinds = ("pipeline", "tensor", "data")
    for a, b, nb, kind, _ in edges:
        if g.has_edge(a, b):
            g[a][b]["bytes"] += nb
        else:
            g.add_edge(a, b, bytes=nb, kind=kinds[kind])
    arr = np.array(
        [(a, b, nb, kind, grp) for a, b, nb, kind, grp in edges], dtype=np.float64
    ).reshape(-1, 5)
    return WorkerGraph(
        model=model.name,
        parallelism=parallelism,
        graph=g,
        stage_compute_s=stage_compute,
        stage_parameter_bytes=stage_params,
        boundary_bytes=boundary,
        microbatches=m,
        u=arr[:, 0].astype(np.int64),
        v=arr[:, 1].astype(np.int64),
        nbytes=arr[:, 2],
        kind=arr[:, 3].astype(np.int64),
        group=arr[:, 4].astype(np.int64),
    )
