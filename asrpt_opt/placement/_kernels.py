"""Compiled kernels of the placement heuristics (numba).

The min-cut heuristic runs once per job start in a simulation and thousands of times in the
placement benchmark, on graphs of at most a few hundred workers. Its inner loops (union-find
merges, best-fit packing, move/swap gains) are scalar code that numpy cannot vectorise well,
so they are compiled; the compiled functions are cached on disk after the first call.

Every function takes plain int64/float64 arrays and returns a server per worker.

References
----------
.. [1] G. Karypis, V. Kumar, "A fast and high quality multilevel scheme for partitioning
   irregular graphs", SIAM J. Scientific Computing 20(1):359-392, 1998.
.. [2] C. M. Fiduccia, R. M. Mattheyses, "A linear-time heuristic for improving network
   partitions", DAC 1982.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asrpt_opt._numba import njit

__all__ = ["best_connected", "grow", "multistart", "refine", "weight_matrix"]


@njit(cache=True)
def weight_matrix(n: int, u: Any, v: Any, nbytes: Any) -> Any:
    """Symmetric matrix of bytes between each pair of workers (parallel edges summed)."""
    w = np.zeros((n, n))
    for i in range(u.size):
        w[u[i], v[i]] += nbytes[i]
        w[v[i], u[i]] += nbytes[i]
    return w


@njit(cache=True)
def _root(parent: Any, a: int) -> int:
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(cache=True)
def _heavy_pairs(w: Any) -> Any:
    """Worker pairs with traffic, heaviest first (stable on index order)."""
    n = w.shape[0]
    count = 0
    for a in range(n):
        for b in range(a + 1, n):
            if w[a, b] > 0:
                count += 1
    pairs = np.empty((count, 2), np.int64)
    weight = np.empty(count)
    i = 0
    for a in range(n):
        for b in range(a + 1, n):
            if w[a, b] > 0:
                pairs[i, 0] = a
                pairs[i, 1] = b
                weight[i] = -w[a, b]
                i += 1
    return pairs[np.argsort(weight, kind="mergesort")]


@njit(cache=True)
def _packed_clusters(pairs: Any, w: Any, free: Any, cap: int, affinity: bool) -> Any:
    """Contract the heaviest pairs into a merge tree of clusters of at most ``cap`` workers,
    then pack the clusters largest first: best fit, or (``affinity``) onto the server
    holding the most bytes to the cluster, then the one with the most room, so that
    clusters that talk share a large server. A cluster that fits no remaining room is
    unmerged into its two parts (larger first), so groups such as rings stay whole."""
    n = w.shape[0]
    parent = np.arange(n)
    size = np.ones(n, np.int64)
    top = np.arange(n)  # merge-tree node that currently represents each union-find root
    kid_a = np.full(2 * n, -1, np.int64)
    kid_b = np.full(2 * n, -1, np.int64)
    node_size = np.zeros(2 * n, np.int64)
    node_size[:n] = 1
    nodes = n
    for i in range(pairs.shape[0]):
        a = _root(parent, pairs[i, 0])
        b = _root(parent, pairs[i, 1])
        if a != b and size[a] + size[b] <= cap:
            kid_a[nodes] = top[a]
            kid_b[nodes] = top[b]
            node_size[nodes] = size[a] + size[b]
            parent[b] = a
            size[a] += size[b]
            top[a] = nodes
            nodes += 1
    roots = np.empty(n, np.int64)
    n_roots = 0
    for v in range(n):
        if parent[v] == v:
            roots[n_roots] = top[v]
            n_roots += 1
    roots = roots[:n_roots]
    roots = roots[np.argsort(-node_size[roots] * (2 * n) + roots)]  # largest first
    stack = np.empty(2 * n, np.int64)
    sp = 0
    for i in range(n_roots - 1, -1, -1):
        stack[sp] = roots[i]
        sp += 1
    left = free.copy()
    out = np.full(n, -1, np.int64)
    leaves = np.empty(2 * n, np.int64)
    members = np.empty(n, np.int64)
    ties = np.zeros(left.size)
    while sp > 0:
        sp -= 1
        node = stack[sp]
        need = node_size[node]
        count = 0  # the workers of this cluster
        leaves[0] = node
        depth = 1
        while depth > 0:
            depth -= 1
            leaf = leaves[depth]
            if kid_a[leaf] < 0:
                members[count] = leaf
                count += 1
            else:
                leaves[depth] = kid_a[leaf]
                leaves[depth + 1] = kid_b[leaf]
                depth += 2
        if affinity:
            ties[:] = 0.0
            for i in range(count):
                for v in range(n):
                    if out[v] >= 0:
                        ties[out[v]] += w[members[i], v]
        best = -1
        for s in range(left.size):
            if need > left[s]:
                continue
            if best < 0:
                best = s
            elif affinity:
                if ties[s] > ties[best] or (ties[s] == ties[best] and left[s] > left[best]):
                    best = s
            elif left[s] < left[best]:
                best = s
        if best < 0 and kid_a[node] >= 0:
            x, y = kid_a[node], kid_b[node]
            if node_size[x] < node_size[y]:
                x, y = y, x
            stack[sp] = y
            stack[sp + 1] = x
            sp += 2
            continue
        if best < 0:  # a single worker always fits somewhere: the job fits in total
            best = int(np.argmax(left))
        for i in range(count):
            out[members[i]] = best
        left[best] -= need
    return out


@njit(cache=True)
def grow(w: Any, servers: Any, counts: Any) -> Any:
    """Graph growing: fill ``servers[i]`` with ``counts[i]`` workers, seeded by the unplaced
    worker most tied to the other unplaced ones and grown along the heaviest ties."""
    n = w.shape[0]
    out = np.full(n, -1, np.int64)
    gain = np.zeros(n)
    for i in range(servers.size):
        seed = -1
        best = -np.inf
        for a in range(n):
            if out[a] < 0:
                ties = 0.0
                for b in range(n):
                    if out[b] < 0:
                        ties += w[a, b]
                if ties > best:
                    best = ties
                    seed = a
        out[seed] = servers[i]
        gain[:] = w[seed]
        for _ in range(counts[i] - 1):
            pick = -1
            best = -np.inf
            for a in range(n):
                if out[a] < 0 and gain[a] > best:
                    best = gain[a]
                    pick = a
            out[pick] = servers[i]
            gain += w[pick]
    return out


@njit(cache=True)
def _move(w: Any, size: Any, conn: Any, spare: Any, out: Any, node: int, server: int) -> None:
    old = out[node]
    for a in range(w.shape[0]):
        conn[a, old] -= w[a, node]
        conn[a, server] += w[a, node]
    spare[old] += size[node]
    spare[server] -= size[node]
    out[node] = server


@njit(cache=True)
def _refine_sized(w: Any, size: Any, free: Any, start: Any) -> Any:
    """Local search on nodes of ``size`` workers each: apply the best move (into spare room)
    or swap (when both sides have room) while the cut shrinks. ``conn[a, s]``, the bytes
    between node a and server s, is kept incrementally, so a step costs O(n^2)."""
    out = start.copy()
    n, k = w.shape[0], free.size
    conn = np.zeros((n, k))
    for a in range(n):
        for b in range(n):
            conn[a, out[b]] += w[a, b]
    spare = free.copy()
    for a in range(n):
        spare[out[a]] -= size[a]
    tol = 1e-9 * max(1.0, w.max())
    while True:
        best_move, mover, target = tol, -1, -1
        for a in range(n):
            own = conn[a, out[a]]
            for s in range(k):
                if spare[s] >= size[a] and s != out[a] and conn[a, s] - own > best_move:
                    best_move, mover, target = conn[a, s] - own, a, s
        best_swap, sa, sb = tol, -1, -1
        for a in range(n):
            oa = out[a]
            own_a = conn[a, oa]
            for b in range(a + 1, n):
                ob = out[b]
                if ob != oa and spare[ob] + size[b] >= size[a] and spare[oa] + size[a] >= size[b]:
                    g = conn[a, ob] - own_a + conn[b, oa] - conn[b, ob] - 2.0 * w[a, b]
                    if g > best_swap:
                        best_swap, sa, sb = g, a, b
        if mover < 0 and sa < 0:
            return out
        if mover >= 0 and best_move >= best_swap:
            _move(w, size, conn, spare, out, mover, target)
        else:
            oa, ob = out[sa], out[sb]
            _move(w, size, conn, spare, out, sa, ob)
            _move(w, size, conn, spare, out, sb, oa)


@njit(cache=True)
def _match(w: Any, size: Any, out: Any) -> Any:
    """Heavy-edge matching among nodes on the same server: each node, in index order, joins
    its heaviest unmatched co-located neighbour. Returns the coarse id of each node."""
    n = w.shape[0]
    coarse = np.full(n, -1, np.int64)
    m = 0
    for a in range(n):
        if coarse[a] >= 0:
            continue
        mate, heaviest = -1, 0.0
        for b in range(n):
            if b != a and coarse[b] < 0 and out[b] == out[a] and w[a, b] > heaviest:
                mate, heaviest = b, w[a, b]
        coarse[a] = m
        if mate >= 0:
            coarse[mate] = m
        m += 1
    return coarse


@njit(cache=True)
def refine(w: Any, free: Any, start: Any) -> Any:
    """Multilevel refinement (a V-cycle): coarsen by heavy-edge matching inside servers until
    nothing matches, refine the coarsest graph with sized moves and swaps, and refine again
    at every finer level. Moving whole matched groups escapes the local optima of single
    moves, such as a tensor-parallel pair that sits on the wrong server."""
    ws = [w]
    sizes = [np.ones(w.shape[0], np.int64)]
    maps = [np.arange(w.shape[0])]
    out = start.copy()
    while True:
        cw, csize = ws[-1], sizes[-1]
        coarse = _match(cw, csize, out)
        m = coarse.max() + 1
        if m == cw.shape[0] or m <= 1:
            break
        nw = np.zeros((m, m))
        nsize = np.zeros(m, np.int64)
        nout = np.empty(m, np.int64)
        for a in range(cw.shape[0]):
            nsize[coarse[a]] += csize[a]
            nout[coarse[a]] = out[a]
            for b in range(cw.shape[0]):
                if coarse[a] != coarse[b]:
                    nw[coarse[a], coarse[b]] += cw[a, b]
        ws.append(nw)
        sizes.append(nsize)
        maps.append(coarse)
        out = nout
    for level in range(len(ws) - 1, -1, -1):
        out = _refine_sized(ws[level], sizes[level], free, out)
        if level > 0:
            out = out[maps[level]]
    return out


@njit(cache=True)
def _cut(w: Any, out: Any) -> float:
    total = 0.0
    n = w.shape[0]
    for a in range(n):
        for b in range(a + 1, n):
            if out[a] != out[b]:
                total += w[a, b]
    return total


@njit(cache=True)
def multistart(w: Any, free: Any, servers: Any, counts: Any, caps: Any) -> Any:
    """Refine (:func:`refine`) a graph-growing start into ``counts[i]`` workers on
    ``servers[i]`` and two packings (best fit, affinity) of a merge tree per cluster size in
    ``caps``; return the smallest cut found."""
    n = w.shape[0]
    pairs = _heavy_pairs(w)
    starts = np.empty((2 * caps.size + 1, n), np.int64)
    starts[0] = grow(w, servers, counts)
    for i in range(caps.size):
        starts[2 * i + 1] = _packed_clusters(pairs, w, free, caps[i], False)
        starts[2 * i + 2] = _packed_clusters(pairs, w, free, caps[i], True)
    best = starts[0]
    best_cut = np.inf
    for i in range(starts.shape[0]):
        seen = False  # neighbouring caps often pack the same clusters
        for j in range(i):
            if np.array_equal(starts[i], starts[j]):
                seen = True
                break
        if seen:
            continue
        cand = refine(w, free, starts[i])
        c = _cut(w, cand)
        if c < best_cut:
            best, best_cut = cand, c
        if best_cut == 0.0:  # nothing crosses servers: no start can do better
            break
    return best


@njit(cache=True)
def _toggle(w: int, sign: int, in_s: Any, near: Any, to_s: Any, csr: Any, wt: Any) -> None:
    in_s[w] = sign > 0
    near[w] += sign
    for p in range(csr[0][w], csr[0][w + 1]):
        near[csr[1][p]] += sign
        to_s[csr[1][p]] += sign * wt[p]


@njit(cache=True)
def _block(w: int, sign: int, blocked: Any, apart_ptr: Any, apart_nbr: Any) -> None:
    for p in range(apart_ptr[w], apart_ptr[w + 1]):
        blocked[apart_nbr[p]] += sign


@njit(cache=True)
def _hopeless(room: int, root: int, val: float, in_s: Any, to_s: Any, pi: Any, top: Any) -> bool:
    """True when adding up to ``room`` more workers above ``root`` cannot make the value
    positive: worker u can add at most 2 w(u, S) + (its ``room - 1`` heaviest other edges)
    - pi_u, since each edge between two added workers is shared by both."""
    if room == 0:
        return True
    gains = np.zeros(room)
    for u in range(root + 1, pi.size):
        if in_s[u]:
            continue
        g = 2.0 * to_s[u] + top[u, room - 1] - pi[u]
        if g > gains[room - 1]:
            j = room - 1
            while j > 0 and gains[j - 1] < g:
                gains[j] = gains[j - 1]
                j -= 1
            gains[j] = g
    return val + gains.sum() <= 0.0


@njit(cache=True)
def best_connected(
    indptr: Any,
    nbr: Any,
    wt: Any,
    pi: Any,
    size: Any,
    apart_ptr: Any,
    apart_nbr: Any,
    cap: int,
    keep: int,
    max_visits: int,
) -> Any:
    """The ``keep`` best connected node sets of each total size 1..cap by ``2 w(S) - pi(S)``
    (w(S): bytes between nodes of S; only positive values are kept).

    Node v weighs ``size[v]`` GPUs (a group of workers merged by branching, whose inside
    bytes are folded into ``pi``), and a set never holds two nodes listed as apart
    (``apart_nbr[apart_ptr[v]:apart_ptr[v + 1]]``). Enumerates every connected set once (ESU,
    Wernicke 2006: extend only by nodes above the root that are new neighbours of the last
    one), pruning a branch when no extension can be positive. Returns (values[size, keep],
    sets[size, keep, cap], visits): sets hold node ids padded with -1, and visits is -1 when
    ``max_visits`` was exceeded (then the values are incomplete).
    """
    n = pi.size
    csr = (indptr, nbr)
    top = np.zeros((n, cap))  # top[u, j]: sum of the j heaviest edges of u
    for u in range(n):
        ws = -np.sort(-wt[indptr[u] : indptr[u + 1]])
        for j in range(1, cap):
            top[u, j] = top[u, j - 1] + (ws[j - 1] if j - 1 < ws.size else 0.0)
    values = np.zeros((cap + 1, keep))
    sets = np.full((cap + 1, keep, cap), -1, np.int64)
    nodes = np.empty(cap, np.int64)
    in_s = np.zeros(n, np.bool_)
    near = np.zeros(n, np.int64)
    blocked = np.zeros(n, np.int64)
    to_s = np.zeros(n)
    ext = np.empty((cap + 1, n), np.int64)
    n_ext = np.zeros(cap + 1, np.int64)
    pos = np.zeros(cap + 1, np.int64)
    val = np.zeros(cap + 1)
    gpus = np.zeros(cap + 1, np.int64)
    visits = 0
    for v in range(n):
        if size[v] > cap:
            continue
        m = 0
        for p in range(indptr[v], indptr[v + 1]):
            if nbr[p] > v:
                ext[1, m] = nbr[p]
                m += 1
        nodes[0] = v
        val[1] = -pi[v]
        gpus[1] = size[v]
        _toggle(v, 1, in_s, near, to_s, csr, wt)
        _block(v, 1, blocked, apart_ptr, apart_nbr)
        depth = 1
        n_ext[1] = m
        pos[1] = 0
        while depth >= 1:
            if pos[depth] == 0:  # first visit of this set: record it, then prune or descend
                visits += 1
                x = val[depth]
                k = gpus[depth]
                if x > values[k, keep - 1]:
                    j = keep - 1
                    while j > 0 and values[k, j - 1] < x:
                        values[k, j] = values[k, j - 1]
                        sets[k, j] = sets[k, j - 1]
                        j -= 1
                    values[k, j] = x
                    sets[k, j, :] = -1
                    sets[k, j, :depth] = nodes[:depth]
                if _hopeless(cap - k, v, x, in_s, to_s, pi, top):
                    pos[depth] = n_ext[depth] + 1
                else:
                    pos[depth] = 1
            # Skip extensions that overflow the room or meet an apart node: every set grown
            # from here holds at least as much and the same nodes.
            while pos[depth] <= n_ext[depth]:
                cand = ext[depth, pos[depth] - 1]
                if gpus[depth] + size[cand] <= cap and blocked[cand] == 0:
                    break
                pos[depth] += 1
            if pos[depth] <= n_ext[depth]:
                i = pos[depth] - 1
                pos[depth] += 1
                w = ext[depth, i]
                m = 0
                for j in range(i + 1, n_ext[depth]):
                    ext[depth + 1, m] = ext[depth, j]
                    m += 1
                for p in range(indptr[w], indptr[w + 1]):
                    if nbr[p] > v and near[nbr[p]] == 0:
                        ext[depth + 1, m] = nbr[p]
                        m += 1
                val[depth + 1] = val[depth] + 2.0 * to_s[w] - pi[w]
                gpus[depth + 1] = gpus[depth] + size[w]
                nodes[depth] = w
                _toggle(w, 1, in_s, near, to_s, csr, wt)
                _block(w, 1, blocked, apart_ptr, apart_nbr)
                depth += 1
                n_ext[depth] = m
                pos[depth] = 0
            else:
                _toggle(nodes[depth - 1], -1, in_s, near, to_s, csr, wt)
                _block(nodes[depth - 1], -1, blocked, apart_ptr, apart_nbr)
                depth -= 1
        if visits > max_visits:
            return values, sets, -1
    return values, sets, visits
