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

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError
from asrpt_opt.model.allocation import Allocation

__all__ = ["VECTOR_FROM", "consolidate"]

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
