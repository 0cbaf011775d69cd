"""Competitive ratios: per-instance ratios (or intervals), the (a, b) fit, and summaries.

A ratio is ALG/OPT only when OPT is proven; otherwise it is the interval ALG/UB .. ALG/LB
between the best verified offline schedule (UB) and the best proven lower bound (LB).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "ABFit",
    "InstanceOutcome",
    "PolicyOutcome",
    "PolicySummary",
    "RatioEstimate",
    "fit_ab",
    "instance_ratio",
    "summarise",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class RatioEstimate:
    """One policy's ratio on one instance.

    Attributes
    ----------
    ratio : float or None
        ALG/OPT when OPT is proven, else None.
    ratio_lo, ratio_hi : float
        ALG/UB and ALG/LB: the true ratio lies in between (equal to ``ratio`` when proven).
    proven : bool
    """

    ratio: float | None
    ratio_lo: float
    ratio_hi: float
    proven: bool

    def to_json(self) -> dict[str, Any]:
        """The estimate as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicyOutcome:
    """One policy on one instance of a sweep.

    Attributes
    ----------
    value_s : float
        Its sum of weighted completion times.
    completion_s : tuple of float
        Each job's completion time.
    estimate : RatioEstimate
    """

    value_s: float
    completion_s: tuple[float, ...]
    estimate: RatioEstimate

    def to_json(self) -> dict[str, Any]:
        """The outcome as the store keeps it (``value_s``, ``completion_s`` and the ratio)."""
        return {
            "value_s": self.value_s,
            "completion_s": list(self.completion_s),
            **self.estimate.to_json(),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> PolicyOutcome:
        """Read :meth:`to_json`'s dict back."""
        return cls(
            value_s=doc["value_s"],
            completion_s=tuple(doc["completion_s"]),
            estimate=RatioEstimate(
                ratio=doc["ratio"],
                ratio_lo=doc["ratio_lo"],
                ratio_hi=doc["ratio_hi"],
                proven=doc["proven"],
            ),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class InstanceOutcome:
    """One instance of a ratio sweep: its offline solve and every policy's outcome.

    Attributes
    ----------
    family : str
    n, seed : int
    load : float
        Offered load: total GPU-time over (GPUs x span).
    offline_status : str
        The offline solve's status (``optimal`` when proven).
    offline_value_s : float or None
        Best verified offline value (an upper bound on OPT).
    offline_bound_s : float
        Proven lower bound on OPT.
    offline_wall_s : float
    offline_stopped_by : str
        The limit that stopped the offline solve: ``none``, ``work`` (reproducible) or
        ``time`` (depends on the machine); ``unknown`` in stores written before it was kept.
    lengths_s, virtual_completion_s : tuple of float
        Each job's shortest length and its completion on the virtual SRPT machine (for the
        (a, b) fit).
    policies : dict of str -> PolicyOutcome
    """

    family: str
    n: int
    seed: int
    load: float
    offline_status: str
    offline_value_s: float | None
    offline_bound_s: float
    offline_wall_s: float
    lengths_s: tuple[float, ...]
    virtual_completion_s: tuple[float, ...]
    policies: dict[str, PolicyOutcome]
    offline_stopped_by: str = "unknown"

    def to_json(self) -> dict[str, Any]:
        """The outcome as the store keeps it (its payload)."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "policies"}
        out["lengths_s"] = list(self.lengths_s)
        out["virtual_completion_s"] = list(self.virtual_completion_s)
        out["policies"] = {name: p.to_json() for name, p in self.policies.items()}
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> InstanceOutcome:
        """Read :meth:`to_json`'s dict back."""
        fields = {
            f: doc[f] for f in cls.__dataclass_fields__ if f != "policies" and f in doc
        }  # fields added later keep their defaults in older stores
        fields["lengths_s"] = tuple(doc["lengths_s"])
        fields["virtual_completion_s"] = tuple(doc["virtual_completion_s"])
        policies = {name: PolicyOutcome.from_json(p) for name, p in doc["policies"].items()}
        return cls(**fields, policies=policies)


def instance_ratio(value: float, upper: float | None, lower: float, proven: bool) -> RatioEstimate:
    """ALG/OPT when OPT is proven, else the interval ALG/UB .. ALG/LB.

    Parameters
    ----------
    value : float
        The policy's objective.
    upper : float or None
        Best verified offline value (an upper bound on OPT).
    lower : float
        Proven lower bound on OPT.
    proven : bool

    Returns
    -------
    RatioEstimate

    Examples
    --------
    >>> instance_ratio(12, 10, 8, False)
    RatioEstimate(ratio=None, ratio_lo=1.2, ratio_hi=1.5, proven=False)
    """
    if proven and upper:
        r = value / upper
        return RatioEstimate(ratio=r, ratio_lo=r, ratio_hi=r, proven=True)
    lo = value / upper if upper else math.nan
    hi = value / lower if lower > 0 else math.inf
    return RatioEstimate(ratio=None, ratio_lo=lo, ratio_hi=hi, proven=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class ABFit:
    """Constants with C_j <= a * C~_j + b * p_j for every job.

    Attributes
    ----------
    a, b : float
        The pair minimising a + b.
    a_when_b0 : float
        The smallest a with b = 0.
    b_when_a1 : float
        The smallest b with a = 1.
    """

    a: float
    b: float
    a_when_b0: float
    b_when_a1: float

    def to_json(self) -> dict[str, float]:
        """The fit as a JSON-ready dict."""
        return asdict(self)


def fit_ab(
    completion: Sequence[float], virtual: Sequence[float], length: Sequence[float]
) -> ABFit:
    """Smallest constants with C_j <= a * C~_j + b * p_j for every job .

    There is a trade-off curve of such pairs; this returns the pair minimising a + b (a
    two-variable LP), the smallest a with b = 0, and the smallest b with a = 1.

    Parameters
    ----------
    completion : sequence of float
        C_j of the online schedule.
    virtual : sequence of float
        C~_j, completion on the virtual single machine.
    length : sequence of float
        p_j.

    Returns
    -------
    ABFit

    Examples
    --------
    >>> fit_ab([4, 6], [2, 5], [2, 1]).a_when_b0
    2.0
    """
    from scipy.optimize import linprog

    c = np.asarray(completion, dtype=float)
    v = np.asarray(virtual, dtype=float)
    p = np.asarray(length, dtype=float)
    res = linprog(
        [1.0, 1.0],
        A_ub=-np.column_stack([v, p]),
        b_ub=-c,
        bounds=[(0, None), (0, None)],
        method="highs",
    )
    a, b = (float(x) for x in res.x) if res.success else (math.nan, math.nan)
    return ABFit(
        a=a,
        b=b,
        a_when_b0=float(np.max(c / v)),
        b_when_a1=float(max(0.0, np.max((c - v) / p))),
    )


@dataclass(frozen=True, kw_only=True)
class PolicySummary:
    """One policy's ratios over a sweep.

    Attributes
    ----------
    instances : int
    proven : int
        Instances whose optimum is proven.
    ratio_mean, ratio_p95, ratio_max : float or None
        Over the proven instances (None when there are none).
    unproven_intervals : tuple of (float, float)
        ``(ALG/UB, ALG/LB)`` of every instance whose optimum is not proven.
    ratio_hi_max : float or None
        The largest upper end over all instances (the pessimistic worst ratio).
    fit : ABFit or None
        The (a, b) fit over every job of every instance.
    """

    instances: int
    proven: int
    ratio_mean: float | None
    ratio_p95: float | None
    ratio_max: float | None
    unproven_intervals: tuple[tuple[float, float], ...]
    ratio_hi_max: float | None
    fit: ABFit | None

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict."""
        out = asdict(self)
        out["unproven_intervals"] = [list(p) for p in self.unproven_intervals]
        out["fit"] = None if self.fit is None else self.fit.to_json()
        return out


def summarise(
    outcomes: Sequence[InstanceOutcome], policies: Sequence[str]
) -> dict[str, PolicySummary]:
    """Per policy: ratio distribution over proven instances, intervals for the rest, (a, b).

    Parameters
    ----------
    outcomes : sequence of InstanceOutcome
        From :func:`~asrpt_opt.analysis.sweep.run_sweep`.
    policies : sequence of str

    Returns
    -------
    dict of policy -> PolicySummary
    """
    out: dict[str, PolicySummary] = {}
    for name in policies:
        rows = [o.policies[name].estimate for o in outcomes]
        proven = np.array([r.ratio for r in rows if r.proven], dtype=float)
        lo = np.array([r.ratio_lo for r in rows], dtype=float)
        hi = np.array([r.ratio_hi for r in rows], dtype=float)
        comp = [c for o in outcomes for c in o.policies[name].completion_s]
        virt = [c for o in outcomes for c in o.virtual_completion_s]
        lens = [c for o in outcomes for c in o.lengths_s]
        out[name] = PolicySummary(
            instances=len(rows),
            proven=int(proven.size),
            ratio_mean=float(proven.mean()) if proven.size else None,
            ratio_p95=float(np.percentile(proven, 95)) if proven.size else None,
            ratio_max=float(proven.max()) if proven.size else None,
            unproven_intervals=tuple(
                (float(a), float(b)) for a, b, r in zip(lo, hi, rows, strict=True) if not r.proven
            ),
            ratio_hi_max=float(hi.max()) if hi.size else None,
            fit=fit_ab(comp, virt, lens) if comp else None,
        )
    return out
