"""Analysis of schedules: metrics, plots and (later) competitive ratios."""

from asrpt_opt.analysis.metrics import Metrics, compute_metrics

__all__ = ["Metrics", "compute_metrics"]
