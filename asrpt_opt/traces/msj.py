"""Grosof et al.'s multiserver-job (MSJ) workload, as an instance or as columns.

(Also importable from :mod:`asrpt_opt.traces.synthetic`, with the other generators.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asrpt_opt.errors import UsageError
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.columns import JobColumns
from asrpt_opt.model.instance import Instance

__all__ = ["msj", "msj_columns"]


def msj(
    n: int,
    *,
    gpus: int = 8,
    needs: Sequence[int] = (1, 2, 4, 8),
    probs: Sequence[float] | None = None,
    unit_s: float = 1000.0,
    load: float = 0.9,
    seed: int | np.random.Generator | None = None,
    name: str | None = None,
) -> Instance:
    """The multiserver-job (MSJ) workload of the queueing literature, on one server.

    A job needs ``needs[k]`` GPUs with probability ``probs[k]`` (uniform by default); its
    duration is exponential with rate equal to its need per ``unit_s`` (mean ``unit_s /
    need``: every class has mean area ``unit_s`` GPU-seconds); arrivals are Poisson at rate
    ``load * gpus / unit_s``, so the offered load is ``load``. The defaults are Grosof et
    al.'s heavy-traffic study's [1]_: 8 GPUs, needs 1/2/4/8 equally likely.

    Parameters
    ----------
    n : int
    gpus : int
        GPUs of the one server.
    needs : sequence of int
        Each at most ``gpus``.
    probs : sequence of float, optional
        Summing to 1.
    unit_s : float
        The time unit: mean area of a job, in GPU-seconds.
    load : float
        Offered load, in (0, inf).
    seed : int, Generator or None
    name : str, optional

    Returns
    -------
    Instance

    References
    ----------
    .. [1] I. Grosof, Z. Scully, M. Harchol-Balter, A. Scheller-Wolf, "Optimal scheduling in
       the multiserver-job model under heavy traffic", Proc. ACM Meas. Anal. Comput. Syst.
       (SIGMETRICS) 6(3), 2022.

    Examples
    --------
    >>> inst = msj(4, seed=0)
    >>> inst.cluster.servers, sorted({j.gpus for j in inst.jobs}) <= [1, 2, 4, 8]
    ((8,), True)
    """
    return msj_columns(
        n, gpus=gpus, needs=needs, probs=probs, unit_s=unit_s, load=load, seed=seed, name=name
    ).to_instance()


def msj_columns(
    n: int,
    *,
    gpus: int = 8,
    needs: Sequence[int] = (1, 2, 4, 8),
    probs: Sequence[float] | None = None,
    unit_s: float = 1000.0,
    load: float = 0.9,
    seed: int | np.random.Generator | None = None,
    name: str | None = None,
) -> JobColumns:
    """:func:`msj`'s jobs as columns (the same draws for the same arguments), for
    :func:`~asrpt_opt.sim.stream.simulate_stream`: 10^7 jobs take 240 MB instead of
    several GB of job objects.

    Parameters
    ----------
    n, gpus, needs, probs, unit_s, load, seed, name
        As :func:`msj`.

    Returns
    -------
    JobColumns

    Examples
    --------
    >>> cols = msj_columns(4, seed=0)
    >>> cols.n_jobs, cols.to_instance() == msj(4, seed=0)
    (4, True)
    """
    widths = np.asarray(needs, dtype=np.int64)
    p = np.full(len(widths), 1.0 / len(widths)) if probs is None else np.asarray(probs, float)
    if n < 1 or gpus < 1 or widths.size == 0 or np.any(widths < 1) or np.any(widths > gpus):
        raise UsageError(f"msj: n >= 1, and every need in [1, gpus={gpus}], got {list(needs)}")
    if p.shape != widths.shape or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise UsageError(f"msj: probs must be {widths.size} non-negative numbers summing to 1")
    if not (load > 0 and unit_s > 0 and np.isfinite(load) and np.isfinite(unit_s)):
        raise UsageError(f"msj: load and unit_s must be finite and > 0, got {load}, {unit_s}")
    rng = np.random.default_rng(seed)
    need = rng.choice(widths, size=n, p=p)
    duration = rng.exponential(unit_s, size=n) / need
    release = np.cumsum(rng.exponential(unit_s / (load * gpus), size=n))
    release -= release[0]
    return JobColumns(
        name=name or f"msj-{gpus}-rho{load:g}-n{n}",
        cluster=Cluster(servers=(gpus,)),
        release_s=release,
        gpus=need,
        duration_s=duration,
        provenance={
            "source": "msj: Grosof et al.'s multiserver-job workload (SIGMETRICS 2022)",
            "load": float(load),
            "unit_s": float(unit_s),
        },
    )
