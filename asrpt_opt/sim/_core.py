"""The compiled (numba) core: the simulator's event loop and the built-in policies' rules.

(Over 500 lines on purpose: one numba function must hold the event loop, and the policies'
rules, the victim search and consolidation are its inlined helpers; split across modules they
would read as unrelated pieces of what is one loop.)

:func:`run_core` performs, for abstract jobs, exactly what
:class:`~asrpt_opt.sim.engine.Simulator` does with
:class:`~asrpt_opt.policies.list_scheduler.ListScheduler`, ServerFilling-SRPT, PRR and
Tiresias' reference policies (their steps in :mod:`asrpt_opt.sim._tiresias_core`), for
the rules listed in :data:`RULES`: the same events in the same order (completions, arrivals,
wake-ups, one decision per instant), the same keys and tie-breaks (every heap orders tuples
as Python's ``heapq`` does), the same selections, victims and consolidations, and the same
floating-point operations in the same order. The schedules are identical to the Python
path's, which stays the reference and serves every other policy; the tests compare both on
random instances.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from asrpt_opt.sim import _size_sample as size_sample
from asrpt_opt.sim import _tiresias_core as tiresias

__all__ = ["RULES", "run_core"]

#: The policy rules the core knows, by code.
RULES = {
    "fifo": 0,
    "sjf": 1,
    "srtf": 2,
    "srsf": 3,
    "2d-las": 4,
    "a-srpt": 5,
    "qssf": 6,
    "serverfilling-srpt": 7,
    "prr": 8,
    "tiresias-2d-las": 9,
    "tiresias-gittins": 10,
}

_FIFO, _SJF, _SRTF, _SRSF, _LAS, _ASRPT, _QSSF, _SF, _PRR, _TIRESIAS, _GITTINS = range(11)
#: A-SRPT's adaptive rules (ADAPTIVE_RULES' order) and overrun margin (ASRPT's).
ADAPTIVE = {"double": 0, "additive": 1, "none": 2}
_DOUBLE, _ADDITIVE, _NO_RAISE = 0, 1, 2
_MARGIN = 1e-6
_UNRELEASED, _WAITING, _RUNNING, _DONE = 0, 1, 2, 3
_COMPLETION, _WAKE = 0, 1
_LEVEL = float(1 << 31)  # 2D-LAS: queue level, then arrival order (as TwoDimensionalLAS)
#: Exit codes of :func:`run_core`.
OK, STALLED, OVERFLOW = 0, 1, 2


# --------------------------------------------------------------------------- heaps
@njit(cache=True)
def _grow(a: Any) -> Any:
    """``a`` with twice the rows (the new ones uninitialised)."""
    return np.concatenate((a, np.empty_like(a)))


@njit(cache=True)
def _push(t: Any, i: Any, size: int, key: float, a: int, b: int, c: int) -> Any:
    """Push ``(key, a, b[, c])`` on a heap of ``size`` items, growing it when full; returns
    the (possibly new) arrays."""
    if size == t.shape[0]:
        t, i = _grow(t), _grow(i)
    ints = np.empty(i.shape[1], np.int64)
    ints[0] = a
    ints[1] = b
    if ints.shape[0] > 2:
        ints[2] = c
    _heap_push(t, i, size, key, ints)
    return t, i


@njit(cache=True)
def _tuple_less(ta: float, ia: Any, tb: float, ib: Any) -> bool:
    if ta != tb:
        return ta < tb
    for col in range(ia.shape[0]):
        if ia[col] != ib[col]:
            return ia[col] < ib[col]
    return False


@njit(cache=True)
def _heap_push(t: Any, i: Any, size: int, key: float, ints: Any) -> None:
    # Sift up from the end; the caller has ensured room.
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if _tuple_less(key, ints, t[parent], i[parent]):
            t[pos] = t[parent]
            i[pos] = i[parent]
            pos = parent
        else:
            break
    t[pos] = key
    i[pos] = ints


@njit(cache=True)
def _heap_pop(t: Any, i: Any, size: int) -> None:
    # Remove the root of a heap of ``size`` items (the caller decrements its size).
    last = size - 1
    key = t[last]
    ints = i[last].copy()
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= last:
            break
        right = child + 1
        if right < last and _tuple_less(t[right], i[right], t[child], i[child]):
            child = right
        if _tuple_less(t[child], i[child], key, ints):
            t[pos] = t[child]
            i[pos] = i[child]
            pos = child
        else:
            break
    if last > 0:
        t[pos] = key
        i[pos] = ints


# --------------------------------------------------------------------------- placement
@njit(cache=True)
def _consolidate(free: Any, gpus: int, out_s: Any, out_c: Any) -> int:
    """:func:`~asrpt_opt.placement.consolidate.consolidate` into ``out``; returns the number
    of servers used (0: too few GPUs free)."""
    n = free.shape[0]
    fit = -1
    for s in range(n):
        if free[s] >= gpus and (fit < 0 or free[s] < free[fit]):
            fit = s
    if fit >= 0:
        out_s[0] = fit
        out_c[0] = gpus
        return 1
    total = 0
    for s in range(n):
        total += free[s]
    if total < gpus:
        return 0
    # Fullest servers first (lowest index among equals), filled whole until the next can
    # take the remainder; the remainder goes to the best fit among the servers not filled.
    taken = np.zeros(n, np.bool_)
    need = gpus
    k = 0
    while True:
        best = -1
        for s in range(n):
            if not taken[s] and (best < 0 or free[s] > free[best]):
                best = s
        if free[best] >= need:
            last = -1
            for s in range(n):
                if not taken[s] and free[s] >= need and (last < 0 or free[s] < free[last]):
                    last = s
            out_s[k] = last
            out_c[k] = need
            k += 1
            break
        taken[best] = True
        out_s[k] = best
        out_c[k] = free[best]
        need -= free[best]
        k += 1
    # Sorted by server (insertion sort: a handful of entries).
    for a in range(1, k):
        s, c = out_s[a], out_c[a]
        b = a - 1
        while b >= 0 and out_s[b] > s:
            out_s[b + 1] = out_s[b]
            out_c[b + 1] = out_c[b]
            b -= 1
        out_s[b + 1] = s
        out_c[b + 1] = c
    return k


@njit(cache=True)
def _take(
    d_free: Any, out_s: Any, out_c: Any, used: int, pool_s: Any, pool_c: Any, pool_n: int
) -> Any:
    """Take a consolidation's GPUs from ``d_free`` and append its ``used`` entries to the
    allocation pool (grown when full); returns the pool and its new length."""
    while pool_n + used > pool_s.shape[0]:
        pool_s, pool_c = _grow(pool_s), _grow(pool_c)
    for k in range(used):
        d_free[out_s[k]] -= out_c[k]
        pool_s[pool_n] = out_s[k]
        pool_c[pool_n] = out_c[k]
        pool_n += 1
    return pool_s, pool_c, pool_n


# --------------------------------------------------------------------------- the loop
@njit(cache=True)
def run_core(
    rule: int,
    backfill: bool,
    thresholds: Any,
    capacity: Any,
    release: Any,
    order: Any,
    gpus: Any,
    work: Any,
    slowdown: Any,
    best_rate: Any,
    predicted: Any,
    restore_s: float,
    adaptive: int,
    finished_remaining: bool,
    never_low: bool,
    trust: float,
    quantum_s: float,
    limits: Any,
    delta: int,
    sample_sizes: Any,
) -> Any:
    """Simulate; returns ``(code, completion, seg_job, seg_start, seg_end, seg_off, seg_len,
    alloc_s, alloc_c)``: each segment's job, interval and allocation (``seg_len`` entries of
    ``alloc_s``/``alloc_c`` from ``seg_off``), in the order segments ended."""
    n = release.shape[0]
    n_servers = capacity.shape[0]
    preemptive = rule != _FIFO and rule != _SJF and rule != _QSSF
    free = capacity.copy()
    total_gpus = 0
    for s in range(n_servers):
        total_gpus += capacity[s]
    total_free = total_gpus

    status = np.zeros(n, np.int64)
    rem = work.copy()
    att_work = np.zeros(n)
    att_gpu = np.zeros(n)
    rate = np.zeros(n)
    seg_start0 = np.zeros(n)
    work_start = np.zeros(n)
    version = np.zeros(n, np.int64)
    n_segments = np.zeros(n, np.int64)
    completion = np.full(n, np.nan)
    cur_off = np.zeros(n, np.int64)  # the running job's allocation in the pool
    cur_len = np.zeros(n, np.int64)

    # Memory grows with jobs and servers (a million-job run): what holds running jobs only
    # is sized by the GPUs, what only one rule reads is allocated for that rule alone.
    most = min(n, total_gpus)
    n_asrpt = n if rule == _ASRPT else 1
    n_las = n if rule == _LAS else 1
    selects = rule in (_SF, _PRR)
    n_sel = n if selects else 1

    # Allocation pool and segment records (grown by doubling).
    pool_s = np.empty(max(16, n), np.int64)
    pool_c = np.empty(max(16, n), np.int64)
    pool_n = 0
    seg_t = np.empty((max(16, n), 2))  # start, end
    seg_i = np.empty((max(16, n), 3), np.int64)  # job, allocation offset, its length
    seg_n = 0

    # Running set, with O(1) removal.
    run_list = np.empty(most, np.int64)
    run_pos = np.full(n, -1, np.int64)
    n_run = 0

    # Events.
    ev_t = np.empty(max(16, 2 * most))
    ev_i = np.empty((max(16, 2 * most), 3), np.int64)
    ev_n = 0
    wake_version = 0

    # Waiting queues: one heap of (key, job, version) per width.
    widths = np.unique(gpus)
    n_w = widths.shape[0]
    width_of = np.empty(n, np.int64)
    for j in range(n):
        lo, hi = 0, n_w
        while lo < hi:
            mid = (lo + hi) >> 1
            if widths[mid] < gpus[j]:
                lo = mid + 1
            else:
                hi = mid
        width_of[j] = lo
    q_cap = 16
    q_t = np.empty((n_w, q_cap))
    q_i = np.empty((n_w, q_cap, 2), np.int64)
    q_n = np.zeros(n_w, np.int64)
    q_version = np.zeros(n, np.int64)
    queued = np.zeros(n, np.bool_)
    n_waiting = 0

    # Policy state: 2D-LAS' arrival ranks; A-SRPT's keys, predictions (raised adaptively),
    # virtual machine (a heap of (remaining, job, version)) and overrun watches (a heap of
    # (time, job, sequence)).
    las_rank = np.zeros(n_las)
    arrivals = 0
    a_key = np.zeros(n_asrpt)
    a_pred = np.zeros(n_asrpt)
    a_first = np.zeros(n_asrpt)
    vdone = np.zeros(n_asrpt, np.bool_)
    vver = np.zeros(n_asrpt, np.int64)
    v_t = np.empty(max(16, n_asrpt))
    v_i = np.empty((max(16, n_asrpt), 2), np.int64)
    v_n = 0
    vt = 0.0
    scale = 1.0 / float(total_gpus)
    x_t = np.empty(16)
    x_i = np.empty((16, 2), np.int64)
    x_n = 0
    x_seq = np.zeros(n_asrpt, np.int64)
    started = np.zeros(n_asrpt, np.bool_)
    # ServerFilling-SRPT and PRR choose among the released, unfinished jobs ("active").
    act = np.empty(n_sel, np.int64)
    act_pos = np.full(n_sel, -1, np.int64)
    n_act = 0
    active_gpus = 0
    released = 0
    length_sum = 0.0
    quantum = -1
    quantum_end = -np.inf
    mark = np.zeros(n_sel, np.bool_)
    scr_s = np.empty(2 * n_servers + 16, np.int64)  # grown when a decision needs more
    scr_c = np.empty(2 * n_servers + 16, np.int64)
    watch = rule == _ASRPT and adaptive != _NO_RAISE and not never_low
    # Tiresias: its queues (asrpt_opt.sim._tiresias_core) and, for its Gittins order, a
    # job-size sample: the one given, or the sizes of the jobs completed so far.
    in_tiresias = rule in (_TIRESIAS, _GITTINS)
    t_state = tiresias.new_state(n if in_tiresias else 0, limits, release)
    learn = rule == _GITTINS and sample_sizes.shape[0] == 0
    sample = size_sample.new_sample(
        n + sample_sizes.shape[0] if rule == _GITTINS else 0, max(delta, 1)
    )
    for size in sample_sizes:
        size_sample.sample_add(sample, size)

    # Scratch of one decision.
    d_free = np.empty(n_servers, np.int64)
    c_t = np.empty(n_w)
    c_i = np.empty((n_w, 3), np.int64)  # (job, version, width index)
    starts = np.empty(most, np.int64)
    start_off = np.empty(most, np.int64)
    start_len = np.empty(most, np.int64)
    preempts = np.empty(most, np.int64)
    r_key = np.empty(most)
    r_alive = np.empty(most, np.bool_)
    out_s = np.empty(n_servers, np.int64)
    out_c = np.empty(n_servers, np.int64)

    # What a job's stop updates (arrays that never change size).
    per_job = (
        n_segments,
        seg_start0,
        cur_off,
        cur_len,
        rem,
        att_work,
        work,
        completion,
        status,
        work_start,
        rate,
        att_gpu,
        gpus,
        free,
        version,
    )
    next_arrival = 0
    finished = 0
    now = 0.0
    code = OK
    while finished < n:
        # Drop superseded events.
        while ev_n > 0:
            kind, j, ver = ev_i[0, 0], ev_i[0, 1], ev_i[0, 2]
            if ver == (wake_version if kind == _WAKE else version[j]):
                break
            _heap_pop(ev_t, ev_i, ev_n)
            ev_n -= 1
        t = ev_t[0] if ev_n > 0 else np.inf
        if next_arrival < n and release[order[next_arrival]] < t:
            t = release[order[next_arrival]]
        if t == np.inf:
            code = STALLED
            break
        now = t
        horizon = t + 1e-12 * (t if t > 1.0 else 1.0)
        while ev_n > 0 and ev_t[0] <= horizon:
            kind, j, ver = ev_i[0, 0], ev_i[0, 1], ev_i[0, 2]
            _heap_pop(ev_t, ev_i, ev_n)
            ev_n -= 1
            if kind == _COMPLETION and ver == version[j]:
                if seg_n == seg_t.shape[0]:
                    seg_t, seg_i = _grow(seg_t), _grow(seg_i)
                seg_n = _stop(j, now, True, seg_t, seg_i, seg_n, per_job, pool_s, pool_c)
                n_run = _leave(j, run_list, run_pos, n_run)
                total_free += gpus[j]
                finished += 1
                if rule == _ASRPT:
                    x_seq[j] += 1  # A-SRPT stops watching it
                if in_tiresias:
                    tiresias.leave(t_state, j, sample, learn, gpus)
                if selects:
                    # Kept in arrival order: PRR's ties, and usually already index order.
                    for i in range(act_pos[j], n_act - 1):
                        act[i] = act[i + 1]
                        act_pos[act[i]] = i
                    act_pos[j] = -1
                    n_act -= 1
                    active_gpus -= gpus[j]
        if rule == _ASRPT:
            # Advance the virtual machine to now (ASRPT._advance), re-keying queued jobs.
            tv = vt
            while v_n > 0 and tv < now:
                rv, jv, verv = v_t[0], v_i[0, 0], v_i[0, 1]
                if verv != vver[jv]:
                    _heap_pop(v_t, v_i, v_n)
                    v_n -= 1
                    continue
                if tv + rv <= now:
                    _heap_pop(v_t, v_i, v_n)
                    v_n -= 1
                    tv += rv
                    vdone[jv] = True
                    if finished_remaining:
                        left = (
                            max(
                                a_pred[jv]
                                - _attained(jv, status, now, att_work, work_start, rate),
                                0.0,
                            )
                            / best_rate[jv]
                        )
                        key = -1.0 / (1.0 + float(gpus[jv]) * left)
                    else:
                        key = -1.0 / (1.0 + tv)
                else:
                    key = rv - (now - tv)
                    v_t[0] = key  # heapreplace with a smaller key: the root stays the root
                    tv = now
                a_key[jv] = key
                if queued[jv]:
                    q_t, q_i = _enqueue(q_t, q_i, q_n, width_of[jv], key, jv, q_version)
            vt = max(tv, now)
        while next_arrival < n and release[order[next_arrival]] <= t:
            j = order[next_arrival]
            next_arrival += 1
            status[j] = _WAITING
            if rule == _LAS:
                las_rank[j] = arrivals
                arrivals += 1
            if in_tiresias:
                tiresias.arrive(t_state, j, now)
                continue
            if selects:
                act[n_act] = j
                act_pos[j] = n_act
                n_act += 1
                active_gpus += gpus[j]
                if rule == _PRR:
                    released += 1
                    length_sum += predicted[j] / best_rate[j]
                continue
            if rule == _ASRPT:
                a_pred[j] = predicted[j]
                a_first[j] = predicted[j]
                size = float(gpus[j]) * predicted[j] / best_rate[j] * scale
                vver[j] += 1
                v_t, v_i = _push(v_t, v_i, v_n, size, j, vver[j], 0)
                v_n += 1
                a_key[j] = size
                key = size
            else:
                key = _waiting_key(
                    rule,
                    j,
                    release,
                    predicted,
                    att_work,
                    best_rate,
                    gpus,
                    att_gpu,
                    thresholds,
                    las_rank,
                )
            q_t, q_i = _enqueue(q_t, q_i, q_n, width_of[j], key, j, q_version)
            queued[j] = True
            n_waiting += 1
        if finished == n:
            break

        if watch:
            # A-SRPT: raise the predictions of running jobs past them (ASRPT._raise_overrun).
            while x_n > 0 and x_t[0] <= now:
                jx, seq = x_i[0, 0], x_i[0, 1]
                _heap_pop(x_t, x_i, x_n)
                x_n -= 1
                if seq != x_seq[jx] or status[jx] != _RUNNING:
                    continue
                attained = _attained(jx, status, now, att_work, work_start, rate)
                if attained >= a_pred[jx] * (1.0 + _MARGIN):
                    new = 2.0 * attained if adaptive == _DOUBLE else attained + a_first[jx]
                    extra = float(gpus[jx]) * (new - a_pred[jx]) / best_rate[jx] * scale
                    a_pred[jx] = new
                    current = a_key[jx]
                    size = (current if current > 0 else 0.0) + extra
                    vdone[jx] = False
                    vver[jx] += 1
                    v_t, v_i = _push(v_t, v_i, v_n, size, jx, vver[jx], 0)
                    v_n += 1
                    a_key[jx] = size  # running, so not queued: nothing to re-queue
                x_t, x_i = _watch(
                    jx,
                    rate[jx],
                    work_start[jx],
                    now,
                    a_pred,
                    x_seq,
                    x_t,
                    x_i,
                    x_n,
                    status,
                    att_work,
                    work_start,
                    rate,
                )
                x_n += 1

        # ---- decide (ListScheduler.decide)
        n_starts = 0
        n_pre = 0
        wake = np.nan
        if selects:
            n_starts, n_pre, n_scr, wake, quantum, quantum_end, scr_s, scr_c = _select_and_serve(
                rule,
                now,
                act,
                n_act,
                active_gpus,
                total_gpus,
                status,
                predicted,
                att_work,
                work_start,
                rate,
                best_rate,
                gpus,
                free,
                run_list,
                n_run,
                cur_off,
                cur_len,
                pool_s,
                pool_c,
                restore_s,
                trust,
                quantum_s,
                released,
                length_sum,
                quantum,
                quantum_end,
                mark,
                d_free,
                out_s,
                out_c,
                starts,
                start_len,
                scr_s,
                scr_c,
                preempts,
            )
            while pool_n + n_scr > pool_s.shape[0]:
                pool_s = _grow(pool_s)
                pool_c = _grow(pool_c)
            k = 0
            for a in range(n_starts):
                start_off[a] = pool_n
                for _ in range(start_len[a]):
                    pool_s[pool_n] = scr_s[k]
                    pool_c[pool_n] = scr_c[k]
                    pool_n += 1
                    k += 1
        elif in_tiresias:
            n_starts, n_pre, wake = tiresias.decide(
                t_state, sample, rule == _GITTINS, now, gpus, total_gpus, starts, preempts
            )
            if t_state[4][1]:
                code = OVERFLOW
                break
            # TiresiasDLAS._allocate: consolidate the starts on the GPUs the preempted free.
            d_free[:] = free
            for v in range(n_pre):
                victim = preempts[v]
                for k in range(cur_off[victim], cur_off[victim] + cur_len[victim]):
                    d_free[pool_s[k]] += pool_c[k]
            for a in range(n_starts):
                used = _consolidate(d_free, gpus[starts[a]], out_s, out_c)
                assert used > 0  # only the count matters, and it was checked
                start_off[a] = pool_n
                start_len[a] = used
                pool_s, pool_c, pool_n = _take(d_free, out_s, out_c, used, pool_s, pool_c, pool_n)
        elif not (n_waiting == 0 or (total_free == 0 and not preemptive)):
            d_total_free = total_free
            spare = total_gpus - total_free if preemptive else 0
            d_free[:] = free
            keys_ready = False
            max_key = np.inf
            # Candidates: the head of each width's heap.
            n_c = 0
            for w in range(n_w):
                n_c = _candidate(q_t, q_i, q_n, w, queued, q_version, c_t, c_i, n_c)
            while n_c > 0:
                key = c_t[0]
                job = c_i[0, 0]
                w = c_i[0, 2]
                _heap_pop(c_t, c_i, n_c)
                n_c -= 1
                width = widths[w]
                first_victim = n_pre
                if width > d_total_free:
                    got_victims = False
                    if width <= d_total_free + spare:
                        if not keys_ready:
                            max_key = _running_keys(
                                rule,
                                n_run,
                                run_list,
                                now,
                                predicted,
                                att_work,
                                work_start,
                                rate,
                                best_rate,
                                gpus,
                                att_gpu,
                                seg_start0,
                                thresholds,
                                las_rank,
                                r_key,
                                r_alive,
                                a_key,
                                a_pred,
                                vdone,
                                finished_remaining,
                            )
                            keys_ready = True
                        need = width - d_total_free
                        if key < max_key:
                            n_pre, max_key = _victims(
                                key, need, n_run, run_list, r_key, r_alive, gpus, preempts, n_pre
                            )
                            got_victims = n_pre > first_victim
                            if got_victims and rule == _ASRPT and restore_s > 0:
                                # ASRPT.worth_preempting: no victim about to finish.
                                for v in range(first_victim, n_pre):
                                    victim = preempts[v]
                                    attained = _attained(
                                        victim, status, now, att_work, work_start, rate
                                    )
                                    left = (a_pred[victim] - attained) / best_rate[victim]
                                    if left <= restore_s:
                                        got_victims = False
                                if not got_victims:
                                    for v in range(first_victim, n_pre):
                                        r_alive[run_pos[preempts[v]]] = True
                                    max_key = -np.inf
                                    for r in range(n_run):
                                        if r_alive[r] and r_key[r] > max_key:
                                            max_key = r_key[r]
                                    n_pre = first_victim
                    if not got_victims:
                        if not backfill:
                            break
                        continue
                    for v in range(first_victim, n_pre):
                        victim = preempts[v]
                        for k in range(cur_off[victim], cur_off[victim] + cur_len[victim]):
                            d_free[pool_s[k]] += pool_c[k]
                        d_total_free += gpus[victim]
                        spare -= gpus[victim]
                used = _consolidate(d_free, width, out_s, out_c)
                if used == 0:
                    # No placement (cannot happen for consolidation with room): undo.
                    for v in range(first_victim, n_pre):
                        victim = preempts[v]
                        for k in range(cur_off[victim], cur_off[victim] + cur_len[victim]):
                            d_free[pool_s[k]] -= pool_c[k]
                        d_total_free -= gpus[victim]
                        spare += gpus[victim]
                    n_pre = first_victim
                    if not backfill:
                        break
                    continue
                start_off[n_starts] = pool_n
                start_len[n_starts] = used
                pool_s, pool_c, pool_n = _take(d_free, out_s, out_c, used, pool_s, pool_c, pool_n)
                d_total_free -= width
                # Dequeue.
                _heap_pop(q_t[w], q_i[w], q_n[w])
                q_n[w] -= 1
                queued[job] = False
                n_waiting -= 1
                starts[n_starts] = job
                n_starts += 1
                n_c = _candidate(q_t, q_i, q_n, w, queued, q_version, c_t, c_i, n_c)
            # Preempted jobs queue again only now, keyed (as ListScheduler does) before their
            # stop is applied: a waiting key reads the service a running job has attained,
            # which is its running key's.
            for v in range(n_pre):
                victim = preempts[v]
                if rule == _ASRPT:
                    key = a_key[victim]
                    if finished_remaining and vdone[victim]:
                        attained = _attained(victim, status, now, att_work, work_start, rate)
                        left = max(a_pred[victim] - attained, 0.0) / best_rate[victim]
                        key = -1.0 / (1.0 + float(gpus[victim]) * left)
                else:
                    key = r_key[run_pos[victim]]  # its running key, computed this decision
                q_t, q_i = _enqueue(q_t, q_i, q_n, width_of[victim], key, victim, q_version)
                queued[victim] = True  # it was running, so not queued
                n_waiting += 1
        if watch:
            # ASRPT.wake_time: watch the started jobs, forget the preempted ones.
            for v in range(n_pre):
                x_seq[preempts[v]] += 1
            for a in range(n_starts):
                j = starts[a]
                progress = now + (restore_s if started[j] else 0.0)
                speed = 1.0 if start_len[a] == 1 else 1.0 / slowdown[j]
                x_t, x_i = _watch(
                    j,
                    speed,
                    progress,
                    now,
                    a_pred,
                    x_seq,
                    x_t,
                    x_i,
                    x_n,
                    status,
                    att_work,
                    work_start,
                    rate,
                )
                x_n += 1
            while x_n > 0 and x_i[0, 1] != x_seq[x_i[0, 0]]:
                _heap_pop(x_t, x_i, x_n)
                x_n -= 1
            if x_n > 0 and x_t[0] > now:
                wake = x_t[0]
        if rule == _LAS and n_waiting > 0:
            wake = _las_wake(
                now,
                n_run,
                run_list,
                preempts,
                n_pre,
                starts,
                n_starts,
                att_gpu,
                seg_start0,
                gpus,
                thresholds,
            )
        wake_version += 1

        # ---- apply: preemptions, then starts (Simulator._apply).
        for v in range(n_pre):
            j = preempts[v]
            if seg_n == seg_t.shape[0]:
                seg_t, seg_i = _grow(seg_t), _grow(seg_i)
            seg_n = _stop(j, now, False, seg_t, seg_i, seg_n, per_job, pool_s, pool_c)
            n_run = _leave(j, run_list, run_pos, n_run)
            total_free += gpus[j]
        for a in range(n_starts):
            j = starts[a]
            for k in range(start_off[a], start_off[a] + start_len[a]):
                free[pool_s[k]] -= pool_c[k]
            total_free -= gpus[j]
            cur_off[j] = start_off[a]
            cur_len[j] = start_len[a]
            speed = 1.0 if start_len[a] == 1 else 1.0 / slowdown[j]
            ws = now + restore_s if n_segments[j] > 0 else now
            rate[j] = speed
            seg_start0[j] = now
            work_start[j] = ws
            status[j] = _RUNNING
            if rule == _ASRPT:
                started[j] = True
            run_list[n_run] = j
            run_pos[j] = n_run
            n_run += 1
            version[j] += 1
            ev_t, ev_i = _push(ev_t, ev_i, ev_n, ws + rem[j] / speed, _COMPLETION, j, version[j])
            ev_n += 1
        if not np.isnan(wake) and wake > now and wake < np.inf:
            ev_t, ev_i = _push(ev_t, ev_i, ev_n, wake, _WAKE, -1, wake_version)
            ev_n += 1
    return (
        code,
        completion,
        seg_i[:seg_n, 0].copy(),
        seg_t[:seg_n, 0].copy(),
        seg_t[:seg_n, 1].copy(),
        seg_i[:seg_n, 1].copy(),
        seg_i[:seg_n, 2].copy(),
        pool_s[:pool_n].copy(),
        pool_c[:pool_n].copy(),
    )


@njit(cache=True)
def _enqueue(q_t: Any, q_i: Any, q_n: Any, w: int, key: float, job: int, q_version: Any) -> Any:
    """ListScheduler._enqueue: push (key, job, new version) on width ``w``'s heap; returns
    the (possibly grown) queue arrays."""
    if q_n[w] == q_t.shape[1]:
        cap = q_t.shape[1]
        t = np.empty((q_t.shape[0], cap * 2))
        i = np.empty((q_i.shape[0], cap * 2, 2), np.int64)
        t[:, :cap] = q_t
        i[:, :cap] = q_i
        q_t, q_i = t, i
    q_version[job] += 1
    ints = np.empty(2, np.int64)
    ints[0] = job
    ints[1] = q_version[job]
    _heap_push(q_t[w], q_i[w], q_n[w], key, ints)
    q_n[w] += 1
    return q_t, q_i


@njit(cache=True)
def _candidate(
    q_t: Any, q_i: Any, q_n: Any, w: int, queued: Any, q_version: Any, c_t: Any, c_i: Any, n_c: int
) -> int:
    """Push width ``w``'s head, if any, on the candidate heap of ``n_c`` items; returns its
    new size."""
    if not _clean_head(q_t[w], q_i[w], q_n, w, queued, q_version):
        return n_c
    ints = np.empty(3, np.int64)
    ints[0] = q_i[w, 0, 0]
    ints[1] = q_i[w, 0, 1]
    ints[2] = w
    _heap_push(c_t, c_i, n_c, q_t[w, 0], ints)
    return n_c + 1


@njit(cache=True)
def _clean_head(t: Any, i: Any, q_n: Any, w: int, queued: Any, q_version: Any) -> bool:
    # ListScheduler._head: drop entries of jobs no longer queued or re-keyed since.
    while q_n[w] > 0:
        job, ver = i[0, 0], i[0, 1]
        if queued[job] and ver == q_version[job]:
            return True
        _heap_pop(t, i, q_n[w])
        q_n[w] -= 1
    return False


@njit(cache=True)
def _level(thresholds: Any, service: float) -> int:
    # np.searchsorted(thresholds, service, side="right")
    k = 0
    while k < thresholds.shape[0] and thresholds[k] <= service:
        k += 1
    return k


@njit(cache=True)
def _waiting_key(
    rule: int,
    j: int,
    release: Any,
    predicted: Any,
    att_work: Any,
    best_rate: Any,
    gpus: Any,
    att_gpu: Any,
    thresholds: Any,
    las_rank: Any,
) -> float:
    if rule == _FIFO:
        return release[j]
    if rule == _SJF:
        return predicted[j] / best_rate[j]
    if rule == _SRTF:
        return (predicted[j] - att_work[j]) / best_rate[j]
    if rule == _SRSF:
        return (predicted[j] - att_work[j]) / best_rate[j] * float(gpus[j])
    if rule == _QSSF:
        return predicted[j] / best_rate[j] * float(gpus[j])
    return _level(thresholds, att_gpu[j]) * _LEVEL + las_rank[j]


@njit(cache=True)
def _running_keys(
    rule: int,
    n_run: int,
    run_list: Any,
    now: float,
    predicted: Any,
    att_work: Any,
    work_start: Any,
    rate: Any,
    best_rate: Any,
    gpus: Any,
    att_gpu: Any,
    seg_start0: Any,
    thresholds: Any,
    las_rank: Any,
    r_key: Any,
    r_alive: Any,
    a_key: Any,
    a_pred: Any,
    vdone: Any,
    finished_remaining: bool,
) -> float:
    """The running jobs' keys (aligned with ``run_list``), all alive; returns the largest."""
    top = -np.inf
    for r in range(n_run):
        j = run_list[r]
        if rule == _ASRPT:
            key = a_key[j]
            if finished_remaining and vdone[j]:
                # ASRPT.running_keys, in its (array) order of operations.
                attained = att_work[j] + max(now - work_start[j], 0.0) * rate[j]
                service = float(gpus[j]) * max(a_pred[j] - attained, 0.0) / best_rate[j]
                key = -1.0 / (1.0 + service)
        elif rule == _LAS:
            service = att_gpu[j] + (now - seg_start0[j]) * float(gpus[j])
            key = _level(thresholds, service) * _LEVEL + las_rank[j]
        else:
            busy = now - work_start[j]
            attained = att_work[j] + (busy * rate[j] if busy > 0 else 0.0)
            key = (predicted[j] - attained) / best_rate[j]
            if rule == _SRSF:
                key = key * float(gpus[j])
        r_key[r] = key
        r_alive[r] = True
        if key > top:
            top = key
    return top


@njit(cache=True)
def _victims(
    key: float,
    need: int,
    n_run: int,
    run_list: Any,
    r_key: Any,
    r_alive: Any,
    gpus: Any,
    preempts: Any,
    n_pre: int,
) -> Any:
    """ListScheduler's _Running.victims: append the victims to ``preempts``; returns the new
    count (unchanged: none) and the largest key still alive."""
    room = 0
    for r in range(n_run):
        if r_alive[r] and r_key[r] > key:
            room += gpus[run_list[r]]
    if room >= need:
        # Largest key first, ties to the larger job index.
        got = 0
        first = n_pre
        while got < need:
            best = -1
            for r in range(n_run):
                if (
                    r_alive[r]
                    and r_key[r] > key
                    and (
                        best < 0
                        or r_key[r] > r_key[best]
                        or (r_key[r] == r_key[best] and run_list[r] > run_list[best])
                    )
                ):
                    best = r
            r_alive[best] = False
            preempts[n_pre] = best  # a running-list position for now
            n_pre += 1
            got += gpus[run_list[best]]
        # Spare the more urgent of the chosen victims when the others already make room.
        k = n_pre - 2
        while k >= first:
            g = gpus[run_list[preempts[k]]]
            if got - g >= need:
                r_alive[preempts[k]] = True
                got -= g
                for m in range(k, n_pre - 1):
                    preempts[m] = preempts[m + 1]
                n_pre -= 1
            k -= 1
        for m in range(first, n_pre):
            preempts[m] = run_list[preempts[m]]
    top = -np.inf
    for r in range(n_run):
        if r_alive[r] and r_key[r] > top:
            top = r_key[r]
    return n_pre, top


@njit(cache=True)
def _las_wake(
    now: float,
    n_run: int,
    run_list: Any,
    preempts: Any,
    n_pre: int,
    starts: Any,
    n_starts: int,
    att_gpu: Any,
    seg_start0: Any,
    gpus: Any,
    thresholds: Any,
) -> float:
    """TwoDimensionalLAS.wake_time: the next instant a running job crosses a threshold."""
    best = np.inf
    found = False
    for r in range(n_run + n_starts):
        if r < n_run:
            j = run_list[r]
            gone = False
            for v in range(n_pre):
                if preempts[v] == j:
                    gone = True
            if gone:
                continue
            service = att_gpu[j] + (now - seg_start0[j]) * float(gpus[j])
        else:
            j = starts[r - n_run]
            service = att_gpu[j]
        level = _level(thresholds, service)
        if level < thresholds.shape[0]:
            gap = (thresholds[level] - service) / gpus[j]
            if not found or gap < best:
                best = gap
                found = True
    if not found:
        return np.nan
    wake = now + best
    return wake if wake > now else np.nan


@njit(cache=True)
def _attained(j: int, status: Any, now: float, att_work: Any, work_start: Any, rate: Any) -> float:
    """Simulator.attained_work."""
    if status[j] == _RUNNING:
        busy = now - work_start[j]
        return att_work[j] + (busy * rate[j] if busy > 0 else 0.0)
    return att_work[j]


@njit(cache=True)
def _watch(
    j: int,
    r: float,
    progress_s: float,
    now: float,
    a_pred: Any,
    x_seq: Any,
    x_t: Any,
    x_i: Any,
    x_n: int,
    status: Any,
    att_work: Any,
    work_start: Any,
    rate: Any,
) -> Any:
    """ASRPT._watch: when ``j``, running at ``r`` from ``progress_s``, passes its prediction;
    pushed on the watch heap of ``x_n`` items, whose (possibly grown) arrays it returns."""
    x_seq[j] += 1
    attained = _attained(j, status, now, att_work, work_start, rate)
    left = a_pred[j] * (1.0 + 2.0 * _MARGIN) - attained
    when = max(progress_s, now) + max(left, 0.0) / r
    return _push(x_t, x_i, x_n, when, j, x_seq[j], 0)


@njit(cache=True)
def _select_and_serve(
    rule: int,
    now: float,
    act: Any,
    n_act: int,
    active_gpus: int,
    total_gpus: int,
    status: Any,
    predicted: Any,
    att_work: Any,
    work_start: Any,
    rate: Any,
    best_rate: Any,
    gpus: Any,
    free: Any,
    run_list: Any,
    n_run: int,
    cur_off: Any,
    cur_len: Any,
    pool_s: Any,
    pool_c: Any,
    restore_s: float,
    trust: float,
    quantum_s: float,
    released: int,
    length_sum: float,
    quantum: int,
    quantum_end: float,
    mark: Any,
    d_free: Any,
    out_s: Any,
    out_c: Any,
    starts: Any,
    start_len: Any,
    scr_s: Any,
    scr_c: Any,
    preempts: Any,
) -> Any:
    """ServerFillingSRPT.decide and PreferentialRoundRobin.decide with serve(): returns
    ``(starts, preemptions, allocation entries, wake, quantum, quantum end, scr_s, scr_c)``;
    the starts' allocations are in the (possibly grown) ``scr_s``/``scr_c``, one after the
    other."""
    wake = np.nan
    if n_act == 0:
        return 0, 0, 0, wake, quantum, quantum_end, scr_s, scr_c
    if rule == _PRR and now >= quantum_end - 1e-12:
        quantum += 1
        # A fixed quantum, or (NaN) half the mean predicted length.
        length = quantum_s if quantum_s == quantum_s else 0.5 * length_sum / max(released, 1)
        quantum_end = now + max(length, 2.0 * restore_s, 1e-6)
    fits = active_gpus <= total_gpus
    jobs = act[:n_act]  # in arrival order
    if rule == _SF:
        for i in range(1, n_act):
            if jobs[i] < jobs[i - 1]:
                jobs = np.sort(jobs)  # ties go to the lower index
                break
    if fits:
        # Every released job fits: only the waiting ones need an order.
        jobs = jobs[status[jobs] == _WAITING]
    m = jobs.shape[0]
    attained = np.empty(m)
    for i in range(m):
        attained[i] = _attained(jobs[i], status, now, att_work, work_start, rate)
    if rule == _SF:
        left = (predicted[jobs] - attained) / best_rate[jobs]
        ranked = jobs[np.argsort(left, kind="mergesort")]  # (remaining, index)
        if fits:
            chosen = ranked[np.argsort(-gpus[ranked], kind="mergesort")]
        else:
            chosen = _server_filling(ranked, gpus, total_gpus, mark)
    else:
        if np.floor((quantum + 1) * trust + 1e-12) > np.floor(quantum * trust + 1e-12):
            key = np.maximum(predicted[jobs] - attained, 0.0) / best_rate[jobs]
        else:
            key = attained / best_rate[jobs]
        ranked = jobs[np.argsort(key, kind="mergesort")]  # ties to the earlier arrival
        if fits:
            chosen = ranked
        else:
            chosen = np.empty(m, np.int64)
            n_chosen = 0
            used = 0
            for j in ranked:
                if used + gpus[j] <= total_gpus:
                    chosen[n_chosen] = j
                    n_chosen += 1
                    used += gpus[j]
            chosen = chosen[:n_chosen]
            if n_chosen < n_act:  # another quantum matters while a job is left out
                wake = quantum_end
    # serve(): preempt the running jobs not chosen, then start the chosen waiting ones.
    d_free[:] = free
    n_pre = 0
    if not fits:
        for j in chosen:
            mark[j] = True
        for r in range(n_run):
            j = run_list[r]
            if not mark[j]:
                for k in range(cur_off[j], cur_off[j] + cur_len[j]):
                    d_free[pool_s[k]] += pool_c[k]
                preempts[n_pre] = j
                n_pre += 1
        for j in chosen:
            mark[j] = False
    n_starts = 0
    n_scr = 0
    for j in chosen:
        if status[j] != _WAITING:
            continue
        used = _consolidate(d_free, gpus[j], out_s, out_c)
        if used == 0:
            continue
        scr_s, scr_c, n_scr = _take(d_free, out_s, out_c, used, scr_s, scr_c, n_scr)
        starts[n_starts] = j
        start_len[n_starts] = used
        n_starts += 1
    return n_starts, n_pre, n_scr, wake, quantum, quantum_end, scr_s, scr_c


@njit(cache=True)
def _server_filling(ranked: Any, gpus: Any, total_gpus: int, mark: Any) -> Any:
    """ServerFillingSRPT.select on the jobs in SRPT order."""
    m = ranked.shape[0]
    k = 0
    covered = 0
    while k < m and covered < total_gpus:
        covered += gpus[ranked[k]]
        k += 1
    prefix = ranked[:k][np.argsort(-gpus[ranked[:k]], kind="mergesort")]
    chosen = np.empty(m, np.int64)
    n_chosen = 0
    used = 0
    for j in prefix:
        if used + gpus[j] <= total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += gpus[j]
            mark[j] = True
    # Beyond the paper: fill the GPUs a non-dividing width left idle.
    for j in ranked:
        if used >= total_gpus:
            break
        if not mark[j] and used + gpus[j] <= total_gpus:
            chosen[n_chosen] = j
            n_chosen += 1
            used += gpus[j]
            mark[j] = True
    for i in range(n_chosen):
        mark[chosen[i]] = False
    return chosen[:n_chosen]


@njit(cache=True)
def _stop(
    j: int,
    now: float,
    finished: bool,
    seg_t: Any,
    seg_i: Any,
    seg_n: int,
    per_job: Any,
    pool_s: Any,
    pool_c: Any,
) -> int:
    """Simulator._stop: record the segment (room made by the caller), account the work and
    free the GPUs; returns the new number of segments."""
    (
        n_segments,
        seg_start0,
        cur_off,
        cur_len,
        rem,
        att_work,
        work,
        completion,
        status,
        work_start,
        rate,
        att_gpu,
        gpus,
        free,
        version,
    ) = per_job
    if now > seg_start0[j]:
        seg_t[seg_n, 0] = seg_start0[j]
        seg_t[seg_n, 1] = now
        seg_i[seg_n, 0] = j
        seg_i[seg_n, 1] = cur_off[j]
        seg_i[seg_n, 2] = cur_len[j]
        seg_n += 1
        n_segments[j] += 1
    if finished:
        rem[j] = 0.0
        att_work[j] = work[j]
        completion[j] = now
        status[j] = _DONE
    else:
        busy = now - work_start[j]
        done = busy * rate[j] if busy > 0 else 0.0
        rem[j] = max(rem[j] - done, 0.0)
        att_work[j] += done
        status[j] = _WAITING
    att_gpu[j] += (now - seg_start0[j]) * gpus[j]
    for k in range(cur_off[j], cur_off[j] + cur_len[j]):
        free[pool_s[k]] += pool_c[k]
    version[j] += 1
    return seg_n


@njit(cache=True)
def _leave(j: int, run_list: Any, run_pos: Any, n_run: int) -> int:
    """Take ``j`` out of the running list; returns its new length."""
    p = run_pos[j]
    moved = run_list[n_run - 1]
    run_list[p] = moved
    run_pos[moved] = p
    run_pos[j] = -1
    return n_run - 1
