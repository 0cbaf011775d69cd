"""The policy's side of the simulator: what a policy sees (read-only), what it may answer,
and the :class:`Policy` protocol every scheduling policy follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import PolicyError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.cluster import Cluster

if TYPE_CHECKING:
    from asrpt_opt.sim.engine import Simulator

__all__ = [
    "COMPLETION",
    "DONE",
    "NO_DECISION",
    "RUNNING",
    "UNRELEASED",
    "WAITING",
    "WAKE",
    "ClusterView",
    "Decision",
    "IdleWakeLimit",
    "Policy",
    "Start",
]

UNRELEASED, WAITING, RUNNING, DONE = 0, 1, 2, 3
#: Event kinds of the event loops (Python and compiled).
COMPLETION, WAKE = 0, 1

#: Instants a run may spend on a policy's wake-ups alone (no release, no completion): this
#: many, plus :data:`IDLE_WAKES_PER_JOB` per job. A time parameter far finer than the
#: instance's time scale (``prr``'s ``quantum_s=1e-9`` on jobs of minutes) would otherwise
#: ask for billions of decisions; every built-in policy with its defaults stays far below.
IDLE_WAKES_BASE = 10_000
#: See :data:`IDLE_WAKES_BASE`.
IDLE_WAKES_PER_JOB = 1_000


class IdleWakeLimit:
    """The idle wake-ups a run of ``n_jobs`` jobs may take, and the error past them."""

    def __init__(self, n_jobs: int) -> None:
        self.limit = IDLE_WAKES_BASE + IDLE_WAKES_PER_JOB * n_jobs

    def error(self, policy: str, now: float) -> PolicyError:
        """The error of a run that passed the limit at ``now``.

        Parameters
        ----------
        policy : str
            The policy's name.
        now : float
            Simulated time when the limit was passed.

        Returns
        -------
        PolicyError
        """
        return PolicyError(
            f"policy {policy!r} asked for more than {self.limit:,} wake-ups with no release "
            f"or completion between them (limit {IDLE_WAKES_BASE:,} + {IDLE_WAKES_PER_JOB:,} "
            f"per job), by t={now:.6g} s: one of its time parameters is far finer than the "
            "instance's time scale (for example prr's quantum_s); choose a coarser one"
        )


@dataclass(frozen=True, slots=True)
class Start:
    """Start (or resume) ``job`` on ``allocation``."""

    job: int
    allocation: Allocation


@dataclass(frozen=True, slots=True)
class Decision:
    """A policy's answer at one instant.

    Preemptions are applied first, then starts. ``wake_at_s`` asks the simulator to consult
    the policy again at that time even if no job arrives or completes; each decision's
    ``wake_at_s`` replaces the previous one (None cancels it), so a policy states at every
    decision the one future instant it cares about.
    """

    starts: tuple[Start, ...] = ()
    preempts: tuple[int, ...] = ()
    wake_at_s: float | None = None


#: The answer "change nothing".
NO_DECISION = Decision()


_A = TypeVar("_A", bound="np.ndarray[Any, Any]")


def _ro(a: _A) -> _A:
    v: _A = a.view()
    v.setflags(write=False)
    return v


class ClusterView:
    """A read-only window on the simulator's state, given to policies.

    It shows what an online scheduler knows: jobs that have arrived (their width, weight,
    release and predicted work, never their true length), which are running where, how much
    service each has received, and the free GPUs per server. Jobs are identified by their
    index in the instance.
    """

    __slots__ = (
        "_sim",
        "best_rate",
        "capacity",
        "cluster",
        "free_gpus",
        "job_gpus",
        "job_ids",
        "job_release_s",
        "job_weight",
        "predicted_work",
        "restore_overhead_s",
    )

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self.cluster: Cluster = sim.instance.cluster
        self.capacity = _ro(sim.capacity)
        self.free_gpus = _ro(sim.free)
        self.job_gpus = _ro(sim.job_gpus)
        self.job_release_s = _ro(sim.job_release)
        self.job_weight = _ro(sim.job_weight)
        self.job_ids: tuple[str, ...] = tuple(j.id for j in sim.instance.jobs)
        self.predicted_work = _ro(sim.predicted)
        self.best_rate = _ro(sim.best_rate)
        self.restore_overhead_s: float = sim.restore_overhead_s

    @property
    def now_s(self) -> float:
        """Current simulated time."""
        return self._sim.now

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return self._sim.total_gpus

    @property
    def total_free(self) -> int:
        """Free GPUs in the whole cluster."""
        return self._sim.total_free

    @property
    def n_jobs(self) -> int:
        """Jobs in the instance (arrived or not)."""
        return len(self.job_ids)

    def status(self, job: int) -> int:
        """One of :data:`UNRELEASED`, :data:`WAITING`, :data:`RUNNING`, :data:`DONE`."""
        return self._sim.status[job]

    def allocation(self, job: int) -> Allocation | None:
        """GPUs a running job holds, or None."""
        return self._sim.alloc[job]

    def was_started(self, job: int) -> bool:
        """True if the job ran before (so resuming it pays the restore overhead)."""
        return self._sim.started[job]

    def rate(self, job: int) -> float:
        """Current rate (work units per second) of a running job; 0 if it is not running."""
        return self._sim.rate_of(job)

    def attained_work(self, job: int) -> float:
        """Work units the job has processed so far."""
        return self._sim.attained_work(job)

    def attained_work_of(self, jobs: NDArray[np.int64]) -> NDArray[np.float64]:
        """Work units each of ``jobs`` has processed so far (:meth:`attained_work`, for many
        jobs at once).

        Parameters
        ----------
        jobs : ndarray of int

        Returns
        -------
        ndarray of float
        """
        return self._sim.attained_work_of(jobs)

    def attained_gpu_s(self, job: int) -> float:
        """GPU-seconds the job has held so far (Tiresias' attained service)."""
        return self._sim.attained_gpu_s(job)

    def running_jobs(self) -> NDArray[np.int64]:
        """Indices of the running jobs, in slot order (aligned with the ``running_*`` arrays)."""
        return self._sim.running_slots()[1]

    def running_attained_work(self) -> NDArray[np.float64]:
        """Attained work of each running job, aligned with :meth:`running_jobs`."""
        return self._sim.running_attained_work()

    def running_attained_gpu_s(self) -> NDArray[np.float64]:
        """Attained GPU-seconds of each running job, aligned with :meth:`running_jobs`."""
        return self._sim.running_attained_gpu_s()

    @property
    def predictions_never_low(self) -> bool:
        """True when the predictor promises no prediction below the truth (the oracle)."""
        return self._sim.predictions_never_low

    def progress_start_s(self, job: int) -> float:
        """When a running job's current segment starts to make progress: its start, plus the
        restore overhead when it resumed."""
        return self._sim.progress_start_s(job)

    def place(self, job: int, free: NDArray[np.int64]) -> Allocation | None:
        """GPUs for ``job`` among ``free`` by the simulation's placement method, or None when
        too few are free (:class:`~asrpt_opt.sim.placer.Placer`)."""
        return self._sim.placer(job, free)

    def rate_on(self, job: int, allocation: Allocation) -> float:
        """Rate (work units per second) ``job`` would run at on ``allocation``."""
        return self._sim.speed.rate(self._sim.instance.jobs[job], allocation)

    def running_rate(self) -> NDArray[np.float64]:
        """Current rate (work units per second) of each running job."""
        slots, _ = self._sim.running_slots()
        return self._sim.slot_rate[slots]


class Policy(Protocol):
    """An online scheduling policy.

    The simulator calls :meth:`reset` once, :meth:`on_arrival` and :meth:`on_completion` as
    jobs come and go, and :meth:`decide` once per instant at which something happened. The
    policy reads the read-only :class:`ClusterView` and answers with a :class:`Decision`; the
    simulator validates and applies it.
    """

    name: str

    def reset(self, view: ClusterView, rng: np.random.Generator) -> None:
        """Forget any previous run and prepare for a new one."""

    def on_arrival(self, job: int, view: ClusterView) -> None:
        """``job`` has been released (its prediction is in ``view.predicted_work``)."""

    def on_completion(self, job: int, view: ClusterView) -> None:
        """``job`` has finished."""

    def decide(self, view: ClusterView) -> Decision:
        """Return the preemptions and starts to apply now."""
