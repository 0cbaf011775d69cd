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

from asrpt_opt.model.speed import Allocation

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
        raise ValueError("gpus must be >= 1")
    fits = free >= gpus
    if fits.any():
        s = int(np.argmin(np.where(fits, free, np.iinfo(np.int64).max)))
        return ((s, gpus),)
    order = np.argsort(-free, kind="stable")
    cum = np.cumsum(free[order])
    if cum[-1] < gpus:
        return None
    k = int(np.searchsorted(cum, gpus))
    whole = order[:k]
    rest = gpus - (int(cum[k - 1]) if k else 0)
    tail = order[k:]
    tail_free = free[tail]
    ok = tail_free >= rest
    # Best fit for the remainder; among equal room, the lowest server index.
    cand = tail[ok]
    cand_free = tail_free[ok]
    last = int(cand[np.lexsort((cand, cand_free))[0]])
    alloc = {int(s): int(free[s]) for s in whole}
    alloc[last] = rest
    return tuple(sorted(alloc.items()))
