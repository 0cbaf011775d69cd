"""Placement: which free GPUs a job's workers use, and what it costs.

The front door is :func:`~asrpt_opt.placement.methods.place` (a method name from
:data:`~asrpt_opt.placement.methods.METHODS`, or a callable). The numba kernels compile, and
networkx and OR-Tools load, when a method first needs them.
"""

from asrpt_opt.placement.consolidate import consolidate
from asrpt_opt.placement.methods import METHODS, PlacementResult, counts_of, make_method, place

__all__ = ["METHODS", "PlacementResult", "consolidate", "counts_of", "make_method", "place"]
