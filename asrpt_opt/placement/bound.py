"""A lower bound on the cross-server bytes of any placement: the configuration LP.

The LP relaxation of the assignment ILP (``x[w,s]``, ``y[e] >= x[u,s] - x[v,s]``) is worthless
here: spreading every worker evenly over the servers cuts nothing. The configuration LP is
much stronger. Let a column be a set S of workers that fits a server of room c; the bytes
kept inside servers are at most

    max  sum_{S,c} w(S) lam[S,c]   s.t.  sum_{S ∋ v} lam = 1 (each worker once),
                                         sum_S lam[S,c] <= servers of room c,   lam >= 0,

so the cut is at least ``total - LP``. By Lagrangian duality every vector ``pi`` of worker
prices gives a valid bound on its own,

    inside <= sum_v pi_v + sum_servers max(0, max_{|S| <= room} w(S) - pi(S)),

and the inner maximum is bounded by the best *connected* sets of each size (a set's value is
the sum of its components' values), which :func:`asrpt_opt.placement._kernels.best_connected`
enumerates with pruning. The prices come from column generation on the LP (HiGHS via SciPy),
stabilised around the best prices so far (Wentges smoothing) and started from half of each
worker's internal degree in a heuristic placement: when that placement is LP-optimal these
prices prove it at once, as for tensor-parallel groups filling identical servers.

All bytes are scaled to integers exactly as in the CP-SAT model, so a bound within half a
unit of a placement's cut proves that placement optimal.

References
----------
.. [1] P. C. Gilmore, R. E. Gomory, "A linear programming approach to the cutting-stock
   problem", Operations Research 9(6):849-859, 1961 (configuration LP, column generation).
.. [2] P. Wentges, "Weighted Dantzig-Wolfe decomposition for linear mixed-integer
   programming", Int. Trans. Operational Research 4(2):151-162, 1997 (smoothing).
.. [3] S. Wernicke, "Efficient detection of network motifs", IEEE/ACM TCBB 3(4):347-359,
   2006 (ESU enumeration of connected sets).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog
from scipy.sparse import csc_matrix

from asrpt_opt.model.workers import WorkerGraph
from asrpt_opt.placement import _kernels

__all__ = ["CutBound", "configuration_bound", "integer_weights"]

log = logging.getLogger(__name__)

_KEEP = 8  # connected sets kept per size and pricing round


@dataclass(frozen=True, kw_only=True)
class CutBound:
    """A proven lower bound on the cross-server bytes, and whether it closes a placement.

    Attributes
    ----------
    lower_bound_bytes : float
        No placement cuts fewer bytes per iteration.
    cut_bytes : float
        Cut of the placement the bound was computed against.
    proven : bool
        True when the bound meets that cut (within half a scaled unit).
    lp_cut_bytes : float
        ``total - LP`` of the last restricted master LP (not a bound until it converged).
    rounds : int
        Column-generation rounds.
    wall_s : float
    columns : tuple of (tuple of int, int)
        The worker sets generated, each with the room of the servers it may fill: material
        for a restricted master integer program (price and branch).
    """

    lower_bound_bytes: float
    cut_bytes: float
    proven: bool
    lp_cut_bytes: float
    rounds: int
    wall_s: float
    columns: tuple[tuple[tuple[int, ...], int], ...] = ()


def integer_weights(wg: WorkerGraph) -> tuple[NDArray[np.int64], int]:
    """Bytes between worker pairs as integers: every byte count of a worker graph is a
    multiple of ``1 / (dp * tp)``, so scaling by ``dp * tp`` and rounding is exact.

    Parameters
    ----------
    wg : WorkerGraph

    Returns
    -------
    (matrix, scale)
        A symmetric int64 matrix of scaled bytes and the scale.
    """
    scale = wg.parallelism.dp * wg.parallelism.tp
    n = wg.n_workers
    w = np.zeros((n, n), dtype=np.int64)
    coeff = np.rint(wg.nbytes * scale).astype(np.int64)
    np.add.at(w, (wg.u, wg.v), coeff)
    np.add.at(w, (wg.v, wg.u), coeff)
    return w, scale


def _unbounded_knapsack(per_size: NDArray[np.float64], room: int) -> NDArray[np.float64]:
    """``f[x]``: the most value from items of sizes 1.. (any number of each) in room x."""
    f = np.zeros(room + 1)
    for x in range(1, room + 1):
        f[x] = f[x - 1]
        for k in range(1, min(x, per_size.size - 1) + 1):
            if per_size[k] > 0:
                f[x] = max(f[x], f[x - k] + per_size[k])
    return f


def _best_union(
    values: NDArray[np.float64], sets: NDArray[np.int64], room: int
) -> tuple[float, list[int] | None]:
    """Upper bound on ``max w(S) - pi(S)`` over sets S of at most ``room`` workers.

    S splits into disjoint connected components. A component among the kept sets of its
    size is known exactly; one that is not is worth at most the last kept value of its size
    when that list is full (and nothing, when the list holds every positive set). A search
    over disjoint known sets, topped up with such unknown components, bounds S.

    Returns
    -------
    (bound, union)
        The bound and, when it is attained by known sets only, their union (a column).
    """
    keep = values.shape[1]
    top = min(room, values.shape[0] - 1)
    items = sorted(
        (
            (float(values[k, j]), k, frozenset(sets[k, j, :k].tolist()))
            for k in range(1, top + 1)
            for j in range(keep)
            if values[k, j] > 0 and sets[k, j, 0] >= 0
        ),
        key=lambda item: -item[0],
    )
    unseen = np.zeros(values.shape[0])
    for k in range(1, top + 1):
        if values[k, keep - 1] > 0 and sets[k, keep - 1, 0] >= 0:  # list full: more may exist
            unseen[k] = values[k, keep - 1]
    fill = _unbounded_knapsack(unseen, room)
    optimistic = _unbounded_knapsack(values[:, 0], room)
    best: tuple[float, list[int] | None] = (float(fill[room]), None if fill[room] > 0 else [])

    def search(i: int, value: float, left: int, used: frozenset[int]) -> None:
        nonlocal best
        if value + fill[left] > best[0]:
            union = sorted(used) if fill[left] == 0 else None
            best = (value + float(fill[left]), union)
        if i == len(items) or value + optimistic[left] <= best[0]:
            return
        v, k, members = items[i]
        if k <= left and not (members & used):
            search(i + 1, value + v, left - k, used | members)
        search(i + 1, value, left, used)

    search(0, 0.0, room, frozenset())
    return best


class _ColumnGeneration:
    """Restricted master LP over worker sets, priced by connected-set enumeration."""

    def __init__(self, w: NDArray[np.int64], free: NDArray[np.int64], max_visits: int) -> None:
        self.w = w.astype(np.float64)
        self.n = w.shape[0]
        rooms = free[free > 0]
        self.caps = sorted({int(c) for c in rooms})
        self.count = np.array([int(np.sum(rooms == c)) for c in self.caps], dtype=np.float64)
        rows, cols = np.nonzero(w)
        self.indptr = np.searchsorted(rows, np.arange(self.n + 1)).astype(np.int64)
        self.nbr = cols.astype(np.int64)
        self.wt = self.w[rows, cols]
        self.max_visits = max_visits
        self.columns: dict[tuple[tuple[int, ...], int], float] = {}

    def add(self, members: list[int], cap_index: int) -> bool:
        key = (tuple(sorted(members)), cap_index)
        if key in self.columns:
            return False
        idx = np.array(key[0])
        self.columns[key] = float(self.w[np.ix_(idx, idx)].sum() / 2)
        return True

    def solve_master(self) -> tuple[float, NDArray[np.float64], NDArray[np.float64]] | None:
        keys = list(self.columns)
        rows = [v for members, _ in keys for v in members]
        cols = [j for j, (members, _) in enumerate(keys) for _ in members]
        a_eq = csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.n, len(keys)))
        a_ub = csc_matrix(
            (np.ones(len(keys)), ([c for _, c in keys], np.arange(len(keys)))),
            shape=(len(self.caps), len(keys)),
        )
        gain = np.array([self.columns[k] for k in keys])
        unit = max(1.0, float(gain.max()))  # HiGHS fails on objectives near 1e12: rescale
        res = linprog(
            -gain / unit,
            A_ub=a_ub,
            b_ub=self.count,
            A_eq=a_eq,
            b_eq=np.ones(self.n),
            bounds=(0, None),
            method="highs",
        )
        if res.status != 0:
            log.debug("master LP failed: %s", res.message)
            return None
        return (
            float(-res.fun * unit),
            -res.eqlin.marginals * unit,
            -res.ineqlin.marginals * unit,
        )

    def price(self, pi: NDArray[np.float64]) -> tuple[float, list[list[int]]] | None:
        """Lagrangian bound on the bytes kept inside servers at prices ``pi``, and candidate
        columns: every connected set kept by the enumeration, and for each room the union
        of the knapsack's sets when they are disjoint. None when the enumeration ran out
        of visits."""
        values, sets, visits = _kernels.best_connected(
            self.indptr, self.nbr, self.wt, 2.0 * pi, self.caps[-1], _KEEP, self.max_visits
        )
        if visits < 0:
            return None
        values = values / 2.0
        inside = float(pi.sum())
        found = [
            sets[k, j, :k].tolist()
            for k in range(1, self.caps[-1] + 1)
            for j in range(_KEEP)
            if sets[k, j, 0] >= 0
        ]
        for c, k in zip(self.caps, self.count, strict=True):
            bound, union = _best_union(values, sets, c)
            inside += k * bound
            if union:
                found.append(union)
        return inside, found


def configuration_bound(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    assignment: NDArray[np.int64],
    *,
    time_limit_s: float = 2.0,
    max_visits: int = 2_000_000,
) -> CutBound:
    """Lower-bound the cross-server bytes of every placement, and try to prove one optimal.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
        Free GPUs per server.
    assignment : ndarray of int
        A feasible placement (server per worker); its cut is what the bound tries to meet,
        and its servers seed the LP.
    time_limit_s : float
        Column generation stops after this long (the bound stays valid).
    max_visits : int
        Enumeration budget per pricing round; beyond it a round yields no bound.

    Returns
    -------
    CutBound

    References
    ----------
    .. [1] P. C. Gilmore, R. E. Gomory, Operations Research 9(6):849-859, 1961.
    """
    t0 = time.perf_counter()
    w, scale = integer_weights(wg)
    total = float(w.sum() / 2)
    same = assignment[:, None] == assignment[None, :]
    cut = float(w[~same].sum() / 2)
    cg = _ColumnGeneration(w, free, max_visits)
    cap_index = {c: i for i, c in enumerate(cg.caps)}
    for s in np.unique(assignment).tolist():
        cg.add(np.flatnonzero(assignment == s).tolist(), cap_index[int(free[s])])
    for v in range(cg.n):
        for ci in range(len(cg.caps)):
            cg.add([v], ci)

    centre = (w * same).sum(axis=1) / 2.0  # half of each worker's internal degree
    priced = cg.price(centre)
    best_inside = priced[0] if priced is not None else np.inf
    centre_inside = best_inside
    alpha, rounds, lp_inside = 0.5, 0, np.nan

    def closed() -> bool:
        return total - best_inside > cut - 0.5

    while not closed() and time.perf_counter() - t0 < time_limit_s:
        rounds += 1
        master = cg.solve_master()
        if master is None:
            break
        lp_inside, pi_lp, mu = master
        added, attempts = False, 0
        while not added and alpha > 1e-3 and attempts < 20:
            attempts += 1
            pi = alpha * centre + (1.0 - alpha) * pi_lp
            priced = cg.price(pi)
            if priced is None:  # too many positive sets: step back towards the centre
                alpha = 1.0 - (1.0 - alpha) / 2
                if alpha > 0.99:
                    break
                continue
            inside, found = priced
            best_inside = min(best_inside, inside)
            if inside < centre_inside:
                centre, centre_inside = pi, inside
            for members in found:
                idx = np.array(members)
                reduced = cg.w[np.ix_(idx, idx)].sum() / 2 - pi_lp[idx].sum()
                for ci, c in enumerate(cg.caps):
                    if len(members) <= c and reduced - mu[ci] > 1e-9 * max(1.0, total):
                        added |= cg.add(members, ci)
            if not added:
                alpha /= 2  # mispricing: trust the LP duals more
        if priced is None or not added:
            break
    lower = max(0.0, total - best_inside)
    result = CutBound(
        lower_bound_bytes=lower / scale,
        cut_bytes=cut / scale,
        proven=closed(),
        lp_cut_bytes=(total - lp_inside) / scale if rounds else float("nan"),
        rounds=rounds,
        wall_s=time.perf_counter() - t0,
        columns=tuple((members, cg.caps[ci]) for members, ci in cg.columns),
    )
    log.debug(
        "configuration bound: %.6g (cut %.6g, proven %s) after %d rounds, %.2f s",
        result.lower_bound_bytes,
        result.cut_bytes,
        result.proven,
        rounds,
        result.wall_s,
    )
    return result
