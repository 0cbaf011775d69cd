"""What a placement returns: where the workers go and what is proven about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from asrpt_opt.model.allocation import Allocation, allocation_to_json

__all__ = ["Certified", "PlacementResult", "counts_of"]


@dataclass(frozen=True, kw_only=True)
class PlacementResult:
    """Where a job's workers go and what that costs.

    Attributes
    ----------
    method : str
    assignment : tuple of int
        Server of each worker.
    allocation : Allocation
        GPUs per server, ``((server, count), ...)``.
    cross_server_bytes : float
        Bytes per iteration crossing servers (the weighted cut).
    iteration_time_s : float
        Modelled seconds per iteration.
    optimal : bool
        True only when the method proved its objective minimal: the cut on a one-tier
        cluster, the tier-weighted cut (``tier_cost_s``) on a cluster with tiers.
    wall_s : float
    lower_bound_bytes : float or None
        A proven lower bound on the cut of any placement (exact methods on one tier only): the
        optimum lies in ``[lower_bound_bytes, cross_server_bytes]``.
    cross_tier_bytes : tuple of (str, float)
        With tiers: bytes per iteration crossing each kind of domain, innermost first
        (``(("server", b1), ("rack", b2), ...)``); a byte is counted at the outermost domain it
        crosses only. Empty on one tier.
    tier_cost_s : float or None
        With tiers: the tier-weighted cut (:mod:`asrpt_opt.placement.tiers`).
    lower_bound_tier_cost_s : float or None
        With tiers and an exact method: a proven lower bound on ``tier_cost_s`` of any
        placement.
    """

    method: str
    assignment: tuple[int, ...]
    allocation: Allocation
    cross_server_bytes: float
    iteration_time_s: float
    optimal: bool
    wall_s: float
    lower_bound_bytes: float | None = None
    cross_tier_bytes: tuple[tuple[str, float], ...] = ()
    tier_cost_s: float | None = None
    lower_bound_tier_cost_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``place --json`` result object (docs/output-format.md); the tier keys only on
        a cluster with tiers."""
        out = {
            "method": self.method,
            "servers": allocation_to_json(self.allocation),
            "cross_server_bytes": self.cross_server_bytes,
            "iteration_time_s": self.iteration_time_s,
            "optimal": self.optimal,
            "wall_s": self.wall_s,
            "lower_bound_bytes": self.lower_bound_bytes,
        }
        if self.cross_tier_bytes:
            out["cross_tier_bytes"] = dict(self.cross_tier_bytes)
            out["tier_cost_s"] = self.tier_cost_s
            out["lower_bound_tier_cost_s"] = self.lower_bound_tier_cost_s
        return out


@dataclass(frozen=True, kw_only=True)
class Certified:
    """What an exact method returns: a placement and what is proven about it.

    Attributes
    ----------
    assignment : ndarray of int
        Server of each worker.
    optimal : bool
        The cut is proven minimal.
    lower_bound_bytes : float
        Proven lower bound on the cut of every placement.
    """

    assignment: NDArray[np.int64]
    optimal: bool
    lower_bound_bytes: float


def counts_of(assignment: NDArray[np.int64]) -> Allocation:
    """The allocation of a worker assignment.

    Parameters
    ----------
    assignment : ndarray of int
        Server of each worker.

    Returns
    -------
    Allocation
        ``((server, count), ...)`` sorted by server.
    """
    servers, counts = np.unique(assignment, return_counts=True)
    return tuple((int(s), int(c)) for s, c in zip(servers, counts, strict=True))
