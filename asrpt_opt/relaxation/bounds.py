"""Certified lower bounds on the cluster's total weighted completion time.

The *area relaxation* maps the cluster of M GPUs to one virtual machine of speed 1: job j
becomes a job of size v_j = q_j p_j / M released at r_j, where p_j is its length under its
best placement on an empty cluster. Any cluster schedule is a processor-sharing schedule on
the virtual machine (job j receives rate q_j/M times its progress rate while it runs, and these
rates sum to at most 1) that completes every job no later than the cluster does. Hence

* the SRPT value on the v_j (Schrage [1]_) bounds sum C_j of every cluster schedule, and with
  equal weights w, w times it bounds sum w_j C_j;
* with unequal weights that value is *not* a bound on sum w_j C_j; we use Goemans' mean busy
  time bound [2]_ on the virtual machine instead: sum w_j (M_j + v_j / 2) with M_j the mean busy
  times of preemptive WSPT;
* every job needs at least its own length: sum w_j (r_j + p_j).

References
----------
.. [1] L. Schrage, Operations Research 16(3):687-690, 1968.
.. [2] M. X. Goemans, "Improved approximation algorithms for scheduling with release dates",
   Proc. SODA 1997.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.instance import Instance
from asrpt_opt.relaxation.srpt import preemptive_wspt, srpt
from asrpt_opt.speed.base import AbstractSpeed, PooledSpeed, SpeedModel

__all__ = ["LowerBounds", "lower_bounds", "min_lengths", "virtual_sizes"]


def min_lengths(instance: Instance, *, speed: SpeedModel | None = None) -> NDArray[np.float64]:
    """Each job's length under its best placement on an empty cluster, in seconds.

    Parameters
    ----------
    instance : Instance
    speed : SpeedModel, optional
        Defaults to :class:`~asrpt_opt.speed.base.AbstractSpeed`.

    Returns
    -------
    ndarray
        p_j per job, in instance order.
    """
    speed = speed or AbstractSpeed()
    cluster = instance.cluster
    jobs = instance.jobs
    n = len(jobs)
    if type(speed) in (AbstractSpeed, PooledSpeed) and instance.is_abstract:
        # The same divisions as work / best_rate, one array operation for all jobs.
        duration = np.fromiter((float(j.duration_s or 0.0) for j in jobs), np.float64, n)
        if type(speed) is PooledSpeed:
            return duration  # best rate 1
        gpus = np.fromiter((j.gpus for j in jobs), np.int64, n)
        slowdown = np.fromiter((j.spread_slowdown for j in jobs), np.float64, n)
        rate = np.where(gpus <= cluster.max_server_gpus, 1.0, 1.0 / slowdown)
        return duration / rate
    # Other models know what their rates depend on and cache best_rate themselves.
    return np.fromiter((speed.work(j) / speed.best_rate(j, cluster) for j in jobs), np.float64, n)


def virtual_sizes(instance: Instance, lengths_s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Sizes v_j = q_j p_j / M of the jobs on the virtual single machine.

    Parameters
    ----------
    instance : Instance
    lengths_s : ndarray
        p_j per job (true or predicted).

    Returns
    -------
    ndarray
    """
    gpus = np.fromiter((j.gpus for j in instance.jobs), np.float64, instance.n_jobs)
    return gpus * np.asarray(lengths_s, dtype=np.float64) / instance.cluster.total_gpus


@dataclass(frozen=True, kw_only=True, slots=True)
class LowerBounds:
    """Lower bounds of one instance (see the module docstring for the proofs).

    Attributes
    ----------
    srpt_area_bound_s : float
        SRPT on the area relaxation: a bound on sum C_j (unweighted).
    release_plus_length_bound_s : float
        sum w_j (r_j + p_j).
    mean_busy_time_bound_s : float
        Goemans' bound sum w_j (M_j + v_j/2) on the area relaxation.
    lower_bound_s : float
        The best of the bounds that are valid for sum w_j C_j.
    lower_bound_kind : str
        Which bound gave ``lower_bound_s``.
    weighted : bool
        True when the jobs' weights differ (then the SRPT value is not a bound on the
        weighted objective).
    virtual_completion_s : ndarray
        Completion of each job in the SRPT schedule of the virtual machine.
    """

    srpt_area_bound_s: float
    release_plus_length_bound_s: float
    mean_busy_time_bound_s: float
    lower_bound_s: float
    lower_bound_kind: str
    weighted: bool
    virtual_completion_s: NDArray[np.float64]

    def to_json(self) -> dict[str, Any]:
        """The ``relax --json`` object (every bound, the best one and its kind)."""
        return {
            "srpt_area_bound_s": self.srpt_area_bound_s,
            "release_plus_length_bound_s": self.release_plus_length_bound_s,
            "mean_busy_time_bound_s": self.mean_busy_time_bound_s,
            "lower_bound_s": self.lower_bound_s,
            "lower_bound_kind": self.lower_bound_kind,
            "weighted": self.weighted,
        }


def lower_bounds(instance: Instance, *, speed: SpeedModel | None = None) -> LowerBounds:
    """Compute every lower bound of ``instance`` and the best valid one.

    Parameters
    ----------
    instance : Instance
    speed : SpeedModel, optional
        Defaults to :class:`~asrpt_opt.speed.base.AbstractSpeed`.

    Returns
    -------
    LowerBounds

    References
    ----------
    .. [1] L. Schrage, Operations Research 16(3):687-690, 1968.
    .. [2] M. X. Goemans, Proc. SODA 1997.

    Examples
    --------
    >>> from asrpt_opt.model import Cluster, Instance, Job
    >>> inst = Instance(name="x", cluster=Cluster(servers=(1,)), jobs=(
    ...     Job(id="a", release_s=0, gpus=1, duration_s=6),
    ...     Job(id="b", release_s=2, gpus=1, duration_s=2)))
    >>> lower_bounds(inst).lower_bound_s
    12.0
    """
    lengths = min_lengths(instance, speed=speed)
    n = instance.n_jobs
    release = np.fromiter((j.release_s for j in instance.jobs), np.float64, n)
    weight = np.fromiter((j.weight for j in instance.jobs), np.float64, n)
    v = virtual_sizes(instance, lengths)
    area = srpt(release, v)
    wspt = preemptive_wspt(release, v, weight)
    assert wspt.mean_busy_s is not None
    rpl = math.fsum((weight * (release + lengths)).tolist())
    mbt = math.fsum((weight * (wspt.mean_busy_s + v / 2.0)).tolist())
    weighted = bool(np.any(weight != weight[0]))
    candidates = {"release_plus_length": rpl, "mean_busy_time": mbt}
    if not weighted:
        candidates["srpt_area"] = float(weight[0]) * area.total_completion_s
    kind = max(candidates, key=lambda k: candidates[k])
    return LowerBounds(
        srpt_area_bound_s=area.total_completion_s,
        release_plus_length_bound_s=rpl,
        mean_busy_time_bound_s=mbt,
        lower_bound_s=candidates[kind],
        lower_bound_kind=kind,
        weighted=weighted,
        virtual_completion_s=area.completion_s,
    )
