"""The GPU cluster: servers with a number of GPUs each, and two bandwidths."""

from __future__ import annotations

from dataclasses import dataclass, field

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks

__all__ = ["Cluster"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Cluster:
    """A cluster of servers.

    Parameters
    ----------
    servers : tuple of int
        GPUs per server; server ``s`` has ``servers[s]`` GPUs.
    intra_server_gbps, inter_server_gbps : float, optional
        Bandwidth inside a server and between servers, in GB/s. Only DNN jobs need them.

    Examples
    --------
    >>> c = Cluster(servers=(4, 4))
    >>> c.total_gpus, c.n_servers, c.max_server_gpus
    (8, 2, 4)
    """

    servers: tuple[int, ...]
    intra_server_gbps: float | None = None
    inter_server_gbps: float | None = None
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
    def servers_desc(self) -> tuple[int, ...]:
        """Server sizes, largest first: the cluster's shape, which is all a speed model's
        best allocation depends on (computed once; asked for per job)."""
        return self._desc

    @classmethod
    def uniform(cls, n_servers: int, gpus_per_server: int, **bandwidths: float) -> Cluster:
        """Build ``n_servers`` identical servers of ``gpus_per_server`` GPUs.

        Parameters
        ----------
        n_servers, gpus_per_server : int
            Shape of the cluster.
        **bandwidths : float
            ``intra_server_gbps`` and ``inter_server_gbps``.

        Returns
        -------
        Cluster
        """
        return cls(servers=(gpus_per_server,) * n_servers, **bandwidths)
