"""Which GPUs a starting job gets: the placement method a simulation runs with.

Abstract jobs are always consolidated (fewest servers, best fit; spreading costs their
``spread_slowdown``). For a DNN job the placement method chooses which servers and how many
GPUs on each, by the job's worker graph and the two bandwidths: ``consolidate`` is Tiresias'
rule, and every other method of :data:`~asrpt_opt.placement.METHODS` (or a callable with the
same contract) minimises the bytes its workers exchange across servers. The workers are then
arranged inside those GPUs by the speed model.

A graph method sees the job's *candidate servers*: the ``q`` servers that offer the most GPUs
(at most ``q`` each: a job of ``q`` workers can use neither more servers nor more GPUs on one),
those that could hold the whole job first in best-fit order (least free GPUs first), ties to
the lower index. The methods minimise bytes across servers, a proxy: the placer keeps the
method's counts or consolidation's, whichever gives the shorter modelled iteration time, so a
graph-aware placement is never slower than Tiresias' rule at the moment the job starts. The
answer depends only on the job type and the candidate vector, an exact cache key.

On a cluster with network tiers the candidates come from the smallest domain (a rack, else a
pod) that holds the job, best fit, and the method and consolidation both work down the tiers
(:mod:`asrpt_opt.placement.tiers`); ``consolidate-flat`` is blind to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import ModelError, UsageError, lookup
from asrpt_opt.model.allocation import Allocation
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.topology import Topology
from asrpt_opt.placement.consolidate import VECTOR_FROM, BestFit, consolidate
from asrpt_opt.placement.methods import make_method
from asrpt_opt.placement.tiers import consolidate_tiered, smallest_domain
from asrpt_opt.speed.base import SpeedModel

__all__ = ["CHOICES", "ILP_IN_LOOP_S", "Placement", "Placer", "make_choice"]

#: Time limit of the exact ``ilp`` method when it places jobs inside a simulation.
ILP_IN_LOOP_S = 1.0
_BUCKETS_UP_TO = 65_536


#: A rule choosing among a job's candidate allocations: ``rule(rates, kept, tolerance)``
#: gets each candidate's rate and what it keeps whole (``(racks, servers)`` entirely free
#: after the start) and returns the index of the chosen one. The first candidate is the
#: method's (or consolidation's, when faster).
Choice = Callable[[list[float], list[tuple[int, int]], float], int]


def _myopic(rates: list[float], kept: list[tuple[int, int]], tolerance: float) -> int:
    """The fastest candidate (the first on ties)."""
    return max(range(len(rates)), key=lambda i: (rates[i], -i))


def _fragmentation(rates: list[float], kept: list[tuple[int, int]], tolerance: float) -> int:
    """Among the candidates within ``tolerance`` of the fastest, the one that keeps the most
    whole racks free, then whole servers, then the fastest."""
    floor = (1.0 - tolerance) * max(rates)
    ok = [i for i, r in enumerate(rates) if r >= floor]
    return max(ok, key=lambda i: (kept[i], rates[i], -i))


#: How the placer chooses among a job's candidate allocations, by name.
CHOICES: dict[str, Choice] = {"myopic": _myopic, "fragmentation": _fragmentation}


def make_choice(name: str) -> Choice:
    """The placement choice registered as ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`CHOICES`.

    Returns
    -------
    callable

    Raises
    ------
    UnknownNameError
        If no choice has that name; the message lists the known ones.
    """
    return lookup(CHOICES, name, what="placement choice")


@dataclass(frozen=True, kw_only=True, slots=True)
class Placement:
    """How a simulation places starting DNN jobs: a method and a choice among candidates.

    Parameters
    ----------
    method : str, callable or None
        A placement method of :data:`~asrpt_opt.placement.METHODS` or a callable with its
        contract; None for the policy's own (``consolidate`` outside a simulation).
    choice : str
        ``"myopic"``: the method's counts or consolidation's, whichever runs faster now.
        ``"fragmentation"``: also consider consolidating onto partly used servers only, and
        among the candidates within ``tolerance`` of the fastest keep the most whole racks,
        then whole servers, free for later wide jobs (:data:`CHOICES`).
    tolerance : float
        Relative slowdown a job may take to keep racks and servers whole, in [0, 1).
    """

    method: str | Callable[..., Any] | None = None
    choice: str = "myopic"
    tolerance: float = 0.05

    def __post_init__(self) -> None:
        make_choice(self.choice)
        if not 0.0 <= self.tolerance < 1.0:
            raise UsageError(f"placement tolerance must be in [0, 1), got {self.tolerance!r}")


class Placer:
    """Chooses GPUs for starting jobs with one placement method.

    Parameters
    ----------
    instance : Instance
    method : str, callable or Placement
        A registered placement method, or ``f(job, free, rng=..., time_limit_s=...)`` as
        :func:`~asrpt_opt.placement.place` accepts, or a :class:`Placement` (method and
        choice).
    speed : SpeedModel, optional
        Compares the method's counts with consolidation's (without it, the method's are kept).
    """

    def __init__(
        self,
        instance: Instance,
        method: str | Callable[..., Any] | Placement,
        speed: SpeedModel | None = None,
    ) -> None:
        rule = method if isinstance(method, Placement) else Placement(method=method)
        method = rule.method or "consolidate"
        self._choice = None if rule.choice == "myopic" else make_choice(rule.choice)
        self._tolerance = rule.tolerance
        self._sizes = np.asarray(instance.cluster.servers, dtype=np.int64)
        top = instance.cluster.topology
        self._rack_of = None if top is None else top.domains[0]
        if isinstance(method, str):
            make_method(method)  # an unknown name fails here, before the simulation
        self.method = method
        self.name = method if isinstance(method, str) else getattr(method, "__name__", "custom")
        if rule.choice != "myopic":
            self.name += f"+{rule.choice}"
        self.graph_aware = method not in ("consolidate", "consolidate-flat")
        tiered = instance.cluster.topology is not None and method != "consolidate-flat"
        self._speed = speed
        self._jobs = instance.jobs
        self._cluster = instance.cluster
        self._topology = instance.cluster.topology if tiered else None
        self._rows = None if self._topology is None else self._topology.domains.tolist()
        self._graphs: dict[tuple[Any, ...], Any] = {}
        self._cache: dict[tuple[Any, ...], Allocation] = {}
        # Consolidation on hundreds of servers or more keeps free-count buckets between calls
        # (a simulation changes a few servers per start); below, one pass over the vector is
        # cheaper. Bitsets of a million servers would make each update slow.
        many = VECTOR_FROM < instance.cluster.n_servers <= _BUCKETS_UP_TO
        self._consolidate = BestFit() if many else consolidate

    def __call__(self, job: int, free: NDArray[np.int64]) -> Allocation | None:
        """GPUs for ``job`` among ``free``, or None when too few are free.

        Parameters
        ----------
        job : int
            Index of the job in the instance.
        free : ndarray of int
            Free GPUs per server.

        Returns
        -------
        Allocation or None
        """
        spec = self._jobs[job]
        if spec.is_abstract:
            return self._consolidate(free, spec.gpus)
        first = self._first(job, free)
        if first is None or self._choice is None or self._speed is None:
            return first
        return self._chosen(job, free, first)

    def _chosen(self, job: int, free: NDArray[np.int64], first: Allocation) -> Allocation:
        """Choose between ``first`` and consolidation onto partly used servers only."""
        assert self._choice is not None
        assert self._speed is not None
        spec = self._jobs[job]
        partial = np.where(free == self._sizes, 0, free)
        other = consolidate_tiered(partial, spec.gpus, self._topology)
        if other is None or other == first:
            return first
        candidates = [first, other]
        rates = [self._speed.rate(spec, a) for a in candidates]
        kept = [self._kept(free, a) for a in candidates]
        return candidates[self._choice(rates, kept, self._tolerance)]

    def _kept(self, free: NDArray[np.int64], allocation: Allocation) -> tuple[int, int]:
        """(whole racks, whole servers) entirely free once ``allocation`` is taken."""
        after = free.copy()
        for s, c in allocation:
            after[s] -= c
        whole = after == self._sizes
        if self._rack_of is None:
            return 0, int(whole.sum())
        broken = np.bincount(self._rack_of, weights=~whole)
        return int(np.count_nonzero(broken == 0)), int(whole.sum())

    def _first(self, job: int, free: NDArray[np.int64]) -> Allocation | None:
        """The method's counts or consolidation's, whichever runs faster now."""
        spec = self._jobs[job]
        q = spec.gpus
        if not self.graph_aware:
            if self._topology is not None:
                return consolidate_tiered(free, q, self._topology)
            return self._consolidate(free, q)
        if int(free.sum()) < q:
            return None
        order = self._candidates(free, q)
        offered = np.minimum(free[order], q)
        assert spec.parallelism is not None
        p = spec.parallelism
        key = (spec.model, p.dp, p.pp, p.tp, tuple(offered.tolist()), self._grouping(order))
        local = self._cache.get(key)
        if local is None:
            sub = None if self._topology is None else self._topology.subset(order)
            local = self._place(job, offered, sub, order)
            self._cache[key] = local
        return tuple(sorted((int(order[s]), c) for s, c in local))

    def _grouping(self, order: NDArray[np.int64]) -> tuple[int, ...] | None:
        """How the candidate servers group into domains, numbered by first appearance: with
        the offered counts, all a placement on them depends on (None without tiers)."""
        if self._rows is None:
            return None
        out: list[int] = []
        for row in self._rows:
            seen: dict[int, int] = {}
            out.extend(seen.setdefault(row[s], len(seen)) for s in order.tolist())
        return tuple(out)

    def _candidates(self, free: NDArray[np.int64], q: int) -> NDArray[np.int64]:
        """The job's candidate servers: most GPUs offered first, and among servers that hold
        the whole job, best fit; with tiers, only inside the smallest domain that holds it."""
        scope = None if self._topology is None else smallest_domain(free, q, self._topology)
        mine = free if scope is None else free[scope]
        capped = np.minimum(mine, q)
        fit = np.where(capped == q, mine, 0)
        order = np.lexsort((fit, -capped))[:q]  # stable: ties to the lower index
        order = order[capped[order] > 0]
        return order if scope is None else scope[order]

    def _place(
        self,
        job: int,
        offered: NDArray[np.int64],
        topology: Topology | None,
        servers: NDArray[np.int64],
    ) -> Allocation:
        """The method's counts on the ``offered`` GPUs (local indices) or consolidation's,
        whichever runs faster on the real ``servers`` they stand for."""
        from asrpt_opt.placement.methods import place
        from asrpt_opt.speed.cluster import worker_graph_of

        spec = self._jobs[job]
        intra, inter = self._cluster.intra_server_gbps, self._cluster.inter_server_gbps
        if intra is None or inter is None:
            raise ModelError(
                f"job {spec.id!r} is a DNN job: the cluster needs intra_server_gbps and "
                "inter_server_gbps"
            )
        proposal = place(
            worker_graph_of(spec),
            offered,
            method=self.method,
            intra_gbps=intra,
            inter_gbps=inter,
            seed=0,
            time_limit_s=ILP_IN_LOOP_S,
            topology=topology,
        ).allocation
        fallback = consolidate_tiered(offered, spec.gpus, topology)
        if self._speed is None or fallback is None or fallback == proposal:
            return proposal

        # With tiers the rate depends on which servers: compare on the real ones.
        def rate(local: Allocation) -> float:
            assert self._speed is not None
            return self._speed.rate(spec, tuple((int(servers[s]), c) for s, c in local))

        return fallback if rate(fallback) > rate(proposal) else proposal
