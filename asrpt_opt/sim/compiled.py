"""When the simulator runs compiled, and how the compiled core's arrays become a schedule.

The compiled core (:mod:`asrpt_opt.sim._core`, numba) runs the built-in list policies,
ServerFilling-SRPT, PRR and Tiresias' reference policies (Gittins included) on abstract
jobs: the same events, decisions and floating-point operations as the Python event loop, so
the schedules are identical (the tests compare both paths on random instances). It runs
when a policy states its rule (its ``core_rule()``, as
:meth:`ListScheduler.core_rule <asrpt_opt.policies.list_scheduler.ListScheduler.core_rule>`:
only the built-in classes themselves, never a subclass that may change a step), every job
is abstract and runs at
:class:`~asrpt_opt.speed.base.AbstractSpeed`, the predictor is never refitted, and the
instance has at least :data:`COMPILED_FROM` jobs (below, importing numba costs more than it
saves; :data:`COMPILED_FROM_RULE` lowers that for a rule whose Python policy is slow) or
``engine="compiled"`` asks for it. Everything else runs in Python.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asrpt_opt.errors import PolicyError, UsageError
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.schedule import JobRun, Schedule, Segment
from asrpt_opt.notices import compile_once
from asrpt_opt.speed.base import AbstractSpeed

if TYPE_CHECKING:
    from asrpt_opt.sim.engine import Simulator

__all__ = [
    "COMPILED_FROM",
    "COMPILED_FROM_RULE",
    "ENGINES",
    "CoreRule",
    "compiled_rule",
    "compiles_from",
    "fewest_compiled_jobs",
    "run_compiled",
    "warm_up",
]

logger = logging.getLogger(__name__)

#: From this many jobs on, ``engine="auto"`` runs eligible simulations compiled.
COMPILED_FROM = 50_000
#: Rules compiled from fewer jobs: Tiresias' Gittins order costs about 0.4 ms a job in
#: Python, so compiling (about 0.55 s to import numba and load the cached core) pays from
#: about 2,000-2,500 jobs (whole processes, numba's cache warm).
COMPILED_FROM_RULE = {"tiresias-gittins": 3_000}
#: The values of :func:`~asrpt_opt.sim.engine.simulate`'s ``engine``.
ENGINES = ("auto", "python", "compiled")

_BLOCK = 1 << 16  # jobs whose segments are converted from arrays at once
_RULES = (
    "fifo",
    "sjf",
    "srtf",
    "srsf",
    "2d-las",
    "a-srpt",
    "qssf",
    "serverfilling-srpt",
    "prr",
    "tiresias-2d-las",
    "tiresias-gittins",
)
#: Limits and sizes the core holds as 64-bit integers (products of two stay exact).
_MAX_WHOLE = 2**31
_ADAPTIVE = ("double", "additive", "none")


@dataclass(frozen=True, kw_only=True, slots=True)
class CoreRule:
    """A policy's rule as the compiled core knows it.

    Attributes
    ----------
    rule : str
        One of ``fifo``, ``sjf``, ``srtf``, ``srsf``, ``2d-las``, ``a-srpt``, ``qssf``,
        ``serverfilling-srpt``, ``prr``, ``tiresias-2d-las``, ``tiresias-gittins``.
    backfill : bool
    thresholds_gpu_s : tuple of float
        2D-LAS' queue thresholds (empty for the other rules).
    adaptive, finished_order : str
        A-SRPT's knobs (:class:`~asrpt_opt.policies.asrpt.ASRPT`).
    trust, quantum_s : float
        PRR's knobs (:class:`~asrpt_opt.policies.prr.PreferentialRoundRobin`); NaN for the
        default quantum.
    queue_limits_gpu_s : tuple of int
        Tiresias' queue limits (:class:`~asrpt_opt.policies.tiresias.TiresiasDLAS`).
    delta_s : int
        The Gittins quantum (:class:`~asrpt_opt.policies.tiresias.TiresiasGittins`).
    service_sample_s : tuple of int
        The Gittins job-size sample; empty to learn it from the completed jobs.
    """

    rule: str
    backfill: bool = True
    thresholds_gpu_s: tuple[float, ...] = ()
    adaptive: str = "double"
    finished_order: str = "remaining"
    trust: float = 0.5
    quantum_s: float = math.nan
    queue_limits_gpu_s: tuple[int, ...] = ()
    delta_s: int = 3250
    service_sample_s: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.rule not in _RULES:
            raise UsageError(f"the compiled core has no rule {self.rule!r} (it has {_RULES})")
        if self.adaptive not in _ADAPTIVE:
            raise UsageError(f"adaptive must be one of {_ADAPTIVE}, got {self.adaptive!r}")
        if self.finished_order not in ("remaining", "virtual"):
            raise UsageError(
                f"finished_order must be 'remaining' or 'virtual', got {self.finished_order!r}"
            )
        whole = (*self.queue_limits_gpu_s, self.delta_s, *self.service_sample_s)
        if not all(type(x) is int and 0 < x < _MAX_WHOLE for x in whole):
            raise UsageError(
                f"the compiled core takes Tiresias' limits, quantum and sizes as whole numbers "
                f"in [1, {_MAX_WHOLE}), got {whole}"
            )


def compiled_rule(sim: Simulator, engine: str) -> CoreRule | None:
    """The rule to run ``sim`` with in the compiled core, or None to run it in Python.

    Parameters
    ----------
    sim : Simulator
    engine : {"auto", "python", "compiled"}
        ``compiled`` refuses (:class:`~asrpt_opt.errors.UsageError`) a simulation the core
        cannot run, naming why.

    Returns
    -------
    CoreRule or None
    """
    if engine not in ENGINES:
        raise UsageError(f"engine must be one of {ENGINES}, got {engine!r}")
    n = sim.instance.n_jobs
    if engine == "python" or (engine == "auto" and n < fewest_compiled_jobs()):
        return None  # without asking the policy (Gittins would read its sample file twice)
    rule = _rule_of(sim.policy)
    why = None
    if rule is None:
        why = f"policy {sim.policy.name!r} (with these parameters) has no compiled rule"
    elif not sim.instance.is_abstract or type(sim.speed) is not AbstractSpeed:
        why = "only abstract jobs at the abstract speed model run compiled"
    elif sim.refit_every is not None:
        why = "a predictor refitted during the run needs the Python event loop"
    if why is not None:
        if engine == "compiled":
            raise UsageError(f"engine='compiled': {why}")
        return None
    assert rule is not None
    if engine == "auto" and n < _threshold(rule):
        return None
    return rule


def compiles_from(policy: object) -> float:
    """The fewest jobs from which ``engine="auto"`` runs ``policy`` compiled (on abstract
    jobs at the abstract speed model, with a predictor that is not refitted).

    Parameters
    ----------
    policy : Policy

    Returns
    -------
    float
        :data:`COMPILED_FROM`, or the rule's entry of :data:`COMPILED_FROM_RULE`; infinity
        for a policy the core cannot run.
    """
    rule = _rule_of(policy)
    return math.inf if rule is None else _threshold(rule)


def fewest_compiled_jobs() -> int:
    """The fewest jobs from which ``engine="auto"`` runs any policy compiled.

    Returns
    -------
    int
        The smallest of :data:`COMPILED_FROM` and :data:`COMPILED_FROM_RULE`'s entries.
    """
    return min(COMPILED_FROM, *COMPILED_FROM_RULE.values())


def _rule_of(policy: object) -> CoreRule | None:
    get = getattr(policy, "core_rule", None)
    rule: CoreRule | None = get() if callable(get) else None
    return rule


def _threshold(rule: CoreRule) -> int:
    return COMPILED_FROM_RULE.get(rule.rule, COMPILED_FROM)


def warm_up() -> float:
    """Compile the core (or load it from numba's cache) once per process, on a tiny instance,
    with a notice when that takes a while (:func:`~asrpt_opt.notices.compile_once`).

    Returns
    -------
    float
        Seconds it took (0 when already done in this process).
    """
    return compile_once("the simulator's core", "30-60 s", _compile_core, logger)


def _compile_core() -> None:
    from asrpt_opt.sim._core import RULES, run_core

    one = np.ones(2)
    run_core(
        RULES["srtf"],
        True,
        np.ones(1),
        np.array([2], np.int64),
        np.zeros(2),
        np.arange(2, dtype=np.int64),
        np.array([1, 2], np.int64),
        one,
        one,
        one,
        one,
        0.0,
        0,
        True,
        False,
        0.5,
        math.nan,
        np.ones(1, np.int64),
        1,
        np.ones(1, np.int64),
    )


def run_compiled(
    sim: Simulator, rule: CoreRule, ahead: np.ndarray, order: np.ndarray
) -> Schedule | None:
    """Run ``sim`` in the compiled core.

    Parameters
    ----------
    sim : Simulator
        Fresh (not yet run); its ``predicted`` receives every job's prediction.
    rule : CoreRule
    ahead : ndarray
        The predictions, in release order.
    order : ndarray
        Job indices in release order (stable).

    Returns
    -------
    Schedule or None
        None when the run needs integers past the core's 64 bits (Tiresias' attained
        GPU-seconds on extreme inputs): ``engine="auto"`` then runs it in Python.

    Raises
    ------
    UsageError
        For that reason under ``engine="compiled"``.
    """
    warm_up()
    from asrpt_opt.sim._core import ADAPTIVE, OVERFLOW, RULES, STALLED, run_core

    jobs = sim.instance.jobs
    n = len(jobs)
    predicted = np.empty(n)
    predicted[order] = ahead
    code, *arrays = run_core(
        RULES[rule.rule],
        rule.backfill,
        np.asarray(rule.thresholds_gpu_s, dtype=np.float64),
        sim.capacity,
        sim.job_release,
        np.asarray(order, dtype=np.int64),
        sim.job_gpus,
        np.asarray(sim._work, dtype=np.float64),
        np.fromiter((j.spread_slowdown for j in jobs), np.float64, n),
        sim.best_rate,
        predicted,
        sim.restore_overhead_s,
        ADAPTIVE[rule.adaptive],
        rule.finished_order == "remaining",
        sim.predictions_never_low,
        rule.trust,
        rule.quantum_s,
        np.asarray(rule.queue_limits_gpu_s, dtype=np.int64),
        rule.delta_s,
        np.asarray(rule.service_sample_s, dtype=np.int64),
    )
    if code == OVERFLOW:
        why = "attained GPU-seconds past the compiled core's 64-bit integers"
        if sim.engine == "compiled":
            raise UsageError(f"engine='compiled': {why}; engine='python' runs it exactly")
        logger.info("%s: running in Python instead", why)
        return None
    if code == STALLED:
        raise PolicyError(f"policy {sim.policy.name!r} left jobs waiting with nothing to come")
    sim.predicted[:] = predicted
    return Schedule(
        runs=tuple(_runs(sim, arrays)),
        restore_overhead_s=sim.restore_overhead_s,
    )


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
