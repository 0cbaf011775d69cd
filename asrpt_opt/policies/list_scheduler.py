"""Priority list scheduling with backfill and optional preemption, shared by the policies.

A policy gives each job a scalar *key* (smaller = more urgent; ties go to the lower job
index). At every decision the scheduler walks the waiting jobs in key order and starts each one
that fits in the free GPUs (later jobs may backfill GPUs an earlier job could not use). A
preemptive policy may also make room for a waiting job by preempting running jobs with a
strictly larger key, largest key first, and only as many as needed.

Waiting jobs are kept in one heap per width, so a decision costs O(W log n) per start for W
distinct job widths instead of a scan of the whole queue: once the head of a width's heap
cannot start, no later job of that width can either.
"""

from __future__ import annotations

import heapq
from bisect import insort
from functools import partial
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.sim.compiled import Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision, Start

__all__ = ["ListScheduler"]


class ListScheduler:
    """Base class of the list-scheduling policies; subclasses define the keys.

    Parameters
    ----------
    backfill : bool
        Let a later job start when an earlier one does not fit. Without backfill, the
        scheduler stops at the first waiting job that cannot start.
    max_placement_slowdown : float, optional
        A placement-aware start rule (off by default): a job whose placement in the free GPUs
        would run more than this factor slower than its best placement on an empty cluster
        waits for a better one (like Tiresias' consolidation), unless the cluster is idle.
        Must be >= 1.
    """

    name = "list"
    preemptive = False
    #: It decides from the jobs in the system alone, so it remembers nothing once the
    #: cluster empties: :func:`~asrpt_opt.sim.stream.simulate_stream` may cut runs there.
    regenerative = True
    #: The placement method :func:`~asrpt_opt.sim.simulation.simulate` uses when none is given.
    default_placement = "consolidate"
    #: The key rule of exactly this class in its compiled kernel
    #: (:data:`asrpt_opt.policies.list_scheduler_kernel.KEYS`); a subclass, which may change
    #: any hook, has none unless it sets its own.
    _core: ClassVar[str | None] = None

    def __init__(
        self, *, backfill: bool = True, max_placement_slowdown: float | None = None
    ) -> None:
        if max_placement_slowdown is not None and not max_placement_slowdown >= 1:
            raise UsageError(
                f"max_placement_slowdown must be >= 1, got {max_placement_slowdown!r}"
            )
        self.backfill = backfill
        self.max_placement_slowdown = max_placement_slowdown

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies.list_scheduler_kernel`),
        or None when it has none (a subclass, or the placement-aware start rule).

        Returns
        -------
        Kernel or None
        """
        if not self._compiles():
            return None
        rule = type(self).__dict__["_core"]
        return Kernel(name=rule, build=partial(_list_state, rule, bool(self.backfill), ()))

    def _compiles(self) -> bool:
        # Exactly a class with a compiled rule, without the placement-aware start rule.
        return type(self).__dict__.get("_core") is not None and self.max_placement_slowdown is None

    # ----------------------------------------------------------------- hooks
    def waiting_key(self, job: int, view: ClusterView) -> float:
        """Key of ``job`` as it (re-)enters the queue."""
        raise NotImplementedError

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Keys of the running ``jobs`` (aligned with ``view.running_jobs()``) right now."""
        raise NotImplementedError

    def worth_preempting(self, job: int, victims: list[int], view: ClusterView) -> bool:
        """Whether preempting ``victims`` to start ``job`` is worth it (default: yes)."""
        return True

    def wake_time(
        self, view: ClusterView, starts: list[Start], preempts: list[int]
    ) -> float | None:
        """When to be consulted again without an event (default: never).

        ``starts`` and ``preempts`` are this decision's, not yet applied to ``view``. Waking
        early is harmless (the policy is simply consulted again), so an estimate may err
        early but never late.
        """
        return None

    def place(self, job: int, free: NDArray[np.int64], view: ClusterView) -> Allocation | None:
        """Choose GPUs for ``job`` among ``free``, or None to leave it waiting (default: the
        simulation's placement method, :meth:`~asrpt_opt.sim.view.ClusterView.place`, and the
        start rule ``max_placement_slowdown``)."""
        allocation = view.place(job, free)
        limit = self.max_placement_slowdown
        if allocation is None or limit is None or view.total_free == view.total_gpus:
            return allocation
        if float(view.best_rate[job]) > view.rate_on(job, allocation) * limit:
            return None
        return allocation

    # ----------------------------------------------------------------- protocol
    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Empty the queues."""
        n = view.n_jobs
        self.rng = rng
        self._buckets: dict[int, list[tuple[float, int, int]]] = {}
        self._widths: list[int] = []
        self._version = [0] * n
        self._queued = [False] * n
        self._n_waiting = 0

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """Queue the new job."""
        self._enqueue(job, self.waiting_key(job, view), view)

    def on_completion(self, job: int, view: ClusterView) -> None:
        """Nothing to do: running jobs are not queued."""

    def _enqueue(self, job: int, key: float, view: ClusterView) -> None:
        width = int(view.job_gpus[job])
        heap = self._buckets.get(width)
        if heap is None:
            heap = self._buckets[width] = []
            insort(self._widths, width)
        self._version[job] += 1
        heapq.heappush(heap, (key, job, self._version[job]))
        if not self._queued[job]:
            self._queued[job] = True
            self._n_waiting += 1

    def requeue(self, job: int, key: float, view: ClusterView) -> None:
        """Give a waiting job a new key (no effect on a job that is not queued)."""
        if self._queued[job]:
            self._enqueue(job, key, view)

    def _head(self, width: int) -> tuple[float, int, int] | None:
        heap = self._buckets[width]
        version, queued = self._version, self._queued
        while heap:
            entry = heap[0]
            if queued[entry[1]] and entry[2] == version[entry[1]]:
                return entry
            heapq.heappop(heap)
        return None

    def _dequeue(self, width: int) -> None:
        _, job, _ = heapq.heappop(self._buckets[width])
        self._queued[job] = False
        self._n_waiting -= 1

    def decide(self, view: ClusterView) -> Decision:
        """Start waiting jobs in key order, preempting where the policy allows."""
        if self._n_waiting == 0 or (view.total_free == 0 and not self.preemptive):
            return self._finish([], [], view)
        total_free = view.total_free
        # GPUs held by running jobs, all of which a preemptive policy might reclaim.
        spare = view.total_gpus - total_free if self.preemptive else 0
        free = view.free_gpus.copy()
        starts: list[Start] = []
        preempts: list[int] = []
        running: _Running | None = None
        # One candidate per width: the head of its heap. Popping candidates in key order
        # visits waiting jobs in priority order without scanning the queues.
        cands = []
        for width in self._widths:
            head = self._head(width)
            if head is not None:
                cands.append((*head, width))
        heapq.heapify(cands)
        while cands:
            key, job, _, width = heapq.heappop(cands)
            if width > total_free:
                victims = None
                if width <= total_free + spare:
                    if running is None:
                        running = _Running(self, view)
                    victims = running.victims(key, width - total_free)
                if victims is not None and not self.worth_preempting(job, victims, view):
                    assert running is not None
                    running.spare_again(victims)
                    victims = None
                if victims is None:
                    # No later job of this width can start either: drop the width.
                    if not self.backfill:
                        break
                    continue
                for victim in victims:
                    allocation = view.allocation(victim)
                    assert allocation is not None
                    for s, c in allocation:
                        free[s] += c
                    gpus = int(view.job_gpus[victim])
                    total_free += gpus
                    spare -= gpus
                    preempts.append(victim)
            else:
                victims = []
            allocation = self.place(job, free, view)
            if allocation is None:
                # No placement although enough GPUs are free in total (a placement method or
                # rule may refuse): undo this job's preemptions; it keeps waiting.
                for victim in victims:
                    held = view.allocation(victim)
                    assert held is not None
                    for s, c in held:
                        free[s] -= c
                    gpus = int(view.job_gpus[victim])
                    total_free -= gpus
                    spare += gpus
                    preempts.remove(victim)
                if victims:
                    assert running is not None
                    running.spare_again(victims)
                if not self.backfill:
                    break
                continue
            for s, c in allocation:
                free[s] -= c
            total_free -= width
            self._dequeue(width)
            starts.append(Start(job, allocation))
            head = self._head(width)
            if head is not None:
                heapq.heappush(cands, (*head, width))
        # Preempted jobs queue again only now, so none restarts in the decision that stopped it.
        for victim in preempts:
            self._enqueue(victim, self.waiting_key(victim, view), view)
        return self._finish(starts, preempts, view)

    def _finish(self, starts: list[Start], preempts: list[int], view: ClusterView) -> Decision:
        wake = self.wake_time(view, starts, preempts)
        if not starts and not preempts and wake is None:
            return NO_DECISION
        return Decision(starts=tuple(starts), preempts=tuple(preempts), wake_at_s=wake)


class _Running:
    """The running jobs' keys at one decision, computed on first use, and who is preempted."""

    def __init__(self, scheduler: ListScheduler, view: ClusterView) -> None:
        self._scheduler = scheduler
        self._view = view
        self.jobs = view.running_jobs()
        self.gpus = view.job_gpus[self.jobs]
        self._keys: NDArray[np.float64] | None = None
        self._alive = np.ones(self.jobs.size, dtype=bool)
        self._max_key = np.inf

    def victims(self, key: float, need: int) -> list[int] | None:
        """Fewest lower-priority running jobs (largest keys first) that free ``need`` GPUs.

        The chosen jobs are marked preempted; None (and nothing marked) when even every
        lower-priority job together would not make room.
        """
        if self._keys is None:
            self._keys = self._scheduler.running_keys(self.jobs, self._view)
            self._max_key = float(self._keys.max()) if self._keys.size else -np.inf
        if key >= self._max_key:  # the usual case under load: nobody ranks below the job
            return None
        keys, gpus, jobs = self._keys, self.gpus, self.jobs
        cand = np.flatnonzero(self._alive & (keys > key))
        if cand.size == 0 or int(gpus[cand].sum()) < need:
            return None
        order = cand[np.lexsort((-jobs[cand], -keys[cand]))]
        chosen: list[int] = []
        got = 0
        for i in order.tolist():
            chosen.append(i)
            got += int(gpus[i])
            if got >= need:
                break
        # Spare the more urgent of the chosen victims when the others already make room.
        for i in list(reversed(chosen[:-1])):
            if got - int(gpus[i]) >= need:
                chosen.remove(i)
                got -= int(gpus[i])
        self._set_alive(chosen, False)
        return [int(jobs[i]) for i in chosen]

    def spare_again(self, victims: list[int]) -> None:
        """Undo :meth:`victims` when the policy decides the preemption is not worth it."""
        slots = np.flatnonzero(np.isin(self.jobs, victims))
        self._set_alive(slots.tolist(), True)

    def _set_alive(self, slots: list[int], alive: bool) -> None:
        assert self._keys is not None
        self._alive[slots] = alive
        live = self._keys[self._alive]
        self._max_key = float(live.max()) if live.size else -np.inf


def _list_state(rule: str, backfill: bool, thresholds: Any, state: Any) -> Any:
    """The compiled list state of key rule ``rule`` for the compiled simulator ``state``."""
    from asrpt_opt.policies import list_scheduler_kernel as kernel

    limits = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    return kernel.new_state(state, kernel.KEYS.index(rule), backfill, limits)
