"""The single-machine relaxation: exact SRPT and the lower bounds built on it."""

from asrpt_opt.relaxation.bounds import LowerBounds, lower_bounds, min_lengths, virtual_sizes
from asrpt_opt.relaxation.srpt import SingleMachineSchedule, preemptive_wspt, srpt

__all__ = [
    "LowerBounds",
    "SingleMachineSchedule",
    "lower_bounds",
    "min_lengths",
    "preemptive_wspt",
    "srpt",
    "virtual_sizes",
]
