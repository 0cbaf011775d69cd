"""Consolidating placement: fewest servers, best fit.

This is Tiresias' default placement for jobs that are sensitive to consolidation [1]_: a job
goes onto a single server when one has room (the one with the least room that fits, so that
large holes stay open for large jobs), otherwise onto as few servers as possible.

References
----------
.. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
   NSDI 2019.
"""

from __future__ import annotations

from bisect import bisect_left, insort

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.allocation import Allocation

__all__ = ["VECTOR_FROM", "BestFit", "consolidate"]

#: From this many servers on, the best-fit search runs in numpy (same result as the loop).
VECTOR_FROM = 64
_NO_ROOM = np.iinfo(np.int64).max


def consolidate(free: NDArray[np.int64], gpus: int) -> Allocation | None:
    """Place ``gpus`` GPUs on the fewest servers, best fit.

    With room on one server, the server with the least free GPUs that still fits is chosen
    (lowest index on ties). Otherwise the servers with the most free GPUs are filled whole,
    and the remainder goes to the best-fitting server among the others. This uses the minimum
    possible number of servers.

    Parameters
    ----------
    free : ndarray of int
        Free GPUs per server.
    gpus : int
        GPUs needed (>= 1).

    Returns
    -------
    Allocation or None
        ``((server, count), ...)`` sorted by server, or None when fewer than ``gpus`` GPUs
        are free.

    References
    ----------
    .. [1] J. Gu et al., "Tiresias: A GPU cluster manager for distributed deep learning",
       NSDI 2019.

    Examples
    --------
    >>> import numpy as np
    >>> consolidate(np.array([3, 2, 8]), 2)
    ((1, 2),)
    >>> consolidate(np.array([3, 2, 4]), 6)
    ((1, 2), (2, 4))
    """
    if gpus <= 0:
        raise UsageError("gpus must be >= 1")
    if free.size > VECTOR_FROM:
        return _consolidate_numpy(free, gpus)
    # Tens of servers: plain Python on the list, where numpy's per-call overhead would
    # dominate.
    rooms = free.tolist()
    fit = -1
    for s, r in enumerate(rooms):
        if r >= gpus and (fit < 0 or r < rooms[fit]):
            fit = s
    if fit >= 0:
        return ((fit, gpus),)
    order = sorted(range(len(rooms)), key=lambda s: -rooms[s])  # stable: lowest index first
    alloc: dict[int, int] = {}
    need = gpus
    for i, s in enumerate(order):
        if rooms[s] >= need:
            # Best fit for the remainder among the servers not filled whole.
            last = min(order[i:], key=lambda t: (rooms[t] < need, rooms[t], t))
            alloc[last] = need
            return tuple(sorted(alloc.items()))
        if rooms[s] == 0:
            break
        alloc[s] = rooms[s]
        need -= rooms[s]
    return None


def _consolidate_numpy(free: NDArray[np.int64], gpus: int) -> Allocation | None:
    """:func:`consolidate` for hundreds of servers: the same choices, in a few array passes
    (argmin and a stable argsort keep the lowest index on ties)."""
    room = np.where(free >= gpus, free, _NO_ROOM)
    fit = int(room.argmin())
    if room[fit] != _NO_ROOM:
        return ((fit, gpus),)
    order = np.argsort(-free, kind="stable")  # fullest first, lowest index first on ties
    rooms = free[order]
    before = np.concatenate(([0], np.cumsum(rooms)[:-1]))
    enough = np.flatnonzero(rooms >= gpus - before)
    if enough.size == 0:
        return None
    i = int(enough[0])
    need = gpus - int(before[i])
    # Best fit for the remainder among the servers not filled whole.
    rest = order[i:]
    key = np.where(free[rest] >= need, free[rest] * (free.size + 1) + rest, _NO_ROOM)
    last = int(rest[int(key.argmin())])
    alloc = {int(s): int(free[s]) for s in order[:i]}
    alloc[last] = need
    return tuple(sorted(alloc.items()))


class BestFit:
    """:func:`consolidate` for a free-GPU vector that changes a few servers at a time.

    A job that fits on one server takes one array pass (the best fit is the server with the
    least room that holds it). A job that must spread is where :func:`consolidate` sorts every
    server; here servers are kept in buckets by their number of free GPUs (one bitset of
    servers per count, the counts in order), brought up to date by moving only the servers
    whose count changed since the previous spread (one array comparison), and the fullest
    servers are read from the top buckets. The choices are :func:`consolidate`'s; memory grows
    with servers, never with GPUs.

    Examples
    --------
    >>> import numpy as np
    >>> fit = BestFit()
    >>> fit(np.array([3, 2, 8]), 2)
    ((1, 2),)
    >>> fit(np.array([3, 2, 4]), 6)
    ((1, 2), (2, 4))
    """

    __slots__ = ("_bits", "_counts", "_last", "_total")

    def __init__(self) -> None:
        self._last: NDArray[np.int64] | None = None
        self._bits: dict[int, int] = {}  # free count -> bitset of the servers with it
        self._counts: list[int] = []  # the non-empty buckets' free counts, ascending
        self._total = 0

    def __call__(self, free: NDArray[np.int64], gpus: int) -> Allocation | None:
        """Place ``gpus`` GPUs on the fewest servers, best fit (see :func:`consolidate`).

        Parameters
        ----------
        free : ndarray of int
            Free GPUs per server.
        gpus : int
            GPUs needed (>= 1).

        Returns
        -------
        Allocation or None
        """
        if gpus <= 0:
            raise UsageError("gpus must be >= 1")
        room = np.where(free >= gpus, free, _NO_ROOM)
        fit = int(room.argmin())
        if room[fit] != _NO_ROOM:
            return ((fit, gpus),)
        self._sync(free)
        if gpus > self._total:
            return None
        return self._spread(gpus)

    def _spread(self, gpus: int) -> Allocation:
        # No server holds the job: fill the fullest servers whole (lowest index first among
        # equals) until the next one can take the remainder, then give the remainder to the
        # best fit among the servers not filled whole.
        alloc: dict[int, int] = {}
        taken = 0
        need = gpus
        for count in reversed(self._counts):
            bits = self._bits[count]
            while bits:
                low = bits & -bits
                if count >= need:
                    return self._last_server(alloc, taken, need)
                alloc[low.bit_length() - 1] = count
                taken |= low
                need -= count
                bits ^= low
        raise AssertionError("unreachable: the total was checked")  # pragma: no cover

    def _last_server(self, alloc: dict[int, int], taken: int, need: int) -> Allocation:
        counts = self._counts
        for count in counts[bisect_left(counts, need) :]:
            bits = self._bits[count] & ~taken
            if bits:
                alloc[(bits & -bits).bit_length() - 1] = need
                return tuple(sorted(alloc.items()))
        raise AssertionError("unreachable: a server with room was passed")  # pragma: no cover

    def _sync(self, free: NDArray[np.int64]) -> None:
        last = self._last
        if last is None or last.shape != free.shape:
            self._last = last = np.zeros(free.shape, dtype=np.int64)
            self._bits.clear()
            self._counts.clear()
            self._total = 0
        changed = np.flatnonzero(free != last)
        if changed.size == 0:
            return
        bits, counts = self._bits, self._counts
        for s, old, new in zip(
            changed.tolist(), last[changed].tolist(), free[changed].tolist(), strict=True
        ):
            flag = 1 << s
            if old:
                left = bits[old] ^ flag
                if left:
                    bits[old] = left
                else:
                    del bits[old]
                    del counts[bisect_left(counts, old)]
            if new:
                have = bits.get(new)
                if have is None:
                    bits[new] = flag
                    insort(counts, new)
                else:
                    bits[new] = have | flag
            self._total += new - old
        last[changed] = free[changed]
