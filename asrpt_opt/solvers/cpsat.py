"""CP-SAT models (OR-Tools).

Non-preemptive: an interval per job, and per server an optional interval of the job there
(presence literals choose the server); a cumulative constraint per server (or one for the
pooled cluster). With ``cluster_model="spread"`` a job may instead take a *spread* interval of
length ``ceil(p_j * spread_slowdown)`` whose GPUs are split over servers by integer demand
variables that stay fixed while it runs. Preemptive: a boolean per job, server and unit slot,
as in the time-indexed MILP.

References
----------
.. [1] P. Laborie, J. Rogerie, P. Shaw, P. Vilim, "IBM ILOG CP optimizer for scheduling",
   Constraints 23:210-250, 2018 (interval and cumulative modelling).
.. [2] L. Perron, F. Didier, "CP-SAT", Google OR-Tools, https://developers.google.com/optimization.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections import defaultdict
from typing import Any

from ortools.sat.python import cp_model

from asrpt_opt.model.allocation import Allocation
from asrpt_opt.placement.cpsat import solve_interruptibly
from asrpt_opt.solvers._data import Discrete, check_slot_variables
from asrpt_opt.solvers.result import BackendOutcome, Deadline, Runs, SolveStatus, StoppedBy

__all__ = ["CPSATModel"]


logger = logging.getLogger(__name__)


class _Incumbents(cp_model.CpSolverSolutionCallback):
    """Logs each new incumbent with the bound and the gap (``asrpt-opt -v``)."""

    def __init__(self, scale: int) -> None:
        super().__init__()
        self.scale = scale

    def on_solution_callback(self) -> None:
        value = self.objective_value / self.scale
        bound = self.best_objective_bound / self.scale
        gap = (value - bound) / abs(value) if value else 0.0
        logger.info(
            "cp-sat: incumbent %.6g, bound %.6g, gap %.2f%%, %.1f s",
            value,
            bound,
            100 * gap,
            self.wall_time,
        )


class CPSATModel:
    """A CP-SAT model of one discretised instance.

    Parameters
    ----------
    data : Discrete
    preemptive : bool
    hint : list of (start, length, Allocation), optional
        A feasible non-preemptive schedule to start the search from.
    deadline : Deadline, optional
        Building stops with :class:`~asrpt_opt.solvers.result.OutOfTime` once it passes.
    """

    def __init__(
        self,
        data: Discrete,
        *,
        preemptive: bool,
        hint: list[tuple[int, int, Allocation]] | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.data = data
        self.preemptive = preemptive
        self.deadline = deadline or Deadline(math.inf)
        self.model = cp_model.CpModel()
        self.end: list[cp_model.IntVar] = []
        if preemptive:
            check_slot_variables(
                data,
                preemptive=True,
                pooled=data.cluster_model == "pooled",
                what="the preemptive CP-SAT model",
            )
            self._preemptive()
        else:
            self._variables()
            self._capacity()
            self._identical_jobs_in_order()
            if hint is not None:
                self._hint(hint)
        self._objective()

    # ------------------------------------------------------------------ non-preemptive
    def _variables(self) -> None:
        d = self.data
        m = self.model
        self.start: list[cp_model.IntVar] = []
        self.modes: list[list[tuple[str, int, Any, Any]]] = []  # (kind, server, literal, interval)
        self.split: dict[int, list[cp_model.IntVar]] = {}
        for j in range(d.n):
            self.deadline.check("building the CP-SAT model")
            lo, hi = d.release[j], d.deadline[j]
            start = m.new_int_var(lo, hi, f"start_{j}")
            end = m.new_int_var(lo, hi, f"end_{j}")
            modes: list[tuple[str, int, Any, Any]] = []
            if d.cluster_model == "pooled":
                iv = m.new_interval_var(start, d.dur[j], end, f"run_{j}")
                modes.append(("pool", -1, None, iv))
            else:
                for s in range(len(d.caps)):
                    if d.local_ok(j, s):
                        lit = m.new_bool_var(f"on_{j}_{s}")
                        iv = m.new_optional_interval_var(start, d.dur[j], end, lit, f"run_{j}_{s}")
                        modes.append(("local", s, lit, iv))
                if d.cluster_model == "spread":
                    lit = m.new_bool_var(f"spread_{j}")
                    size = d.spread_dur[j]
                    iv = m.new_optional_interval_var(start, size, end, lit, f"spread_{j}")
                    modes.append(("spread", -1, lit, iv))
                    parts = []
                    for s in range(len(d.caps)):
                        cap = min(d.caps[s], d.gpus[j])
                        parts.append(m.new_int_var(0, cap, f"gpus_{j}_{s}"))
                    m.add(sum(parts) == d.gpus[j]).only_enforce_if(lit)
                    for part in parts:
                        m.add(part == 0).only_enforce_if(~lit)
                    # A spread job really spans servers: no part holds all its GPUs.
                    for part in parts:
                        m.add(part <= d.gpus[j] - 1).only_enforce_if(lit)
                    self.split[j] = parts
                m.add_exactly_one([lit for _, _, lit, _ in modes])
            self.start.append(start)
            self.end.append(end)
            self.modes.append(modes)

    def _capacity(self) -> None:
        d = self.data
        per_server: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
        for j, modes in enumerate(self.modes):
            for kind, s, _, iv in modes:
                if kind == "spread":
                    for srv, part in enumerate(self.split[j]):
                        per_server[srv].append((iv, part))
                else:
                    per_server[s].append((iv, d.gpus[j]))
        for s, items in per_server.items():
            cap = d.total_gpus if s == -1 else d.caps[s]
            self.model.add_cumulative([iv for iv, _ in items], [q for _, q in items], cap)

    def _identical_jobs_in_order(self) -> None:
        for members in self.data.identical_groups():
            for a, b in itertools.pairwise(members):
                self.model.add(self.start[a] <= self.start[b])

    def _hint(self, hint: list[tuple[int, int, Allocation]]) -> None:
        d = self.data
        for j, (t, length, alloc) in enumerate(hint):
            self.model.add_hint(self.start[j], t)
            self.model.add_hint(self.end[j], t + length)
            for kind, s, lit, _ in self.modes[j]:
                if lit is None:
                    continue
                if kind == "local":
                    on = len(alloc) == 1 and alloc[0][0] == s and length == d.dur[j]
                else:
                    on = len(alloc) > 1
                self.model.add_hint(lit, on)

    # ------------------------------------------------------------------ preemptive
    def _preemptive(self) -> None:
        d = self.data
        m = self.model
        self.run: dict[tuple[int, int, int], Any] = {}
        usage: dict[tuple[int, int], list[tuple[int, Any]]] = defaultdict(list)
        for j in range(d.n):
            self.deadline.check("building the CP-SAT model")
            end = m.new_int_var(d.release[j] + d.dur[j], d.deadline[j], f"end_{j}")
            pools = (
                [-1]
                if d.cluster_model == "pooled"
                else [s for s in range(len(d.caps)) if d.local_ok(j, s, symmetry=False)]
            )
            mine = []
            ends = []
            for t in range(d.release[j], d.deadline[j]):
                here = []
                for s in pools:
                    b = m.new_bool_var(f"run_{j}_{s + 1}_{t}")
                    self.run[j, s, t] = b
                    usage[s, t].append((d.gpus[j], b))
                    here.append(b)
                    ends.append((t + 1) * b)
                    m.add(end >= t + 1).only_enforce_if(b)
                if len(here) > 1:
                    m.add_at_most_one(here)
                mine.extend(here)
            m.add(sum(mine) == d.dur[j])
            # The p_j slots end at distinct times <= C_j: their mean is <= C_j - (p_j - 1)/2.
            p = d.dur[j]
            m.add(2 * p * end >= 2 * sum(ends) + p * (p - 1))
            self.end.append(end)
        for (s, _), terms in usage.items():
            cap = d.total_gpus if s == -1 else d.caps[s]
            if sum(q for q, _ in terms) > cap:
                m.add(sum(q * b for q, b in terms) <= cap)

    # ------------------------------------------------------------------ objective, solve
    def _objective(self) -> None:
        d = self.data
        # CP-SAT needs integer coefficients: scale fractional weights exactly.
        scale = 1
        while any(abs(w * scale - round(w * scale)) > 1e-9 for w in d.weight) and scale < 10**6:
            scale *= 10
        self.weight_scale = scale
        self.model.minimize(
            sum(round(w * scale) * e for w, e in zip(d.weight, self.end, strict=True))
        )

    def solve(
        self,
        *,
        time_limit_s: float,
        threads: int = 1,
        gap: float = 0.0,
        seed: int = 0,
        work: float | None = None,
    ) -> BackendOutcome:
        """Solve and report what CP-SAT proved.

        Parameters
        ----------
        time_limit_s : float
        threads : int
        gap : float
            Relative gap at which to stop (0 proves optimality).
        seed : int
        work : float, optional
            CP-SAT's deterministic time limit (``max_deterministic_time``).

        Returns
        -------
        BackendOutcome
            The bound is CP-SAT's best objective bound, in weighted time units.
        """
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(time_limit_s)
        solver.parameters.num_workers = max(1, int(threads))
        solver.parameters.random_seed = int(seed)
        solver.parameters.relative_gap_limit = float(gap)
        if work is not None:
            solver.parameters.max_deterministic_time = float(work)
        t0 = time.perf_counter()
        callback = _Incumbents(self.weight_scale) if logger.isEnabledFor(logging.INFO) else None
        code = solve_interruptibly(solver, self.model, callback)
        wall = time.perf_counter() - t0
        bound = solver.best_objective_bound / self.weight_scale
        statuses = {
            cp_model.OPTIMAL: SolveStatus.OPTIMAL,
            cp_model.FEASIBLE: SolveStatus.FEASIBLE,
            cp_model.INFEASIBLE: SolveStatus.INFEASIBLE,
            cp_model.MODEL_INVALID: SolveStatus.ERROR,
        }
        status = statuses.get(code, SolveStatus.TIME_LIMIT_NO_SOLUTION)
        runs = self._extract(solver) if code in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
        if code in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
            stopped = StoppedBy.NONE
        elif work is not None and solver.response_proto.deterministic_time >= 0.99 * work:
            stopped = StoppedBy.WORK
        else:
            stopped = StoppedBy.TIME
        return BackendOutcome(
            status=status, bound_units=bound, runs=runs, wall_s=wall, stopped_by=stopped
        )

    def _extract(self, solver: cp_model.CpSolver) -> Runs:
        d = self.data
        if self.preemptive:
            chosen = [(j, s, t, t + 1) for (j, s, t), b in self.run.items() if solver.value(b)]
            return d.pieces(chosen)
        chosen = []
        spread: list[tuple[int, int, int, Allocation]] = []
        for j in range(d.n):
            t = solver.value(self.start[j])
            for kind, s, lit, _ in self.modes[j]:
                if lit is not None and not solver.value(lit):
                    continue
                if kind == "spread":
                    split = tuple(
                        (srv, int(solver.value(v)))
                        for srv, v in enumerate(self.split[j])
                        if solver.value(v) > 0
                    )
                    spread.append((j, t, t + d.spread_dur[j], split))
                else:
                    chosen.append((j, s, t, t + d.dur[j]))
        pieces = d.pieces(chosen)
        for j, a, b, split in spread:
            pieces[j].append((a, b, split))
        return pieces
