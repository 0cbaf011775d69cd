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

__all__ = ["consolidate"]


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
    # Plain Python on the list: clusters have tens of servers and this runs at every job
    # start of a simulation, where numpy's per-call overhead dominated.
    rooms = free.tolist()
    fit = -1
    for s, room in enumerate(rooms):
        if room >= gpus and (fit < 0 or room < rooms[fit]):
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
