"""Seeded families of small instances for competitive-ratio studies.

Every family draws integer data (releases, durations) so that the exact offline models apply
without rounding, and jobs with ``spread_slowdown = 1``. The parameters are documented per
family; ``make_instance(family, n, seed)`` is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asrpt_opt.errors import UsageError, lookup
from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.traces.synthetic import abstract_jobs, msj

__all__ = ["FAMILIES", "make_family_instance"]


def _build(
    name: str,
    servers: tuple[int, ...],
    release: np.ndarray,
    dur: np.ndarray,
    gpus: np.ndarray,
    weight: np.ndarray | None = None,
) -> Instance:
    jobs = abstract_jobs(release, dur, gpus, weight=weight)
    return Instance(name=name, cluster=Cluster(servers=servers), jobs=jobs)


def _poisson_release(
    rng: np.random.Generator, n: int, area: float, m: int, load: float
) -> np.ndarray:
    rate = load * m / area  # jobs per second giving the target offered load
    release: np.ndarray = np.floor(np.cumsum(rng.exponential(1.0 / rate, n))).astype(int)
    return release


def poisson(n: int, rng: np.random.Generator) -> Instance:
    """2 servers of 4 GPUs; widths 1/2/4/8 (0.4/0.3/0.2/0.1); durations 1-10; Poisson
    arrivals at offered load 0.9."""
    gpus = rng.choice([1, 2, 4, 8], size=n, p=[0.4, 0.3, 0.2, 0.1])
    dur = rng.integers(1, 11, size=n)
    rel = _poisson_release(rng, n, float(np.mean(gpus * dur)), 8, 0.9)
    return _build(f"poisson-n{n}", (4, 4), rel - rel.min(), dur, gpus)


def bursty(n: int, rng: np.random.Generator) -> Instance:
    """2 servers of 4 GPUs; jobs arrive in bursts of 1-4 at the same instant, bursts
    separated by geometric gaps (mean 4); widths 1/2/4; durations 1-10."""
    gpus = rng.choice([1, 2, 4], size=n, p=[0.5, 0.3, 0.2])
    dur = rng.integers(1, 11, size=n)
    rel = np.zeros(n, dtype=int)
    t, i = 0, 0
    while i < n:
        size = int(rng.integers(1, 5))
        rel[i : i + size] = t
        i += size
        t += int(rng.geometric(0.25))
    return _build(f"bursty-n{n}", (4, 4), rel, dur, gpus)


def heavy_tail(n: int, rng: np.random.Generator) -> Instance:
    """2 servers of 4 GPUs; durations Pareto (shape 1.2) rounded and capped at 40; widths
    1/2/4; Poisson arrivals at load 0.8."""
    gpus = rng.choice([1, 2, 4], size=n, p=[0.5, 0.3, 0.2])
    dur = np.minimum(np.ceil(rng.pareto(1.2, size=n) + 1), 40).astype(int)
    rel = _poisson_release(rng, n, float(np.mean(gpus * dur)), 8, 0.8)
    return _build(f"heavy-tail-n{n}", (4, 4), rel - rel.min(), dur, gpus)


def wide(n: int, rng: np.random.Generator) -> Instance:
    """4 servers of 2 GPUs; half the jobs need 4-8 GPUs (they must span servers);
    durations 1-8; Poisson arrivals at load 0.9; weights 1-3."""
    gpus = np.where(rng.random(n) < 0.5, rng.choice([4, 8], size=n), rng.choice([1, 2], size=n))
    dur = rng.integers(1, 9, size=n)
    rel = _poisson_release(rng, n, float(np.mean(gpus * dur)), 8, 0.9)
    weight = rng.integers(1, 4, size=n).astype(float)
    return _build(f"wide-n{n}", (2, 2, 2, 2), rel - rel.min(), dur, gpus, weight)


def msj_family(n: int, rng: np.random.Generator) -> Instance:
    """The multiserver-job workload (:func:`~asrpt_opt.traces.synthetic.msj`) in whole
    seconds: one 8-GPU server, needs 1/2/4/8 equally likely, exponential durations of mean
    8 / need s rounded up (at least 1), Poisson arrivals at load 0.9 floored to whole
    seconds."""
    inst = msj(n, unit_s=8.0, load=0.9, seed=rng)
    dur = np.maximum(np.ceil(np.array([j.duration_s for j in inst.jobs], float)), 1).astype(int)
    rel = np.floor([j.release_s for j in inst.jobs]).astype(int)
    gpus = np.array([j.gpus for j in inst.jobs])
    return _build(f"msj-n{n}", (8,), rel, dur, gpus)


def single(n: int, rng: np.random.Generator) -> Instance:
    """One GPU, unit widths, durations 1-10, releases uniform on [0, 2n): the classic
    1|r_j,pmtn|sum C_j, where SRPT is optimal."""
    dur = rng.integers(1, 11, size=n)
    rel = rng.integers(0, 2 * n, size=n)
    return _build(f"single-n{n}", (1,), rel, dur, np.ones(n, dtype=int))


#: Family name -> generator ``(n, rng) -> Instance``.
FAMILIES: dict[str, Callable[[int, np.random.Generator], Instance]] = {
    "poisson": poisson,
    "bursty": bursty,
    "heavy-tail": heavy_tail,
    "wide": wide,
    "single": single,
    "msj": msj_family,
}


def make_family_instance(family: str, n: int, seed: int | np.random.Generator | None) -> Instance:
    """Draw instance ``seed`` of ``family`` with ``n`` jobs.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.
    n : int
        Number of jobs, >= 1.
    seed : int, Generator or None

    Returns
    -------
    Instance

    Examples
    --------
    >>> make_family_instance("single", 3, 0).cluster.servers
    (1,)
    """
    build = lookup(FAMILIES, family, what="family")
    if n < 1:
        raise UsageError("n must be >= 1")
    inst = build(n, np.random.default_rng(seed))
    seed_label = seed if isinstance(seed, int) else "rng"
    return Instance(
        name=f"{inst.name}-s{seed_label}",
        cluster=inst.cluster,
        jobs=inst.jobs,
        provenance={"family": family, "n": n, "seed": str(seed_label)},
    )
