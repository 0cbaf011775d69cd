"""Speed models: how fast a job progresses on the GPUs it holds.

* :mod:`~asrpt_opt.speed.base`: the :class:`SpeedModel` protocol, abstract jobs
  (:class:`AbstractSpeed`) and the pooled cluster of the offline models (:class:`PooledSpeed`);
* :mod:`~asrpt_opt.speed.cluster`: DNN jobs at their worker graph's iteration time
  (:class:`~asrpt_opt.speed.cluster.ClusterSpeed`);
* :mod:`~asrpt_opt.speed.measured`: Pollux's measured step times
  (:class:`~asrpt_opt.speed.measured.PolluxSpeed`);
* :mod:`~asrpt_opt.speed.default`: the one function that picks an instance's speed model.

``ClusterSpeed`` and ``PolluxSpeed`` are imported on first access, so that importing this
package does not load networkx, numba or scipy.
"""

from __future__ import annotations

from typing import Any

from asrpt_opt.speed.base import AbstractSpeed, PooledSpeed, SpeedModel
from asrpt_opt.speed.default import (
    CLUSTER_MODELS,
    SPEED_MODELS,
    default_speed,
    make_speed,
    offline_speed,
)

__all__ = [
    "CLUSTER_MODELS",
    "SPEED_MODELS",
    "AbstractSpeed",
    "ClusterSpeed",
    "PolluxSpeed",
    "PooledSpeed",
    "SpeedModel",
    "default_speed",
    "make_speed",
    "offline_speed",
]

_LAZY = {"ClusterSpeed": "asrpt_opt.speed.cluster", "PolluxSpeed": "asrpt_opt.speed.measured"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
