"""A-SRPT: adaptive shortest-remaining-processing-time-first, guided by a virtual machine."""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.policies._list import ListScheduler
from asrpt_opt.sim.view import ClusterView, Decision, Start

__all__ = ["ADAPTIVE_RULES", "ASRPT"]

#: How a job's predicted work is raised when it runs past its prediction.
ADAPTIVE_RULES = ("double", "additive", "none")

# A job "runs past" its prediction only beyond this relative margin, so that float rounding
# of an exact (oracle) prediction never triggers a raise before the job's completion event.
_MARGIN = 1e-6


class ASRPT(ListScheduler):
    """A-SRPT as DESIGN.md section 2 defines it.

    1. Each arriving job j becomes a job of size ``v_j = q_j * p_hat_j / M`` on one virtual
       machine of speed 1, where ``p_hat_j`` is its predicted length on its best placement.
       The virtual machine runs preemptive SRPT (Schrage), advanced lazily to each event.
    2. Jobs are ranked by their remaining virtual work; a job that has finished on the
       virtual machine ranks first, earlier virtual completions first. Because SRPT only ever
       processes the job with the least remaining work, this order never changes between two
       arrivals, so the keys stay consistent with one re-key per virtual event.
    3. Going down that ranking, each job keeps or gets GPUs (consolidated placement, best fit),
       preempting lower-ranked running jobs when it does not fit, and only when each victim's
       predicted remaining time exceeds the restore overhead ("worth it": a job about to finish
       is cheaper to wait for than to preempt). Lower-ranked jobs backfill leftover GPUs.
    4. Adaptive predictions: a job whose attained work passes its predicted work has its
       prediction raised, ``double`` (to twice its attained work) or ``additive`` (attained
       work plus its original prediction); the virtual machine receives the extra work.

    Parameters
    ----------
    adaptive : {"double", "additive", "none"}
        The prediction-raising rule.
    backfill : bool

    References
    ----------
    .. [1] Y. Luo, Y. Liu, C. Lee, N. Shroff, "Adaptive scheduling of distributed deep learning
       jobs" (A-SRPT), IEEE INFOCOM 2025, arXiv:2501.05563.
    .. [2] L. Schrage, "A proof of the optimality of the shortest remaining processing time
       discipline", Operations Research 16(3):687-690, 1968.
    """

    name = "a-srpt"
    preemptive = True

    def __init__(self, *, adaptive: str = "double", backfill: bool = True) -> None:
        super().__init__(backfill=backfill)
        self.adaptive = adaptive

    # ----------------------------------------------------------------- virtual machine
    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Start an empty virtual machine."""
        if self.adaptive not in ADAPTIVE_RULES:
            raise ValueError(f"adaptive must be one of {ADAPTIVE_RULES}, got {self.adaptive!r}")
        super().reset(view, rng)
        n = view.n_jobs
        self._key = np.zeros(n)
        self._pred = np.zeros(n)  # current predicted work (raised adaptively)
        self._first_pred = np.zeros(n)
        self._vheap: list[tuple[float, int, int]] = []  # (remaining, job, version)
        self._vver = [0] * n
        self._vt = 0.0
        self._scale = 1.0 / view.total_gpus

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
                # Finished on the virtual machine: ranks before every unfinished job, and
                # after the jobs that finished earlier.
                self._rekey(job, -1.0 / (1.0 + t), view)
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
        super().on_arrival(job, view)

    def waiting_key(self, job: int, view: ClusterView) -> float:
        """The job's rank key on the virtual machine."""
        return float(self._key[job])

    def running_keys(self, jobs: NDArray[np.int64], view: ClusterView) -> NDArray[np.float64]:
        """Rank keys of the running jobs."""
        out: NDArray[np.float64] = self._key[jobs]
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
        """Advance the virtual machine, apply adaptive raises, then list-schedule."""
        self._advance(view.now_s, view)
        if self.adaptive != "none":
            self._raise_overrun(view)
        return super().decide(view)

    def _raise_overrun(self, view: ClusterView) -> None:
        jobs = view.running_jobs()
        if jobs.size == 0:
            return
        attained = view.running_attained_work()
        over = attained >= self._pred[jobs] * (1.0 + _MARGIN)
        if not over.any():
            return
        for j, att in zip(jobs[over].tolist(), attained[over].tolist(), strict=True):
            new = 2.0 * att if self.adaptive == "double" else att + self._first_pred[j]
            extra = self._virtual_size(j, new - self._pred[j], view)
            self._pred[j] = new
            self._extend(j, extra, view)

    def _extend(self, job: int, extra: float, view: ClusterView) -> None:
        # ``_advance`` has just re-keyed every unfinished job to its exact remaining virtual
        # work; a job that had finished virtually (negative key) becomes unfinished again.
        # Its old heap entry is retired by the version bump in ``_vpush``.
        current = float(self._key[job])
        remaining = current if current > 0 else 0.0
        self._vpush(job, remaining + extra, view)
        self._rekey(job, remaining + extra, view)

    def wake_time(
        self, view: ClusterView, starts: list[Start], preempts: list[int]
    ) -> float | None:
        """The earliest instant a running job could pass its prediction."""
        if self.adaptive == "none":
            return None
        jobs = view.running_jobs()
        keep = ~np.isin(jobs, preempts) if preempts else np.ones(jobs.size, dtype=bool)
        # Aim past the margin so that, at the wake-up, the check above surely fires.
        aim = 1.0 + 2.0 * _MARGIN
        left = self._pred[jobs] * aim - view.running_attained_work()
        times = left[keep] / view.running_rate()[keep]
        if starts:
            new = np.array([s.job for s in starts], dtype=np.int64)
            new_left = self._pred[new] * aim - np.array([view.attained_work(int(j)) for j in new])
            # The fastest possible rate gives the earliest possible crossing.
            times = np.concatenate([times, new_left / view.best_rate[new]])
        if times.size == 0:
            return None
        wake = view.now_s + float(times.min())
        return wake if wake > view.now_s else None
