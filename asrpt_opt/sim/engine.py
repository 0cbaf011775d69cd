"""The discrete-event simulator: :class:`Simulator`, its state and its Python event loop.

Time jumps from event to event (no ticks). Events are job arrivals, job completions and
wake-ups a policy asked for. At one instant the simulator processes, in this fixed order:

1. completions, in job-index order;
2. arrivals, in instance order (the predictor is asked once for all of them);
3. wake-ups;

and then consults the policy once. The policy answers with a :class:`~asrpt_opt.sim.view.Decision`
(preemptions, then starts); the simulator checks every part of it and refuses an infeasible
one with a :class:`~asrpt_opt.errors.PolicyError`. When the run ends, the schedule passes the
independent validator (:func:`~asrpt_opt.sim.validate.validate_schedule`).

A resumed job (one that ran before) holds its GPUs for ``restore_overhead_s`` seconds before it
makes progress again; a job whose GPUs span servers runs at the speed model's rate for that
allocation.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError, PolicyError, UsageError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.prediction import Predictor
from asrpt_opt.sim.compiled import compiled_kernel, run_compiled
from asrpt_opt.sim.placer import Placer
from asrpt_opt.sim.view import (
    COMPLETION,
    DONE,
    NO_DECISION,
    RUNNING,
    UNRELEASED,
    WAITING,
    WAKE,
    ClusterView,
    Decision,
    IdleWakeLimit,
    Policy,
)
from asrpt_opt.speed.base import SpeedModel

if TYPE_CHECKING:
    pass

__all__ = ["Simulator"]

logger = logging.getLogger(__name__)


class Simulator:
    """State and event loop of one simulation; use :func:`simulate` unless you need hooks.

    Parameters
    ----------
    instance : Instance
    policy : Policy
    speed : SpeedModel
    predictor : Predictor
    restore_overhead_s : float
    rng : numpy.random.Generator
    refit_every : int, optional
    history : sequence of Job
    placer : Placer, optional
    engine : {"python", "auto", "compiled"}
        Where :meth:`run` simulates (:mod:`asrpt_opt.sim.compiled`); ``python`` by default
        here, ``auto`` in :func:`simulate`.
    """

    def __init__(
        self,
        instance: Instance,
        policy: Policy,
        *,
        speed: SpeedModel,
        predictor: Predictor,
        restore_overhead_s: float,
        rng: np.random.Generator,
        refit_every: int | None = None,
        history: Sequence[Job] = (),
        placer: Placer | None = None,
        engine: str = "python",
    ) -> None:
        if refit_every is not None and refit_every < 1:
            raise UsageError(f"refit_every must be >= 1, got {refit_every!r}")
        if not (math.isfinite(restore_overhead_s) and restore_overhead_s >= 0):
            raise UsageError(f"restore_overhead_s must be >= 0, got {restore_overhead_s!r}")
        self.instance = instance
        self.policy = policy
        self.placer = placer or Placer(instance, "consolidate", speed)
        self.speed = speed
        self.predictor = predictor
        self.restore_overhead_s = float(restore_overhead_s)
        self.rng = rng
        self.refit_every = refit_every
        self.engine = engine
        self.history = list(history)
        self.completed: list[Job] = []
        self.refits = 0
        jobs = instance.jobs
        n = len(jobs)
        cluster = instance.cluster
        self.capacity = np.asarray(cluster.servers, dtype=np.int64)
        self.free = self.capacity.copy()
        self.total_gpus = int(self.capacity.sum())
        self.total_free = self.total_gpus
        self.job_gpus = np.array([j.gpus for j in jobs], dtype=np.int64)
        self.job_release = np.array([j.release_s for j in jobs], dtype=np.float64)
        self.job_weight = np.array([j.weight for j in jobs], dtype=np.float64)
        self._work = [speed.work(j) for j in jobs]
        self.best_rate = np.array([speed.best_rate(j, cluster) for j in jobs], dtype=np.float64)
        self.predicted = np.full(n, np.nan)
        # A predictor may promise never to predict below the truth (the oracle does); a job
        # then cannot run past its prediction, and policies need not watch for that.
        self.predictions_never_low = bool(getattr(predictor, "never_underestimates", False))
        self.now = 0.0
        self.status = [UNRELEASED] * n
        # The compiled core keeps its own state: a run it takes allocates none of the
        # per-job lists below (a million-job run's memory).
        self._kernel = compiled_kernel(self, engine)
        if self._kernel is None:
            self._loop_state(n)
        self._events: list[tuple[float, int, int, int]] = []
        self._wake_version = 0
        self.view = ClusterView(self)

    def _loop_state(self, n: int) -> None:
        self._gpus = self.job_gpus.tolist()
        self.rem = list(self._work)
        self._att_work = [0.0] * n
        self._att_gpu = [0.0] * n
        self.alloc: list[Allocation | None] = [None] * n
        self.started = [False] * n
        self._version = [0] * n
        self._seg_start = [0.0] * n
        self._work_start = [0.0] * n
        self._rate = [0.0] * n
        self._segments: list[list[tuple[float, float, Allocation]]] = [[] for _ in range(n)]
        self._completion = [math.nan] * n
        # Running jobs live in slots so policies can read their state as numpy arrays. At most
        # min(jobs, GPUs) run at once: memory grows with jobs and servers, never with GPUs.
        m = min(self.total_gpus, n)
        self._slot_of = np.full(n, -1, dtype=np.int64)
        # Attained work of the jobs not running, as an array too: a policy reads many jobs'
        # attained work in C (attained_work_of), the loop one job's from the list.
        self._att_work_arr = np.zeros(n)
        self.slot_job = np.full(m, -1, dtype=np.int64)
        self.slot_att0 = np.zeros(m)
        self.slot_gpu0 = np.zeros(m)
        self.slot_work_start = np.zeros(m)
        self.slot_seg_start = np.zeros(m)
        self.slot_rate = np.zeros(m)
        self.slot_gpus = np.zeros(m)
        self._free_slots = list(range(m - 1, -1, -1))
        self._running_cache: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None

    # ----------------------------------------------------------------- state queries
    @property
    def job_work(self) -> NDArray[np.float64]:
        """Each job's work units under the speed model, as an array."""
        return np.asarray(self._work, dtype=np.float64)

    def progress_start_s(self, job: int) -> float:
        """When running ``job``'s current segment makes progress from (its start, plus the
        restore overhead when it resumed)."""
        return self._work_start[job]

    def attained_work(self, job: int) -> float:
        """Work units ``job`` has processed at the current time."""
        if self.status[job] == RUNNING:
            busy = self.now - self._work_start[job]
            return self._att_work[job] + (busy * self._rate[job] if busy > 0 else 0.0)
        return self._att_work[job]

    def attained_work_of(self, jobs: NDArray[np.int64]) -> NDArray[np.float64]:
        """:meth:`attained_work` of each of ``jobs``, in one pass (the same values)."""
        out = self._att_work_arr[jobs]
        slots = self._slot_of[jobs]
        running = slots >= 0
        if running.any():
            s = slots[running]
            busy = self.now - self.slot_work_start[s]
            out[running] = self.slot_att0[s] + np.where(busy > 0, busy * self.slot_rate[s], 0.0)
        return out

    def rate_of(self, job: int) -> float:
        """Current rate of ``job`` (0 unless it is running)."""
        return self._rate[job] if self.status[job] == RUNNING else 0.0

    def attained_gpu_s(self, job: int) -> float:
        """GPU-seconds ``job`` has held at the current time."""
        if self.status[job] == RUNNING:
            return self._att_gpu[job] + (self.now - self._seg_start[job]) * self._gpus[job]
        return self._att_gpu[job]

    def running_slots(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(occupied slots, their jobs), cached until the running set changes."""
        if self._running_cache is None:
            slots = np.flatnonzero(self.slot_job >= 0)
            self._running_cache = (slots, self.slot_job[slots])
        return self._running_cache

    def running_attained_work(self) -> NDArray[np.float64]:
        """Attained work of the running jobs, aligned with :meth:`running_slots`."""
        slots, _ = self.running_slots()
        busy = np.maximum(self.now - self.slot_work_start[slots], 0.0)
        out: NDArray[np.float64] = self.slot_att0[slots] + busy * self.slot_rate[slots]
        return out

    def running_attained_gpu_s(self) -> NDArray[np.float64]:
        """Attained GPU-seconds of the running jobs, aligned with :meth:`running_slots`."""
        slots, _ = self.running_slots()
        held = (self.now - self.slot_seg_start[slots]) * self.slot_gpus[slots]
        out: NDArray[np.float64] = self.slot_gpu0[slots] + held
        return out

    # ----------------------------------------------------------------- transitions
    def _start(self, j: int, allocation: Allocation) -> None:
        now = self.now
        free = self.free
        for s, c in allocation:
            free[s] -= c
        gpus = self._gpus[j]
        self.total_free -= gpus
        self.alloc[j] = allocation
        rate = self.speed.rate(self.instance.jobs[j], allocation)
        if not (rate > 0 and math.isfinite(rate)):
            raise ModelError(f"speed model gave rate {rate!r} for job {self.view.job_ids[j]!r}")
        resumed = bool(self._segments[j])
        work_start = now + self.restore_overhead_s if resumed else now
        self._rate[j] = rate
        self._seg_start[j] = now
        self._work_start[j] = work_start
        self.status[j] = RUNNING
        self.started[j] = True
        slot = self._free_slots.pop()
        self._slot_of[j] = slot
        self.slot_job[slot] = j
        self.slot_att0[slot] = self._att_work[j]
        self.slot_gpu0[slot] = self._att_gpu[j]
        self.slot_work_start[slot] = work_start
        self.slot_seg_start[slot] = now
        self.slot_rate[slot] = rate
        self.slot_gpus[slot] = gpus
        self._running_cache = None
        self._version[j] += 1
        heapq.heappush(
            self._events, (work_start + self.rem[j] / rate, COMPLETION, j, self._version[j])
        )

    def _stop(self, j: int, finished: bool) -> None:
        now = self.now
        allocation = self.alloc[j]
        assert allocation is not None
        seg_start = self._seg_start[j]
        if now > seg_start:
            self._segments[j].append((seg_start, now, allocation))
        if finished:
            self.rem[j] = 0.0
            self._att_work[j] = self._work[j]
            self._completion[j] = now
            self.status[j] = DONE
        else:
            busy = now - self._work_start[j]
            done = busy * self._rate[j] if busy > 0 else 0.0
            self.rem[j] = max(self.rem[j] - done, 0.0)
            self._att_work[j] += done
            self.status[j] = WAITING
        gpus = self._gpus[j]
        self._att_gpu[j] += (now - seg_start) * gpus
        free = self.free
        for s, c in allocation:
            free[s] += c
        self.total_free += gpus
        self.alloc[j] = None
        slot = int(self._slot_of[j])
        self._slot_of[j] = -1
        self._att_work_arr[j] = self._att_work[j]
        self.slot_job[slot] = -1
        self._free_slots.append(slot)
        self._running_cache = None
        self._version[j] += 1

    # ----------------------------------------------------------------- decisions
    def _apply(self, decision: Decision) -> None:
        name = self.policy.name
        ids = self.view.job_ids
        n = len(ids)
        seen: set[int] = set()
        for j in decision.preempts:
            if not ((type(j) is int or isinstance(j, np.integer)) and 0 <= j < n):
                raise PolicyError(f"policy {name!r} preempted unknown job {j!r}")
            if self.status[j] != RUNNING or j in seen:
                raise PolicyError(
                    f"policy {name!r} preempted job {ids[j]!r} at t={self.now}, "
                    "which is not running"
                )
            seen.add(j)
            self._stop(int(j), finished=False)
        started: set[int] = set()
        for st in decision.starts:
            j = st.job
            if not ((type(j) is int or isinstance(j, np.integer)) and 0 <= j < n):
                raise PolicyError(f"policy {name!r} started unknown job {j!r}")
            if self.status[j] != WAITING or j in started:
                raise PolicyError(
                    f"policy {name!r} started job {ids[j]!r} at t={self.now}, which is not "
                    "waiting (unreleased, running or done)"
                )
            self._check_allocation(int(j), st.allocation)
            started.add(j)
            self._start(int(j), st.allocation)
        wake = decision.wake_at_s
        if wake is not None:
            if not (wake > self.now):
                raise PolicyError(
                    f"policy {name!r} asked to wake at {wake!r}, not after now={self.now}"
                )
            if math.isfinite(wake):
                heapq.heappush(self._events, (wake, WAKE, -1, self._wake_version))

    def _check_allocation(self, j: int, allocation: Allocation) -> None:
        name = self.policy.name
        job_id = self.view.job_ids[j]
        n_servers = self.capacity.size
        free = self.free
        total = 0
        last = -1
        try:
            for s, c in allocation:
                plain = type(s) is int and type(c) is int
                if plain and last < s < n_servers and 1 <= c <= free[s]:
                    last = s
                    total += c
                    continue
                if not (isinstance(s, int | np.integer) and last < s < n_servers):
                    raise PolicyError(
                        f"policy {name!r} gave job {job_id!r} server {s!r}: servers must exist "
                        "and be listed once, in increasing order"
                    )
                if not (isinstance(c, int | np.integer) and 1 <= c <= self.free[s]):
                    raise PolicyError(
                        f"policy {name!r} gave job {job_id!r} {c!r} GPUs on server {s} at "
                        f"t={self.now}, which has {self.free[s]} free"
                    )
                last = int(s)
                total += int(c)
        except (TypeError, ValueError):
            raise PolicyError(
                f"policy {name!r} gave job {job_id!r} a malformed allocation {allocation!r}"
            ) from None
        if total != self._gpus[j]:
            raise PolicyError(
                f"policy {name!r} gave job {job_id!r} {total} GPUs; it needs exactly "
                f"{self._gpus[j]} (gang)"
            )

    # ----------------------------------------------------------------- the loop
    def run(self) -> Schedule:
        """Simulate until every job completes.

        Returns
        -------
        Schedule
            Not yet validated; :func:`simulate` validates it.
        """
        jobs = self.instance.jobs
        n = len(jobs)
        by_release = np.argsort(self.job_release, kind="stable")
        policy = self.policy
        view = self.view
        policy.reset(view, self.rng)
        # A predictor that is never refitted is asked once, for every job in release order
        # (the same calls in the same order as batch by batch); each prediction is still
        # revealed only when its job arrives.
        ahead = None
        if self.refit_every is None and n:
            ahead = self._predictions(by_release)
        if self._kernel is not None and ahead is not None:
            schedule = run_compiled(self, self._kernel, ahead, by_release)
            if schedule is not None:
                return schedule
            # Past the core's integers: the Python loop, from a fresh policy.
            self._kernel = None
            self._loop_state(n)
            policy.reset(view, self.rng)
        order = by_release.tolist()
        release = self.job_release[by_release].tolist()
        events = self._events
        pop = heapq.heappop
        inf = math.inf
        next_arrival = 0
        finished = 0
        version = self._version
        idle_wakes, wakes = 0, IdleWakeLimit(n)
        while finished < n:
            # Superseded entries are not events: a completion whose job was preempted (its
            # version moved on) and a wake-up replaced by a later decision. Dropping them
            # before reading the next instant means the policy is consulted only at releases,
            # completions that happen and wake-ups it still wants.
            while events:
                _, kind, j, ver = events[0]
                if ver == (self._wake_version if kind == WAKE else version[j]):
                    break
                pop(events)
            t = events[0][0] if events else inf
            if next_arrival < n and release[next_arrival] < t:
                t = release[next_arrival]
            if t == inf:
                waiting = sum(1 for s in self.status if s == WAITING)
                raise PolicyError(
                    f"policy {policy.name!r} left {waiting} jobs waiting at t={self.now} with "
                    "nothing running, no arrival to come and no wake-up"
                )
            self.now = t
            events_before = finished + next_arrival
            # A completion a rounding error after this instant happens now: otherwise a
            # wake-up at the same instant could preempt a job whose work is done, and its
            # completion would move to its next start.
            horizon = t + 1e-12 * (t if t > 1.0 else 1.0)
            while events and events[0][0] <= horizon:
                _, kind, j, ver = pop(events)
                if kind == COMPLETION and ver == version[j]:
                    self._stop(j, finished=True)
                    finished += 1
                    policy.on_completion(j, view)
                    self._learn(j)
            if next_arrival < n and release[next_arrival] <= t:
                first = next_arrival
                while next_arrival < n and release[next_arrival] <= t:
                    next_arrival += 1
                batch = order[first:next_arrival]
                if ahead is None:
                    self.predicted[batch] = self._predictions(batch)
                else:
                    self.predicted[batch] = ahead[first:next_arrival]
                for j in batch:
                    self.status[j] = WAITING
                    policy.on_arrival(j, view)
            if finished == n:
                break
            if finished + next_arrival == events_before:
                idle_wakes += 1
                if idle_wakes > wakes.limit:
                    raise wakes.error(policy.name, t)
            decision = policy.decide(view)
            self._wake_version += 1
            if decision is not NO_DECISION:
                self._apply(decision)
        return Schedule(runs=tuple(self._records()), restore_overhead_s=self.restore_overhead_s)

    def _records(self) -> Iterator[JobRun]:
        # Each job's segment list is dropped as its record is built, so the simulator's copy
        # and the schedule never both hold every segment (a million-job run's peak).
        segments = self._segments
        completion = self._completion
        for i, job in enumerate(self.instance.jobs):
            parts, segments[i] = segments[i], []
            yield JobRun(
                id=job.id,
                release_s=job.release_s,
                completion_s=completion[i],
                segments=tuple([Segment(start_s=a, end_s=b, allocation=c) for a, b, c in parts]),
            )

    def _learn(self, j: int) -> None:
        # The predictor sees a job only once it has completed: no future leaks into a
        # prediction, and a job's own length never informs its own prediction.
        if self.refit_every is None:
            return
        self.completed.append(self.instance.jobs[j])
        if len(self.completed) % self.refit_every == 0:
            self.predictor.fit(self.history + self.completed)
            self.refits += 1

    def _predictions(self, batch: list[int] | NDArray[np.int64]) -> NDArray[np.float64]:
        jobs = self.instance.jobs
        index = batch.tolist() if isinstance(batch, np.ndarray) else batch
        values = np.asarray(self.predictor.predict([jobs[j] for j in index]), dtype=np.float64)
        if values.shape != (len(batch),) or not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ModelError(
                f"predictor {type(self.predictor).__name__} must return one finite positive "
                f"value per job, got {values!r}"
            )
        return values
