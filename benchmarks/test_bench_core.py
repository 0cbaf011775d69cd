"""SRPT relaxation and simulator throughput (figures recorded in README).

Run: ``pytest benchmarks --benchmark-columns=min,mean,max,rounds``
"""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.policies import simulate
from asrpt_opt.policies.registry import make_policy
from asrpt_opt.relaxation import srpt
from asrpt_opt.sim.compiled import warm_up
from benchmarks.conftest import philly


def test_srpt_one_million_jobs(benchmark):
    rng = np.random.default_rng(0)
    n = 1_000_000
    release = np.cumsum(rng.exponential(1.0, n))
    size = rng.exponential(0.9, n)
    result = benchmark.pedantic(srpt, args=(release, size), rounds=3, iterations=1)
    assert result.completion_s.shape == (n,)
    assert np.all(result.completion_s >= release + size - 1e-6)


@pytest.mark.parametrize("n_jobs", [10_000, 30_000, 100_000])
@pytest.mark.parametrize("policy", ["fifo", "a-srpt"])
def test_simulate_scaling_short_queue(benchmark, policy, n_jobs):
    # Offered load 0.7: the queue stays short, so cost should grow as n log n.
    warm_up(make_policy(policy))  # the compiled loop (from 50,000 jobs) compiles first
    inst = philly(n_jobs, load=0.7)
    result = benchmark.pedantic(simulate, args=(inst, policy), rounds=1, iterations=1)
    assert result.metrics.n_jobs == n_jobs


@pytest.mark.parametrize("policy", ["fifo", "a-srpt"])
def test_simulate_100k_jobs_1024_gpus_heavy_load(benchmark, policy):
    # The headline case: offered load 0.9, long queues in bursts.
    warm_up(make_policy(policy))
    inst = philly(100_000, load=0.9)
    result = benchmark.pedantic(simulate, args=(inst, policy), rounds=1, iterations=1)
    assert result.metrics.n_jobs == 100_000


@pytest.mark.parametrize("policy", ["sjf", "srtf", "srsf", "2d-las"])
def test_simulate_baselines_10k(benchmark, policy):
    inst = philly(10_000)
    result = benchmark.pedantic(simulate, args=(inst, policy), rounds=1, iterations=1)
    assert result.metrics.n_jobs == 10_000
