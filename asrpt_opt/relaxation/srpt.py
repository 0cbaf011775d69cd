"""Exact single-machine schedules: preemptive SRPT and preemptive WSPT.

References
----------
.. [1] L. Schrage, "A proof of the optimality of the shortest remaining processing time
   discipline", Operations Research 16(3):687-690, 1968.
.. [2] M. X. Goemans, "Improved approximation algorithms for scheduling with release dates",
   Proc. SODA 1997, pp. 591-598.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from asrpt_opt.errors import UsageError

__all__ = ["COMPILED_FROM", "SingleMachineSchedule", "preemptive_wspt", "srpt"]

#: From this many jobs on, the event loops run compiled (numba); below, importing numba would
#: cost more than the loop (both give identical results).
COMPILED_FROM = 50_000


@dataclass(frozen=True, kw_only=True, slots=True)
class SingleMachineSchedule:
    """Result of a single-machine schedule.

    Attributes
    ----------
    completion_s : ndarray
        Completion time of each job, in input order.
    total_completion_s : float
        Sum of completion times.
    mean_busy_s : ndarray or None
        Mean busy time of each job (average instant at which its work is processed), when
        computed.
    """

    completion_s: NDArray[np.float64]
    total_completion_s: float
    mean_busy_s: NDArray[np.float64] | None = None


def _inputs(
    release_s: ArrayLike, size: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r = np.asarray(release_s, dtype=np.float64).ravel()
    p = np.asarray(size, dtype=np.float64).ravel()
    if r.shape != p.shape:
        raise UsageError(f"release_s has {r.size} entries but size has {p.size}")
    if r.size and (not np.isfinite(r).all() or not np.isfinite(p).all()):
        raise UsageError("release_s and size must be finite")
    if r.size and (p.min() < 0 or r.min() < 0):
        raise UsageError("release_s and size must be >= 0")
    return r, p


def srpt(release_s: ArrayLike, size: ArrayLike) -> SingleMachineSchedule:
    """Preemptive shortest-remaining-processing-time on one machine of speed 1.

    Solves 1|r_j,pmtn|sum C_j exactly [1]_ in O(n log n): at every instant the released job
    with the least remaining work runs; ties go to the lower input index.

    Parameters
    ----------
    release_s : array_like
        Release times (>= 0).
    size : array_like
        Processing times (>= 0).

    Returns
    -------
    SingleMachineSchedule
        Completion times in input order and their sum.

    References
    ----------
    .. [1] L. Schrage, "A proof of the optimality of the shortest remaining processing time
       discipline", Operations Research 16(3):687-690, 1968.

    Examples
    --------
    >>> srpt([0, 2, 2, 6, 7, 9], [6, 2, 5, 2, 8, 2]).total_completion_s
    76.0
    """
    r_arr, p_arr = _inputs(release_s, size)
    n = r_arr.size
    order = np.argsort(r_arr, kind="stable")
    if n >= COMPILED_FROM:
        from asrpt_opt.relaxation._kernels import srpt_loop

        completion = srpt_loop(r_arr[order], p_arr[order], order.astype(np.int64))
        return SingleMachineSchedule(
            completion_s=completion, total_completion_s=math.fsum(completion.tolist())
        )
    r = r_arr[order].tolist()
    p = p_arr[order].tolist()
    idx = order.tolist()
    done = [0.0] * n
    heap: list[tuple[float, int]] = []  # (remaining, input index): ties go to the lower index
    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
    t = 0.0
    i = 0
    inf = math.inf
    # The loop runs once per arrival and once per completion, so the whole run is O(n log n).
    while i < n or heap:
        if not heap and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            push(heap, (p[i], idx[i]))
            i += 1
        nxt = r[i] if i < n else inf
        rem, k = heap[0]
        if t + rem <= nxt:
            pop(heap)
            t += rem
            done[k] = t
        else:
            replace(heap, (rem - (nxt - t), k))
            t = nxt
    completion = np.asarray(done, dtype=np.float64)
    return SingleMachineSchedule(completion_s=completion, total_completion_s=math.fsum(done))


def preemptive_wspt(
    release_s: ArrayLike, size: ArrayLike, weight: ArrayLike
) -> SingleMachineSchedule:
    """Preemptive weighted-shortest-processing-time on one machine, with mean busy times.

    At every instant the released, unfinished job with the largest ``weight / size`` runs.
    Goemans [2]_ showed this schedule minimises sum w_j M_j, where M_j is the mean busy time
    of job j, over all preemptive schedules; since every schedule has
    C_j >= M_j + size_j / 2, the value sum w_j (M_j + size_j / 2) of this schedule is a lower
    bound on the weighted completion time of every preemptive schedule.

    Parameters
    ----------
    release_s, size, weight : array_like
        Release times, processing times (> 0) and weights (> 0).

    Returns
    -------
    SingleMachineSchedule
        Completion and mean busy times in input order.

    References
    ----------
    .. [2] M. X. Goemans, "Improved approximation algorithms for scheduling with release
       dates", Proc. SODA 1997, pp. 591-598.
    """
    r_arr, p_arr = _inputs(release_s, size)
    w_arr = np.asarray(weight, dtype=np.float64).ravel()
    if w_arr.shape != r_arr.shape:
        raise UsageError("weight must have one entry per job")
    n = r_arr.size
    order = np.argsort(r_arr, kind="stable")
    r = r_arr[order].tolist()
    p = p_arr[order].tolist()
    with np.errstate(over="ignore"):  # a subnormal p_j: its ratio is infinite, as p_j = 0
        ratio = np.divide(
            w_arr[order], p_arr[order], out=np.full(n, np.inf), where=p_arr[order] > 0
        )
    if n >= COMPILED_FROM:
        from asrpt_opt.relaxation._kernels import wspt_loop

        done_arr, busy_arr = wspt_loop(r_arr[order], p_arr[order], -ratio)
        return _wspt_result(order, p_arr[order], done_arr, busy_arr)
    key = (-ratio).tolist()
    remaining = list(p)
    busy = [0.0] * n
    done = [0.0] * n
    heap: list[tuple[float, int]] = []
    t = 0.0
    i = 0
    while i < n or heap:
        if not heap and r[i] > t:
            t = r[i]
        while i < n and r[i] <= t:
            heapq.heappush(heap, (key[i], i))
            i += 1
        nxt = r[i] if i < n else math.inf
        k = heap[0][1]
        if remaining[k] <= nxt - t:
            run = remaining[k]
            busy[k] += run * (t + run / 2.0)
            t += run
            remaining[k] = 0.0
            heapq.heappop(heap)
            done[k] = t
        else:
            run = nxt - t
            busy[k] += run * (t + run / 2.0)
            remaining[k] -= run
            t = nxt
    return _wspt_result(order, np.asarray(p), np.asarray(done), np.asarray(busy))


def _wspt_result(
    order: NDArray[np.intp],
    p: NDArray[np.float64],
    done: NDArray[np.float64],
    busy: NDArray[np.float64],
) -> SingleMachineSchedule:
    """Completion and mean busy times back in input order (arrays in release order)."""
    n = order.size
    completion = np.empty(n, dtype=np.float64)
    completion[order] = done
    mean_busy = np.empty(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mb = np.where(p > 0, busy / p, done)
    mean_busy[order] = mb
    return SingleMachineSchedule(
        completion_s=completion,
        total_completion_s=math.fsum(done.tolist()),
        mean_busy_s=mean_busy,
    )
