"""When the simulator runs compiled, and how the compiled loop's arrays become a schedule.

The compiled loop (:mod:`asrpt_opt.sim.compiled.loop`, numba) runs a policy's kernel on
abstract jobs: the same events, decisions and floating-point operations as the Python event
loop, so the schedules are identical (the tests compare both paths on random instances). A
policy offers its kernel through ``kernel()``, which returns a :class:`Kernel` (or None):
only the built-in classes themselves do, never a subclass that may change a step. It runs
compiled when every job is abstract and runs at :class:`~asrpt_opt.speed.base.AbstractSpeed`,
the predictor is never refitted, and the instance has at least :data:`COMPILED_FROM` jobs
(below, importing numba costs more than it saves; a policy whose Python form is slow lowers
that with a ``compiles_from`` attribute: :data:`PREEMPTIVE_FROM` for the preemptive ones and
EASY backfilling)
or ``engine="compiled"`` asks for it. Everything else runs in Python.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.errors import PolicyError, UsageError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.columns import JobColumns, ScheduleColumns
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.notices import compile_once
from asrpt_opt.sim.view import IdleWakeLimit
from asrpt_opt.speed.base import AbstractSpeed

if TYPE_CHECKING:
    from asrpt_opt.sim.engine import Simulator

__all__ = [
    "COMPILED_FROM",
    "ENGINES",
    "PREEMPTIVE_FROM",
    "Kernel",
    "compile_threshold",
    "compiled_kernel",
    "compiles_from",
    "run_columns",
    "run_compiled",
    "warm_up",
]

logger = logging.getLogger(__name__)

#: From this many jobs on, ``engine="auto"`` runs eligible simulations compiled.
COMPILED_FROM = 50_000
#: From this many jobs on, ``engine="auto"`` compiles the preemptive policies, whose Python
#: decisions re-rank the running and waiting jobs, and EASY backfilling, whose Python
#: decisions read the queue behind its head (their ``compiles_from``): with numba's cache
#: warm a compiled run of 10,000 jobs takes about 1 s as a whole process; their Python runs
#: take up to 0.4 s less on light loads and up to 11x longer under load or bursts of
#: arrivals (docs/performance.md).
PREEMPTIVE_FROM = 10_000
#: The values of :func:`~asrpt_opt.sim.simulation.simulate`'s ``engine``.
ENGINES = ("auto", "python", "compiled")

_BLOCK = 1 << 16  # jobs whose segments are converted from arrays at once


@dataclass(frozen=True, kw_only=True, slots=True)
class Kernel:
    """A policy's compiled form, as :func:`run_compiled` runs it.

    Attributes
    ----------
    name : str
        The policy's rule (names the compile notice).
    build : callable
        ``build(state)`` returns the policy's compiled state (a numba structref whose type the
        policy's kernel module registers the loop's hooks for) for the simulator's compiled
        state ``state`` (:class:`~asrpt_opt.sim.compiled.state.SimState`).
    """

    name: str
    build: Callable[[Any], Any]

    def __post_init__(self) -> None:
        if not callable(self.build):
            raise UsageError(f"a kernel's build must be callable, got {self.build!r}")


def compiled_kernel(sim: Simulator, engine: str) -> Kernel | None:
    """The kernel to run ``sim`` with in the compiled loop, or None to run it in Python.

    Parameters
    ----------
    sim : Simulator
    engine : {"auto", "python", "compiled"}
        ``compiled`` refuses (:class:`~asrpt_opt.errors.UsageError`) a simulation the loop
        cannot run, naming why.

    Returns
    -------
    Kernel or None
    """
    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {ENGINES}, got {engine!r}")
    n = sim.instance.n_jobs
    if engine == "python" or (engine == "auto" and n < compile_threshold(sim.policy)):
        return None  # without asking the policy (Gittins would read its sample file twice)
    kernel = _kernel_of(sim.policy)
    why = None
    if kernel is None:
        why = f"policy {sim.policy.name!r} (with these parameters) has no compiled kernel"
    elif not sim.instance.is_abstract or type(sim.speed) is not AbstractSpeed:
        why = "only abstract jobs at the abstract speed model run compiled"
    elif sim.refit_every is not None:
        why = "a predictor refitted during the run needs the Python event loop"
    if why is not None:
        if engine == "compiled":
            raise UsageError(f"engine='compiled': {why}")
        return None
    return kernel


def compiles_from(policy: object) -> float:
    """The fewest jobs from which ``engine="auto"`` runs ``policy`` compiled (on abstract
    jobs at the abstract speed model, with a predictor that is not refitted).

    Parameters
    ----------
    policy : Policy

    Returns
    -------
    float
        :func:`compile_threshold`; infinity for a policy without a compiled kernel.
    """
    return math.inf if _kernel_of(policy) is None else compile_threshold(policy)


def compile_threshold(policy: object) -> int:
    """The fewest jobs from which compiling ``policy`` pays, if it has a kernel: its
    ``compiles_from`` attribute, else :data:`COMPILED_FROM` (read without building the
    kernel).

    Parameters
    ----------
    policy : Policy

    Returns
    -------
    int
    """
    return int(getattr(policy, "compiles_from", COMPILED_FROM))


def _kernel_of(policy: object) -> Kernel | None:
    get = getattr(policy, "kernel", None)
    kernel: Kernel | None = get() if callable(get) else None
    return kernel


def warm_up(*policies: object) -> float:
    """Compile the loop with each policy's kernel (or load it from numba's cache) once per
    process, on a tiny instance, with a notice when that takes a while
    (:func:`~asrpt_opt.notices.compile_once`).

    Parameters
    ----------
    *policies : Policy
        Those without a compiled kernel are skipped.

    Returns
    -------
    float
        Seconds it took (0 when already done in this process).
    """
    kernels = (_kernel_of(policy) for policy in policies)
    return sum(_warm(kernel) for kernel in kernels if kernel is not None)


def _warm(kernel: Kernel) -> float:
    return compile_once(
        f"the simulator's compiled loop for {kernel.name}",
        "20-60 s",
        partial(_run_tiny, kernel),
        logger,
    )


def _run_tiny(kernel: Kernel) -> None:
    from asrpt_opt.sim.compiled.loop import run_loop
    from asrpt_opt.sim.compiled.state import new_state

    one = np.ones(2)
    ints = np.array([1, 2], np.int64)
    state = new_state(
        np.array([2], np.int64), np.zeros(2), np.arange(2, dtype=np.int64), ints, one, one,
        one, one, 0.0, False,
    )  # fmt: skip
    run_loop(state, kernel.build(state))


def run_compiled(
    sim: Simulator, kernel: Kernel, ahead: np.ndarray, order: np.ndarray
) -> Schedule | None:
    """Run ``sim`` in the compiled loop.

    Parameters
    ----------
    sim : Simulator
        Fresh (not yet run); its ``predicted`` receives every job's prediction.
    kernel : Kernel
    ahead : ndarray
        The predictions, in release order.
    order : ndarray
        Job indices in release order (stable).

    Returns
    -------
    Schedule or None
        None when the run needs integers past the kernel's 64 bits (Tiresias' attained
        GPU-seconds on extreme inputs): ``engine="auto"`` then runs it in Python.

    Raises
    ------
    UsageError
        For that reason under ``engine="compiled"``.
    """
    _warm(kernel)  # the kernel the run was given: the policy is not asked again
    from asrpt_opt.sim.compiled.loop import run_loop
    from asrpt_opt.sim.compiled.state import OVERFLOW, new_state

    jobs = sim.instance.jobs
    n = len(jobs)
    predicted = np.empty(n)
    predicted[order] = ahead
    state = new_state(
        sim.capacity,
        sim.job_release,
        np.asarray(order, dtype=np.int64),
        sim.job_gpus,
        sim.job_work,
        np.fromiter((j.spread_slowdown for j in jobs), np.float64, n),
        sim.best_rate,
        predicted,
        sim.restore_overhead_s,
        sim.predictions_never_low,
    )
    code, *arrays = run_loop(state, kernel.build(state))
    del state
    if code == OVERFLOW:
        why = "attained GPU-seconds past the compiled kernel's 64-bit integers"
        if sim.engine == "compiled":
            raise UsageError(f"engine='compiled': {why}; engine='python' runs it exactly")
        logger.info("%s: running in Python instead", why)
        return None
    _raise_for_stop(code, sim.policy.name, n, arrays[3])
    sim.predicted[:] = predicted
    return Schedule(
        runs=tuple(_runs(sim, arrays)),
        restore_overhead_s=sim.restore_overhead_s,
    )


def run_columns(
    columns: JobColumns, kernel: Kernel, *, policy: str, restore_overhead_s: float = 0.0
) -> ScheduleColumns:
    """Run abstract jobs held as columns in the compiled loop, with exact predictions.

    Parameters
    ----------
    columns : JobColumns
    kernel : Kernel
    policy : str
        The policy's name (for errors).
    restore_overhead_s : float

    Returns
    -------
    ScheduleColumns
        Job indices are the columns'; each job's segments in time order.

    Raises
    ------
    UsageError
        When the run needs integers past the kernel's 64 bits (only the Python loop runs
        it, and it holds every job as an object).
    PolicyError
        When the policy stalls or wakes idly without end.
    """
    _warm(kernel)
    from asrpt_opt.sim.compiled.loop import run_loop
    from asrpt_opt.sim.compiled.state import OVERFLOW, new_state

    n = columns.n_jobs
    work = np.array(columns.duration_s)
    state = new_state(
        np.asarray(columns.cluster.servers, dtype=np.int64),
        np.array(columns.release_s),
        np.arange(n, dtype=np.int64),
        np.array(columns.gpus),
        work,
        np.array(columns.slowdowns()),
        columns.best_rates(),
        work.copy(),  # the oracle's predictions: the work itself
        float(restore_overhead_s),
        True,  # which never fall short of it
    )
    code, completion, job, start, end, offset, length, server, count = run_loop(
        state, kernel.build(state)
    )
    del state
    if code == OVERFLOW:
        raise UsageError(
            "attained GPU-seconds past the compiled kernel's 64-bit integers; simulate() with "
            "engine='python' runs it exactly, from an Instance"
        )
    _raise_for_stop(code, policy, n, end)
    return ScheduleColumns(
        completion_s=completion,
        job=job,
        start_s=start,
        end_s=end,
        offset=offset,
        length=length,
        server=server,
        count=count,
        restore_overhead_s=float(restore_overhead_s),
    )


def _raise_for_stop(code: int, policy: str, n: int, seg_end: np.ndarray) -> None:
    # The loop stopped the run: idle wake-ups without end, or jobs left waiting.
    from asrpt_opt.sim.compiled.state import IDLE_WAKES, STALLED

    if code == IDLE_WAKES:
        raise IdleWakeLimit(n).error(policy, float(seg_end.max(initial=0.0)))
    if code == STALLED:
        raise PolicyError(f"policy {policy!r} left jobs waiting with nothing to come")


def _runs(sim: Simulator, arrays: list[Any]) -> Any:
    # ``arrays`` is the core's output, emptied here so that what is no longer needed is freed
    # as the records grow.
    completion, seg_job, seg_a, seg_b, seg_off, seg_len, pool_s, pool_c = arrays
    arrays.clear()
    jobs = sim.instance.jobs
    n = len(jobs)
    by_job = np.argsort(seg_job, kind="stable")  # each job's segments, in time order
    bounds = np.concatenate(([0], np.cumsum(np.bincount(seg_job, minlength=n))))
    del seg_job
    # Allocations repeat (a server and a count): one tuple each keeps a million-job schedule
    # small, as does converting the arrays a block of jobs at a time.
    shared: dict[Allocation, Allocation] = {}
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        first = int(bounds[lo])
        idx = by_job[first : int(bounds[hi])]
        starts_s, ends_s = seg_a[idx].tolist(), seg_b[idx].tolist()
        offsets, lengths = seg_off[idx], seg_len[idx]
        # Most segments hold one server: their server and count, gathered for the block.
        one_s, one_c = pool_s[offsets].tolist(), pool_c[offsets].tolist()
        wide = lengths.tolist()
        offsets_list = offsets.tolist()
        ends = bounds[lo + 1 : hi + 1].tolist()
        done = completion[lo:hi].tolist()
        release = [job.release_s for job in jobs[lo:hi]]
        k = 0
        for j in range(lo, hi):
            parts = []
            last = ends[j - lo] - first
            while k < last:
                m = wide[k]
                if m == 1:
                    allocation: Allocation = ((one_s[k], one_c[k]),)
                else:
                    o = offsets_list[k]
                    allocation = tuple(
                        zip(pool_s[o : o + m].tolist(), pool_c[o : o + m].tolist(), strict=True)
                    )
                allocation = shared.setdefault(allocation, allocation)
                # Equal times share one float object: the last segment's end is the
                # completion, and a job started at its release starts at that float.
                end, start = ends_s[k], starts_s[k]
                if k == last - 1 and end == done[j - lo]:
                    end = done[j - lo]
                if start == release[j - lo]:
                    start = release[j - lo]
                parts.append(Segment(start_s=start, end_s=end, allocation=allocation))
                k += 1
            job = jobs[j]
            yield JobRun(
                id=job.id,
                release_s=job.release_s,
                completion_s=done[j - lo],
                segments=tuple(parts),
            )
