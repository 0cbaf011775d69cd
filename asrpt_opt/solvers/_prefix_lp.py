"""The linear program of an event-sequence prefix, for :mod:`asrpt_opt.solvers.continuous`."""

from __future__ import annotations

import math
from typing import Any

import highspy
import numpy as np

from asrpt_opt.errors import SolverError
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.solvers._data import assign_servers
from asrpt_opt.solvers.result import quiet_stdout

__all__ = ["Event", "PrefixLP"]

# Unfinished sets up to this size get every Queyranne inequality (2**size rows).
_ALL_SETS = 5

#: An event: (0, group) releases a group of jobs sharing a release time, (1, j) completes j.
Event = tuple[int, int]


def _time_unit(longest_s: float) -> float:
    """The LPs' unit of time: 1 s, or for durations far from it the power of two nearest the
    longest one (HiGHS' absolute tolerances, 1e-10, are out of reach of doubles on times of
    1e11 s). A power of two keeps every conversion exact."""
    if longest_s <= 0 or 2.0**-20 <= longest_s <= 2.0**20:
        return 1.0
    return math.ldexp(1.0, math.frexp(longest_s)[1])


class PrefixLP:
    """The data of one instance and the LP of an event-sequence prefix."""

    def __init__(self, instance: Instance) -> None:
        jobs = instance.jobs
        if any(j.duration_s is None for j in jobs):
            raise SolverError("the continuous-time optimum needs abstract jobs (duration_s)")
        self.instance = instance
        self.n = len(jobs)
        self.unit_s = _time_unit(max(float(j.duration_s or 0) for j in jobs))
        self.r = [j.release_s / self.unit_s for j in jobs]
        self.q = [j.gpus for j in jobs]
        self.p = [float(j.duration_s) / self.unit_s for j in jobs]  # type: ignore[arg-type]
        self.w = [j.weight for j in jobs]
        self.m = instance.cluster.total_gpus
        self.caps = list(instance.cluster.servers)
        if any(q > self.m for q in self.q):
            raise SolverError("a job needs more GPUs than the cluster has")
        self.releases = sorted(set(self.r))
        group = {t: a for a, t in enumerate(self.releases)}
        self.group = [group[t] for t in self.r]
        self.released_by = [0] * len(self.releases)  # jobs released by group a, as a bit mask
        for a in range(len(self.releases)):
            self.released_by[a] = sum(1 << j for j in range(self.n) if self.group[j] <= a)
        key = [(self.r[j], self.q[j], self.p[j], self.w[j]) for j in range(self.n)]
        # Identical jobs finish in index order: the twin before j must be done first.
        self.twin_before = [
            max((i for i in range(j) if key[i] == key[j]), default=-1) for j in range(self.n)
        ]
        self.scale = max(1.0, max(self.r) + sum(self.p)) * max(1.0, sum(self.w))
        self.a = [self.q[j] * self.p[j] / self.m for j in range(self.n)]
        self._configs: dict[int, list[tuple[int, list[int]]]] = {}
        self._cuts: dict[tuple[int, ...], list[tuple[list[int], float]]] = {}
        with quiet_stdout():  # highspy prints a banner when a model is created
            self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("dual_feasibility_tolerance", 1e-10)

    def configs(self, available: int) -> list[tuple[int, list[int]]]:
        """Non-empty sets of available jobs that fit in the pool together, as (mask, jobs)."""
        out = self._configs.get(available)
        if out is None:
            members = [j for j in range(self.n) if available >> j & 1]
            out = []
            for bits in range(1, 1 << len(members)):
                chosen = [members[i] for i in range(len(members)) if bits >> i & 1]
                if sum(self.q[j] for j in chosen) <= self.m:
                    out.append((sum(1 << j for j in chosen), chosen))
            self._configs[available] = out
        return out

    def lp(self, events: list[Event]) -> tuple[float, list[float]] | None:
        """Solve the LP of a prefix: (value, column values), or None when no schedule has it.

        Rows: one per interval (its length covers its configurations), one per job
        (processing received), one more per unfinished job (its completion bound). Columns:
        one time per event, one length per (interval, configuration), one completion time
        per unfinished job.
        """
        n_ev = len(events)
        completed_at = {x: e for e, (kind, x) in enumerate(events) if kind == 1}
        open_jobs = [j for j in range(self.n) if j not in completed_at]
        job_row = {j: n_ev - 1 + j for j in range(self.n)}
        open_row = {j: n_ev - 1 + self.n + i for i, j in enumerate(open_jobs)}
        row_lo = [0.0] * (n_ev - 1)
        row_hi = [math.inf] * (n_ev - 1)
        for j in range(self.n):
            row_lo.append(self.p[j] if j in completed_at else -math.inf)
            row_hi.append(self.p[j])
        row_lo += [self.p[j] for j in open_jobs]
        row_hi += [math.inf] * len(open_jobs)
        cuts = self.cuts(tuple(open_jobs))
        first_cut = len(row_lo)
        row_lo += [rhs for _, rhs in cuts]
        row_hi += [math.inf] * len(cuts)
        in_cuts: dict[int, list[tuple[int, float]]] = {j: [] for j in open_jobs}
        for k, (members, _) in enumerate(cuts):
            for j in members:
                in_cuts[j].append((first_cut + k, self.a[j]))

        cost: list[float] = []
        lower: list[float] = []
        upper: list[float] = []
        entries: list[list[tuple[int, float]]] = []

        def column(c: float, lo: float, hi: float, col: list[tuple[int, float]]) -> None:
            cost.append(c)
            lower.append(lo)
            upper.append(hi)
            entries.append(col)

        for e, (kind, x) in enumerate(events):
            col = []
            if e > 0:
                col.append((e - 1, 1.0))
            if e < n_ev - 1:
                col.append((e, -1.0))
            if e == n_ev - 1:
                col += [(open_row[j], -1.0) for j in open_jobs]
            if kind == 0:
                column(0.0, self.releases[x], self.releases[x], col)
            else:
                column(self.w[x], 0.0, math.inf, col)
        released = done = 0
        for e, (kind, x) in enumerate(events[:-1]):
            if kind == 0:
                released |= self.released_by[x]
            else:
                done |= 1 << x
            for _, chosen in self.configs(released & ~done):
                col = [(e, -1.0)]
                for j in chosen:
                    col.append((job_row[j], 1.0))
                    if j in open_row:
                        col.append((open_row[j], 1.0))
                column(0.0, 0.0, math.inf, col)
        for j in open_jobs:
            column(self.w[j], self.r[j] + self.p[j], math.inf, [(open_row[j], 1.0), *in_cuts[j]])
        return self._solve(cost, lower, upper, entries, row_lo, row_hi)

    def cuts(self, open_jobs: tuple[int, ...]) -> list[tuple[list[int], float]]:
        """Queyranne's inequalities over sets A of unfinished jobs, as (A, right-hand side).

        Every schedule processes at most m GPU-seconds a second, so it is also a preemptive
        single-machine schedule of the works a_j = q_j p_j / m, and (Goemans)
        sum_{j in A} a_j C_j >= r_min(A) a(A) + (a(A)**2 + sum_{j in A} a_j**2) / 2.
        All sets of up to :data:`_ALL_SETS` unfinished jobs; beyond, the nested sets in
        Smith's order and in release order.
        """
        out = self._cuts.get(open_jobs)
        if out is not None:
            return out
        if len(open_jobs) <= _ALL_SETS:
            sets = [
                [j for i, j in enumerate(open_jobs) if bits >> i & 1]
                for bits in range(1, 1 << len(open_jobs))
            ]
        else:
            sets = []
            for order in (
                sorted(open_jobs, key=lambda j: self.a[j] / self.w[j]),
                sorted(open_jobs, key=lambda j: self.r[j]),
            ):
                sets += [order[:k] for k in range(1, len(order) + 1)]
        out = []
        for members in sets:
            if len(members) < 2:
                continue  # C_j >= r_j + p_j is stronger
            a = [self.a[j] for j in members]
            total = math.fsum(a)
            rhs = min(self.r[j] for j in members) * total + 0.5 * (
                total * total + math.fsum(x * x for x in a)
            )
            out.append((members, rhs))
        self._cuts[open_jobs] = out
        return out

    def _solve(
        self,
        cost: list[float],
        lower: list[float],
        upper: list[float],
        entries: list[list[tuple[int, float]]],
        row_lo: list[float],
        row_hi: list[float],
    ) -> tuple[float, list[float]] | None:
        lp = highspy.HighsLp()
        lp.num_col_ = len(cost)
        lp.num_row_ = len(row_lo)
        lp.col_cost_ = np.asarray(cost)
        lp.col_lower_ = np.asarray(lower)
        lp.col_upper_ = np.asarray(upper)
        lp.row_lower_ = np.asarray(row_lo)
        lp.row_upper_ = np.asarray(row_hi)
        start = [0]
        index: list[int] = []
        value: list[float] = []
        for col in entries:
            for r, v in col:
                index.append(r)
                value.append(v)
            start.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.asarray(start, dtype=np.int32)
        lp.a_matrix_.index_ = np.asarray(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.asarray(value)
        h = self.highs
        h.clearModel()
        h.passModel(lp)
        h.run()
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kInfeasible:
            return None
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"HiGHS: {h.modelStatusToString(status)} on a prefix LP")
        # The value in seconds; the columns stay in the LP's unit (see :meth:`schedule`).
        objective = float(h.getInfo().objective_function_value) * self.unit_s
        return objective, list(h.getSolution().col_value)

    def children(self, events: list[Event]) -> list[Event]:
        """Events that may come next after a prefix."""
        released_groups = 1 + max(x for kind, x in events if kind == 0)
        done = {x for kind, x in events if kind == 1}
        out: list[Event] = []
        if released_groups < len(self.releases):
            out.append((0, released_groups))
        available = self.released_by[released_groups - 1]
        for j in range(self.n):
            if available >> j & 1 and j not in done:
                twin = self.twin_before[j]
                if twin < 0 or twin in done:
                    out.append((1, j))
        return out

    def schedule(self, events: list[Event], x: list[float]) -> Schedule:
        """Lay each interval's configurations end to end; give the pieces concrete GPUs."""
        n_ev = len(events)
        times = x[:n_ev]
        pieces: list[tuple[float, float, int, int]] = []
        t = -math.inf
        col = n_ev
        released = done = 0
        for e, (kind, ev) in enumerate(events[:-1]):
            if kind == 0:
                released |= self.released_by[ev]
            else:
                done |= 1 << ev
            # Never before the previous interval's last piece: its lengths may exceed its span
            # by the LP's tolerance.
            t = max(t, times[e])
            for _, chosen in self.configs(released & ~done):
                length = x[col]
                col += 1
                if length > 1e-12 * self.scale:
                    u = self.unit_s
                    pieces += [(t * u, (t + length) * u, j, self.q[j]) for j in chosen]
                    t += length
        given = assign_servers(self.caps, pieces)  # type: ignore[arg-type]
        per_job: list[list[tuple[float, float, Any]]] = [[] for _ in range(self.n)]
        for a, b, j, _ in pieces:
            per_job[j].append((a, b, given[(j, a)]))  # type: ignore[index]
        runs = []
        for j, job in enumerate(self.instance.jobs):
            merged: list[list[Any]] = []
            touch = 1e-12 * self.scale * self.unit_s
            for a, b, alloc in sorted(per_job[j]):
                if merged and abs(merged[-1][1] - a) <= touch and merged[-1][2] == alloc:
                    merged[-1][1] = b
                else:
                    merged.append([a, b, alloc])
            # The LP meets p_j to within its tolerance; the last piece makes it exact.
            merged[-1][1] += float(job.duration_s or 0) - math.fsum(b - a for a, b, _ in merged)
            segments = tuple(Segment(start_s=a, end_s=b, allocation=al) for a, b, al in merged)
            runs.append(
                JobRun(
                    id=job.id,
                    release_s=job.release_s,
                    completion_s=segments[-1].end_s,
                    segments=segments,
                )
            )
        return Schedule(runs=tuple(runs))
