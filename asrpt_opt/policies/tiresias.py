"""Tiresias' discretized 2D-LAS exactly as its published simulator runs it.

:class:`~asrpt_opt.policies.las2d.TwoDimensionalLAS` is 2D-LAS as the paper describes it
(queues by attained GPU-seconds, demotion the instant a threshold is crossed). The
reference simulator (``SymbioticLab/Tiresias``, ``simulator/run_sim.py``, ``dlas-gpu``) makes
choices of its own, and a comparison with "Tiresias' 2D-LAS" needs those. This module
re-implements them (our own code, from a reading of that simulator):

* **Queues and limits.** Three queues; a job enters queue 0 and moves down one queue when its
  attained service, ``executed seconds x GPUs``, reaches 3,250 then 7,200 GPU-seconds.
* **Attained service** is counted in whole seconds and only checked at events: arrivals,
  completions and "queue jumps".
* **Queue jumps.** After each decision the simulator schedules a check at
  ``now + (limit - executed_seconds) // gpus`` for every running job above the last queue:
  the limit in GPU-seconds minus the attained time in *seconds*, floor-divided by the GPUs. For
  multi-GPU jobs this is early, so the job is checked several times and is demoted at the
  first check at which it has passed the limit, usually well past it. This is what makes the
  published policy differ from the paper's description; it is reproduced on purpose.
* **One demotion per check**, appended to the end of the next queue.
* **Order within a queue.** Arrival order, except that after every decision the waiting jobs
  of each queue move behind its running ones (keeping their order): a running job keeps its
  place ahead of the jobs it displaced.
* **Scheduling** walks the queues in order and runs every job that fits in the GPUs left (only
  the count matters, no placement), preempting running jobs that no longer fit. There is no
  starvation promotion (``dlas-gpu`` runs with ``solve_starvation = 0``) and no preemption cost.

References
----------
.. [1] J. Gu, M. Chowdhury, K. G. Shin, Y. Zhu, M. Jeon, J. Qian, H. Liu, C. Guo, "Tiresias:
   A GPU cluster manager for distributed deep learning", NSDI 2019.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from functools import partial
from os import PathLike
from typing import Any

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.placement.consolidate import consolidate
from asrpt_opt.policies._gittins_sample import SizeSample, read_sample, whole_array
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision, Start

__all__ = ["TIRESIAS_QUEUE_LIMITS_GPU_S", "Gittins", "TiresiasDLAS", "TiresiasGittins"]

#: Tiresias' default queue limits (GPU-seconds): three queues.
TIRESIAS_QUEUE_LIMITS_GPU_S = (3250, 7200)
#: The compiled kernel holds limits, the quantum and sizes as 64-bit integers below this
#: (products of two stay exact); others run in Python.
KERNEL_WHOLE = 2**31


class TiresiasDLAS:
    """Tiresias' ``dlas-gpu``: discretized 2D-LAS with the reference simulator's semantics.

    Attained service is counted in whole seconds, truncated at each event, as the reference
    does; on integer releases and durations (the reference's input) the schedules agree.
    The reference updates and re-walks every runnable job at every decision; here one clock
    counts the running jobs' seconds, heaps hold the due demotions and queue jumps, and the
    walk is skipped when every runnable job fits, with the same schedules.

    Parameters
    ----------
    queue_limits_gpu_s : sequence of int
        Increasing limits in GPU-seconds; K limits give K + 1 queues.
    """

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name = "tiresias-2d-las"
    #: It decides from the jobs in the system alone, so it remembers nothing once the
    #: cluster empties: :func:`~asrpt_opt.sim.stream.simulate_stream` may cut runs there.
    regenerative = True
    default_placement = "consolidate"

    def __init__(self, *, queue_limits_gpu_s: Sequence[int] = TIRESIAS_QUEUE_LIMITS_GPU_S) -> None:
        self.queue_limits_gpu_s = queue_limits_gpu_s

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies.tiresias_kernel`); None
        for a subclass, which may change any step, or limits past the kernel's whole
        numbers.

        Returns
        -------
        Kernel or None
        """
        if type(self) is not TiresiasDLAS:
            return None
        return _whole_kernel(self.name, self._checked_limits(), 1, ())

    def _checked_limits(self) -> tuple[int, ...]:
        limits = tuple(int(x) for x in self.queue_limits_gpu_s)
        if any(b <= a for a, b in itertools.pairwise(limits)) or (limits and limits[0] <= 0):
            raise UsageError(
                f"queue_limits_gpu_s must be positive and increasing, got {list(limits)}"
            )
        return limits

    # ----------------------------------------------------------------- protocol
    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Empty the queues and check the limits."""
        limits = list(self._checked_limits())
        self._limits = limits
        # Ordered sets: removal in O(1), iteration in queue order.
        self._queues: list[dict[int, None]] = [{} for _ in range(len(limits) + 1)]
        self._runnable: dict[int, None] = {}  # arrival order, as the reference iterates
        self._waiting: set[int] = set()
        n = view.n_jobs
        self._queue_of = [0] * n
        self._position = [0] * n  # increasing along each queue: the walk order of any subset
        self._next_position = 0
        self._arrived = [0] * n  # arrival rank
        self._arrivals = 0
        # Every running job gains the same whole seconds at a check (the time since the
        # previous one, truncated), so one clock counts them all: a job's executed seconds are
        # its seconds before its current run plus the clock's advance since that run began.
        self._clock = 0
        self._last_now = 0.0
        self._executed = [0] * n  # seconds before the current run (all of them when waiting)
        self._began = [0] * n  # the clock when the current run began
        self._running = [False] * n
        self._stamp = [0] * n  # moves on at every start, stop and demotion: stale heap entries
        self._gpus = [int(g) for g in view.job_gpus]
        self._demand = 0
        # Due demotions by the clock reading at which each running job reaches its queue's
        # limit; queue jumps by limit - executed + clock, one heap per width (the jump is that
        # difference floor-divided by the width).
        self._due: list[tuple[int, int, int, int]] = []
        self._jumps: dict[int, list[tuple[int, int, int]]] = {}

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """Queue the job at the end of queue 0."""
        self._runnable[job] = None
        self._waiting.add(job)
        self._append(job, 0)
        self._arrived[job] = self._arrivals
        self._arrivals += 1
        self._demand += self._gpus[job]

    def on_completion(self, job: int, view: ClusterView) -> None:
        """Forget the job."""
        del self._runnable[job]
        del self._queues[self._queue_of[job]][job]
        self._waiting.discard(job)
        self._demand -= self._gpus[job]
        self._running[job] = False
        self._stamp[job] += 1

    def decide(self, view: ClusterView) -> Decision:
        """Update attained service, demote, and reschedule from the top queue down."""
        now = view.now_s
        self._update(now)
        if self._demand <= view.total_gpus and type(self)._order is TiresiasDLAS._order:
            # Every runnable job fits, so the walk runs them all: the waiting ones start, in
            # queue order, and no queue changes order.
            preempts: list[int] = []
            queue_of, position = self._queue_of, self._position
            starting = sorted(self._waiting, key=lambda j: (queue_of[j], position[j]))
        else:
            preempts, starting = self._walk(view.total_gpus, now)
        for j in preempts:
            self._stop(j)
        for j in starting:
            self._start(j)
        wake = self._next_jump(now)
        if not preempts and not starting and wake is None:
            return NO_DECISION
        return Decision(
            starts=self._allocate(view, preempts, starting),
            preempts=tuple(preempts),
            wake_at_s=None if wake is None else float(wake),
        )

    # ----------------------------------------------------------------- internals
    def _order(self, queue: list[int], now: float) -> list[int]:
        """Order of a queue before it is scheduled (the reference keeps it as it is).

        A subclass that orders its queues (:class:`TiresiasGittins`) has every decision walk
        them, even when every runnable job fits: the order decides the starts' placements
        and persists.
        """
        return queue

    def _walk(self, free_count: int, now: float) -> tuple[list[int], list[int]]:
        queues = [list(queue) for queue in self._queues]
        orders = [self._order(queue, now) for queue in queues]
        running = self._running
        if self._demand <= free_count:
            # Everything fits: every job runs and each queue keeps its (new) order.
            starting = [j for order in orders for j in order if not running[j]]
            for q, order in enumerate(orders):
                if order != queues[q]:
                    self._requeue(q, order)
            return [], starting
        run: set[int] = set()
        gpus = self._gpus
        for order in orders:
            for job in order:
                if free_count >= gpus[job]:
                    run.add(job)
                    free_count -= gpus[job]
        preempts = [j for j in self._runnable if running[j] and j not in run]
        starting = [j for order in orders for j in order if j in run and not running[j]]
        for q, order in enumerate(orders):
            # Waiting jobs move behind the running ones (after this decision), in order.
            order = [j for j in order if j in run] + [j for j in order if j not in run]
            if order != queues[q]:
                self._requeue(q, order)
        return preempts, starting

    def _requeue(self, q: int, order: list[int]) -> None:
        self._queues[q] = dict.fromkeys(order)
        position, k = self._position, self._next_position
        for j in order:
            position[j] = k
            k += 1
        self._next_position = k

    def _append(self, job: int, q: int) -> None:
        self._queues[q][job] = None
        self._queue_of[job] = q
        self._position[job] = self._next_position
        self._next_position += 1

    def _executed_now(self, job: int) -> int:
        """Whole seconds the job has run, as of the last check."""
        ran = self._clock - self._began[job] if self._running[job] else 0
        return self._executed[job] + ran

    def _start(self, job: int) -> None:
        self._running[job] = True
        self._waiting.discard(job)
        self._began[job] = self._clock
        self._watch(job)

    def _stop(self, job: int) -> None:
        self._executed[job] = self._executed_now(job)
        self._running[job] = False
        self._waiting.add(job)
        self._stamp[job] += 1

    def _watch(self, job: int) -> None:
        # A running job below the last queue: when it is due for demotion, when it jumps.
        self._stamp[job] += 1
        q = self._queue_of[job]
        if q == len(self._limits):
            return
        limit, g, stamp = self._limits[q], self._gpus[job], self._stamp[job]
        base = self._began[job] - self._executed[job]
        heapq.heappush(self._due, (base + -(-limit // g), self._arrived[job], job, stamp))
        heap = self._jumps.get(g)
        if heap is None:
            heap = self._jumps[g] = []
        heapq.heappush(heap, (limit + base, job, stamp))

    def _update(self, now: float) -> None:
        # Whole seconds, truncated, as the reference counts them.
        self._clock += int(now - self._last_now)
        self._last_now = now
        due, clock, stamp = self._due, self._clock, self._stamp
        demoted = []
        while due and due[0][0] <= clock:
            _, _, job, s = heapq.heappop(due)
            if s == stamp[job]:
                demoted.append(job)
        # One demotion per check, to the end of the next queue, in arrival order.
        demoted.sort(key=self._arrived.__getitem__)
        for job in demoted:
            q = self._queue_of[job]
            del self._queues[q][job]
            self._append(job, q + 1)
        for job in demoted:
            self._watch(job)

    def _next_jump(self, now: float) -> float | None:
        # The reference's earliest check, now + (limit - executed) // gpus over the running
        # jobs below the last queue; within one width the smallest limit - executed wins.
        clock, stamp = self._clock, self._stamp
        wake = None
        for g, heap in self._jumps.items():
            while heap and heap[0][2] != stamp[heap[0][1]]:
                heapq.heappop(heap)
            if heap:
                jump = now + (heap[0][0] - clock) // g
                if wake is None or jump < wake:
                    wake = jump
        return wake if wake is not None and wake > now else None

    def _allocate(
        self, view: ClusterView, preempts: list[int], starting: list[int]
    ) -> tuple[Start, ...]:
        free = view.free_gpus.copy()
        for j in preempts:
            allocation = view.allocation(j)
            assert allocation is not None
            for s, c in allocation:
                free[s] += c
        starts = []
        for j in starting:
            allocation = consolidate(free, self._gpus[j])
            assert allocation is not None  # only the count matters and it was checked
            for s, c in allocation:
                free[s] -= c
            starts.append(Start(j, allocation))
        return tuple(starts)


class TiresiasGittins(TiresiasDLAS):
    """Tiresias' ``dlas-gpu-gittins``: the queues of :class:`TiresiasDLAS`, each ordered by the
    Gittins index of the job's attained GPU-seconds.

    The index comes from a sample of job sizes, as in the reference simulator: with the sample
    sorted, ``a`` the attained service and ``delta`` the quantum (3,250), the index is the
    fraction of the jobs still running at ``a`` that finish within ``a + delta``, divided by the
    mean service they receive up to ``a + delta`` (scaled by 10^6 and rounded as the reference
    does); a job past the largest sample size gets index 0. Within a queue, a higher index goes
    first, then the earlier release, then queue order.

    Parameters
    ----------
    service_sample_s : sequence of float or path, optional
        The job-size sample, or a text/CSV file of sizes (one per line; a header line such as
        ``duration`` is skipped). The reference simulator reads 1,000 job durations from a YARN
        trace file that ships with it; without a sample, the sizes (attained GPU-seconds) of
        the jobs completed so far are used, a distribution learned online (all indices equal,
        hence arrival order, until the first completion).
    delta_s : int
        The Gittins quantum.
    queue_limits_gpu_s : sequence of int
    """

    name = "tiresias-gittins"
    #: Not regenerative: the size sample it learns from completed jobs outlives them.
    regenerative = False
    #: ``engine="auto"`` compiles it from this many jobs: its Python order costs about 0.4 ms
    #: a job, so compiling (about 0.55 s to import numba and load the cached loop) pays from
    #: about 2,000-2,500 jobs (whole processes, numba's cache warm).
    compiles_from = 3_000

    def __init__(
        self,
        *,
        service_sample_s: Sequence[float] | str | PathLike[str] | None = None,
        delta_s: int = 3250,
        queue_limits_gpu_s: Sequence[int] = TIRESIAS_QUEUE_LIMITS_GPU_S,
    ) -> None:
        super().__init__(queue_limits_gpu_s=queue_limits_gpu_s)
        self.service_sample_s = service_sample_s
        self.delta_s = delta_s

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies.tiresias_kernel`); None
        for a subclass other than :class:`Gittins`, which may change any step, or limits,
        quantum or sizes past the kernel's whole numbers.

        Returns
        -------
        Kernel or None
        """
        if type(self) not in (TiresiasGittins, Gittins):
            return None
        self._check_delta()
        sample = () if self.service_sample_s is None else read_sample(self.service_sample_s)
        limits = self._checked_limits()
        return _whole_kernel("tiresias-gittins", limits, self.delta_s, tuple(sample))

    def _check_delta(self) -> None:
        if not (isinstance(self.delta_s, int) and self.delta_s > 0):
            raise UsageError(f"delta_s must be a positive integer, got {self.delta_s!r}")

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Build the index table from the sample (or start learning one)."""
        super().reset(view, rng)
        self._check_delta()
        self._release = [int(r) for r in view.job_release_s]
        self._sample: SizeSample | None = None
        if self.service_sample_s is not None:
            self._sample = SizeSample(read_sample(self.service_sample_s), self.delta_s)

    def on_completion(self, job: int, view: ClusterView) -> None:
        """Learn the job's size when no sample was given."""
        if self.service_sample_s is None:
            size = max(1, self._executed_now(job) * self._gpus[job])
            if self._sample is None:
                self._sample = SizeSample([size], self.delta_s)
            else:
                self._sample.add(size)
        super().on_completion(job, view)

    def _order(self, queue: list[int], now: float) -> list[int]:
        sample = self._sample
        if sample is None or len(queue) < 2:
            return queue  # nothing learned yet (every index is equal), or nothing to order
        executed, gpus, release = self._executed_now, self._gpus, self._release
        attained = whole_array([executed(j) * gpus[j] for j in queue])
        # Higher index first, then the earlier release, then queue order (a stable sort).
        rank = np.lexsort((np.array([release[j] for j in queue]), -sample.indices(attained)))
        return [queue[k] for k in rank.tolist()]


def _whole_kernel(
    name: str, limits: tuple[int, ...], delta_s: int, sizes: tuple[int, ...]
) -> Kernel | None:
    # Limits, quanta and sizes past the kernel's whole numbers stay in Python.
    if not all(type(x) is int and 0 < x < KERNEL_WHOLE for x in (*limits, delta_s, *sizes)):
        return None
    gittins = name == "tiresias-gittins"
    return Kernel(name=name, build=partial(_tiresias_state, limits, gittins, delta_s, sizes))


def _tiresias_state(
    limits: tuple[int, ...], gittins: bool, delta_s: int, sizes: tuple[int, ...], state: Any
) -> Any:
    from asrpt_opt.policies import tiresias_kernel

    return tiresias_kernel.new_state(
        state,
        np.asarray(limits, dtype=np.int64),
        gittins,
        delta_s,
        np.asarray(sizes, dtype=np.int64),
    )


class Gittins(TiresiasGittins):
    """Alias of :class:`TiresiasGittins` under the name ``gittins``: the Gittins index on
    attained service (GPU-seconds), with the job-size distribution learned from completed
    jobs unless ``service_sample_s`` gives one, inside Tiresias' discretised queues.

    References
    ----------
    .. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
       NSDI 2019.
    """

    name = "gittins"
