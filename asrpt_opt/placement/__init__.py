"""Placement: which free GPUs a job's workers use."""

from asrpt_opt.placement.consolidate import consolidate

__all__ = ["consolidate"]
