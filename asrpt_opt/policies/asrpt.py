"""A-SRPT: adaptive shortest-remaining-processing-time-first, guided by a virtual machine."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.policies._selection import serve
from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.policies.serverfilling import server_filling
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import RUNNING, ClusterView, Decision, Start

__all__ = ["ADAPTIVE_RULES", "ASRPT", "FINISHED_ORDERS", "GUIDES", "resolve_guide"]

#: How a job's predicted work is raised when it runs past its prediction.
ADAPTIVE_RULES = ("double", "additive", "none")

#: How jobs that have finished on the virtual machine are ordered among themselves.
FINISHED_ORDERS = ("virtual", "remaining")

#: How the virtual machine's ranking guides the cluster: ``list`` goes down the ranking one
#: job at a time (list scheduling with backfill); ``fill`` serves the shortest prefix of the
#: ranking that covers the GPUs, widest first (ServerFilling), then backfills; ``auto``
#: (default) is ``fill`` on a one-server cluster and ``list`` on several (docs/asrpt.md).
GUIDES = ("auto", "list", "fill")


def resolve_guide(guide: str, n_servers: int) -> str:
    """The guide A-SRPT runs on a cluster of ``n_servers`` servers.

    ``auto`` is ``fill`` on one server, where filling keeps every GPU busy while the
    released jobs need them all (widths dividing the server), and ``list`` on several,
    where that guarantee fails and ``fill`` measured slower on the bundled DNN workloads.

    Parameters
    ----------
    guide : {"auto", "list", "fill"}
    n_servers : int

    Returns
    -------
    str
        ``"list"`` or ``"fill"``.
    """
    if guide != "auto":
        return guide
    return "fill" if n_servers == 1 else "list"


# A job "runs past" its prediction only beyond this relative margin, so that float rounding
# of an exact (oracle) prediction never triggers a raise before the job's completion event.
MARGIN = 1e-6


class ASRPT(ListScheduler):
    """A-SRPT as docs/asrpt.md describes it.

    1. Each arriving job j becomes a job of size ``v_j = q_j * p_hat_j / M`` on one virtual
       machine of speed 1, where ``p_hat_j`` is its predicted length on its best placement.
       The virtual machine runs preemptive SRPT (Schrage), advanced lazily to each event.
    2. Jobs are ranked by their remaining virtual work. Jobs that have finished on the virtual
       machine rank first; among them (the paper is silent) ``finished_order="remaining"``
       (default) ranks by predicted remaining GPU-time (SRPT on what is really left), and
       ``"virtual"`` by virtual completion time (list scheduling in the relaxation's
       completion order, as in Hall, Schulz, Shmoys and Wein [3]_). Because SRPT only ever
       processes the job with the least remaining work, the virtual order never changes
       between two arrivals, so the keys stay consistent with one re-key per virtual event.
       The virtual machine lets a job of q GPUs run M/q times faster than it can on the
       cluster, so on a large cluster narrow jobs finish virtually almost at once; with
       ``"virtual"`` the ranking then degenerates towards arrival order (README shows the
       measured effect).
    3. The ranking guides the cluster (``guide``). ``list``: going down the
       ranking, each job keeps or gets GPUs, preempting lower-ranked running jobs when it
       does not fit; lower-ranked jobs backfill leftover GPUs. ``fill``: the shortest prefix
       of the ranking whose GPUs add up to at least the cluster's is served widest first
       where it fits, then the rest of the ranking backfills where it fits; running jobs
       outside that set are preempted (ServerFilling [4]_ on A-SRPT's ranking, which keeps
       every GPU busy while enough work waits when widths divide the servers: stable on the
       multiserver-job workload where ``list`` is not, but slower on the bundled DNN
       workloads; docs/asrpt.md). Either way a running job is preempted only when its
       predicted remaining time exceeds the restore overhead ("worth it": a job about to
       finish is cheaper to wait for than to preempt). ``auto`` (default) is ``fill`` on a
       one-server cluster (the multiserver-job model, where ``fill`` keeps every GPU busy)
       and ``list`` on several (:func:`resolve_guide`).
    4. Adaptive predictions: a job whose attained work passes its predicted work has its
       prediction raised, ``double`` (to twice its attained work) or ``additive`` (attained
       work plus its original prediction); the virtual machine receives the extra work.

    Parameters
    ----------
    adaptive : {"double", "additive", "none"}
        The prediction-raising rule.
    finished_order : {"remaining", "virtual"}
        Order among jobs that have finished on the virtual machine.
    guide : {"auto", "list", "fill"}
        How the ranking guides the cluster (step 3).
    backfill : bool
        With ``guide="list"``: let lower-ranked jobs use GPUs a higher one cannot.
    max_placement_slowdown : float, optional
        The placement-aware start rule of
        :class:`~asrpt_opt.policies.list_scheduler.ListScheduler` (off by default).

    References
    ----------
    .. [1] Z. Luo, J. Liu, M. Lee, N. B. Shroff, "Prediction-assisted online distributed deep
       learning workload scheduling in GPU clusters", IEEE INFOCOM 2025, arXiv:2501.05563.
    .. [2] L. Schrage, "A proof of the optimality of the shortest remaining processing time
       discipline", Operations Research 16(3):687-690, 1968.
    .. [3] L. A. Hall, A. S. Schulz, D. B. Shmoys, J. Wein, "Scheduling to minimize average
       completion time: off-line and on-line approximation algorithms", Mathematics of
       Operations Research 22(3):513-544, 1997.
    .. [4] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.
    """

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name = "a-srpt"
    preemptive = True
    # Consolidation, not the graph methods: placing one job at a time by its cut can break up
    # whole servers a later wide job needed, and no per-job rule we measured avoids that on
    # every workload (docs/placement.md, "Which placement A-SRPT uses").
    default_placement = "consolidate"
    _core = "a-srpt"

    def __init__(
        self,
        *,
        adaptive: str = "double",
        finished_order: str = "remaining",
        guide: str = "auto",
        backfill: bool = True,
        max_placement_slowdown: float | None = None,
    ) -> None:
        super().__init__(backfill=backfill, max_placement_slowdown=max_placement_slowdown)
        self.adaptive = adaptive
        self.finished_order = finished_order
        self.guide = guide

    def kernel(self) -> Kernel | None:
        """The compiled A-SRPT (:mod:`asrpt_opt.policies.asrpt_kernel`) with these knobs
        (None for a subclass).

        Returns
        -------
        Kernel or None
        """
        if not self._compiles():
            return None
        knobs = (self.adaptive, self.finished_order, self.guide, bool(self.backfill))
        return Kernel(name="a-srpt", build=partial(_asrpt_state, *knobs))

    # ----------------------------------------------------------------- virtual machine
    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Start an empty virtual machine."""
        if self.adaptive not in ADAPTIVE_RULES:
            raise UsageError(f"adaptive must be one of {ADAPTIVE_RULES}, got {self.adaptive!r}")
        if self.finished_order not in FINISHED_ORDERS:
            raise UsageError(
                f"finished_order must be one of {FINISHED_ORDERS}, got {self.finished_order!r}"
            )
        if self.guide not in GUIDES:
            raise UsageError(f"guide must be one of {GUIDES}, got {self.guide!r}")
        self._active: dict[int, None] = {}  # released, unfinished (fill), in arrival order
        self._guide = resolve_guide(self.guide, len(view.capacity))
        self._waiting: set[int] = set()
        self._active_gpus = 0
        super().reset(view, rng)
        n = view.n_jobs
        self._key = np.zeros(n)
        self._pred = np.zeros(n)  # current predicted work (raised adaptively)
        self._first_pred = np.zeros(n)
        self._vdone = np.zeros(n, dtype=bool)  # finished on the virtual machine
        self._vheap: list[tuple[float, int, int]] = []  # (remaining, job, version)
        self._vver = [0] * n
        self._vt = 0.0
        self._scale = 1.0 / view.total_gpus
        self._cross: list[tuple[float, int, int]] = []  # (time, job, watch sequence)
        self._cross_seq = [0] * n

    def _virtual_size(self, job: int, work: float, view: ClusterView) -> float:
        return float(view.job_gpus[job]) * work / float(view.best_rate[job]) * self._scale

    def _rekey(self, job: int, key: float, view: ClusterView) -> None:
        self._key[job] = key
        self.requeue(job, key, view)

    def _advance(self, now: float, view: ClusterView) -> None:
        heap = self._vheap
        t = self._vt
        while heap and t < now:
            rem, job, ver = heap[0]
            if ver != self._vver[job]:
                heapq.heappop(heap)
                continue
            if t + rem <= now:
                heapq.heappop(heap)
                t += rem
                # Finished on the virtual machine: ranks before every unfinished job (keys
                # below zero), among the finished ones by virtual completion time or by
                # remaining service.
                self._vdone[job] = True
                if self.finished_order == "virtual":
                    self._rekey(job, -1.0 / (1.0 + t), view)
                else:
                    self._rekey(job, self._service_key(job, view), view)
            else:
                left = rem - (now - t)
                heapq.heapreplace(heap, (left, job, ver))
                self._rekey(job, left, view)
                t = now
        self._vt = max(t, now)

    def _vpush(self, job: int, size: float, view: ClusterView) -> None:
        self._vver[job] += 1
        heapq.heappush(self._vheap, (size, job, self._vver[job]))
        self._key[job] = size

    # ----------------------------------------------------------------- protocol
    def on_arrival(self, job: int, view: ClusterView) -> None:
        """Add the job to the virtual machine and to the queue."""
        self._advance(view.now_s, view)
        pred = float(view.predicted_work[job])
        self._pred[job] = self._first_pred[job] = pred
        self._vpush(job, self._virtual_size(job, pred, view), view)
        if self._guide == "list":
            super().on_arrival(job, view)
            return
        self._active[job] = None
        self._waiting.add(job)
        self._active_gpus += int(view.job_gpus[job])

    def _service_key(self, job: int, view: ClusterView) -> float:
        left = max(self._pred[job] - view.attained_work(job), 0.0) / view.best_rate[job]
        return -1.0 / (1.0 + float(view.job_gpus[job]) * left)

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """The job's rank key on the virtual machine."""
        if self.finished_order == "remaining" and self._vdone[job]:
            return self._service_key(job, view)
        return float(self._key[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Rank keys of the running jobs."""
        out: NDArray[np.float64] = self._key[jobs]
        if self.finished_order == "remaining":
            done = self._vdone[jobs]
            if done.any():
                out = out.copy()
                left = np.maximum(self._pred[jobs] - view.running_attained_work(), 0.0)
                service = view.job_gpus[jobs] * left / view.best_rate[jobs]
                out[done] = -1.0 / (1.0 + service[done])
        return out

    def worth_preempting(self, job: int, victims: list[int], view: ClusterView) -> bool:
        """Preempt only victims expected to run longer than the restore overhead."""
        overhead = view.restore_overhead_s
        if overhead <= 0:
            return True
        for v in victims:
            left = (self._pred[v] - view.attained_work(v)) / view.best_rate[v]
            if left <= overhead:
                return False
        return True

    def decide(self, view: ClusterView) -> Decision:
        """Advance the virtual machine, apply adaptive raises, then guide the cluster."""
        self._advance(view.now_s, view)
        if self.adaptive != "none":
            self._raise_overrun(view)
        if self._guide == "list":
            return super().decide(view)
        return self._fill(view)

    def rank_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """The ranking keys of released jobs ``jobs`` now (virtual remaining work; jobs
        finished on the virtual machine below zero).

        Parameters
        ----------
        jobs : ndarray of int
        view : ClusterView

        Returns
        -------
        ndarray of float
        """
        keys: NDArray[np.float64] = self._key[jobs].copy()
        if self.finished_order == "remaining":
            done = self._vdone[jobs]
            if done.any():
                left = (
                    np.maximum(self._pred[jobs] - view.attained_work_of(jobs), 0.0)
                    / view.best_rate[jobs]
                )
                keys[done] = (-1.0 / (1.0 + view.job_gpus[jobs] * left))[done]
        return keys

    def _fill(self, view: ClusterView) -> Decision:
        # guide="fill": ServerFilling on the ranking, then backfill (see the class docstring).
        if not self._active:
            return self._finish([], [], view)
        total = view.total_gpus

        def place(job: int, free: NDArray[np.int64]) -> Allocation | None:
            return self.place(job, free, view)  # the placement-aware start rule, if any

        if self._active_gpus <= total:
            order = self._ranked(self._waiting, view)
            gpus = view.job_gpus
            order = sorted(order, key=lambda j: -int(gpus[j]))  # stable: rank among equals
            starts, preempts = serve(order, view, preempt_others=False, place=place)
        else:
            ranked = self._ranked(self._active, view)
            gpus = view.job_gpus[ranked].tolist()
            chosen = server_filling(ranked, gpus, total, server_gpus=int(view.capacity.max()))
            chosen += self._not_worth_preempting(set(chosen), view)
            starts, preempts = serve(chosen, view, place=place)
        self._waiting.difference_update(st.job for st in starts)
        self._waiting.update(preempts)
        return self._finish(list(starts), list(preempts), view)

    def _ranked(self, jobs: Iterable[int], view: ClusterView) -> list[int]:
        arr = np.fromiter(jobs, np.int64)
        return [int(j) for j in arr[np.lexsort((arr, self.rank_keys(arr, view)))]]

    def _not_worth_preempting(self, chosen: set[int], view: ClusterView) -> list[int]:
        # Running jobs outside the chosen set that would finish within the restore overhead.
        overhead = view.restore_overhead_s
        if overhead <= 0:
            return []
        return [
            v
            for v in view.running_jobs().tolist()
            if v not in chosen
            and (self._pred[v] - view.attained_work(v)) / view.best_rate[v] <= overhead
        ]

    def _watch(self, job: int, view: ClusterView, rate: float, progress_s: float) -> None:
        # The instant the job's attained work passes its prediction, running at ``rate`` and
        # making progress from ``progress_s`` on (after any restore overhead): exact, so the
        # wake-up it asks for finds the overrun it was asked for.
        self._cross_seq[job] += 1
        left = self._pred[job] * (1.0 + 2.0 * MARGIN) - view.attained_work(job)
        when = max(progress_s, view.now_s) + max(left, 0.0) / rate
        heapq.heappush(self._cross, (when, job, self._cross_seq[job]))

    def _raise_overrun(self, view: ClusterView) -> None:
        now = view.now_s
        heap = self._cross
        while heap and heap[0][0] <= now:
            _, j, seq = heapq.heappop(heap)
            if seq != self._cross_seq[j] or view.status(j) != RUNNING:
                continue
            attained = view.attained_work(j)
            if attained >= self._pred[j] * (1.0 + MARGIN):
                new = (
                    2.0 * attained if self.adaptive == "double" else attained + self._first_pred[j]
                )
                extra = self._virtual_size(j, new - self._pred[j], view)
                self._pred[j] = new
                self._extend(j, extra, view)
            self._watch(j, view, view.rate(j), view.progress_start_s(j))

    def _extend(self, job: int, extra: float, view: ClusterView) -> None:
        # ``_advance`` has just re-keyed every unfinished job to its exact remaining virtual
        # work; a job that had finished virtually (negative key) becomes unfinished again.
        # Its old heap entry is retired by the version bump in ``_vpush``.
        current = float(self._key[job])
        remaining = current if current > 0 else 0.0
        self._vdone[job] = False
        self._vpush(job, remaining + extra, view)
        self._rekey(job, remaining + extra, view)

    def on_completion(self, job: int, view: ClusterView) -> None:
        """Stop watching the job's prediction."""
        self._cross_seq[job] += 1
        if job in self._active:
            del self._active[job]
            self._active_gpus -= int(view.job_gpus[job])

    def wake_time(
        self, view: ClusterView, starts: list[Start], preempts: list[int]
    ) -> float | None:
        """The instant the first running job passes its prediction (never, when the
        predictions cannot be below the truth)."""
        if self.adaptive == "none" or view.predictions_never_low:
            return None
        for v in preempts:
            self._cross_seq[v] += 1
        for st in starts:
            resumed = view.was_started(st.job)
            progress = view.now_s + (view.restore_overhead_s if resumed else 0.0)
            self._watch(st.job, view, view.rate_on(st.job, st.allocation), progress)
        heap = self._cross
        while heap and heap[0][2] != self._cross_seq[heap[0][1]]:
            heapq.heappop(heap)
        if heap and heap[0][0] > view.now_s:
            return heap[0][0]
        return None


def _asrpt_state(
    adaptive: str, finished_order: str, guide: str, backfill: bool, state: Any
) -> Any:
    """A-SRPT's compiled state for the compiled simulator ``state`` (knobs checked by
    :meth:`ASRPT.reset`)."""
    from asrpt_opt.policies import asrpt_kernel

    remaining = finished_order == "remaining"
    rule, guide_code = ADAPTIVE_RULES.index(adaptive), GUIDES.index(guide)
    return asrpt_kernel.new_state(state, rule, remaining, guide_code, backfill)
