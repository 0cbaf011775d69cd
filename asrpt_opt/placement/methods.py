"""Placement of a job's worker graph on free GPUs: one front door, several methods.

Every method returns a server for each worker; :func:`place` validates it (each worker placed
once, no server above its free GPUs) and reports the cross-server bytes per iteration (the
weighted cut), the modelled iteration time, optimality and wall time.

References
----------
.. [1] B. W. Kernighan, S. Lin, "An efficient heuristic procedure for partitioning graphs",
   Bell System Technical Journal 49(2):291-307, 1970.
.. [2] G. Karypis, V. Kumar, "A fast and high quality multilevel scheme for partitioning
   irregular graphs", SIAM J. Scientific Computing 20(1):359-392, 1998 (graph growing).
.. [3] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
   NSDI 2019 (consolidation).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError, lookup
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.notices import compile_once
from asrpt_opt.placement.consolidate import consolidate
from asrpt_opt.placement.partitioners import kahip_placement, metis_placement
from asrpt_opt.placement.result import Certified, PlacementResult, counts_of

if TYPE_CHECKING:
    import networkx as nx

    from asrpt_opt.model.topology import Topology
    from asrpt_opt.model.workers import WorkerGraph

__all__ = [
    "METHODS",
    "TIER_BLIND",
    "Certified",
    "PlacementResult",
    "counts_of",
    "make_method",
    "place",
    "warm_up_kernels",
]

logger = logging.getLogger(__name__)

Method = Callable[..., "NDArray[np.int64] | Certified"]


def _kernels() -> ModuleType:
    # The numba kernels compile (or load from numba's cache) on first use, not on import.
    from asrpt_opt.placement import _kernels as kernels

    warm_up_kernels()
    return kernels


def warm_up_kernels() -> float:
    """Compile the placement kernels (or load them from numba's cache) once per process, on a
    tiny job, before any timed search could pay for it.

    :func:`place` calls this before starting its clock, so a result never depends on whether
    the cache was warm. When it takes longer than a second (a cold cache: the first run
    after installing), a NOTICE says so while it works
    (:func:`~asrpt_opt.notices.compile_once`).

    Returns
    -------
    float
        Seconds it took (0 when already done in this process).
    """
    return compile_once("the placement kernels", "20-60 s", _compile_kernels, logger)


def _compile_kernels() -> None:
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.job import Parallelism
    from asrpt_opt.model.workers import worker_graph
    from asrpt_opt.placement.branch import branch_and_price

    job = worker_graph(load_model("resnet50"), Parallelism(dp=2, pp=2, tp=1))
    free = np.array([3, 3], dtype=np.int64)
    start = _mincut(job, free)
    _kl(job, free, rng=np.random.default_rng(0))
    _greedy(job, free)
    branch_and_price(job, free, start, time_limit_s=5.0)


def _fill(allocation: Allocation, order: Sequence[int], n: int) -> NDArray[np.int64]:
    out = np.empty(n, dtype=np.int64)
    slots = [s for s, c in allocation for _ in range(c)]
    for w, s in zip(order, slots, strict=True):
        out[w] = s
    return out


def _consolidated_counts(wg: WorkerGraph, free: NDArray[np.int64]) -> Allocation:
    alloc = consolidate(free, wg.n_workers)
    if alloc is None:
        raise ModelError(f"{wg.n_workers} workers do not fit in {int(free.sum())} free GPUs")
    return alloc


def _consolidate(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """Fewest servers, best fit; workers in index order (Tiresias' default)."""
    return _fill(_consolidated_counts(wg, free), range(wg.n_workers), wg.n_workers)


def _consolidate_flat(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """As ``consolidate``, but blind to network tiers: fewest servers, best fit over the
    whole cluster (Tiresias' rule as published; on one tier the two are the same)."""
    return _consolidate(wg, free)


def _spread(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """Round-robin over the servers with free GPUs: as many servers as possible."""
    left = free.copy()
    out = np.empty(wg.n_workers, dtype=np.int64)
    s = 0
    for w in range(wg.n_workers):
        while left[s % left.size] == 0:
            s += 1
        out[w] = s % left.size
        left[s % left.size] -= 1
        s += 1
    return out


def _random(
    wg: WorkerGraph, free: NDArray[np.int64], *, rng: np.random.Generator, **_: Any
) -> NDArray[np.int64]:
    """Uniformly random free GPUs."""
    slots = np.repeat(np.arange(free.size), free)
    return np.sort(rng.choice(slots, size=wg.n_workers, replace=False))


def _servers_and_counts(
    wg: WorkerGraph, free: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The consolidated allocation, largest share first (the order graph growing fills)."""
    alloc = sorted(_consolidated_counts(wg, free), key=lambda sc: (-sc[1], sc[0]))
    return (
        np.array([s for s, _ in alloc], dtype=np.int64),
        np.array([c for _, c in alloc], dtype=np.int64),
    )


def _weights(wg: WorkerGraph) -> NDArray[np.float64]:
    out: NDArray[np.float64] = _kernels().weight_matrix(wg.n_workers, wg.u, wg.v, wg.nbytes)
    return out


def _greedy(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """Graph growing along heavy edges into the consolidated server counts."""
    servers, counts = _servers_and_counts(wg, free)
    out: NDArray[np.int64] = _kernels().grow(_weights(wg), servers, counts)
    return out


def _bisect(
    g: nx.Graph, nodes: list[int], parts: list[tuple[int, int]], rng: np.random.Generator
) -> dict[int, int]:
    if len(parts) == 1:
        return dict.fromkeys(nodes, parts[0][0])
    half = len(parts) // 2
    left, right = parts[:half], parts[half:]
    size = sum(c for _, c in left)
    sub = g.subgraph(nodes)
    a, b = set(nodes[:size]), set(nodes[size:])
    if a and b:
        import networkx as nx

        a, b = nx.algorithms.community.kernighan_lin_bisection(
            sub, partition=(a, b), weight="bytes", seed=int(rng.integers(2**31))
        )
        if len(a) != size:  # networkx may return the two sides in either order
            a, b = b, a
    out = _bisect(g, sorted(a), left, rng)
    out.update(_bisect(g, sorted(b), right, rng))
    return out


def _kl(
    wg: WorkerGraph, free: NDArray[np.int64], *, rng: np.random.Generator, **_: Any
) -> NDArray[np.int64]:
    """Recursive Kernighan-Lin bisection into the consolidated server counts (halving the
    list of servers at each level), then move/swap refinement."""
    alloc = list(_consolidated_counts(wg, free))
    where = _bisect(wg.graph, list(range(wg.n_workers)), alloc, rng)
    start = np.array([where[w] for w in range(wg.n_workers)], dtype=np.int64)
    out: NDArray[np.int64] = _kernels().refine(_weights(wg), free, start)
    return out


def _mincut(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """Multilevel multi-start min-cut heuristic: heavy-edge merge trees capped at every
    cluster size from 1 to the largest room, packed best-fit (a cluster that fits nowhere is
    split along its merge tree), and graph growing, each refined by a multilevel V-cycle of
    move/swap local search (:func:`asrpt_opt.placement._kernels.refine`). The smallest cut
    wins. Deterministic."""
    servers, counts = _servers_and_counts(wg, free)
    if servers.size == 1:
        # One server holds the job: nothing crosses servers, as the graph-growing start the
        # search would begin from (and keep) says.
        return np.full(wg.n_workers, servers[0], dtype=np.int64)
    # A merge tree capped above the job's size is the tree capped at it: no more caps.
    caps = np.arange(1, min(int(free.max()), wg.n_workers) + 1)
    out: NDArray[np.int64] = _kernels().multistart(_weights(wg), free, servers, counts, caps)
    return out


#: Seconds CP-SAT gets on its own before the configuration bound is computed: it proves
#: most jobs of up to ~32 workers in milliseconds, while its LP bound is too weak for large
#: symmetric jobs, which the configuration LP usually closes.
ILP_FIRST_S = 1.0


def _ilp(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    *,
    time_limit_s: float = 10.0,
    **_: Any,
) -> Certified:
    """Exact: CP-SAT warm-started from ``mincut`` for :data:`ILP_FIRST_S`; if it has not
    proven optimality, a portfolio for the time left: CP-SAT keeps searching in a background
    thread while branch and price on the configuration LP
    (:mod:`asrpt_opt.placement.branch`) runs in this one, and the first to prove optimality
    stops the other. The result is the better placement and the higher bound of the two.

    Branch and price closes large symmetric jobs CP-SAT's bound cannot; CP-SAT's search
    closes small jobs whose configuration LP has a wide gap (tensor-parallel groups that
    cannot all fit whole), where pair branching is slow."""
    from asrpt_opt.placement.branch import BranchAndPrice
    from asrpt_opt.placement.cpsat import CutSearch, min_cut_placement, pack_columns

    t0 = time.perf_counter()

    def left() -> float:
        return time_limit_s - (time.perf_counter() - t0)

    first = min_cut_placement(
        wg, free, hint=_mincut(wg, free), time_limit_s=min(ILP_FIRST_S, time_limit_s)
    )
    if first.optimal or left() <= 0:
        return Certified(
            assignment=first.assignment,
            optimal=first.optimal,
            lower_bound_bytes=first.lower_bound_bytes,
        )
    cp = CutSearch(
        wg,
        free,
        hint=first.assignment,
        lower_bound_bytes=first.lower_bound_bytes,
        time_limit_s=left(),
    )
    try:
        # The root LP's columns may combine into a better placement (price and branch).
        search = BranchAndPrice(
            wg,
            free,
            first.assignment,
            improve=lambda columns: pack_columns(
                wg, free, columns, time_limit_s=max(0.1, left() / 4)
            ),
        )
        search.run(left(), stop=cp.done)
    finally:
        cp.stop()
    found = cp.result()
    search.offer(found.assignment, lower_bound_bytes=found.lower_bound_bytes)
    best = search.result()
    return Certified(
        assignment=best.assignment,
        optimal=best.proven,
        lower_bound_bytes=best.lower_bound_bytes,
    )


#: Methods that ignore network tiers (every other one works down them).
TIER_BLIND = frozenset({"random", "spread", "consolidate-flat"})

#: Placement methods by name.
METHODS: dict[str, Method] = {
    "ilp": _ilp,
    "mincut": _mincut,
    "kl": _kl,
    "greedy": _greedy,
    "consolidate": _consolidate,
    "consolidate-flat": _consolidate_flat,
    "random": _random,
    "spread": _spread,
    "metis": metis_placement,
    "kahip": kahip_placement,
}


def make_method(name: str) -> Method:
    """The placement method registered as ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`.

    Returns
    -------
    callable
        ``f(job, free, rng=..., time_limit_s=...)``, as :func:`place` calls it.

    Raises
    ------
    UnknownNameError
        If no method has that name; the message lists the known ones.
    """
    return lookup(METHODS, name, what="placement method")


def place(
    job: WorkerGraph,
    free: Sequence[int] | NDArray[np.int64],
    *,
    method: str | Method = "mincut",
    intra_gbps: float,
    inter_gbps: float,
    seed: int | np.random.Generator | None = 0,
    time_limit_s: float = 10.0,
    topology: Topology | None = None,
) -> PlacementResult:
    """Place a job's workers on free GPUs.

    With a ``topology`` (network tiers over the servers of ``free``), every edge is costed at
    the slowest tier it crosses; the graph methods and custom callables run down the
    hierarchy (:func:`~asrpt_opt.placement.tiers.by_tiers`), ``consolidate`` fills the
    smallest domain that holds the job, and ``ilp`` minimises the tier-weighted cut exactly
    (:func:`~asrpt_opt.placement.tiers.tiered_cut_placement`, started from tiered ``mincut``).

    Parameters
    ----------
    job : WorkerGraph
    free : sequence of int
        Free GPUs per server.
    method : str or callable
        A key of :data:`METHODS`, or ``f(job, free, rng=..., time_limit_s=...)`` returning
        the server of each worker, or a :class:`Certified` placement.
    intra_gbps, inter_gbps : float
        Bandwidths for the iteration time (with a topology, ``inter_gbps`` is between its
        outermost domains).
    seed : int, Generator or None
        Randomness of ``random`` and ``kl`` (the others are deterministic).
    time_limit_s : float
        For ``ilp``.
    topology : Topology, optional
        Tiers over the servers of ``free`` (:meth:`~asrpt_opt.model.topology.Topology.subset`
        restricts a cluster's to some servers).

    Returns
    -------
    PlacementResult

    Raises
    ------
    ModelError
        If the workers do not fit, or the method returns an invalid assignment.
    """
    free_arr = np.asarray(free, dtype=np.int64)
    if free_arr.ndim != 1 or free_arr.size == 0 or np.any(free_arr < 0):
        raise ModelError("free GPUs must be a non-empty list of counts >= 0")
    if job.n_workers > int(free_arr.sum()):
        raise ModelError(f"{job.n_workers} workers do not fit in {int(free_arr.sum())} free GPUs")
    if isinstance(method, str):
        name, fn = method, make_method(method)
    else:
        name, fn = getattr(method, "__name__", "custom"), method
    rng = np.random.default_rng(seed)
    if name not in ("consolidate", "consolidate-flat", "spread", "random"):
        warm_up_kernels()  # outside the timed region: a cold numba cache changes no result
    t0 = time.perf_counter()
    optimal, lower, lower_s = False, None, None
    if topology is None:
        out = fn(job, free_arr, rng=rng, time_limit_s=time_limit_s)
    else:
        from asrpt_opt.placement.tiers import TieredSolution

        ends = (intra_gbps, inter_gbps)
        out = _on_tiers(name, fn, job, free_arr, topology, ends, rng, time_limit_s)
        if isinstance(out, TieredSolution):
            optimal, lower_s, out = out.optimal, out.lower_bound_s, out.assignment
    wall = time.perf_counter() - t0
    if isinstance(out, Certified):
        optimal, lower = out.optimal, out.lower_bound_bytes
        out = out.assignment
    assignment = np.asarray(out, dtype=np.int64)
    if assignment.shape != (job.n_workers,):
        raise ModelError(f"method {name!r} must place each of the {job.n_workers} workers once")
    if assignment.min() < 0 or assignment.max() >= free_arr.size:
        raise ModelError(f"method {name!r} used a server that does not exist")
    used = np.bincount(assignment, minlength=free_arr.size)
    if np.any(used > free_arr):
        s = int(np.flatnonzero(used > free_arr)[0])
        raise ModelError(
            f"method {name!r} put {used[s]} workers on server {s}, which has {free_arr[s]} free"
        )
    cut = job.cross_server_bytes(assignment)
    if lower is not None:
        # A bound is recomputed from scaled integers; it may exceed the float cut by rounding.
        lower = cut if optimal else min(float(lower), cut)
    if topology is not None:
        return _tiered_result(
            job, assignment, topology, (intra_gbps, inter_gbps), name, optimal, wall, lower_s
        )
    return PlacementResult(
        method=name,
        assignment=tuple(int(s) for s in assignment),
        allocation=counts_of(assignment),
        cross_server_bytes=cut,
        iteration_time_s=job.iteration_time(
            assignment, intra_gbps=intra_gbps, inter_gbps=inter_gbps
        ),
        optimal=bool(optimal),
        wall_s=wall,
        lower_bound_bytes=lower,
    )


def _levels(topology: Topology, ends: tuple[float, float]) -> tuple[float, ...]:
    return (ends[0], *(t.gbps for t in topology.tiers), ends[1])


def _on_tiers(
    name: str,
    fn: Method,
    job: WorkerGraph,
    free: NDArray[np.int64],
    topology: Topology,
    ends: tuple[float, float],
    rng: np.random.Generator,
    time_limit_s: float,
) -> Any:
    from asrpt_opt.placement import tiers

    if name in TIER_BLIND:
        return fn(job, free, rng=rng, time_limit_s=time_limit_s)
    if name == "consolidate":
        alloc = tiers.consolidate_tiered(free, job.n_workers, topology)
        assert alloc is not None  # place checked that the job fits
        return _fill(alloc, range(job.n_workers), job.n_workers)
    if name == "ilp":
        t0 = time.perf_counter()
        gbps = _levels(topology, ends)
        # Start from the best of the fast heuristics, each run down the tiers.
        starts = [tiers.by_tiers(f, job, free, topology, rng=rng) for f in (_mincut, _greedy, _kl)]
        hint = min(starts, key=lambda a: tiers.tier_cost_s(job, a, topology, gbps))
        left = time_limit_s - (time.perf_counter() - t0)
        return tiers.tiered_cut_placement(job, free, topology, gbps, hint=hint, time_limit_s=left)
    return tiers.by_tiers(fn, job, free, topology, rng=rng, time_limit_s=time_limit_s)


def _tiered_result(
    job: WorkerGraph,
    assignment: NDArray[np.int64],
    topology: Topology,
    ends: tuple[float, float],
    name: str,
    optimal: bool,
    wall: float,
    lower_s: float | None,
) -> PlacementResult:
    from asrpt_opt.placement.tiers import tier_cost_s

    gbps = _levels(topology, ends)
    level = topology.level_of(assignment[job.u], assignment[job.v])
    crossed = np.bincount(level, weights=job.nbytes, minlength=len(gbps))[1:]
    cost = tier_cost_s(job, assignment, topology, gbps)
    return PlacementResult(
        method=name,
        assignment=tuple(int(s) for s in assignment),
        allocation=counts_of(assignment),
        cross_server_bytes=job.cross_server_bytes(assignment),
        iteration_time_s=job.iteration_time_of_levels(level, gbps),
        optimal=bool(optimal),
        wall_s=wall,
        cross_tier_bytes=tuple(
            (str(n), float(b)) for n, b in zip(topology.names[:-1], crossed, strict=True)
        ),
        tier_cost_s=cost,
        lower_bound_tier_cost_s=None if lower_s is None else min(lower_s, cost),
    )
