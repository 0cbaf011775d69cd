"""Workloads: the bundled Gavel/Philly trace and seeded synthetic generators."""

from asrpt_opt.traces.gavel import GavelJob, gavel_instance, gavel_throughputs, read_gavel_trace
from asrpt_opt.traces.synthetic import PHILLY_WIDTHS, philly_like

__all__ = [
    "PHILLY_WIDTHS",
    "GavelJob",
    "gavel_instance",
    "gavel_throughputs",
    "philly_like",
    "read_gavel_trace",
]
