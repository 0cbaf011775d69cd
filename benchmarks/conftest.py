"""Benchmarks run with ``pytest benchmarks`` (pytest-benchmark); they are not unit tests."""

from __future__ import annotations

from functools import cache

from asrpt_opt.model import Instance
from asrpt_opt.traces import philly_like


@cache
def philly(n_jobs: int, n_servers: int = 128, load: float = 0.9) -> Instance:
    """A Philly-like instance on ``n_servers`` servers of 8 GPUs, seed 1 (cached)."""
    return philly_like(n_jobs, servers=(8,) * n_servers, load=load, seed=1)
