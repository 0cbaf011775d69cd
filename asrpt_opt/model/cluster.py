"""The GPU cluster: servers with a number of GPUs each, their bandwidths, and optional
network tiers (racks, pods) between them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks

if TYPE_CHECKING:
    # numpy loads with the first topology, not with the cluster (``validate`` stays light).
    import numpy as np
    from numpy.typing import NDArray

    from asrpt_opt.model.topology import Topology

__all__ = ["Cluster"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Cluster:
    """A cluster of servers.

    Parameters
    ----------
    servers : tuple of int
        GPUs per server; server ``s`` has ``servers[s]`` GPUs.
    intra_server_gbps, inter_server_gbps : float, optional
        Bandwidth inside a server and between servers, in GB/s. Only DNN jobs need them. With
        a ``topology``, ``inter_server_gbps`` is the bandwidth between domains of its outermost
        tier (the spine; by default that tier's own bandwidth).
    topology : Topology, optional
        Tiers of racks, pods, ... between the servers (:mod:`asrpt_opt.model.topology`).

    Examples
    --------
    >>> c = Cluster(servers=(4, 4))
    >>> c.total_gpus, c.n_servers, c.max_server_gpus
    (8, 2, 4)
    """

    servers: tuple[int, ...]
    intra_server_gbps: float | None = None
    inter_server_gbps: float | None = None
    topology: Topology | None = None
    # Derived once: the simulator asks for them per job (sums over thousands of servers).
    _total: int = field(init=False, repr=False, compare=False, default=0)
    _max: int = field(init=False, repr=False, compare=False, default=0)
    _desc: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        servers = _checks.sequence(self.servers, "servers")
        if not servers:
            raise InstanceError("must list at least one server", path="servers")
        if len(servers) > _checks.MAX_SERVERS:
            raise InstanceError(
                f"lists {len(servers):,} servers; at most {_checks.MAX_SERVERS:,} are supported",
                path="servers",
            )
        checked = tuple(
            _checks.integer(g, f"servers[{i}]", maximum=_checks.MAX_TOTAL_GPUS)
            for i, g in enumerate(servers)
        )
        if sum(checked) > _checks.MAX_TOTAL_GPUS:
            raise InstanceError(
                f"holds {sum(checked):,} GPUs; at most {_checks.MAX_TOTAL_GPUS:,} are supported",
                path="servers",
            )
        object.__setattr__(self, "servers", checked)
        object.__setattr__(self, "_total", sum(checked))
        object.__setattr__(self, "_max", max(checked))
        object.__setattr__(self, "_desc", tuple(sorted(checked, reverse=True)))
        for name in ("intra_server_gbps", "inter_server_gbps"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _checks.number(value, name, minimum=0, strict=True))
        if self.topology is not None:
            self._check_topology(self.topology)

    def _check_topology(self, topology: Topology) -> None:
        if topology.n_servers != self.n_servers:
            raise InstanceError(
                f"groups {topology.n_servers} servers, but the cluster lists {self.n_servers}",
                path="topology.levels[0]",
            )
        first, last = topology.tiers[0], topology.tiers[-1]
        inter = last.gbps if self.inter_server_gbps is None else self.inter_server_gbps
        object.__setattr__(self, "inter_server_gbps", inter)
        if self.intra_server_gbps is not None and first.gbps > self.intra_server_gbps:
            raise InstanceError(
                f"gbps {first.gbps:g} exceeds intra_server_gbps {self.intra_server_gbps:g}",
                path="topology.levels[0].gbps",
            )
        if inter > last.gbps:
            raise InstanceError(
                f"inter_server_gbps {inter:g} exceeds the outermost tier's "
                f"{last.gbps:g}: bandwidth must not grow outwards",
                path="inter_server_gbps",
            )

    @property
    def n_servers(self) -> int:
        """Number of servers."""
        return len(self.servers)

    @property
    def total_gpus(self) -> int:
        """Total number of GPUs, M in the model."""
        return self._total

    @property
    def max_server_gpus(self) -> int:
        """GPUs of the largest server: a job wider than this must span servers."""
        return self._max

    @property
    def label(self) -> str:
        """A short description for titles: ``"8 x 8 GPUs"``, or ``"7 servers, 21 GPUs"``
        when servers differ.

        Examples
        --------
        >>> Cluster(servers=(8, 8)).label
        '2 x 8 GPUs'
        >>> Cluster(servers=(4, 2)).label
        '2 servers, 6 GPUs'
        """
        if len(set(self.servers)) == 1:
            return f"{self.n_servers} x {self.servers[0]} GPUs"
        return f"{self.n_servers} servers, {self.total_gpus} GPUs"

    @property
    def level_gbps(self) -> tuple[float, ...]:
        """GB/s of each link level: inside a server, each tier of the topology, between the
        outermost domains (``(intra, inter)`` without a topology).

        Raises
        ------
        InstanceError
            If a bandwidth is missing.
        """
        if self.intra_server_gbps is None or self.inter_server_gbps is None:
            raise InstanceError(
                "needs intra_server_gbps and inter_server_gbps for DNN jobs", path="cluster"
            )
        tiers = () if self.topology is None else tuple(t.gbps for t in self.topology.tiers)
        return (self.intra_server_gbps, *tiers, self.inter_server_gbps)

    def link_level(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        """Link level between servers ``a[i]`` and ``b[i]`` (0 inside a server; see
        :meth:`~asrpt_opt.model.topology.Topology.level_of`).

        Parameters
        ----------
        a, b : ndarray of int

        Returns
        -------
        ndarray of int
        """
        if self.topology is None:
            import numpy as np

            return (np.asarray(a) != np.asarray(b)).astype(np.int64)
        return self.topology.level_of(a, b)

    @property
    def servers_desc(self) -> tuple[int, ...]:
        """Server sizes, largest first: the cluster's shape, which is all a speed model's
        best allocation depends on (computed once; asked for per job)."""
        return self._desc

    @classmethod
    def uniform(cls, n_servers: int, gpus_per_server: int, **bandwidths: Any) -> Cluster:
        """Build ``n_servers`` identical servers of ``gpus_per_server`` GPUs.

        Parameters
        ----------
        n_servers, gpus_per_server : int
            Shape of the cluster.
        **bandwidths
            ``intra_server_gbps``, ``inter_server_gbps`` and ``topology``.

        Returns
        -------
        Cluster
        """
        return cls(servers=(gpus_per_server,) * n_servers, **bandwidths)

    @classmethod
    def tiered(
        cls,
        *,
        servers_per_rack: int,
        racks: int,
        racks_per_pod: int | None = None,
        gpus_per_server: int = 8,
        intra_server_gbps: float = 300.0,
        rack_gbps: float = 50.0,
        oversubscription: float = 1.0,
    ) -> Cluster:
        """Identical servers in racks, optionally racks in pods, each tier above the rack
        ``oversubscription`` times slower than the one below.

        Parameters
        ----------
        servers_per_rack, racks : int
        racks_per_pod : int, optional
            Group the racks into pods (a third tier) of this many.
        gpus_per_server : int
        intra_server_gbps, rack_gbps : float
            GB/s inside a server and between servers of one rack.
        oversubscription : float
            3.0 for 3:1: between racks (of a pod) at ``rack_gbps / 3``, between pods at
            ``rack_gbps / 9``; 1.0 for full bisection bandwidth.

        Returns
        -------
        Cluster

        Examples
        --------
        >>> c = Cluster.tiered(servers_per_rack=4, racks=8, racks_per_pod=4, oversubscription=2)
        >>> c.label, c.level_gbps
        ('32 x 8 GPUs', (300.0, 50.0, 25.0, 12.5))
        """
        from asrpt_opt.model.topology import Topology

        n = servers_per_rack * racks
        tiers = [("rack", servers_per_rack, rack_gbps)]
        spine = rack_gbps / oversubscription
        if racks_per_pod is not None:
            tiers.append(("pod", racks_per_pod, spine))
            spine /= oversubscription
        return cls(
            servers=(gpus_per_server,) * n,
            intra_server_gbps=intra_server_gbps,
            inter_server_gbps=spine,
            topology=Topology.regular(n, tiers),
        )
