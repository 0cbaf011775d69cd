"""Shared data preparation for the exact offline models.

Both backends work on integer time: every release, duration (and spread duration) is divided
by the largest common unit, so the models are exact for the instance as given. Horizons and
big-M values come from the data: an upper bound UB on the optimum (from list schedules) gives
every job a deadline, because C_j <= (UB - sum_{k != j} w_k (r_k + p_k)) / w_j in any schedule
at least as good as UB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from asrpt_opt.errors import ScheduleError, SolverError, UnknownNameError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.sim.validate import validate_schedule
from asrpt_opt.solvers._profile import Profile, pool_alloc
from asrpt_opt.solvers.result import Deadline, Runs
from asrpt_opt.speed.default import CLUSTER_MODELS, offline_speed

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "MAX_SLOT_VARIABLES",
    "Discrete",
    "InfeasibleInstance",
    "OffGrid",
    "check_slot_variables",
    "discretise",
    "list_schedule",
    "validate_for_model",
]


class InfeasibleInstance(SolverError):
    """No schedule exists under the requested cluster model."""


class OffGrid(SolverError):
    """The data has no common time unit the integer-time models can use: a value off any
    rational grid, below its resolution (:data:`RESOLUTION_S`), or too many slots."""


#: The finest time the integer-time models resolve: values are read as fractions with
#: denominators up to 10**6.
RESOLUTION_S = 1e-6


_MAX_SLOTS = 100_000

#: The most per-slot variables a slot-indexed model (the preemptive CP-SAT model, the MILP,
#: the LP bounds) is built with: about 1 KB of memory each in PuLP or CP-SAT, so 400,000
#: stay within half a gigabyte.
MAX_SLOT_VARIABLES = 400_000


def _unit(values: list[float]) -> Fraction:
    from fractions import Fraction

    fracs = []
    for v in values:
        f = Fraction(v).limit_denominator(round(1 / RESOLUTION_S))
        if f == 0 and v != 0:
            raise OffGrid(f"value {v!r} is below the integer-time models' resolution (1e-6 s)")
        if abs(float(f) - v) > 1e-9 * max(1.0, abs(v)):
            raise OffGrid(f"value {v!r} is not on a rational grid; round the instance data")
        fracs.append(f)
    num = 0
    den = 1
    for f in fracs:
        if f == 0:
            continue
        # gcd of fractions a/b and c/d is gcd(a*d, c*b) / (b*d)
        num, den = math.gcd(num * f.denominator, f.numerator * den), den * f.denominator
        g = math.gcd(num, den)
        num, den = num // g, den // g
    return Fraction(num, den) if num else Fraction(1)


@dataclass(frozen=True, kw_only=True)
class Discrete:
    """An instance on integer time (unit ``unit_s`` seconds)."""

    instance: Instance
    cluster_model: str
    unit_s: float
    release: list[int]
    dur: list[int]
    spread_dur: list[int]
    gpus: list[int]
    weight: list[float]
    caps: list[int]
    deadline: list[int]
    ub_units: float | None
    #: The best list schedule (per job start, length, allocation), once computed.
    heuristic: list[tuple[int, int, Allocation]] | None = None

    @property
    def n(self) -> int:
        """Number of jobs."""
        return len(self.dur)

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return sum(self.caps)

    @property
    def horizon(self) -> int:
        """No job of an optimal schedule ends later than this."""
        return max(self.deadline)

    def identical_groups(self) -> list[list[int]]:
        """Groups (of two or more) of interchangeable jobs: same release, durations, width and
        weight. Any schedule can be relabelled so that within a group the lower index starts
        no later, so both backends order them (symmetry breaking)."""
        groups: dict[tuple[object, ...], list[int]] = {}
        for j in range(self.n):
            key = (self.release[j], self.dur[j], self.spread_dur[j], self.gpus[j], self.weight[j])
            groups.setdefault(key, []).append(j)
        return [g for g in groups.values() if len(g) > 1]

    def pieces(
        self, chosen: list[tuple[int, int, int, int]]
    ) -> list[list[tuple[int, int, Allocation]]]:
        """Per job, its pieces with concrete GPUs, from ``(job, server, start, end)`` choices in
        time units; server -1 means the pooled cluster, whose pieces get servers here."""
        out: Runs = [[] for _ in range(self.n)]
        pooled = [(a, b, j, self.gpus[j]) for j, s, a, b in chosen if s == -1]
        given = assign_servers(self.caps, pooled) if pooled else {}
        for j, s, a, b in chosen:
            alloc = given[(j, a)] if s == -1 else ((s, self.gpus[j]),)
            out[j].append((a, b, alloc))
        return out

    def local_ok(self, j: int, s: int, *, symmetry: bool = True) -> bool:
        """Whether job ``j`` may run on server ``s`` alone.

        Identical servers are interchangeable, so with ``symmetry`` job 0 is only offered the
        first server of each group of identical servers: any non-preemptive schedule can be
        relabelled so. (Not for preemptive models, where job 0 may move between servers.)
        """
        if self.gpus[j] > self.caps[s]:
            return False
        return not (symmetry and j == 0 and self.caps[s] in self.caps[:s])


def discretise(
    instance: Instance,
    cluster_model: str,
    *,
    preemptive: bool,
    upper_bound_s: float | None = None,
    deadline: Deadline | None = None,
) -> Discrete:
    """Scale an abstract instance to integer time and derive deadlines.

    Parameters
    ----------
    instance : Instance
    cluster_model : {"pooled", "server-local", "spread"}
    preemptive : bool
    upper_bound_s : float, optional
        The value of a known feasible schedule of the model; deadlines come from the better
        of it and the list schedules.

    Returns
    -------
    Discrete

    Raises
    ------
    SolverError
        For DNN jobs, data off any rational grid, or a job no placement can hold.
    """
    if cluster_model not in CLUSTER_MODELS:
        raise UnknownNameError("cluster model", cluster_model, CLUSTER_MODELS)
    if not instance.is_abstract:
        raise SolverError("the exact offline models handle abstract jobs (duration_s) only")
    jobs = instance.jobs
    caps = list(instance.cluster.servers)
    raw = [j.release_s for j in jobs] + [float(j.duration_s or 0) for j in jobs]
    if cluster_model == "spread":
        raw += [float(j.duration_s or 0) * j.spread_slowdown for j in jobs]
    from fractions import Fraction

    unit = _unit(raw)
    scale = 1 / unit

    def ints(values: list[float]) -> list[int]:
        return [round(Fraction(v).limit_denominator(10**6) * scale) for v in values]

    span = max(raw) / float(unit) if raw else 0.0
    if span > _MAX_SLOTS:
        raise OffGrid(
            f"the data's common time unit is {float(unit):.3g} s, which makes {span:.3g} time "
            f"slots (limit {_MAX_SLOTS}); round releases and durations to a coarser grid"
        )
    release = ints([j.release_s for j in jobs])
    dur = ints([float(j.duration_s or 0) for j in jobs])
    if cluster_model == "spread":
        spread = ints([float(j.duration_s or 0) * j.spread_slowdown for j in jobs])
    else:
        spread = list(dur)
    gpus = [j.gpus for j in jobs]
    for k, j in enumerate(jobs):
        if cluster_model == "server-local" and j.gpus > max(caps):
            raise InfeasibleInstance(
                f"job {j.id!r} needs {j.gpus} GPUs, more than any server has; "
                "server-local placement is infeasible"
            )
        if cluster_model == "spread" and j.gpus > max(caps) and spread[k] < dur[k]:
            raise SolverError(f"job {j.id!r}: spread duration below its duration")
    weight = [j.weight for j in jobs]
    trivial = Discrete(
        instance=instance,
        cluster_model=cluster_model,
        unit_s=float(unit),
        release=release,
        dur=dur,
        spread_dur=spread,
        gpus=gpus,
        weight=weight,
        caps=caps,
        deadline=[0] * len(jobs),
        ub_units=None,
    )
    starts = list_schedule(trivial, deadline=deadline)
    ub = sum(weight[k] * (starts[k][0] + starts[k][1]) for k in range(len(jobs)))
    if upper_bound_s is not None:
        ub = min(ub, upper_bound_s / float(unit))
    # Every job of a schedule at least as good as UB ends by its deadline.
    fixed = sum(
        w * (r + min(p, q)) for w, r, p, q in zip(weight, release, dur, spread, strict=True)
    )
    due = []
    for k in range(len(jobs)):
        own = weight[k] * (release[k] + min(dur[k], spread[k]))
        due.append(math.floor((ub - fixed + own) / weight[k] + 1e-9))
    del preemptive  # the same deadlines hold with and without preemption
    return replace(trivial, deadline=due, ub_units=ub, heuristic=starts)


def check_slot_variables(data: Discrete, *, preemptive: bool, pooled: bool, what: str) -> None:
    """Refuse, before building anything, a slot-indexed model of more than
    :data:`MAX_SLOT_VARIABLES` variables.

    Parameters
    ----------
    data : Discrete
    preemptive : bool
        One variable per slot a job may run in (else per slot it may start in).
    pooled : bool
        One pool of GPUs (else one variable per server that can hold the job).
    what : str
        The model's name, for the message.

    Raises
    ------
    SolverError
        Naming the model, its size and the limit.
    """
    count = 0
    for j in range(data.n):
        slots = data.deadline[j] - data.release[j] - (0 if preemptive else data.dur[j] - 1)
        pools = 1 if pooled else sum(data.gpus[j] <= c for c in data.caps)
        count += max(slots, 0) * pools
    if count > MAX_SLOT_VARIABLES:
        raise SolverError(
            f"{what} would need {count:.3g} slot variables (limit {MAX_SLOT_VARIABLES}): "
            "too many jobs or too long a horizon for a slot-indexed model"
        )


def list_schedule(
    data: Discrete, order: list[int] | None = None, *, deadline: Deadline | None = None
) -> list[tuple[int, int, Allocation]]:
    """Earliest-fit list schedule (non-preemptive).

    Parameters
    ----------
    data : Discrete
    order : list of int, optional
        Job order; when None the release, WSPT and release+length orders are tried and the
        best kept.
    deadline : Deadline, optional
        Raises :class:`~asrpt_opt.solvers.result.OutOfTime` once it passes.

    Returns
    -------
    list of (start, length, Allocation)
        Per job, in time units; the allocation is empty for pooled placement.
    """
    n = data.n
    if order is None:
        best: list[tuple[int, int, Allocation]] | None = None
        best_value = math.inf
        orders = [
            sorted(range(n), key=lambda k: (data.release[k], k)),
            sorted(range(n), key=lambda k: (data.dur[k] / data.weight[k], k)),
            sorted(range(n), key=lambda k: (data.release[k] + data.dur[k], k)),
        ]
        for o in orders:
            sched = list_schedule(data, o, deadline=deadline)
            value = sum(data.weight[k] * (sched[k][0] + sched[k][1]) for k in range(n))
            if value < best_value:
                best, best_value = sched, value
        assert best is not None
        return best
    servers = Profile(data.caps)
    pool = Profile([data.total_gpus])
    out: list[tuple[int, int, Allocation] | None] = [None] * n
    for done, k in enumerate(order):
        if deadline is not None and done % 256 == 0:
            deadline.check("list scheduling")
        if data.cluster_model == "pooled":
            # GPUs of the pool are interchangeable: servers are assigned afterwards.
            t = pool.earliest(pool.free[0], data.release[k], data.dur[k], data.gpus[k])
            pool.reserve(t, data.dur[k], ((0, data.gpus[k]),))
            out[k] = (t, data.dur[k], ())
            continue
        start, length, alloc = min(_options(data, servers, k), key=lambda o: (o[0] + o[1], o[0]))
        servers.reserve(start, length, alloc)
        out[k] = (start, length, alloc)
    return [o for o in out if o is not None]


def _options(data: Discrete, profile: Profile, k: int) -> list[tuple[int, int, Allocation]]:
    """Job ``k``'s earliest placements: on each server that can hold it, and (under the
    spread model) across servers at its spread duration."""
    q, r = data.gpus[k], data.release[k]
    options: list[tuple[int, int, Allocation]] = []
    for s in range(len(data.caps)):
        if q <= data.caps[s]:
            t = profile.earliest(profile.free[s], r, data.dur[k], q)
            options.append((t, data.dur[k], ((s, q),)))
    if data.cluster_model == "spread":
        p = data.spread_dur[k]
        total = profile.free.sum(axis=0)
        t = profile.earliest(total, r, p, q)
        while True:
            alloc = pool_alloc(profile, t, p, q)
            if sum(c for _, c in alloc) == q:
                break
            # The same steps give the same room: go to the next start whose window differs.
            t = profile.earliest(total, profile.next_change(t, p), p, q)
        if len(alloc) > 1 or not options:
            options.append((t, p, alloc))
    return options


def assign_servers(
    caps: list[int], pieces: list[tuple[int, int, int, int]]
) -> dict[tuple[int, int], Allocation]:
    """Give pooled pieces concrete GPUs: ``pieces`` are (start, end, job, gpus) in units.

    Sweeping in time, each piece takes GPUs from the servers with the most free GPUs
    (releases first at equal times); this always succeeds when total use never exceeds the
    pool, because GPUs are interchangeable units.
    """
    events = []
    for i, (a, b, _, _) in enumerate(pieces):
        events.append((b, 0, i))
        events.append((a, 1, i))
    events.sort()
    free = list(caps)
    out: dict[tuple[int, int], Allocation] = {}
    for _, kind, i in events:
        a, _, job, need = pieces[i]
        if kind == 0:
            alloc = out.get((job, a))
            if alloc is not None:
                for s, c in alloc:
                    free[s] += c
            continue
        order = sorted(range(len(free)), key=lambda s: (-free[s], s))
        taken = []
        for s in order:
            if need == 0:
                break
            take = min(free[s], need)
            if take:
                taken.append((s, take))
                free[s] -= take
                need -= take
        if need:
            raise SolverError("pooled capacity exceeded while assigning servers")
        out[(job, a)] = tuple(sorted(taken))
    return out


def to_schedule(data: Discrete, runs: list[list[tuple[int, int, Allocation]]]) -> Schedule:
    """Build a :class:`Schedule` in seconds from per-job (start, end, alloc) pieces in units.

    Pieces with an empty allocation (pooled placement) get concrete servers here.
    """
    u = data.unit_s
    pooled = [(a, b, j, data.gpus[j]) for j, ps in enumerate(runs) for a, b, al in ps if not al]
    if pooled:
        given = assign_servers(data.caps, pooled)
        runs = [[(a, b, al or given[(j, a)]) for a, b, al in ps] for j, ps in enumerate(runs)]
    out = []
    for job, pieces in zip(data.instance.jobs, runs, strict=True):
        merged: list[list[object]] = []
        for a, b, alloc in sorted(pieces):
            if merged and merged[-1][1] == a and merged[-1][2] == alloc:
                merged[-1][1] = b
            else:
                merged.append([a, b, alloc])
        segs = tuple(
            Segment(start_s=float(a) * u, end_s=float(b) * u, allocation=alloc)  # type: ignore[arg-type]
            for a, b, alloc in merged
        )
        out.append(
            JobRun(id=job.id, release_s=job.release_s, completion_s=segs[-1].end_s, segments=segs)
        )
    return Schedule(runs=tuple(out))


def validate_for_model(instance: Instance, schedule: Schedule, cluster_model: str) -> None:
    """Check ``schedule`` with the independent validator under the model's speed rule, and
    that no job spans servers under the server-local model.

    Parameters
    ----------
    instance : Instance
    schedule : Schedule
    cluster_model : {"pooled", "server-local", "spread"}

    Raises
    ------
    ScheduleError
        Naming the first violation.
    """
    validate_schedule(instance, schedule, speed=offline_speed(cluster_model))
    if cluster_model == "server-local":
        for run in schedule.runs:
            if any(len(seg.allocation) != 1 for seg in run.segments):
                raise ScheduleError(
                    f"job {run.id!r} spans servers under the server-local cluster model"
                )
