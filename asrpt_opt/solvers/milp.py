"""Time-indexed MILP models (PuLP with the HiGHS solver).

Non-preemptive: one binary ``x[j,s,t]`` per job, server (or the pool) and start slot; each job
starts once, and in every slot the GPUs of the jobs running on a server (or the pool) stay
within its capacity. Preemptive: one binary ``y[j,s,t]`` per job, server and slot the job
runs in, and one binary ``a[j,t]`` per slot the job is unfinished at; each job runs in exactly
``p_j`` slots, at most on one server per slot, and ``C_j = r_j + sum_t a[j,t]``. Preemptive
schedules are therefore optimal *among schedules that preempt at integer times* (of the
instance's time unit).

References
----------
.. [1] M. E. Dyer, L. A. Wolsey, "Formulating the single machine sequencing problem with
   release dates as a mixed integer program", Discrete Applied Mathematics 26:255-270, 1990.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import defaultdict
from dataclasses import replace
from typing import Any

import highspy
import pulp

from asrpt_opt.errors import SolverError
from asrpt_opt.solvers._data import Discrete, check_slot_variables
from asrpt_opt.solvers.params import MILP_NODES_PER_WORK, work_nodes
from asrpt_opt.solvers.result import BackendOutcome, Deadline, Runs, SolveStatus, StoppedBy

__all__ = ["TimeIndexedMILP", "lp_bound_units"]


class _InterruptibleHiGHS(pulp.HiGHS):
    """PuLP's HiGHS, stopped by Ctrl-C, which then reaches the caller.

    HiGHS runs in highspy's helper thread while the main thread waits; a KeyboardInterrupt
    asks HiGHS to stop through its interrupt callbacks, waits for it, and is raised again, so
    an interrupted solve never passes for a finished one.

    With a ``deadline``, HiGHS' time limit is what is left of it once PuLP has passed the
    model over (which takes a while for large models), so the whole call ends on time."""

    def __init__(self, *, deadline: Deadline | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.deadline = deadline

    def findSolutionValues(self, lp: Any) -> tuple[int, int]:
        """As PuLP's, plus HiGHS' node limit (the work limit), which PuLP does not know: a
        stop like a time limit's, with the values found so far."""
        try:
            return super().findSolutionValues(lp)
        except KeyError:
            if lp.solverModel.getModelStatus() != highspy.HighsModelStatus.kSolutionLimit:
                raise
            # The values are assigned before PuLP looks the status up; solve() reads HiGHS'
            # own primal status to tell whether they are a solution.
            return pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible

    def callSolver(self, lp: Any) -> None:
        model = lp.solverModel
        if self.deadline is not None:
            model.setOptionValue("time_limit", max(self.deadline.left_s(), 0.01))
        model.HandleUserInterrupt = True
        model.startSolve()
        try:
            while not model.wait(0.05)[0]:
                # HiGHS checks its own time limit only now and then (not inside a long root
                # LP), so past the deadline it is asked to stop like an interrupt.
                if self.deadline is not None and self.deadline.left_s() < 0:
                    model.cancelSolve()
        except KeyboardInterrupt:
            model.cancelSolve()
            while not model.wait(0.05)[0]:
                pass
            raise


class TimeIndexedMILP:
    """A time-indexed MILP of one discretised instance.

    Parameters
    ----------
    data : Discrete
    preemptive : bool
    relax : bool
        Continuous variables (the LP relaxation).
    deadline : Deadline, optional
        Building stops with :class:`~asrpt_opt.solvers.result.OutOfTime` once it passes
        (PuLP builds large models slowly, and a solve's time limit covers building).
    """

    def __init__(
        self,
        data: Discrete,
        *,
        preemptive: bool,
        relax: bool = False,
        deadline: Deadline | None = None,
    ) -> None:
        if data.cluster_model == "spread":
            raise SolverError(
                "the spread cluster model (variable per-server split) is modelled by the cpsat "
                "backend only; use --backend cpsat or portfolio"
            )
        self.data = data
        self.preemptive = preemptive
        self.relax = relax
        self.deadline = deadline or Deadline(math.inf)
        self.prob = pulp.LpProblem("asrpt_offline", pulp.LpMinimize)
        self.x: dict[tuple[int, int, int], pulp.LpVariable] = {}
        # Per job, its (server, slot, variable) triples: constraints per job read these
        # instead of scanning every variable (which made building quadratic in the jobs).
        self._by_job: list[list[tuple[int, int, pulp.LpVariable]]] = [[] for _ in range(data.n)]
        check_slot_variables(
            data,
            preemptive=preemptive,
            pooled=data.cluster_model == "pooled",
            what="the time-indexed " + ("LP" if relax else "MILP"),
        )
        self.active: dict[int, list[pulp.LpVariable]] = {}
        self._variables()
        if preemptive:
            self._preemptive_constraints()
        else:
            self._start_once()
            self._identical_jobs_in_order()
        self._capacity()
        self._objective()

    # ------------------------------------------------------------------ variables
    def _pools(self, j: int) -> list[int]:
        d = self.data
        if d.cluster_model == "pooled":
            return [-1]
        return [s for s in range(len(d.caps)) if d.local_ok(j, s, symmetry=not self.preemptive)]

    def _variables(self) -> None:
        d = self.data
        cat = pulp.LpContinuous if self.relax else pulp.LpBinary
        for j in range(d.n):
            self.deadline.check("building the MILP's variables")
            if self.preemptive:
                slots = range(d.release[j], d.deadline[j])
            else:
                slots = range(d.release[j], d.deadline[j] - d.dur[j] + 1)
            for s in self._pools(j):
                for t in slots:
                    name = f"x_{j}_{s + 1}_{t}"
                    var = self.prob.add_variable(name, lowBound=0, upBound=1, cat=cat)
                    self.x[j, s, t] = var
                    self._by_job[j].append((s, t, var))

    # ------------------------------------------------------------------ constraints
    def _start_once(self) -> None:
        for j, mine in enumerate(self._by_job):
            if not mine:
                raise SolverError(f"job {j} has no feasible start before its deadline")
            self.prob += pulp.lpSum(v for _, _, v in mine) == 1, f"start_once_{j}"

    def _identical_jobs_in_order(self) -> None:
        for members in self.data.identical_groups():
            self.deadline.check("building the MILP's symmetry constraints")
            for a, b in itertools.pairwise(members):
                start_a = pulp.lpSum(t * v for _, t, v in self._by_job[a])
                start_b = pulp.lpSum(t * v for _, t, v in self._by_job[b])
                self.prob += start_a <= start_b, f"identical_{a}_{b}"

    def _preemptive_constraints(self) -> None:
        # a[j,t] = 1 while job j is unfinished at the start of slot t, forced by its
        # remaining work: p_j a[j,t] >= p_j - (slots run before t). Then C_j = r_j + sum_t
        # a[j,t], whose LP relaxation is far tighter than C_j >= (t + 1) y[j,t].
        d = self.data
        per_slot: dict[tuple[int, int], list[pulp.LpVariable]] = defaultdict(list)
        for (j, _, t), v in self.x.items():
            per_slot[j, t].append(v)
        cat = pulp.LpContinuous if self.relax else pulp.LpBinary
        for j in range(d.n):
            self.deadline.check("building the MILP's constraints")
            self.prob += pulp.lpSum(v for _, _, v in self._by_job[j]) == d.dur[j], f"work_{j}"
            done_before: list[pulp.LpVariable] = []
            active: list[pulp.LpVariable] = []
            for t in range(d.release[j], d.deadline[j]):
                a = self.prob.add_variable(f"a_{j}_{t}", lowBound=0, upBound=1, cat=cat)
                self.prob += (
                    d.dur[j] * a >= d.dur[j] - pulp.lpSum(done_before),
                    f"active_{j}_{t}",
                )
                if active:
                    self.prob += active[-1] >= a, f"monotone_{j}_{t}"
                active.append(a)
                done_before.extend(per_slot.get((j, t), []))
            self.active[j] = active
            # The p_j slots a job runs in end at distinct times <= C_j, so their mean end is
            # at most C_j - (p_j - 1)/2 (a mean-busy-time cut, after Goemans 1997).
            mean_end = pulp.lpSum((t + 1) * v for _, t, v in self._by_job[j])
            self.prob += (
                d.dur[j] * (d.release[j] + pulp.lpSum(active))
                >= mean_end + d.dur[j] * (d.dur[j] - 1) / 2,
                f"mean_busy_{j}",
            )
        for (j, t), vs in per_slot.items():
            if len(vs) > 1:
                self.prob += pulp.lpSum(vs) <= 1, f"one_server_{j}_{t}"

    def _capacity(self) -> None:
        d = self.data
        usage: dict[tuple[int, int], list[tuple[int, pulp.LpVariable]]] = defaultdict(list)
        for (j, s, t), v in self.x.items():
            span = range(t, t + 1) if self.preemptive else range(t, t + d.dur[j])
            for tau in span:
                usage[s, tau].append((d.gpus[j], v))
        for k, ((s, tau), terms) in enumerate(usage.items()):
            if k % 256 == 0:
                self.deadline.check("building the MILP's capacity constraints")
            cap = d.total_gpus if s == -1 else d.caps[s]
            if sum(q for q, _ in terms) > cap:
                self.prob += pulp.lpSum(q * v for q, v in terms) <= cap, f"cap_{s + 1}_{tau}"

    # ------------------------------------------------------------------ objective
    def _objective(self) -> None:
        d = self.data
        if self.preemptive:
            self.prob += pulp.lpSum(
                d.weight[j] * (d.release[j] + pulp.lpSum(a)) for j, a in self.active.items()
            )
        else:
            self.prob += pulp.lpSum(
                d.weight[j] * (t + d.dur[j]) * v for (j, _, t), v in self.x.items()
            )

    # ------------------------------------------------------------------ solve
    def solve(
        self,
        *,
        time_limit_s: float,
        threads: int = 1,
        gap: float = 0.0,
        seed: int = 0,
        work: float | None = None,
    ) -> BackendOutcome:
        """Solve and report what HiGHS proved.

        Parameters
        ----------
        time_limit_s : float
        threads : int
        gap : float
            Relative gap at which to stop (0 proves optimality).
        seed : int
        work : float, optional
            Work units: :data:`~asrpt_opt.solvers.params.MILP_NODES_PER_WORK` nodes each.

        Returns
        -------
        BackendOutcome
            The status is PuLP's ``sol_status`` mapped honestly; the bound is HiGHS' dual
            bound in time units.
        """
        limit = work_nodes(work, MILP_NODES_PER_WORK)
        nodes = {} if limit is None else {"mip_max_nodes": limit}
        solver = _InterruptibleHiGHS(
            deadline=Deadline(time_limit_s),
            msg=False,
            timeLimit=time_limit_s,
            threads=threads,
            gapRel=gap,
            mip=not self.relax,
            random_seed=seed,
            **nodes,
        )
        t0 = time.perf_counter()
        self.prob.solve(solver)
        wall = time.perf_counter() - t0
        model = self.prob.solverModel
        info = model.getInfo()
        # LpStatus says "Optimal" after a time-limit stop; sol_status and the dual bound tell
        # whether optimality was proven.
        sol = self.prob.sol_status
        bound = -math.inf
        if self.relax:
            if sol == pulp.LpSolutionOptimal:
                bound = float(pulp.value(self.prob.objective))
        else:
            # HiGHS' dual bound leaves out the objective's constant term.
            dual = float(info.mip_dual_bound) + float(self.prob.objective.constant)
            if math.isfinite(dual):
                bound = dual
        # PuLP calls an interrupted solve "integer feasible" even without a solution; HiGHS'
        # own primal status (2 = feasible) says whether the values are a solution.
        has_solution = (
            sol in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
            and int(info.primal_solution_status) == 2
        )
        if self.prob.status == pulp.LpStatusInfeasible or sol == pulp.LpSolutionInfeasible:
            status = SolveStatus.INFEASIBLE
        elif not has_solution:
            status = SolveStatus.TIME_LIMIT_NO_SOLUTION
        elif sol == pulp.LpSolutionOptimal:
            status = SolveStatus.OPTIMAL
        else:
            status = SolveStatus.FEASIBLE
        runs = self._extract() if has_solution and not self.relax else None
        if status in (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE):
            stopped = StoppedBy.NONE
        elif work is not None and wall < time_limit_s:
            stopped = StoppedBy.WORK
        else:
            stopped = StoppedBy.TIME
        return BackendOutcome(
            status=status, bound_units=bound, runs=runs, wall_s=wall, stopped_by=stopped
        )

    def _extract(self) -> Runs:
        d = self.data
        length = (lambda j: 1) if self.preemptive else (lambda j: d.dur[j])
        chosen = [
            (j, s, t, t + length(j)) for (j, s, t), v in self.x.items() if (v.varValue or 0) > 0.5
        ]
        return d.pieces(chosen)


def lp_bound_units(
    data: Discrete,
    *,
    preemptive: bool,
    time_limit_s: float = 30.0,
    deadline: Deadline | None = None,
) -> float:
    """A lower bound (in time units) from a linear relaxation on the pooled cluster.

    Non-preemptive: the LP relaxation of the pooled start-time-indexed model (exact model on
    integer data, so its LP value bounds every non-preemptive schedule). Preemptive: an LP
    over the fraction of each slot a job runs, with the mean-busy-time inequality
    C_j >= sum_t t y_jt / p_j + p_j / 2 and C_j >= r_j + p_j, valid for *every* preemptive
    schedule, not only those preempting at integer times.

    Parameters
    ----------
    data : Discrete
    preemptive : bool
    time_limit_s : float
        For the LP solver.
    deadline : Deadline, optional
        Building the LP stops with :class:`~asrpt_opt.solvers.result.OutOfTime` once it
        passes.

    Returns
    -------
    float
        The bound, or -inf when the LP was not solved to optimality.
    """
    pooled = replace(data, cluster_model="pooled")
    deadline = deadline or Deadline(math.inf)
    if not preemptive:
        model = TimeIndexedMILP(pooled, preemptive=False, relax=True, deadline=deadline)
        return float(model.solve(time_limit_s=time_limit_s).bound_units)
    check_slot_variables(pooled, preemptive=True, pooled=True, what="the preemptive LP bound")
    prob = pulp.LpProblem("preemptive_lp_bound", pulp.LpMinimize)
    y = {
        (j, t): prob.add_variable(f"y_{j}_{t}", 0, 1)
        for j in range(pooled.n)
        for t in range(pooled.release[j], pooled.deadline[j])
    }
    per_job: list[list[tuple[int, pulp.LpVariable]]] = [[] for _ in range(pooled.n)]
    comp = {
        j: prob.add_variable(f"C_{j}", lowBound=pooled.release[j] + pooled.dur[j])
        for j in range(pooled.n)
    }
    by_slot: dict[int, list[tuple[int, pulp.LpVariable]]] = defaultdict(list)
    for (j, t), v in y.items():
        by_slot[t].append((pooled.gpus[j], v))
        per_job[j].append((t, v))
    for j, mine in enumerate(per_job):
        deadline.check("building the LP bound")
        prob += pulp.lpSum(v for _, v in mine) == pooled.dur[j]
        prob += comp[j] >= pulp.lpSum(t * v for t, v in mine) / pooled.dur[j] + pooled.dur[j] / 2
    for t, terms in by_slot.items():
        prob += pulp.lpSum(q * v for q, v in terms) <= pooled.total_gpus, f"cap_{t}"
    prob += pulp.lpSum(pooled.weight[j] * c for j, c in comp.items())
    prob.solve(_InterruptibleHiGHS(deadline=Deadline(time_limit_s), msg=False))
    if prob.sol_status != pulp.LpSolutionOptimal:
        return -math.inf
    return float(pulp.value(prob.objective))
