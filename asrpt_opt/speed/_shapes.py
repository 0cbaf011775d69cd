"""Allocation shapes: the per-server GPU counts a job of q GPUs can take in a cluster.

A speed model's rate depends only on the shape of an allocation (the multiset of its per-server
counts), so the fastest allocation of a job is found by searching shapes, not allocations.
"""

from __future__ import annotations

from collections.abc import Iterator


def fits(shape: tuple[int, ...], servers_desc: tuple[int, ...]) -> bool:
    """Whether a shape (counts in decreasing order) fits servers (sizes in decreasing order).

    Matching the i-th largest count to the i-th largest server is optimal, so the shape fits
    exactly when each count is at most the size of its server in that matching.

    Parameters
    ----------
    shape, servers_desc : tuple of int
        Both sorted in decreasing order.

    Returns
    -------
    bool

    Examples
    --------
    >>> fits((8, 6, 2), (8, 8, 6, 2)), fits((7, 7, 2), (8, 6, 6))
    (True, False)
    """
    return len(shape) <= len(servers_desc) and all(
        c <= s for c, s in zip(shape, servers_desc, strict=False)
    )


def shapes(q: int, largest: int, servers_desc: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every shape of ``q`` GPUs whose largest count is exactly ``largest`` and that fits.

    Shapes come largest counts first (so the ones with the fewest servers come early).

    Parameters
    ----------
    q : int
    largest : int
    servers_desc : tuple of int
        Server sizes in decreasing order.

    Yields
    ------
    tuple of int
        Counts in decreasing order.

    Examples
    --------
    >>> list(shapes(5, 2, (4, 4, 4)))
    [(2, 2, 1)]
    """
    n_servers = len(servers_desc)

    def rest(left: int, cap: int, prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if left == 0:
            yield prefix
            return
        i = len(prefix)
        if i >= n_servers:
            return
        # Even the remaining servers at this cap cannot hold what is left: prune.
        room = sum(min(cap, s) for s in servers_desc[i:])
        if room < left:
            return
        for c in range(min(cap, left, servers_desc[i]), 0, -1):
            yield from rest(left - c, c, (*prefix, c))

    if largest < 1 or largest > q or not servers_desc or largest > servers_desc[0]:
        return
    yield from rest(q - largest, largest, (largest,))
