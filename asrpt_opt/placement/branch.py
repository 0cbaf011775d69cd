"""Branch and price: the configuration LP of :mod:`asrpt_opt.placement.bound`, closed by
branching.

Each node of the search tree is the configuration LP with some worker pairs forced onto one
server (merged into one node of their summed size) and some forced apart (Ryan and Foster's
rule, which keeps the pricing problem a connected-set search). A node's Lagrangian bound is
valid at any prices, so a node is pruned as soon as its bound passes the incumbent, whether
or not its LP has converged; nodes are explored best bound first. A converged LP whose
columns partition the workers is a placement, and may improve the incumbent.

All bytes are in the integer units of :func:`asrpt_opt.placement.bound.integer_weights`, so
a node is pruned when its bound reaches the incumbent's cut less half a unit.

References
----------
.. [1] C. Barnhart, E. L. Johnson, G. L. Nemhauser, M. W. P. Savelsbergh, P. H. Vance,
   "Branch-and-price: column generation for solving huge integer programs", Operations
   Research 46(3):316-329, 1998.
.. [2] D. M. Ryan, B. A. Foster, "An integer programming approach to scheduling", in
   Computer Scheduling of Public Transport, North-Holland, 1981, pp. 269-280 (branching on
   pairs).
.. [3] A. Mehrotra, M. A. Trick, "Cliques and clustering: a combinatorial approach",
   Operations Research Letters 22(1):1-12, 1998 (branch and price for capacitated
   clustering).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.workers import WorkerGraph
from asrpt_opt.placement.bound import _ColumnGeneration, _generate, integer_weights

__all__ = ["BranchAndPrice", "BranchResult", "branch_and_price"]

log = logging.getLogger(__name__)

#: Columns offered to a placement heuristic: members and the room of the servers they fit.
Columns = tuple[tuple[tuple[int, ...], int], ...]


@dataclass(frozen=True, kw_only=True)
class BranchResult:
    """Outcome of :func:`branch_and_price`.

    Attributes
    ----------
    assignment : ndarray of int
        Best placement found (never worse than the one given).
    cut_bytes : float
        Its cross-server bytes per iteration.
    lower_bound_bytes : float
        No placement cuts fewer bytes.
    proven : bool
        The search closed: ``assignment`` is optimal.
    nodes : int
        Search-tree nodes solved.
    wall_s : float
    """

    assignment: NDArray[np.int64]
    cut_bytes: float
    lower_bound_bytes: float
    proven: bool
    nodes: int
    wall_s: float


@dataclass(order=True)
class _Node:
    bound: float
    order: tuple[int, int]  # (-depth, creation): dive among equal bounds
    label: NDArray[np.int64] = field(compare=False)
    apart: frozenset[tuple[int, int]] = field(compare=False)
    centre: NDArray[np.float64] = field(compare=False)


class _Search:
    """State shared by the nodes: weights, rooms, incumbent and the pool of columns."""

    def __init__(self, wg: WorkerGraph, free: NDArray[np.int64], max_visits: int) -> None:
        self.w, self.scale = integer_weights(wg)
        self.free = free
        self.total = float(self.w.sum() / 2)
        self.penalty = self.total + 1.0  # leaving a worker out costs more than any cut
        self.max_room = int(free.max())
        self.max_visits = max_visits
        self.pool: dict[tuple[tuple[int, ...], int], float] = {}
        self.best: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.best_cut = np.inf

    def cut_of(self, assignment: NDArray[np.int64]) -> float:
        return float(self.w[assignment[:, None] != assignment[None, :]].sum() / 2)

    def offer(self, assignment: NDArray[np.int64] | None) -> None:
        if assignment is None:
            return
        cut = self.cut_of(assignment)
        if cut < self.best_cut:
            self.best, self.best_cut = assignment.copy(), cut

    def place_blocks(self, blocks: list[list[int]]) -> NDArray[np.int64] | None:
        """Servers for a partition of the workers: the largest block to the roomiest server
        (if any assignment fits, this one does)."""
        order = np.argsort(-self.free, kind="stable")
        blocks = sorted(blocks, key=len, reverse=True)
        if len(blocks) > order.size:
            return None
        out = np.full(self.w.shape[0], -1, dtype=np.int64)
        for block, s in zip(blocks, order.tolist(), strict=False):
            if len(block) > self.free[s]:
                return None
            out[block] = s
        return out

    def node_lp(self, node: _Node) -> _ColumnGeneration:
        cg = _ColumnGeneration(
            self.w,
            self.free,
            self.max_visits,
            label=node.label,
            apart=node.apart,
            penalty=self.penalty,
        )
        cap_index = {c: i for i, c in enumerate(cg.caps)}
        for members, ci in self.pool:
            if cg.compatible(members):
                cg.add(members, ci)
        for s in np.unique(self.best).tolist():
            block = np.flatnonzero(self.best == s).tolist()
            if cg.compatible(block):
                cg.add(block, cap_index[int(self.free[s])])
        for group in cg.groups:
            for ci in range(len(cg.caps)):
                cg.add(group, ci)
        return cg


def _together(master_used: dict[tuple[tuple[int, ...], int], float], n: int) -> NDArray:
    """How much of the LP solution puts each pair of workers on one server."""
    keys = list(master_used)
    inc = np.zeros((n, len(keys)))
    for j, (members, _) in enumerate(keys):
        inc[list(members), j] = 1.0
    return (inc * np.array([master_used[k] for k in keys])) @ inc.T


class BranchAndPrice:
    """A branch and price search that can be stopped, resumed and fed incumbents.

    :func:`branch_and_price` runs one to the time limit; the ``ilp`` placement method runs
    one beside CP-SAT, stops it when CP-SAT proves optimality, and offers it CP-SAT's best
    placement and bound.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
        Free GPUs per server.
    assignment : ndarray of int
        A feasible placement: the first incumbent.
    columns : tuple of (members, room)
        Worker sets to start the LPs from (e.g. those of
        :func:`asrpt_opt.placement.bound.configuration_bound`).
    improve : callable, optional
        ``improve(columns)`` returns a placement built from LP columns (a restricted master
        integer program), tried once the root LP has converged.
    max_visits : int
        Enumeration budget per pricing round.

    References
    ----------
    .. [1] C. Barnhart et al., Operations Research 46(3):316-329, 1998.
    .. [2] D. M. Ryan, B. A. Foster, 1981.
    """

    def __init__(
        self,
        wg: WorkerGraph,
        free: NDArray[np.int64],
        assignment: NDArray[np.int64],
        *,
        columns: Columns = (),
        improve: Callable[[Columns], NDArray[np.int64] | None] | None = None,
        max_visits: int = 2_000_000,
    ) -> None:
        self._search = search = _Search(wg, free, max_visits)
        search.offer(np.asarray(assignment, dtype=np.int64))
        self._n = n = search.w.shape[0]
        self._caps = caps = sorted({int(c) for c in free if c > 0})
        for members, room in columns:
            search.pool[tuple(sorted(members)), caps.index(room)] = 0.0
        self._improve = improve
        same = search.best[:, None] == search.best[None, :]
        root = _Node(
            bound=0.0,
            order=(0, 0),
            label=np.arange(n, dtype=np.int64),
            apart=frozenset(),
            centre=(search.w * same).sum(axis=1) / 2.0,
        )
        self._heap = [root]
        self._counter = itertools.count(1)
        self._unresolved: list[float] = []
        self._floor = 0.0  # a bound proven elsewhere (e.g. by CP-SAT)
        self.nodes = 0
        self.wall_s = 0.0

    def offer(
        self, assignment: NDArray[np.int64] | None, *, lower_bound_bytes: float = 0.0
    ) -> None:
        """Take a placement found elsewhere as the incumbent if it cuts less, and a bound
        proven elsewhere."""
        self._search.offer(None if assignment is None else np.asarray(assignment, dtype=np.int64))
        self._floor = max(self._floor, lower_bound_bytes * self._search.scale)

    def result(self) -> BranchResult:
        """The best placement and bound so far."""
        search = self._search
        # Bounds of nodes left open, less those the incumbent has since closed.
        open_bounds = [
            b
            for b in [nd.bound for nd in self._heap] + self._unresolved
            if b < search.best_cut - 0.5
        ]
        lower = max(self._floor, min([search.best_cut, *open_bounds]))
        proven = not open_bounds or lower >= search.best_cut - 0.5
        return BranchResult(
            assignment=search.best,
            cut_bytes=search.best_cut / search.scale,
            lower_bound_bytes=max(0.0, min(lower, search.best_cut)) / search.scale,
            proven=proven,
            nodes=self.nodes,
            wall_s=self.wall_s,
        )

    def run(self, time_limit_s: float, *, stop: Callable[[], bool] | None = None) -> BranchResult:
        """Explore nodes, best bound first, for at most ``time_limit_s`` (plus one pricing
        round) or until ``stop()`` is true between nodes, and return :meth:`result`."""
        t0 = time.perf_counter()
        deadline = t0 + time_limit_s
        search, n, heap = self._search, self._n, self._heap
        while heap and time.perf_counter() < deadline:
            if self._floor >= search.best_cut - 0.5 or (stop is not None and stop()):
                break
            node = heapq.heappop(heap)
            if node.bound >= search.best_cut - 0.5:
                continue
            self.nodes += 1
            cg = search.node_lp(node)
            early, centre, pair, best_inside = self.nodes > 1, node.centre, None, np.inf
            while True:
                progress = _generate(
                    cg, centre, search.total - search.best_cut + 0.5, deadline, early=early
                )
                master, centre = progress.master, progress.centre
                best_inside = min(best_inside, progress.best_inside)
                if master is None:
                    break
                pair = _branching_pair(_together(master.used, n), cg)
                if pair is not None or progress.converged or not early:
                    break
                early = False  # an integral master that stopped early: finish its LP first
            search.pool.update(cg.columns)
            bound = max(node.bound, search.total - best_inside)
            if self.nodes == 1 and self._improve is not None and progress.converged:
                search.offer(self._improve(tuple((m, self._caps[ci]) for m, ci in search.pool)))
            if master is not None and master.uncovered <= 1e-6 and pair is None:
                # The LP's sets partition the workers: a placement.
                blocks = {members for members, _ in master.used}
                search.offer(search.place_blocks([list(b) for b in blocks]))
            if bound >= search.best_cut - 0.5:
                continue
            if not progress.converged and time.perf_counter() >= deadline:
                # Cut off by the deadline, not by its LP: resume this node next run.
                heapq.heappush(heap, replace(node, bound=bound, centre=centre))
                self.nodes -= 1
                break
            if master is not None and pair is None:
                # Integral (or leaving workers out), but the bound does not close the node:
                # the Lagrangian bound may be weaker than the LP under branching. Split on
                # the heaviest edge between groups instead.
                pair = _branching_pair(_together(master.used, n), cg, integral=True)
            if pair is None:
                self._unresolved.append(bound)
                continue
            self._split(node, pair, bound, centre)
        self.wall_s += time.perf_counter() - t0
        res = self.result()
        log.debug(
            "branch and price: cut %.6g, bound %.6g, proven %s, %d nodes, %.2f s",
            res.cut_bytes,
            res.lower_bound_bytes,
            res.proven,
            res.nodes,
            self.wall_s,
        )
        return res

    def _split(
        self, node: _Node, pair: tuple[int, int], bound: float, centre: NDArray[np.float64]
    ) -> None:
        """Ryan and Foster's two children: the pair together (if it fits) and apart."""
        a, b = pair
        depth = -node.order[0] + 1
        merged = node.label.copy()
        merged[merged == merged[b]] = merged[a]
        _, merged = np.unique(merged, return_inverse=True)
        together_ok = int(np.sum(merged == merged[a])) <= self._search.max_room and not any(
            merged[p] == merged[q] for p, q in node.apart
        )
        children = [(merged.astype(np.int64), node.apart)] if together_ok else []
        children.append((node.label, node.apart | {(a, b)}))
        for label, apart in children:
            heapq.heappush(
                self._heap,
                _Node(
                    bound=bound,
                    order=(-depth, next(self._counter)),
                    label=label,
                    apart=apart,
                    centre=centre,
                ),
            )


def branch_and_price(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    assignment: NDArray[np.int64],
    *,
    columns: Columns = (),
    improve: Callable[[Columns], NDArray[np.int64] | None] | None = None,
    time_limit_s: float = 10.0,
    max_visits: int = 2_000_000,
) -> BranchResult:
    """Minimise the cross-server bytes exactly by branch and price: a
    :class:`BranchAndPrice` search run for ``time_limit_s``.

    Parameters
    ----------
    wg, free, assignment, columns, improve, max_visits
        As for :class:`BranchAndPrice`.
    time_limit_s : float
        The search stops after this long; its bound stays valid.

    Returns
    -------
    BranchResult
    """
    search = BranchAndPrice(
        wg, free, assignment, columns=columns, improve=improve, max_visits=max_visits
    )
    return search.run(time_limit_s)


def _branching_pair(
    together: NDArray, cg: _ColumnGeneration, *, integral: bool = False
) -> tuple[int, int] | None:
    """The most fractional undecided pair of workers, preferring pairs joined by an edge
    (their split is what the cut pays for); None when no pair is fractional. With
    ``integral``, the heaviest undecided edge instead (None if none)."""
    # Pairs still undecided: in different groups, and not already forced apart.
    open_pair = cg.label[:, None] != cg.label[None, :]
    for a, b in cg.apart:
        both = np.ix_(cg.label == cg.label[a], cg.label == cg.label[b])
        open_pair[both] = False
        open_pair[both[::-1]] = False
    if integral:
        score = np.where(open_pair, cg.w, 0.0)
        if not score.any():
            return None
    else:
        frac = np.minimum(together, 1.0 - together)
        frac[~open_pair] = 0.0
        frac[frac < 1e-6] = 0.0
        if not frac.any():
            return None
        score = frac + (cg.w > 0) * (frac > 0)
    i, j = (int(k) for k in np.unravel_index(int(np.argmax(score)), score.shape))
    return (min(i, j), max(i, j))
