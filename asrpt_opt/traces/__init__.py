"""Workloads: the bundled Gavel/Philly trace and seeded synthetic generators."""

from asrpt_opt.traces.gavel import GavelJob, gavel_instance, gavel_throughputs, read_gavel_trace
from asrpt_opt.traces.pollux import (
    GPU_HOUR_BUCKETS,
    PolluxJob,
    pollux_instance,
    read_pollux_workload,
)
from asrpt_opt.traces.synthetic import PHILLY_WIDTHS, philly_like, recurring_jobs

__all__ = [
    "GPU_HOUR_BUCKETS",
    "PHILLY_WIDTHS",
    "GavelJob",
    "PolluxJob",
    "gavel_instance",
    "gavel_throughputs",
    "philly_like",
    "pollux_instance",
    "read_gavel_trace",
    "read_pollux_workload",
    "recurring_jobs",
]
