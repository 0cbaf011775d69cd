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
    values: NDArray[np.float64],
    members: list[list[frozenset[int]]],
    room: int,
    apart: frozenset[tuple[int, int]] = frozenset(),
) -> tuple[float, list[int] | None]:
    """Upper bound on ``max w(S) - pi(S)`` over sets S of at most ``room`` GPUs.

    S splits into disjoint connected components. A component among the kept sets of its
    size (``members[k]``, best first) is known exactly; one that is not is worth at most the
    last kept value of its size when that list is full (and nothing, when the list holds
    every positive set). A search over disjoint known sets, topped up with such unknown
    components, bounds S. Known sets holding an ``apart`` pair between them are not
    combined.

    Returns
    -------
    (bound, union)
        The bound and, when it is attained by known sets only, their union (a column).
    """
    keep = values.shape[1]
    top = min(room, values.shape[0] - 1)
    items = sorted(
        (
            (float(values[k, j]), k, members[k][j])
            for k in range(1, top + 1)
            for j in range(len(members[k]))
            if values[k, j] > 0
        ),
        key=lambda item: -item[0],
    )
    unseen = np.zeros(values.shape[0])
    for k in range(1, top + 1):
        if values[k, keep - 1] > 0 and len(members[k]) == keep:  # list full: more may exist
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
        v, k, found = items[i]
        if (
            k <= left
            and not (found & used)
            and not any((a in found and b in used) or (b in found and a in used) for a, b in apart)
        ):
            search(i + 1, value + v, left - k, used | found)
        search(i + 1, value, left, used)

    search(0, 0.0, room, frozenset())
    return best


@dataclass(frozen=True, kw_only=True)
class _Master:
    """A restricted master LP's optimum: bytes inside servers, duals, and the columns used."""

    inside: float
    prices: NDArray[np.float64]
    room_prices: NDArray[np.float64]
    used: dict[tuple[tuple[int, ...], int], float]
    uncovered: float


class _ColumnGeneration:
    """Restricted master LP over worker sets, priced by connected-set enumeration.

    Branching narrows the sets allowed: workers sharing a ``label`` must stay together (they
    are priced as one node of their summed size), and the worker pairs in ``apart`` never
    share a server. With a ``penalty``, each worker may also stay uncovered at that cost,
    which keeps the master feasible whatever columns it starts from.
    """

    def __init__(
        self,
        w: NDArray[np.int64],
        free: NDArray[np.int64],
        max_visits: int,
        *,
        label: NDArray[np.int64] | None = None,
        apart: frozenset[tuple[int, int]] = frozenset(),
        penalty: float = 0.0,
    ) -> None:
        self.w = w.astype(np.float64)
        self.n = w.shape[0]
        rooms = free[free > 0]
        self.caps = sorted({int(c) for c in rooms})
        self.count = np.array([int(np.sum(rooms == c)) for c in self.caps], dtype=np.float64)
        self.label = np.arange(self.n) if label is None else label
        n_groups = int(self.label.max()) + 1
        self.size = np.bincount(self.label, minlength=n_groups).astype(np.int64)
        self.groups = [np.flatnonzero(self.label == g).tolist() for g in range(n_groups)]
        self.onehot = np.zeros((self.n, n_groups))
        self.onehot[np.arange(self.n), self.label] = 1.0
        between = self.onehot.T @ self.w @ self.onehot
        self.inner = np.diag(between).copy() / 2.0  # bytes inside each merged group
        np.fill_diagonal(between, 0.0)
        rows, cols = np.nonzero(between)
        self.indptr = np.searchsorted(rows, np.arange(n_groups + 1)).astype(np.int64)
        self.nbr = cols.astype(np.int64)
        self.wt = between[rows, cols]
        self.between = between
        self.apart = apart
        pairs = sorted({(int(self.label[a]), int(self.label[b])) for a, b in apart})
        ends = np.array([p for a, b in pairs for p in ((a, b), (b, a))], dtype=np.int64)
        ends = ends.reshape(-1, 2)
        ends = ends[np.lexsort((ends[:, 1], ends[:, 0]))]
        self.apart_ptr = np.searchsorted(ends[:, 0], np.arange(n_groups + 1)).astype(np.int64)
        self.apart_nbr = np.ascontiguousarray(ends[:, 1])
        self.penalty = penalty
        self.max_visits = max_visits
        self.columns: dict[tuple[tuple[int, ...], int], float] = {}

    def compatible(self, members: tuple[int, ...] | list[int]) -> bool:
        """Whether a worker set obeys the branching: whole groups only, no apart pair."""
        counts = np.bincount(self.label[list(members)], minlength=self.size.size)
        if np.any((counts != 0) & (counts != self.size)):
            return False
        inside = set(members)
        return not any(a in inside and b in inside for a, b in self.apart)

    def add(self, members: tuple[int, ...] | list[int], cap_index: int) -> bool:
        key = (tuple(sorted(members)), cap_index)
        if key in self.columns or len(key[0]) > self.caps[cap_index]:
            return False
        idx = np.array(key[0])
        self.columns[key] = float(self.w[np.ix_(idx, idx)].sum() / 2)
        return True

    def solve_master(self) -> _Master | None:
        """The restricted master LP; uncovered workers are allowed (at the penalty) only
        when the columns cannot cover them all, since slack columns steer the LP towards
        much worse duals."""
        master = self._solve_master(slack=False)
        if master is None and self.penalty > 0:
            master = self._solve_master(slack=True)
        return master

    def _solve_master(self, *, slack: bool) -> _Master | None:
        keys = list(self.columns)
        rows = [v for members, _ in keys for v in members]
        cols = [j for j, (members, _) in enumerate(keys) for _ in members]
        n_slack = self.n if slack else 0
        rows += list(range(n_slack))
        cols += list(range(len(keys), len(keys) + n_slack))
        width = len(keys) + n_slack
        a_eq = csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.n, width))
        a_ub = csc_matrix(
            (np.ones(len(keys)), ([c for _, c in keys], np.arange(len(keys)))),
            shape=(len(self.caps), width),
        )
        gain = np.concatenate([[self.columns[k] for k in keys], np.full(n_slack, -self.penalty)])
        unit = max(1.0, float(np.abs(gain).max()))  # HiGHS fails on objectives near 1e12
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
        x = res.x
        return _Master(
            inside=float(-res.fun * unit),
            prices=-res.eqlin.marginals * unit,
            room_prices=-res.ineqlin.marginals * unit,
            used={k: float(x[j]) for j, k in enumerate(keys) if x[j] > 1e-9},
            uncovered=float(x[len(keys) :].sum()),
        )

    def price(self, pi: NDArray[np.float64]) -> tuple[float, list[list[int]]] | None:
        """Lagrangian bound on the bytes kept inside servers at prices ``pi``, and candidate
        columns: every connected set kept by the enumeration, and for each room the union
        of the knapsack's sets when they are disjoint. None when the enumeration ran out
        of visits."""
        cap = self.caps[-1]
        node_pi = 2.0 * (self.onehot.T @ pi - self.inner)
        values, sets, visits = _kernels.best_connected(
            self.indptr,
            self.nbr,
            self.wt,
            node_pi,
            self.size,
            self.apart_ptr,
            self.apart_nbr,
            cap,
            _KEEP,
            self.max_visits,
        )
        if visits < 0:
            return None
        values = values / 2.0
        members = [
            [
                frozenset(v for g in row.tolist() if g >= 0 for v in self.groups[g])
                for row in sets[k]
                if row[0] >= 0
            ]
            for k in range(cap + 1)
        ]
        inside = float(pi.sum())
        if self.penalty > 0:  # an uncovered worker saves its price and pays the penalty
            inside += float(np.maximum(0.0, -self.penalty - pi).sum())
        found = [sorted(s) for row in members for s in row]
        for c, k in zip(self.caps, self.count, strict=True):
            bound, union = _best_union(values, members, c, self.apart)
            inside += k * bound
            if union and self.compatible(union):
                found.append(union)
        return inside, found


@dataclass(kw_only=True)
class _Progress:
    """Where column generation stopped: the best Lagrangian bound on the bytes inside
    servers, the prices that gave it, and the last master LP."""

    best_inside: float
    centre: NDArray[np.float64]
    master: _Master | None
    converged: bool
    rounds: int


def _generate(
    cg: _ColumnGeneration,
    centre: NDArray[np.float64],
    stop_inside: float,
    deadline: float,
    *,
    early: bool = False,
) -> _Progress:
    """Column generation with Wentges smoothing around the best prices so far, until the
    Lagrangian bound reaches ``stop_inside``, the LP converges, or the deadline.

    With ``early``, also stop once the restricted master keeps more than ``stop_inside``
    inside: the LP optimum keeps at least as much, so its bound cannot reach the target and
    a branch and bound node may branch at once."""
    priced = cg.price(centre)
    best_inside = centre_inside = priced[0] if priced is not None else np.inf
    alpha, rounds, master, converged = 0.5, 0, None, False
    total = float(cg.w.sum() / 2)
    while best_inside > stop_inside and time.perf_counter() < deadline:
        rounds += 1
        master = cg.solve_master()
        if master is None or (early and master.inside > stop_inside):
            break
        if best_inside <= master.inside + 0.5:  # the bound meets the master: LP optimal
            converged = True
            break
        added = False
        while time.perf_counter() < deadline:
            pi = alpha * centre + (1.0 - alpha) * master.prices
            priced = cg.price(pi)
            if priced is None:  # too many positive sets: step back towards the centre
                if alpha > 0.99:
                    break
                alpha = 1.0 - (1.0 - alpha) / 2
                continue
            inside, found = priced
            best_inside = min(best_inside, inside)
            if inside < centre_inside:
                centre, centre_inside = pi, inside
            if best_inside <= master.inside + 0.5:  # the bound meets the master: LP optimal
                converged = True
                break
            for members in found:
                idx = np.array(members)
                reduced = cg.w[np.ix_(idx, idx)].sum() / 2 - master.prices[idx].sum()
                for ci, c in enumerate(cg.caps):
                    if len(members) <= c and reduced - master.room_prices[ci] > 1e-9 * max(
                        1.0, total
                    ):
                        added |= cg.add(members, ci)
            if added:
                break
            if alpha == 0.0:  # exact prices found nothing: the LP is optimal
                converged = True
                break
            alpha = alpha / 2 if alpha > 1e-3 else 0.0  # mispricing: trust the duals more
        if not added:
            break
    return _Progress(
        best_inside=best_inside, centre=centre, master=master, converged=converged, rounds=rounds
    )


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
    progress = _generate(cg, centre, total - cut + 0.5, t0 + time_limit_s)
    best_inside, rounds = progress.best_inside, progress.rounds
    lp_inside = progress.master.inside if progress.master is not None else np.nan
    lower = max(0.0, total - best_inside)
    result = CutBound(
        lower_bound_bytes=lower / scale,
        cut_bytes=cut / scale,
        proven=total - best_inside >= cut - 0.5,
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
