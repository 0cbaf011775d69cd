"""The compiled form of :class:`~asrpt_opt.policies.easy.EasyBackfill`, for
:mod:`asrpt_opt.sim.compiled.loop`.

The same steps, ties and floating-point operations as the Python class, without walking
the queue. The waiting jobs of each width sit in arrival order in a segment tree holding
the least ``predicted / best_rate`` below each node (NaN where no job waits). A decision asks
each width that fits for its first job that backfilling may start: any waiting job when the
width is within the extra GPUs, else one that could end by the shadow time (``now + x``
grows with ``x``, so a node's least value decides for all below it). The earliest of these
in arrival order is the job the Python walk would try next, found in O(W log n) for W
widths. A job the walk passes (its placement would end past the shadow time) leaves its
tree until the decision ends, and the extra and free GPUs only shrink, so the walk never
returns to a job it passed. Under bursts thousands wait, and most decisions start nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.experimental import structref

from asrpt_opt._numba import njit
from asrpt_opt._numba.hooks import StateType, implement
from asrpt_opt.sim.compiled import loop
from asrpt_opt.sim.compiled.state import attained, consolidate, record_start

__all__ = ["EasyState", "new_state"]


@structref.register
class EasyStateType(StateType):
    """The numba type of :class:`EasyState`."""


class EasyState(structref.StructRefProxy):
    """The FCFS queue and the scratch of a reservation (:func:`new_state`)."""


structref.define_proxy(
    EasyState,
    EasyStateType,
    ["widths", "width_of", "base", "leaf", "size", "pos", "seq", "job_at", "tree", "n_next",
     "n_arrived", "n_waiting", "skipped", "end", "who"],
)  # fmt: skip


@njit(cache=True)
def new_state(s: Any) -> Any:
    """An empty queue for the jobs of ``s``: one segment tree per job width."""
    widths = np.unique(s.gpus)
    width_of = np.searchsorted(widths, s.gpus).astype(np.int64)
    counts = np.bincount(width_of, minlength=widths.shape[0])
    size = np.ones(widths.shape[0], np.int64)
    for w in range(widths.shape[0]):
        while size[w] < counts[w]:
            size[w] *= 2
    base = np.zeros(widths.shape[0] + 1, np.int64)  # node i of width w at tree[base[w] + i]
    base[1:] = np.cumsum(2 * size)
    leaf = np.zeros(widths.shape[0] + 1, np.int64)  # its leaf i's job at job_at[leaf[w] + i]
    leaf[1:] = np.cumsum(size)
    most = min(s.n, s.total_gpus)
    return EasyState(
        widths, width_of, base, leaf, size, np.zeros(s.n, np.int64), np.zeros(s.n, np.int64),
        np.zeros(leaf[-1], np.int64), np.full(base[-1], np.nan),
        np.zeros(widths.shape[0], np.int64), 0, 0, np.empty(s.n, np.int64),
        np.empty(2 * most + 1), np.empty(2 * most + 1, np.int64),
    )  # fmt: skip


@njit(cache=True)
def _least(a: float, b: float) -> float:
    # The smaller, NaN (no job) losing to any number.
    if a != a or b < a:
        return b
    return a


@njit(cache=True)
def _set(p: Any, w: int, i: int, value: float) -> None:
    # Leaf i of width w's tree becomes ``value``; its ancestors follow.
    tree, b = p.tree, p.base[w]
    node = p.size[w] + i
    tree[b + node] = value
    node //= 2
    while node >= 1:
        tree[b + node] = _least(tree[b + 2 * node], tree[b + 2 * node + 1])
        node //= 2


@njit(cache=True)
def _enter(p: Any, s: Any, j: int) -> None:
    # Job j (re)joins its tree at its arrival position (it arrived, or the decision that
    # passed it is over) with its run time at its best rate: the Python class's
    # ``predicted_work / best_rate``, the same division.
    _set(p, p.width_of[j], p.pos[j], s.predicted[j] / s.best_rate[j])


@njit(cache=True)
def _leave(p: Any, j: int) -> None:
    # Job j leaves its tree (it started, or the walk passed it for this decision).
    _set(p, p.width_of[j], p.pos[j], np.nan)


@njit(cache=True)
def _ok(value: float, now: float, shadow: float) -> bool:
    # Whether a node holds a job to try: any waiting job (shadow NaN: no test), or one whose
    # soonest end ``now + x`` is not past the shadow time.
    return value == value and (shadow != shadow or not now + value > shadow)


@njit(cache=True)
def _first(p: Any, w: int, now: float, shadow: float) -> int:
    # The first job of width w in arrival order that passes _ok (NaN shadow: the first
    # waiting), or -1.
    tree, b, size = p.tree, p.base[w], p.size[w]
    node = size
    while not _ok(tree[b + node], now, shadow):
        while node & 1:  # a right child: its parent's right neighbour comes next
            node //= 2
        if node == 0:
            return -1
        node += 1
    while node < size:  # the leftmost leaf below that passes
        node *= 2
        if not _ok(tree[b + node], now, shadow):
            node += 1
    return p.job_at[p.leaf[w] + node - size]


@implement(loop.arrive, EasyStateType)
def _arrive(policy: Any, sim: Any, job: int, now: float) -> None:
    w = policy.width_of[job]
    i = policy.n_next[w]
    policy.n_next[w] += 1
    policy.pos[job] = i
    policy.seq[job] = policy.n_arrived
    policy.n_arrived += 1
    policy.job_at[policy.leaf[w] + i] = job
    _enter(policy, sim, job)
    policy.n_waiting += 1


@implement(loop.finish, EasyStateType)
def _finish(policy: Any, sim: Any, job: int) -> None:
    pass


@implement(loop.advance, EasyStateType)
def _advance(policy: Any, sim: Any, now: float) -> None:
    pass


@implement(loop.decide, EasyStateType)
def _decide(policy: Any, sim: Any, now: float) -> float:
    if policy.n_waiting > 0 and sim.total_free > 0:
        _easy(policy, sim, now)
    return np.nan


@njit(cache=True)
def _next(p: Any, s: Any, now: float, shadow: float, extra: int, total: int) -> int:
    # The earliest waiting job in arrival order that the Python walk would try now: its width
    # fits in the free GPUs and, past the head, is within the extra GPUs or could end by the
    # shadow time (widths ascend: past ``total`` none fits).
    best = -1
    for w in range(p.widths.shape[0]):
        width = p.widths[w]
        if width > total and not np.isnan(shadow):
            break
        j = _first(p, w, now, np.nan if width <= extra else shadow)
        if j >= 0 and (best < 0 or p.seq[j] < p.seq[best]):
            best = j
    return best


@njit(cache=True)
def _easy(p: Any, s: Any, now: float) -> None:
    # EasyBackfill.decide; the jobs tried and left waiting leave the trees for the decision.
    n_skipped = _walk(p, s, now)
    for k in range(n_skipped):
        _enter(p, s, p.skipped[k])


@njit(cache=True)
def _walk(p: Any, s: Any, now: float) -> int:
    # Starts in arrival order, then backfill past the reserved head; returns how many jobs
    # were tried and left waiting (in ``p.skipped``).
    total = s.total_free
    s.d_free[:] = s.free
    shadow, extra = np.nan, 0
    n_skipped = 0
    while total > 0:
        job = _next(p, s, now, shadow, extra, total)
        if job < 0:
            break
        width = s.gpus[job]
        if width > total:  # the head (only while no shadow: then every width is asked)
            shadow, extra = _reserve(p, s, now, width, total)
            continue
        used = consolidate(s.d_free, width, s.out_s, s.out_c)
        rate = 1.0 if used == 1 else 1.0 / s.slowdown[job]
        end = now + s.predicted[job] / rate
        if not np.isnan(shadow) and end > shadow:
            if width > extra:  # the walk passes it: it leaves the tree until the end
                p.skipped[n_skipped] = job
                n_skipped += 1
                _leave(p, job)
                continue
            extra -= width
        record_start(s, s.n_starts, used)
        p.end[s.n_starts] = end
        s.starts[s.n_starts] = job
        s.n_starts += 1
        total -= width
        _leave(p, job)
        p.n_waiting -= 1
    return n_skipped


@njit(cache=True)
def _reserve(p: Any, s: Any, now: float, width: int, total: int) -> tuple[float, int]:
    # _reserve of the Python class: this decision's starts (their ends already in p.end),
    # then the running jobs, by predicted end and job index.
    if total >= width:
        return now, total - width
    k = s.n_starts
    for a in range(k):
        p.who[a] = s.starts[a]
    for r in range(s.n_run):
        j = s.run_list[r]
        left = max(s.predicted[j] - attained(s, j, now), 0.0)
        p.end[k] = now + left / s.rate[j]
        p.who[k] = j
        k += 1
    # Each job frees at least one GPU, so the first ``need`` ends decide: sort only the jobs
    # ending no later than the need-th end (all of them, ties included, come first).
    need = min(width - total, k)
    last = np.partition(p.end[:k], need - 1)[need - 1]
    near = np.flatnonzero(p.end[:k] <= last)
    by_job = near[np.argsort(p.who[near], kind="mergesort")]
    order = by_job[np.argsort(p.end[by_job], kind="mergesort")]
    avail = total
    for i in order:
        avail += s.gpus[p.who[i]]
        if avail >= width:
            return p.end[i], avail - width
    return np.inf, 0
