"""Preferential round robin (Purohit, Svitkina, Kumar), time-sliced for gang jobs."""

from __future__ import annotations

import math
from collections.abc import Collection
from functools import partial

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.policies._selection import by_key_then, fit_in_order, selection_state, serve
from asrpt_opt.sim.compiled import PREEMPTIVE_FROM, Kernel
from asrpt_opt.sim.view import NO_DECISION, ClusterView, Decision, Start

__all__ = ["PreferentialRoundRobin"]


class PreferentialRoundRobin:
    """Preferential round robin: trust the predictions a fraction ``trust`` of the time.

    Purohit, Svitkina and Kumar [1]_ run, on one machine, shortest-predicted-job-first at
    rate ``trust`` and round robin at rate ``1 - trust`` simultaneously. With prediction error
    eta their algorithm is ``1/trust``-consistent (near-optimal when predictions are exact)
    and ``2/(1 - trust)``-robust (bounded whatever the predictions), the first
    learning-augmented rule with both guarantees for total completion time.

    Gang jobs cannot share a GPU at a rate, so time is sliced instead: quanta of
    ``quantum_s`` seconds alternate between the two rules, a fraction ``trust`` of them (in
    Bresenham order) *predicted* quanta and the rest *round-robin* quanta. In a predicted
    quantum the released jobs are served in order of predicted remaining time (shortest
    first); in a round-robin quantum in order of attained service time (least first, ties by
    release), which shares the GPUs between the jobs in turn. Either way jobs are started in
    that order while their GPUs fit (later ones backfill), and running jobs not selected are
    preempted. The two rules' guarantees are the single-machine paper's; on a cluster this is
    an adaptation, whose robustness we measure (``asrpt-opt robustness``) rather than prove.

    Parameters
    ----------
    trust : float
        The fraction of quanta that follow the predictions, in (0, 1]; 1 is preemptive
        shortest-predicted-remaining-time first, and 0.5 (the default) the paper's balanced
        choice (2-consistent, 4-robust on one machine).
    quantum_s : float, optional
        Length of a quantum. By default half the mean predicted length of the jobs released
        so far (known online), so the slices follow the workload's time scale. Never less
        than twice the restore overhead, so that a resumed job makes progress.

    References
    ----------
    .. [1] M. Purohit, Z. Svitkina, R. Kumar, "Improving online algorithms via ML
       predictions", NeurIPS 2018.
    """

    #: ``engine="auto"`` compiles it from this many jobs: its Python decisions re-rank
    #: the running and waiting jobs.
    compiles_from = PREEMPTIVE_FROM

    name = "prr"
    preemptive = True
    #: Not regenerative: its quanta (their default length, from the jobs released so far,
    #: and their alternation) depend on jobs that have left.
    regenerative = False

    def __init__(self, *, trust: float = 0.5, quantum_s: float | None = None) -> None:
        if not (0.0 < trust <= 1.0):
            raise UsageError(f"trust must be in (0, 1], got {trust!r}")
        if quantum_s is not None and not (quantum_s > 0 and math.isfinite(quantum_s)):
            raise UsageError(f"quantum_s must be a finite number > 0, got {quantum_s!r}")
        self.trust = trust
        self.quantum_s = quantum_s

    def kernel(self) -> Kernel | None:
        """This policy's compiled kernel (:mod:`asrpt_opt.policies._selection_kernel`); None
        for a subclass, which may change any step.

        Returns
        -------
        Kernel or None
        """
        if type(self) is not PreferentialRoundRobin:
            return None
        quantum = math.nan if self.quantum_s is None else float(self.quantum_s)
        build = partial(selection_state, "prr", float(self.trust), quantum)
        return Kernel(name="prr", build=build)

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Forget every job; the first quantum starts with the first decision."""
        self._active: dict[int, int] = {}  # job -> release order
        self._release_order = np.zeros(view.job_gpus.shape[0], np.int64)  # the same, as an array
        self._waiting: set[int] = set()
        self._active_gpus = 0
        self._released = 0
        self._length_sum_s = 0.0
        self._quantum = -1
        self._quantum_end_s = -math.inf

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """The job joins the released, unfinished jobs."""
        self._active[job] = self._released
        self._release_order[job] = self._released
        self._waiting.add(job)
        self._active_gpus += int(view.job_gpus[job])
        self._released += 1
        self._length_sum_s += float(view.predicted_work[job] / view.best_rate[job])

    def on_completion(self, job: int, view: ClusterView) -> None:
        """The job leaves."""
        if self._active.pop(job, None) is not None:
            self._active_gpus -= int(view.job_gpus[job])

    def predicted_quantum(self, k: int) -> bool:
        """Whether quantum ``k`` follows the predictions (a ``trust`` share, evenly spread).

        Parameters
        ----------
        k : int

        Returns
        -------
        bool
        """
        return math.floor((k + 1) * self.trust + 1e-12) > math.floor(k * self.trust + 1e-12)

    def _length(self, view: ClusterView) -> float:
        if self.quantum_s is not None:
            length = self.quantum_s
        else:
            length = 0.5 * self._length_sum_s / max(self._released, 1)
        # A resumed job restores its state before progressing: a quantum no longer than that
        # would preempt every job before it moved (a livelock).
        return max(length, 2.0 * view.restore_overhead_s, 1e-6)

    def order(self, view: ClusterView, jobs: Collection[int] | None = None) -> list[int]:
        """The released jobs (or ``jobs``) in the current quantum's order.

        Parameters
        ----------
        view : ClusterView
        jobs : collection of int, optional
            Released jobs to order; all of them by default.

        Returns
        -------
        list of int
        """
        pool = self._active if jobs is None else jobs
        if len(pool) < 2:
            return list(pool)  # nothing to sort (the usual case when every job fits)
        index = np.fromiter(pool, np.int64, len(pool))
        arrival = self._release_order[index]
        attained = view.attained_work_of(index)
        rate = view.best_rate[index]
        if self.predicted_quantum(self._quantum):
            key = np.maximum(view.predicted_work[index] - attained, 0.0) / rate
        else:
            key = attained / rate
        # By key, ties to the earlier arrival: the same order as sorting (key, arrival) pairs.
        ordered: list[int] = index[by_key_then(key, arrival)].tolist()
        return ordered

    def _note(self, starts: tuple[Start, ...], preempts: tuple[int, ...]) -> None:
        self._waiting.difference_update(st.job for st in starts)
        self._waiting.update(preempts)

    def decide(self, view: ClusterView) -> Decision:
        """Start a new quantum when the last one is over; serve the jobs in its order."""
        if not self._active:
            return NO_DECISION
        now = view.now_s
        if now >= self._quantum_end_s - 1e-12:
            self._quantum += 1
            self._quantum_end_s = now + self._length(view)
        gpus = view.job_gpus
        total = view.total_gpus
        if self._active_gpus <= total:
            # Every released job fits: all are chosen, and only the waiting ones need an
            # order (the decision the general case below would take, without sorting all).
            chosen = self.order(view, self._waiting)
            starts, preempts = serve(chosen, view, preempt_others=False)
            self._note(starts, preempts)
            return Decision(starts=starts, preempts=preempts)
        ordered = np.asarray(self.order(view), dtype=np.int64)
        taken, _ = fit_in_order(gpus[ordered], total, greedy=False)
        chosen = ordered[taken].tolist()
        starts, preempts = serve(chosen, view)
        self._note(starts, preempts)
        # Another quantum matters only while some released job is left out.
        wake = self._quantum_end_s if len(chosen) < len(self._active) else None
        return Decision(starts=starts, preempts=preempts, wake_at_s=wake)
