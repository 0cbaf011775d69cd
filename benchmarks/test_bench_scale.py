"""Simulator throughput for every policy at scale (issue: real workloads at scale).

Run everything: ``pytest benchmarks --benchmark-columns=min,rounds``. Select sizes with
``ASRPT_SCALE_JOBS`` (default ``10000,100000``; add ``1000000`` for the million-job runs,
several minutes each).
"""

from __future__ import annotations

import os

import pytest

from asrpt_opt.policies import PRIMARY, simulate
from asrpt_opt.policies.registry import make_policy
from asrpt_opt.sim.compiled import warm_up
from benchmarks.conftest import philly

SIZES = [int(x) for x in os.environ.get("ASRPT_SCALE_JOBS", "10000,100000").split(",")]


@pytest.mark.parametrize("servers", [128, 1024], ids=["1024gpus", "8192gpus"])
@pytest.mark.parametrize("n_jobs", SIZES)
@pytest.mark.parametrize("policy", PRIMARY)
def test_throughput(benchmark, policy, n_jobs, servers):
    warm_up(make_policy(policy))  # the compiled loop compiles (once) outside the timing
    inst = philly(n_jobs, n_servers=servers, load=0.7)
    result = benchmark.pedantic(simulate, args=(inst, policy), rounds=1, iterations=1)
    benchmark.extra_info["jobs_per_s"] = n_jobs / benchmark.stats.stats.min
    assert result.metrics.n_jobs == n_jobs
