"""Network tiers above the servers: racks, pods, and the bandwidth inside each.

A cluster without a topology has two link speeds, inside a server and between servers. A
:class:`Topology` inserts tiers between the two: servers are grouped into domains (racks),
domains into larger ones (pods), and so on. Two servers talk at the bandwidth of the lowest
tier whose domain holds both; servers in different domains of the outermost tier talk at the
cluster's ``inter_server_gbps`` (the spine). Link *levels* number these cases: 0 inside a
server, ``k`` for tier ``k`` (1 = the first tier above the servers), ``len(tiers) + 1``
between outermost domains.

Examples
--------
>>> t = Topology.regular(8, [("rack", 2, 50.0), ("pod", 2, 25.0)])
>>> t.level_of(np.array([0, 0, 0, 0]), np.array([0, 1, 2, 4])).tolist()
[0, 1, 2, 3]
>>> t.n_domains
(4, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks

__all__ = ["Tier", "Topology"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Tier:
    """One tier of domains.

    Parameters
    ----------
    name : str
        What a domain of this tier is called (``"rack"``, ``"pod"``).
    gbps : float
        GB/s between two servers whose lowest common domain is of this tier.
    parent : tuple of int
        The domain of this tier that holds each domain of the tier below (each server, for the
        first tier). Domains are numbered from 0 without gaps.
    """

    name: str
    gbps: float
    parent: tuple[int, ...]

    def __post_init__(self) -> None:
        name = _checks.string(self.name, "name")
        if not name or name == "server":
            raise InstanceError("must be a non-empty name other than 'server'", path="name")
        object.__setattr__(self, "gbps", _checks.number(self.gbps, "gbps", minimum=0, strict=True))
        parent = tuple(
            _checks.integer(p, f"parent[{i}]", minimum=0)
            for i, p in enumerate(_checks.sequence(self.parent, "parent"))
        )
        if not parent:
            raise InstanceError("must group at least one domain", path="parent")
        if set(parent) != set(range(max(parent) + 1)):
            raise InstanceError("must number its domains 0, 1, ... without gaps", path="parent")
        object.__setattr__(self, "parent", parent)

    @property
    def n_domains(self) -> int:
        """Number of domains of this tier."""
        return max(self.parent) + 1


@dataclass(frozen=True, kw_only=True, slots=True)
class Topology:
    """Tiers of domains above the servers, innermost first.

    Parameters
    ----------
    tiers : tuple of Tier
        Each tier groups the domains of the one before it (the servers, for the first);
        bandwidths must not grow outwards.

    Examples
    --------
    >>> Topology.regular(4, [("rack", 2, 50.0)]).domains.tolist()
    [[0, 0, 1, 1]]
    """

    tiers: tuple[Tier, ...]
    _domains: NDArray[np.int64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tiers = tuple(self.tiers)
        if not tiers:
            raise InstanceError("must list at least one tier", path="levels")
        _check_chain(tiers, 0)
        rows = [np.asarray(tiers[0].parent, dtype=np.int64)]
        for tier in tiers[1:]:
            rows.append(np.asarray(tier.parent, dtype=np.int64)[rows[-1]])
        object.__setattr__(self, "tiers", tiers)
        object.__setattr__(self, "_domains", np.vstack(rows))

    @classmethod
    def regular(cls, n_servers: int, tiers: Sequence[tuple[str, int, float]]) -> Topology:
        """Tiers of consecutive, equally sized domains (the last one may be smaller).

        Parameters
        ----------
        n_servers : int
        tiers : sequence of (name, children per domain, gbps)
            ``("rack", 4, 50.0)`` puts every 4 consecutive servers in a rack.

        Returns
        -------
        Topology
        """
        out, below = [], n_servers
        for name, size, gbps in tiers:
            size = _checks.integer(size, f"{name} size")
            out.append(Tier(name=name, gbps=gbps, parent=tuple(i // size for i in range(below))))
            below = -(-below // size)
        return cls(tiers=tuple(out))

    @property
    def n_servers(self) -> int:
        """Number of servers the first tier groups."""
        return len(self.tiers[0].parent)

    @property
    def n_domains(self) -> tuple[int, ...]:
        """Domains per tier, innermost first."""
        return tuple(t.n_domains for t in self.tiers)

    @property
    def names(self) -> tuple[str, ...]:
        """``("server", tier names..., "cluster")``: what each link level crosses into."""
        return ("server", *(t.name for t in self.tiers), "cluster")

    @property
    def domains(self) -> NDArray[np.int64]:
        """``domains[k, s]``: the domain of tier ``k + 1`` holding server ``s`` (read-only)."""
        view = self._domains.view()
        view.flags.writeable = False
        return view

    def level_of(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        """The link level between servers ``a[i]`` and ``b[i]``.

        Parameters
        ----------
        a, b : ndarray of int
            Server indices, aligned.

        Returns
        -------
        ndarray of int
            0 for the same server, ``k`` when tier ``k`` is the lowest whose domain holds both,
            ``len(tiers) + 1`` when none does.
        """
        a, b = np.asarray(a), np.asarray(b)
        level = np.where(a == b, 0, len(self.tiers) + 1)
        for k in range(len(self.tiers) - 1, -1, -1):
            row = self._domains[k]
            level = np.where((a != b) & (row[a] == row[b]), k + 1, level)
        return level

    def subset(self, servers: Sequence[int] | NDArray[np.int64]) -> Topology:
        """The same tiers over ``servers`` only, in that order (domains renumbered).

        Parameters
        ----------
        servers : sequence of int

        Returns
        -------
        Topology
        """
        idx = np.asarray(servers, dtype=np.int64)
        tiers, below = [], idx
        for k, tier in enumerate(self.tiers):
            mine = self._domains[k][idx] if k == 0 else np.asarray(tier.parent)[below]
            kept, inverse = np.unique(mine, return_inverse=True)
            tiers.append(Tier(name=tier.name, gbps=tier.gbps, parent=tuple(inverse.tolist())))
            below = kept
        return Topology(tiers=tuple(tiers))

    def shape_key(self, servers: Sequence[int], counts: Sequence[int]) -> tuple[Any, ...]:
        """A canonical, hashable form of an allocation up to renumbering equal domains: the
        counts nested by domain, each level sorted (largest first).

        Parameters
        ----------
        servers, counts : sequence of int
            The allocation's servers and GPUs on each.

        Returns
        -------
        tuple
        """
        current: dict[int, Any] = {int(s): int(c) for s, c in zip(servers, counts, strict=True)}
        for tier in self.tiers:
            groups: dict[int, list[Any]] = {}
            for node, item in current.items():
                groups.setdefault(tier.parent[node], []).append(item)
            current = {d: tuple(sorted(v, key=_order, reverse=True)) for d, v in groups.items()}
        return tuple(sorted(current.values(), key=_order, reverse=True))

    @classmethod
    def from_json(cls, raw: Any, n_servers: int) -> tuple[Topology, float | None]:
        """Read a ``cluster.topology`` object (docs/instance-format.md).

        Parameters
        ----------
        raw : object
            ``{"levels": [...]}``; each level has ``name``, ``gbps`` and, keyed by the plural
            of the level below (``"servers"``, ``"racks"``), either how many consecutive
            children a domain holds or the domain of each child. The outermost level may omit
            it: one domain holds everything. A first level named ``"server"`` gives the
            bandwidth inside a server and nothing else.
        n_servers : int

        Returns
        -------
        (Topology, float or None)
            The tiers, and the ``"server"`` level's bandwidth if one was given.
        """
        obj = _checks.mapping(raw, "topology")
        _checks.only_keys(obj, frozenset({"levels"}), "topology")
        levels = _checks.sequence(_checks.required(obj, "levels"), "topology.levels")
        server_gbps, start = None, 0
        if levels and isinstance(levels[0], dict) and levels[0].get("name") == "server":
            first = _checks.mapping(levels[0], "topology.levels[0]")
            _checks.only_keys(first, frozenset({"name", "gbps"}), "topology.levels[0]")
            server_gbps = _checks.number(
                _checks.required(first, "gbps"), "topology.levels[0].gbps", minimum=0, strict=True
            )
            start = 1
        tiers, below, count = [], "server", n_servers
        for i in range(start, len(levels)):
            tier = _tier_from_json(
                levels[i], f"topology.levels[{i}]", below, count, i == len(levels) - 1
            )
            tiers.append(tier)
            below, count = tier.name, tier.n_domains
        if not tiers:
            raise InstanceError("must list a tier above the servers", path="topology.levels")
        _check_chain(tiers, start)
        return cls(tiers=tuple(tiers)), server_gbps

    def of_shape(self, key: tuple[Any, ...]) -> tuple[list[int], Topology]:
        """A concrete allocation of a :meth:`shape_key`: per-server counts, and these tiers
        over just those servers (same names and bandwidths, domains in the key's order).

        Parameters
        ----------
        key : tuple
            As :meth:`shape_key` returns.

        Returns
        -------
        (list of int, Topology)
        """
        counts: list[int] = []
        parents: list[list[int]] = [[] for _ in self.tiers]  # as Tier.parent, per tier
        seen = [0] * len(self.tiers)  # domains of each tier numbered so far

        def walk(item: Any, k: int) -> int:
            me, seen[k] = seen[k], seen[k] + 1
            for child in item:
                if k == 0:
                    counts.append(int(child))
                    parents[0].append(me)
                else:
                    walk(child, k - 1)
                    parents[k].append(me)
            return me

        for item in key:
            walk(item, len(self.tiers) - 1)
        tiers = tuple(
            Tier(name=t.name, gbps=t.gbps, parent=tuple(p))
            for t, p in zip(self.tiers, parents, strict=True)
        )
        return counts, Topology(tiers=tiers)

    def to_json(self) -> dict[str, Any]:
        """The ``cluster.topology`` object of the instance format (docs/instance-format.md)."""
        levels: list[dict[str, Any]] = []
        below = "server"
        for tier in self.tiers:
            size = _regular_size(tier.parent)
            levels.append(
                {
                    "name": tier.name,
                    f"{below}s": size if size else list(tier.parent),
                    "gbps": _plain(tier.gbps),
                }
            )
            below = tier.name
        return {"levels": levels}


def _check_chain(tiers: Sequence[Tier], first: int) -> None:
    """Each tier groups exactly the domains of the one below; bandwidth never grows outwards.
    ``first`` is the index of ``tiers[0]`` among the file's levels (for the error's path)."""
    for k in range(1, len(tiers)):
        below, where = tiers[k - 1], f"topology.levels[{k + first}]"
        if len(tiers[k].parent) != below.n_domains:
            raise InstanceError(
                f"groups {len(tiers[k].parent)} {below.name}s, but there are {below.n_domains}",
                path=where,
            )
        if tiers[k].gbps > below.gbps:
            raise InstanceError(
                f"gbps {tiers[k].gbps:g} exceeds the {below.name} tier's {below.gbps:g}: "
                "bandwidth must not grow outwards",
                path=f"{where}.gbps",
            )


def _tier_from_json(raw: Any, where: str, below: str, count: int, last: bool) -> Tier:
    obj = _checks.mapping(raw, where)
    key = f"{below}s"
    _checks.only_keys(obj, frozenset({"name", "gbps", key}), where)
    name = _checks.string(_checks.required(obj, "name"), f"{where}.name")
    gbps = _checks.required(obj, "gbps")
    size = obj.get(key, count if last else None)
    if size is None:
        raise InstanceError(f"must say how its {below}s group (key {key!r})", path=where)
    if isinstance(size, list):
        if len(size) != count:
            raise InstanceError(
                f"lists the {name} of {len(size)} {below}s, but there are {count}",
                path=f"{where}.{key}",
            )
        parent = tuple(size)
        if all(isinstance(p, int) for p in parent) and set(parent) != set(range(len(set(parent)))):
            raise InstanceError(
                f"must number its {name}s 0, 1, ... without gaps", path=f"{where}.{key}"
            )
    else:
        n = _checks.integer(size, f"{where}.{key}")
        parent = tuple(i // n for i in range(count))
    try:
        return Tier(name=name, gbps=gbps, parent=parent)
    except InstanceError as exc:
        raise exc.within(path=where) from None


def _plain(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _order(item: Any) -> tuple[Any, ...]:
    # Counts and nested groups sort by total GPUs first, then by their own structure.
    return (_total(item), item if isinstance(item, int) else tuple(map(_order, item)))


def _total(item: Any) -> int:
    return item if isinstance(item, int) else sum(_total(i) for i in item)


def _regular_size(parent: tuple[int, ...]) -> int | None:
    size = parent.count(0)
    if all(p == i // size for i, p in enumerate(parent)):
        return size
    return None
