"""Training jobs: abstract jobs (a duration) and DNN jobs (a model and a parallel plan)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from asrpt_opt.errors import InstanceError
from asrpt_opt.model import _checks

__all__ = ["Job", "Parallelism", "shared_features"]

_FEATURE_TYPES = (str, int, float, bool)
_PLAIN_NUMBERS = frozenset({int, float})
_MAPPING_TYPES = frozenset({dict, MappingProxyType})

# Feature mappings are read-only, so jobs with equal features can share one (a flyweight):
# traces repeat a few users, clusters and statuses over millions of jobs, and one dict per job
# would dominate an imported instance's memory.
_SHARED: dict[tuple[tuple[str, type, Any], ...], MappingProxyType[str, Any]] = {}
_SHARED_MAX = 1 << 16


def shared_features(features: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of ``features``, the same object for equal features.

    Parameters
    ----------
    features : mapping
        Names to strings, numbers or booleans (not checked here).

    Returns
    -------
    mapping
        A read-only mapping; equal inputs (same keys, values and value types) give the same
        object while the cache holds it.
    """
    try:
        key = tuple((k, type(v), v) for k, v in features.items())
        hit = _SHARED.get(key)
    except TypeError:  # an unhashable value: Job's check reports it
        return MappingProxyType(dict(features))
    if hit is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        hit = _SHARED[key] = MappingProxyType(dict(features))
    return hit


_NO_FEATURES = shared_features({})


@dataclass(frozen=True, kw_only=True, slots=True)
class Parallelism:
    """A DNN job's parallel configuration; it uses ``dp * pp * tp`` GPUs.

    Parameters
    ----------
    dp, pp, tp : int
        Data-, pipeline- and tensor-parallel degrees (each >= 1).
    """

    dp: int = 1
    pp: int = 1
    tp: int = 1

    def __post_init__(self) -> None:
        for name in ("dp", "pp", "tp"):
            object.__setattr__(self, name, _checks.integer(getattr(self, name), name))

    @property
    def workers(self) -> int:
        """Number of GPU workers, ``dp * pp * tp``."""
        return self.dp * self.pp * self.tp


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """One training job.

    A job is *abstract* when it has ``duration_s`` (its length on GPUs of one server) and a
    *DNN job* when it has ``model``, ``parallelism`` and ``iterations``; exactly one of the two
    descriptions must be given.

    Parameters
    ----------
    id : str
        Unique name within an instance.
    release_s : float
        Arrival time, >= 0.
    gpus : int
        Width: GPUs the job's workers occupy together (gang), >= 1.
    weight : float
        Weight in the objective sum w_j C_j, > 0.
    duration_s : float, optional
        Abstract job: processing time when its GPUs sit on one server.
    spread_slowdown : float
        Abstract job: its duration is multiplied by this (>= 1) while its GPUs span servers.
    model : str, optional
        DNN job: name of the DNN (a bundled layer profile).
    parallelism : Parallelism, optional
        DNN job: the data/pipeline/tensor-parallel plan; ``parallelism.workers == gpus``.
    iterations : int, optional
        DNN job: number of training iterations N_j.
    features : mapping, optional
        Descriptive features for prediction (user, dataset, batch size, recurrence key...).

    Examples
    --------
    >>> Job(id="a", release_s=0, gpus=2, duration_s=6).is_abstract
    True
    """

    id: str
    release_s: float
    gpus: int
    weight: float = 1.0
    duration_s: float | None = None
    spread_slowdown: float = 1.0
    model: str | None = None
    parallelism: Parallelism | None = None
    iterations: int | None = None
    features: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self._plain_abstract():
            # The common case, abstract jobs of plain numbers, checked inline: loading a
            # 20,000-job file spent most of its time in the general checks below.
            set_(self, "release_s", float(self.release_s))
            # Weights and slowdowns are mostly 1: one float object for all (a million jobs).
            set_(self, "weight", 1.0 if self.weight == 1 else float(self.weight))
            set_(self, "duration_s", float(self.duration_s))  # type: ignore[arg-type]
            set_(
                self,
                "spread_slowdown",
                1.0 if self.spread_slowdown == 1 else float(self.spread_slowdown),
            )
            set_(self, "features", _NO_FEATURES)
            return
        _checks.string(self.id, "id")
        set_(
            self,
            "release_s",
            _checks.number(self.release_s, "release_s", minimum=0, maximum=_checks.MAX_TIME_S),
        )
        set_(self, "gpus", _checks.integer(self.gpus, "gpus"))
        set_(self, "weight", _checks.number(self.weight, "weight", minimum=0, strict=True))
        set_(
            self,
            "spread_slowdown",
            _checks.number(self.spread_slowdown, "spread_slowdown", minimum=1),
        )
        dnn_given = [
            k for k in ("model", "parallelism", "iterations") if getattr(self, k) is not None
        ]
        if self.duration_s is not None:
            if dnn_given:
                raise InstanceError(
                    f"a job has either duration_s or a DNN description, not both ({dnn_given[0]})",
                    path=dnn_given[0],
                )
            set_(
                self,
                "duration_s",
                _checks.number(
                    self.duration_s,
                    "duration_s",
                    minimum=0,
                    strict=True,
                    maximum=_checks.MAX_TIME_S,
                ),
            )
        else:
            for key in ("model", "parallelism", "iterations"):
                if getattr(self, key) is None:
                    missing = "duration_s" if not dnn_given else key
                    raise InstanceError(
                        "is required (a job needs duration_s, or model, parallelism and "
                        "iterations)",
                        path=missing,
                    )
            _checks.string(self.model, "model")
            from asrpt_opt.model.dnn import MODELS

            if self.model not in MODELS:
                raise InstanceError(
                    f"unknown model {self.model!r} (known: {', '.join(MODELS)})", path="model"
                )
            if not isinstance(self.parallelism, Parallelism):
                raise InstanceError("must be a Parallelism", path="parallelism")
            set_(
                self,
                "iterations",
                _checks.integer(self.iterations, "iterations", maximum=10**12),
            )
            if self.parallelism.workers != self.gpus:
                p = self.parallelism
                raise InstanceError(
                    f"dp*pp*tp = {p.dp}*{p.pp}*{p.tp} = {p.workers} differs from "
                    f"gpus = {self.gpus}",
                    path="parallelism",
                )
            if self.spread_slowdown != 1.0:
                raise InstanceError(
                    "applies to abstract jobs only; a DNN job's slowdown comes from its placement",
                    path="spread_slowdown",
                )
        feats = self.features
        if not isinstance(feats, MappingProxyType):
            feats = _checks.mapping(dict(feats), "features")
        for key, value in feats.items():
            if not isinstance(value, _FEATURE_TYPES):
                raise InstanceError("must be a string, number or boolean", path=f"features.{key}")
            _checks.plain_value(value, f"features.{key}")
        set_(self, "features", shared_features(feats))

    def _plain_abstract(self) -> bool:
        # The same rules as the general checks, for ints and floats only (bools, big ints,
        # NaN and infinities fail a comparison here and take the general path, which names
        # the field); an empty features mapping.
        r, w, d, s = self.release_s, self.weight, self.duration_s, self.spread_slowdown
        plain = _PLAIN_NUMBERS
        return (
            type(self.id) is str
            and self.id != ""
            and self.id.isascii()
            and type(self.gpus) is int
            and self.gpus >= 1
            and type(r) in plain
            and 0 <= r <= _checks.MAX_TIME_S
            and type(w) in plain
            and 0 < w < math.inf
            and type(d) in plain
            and 0 < d <= _checks.MAX_TIME_S  # type: ignore[operator]
            and type(s) in plain
            and 1 <= s < math.inf
            and self.model is None
            and self.parallelism is None
            and self.iterations is None
            and type(self.features) in _MAPPING_TYPES
            and not self.features
        )

    @property
    def is_abstract(self) -> bool:
        """True for an abstract job (it has ``duration_s``)."""
        return self.duration_s is not None
