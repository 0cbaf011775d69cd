"""Every placement method on every DNN job of an instance, with gaps to the optimum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asrpt_opt.errors import UsageError
from asrpt_opt.model.instance import Instance
from asrpt_opt.placement.methods import PlacementResult, make_method, place

__all__ = ["JobComparison", "compare_methods"]


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

    def gap(self, result: PlacementResult) -> str:
        """``result``'s gap to the optimum: exact when a method proved it, else an interval
        between the best cut found and the best proven bound, or ``-`` when nothing is known.

        Parameters
        ----------
        result : PlacementResult

        Returns
        -------
        str
        """
        exact = [r for r in self.results if r.optimal]
        cut = result.cross_server_bytes
        if exact:
            best = exact[0].cross_server_bytes
            if best:
                return f"{(cut - best) / best:.1%}"
            return "0.0%" if cut == 0 else "inf"
        lower = max((r.lower_bound_bytes or 0.0 for r in self.results), default=0.0)
        if lower <= 0:
            return "-"
        # Unproven: the optimum lies between the best bound and the best cut found.
        known = min(r.cross_server_bytes for r in self.results)
        return f"{cut / known - 1:.1%}..{cut / lower - 1:.1%}"

    def to_json(self) -> dict[str, Any]:
        """The ``place --json`` job object."""
        out: dict[str, Any] = {"id": self.id, "gpus": self.gpus}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["results"] = [r.to_json() for r in self.results]
        return out


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
        Free GPUs per server (default: every GPU).
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
    free = list(cluster.servers) if free is None else list(free)
    if len(free) != cluster.n_servers:
        raise UsageError(
            f"--free-gpus lists {len(free)} servers; the cluster has {cluster.n_servers}"
        )
    for s, (f, cap) in enumerate(zip(free, cluster.servers, strict=True)):
        if not 0 <= f <= cap:
            raise UsageError(f"--free-gpus: server {s} has {cap} GPUs, not {f} free")
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
            )
            for m in methods
        )
        out.append(JobComparison(id=job.id, gpus=job.gpus, results=results))
    return out
