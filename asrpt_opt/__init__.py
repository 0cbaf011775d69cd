"""asrpt-opt: online scheduling of distributed deep-learning training jobs on GPU clusters.

A-SRPT (Z. Luo, J. Liu, M. Lee, N. B. Shroff, "Prediction-assisted online distributed deep
learning workload scheduling in GPU clusters", IEEE INFOCOM 2025), the single-machine SRPT
relaxation and its lower bounds, a discrete-event simulator with an independent schedule
validator, and the baselines researchers compare against.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from asrpt_opt.errors import (
    AsrptError,
    InstanceError,
    ModelError,
    PolicyError,
    ScheduleError,
    SolverError,
)

if TYPE_CHECKING:
    from asrpt_opt.analysis.replay import replay
    from asrpt_opt.analysis.sweep import ratio_sweep
    from asrpt_opt.datasets import list_examples, load_example
    from asrpt_opt.model import Cluster, Instance, Job, Parallelism, dump_instance, load_instance
    from asrpt_opt.placement import place
    from asrpt_opt.policies import POLICIES, make_policy, simulate, simulate_stream
    from asrpt_opt.relaxation import lower_bounds, srpt
    from asrpt_opt.sim import validate_schedule
    from asrpt_opt.solvers import solve

# The rest of the public names load on first use, so that ``import asrpt_opt`` (and the
# command line, which imports the package first) stays cheap.
_LAZY = {
    "Cluster": "asrpt_opt.model",
    "Instance": "asrpt_opt.model",
    "Job": "asrpt_opt.model",
    "Parallelism": "asrpt_opt.model",
    "dump_instance": "asrpt_opt.model",
    "load_instance": "asrpt_opt.model",
    "POLICIES": "asrpt_opt.policies",
    "make_policy": "asrpt_opt.policies",
    "lower_bounds": "asrpt_opt.relaxation",
    "srpt": "asrpt_opt.relaxation",
    "simulate": "asrpt_opt.policies",
    "simulate_stream": "asrpt_opt.policies",
    "validate_schedule": "asrpt_opt.sim",
    "solve": "asrpt_opt.solvers",
    "place": "asrpt_opt.placement",
    "replay": "asrpt_opt.analysis.replay",
    "ratio_sweep": "asrpt_opt.analysis.sweep",
    "list_examples": "asrpt_opt.datasets",
    "load_example": "asrpt_opt.datasets",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'asrpt_opt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "POLICIES",
    "AsrptError",
    "Cluster",
    "Instance",
    "InstanceError",
    "Job",
    "ModelError",
    "Parallelism",
    "PolicyError",
    "ScheduleError",
    "SolverError",
    "__version__",
    "dump_instance",
    "list_examples",
    "load_example",
    "load_instance",
    "lower_bounds",
    "make_policy",
    "place",
    "ratio_sweep",
    "replay",
    "simulate",
    "simulate_stream",
    "solve",
    "srpt",
    "validate_schedule",
]
