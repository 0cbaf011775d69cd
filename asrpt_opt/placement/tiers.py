"""Placement on a cluster with network tiers (racks, pods): costs, heuristics and the ILP.

The objective on tiers is the **tier-weighted cut**: every edge's bytes times the extra
seconds per byte its link level costs over a link inside a server,
``c_l = 1/g_l - 1/g_0`` (``g_l`` the bandwidth of level ``l``, :mod:`asrpt_opt.model.topology`).
It is the time the job's transfers take beyond an all-in-one-server placement, summed over
edges. It is linear in the per-tier cuts (``c_l`` telescopes into non-negative increments,
one per tier boundary an edge crosses), so an ILP proves it exactly; the modelled iteration
time takes the slowest edge of each ring instead, a maximum the ILP's linear relaxation bounds
poorly. On one tier it is the cut in bytes times a constant, so the methods agree with their
one-tier selves.

The graph heuristics go down the hierarchy (:func:`by_tiers`): the method splits the job over
the outermost domains as if each were one server holding the domain's free GPUs, then each
domain's share over its own domains, down to the servers; so the heaviest traffic stays inside
the fastest tier that can hold it. Consolidation goes down the same way: the job is put in the
smallest domain that can hold it, best fit (:func:`consolidate_tiered`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.topology import Topology
from asrpt_opt.placement.consolidate import consolidate

if TYPE_CHECKING:
    # The simulator imports this module for consolidation; graphs (networkx) load with a job.
    from asrpt_opt.model.workers import WorkerGraph

__all__ = [
    "TieredSolution",
    "by_tiers",
    "consolidate_tiered",
    "level_costs",
    "smallest_domain",
    "tier_cost_s",
    "tiered_cut_placement",
]

_GB = 1e9


def level_costs(level_gbps: Sequence[float]) -> NDArray[np.float64]:
    """Extra seconds per byte of each link level over a link inside a server.

    Parameters
    ----------
    level_gbps : sequence of float
        GB/s of each level (inside a server first), non-increasing.

    Returns
    -------
    ndarray of float
        ``c[l] = 1/g_l - 1/g_0`` (so ``c[0] == 0``).
    """
    g = np.asarray(level_gbps, dtype=np.float64) * _GB
    return 1.0 / g - 1.0 / g[0]


def tier_cost_s(
    wg: WorkerGraph, servers: NDArray[np.int64], topology: Topology, level_gbps: Sequence[float]
) -> float:
    """The tier-weighted cut of a placement: seconds per iteration its transfers take beyond
    all-inside-a-server links.

    Parameters
    ----------
    wg : WorkerGraph
    servers : ndarray of int
        Server of each worker (indices into ``topology``'s servers).
    topology : Topology
    level_gbps : sequence of float

    Returns
    -------
    float
    """
    level = topology.level_of(servers[wg.u], servers[wg.v])
    return float(np.dot(wg.nbytes, level_costs(level_gbps)[level]))


@dataclass(frozen=True, kw_only=True)
class _Part:
    """The workers of one domain and the edges among them: what a method reads of a
    :class:`~asrpt_opt.model.workers.WorkerGraph` (workers, edges, bytes, graph)."""

    n_workers: int
    u: NDArray[np.int64]
    v: NDArray[np.int64]
    nbytes: NDArray[np.float64]

    @property
    def graph(self) -> Any:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(range(self.n_workers))
        for a, b, nb in zip(self.u.tolist(), self.v.tolist(), self.nbytes.tolist(), strict=True):
            prev = g.get_edge_data(a, b, {"bytes": 0.0})["bytes"]
            g.add_edge(a, b, bytes=prev + nb)
        return g


def _part(wg: Any, workers: NDArray[np.int64]) -> _Part:
    local = np.full(wg.n_workers, -1, dtype=np.int64)
    local[workers] = np.arange(workers.size)
    keep = (local[wg.u] >= 0) & (local[wg.v] >= 0)
    return _Part(
        n_workers=int(workers.size),
        u=local[wg.u[keep]],
        v=local[wg.v[keep]],
        nbytes=wg.nbytes[keep],
    )


def by_tiers(
    method: Callable[..., Any],
    wg: WorkerGraph,
    free: NDArray[np.int64],
    topology: Topology,
    **knobs: Any,
) -> NDArray[np.int64]:
    """Run a one-tier placement method down the hierarchy, outermost tier first.

    Parameters
    ----------
    method : callable
        ``method(graph, free, **knobs)`` returning the part of each worker, where a part is a
        server (or, here, a domain standing for one).
    wg : WorkerGraph
    free : ndarray of int
        Free GPUs per server of ``topology``.
    topology : Topology
    **knobs
        Passed to ``method`` (``rng``, ``time_limit_s``).

    Returns
    -------
    ndarray of int
        Server of each worker.
    """
    return _descend(method, wg, free, list(topology.domains), knobs)


def _descend(
    method: Callable[..., Any],
    wg: Any,
    free: NDArray[np.int64],
    rows: list[NDArray[np.int64]],
    knobs: dict[str, Any],
) -> NDArray[np.int64]:
    """Place on the outermost of ``rows`` (each server's domain per tier, numbered from 0),
    then inside each domain on the tiers below."""
    if not rows:
        return np.asarray(method(wg, free, **knobs), dtype=np.int64)
    dom = rows[-1]
    room = np.bincount(dom, weights=free, minlength=int(dom.max()) + 1).astype(np.int64)
    used = np.flatnonzero(room)
    if used.size == 1:  # one domain offers every free GPU: nothing to split at this tier
        part = np.full(wg.n_workers, used[0], dtype=np.int64)
    else:
        part = np.asarray(method(wg, room, **knobs), dtype=np.int64)
    out = np.empty(wg.n_workers, dtype=np.int64)
    for d in np.unique(part).tolist():
        workers = np.flatnonzero(part == d)
        servers = np.flatnonzero(dom == d)
        # The domain's servers, with the tiers below renumbered from 0 as a subset would.
        inner = [np.unique(r[servers], return_inverse=True)[1] for r in rows[:-1]]
        local = _descend(method, _part(wg, workers), free[servers], inner, knobs)
        out[workers] = servers[local]
    return out


def smallest_domain(
    free: NDArray[np.int64], gpus: int, topology: Topology
) -> NDArray[np.int64] | None:
    """The servers of the smallest domain that can hold ``gpus``: the innermost tier with one
    that does, and in it the domain with the least free GPUs that fits (lowest index on ties).

    Parameters
    ----------
    free : ndarray of int
        Free GPUs per server.
    gpus : int
    topology : Topology

    Returns
    -------
    ndarray of int or None
        Server indices, increasing; None when no domain holds ``gpus``.
    """
    for row in topology.domains:
        room = np.bincount(row, weights=free, minlength=int(row.max()) + 1)
        room[room < gpus] = np.inf
        best = int(room.argmin())
        if room[best] != np.inf:
            return np.flatnonzero(row == best)
    return None


def consolidate_tiered(
    free: NDArray[np.int64], gpus: int, topology: Topology | None
) -> Allocation | None:
    """Consolidation down the hierarchy: the job goes into the smallest domain that can hold
    it (:func:`smallest_domain`), and inside it onto the fewest servers, best fit
    (:func:`~asrpt_opt.placement.consolidate.consolidate`, which it is without tiers).

    Parameters
    ----------
    free : ndarray of int
        Free GPUs per server.
    gpus : int
    topology : Topology or None

    Returns
    -------
    Allocation or None
        None when fewer than ``gpus`` GPUs are free.
    """
    if topology is None or int(free.max(initial=0)) >= gpus:
        return consolidate(free, gpus)
    servers = smallest_domain(free, gpus, topology)
    if servers is None:
        return consolidate(free, gpus)
    inside = consolidate(free[servers], gpus)
    assert inside is not None
    return tuple((int(servers[s]), c) for s, c in inside)


@dataclass(frozen=True, kw_only=True)
class TieredSolution:
    """What the tiered ILP found.

    Attributes
    ----------
    assignment : ndarray of int
        Server of each worker (never worse than the hint).
    optimal : bool
        Proven to minimise the tier-weighted cut.
    lower_bound_s : float
        A proven lower bound on the tier-weighted cut of every placement.
    """

    assignment: NDArray[np.int64]
    optimal: bool
    lower_bound_s: float


def tiered_cut_placement(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    topology: Topology,
    level_gbps: Sequence[float],
    *,
    hint: NDArray[np.int64] | None = None,
    time_limit_s: float = 10.0,
) -> TieredSolution:
    """Minimise the tier-weighted cut exactly (CP-SAT).

    ``x[w,s]`` puts worker w on server s; for each tier boundary k (servers, then each tier's
    domains) ``y[k,e] >= sum_{s in d} x[u,s] - sum_{s in d} x[v,s]`` for every domain d marks
    edge e = (u, v) as crossing it. The objective is ``sum_k (c_k - c_{k-1}) bytes_e y[k,e]``
    (:func:`level_costs`), scaled to integers; the proven bound is corrected for that rounding.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
    topology : Topology
    level_gbps : sequence of float
    hint : ndarray of int, optional
        A feasible assignment to start from.
    time_limit_s : float
        For building the model and solving it.

    Returns
    -------
    TieredSolution

    References
    ----------
    .. [1] L. Perron, F. Didier, CP-SAT, Google OR-Tools.
    """
    from ortools.sat.python import cp_model

    from asrpt_opt.placement.cpsat import merged_edges, solve_interruptibly

    t0 = time.perf_counter()  # building a large model takes seconds of the limit too
    # Data
    n, servers = wg.n_workers, [s for s in range(free.size) if free[s] > 0]
    steps = np.diff(level_costs(level_gbps))  # the extra cost of crossing boundary k + 1
    boundaries = [np.arange(free.size), *topology.domains]
    pairs = merged_edges(wg)
    scale = _scale(pairs, steps)
    # Variables
    m = cp_model.CpModel()
    x = {(w, s): m.new_bool_var(f"x_{w}_{s}") for w in range(n) for s in servers}
    # Constraints
    _assign(m, x, n, servers, free)
    terms, crossing = _crossings(m, x, servers, boundaries, pairs, steps, scale)
    # Objective
    m.minimize(sum(terms))
    if hint is not None:
        _hint(m, x, crossing, boundaries, hint)
    # Solve
    solver = cp_model.CpSolver()
    # Reading the solution back of a large model takes a while too: keep a tenth for it.
    left = 0.9 * (time_limit_s - (time.perf_counter() - t0))
    solver.parameters.max_time_in_seconds = max(0.01, left)
    solver.parameters.num_workers = 1
    code = solve_interruptibly(solver, m)
    # Extract
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        assert hint is not None, "CP-SAT found no placement of a job that fits"
        return TieredSolution(assignment=hint, optimal=False, lower_bound_s=0.0)
    out = np.array(
        [next(s for s in servers if solver.value(x[w, s])) for w in range(n)], dtype=np.int64
    )
    if hint is not None and tier_cost_s(wg, hint, topology, level_gbps) < tier_cost_s(
        wg, out, topology, level_gbps
    ):
        out = hint
    # Each scaled coefficient is off by at most 1/2: the bound on the true cost loses that.
    slack = 0.5 * len(terms) / scale
    bound = max(0.0, solver.best_objective_bound / scale - slack)
    return TieredSolution(assignment=out, optimal=code == cp_model.OPTIMAL, lower_bound_s=bound)


def _scale(pairs: dict[tuple[int, int], float], steps: NDArray[np.float64]) -> float:
    # The largest coefficient becomes about 2**40: the sum over edges stays far below 2**63.
    top = max(pairs.values(), default=0.0) * float(steps.max(initial=0.0))
    return 2.0**40 / top if top > 0 else 1.0


def _assign(m: Any, x: dict[tuple[int, int], Any], n: int, servers: list[int], free: Any) -> None:
    for w in range(n):
        m.add_exactly_one(x[w, s] for s in servers)
    for s in servers:
        m.add(sum(x[w, s] for w in range(n)) <= int(free[s]))


def _crossings(
    m: Any,
    x: dict[tuple[int, int], Any],
    servers: list[int],
    boundaries: list[NDArray[np.int64]],
    pairs: dict[tuple[int, int], float],
    steps: NDArray[np.float64],
    scale: float,
) -> tuple[list[Any], dict[tuple[int, int, int], Any]]:
    terms, crossing = [], {}
    for k, row in enumerate(boundaries):
        members: dict[int, list[int]] = {}
        for s in servers:
            members.setdefault(int(row[s]), []).append(s)
        for (a, b), nb in pairs.items():
            coeff = round(nb * float(steps[k]) * scale)
            if coeff <= 0:
                continue
            y = m.new_bool_var(f"y_{k}_{a}_{b}")
            for group in members.values():
                m.add(y >= sum(x[a, s] for s in group) - sum(x[b, s] for s in group))
            crossing[k, a, b] = y
            terms.append(coeff * y)
    return terms, crossing


def _hint(
    m: Any,
    x: dict[tuple[int, int], Any],
    crossing: dict[tuple[int, int, int], Any],
    boundaries: list[NDArray[np.int64]],
    hint: NDArray[np.int64],
) -> None:
    for (w, s), var in x.items():
        m.add_hint(var, int(hint[w]) == s)
    for (k, a, b), y in crossing.items():
        row = boundaries[k]
        m.add_hint(y, int(row[hint[a]]) != int(row[hint[b]]))
