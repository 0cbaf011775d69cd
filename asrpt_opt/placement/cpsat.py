"""Exact minimum-cut placement of a worker graph (CP-SAT).

Variables ``x[w,s]`` put worker w on server s; each worker goes to one server, a server takes at
most its free GPUs, and ``y[e] >= x[u,s] - x[v,s]`` marks edge e = (u, v) as cut. The objective
is the cut's bytes per iteration. Worker 0 may only use the first of a group of servers with
equal free GPUs, and the servers of such a group are ordered by the smallest worker they hold
(value precedence: they are interchangeable). Edge weights are made integral by multiplying by
``dp * tp`` (every byte count of the worker graph is a multiple of ``1/(dp*tp)``).

References
----------
.. [1] L. Perron, F. Didier, CP-SAT, Google OR-Tools.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from asrpt_opt.errors import SolverError
from asrpt_opt.model.workers import WorkerGraph

__all__ = [
    "CutSearch",
    "CutSolution",
    "merged_edges",
    "min_cut_placement",
    "pack_columns",
    "solve_interruptibly",
]


def solve_interruptibly(
    solver: cp_model.CpSolver, model: cp_model.CpModel, callback: Any = None
) -> Any:
    """``solver.solve(model)``, stopped by Ctrl-C, which then reaches the caller.

    CP-SAT catches SIGINT during a solve and just ends the search early, so an interrupted
    solve looked like a finished one (a sweep then stored it as final). Here CP-SAT leaves
    SIGINT alone and searches in a helper thread (it releases the interpreter lock), so the
    main thread, waiting on it, receives the KeyboardInterrupt: it stops the search, waits
    for it to end and raises.

    Parameters
    ----------
    solver : CpSolver
    model : CpModel
    callback : CpSolverSolutionCallback, optional
        Called at each new incumbent.

    Returns
    -------
    int
        The solve status.

    Raises
    ------
    KeyboardInterrupt
        When interrupted; the search is stopped first.
    """
    solver.parameters.catch_sigint_signal = False
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model, callback)  # signals only reach the main thread anyway
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["status"] = solver.solve(model, callback)
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc

    worker = threading.Thread(target=run, name="cp-sat", daemon=True)
    try:
        # Started inside the try: a Ctrl-C during the start still stops the search it began.
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        while worker.is_alive():  # a stop issued while the model is still loading is lost
            solver.stop_search()
            worker.join(0.05)
        raise
    if "error" in out:
        raise out["error"]
    return out["status"]


def merged_edges(wg: WorkerGraph) -> dict[tuple[int, int], float]:
    """Bytes per worker pair ``(a, b)``, ``a < b``: parallel edges merged, so a model needs
    one cut variable per pair.

    Parameters
    ----------
    wg : WorkerGraph

    Returns
    -------
    dict
    """
    weights: dict[tuple[int, int], float] = {}
    for a, b, nb in zip(wg.u.tolist(), wg.v.tolist(), wg.nbytes.tolist(), strict=True):
        key = (min(a, b), max(a, b))
        weights[key] = weights.get(key, 0.0) + nb
    return weights


@dataclass(frozen=True, kw_only=True)
class CutSolution:
    """What CP-SAT found.

    Attributes
    ----------
    assignment : ndarray of int
        Server of each worker (never worse than the hint).
    optimal : bool
        CP-SAT proved it minimal.
    lower_bound_bytes : float
        CP-SAT's proven bound on the cut (the given lower bound at least).
    """

    assignment: NDArray[np.int64]
    optimal: bool
    lower_bound_bytes: float


def min_cut_placement(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    *,
    hint: NDArray[np.int64] | None = None,
    lower_bound_bytes: float = 0.0,
    time_limit_s: float = 10.0,
    threads: int = 1,
    solver: cp_model.CpSolver | None = None,
) -> CutSolution:
    """Minimise the bytes crossing servers.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
    hint : ndarray of int, optional
        A feasible assignment to start from.
    lower_bound_bytes : float
        A proven bound on the cut (e.g. the configuration LP's), added as a constraint.
    time_limit_s : float
    threads : int
    solver : CpSolver, optional
        The solver to run (another thread may stop it); a new one by default.

    Returns
    -------
    CutSolution
    """
    n = wg.n_workers
    servers = [s for s in range(free.size) if free[s] > 0]
    m = cp_model.CpModel()
    x = {(w, s): m.new_bool_var(f"x_{w}_{s}") for w in range(n) for s in servers}
    for w in range(n):
        m.add_exactly_one(x[w, s] for s in servers)
    for s in servers:
        m.add(sum(x[w, s] for w in range(n)) <= int(free[s]))
    # Servers with equal free GPUs are interchangeable: order each group by the smallest
    # worker it holds (value precedence), so worker w may open the k-th server of a group
    # only if some lower worker sits on the (k-1)-th.
    groups: dict[int, list[int]] = {}
    for s in servers:
        groups.setdefault(int(free[s]), []).append(s)
    # "Some worker below w sits on s" as a running OR, so the encoding stays linear in n.
    opened: dict[int, list[cp_model.IntVar]] = {}
    for members in groups.values():
        for prev, cur in itertools.pairwise(members):
            if prev not in opened:
                running = [x[0, prev]]
                for w in range(1, n - 1):
                    flag = m.new_bool_var(f"open_{prev}_{w}")
                    m.add_max_equality(flag, [running[-1], x[w, prev]])
                    running.append(flag)
                opened[prev] = running
            m.add(x[0, cur] == 0)
            for w in range(1, n):
                m.add(x[w, cur] <= opened[prev][w - 1])
    par = wg.parallelism
    scale = par.dp * par.tp
    weights = merged_edges(wg)
    terms = []
    cut: dict[tuple[int, int], cp_model.IntVar] = {}
    for (a, b), nb in weights.items():
        coeff = round(nb * scale)
        if coeff <= 0:
            continue
        y = m.new_bool_var(f"cut_{a}_{b}")
        for s in servers:
            m.add(y >= x[a, s] - x[b, s])
        cut[a, b] = y
        terms.append(coeff * y)
    _ring_cuts(m, wg, free, cut)
    objective = sum(terms)
    if lower_bound_bytes > 0:
        # Scaled cuts are integers, so a fractional bound rounds up, less a relative guard
        # for the floating-point error of a bound summed from values near 1e13.
        units = lower_bound_bytes * scale
        m.add(objective >= math.ceil(units - 1e-9 * units - 1e-6))
    m.minimize(objective)
    if hint is not None:
        hint = _canonical(hint, groups)
        # A complete hint (placement, cut flags, running ORs) lets CP-SAT start from it.
        for w in range(n):
            for s in servers:
                m.add_hint(x[w, s], int(hint[w]) == s)
        for (a, b), y in cut.items():
            m.add_hint(y, int(hint[a]) != int(hint[b]))
        for srv, running in opened.items():
            for w, flag in enumerate(running[1:], start=1):  # running[0] is x[0, srv] itself
                m.add_hint(flag, bool(np.any(hint[: w + 1] == srv)))
    solver = solver or cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = threads
    code = solve_interruptibly(solver, m)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if hint is None:
            raise SolverError("CP-SAT found no placement")
        return CutSolution(assignment=hint, optimal=False, lower_bound_bytes=lower_bound_bytes)
    out = np.array(
        [next(s for s in servers if solver.value(x[w, s])) for w in range(n)], dtype=np.int64
    )
    bound = max(lower_bound_bytes, solver.best_objective_bound / scale)
    if (
        hint is not None
        and code != cp_model.OPTIMAL
        and wg.cross_server_bytes(hint) < wg.cross_server_bytes(out)
    ):
        out = hint  # never worse than the heuristic it started from
    return CutSolution(assignment=out, optimal=code == cp_model.OPTIMAL, lower_bound_bytes=bound)


class CutSearch:
    """:func:`min_cut_placement` in a background thread, to be stopped at will.

    CP-SAT releases the interpreter lock while it searches, so another solver (branch and
    price, in the ``ilp`` placement method) can run beside it on a second core; whichever
    proves optimality first stops the other.

    Parameters
    ----------
    wg, free, hint, lower_bound_bytes, time_limit_s
        As for :func:`min_cut_placement`.
    """

    def __init__(
        self,
        wg: WorkerGraph,
        free: NDArray[np.int64],
        *,
        hint: NDArray[np.int64],
        lower_bound_bytes: float = 0.0,
        time_limit_s: float = 10.0,
    ) -> None:
        self._solver = cp_model.CpSolver()
        self._result: CutSolution | None = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._result = min_cut_placement(
                    wg,
                    free,
                    hint=hint,
                    lower_bound_bytes=lower_bound_bytes,
                    time_limit_s=time_limit_s,
                    solver=self._solver,
                )
            except BaseException as exc:  # re-raised in the caller's thread by result()
                self._error = exc

        self._thread = threading.Thread(target=run, name="cp-sat placement", daemon=True)
        self._thread.start()

    def done(self) -> bool:
        """The search has ended (proven, out of time, or stopped)."""
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop the search and wait for it. A stop that lands while the model is still being
        built would be lost, so it is repeated until the thread ends."""
        while self._thread.is_alive():
            self._solver.stop_search()
            self._thread.join(0.05)

    def result(self) -> CutSolution:
        """Wait for the search and return what it found (never worse than its hint)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None  # the thread either set it or raised
        return self._result


def _ring_cuts(
    m: cp_model.CpModel,
    wg: WorkerGraph,
    free: NDArray[np.int64],
    cut: dict[tuple[int, int], cp_model.IntVar],
) -> None:
    """Valid redundant constraints: a ring of k workers that no server can hold whole spans
    at least L servers (L = fewest servers whose free GPUs reach k), and a ring spread over
    L >= 2 servers is cut in at least L places (one edge when the ring is a single pair)."""
    rooms = np.sort(free)[::-1]
    reach = np.cumsum(rooms)
    for group in np.unique(wg.group[wg.kind > 0]).tolist():
        edges = np.flatnonzero(wg.group == group)
        members = set(wg.u[edges].tolist()) | set(wg.v[edges].tolist())
        k = len(members)
        if k <= int(rooms[0]):
            continue
        servers_needed = int(np.searchsorted(reach, k)) + 1
        pairs = {
            (min(a, b), max(a, b))
            for a, b in zip(wg.u[edges].tolist(), wg.v[edges].tolist(), strict=True)
        }
        ys = [cut[p] for p in pairs if p in cut]
        if len(ys) == len(pairs):
            m.add(sum(ys) >= min(servers_needed, len(pairs)))


def _canonical(hint: NDArray[np.int64], groups: dict[int, list[int]]) -> NDArray[np.int64]:
    """Relabel interchangeable servers so the hint obeys the value-precedence ordering."""
    out = hint.copy()
    for members in groups.values():
        first = {
            s: (int(np.flatnonzero(hint == s)[0]) if np.any(hint == s) else 1 << 30)
            for s in members
        }
        order = sorted(members, key=lambda s: (first[s], s))
        relabel = dict(zip(order, members, strict=True))
        for old, new in relabel.items():
            out[hint == old] = new
    return out


def pack_columns(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    columns: tuple[tuple[tuple[int, ...], int], ...],
    *,
    time_limit_s: float = 2.0,
) -> NDArray[np.int64] | None:
    """Best placement built from given worker sets (the restricted master IP).

    Chooses columns so that every worker is covered once and no more columns of room c are
    used than there are servers with c free GPUs, maximising the bytes kept inside servers;
    each chosen set then gets its own server of that room. With the columns of a converged
    configuration LP this often matches the LP bound (price and branch).

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
    columns : tuple of (members, room)
    time_limit_s : float

    Returns
    -------
    ndarray of int or None
        Server of each worker, or None when no cover was found in time.
    """
    n = wg.n_workers
    scale = wg.parallelism.dp * wg.parallelism.tp
    w = np.zeros((n, n))
    np.add.at(w, (wg.u, wg.v), wg.nbytes)
    w = w + w.T
    m = cp_model.CpModel()
    pick = [m.new_bool_var(f"col_{j}") for j in range(len(columns))]
    covering: list[list[cp_model.IntVar]] = [[] for _ in range(n)]
    by_room: dict[int, list[cp_model.IntVar]] = {}
    gain = []
    for j, (members, room) in enumerate(columns):
        for v in members:
            covering[v].append(pick[j])
        by_room.setdefault(room, []).append(pick[j])
        idx = np.array(members)
        gain.append(round(float(w[np.ix_(idx, idx)].sum()) / 2 * scale))
    for v in range(n):
        if not covering[v]:
            return None
        m.add_exactly_one(covering[v])
    rooms = [int(f) for f in free]
    for room, chosen in by_room.items():
        m.add(sum(chosen) <= rooms.count(room))
    m.maximize(sum(g * b for g, b in zip(gain, pick, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit_s)
    solver.parameters.num_workers = 1
    if solve_interruptibly(solver, m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    servers = {room: [s for s, f in enumerate(rooms) if f == room] for room in by_room}
    out = np.full(n, -1, dtype=np.int64)
    for j, (members, room) in enumerate(columns):
        if solver.value(pick[j]):
            out[list(members)] = servers[room].pop()
    return out
