"""A lean FIFO-with-backfill simulator: the reference the event loop is measured against.

``python benchmarks/lean_fifo.py INSTANCE.json`` prints the mean JCT. It implements exactly
what ``asrpt-opt simulate INSTANCE --policy fifo`` does for abstract jobs whose slowdowns are
all 1 (arrival order by release then index, greedy backfill, best-fit consolidation with the
lowest server index on ties; completions, then arrivals, then one decision at each instant)
with nothing else: a heap of completions, one queue per width, servers bucketed by free
GPUs. It validates nothing, records no schedule and computes no bound; it is a yardstick,
not a tool.
"""

from __future__ import annotations

import heapq
import json
import sys
from collections import deque

import numpy as np


def _place(width: int, free: list[int], buckets: list[set[int]]) -> list[tuple[int, int]]:
    cap = len(buckets) - 1
    for c in range(width, cap + 1):  # best fit on one server
        if buckets[c]:
            return [(min(buckets[c]), width)]
    alloc: list[tuple[int, int]] = []  # the fullest servers whole, the rest best fit
    need = width
    for c in range(cap, 0, -1):
        for s in sorted(buckets[c]):
            if c >= need:
                last = s
                for c2 in range(need, c):
                    if buckets[c2]:
                        last = min(buckets[c2])
                        break
                return [*alloc, (last, need)]
            alloc.append((s, c))
            need -= c
    raise AssertionError("placed only when enough GPUs are free")


def mean_jct(path: str) -> float:
    with open(path, encoding="utf-8") as handle:
        doc = json.load(handle)
    servers = doc["cluster"]["servers"]
    jobs = doc["jobs"]
    n = len(jobs)
    rel = [float(j["release_s"]) for j in jobs]
    dur = [float(j["duration_s"]) for j in jobs]
    gpus = [int(j["gpus"]) for j in jobs]
    order = sorted(range(n), key=lambda k: (rel[k], k))
    free = list(servers)
    buckets: list[set[int]] = [set() for _ in range(max(servers) + 1)]
    for s, c in enumerate(free):
        buckets[c].add(s)
    total_free = sum(free)
    queues: dict[int, deque[int]] = {}
    held: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    completion = [0.0] * n
    running: list[tuple[float, int]] = []
    arrived = 0
    finished = 0
    inf = float("inf")
    while finished < n:
        t = running[0][0] if running else inf
        if arrived < n and rel[order[arrived]] < t:
            t = rel[order[arrived]]
        # Completions a rounding error apart are one instant, as in the event loop.
        horizon = t + 1e-12 * max(t, 1.0)
        while running and running[0][0] <= horizon:
            _, j = heapq.heappop(running)
            completion[j] = t
            finished += 1
            for s, c in held[j]:
                buckets[free[s]].discard(s)
                free[s] += c
                buckets[free[s]].add(s)
            total_free += gpus[j]
        while arrived < n and rel[order[arrived]] <= t:
            j = order[arrived]
            queues.setdefault(gpus[j], deque()).append(j)
            arrived += 1
        heads = [(rel[q[0]], q[0], w) for w, q in queues.items() if q]
        heapq.heapify(heads)
        while heads and total_free:
            _, j, w = heapq.heappop(heads)
            if w > total_free:
                continue  # no later job of this width fits either
            alloc = _place(w, free, buckets)
            for s, c in alloc:
                buckets[free[s]].discard(s)
                free[s] -= c
                buckets[free[s]].add(s)
            total_free -= w
            held[j] = alloc
            heapq.heappush(running, (t + dur[j], j))
            queue = queues[w]
            queue.popleft()
            if queue:
                heapq.heappush(heads, (rel[queue[0]], queue[0], w))
    return float((np.array(completion) - np.array(rel)).mean())


if __name__ == "__main__":
    print(repr(mean_jct(sys.argv[1])))
