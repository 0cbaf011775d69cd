"""asrpt-opt: online scheduling of distributed deep-learning training jobs on GPU clusters.

A-SRPT (Z. Luo, J. Liu, M. Lee, N. B. Shroff, "Prediction-assisted online distributed deep
learning workload scheduling in GPU clusters", IEEE INFOCOM 2025), the single-machine SRPT
relaxation and its lower bounds, a discrete-event simulator with an independent schedule
validator, and the baselines researchers compare against.
"""

from asrpt_opt.errors import (
    AsrptError,
    InstanceError,
    ModelError,
    PolicyError,
    ScheduleError,
    SolverError,
)
from asrpt_opt.model import Cluster, Instance, Job, Parallelism, dump_instance, load_instance
from asrpt_opt.policies import POLICIES, make_policy
from asrpt_opt.relaxation import lower_bounds, srpt
from asrpt_opt.sim import simulate, validate_schedule

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
    "load_instance",
    "lower_bounds",
    "make_policy",
    "simulate",
    "srpt",
    "validate_schedule",
]
