"""Placement: which free GPUs a job's workers use, and what it costs."""

from asrpt_opt.placement.consolidate import consolidate
from asrpt_opt.placement.methods import METHODS, PlacementResult, counts_of, place

__all__ = ["METHODS", "PlacementResult", "consolidate", "counts_of", "place"]
