"""Placement by the standard graph partitioners, METIS [1]_ (``pymetis``) and KaHIP [2]_
(``kahip``), as references for the hand-written heuristics.

Both cut a job's worker graph (edges weighted by the bytes they carry per iteration) into
as many parts as the consolidated allocation has servers (the fewest servers that hold the
job, best fit: the same servers ``greedy`` and ``mincut`` start from). METIS (recursive
bisection, best of 8 cuts a level) is given the servers' shares as target part weights;
KaHIP (kaffpa, eco mode) only balances parts of equal size. A
partitioner's parts need not have exactly the sizes the free GPUs allow, so a repair step
(:func:`repair`) moves workers from parts over their size to parts under it, each time the
move that adds the least cut. Nothing else refines the result: what these methods return is
the library's partition made to fit, a yardstick for ``mincut``'s own search.

The libraries load when a method is first used; they come with the ``partitioners`` extra
(``pip install "asrpt-opt[partitioners]"``).

References
----------
.. [1] G. Karypis, V. Kumar, "A fast and high quality multilevel scheme for partitioning
   irregular graphs", SIAM Journal on Scientific Computing 20(1):359-392, 1998.
.. [2] P. Sanders, C. Schulz, "Think locally, act globally: highly balanced graph
   partitioning", Proc. SEA 2013, LNCS 7933:164-175.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import UsageError

if TYPE_CHECKING:
    from asrpt_opt.model.workers import WorkerGraph

__all__ = ["LIBRARIES", "available", "kahip_placement", "metis_placement", "repair"]

#: The library each partitioner method needs.
LIBRARIES = {"metis": "pymetis", "kahip": "kahip"}


def available(method: str) -> bool:
    """Whether ``method`` can run here (a partitioner's library is installed; any other
    method always can).

    Parameters
    ----------
    method : str

    Returns
    -------
    bool
    """
    import importlib.util

    library = LIBRARIES.get(method)
    return library is None or importlib.util.find_spec(library) is not None


#: Edge weights are integers for both libraries: bytes scaled so the heaviest edge is this.
_WEIGHT_SCALE = 1_000_000
#: METIS tries this many bisections at each level and keeps the best.
_METIS_CUTS = 8
#: KaHIP's allowed imbalance (the repair step makes the sizes exact) and its "eco" mode.
_KAHIP_IMBALANCE = 0.03
_KAHIP_ECO = 1


def _library(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(
            f"placement method {name.removeprefix('py')!r} needs the {name} package: "
            'pip install "asrpt-opt[partitioners]"'
        ) from None


def _csr(
    wg: WorkerGraph,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The worker graph as symmetric CSR arrays with integer weights (parallel edges
    merged, edges without bytes dropped)."""
    n = wg.n_workers
    w = np.zeros((n, n))
    np.add.at(w, (wg.u, wg.v), wg.nbytes)
    w = w + w.T
    np.fill_diagonal(w, 0.0)
    top = w.max() if w.size else 0.0
    if top > 0:
        w = np.where(w > 0, np.maximum(1, np.rint(w / top * _WEIGHT_SCALE)), 0)
    rows, cols = np.nonzero(w)
    xadj = np.zeros(n + 1, dtype=np.int64)
    np.add.at(xadj, rows + 1, 1)
    return np.cumsum(xadj), cols.astype(np.int64), w[rows, cols].astype(np.int64)


def repair(
    part: NDArray[np.int64], sizes: NDArray[np.int64], w: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Relabel a partition and move workers until part ``i`` has exactly ``sizes[i]``.

    Parts are matched to sizes largest to largest; then, while a part is too large, the
    worker of a too-large part whose move to a too-small part adds the least cut (ties: the
    lower worker, then the lower part) moves there.

    Parameters
    ----------
    part : ndarray of int
        A label per worker (any labels; as many distinct ones as ``sizes`` at most).
    sizes : ndarray of int
        Target sizes, summing to the number of workers.
    w : ndarray of float
        Symmetric weights between workers.

    Returns
    -------
    ndarray of int
        Per worker, its part in ``0 .. len(sizes) - 1``.

    Examples
    --------
    >>> w = np.array([[0, 5, 1, 0], [5, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], float)
    >>> repair(np.array([0, 0, 0, 1]), np.array([2, 2]), w).tolist()
    [0, 0, 1, 1]
    """
    k = len(sizes)
    labels, counts = np.unique(part, return_counts=True)
    order = labels[np.argsort(-counts, kind="stable")]
    targets = np.argsort(-sizes, kind="stable")
    # Parts the partitioner left empty (if any) are filled by the moves below.
    relabel = {int(old): int(new) for old, new in zip(order, targets, strict=False)}
    out = np.array([relabel[int(p)] for p in part], dtype=np.int64)
    have = np.bincount(out, minlength=k)
    conn = w @ np.eye(k)[out]  # conn[v, p]: weight between worker v and part p
    while np.any(have > sizes):
        over = have > sizes
        under = np.flatnonzero(have < sizes)
        movable = np.flatnonzero(over[out])
        # Cut added by moving v from its part to part p: conn[v, own] - conn[v, p].
        cost = conn[movable, out[movable]][:, None] - conn[np.ix_(movable, under)]
        i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
        v, dest = int(movable[i]), int(under[j])
        conn[:, out[v]] -= w[:, v]
        conn[:, dest] += w[:, v]
        have[out[v]] -= 1
        have[dest] += 1
        out[v] = dest
    return out


def _place(
    wg: WorkerGraph,
    free: NDArray[np.int64],
    partition: Callable[[WorkerGraph, NDArray[np.int64]], NDArray[np.int64]],
) -> NDArray[np.int64]:
    from asrpt_opt.placement.methods import _servers_and_counts, _weights

    servers, counts = _servers_and_counts(wg, free)
    if servers.size == 1:
        return np.full(wg.n_workers, servers[0], dtype=np.int64)
    part = np.asarray(partition(wg, counts), dtype=np.int64)
    return servers[repair(part, counts, _weights(wg))]


def _metis_parts(wg: WorkerGraph, counts: NDArray[np.int64]) -> NDArray[np.int64]:
    pymetis = _library(LIBRARIES["metis"])
    xadj, adjncy, eweights = _csr(wg)
    if adjncy.size == 0:  # no traffic: any split is optimal
        return np.repeat(np.arange(counts.size), counts)
    share = (counts / counts.sum()).tolist()
    graph = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
    # Recursive bisection, best of several cuts a level: METIS' k-way scheme cuts 2.6-4.3x
    # more bytes on GPT-style worker graphs split over many uneven servers (docs/placement.md).
    options = pymetis.Options(ncuts=_METIS_CUTS)
    _, membership = pymetis.part_graph(
        int(counts.size), graph, eweights=eweights, tpwgts=share, recursive=True, options=options
    )
    return np.asarray(membership, dtype=np.int64)


def _kahip_parts(wg: WorkerGraph, counts: NDArray[np.int64]) -> NDArray[np.int64]:
    kahip = _library(LIBRARIES["kahip"])
    xadj, adjncy, eweights = _csr(wg)
    if adjncy.size == 0:
        return np.repeat(np.arange(counts.size), counts)
    ones = [1] * wg.n_workers
    _, blocks = kahip.kaffpa(
        ones,
        xadj.tolist(),
        eweights.tolist(),
        adjncy.tolist(),
        int(counts.size),
        _KAHIP_IMBALANCE,
        True,
        0,
        _KAHIP_ECO,
    )
    return np.asarray(blocks, dtype=np.int64)


def metis_placement(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """METIS (pymetis) into the consolidated servers' shares, repaired to fit exactly.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
        Free GPUs per server.

    Returns
    -------
    ndarray of int
        The server of each worker.
    """
    return _place(wg, free, _metis_parts)


def kahip_placement(wg: WorkerGraph, free: NDArray[np.int64], **_: Any) -> NDArray[np.int64]:
    """KaHIP (kaffpa, eco mode, seed 0) into as many balanced parts as the consolidated
    allocation has servers, repaired to its exact shares.

    Parameters
    ----------
    wg : WorkerGraph
    free : ndarray of int
        Free GPUs per server.

    Returns
    -------
    ndarray of int
        The server of each worker.
    """
    return _place(wg, free, _kahip_parts)
