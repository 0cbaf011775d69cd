"""Every placement method on every DNN job of an instance, with gaps to the optimum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.placement.methods import PlacementResult, make_method, place

__all__ = ["FREE_GPUS_FIELD", "JobComparison", "compare_methods", "instance_free_gpus"]

#: The provenance field of a placement instance that holds its free-GPU pattern
#: (comma-separated free GPUs per server, for example ``"1,2,3,2,1,3"``).
FREE_GPUS_FIELD = "free_gpus"


@dataclass(frozen=True, kw_only=True)
class JobComparison:
    """The placement methods' results on one DNN job.

    Attributes
    ----------
    id : str
    gpus : int
    results : tuple of PlacementResult
        One per method, in the order asked for (empty when the job does not fit).
    error : str or None
        Why the job could not be placed.
    """

    id: str
    gpus: int
    results: tuple[PlacementResult, ...] = ()
    error: str | None = None

    def gap(self, result: PlacementResult) -> tuple[float, float] | None:
        """``result``'s relative gap to the optimum (cut / optimum - 1; the tier-weighted cut on
        a cluster with tiers) as an interval
        ``(low, high)``: one point when a method proved the optimum, else the interval between
        the best cut found and the best proven bound; None when nothing is known.

        Parameters
        ----------
        result : PlacementResult

        Returns
        -------
        (float, float) or None
            ``inf`` when the optimum is 0 and ``result`` cuts something.
        """
        exact = [r for r in self.results if r.optimal]
        cut = _objective(result)
        if exact:
            best = _objective(exact[0])
            gap = (cut - best) / best if best else (0.0 if cut == 0 else float("inf"))
            return gap, gap
        lower = max((_bound(r) or 0.0 for r in self.results), default=0.0)
        if lower <= 0:
            return None
        # Unproven: the optimum lies between the best bound and the best cut found.
        known = min(_objective(r) for r in self.results)
        return cut / known - 1, cut / lower - 1

    def to_json(self) -> dict[str, Any]:
        """The ``place --json`` job object."""
        out: dict[str, Any] = {"id": self.id, "gpus": self.gpus}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["results"] = [r.to_json() for r in self.results]
        return out


def _objective(result: PlacementResult) -> float:
    return result.cross_server_bytes if result.tier_cost_s is None else result.tier_cost_s


def _bound(result: PlacementResult) -> float | None:
    if result.tier_cost_s is None:
        return result.lower_bound_bytes
    return result.lower_bound_tier_cost_s


def _checked_free(free: list[int], instance: Instance, where: str) -> list[int]:
    cluster = instance.cluster
    if len(free) != cluster.n_servers:
        raise UsageError(f"{where} lists {len(free)} servers; the cluster has {cluster.n_servers}")
    for s, (f, cap) in enumerate(zip(free, cluster.servers, strict=True)):
        if not 0 <= f <= cap:
            raise UsageError(f"{where}: server {s} has {cap} GPUs, not {f} free")
    return free


def instance_free_gpus(instance: Instance) -> tuple[int, ...] | None:
    """The free-GPU pattern a placement instance states in ``provenance.free_gpus``.

    Parameters
    ----------
    instance : Instance

    Returns
    -------
    tuple of int or None
        Free GPUs per server; None when the instance states no pattern (every GPU is free).

    Raises
    ------
    UsageError
        When the field is not a comma-separated list of one count per server, each between
        0 and the server's GPUs.
    """
    raw = instance.provenance.get(FREE_GPUS_FIELD)
    if raw is None:
        return None
    where = f"{instance.name}: provenance.{FREE_GPUS_FIELD}"
    try:
        counts = [int(part) for part in str(raw).split(",")]
    except ValueError:
        raise UsageError(f"{where}: {raw!r} is not a comma-separated list of integers") from None
    return tuple(_checked_free(counts, instance, where))


def compare_methods(
    instance: Instance,
    methods: Sequence[str],
    *,
    free: Sequence[int] | None = None,
    seed: int = 0,
    time_limit_s: float = 10.0,
) -> list[JobComparison]:
    """Place every DNN job of ``instance`` on the free GPUs with every method.

    Parameters
    ----------
    instance : Instance
        Its cluster must give both bandwidths.
    methods : sequence of str
        Registered placement methods.
    free : sequence of int, optional
        Free GPUs per server (default: the instance's ``provenance.free_gpus`` when it states
        one, see :func:`instance_free_gpus`, else every GPU).
    seed : int
    time_limit_s : float
        For ``ilp``.

    Returns
    -------
    list of JobComparison
        One per DNN job, in instance order.
    """
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.workers import worker_graph

    for m in methods:
        make_method(m)
    cluster = instance.cluster
    if free is None:
        own = instance_free_gpus(instance)
        free = list(cluster.servers) if own is None else list(own)
    else:
        free = _checked_free(list(free), instance, "--free-gpus")
    intra, inter = cluster.intra_server_gbps, cluster.inter_server_gbps
    if intra is None or inter is None:
        raise UsageError(f"{instance.name}: cluster needs intra_server_gbps and inter_server_gbps")
    out = []
    for job in instance.jobs:
        if job.is_abstract:
            continue
        assert job.model is not None
        assert job.parallelism is not None
        if job.gpus > sum(free):
            error = f"{job.gpus} workers do not fit in {sum(free)} free GPUs"
            out.append(JobComparison(id=job.id, gpus=job.gpus, error=error))
            continue
        wg = worker_graph(load_model(job.model), job.parallelism)
        results = tuple(
            place(
                wg,
                free,
                method=m,
                intra_gbps=intra,
                inter_gbps=inter,
                seed=seed,
                time_limit_s=time_limit_s,
                topology=cluster.topology,
            )
            for m in methods
        )
        out.append(JobComparison(id=job.id, gpus=job.gpus, results=results))
    return out
