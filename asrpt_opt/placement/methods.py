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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError
from asrpt_opt.model.speed import Allocation, allocation_to_json
from asrpt_opt.model.workers import WorkerGraph
from asrpt_opt.placement.consolidate import consolidate

__all__ = ["METHODS", "PlacementResult", "counts_of", "place"]

Method = Callable[..., NDArray[np.int64]]


@dataclass(frozen=True, kw_only=True)
class PlacementResult:
    """Where a job's workers go and what that costs.

    Attributes
    ----------
    method : str
    assignment : tuple of int
        Server of each worker.
    allocation : Allocation
        GPUs per server, ``((server, count), ...)``.
    cross_server_bytes : float
        Bytes per iteration crossing servers (the weighted cut).
    iteration_time_s : float
        Modelled seconds per iteration.
    optimal : bool
        True only when the method proved the cut minimal.
    wall_s : float
    """

    method: str
    assignment: tuple[int, ...]
    allocation: Allocation
    cross_server_bytes: float
    iteration_time_s: float
    optimal: bool
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        """The ``place --json`` result object of DESIGN.md section 5."""
        return {
            "method": self.method,
            "servers": allocation_to_json(self.allocation),
            "cross_server_bytes": self.cross_server_bytes,
            "iteration_time_s": self.iteration_time_s,
            "optimal": self.optimal,
            "wall_s": self.wall_s,
        }


def counts_of(assignment: NDArray[np.int64]) -> Allocation:
    """The allocation of a worker assignment.

    Parameters
    ----------
    assignment : ndarray of int
        Server of each worker.

    Returns
    -------
    Allocation
        ``((server, count), ...)`` sorted by server.
    """
    servers, counts = np.unique(assignment, return_counts=True)
    return tuple((int(s), int(c)) for s, c in zip(servers, counts, strict=True))


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


def _greedy(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """Graph growing along heavy edges into the consolidated server counts."""
    alloc = sorted(_consolidated_counts(wg, free), key=lambda sc: (-sc[1], sc[0]))
    n = wg.n_workers
    weight = np.zeros((n, n))
    np.add.at(weight, (wg.u, wg.v), wg.nbytes)
    weight += weight.T
    out = np.full(n, -1, dtype=np.int64)
    for s, c in alloc:
        free_w = np.flatnonzero(out < 0)
        # Seed with the unplaced worker that has the heaviest ties to other unplaced workers.
        ties = weight[np.ix_(free_w, free_w)].sum(axis=1)
        part = [int(free_w[int(np.argmax(ties))])]
        out[part[0]] = s
        gain = weight[part[0]].copy()
        while len(part) < c:
            cand = np.flatnonzero(out < 0)
            w = int(cand[int(np.argmax(gain[cand]))])
            part.append(w)
            out[w] = s
            gain += weight[w]
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
        a, b = nx.algorithms.community.kernighan_lin_bisection(
            sub, partition=(a, b), weight="bytes", seed=int(rng.integers(2**31))
        )
        if len(a) != size:  # networkx may return the two sides in either order
            a, b = b, a
    out = _bisect(g, sorted(a), left, rng)
    out.update(_bisect(g, sorted(b), right, rng))
    return out


def _kl_start(
    wg: WorkerGraph, free: NDArray[np.int64], rng: np.random.Generator
) -> NDArray[np.int64]:
    alloc = list(_consolidated_counts(wg, free))
    where = _bisect(wg.graph, list(range(wg.n_workers)), alloc, rng)
    return np.array([where[w] for w in range(wg.n_workers)], dtype=np.int64)


def _weights(wg: WorkerGraph) -> NDArray[np.float64]:
    n = wg.n_workers
    weight = np.zeros((n, n))
    np.add.at(weight, (wg.u, wg.v), wg.nbytes)
    out: NDArray[np.float64] = weight + weight.T
    return out


def _clusters_packed(wg: WorkerGraph, free: NDArray[np.int64], cap: int) -> NDArray[np.int64]:
    """Contract the heaviest edges into a merge tree of clusters of at most ``cap`` workers,
    then pack the clusters best-fit decreasing; a cluster that fits no remaining room is
    unmerged into its two parts (recursively), so groups such as rings stay whole."""
    n = wg.n_workers
    parent = list(range(n))
    size = [1] * n
    children: list[tuple[int, int] | None] = [None] * n
    top = list(range(n))  # tree node currently representing each union-find root

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for e in np.argsort(-wg.nbytes, kind="stable").tolist():
        a, b = root(int(wg.u[e])), root(int(wg.v[e]))
        if a != b and size[a] + size[b] <= cap:
            node = len(children)
            children.append((top[a], top[b]))
            parent[b] = a
            size[a] += size[b]
            top[a] = node
    node_size = [1] * n + [0] * (len(children) - n)
    for node in range(n, len(children)):
        kids = children[node]
        assert kids is not None
        node_size[node] = node_size[kids[0]] + node_size[kids[1]]

    def leaves(node: int) -> list[int]:
        kids = children[node]
        return [node] if kids is None else leaves(kids[0]) + leaves(kids[1])

    left = free.copy()
    out = np.full(n, -1, dtype=np.int64)

    def put(node: int) -> None:
        need = node_size[node]
        fits = np.flatnonzero(left >= need)
        kids = children[node]
        if fits.size == 0 and kids is not None:
            for kid in sorted(kids, key=lambda k: -node_size[k]):
                put(kid)
            return
        s = int(fits[np.argmin(left[fits])]) if fits.size else int(np.argmax(left))
        for w in leaves(node):
            out[w] = s
        left[s] -= need

    roots = sorted({top[root(w)] for w in range(n)}, key=lambda r: (-node_size[r], r))
    for r in roots:
        put(r)
    return out


def _refine(
    weight: NDArray[np.float64], free: NDArray[np.int64], start: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Local search: best single move (into spare room) or swap while the cut shrinks."""
    out = start.copy()
    n, k = weight.shape[0], free.size
    onehot = np.zeros((n, k))
    onehot[np.arange(n), out] = 1.0
    conn = weight @ onehot  # conn[w, s]: bytes between worker w and the workers on server s
    spare = free - np.bincount(out, minlength=k)
    rows = np.arange(n)
    for _ in range(4 * n * n):
        own = conn[rows, out]
        move = conn - own[:, None]  # gain of moving w to s
        move[:, spare <= 0] = -np.inf
        move[rows, out] = -np.inf
        mw, ms = np.unravel_index(int(np.argmax(move)), move.shape)
        best_move = move[mw, ms]
        # Swap gain: conn[a, s_b] - own[a] + conn[b, s_a] - own[b] - 2 w[a, b].
        cross = conn[:, out]  # cross[a, b] = conn[a, server of b]
        swap = cross - own[:, None] + cross.T - own[None, :] - 2 * weight
        swap[out[:, None] == out[None, :]] = -np.inf
        sa, sb = np.unravel_index(int(np.argmax(swap)), swap.shape)
        best_swap = swap[sa, sb]
        if max(best_move, best_swap) <= 1e-9 * max(1.0, float(weight.max())):
            break
        if best_move >= best_swap:
            changes = [(int(mw), int(ms))]
        else:
            changes = [(int(sa), int(out[sb])), (int(sb), int(out[sa]))]
        for w, s in changes:
            old = out[w]
            conn[:, old] -= weight[:, w]
            conn[:, s] += weight[:, w]
            spare[old] += 1
            spare[s] -= 1
            out[w] = s
    return out


def _mincut(
    wg: WorkerGraph, free: NDArray[np.int64], *, rng: np.random.Generator, **_: Any
) -> NDArray[np.int64]:
    """Multi-start min-cut heuristic: recursive Kernighan-Lin bisection into the consolidated
    counts, heavy-edge clustering packed into servers, and graph growing, each refined by
    move/swap local search; the smallest cut wins."""
    weight = _weights(wg)
    # Clusters sized to each distinct room (and powers of two) keep groups such as a
    # tensor-parallel ring whole where a single server size would split them.
    caps = {int(c) for c in free if c > 0} | {1 << i for i in range(int(free.max()).bit_length())}
    starts = [_kl_start(wg, free, rng), _greedy(wg, free)]
    starts += [_clusters_packed(wg, free, cap) for cap in sorted(caps)]
    best, best_cut = starts[0], np.inf
    for start in starts:
        refined = _refine(weight, free, start)
        cut = wg.cross_server_bytes(refined)
        if cut < best_cut:
            best, best_cut = refined, cut
    return best


def _ilp(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    *,
    rng: np.random.Generator,
    time_limit_s: float = 10.0,
    **_: Any,
) -> tuple[NDArray[np.int64], bool]:
    from asrpt_opt.solvers.placement import min_cut_placement

    hint = _mincut(wg, free, rng=rng)
    return min_cut_placement(wg, free, hint=hint, time_limit_s=time_limit_s)


#: Placement methods by name.
METHODS: dict[str, Method] = {
    "ilp": _ilp,  # type: ignore[dict-item]
    "mincut": _mincut,
    "greedy": _greedy,
    "consolidate": _consolidate,
    "random": _random,
    "spread": _spread,
}


def place(
    job: WorkerGraph,
    free: Sequence[int] | NDArray[np.int64],
    *,
    method: str | Method = "mincut",
    intra_gbps: float,
    inter_gbps: float,
    seed: int | np.random.Generator | None = 0,
    time_limit_s: float = 10.0,
) -> PlacementResult:
    """Place a job's workers on free GPUs.

    Parameters
    ----------
    job : WorkerGraph
    free : sequence of int
        Free GPUs per server.
    method : str or callable
        A key of :data:`METHODS`, or ``f(job, free, rng=...) -> server per worker``.
    intra_gbps, inter_gbps : float
        Bandwidths for the iteration time.
    seed : int, Generator or None
        Randomness of ``random`` and ``mincut``.
    time_limit_s : float
        For ``ilp``.

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
        if method not in METHODS:
            raise ModelError(f"unknown placement method {method!r} (known: {', '.join(METHODS)})")
        name, fn = method, METHODS[method]
    else:
        name, fn = getattr(method, "__name__", "custom"), method
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    out = fn(job, free_arr, rng=rng, time_limit_s=time_limit_s)
    wall = time.perf_counter() - t0
    optimal = False
    if isinstance(out, tuple):
        out, optimal = out
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
    return PlacementResult(
        method=name,
        assignment=tuple(int(s) for s in assignment),
        allocation=counts_of(assignment),
        cross_server_bytes=job.cross_server_bytes(assignment),
        iteration_time_s=job.iteration_time(
            assignment, intra_gbps=intra_gbps, inter_gbps=inter_gbps
        ),
        optimal=bool(optimal),
        wall_s=wall,
    )
