"""The single-machine relaxation at a million jobs, against ``np.sort`` in the same run.

``pytest benchmarks/test_bench_relaxation.py -s``. Goals (issue "speed close to the limit"):
``srpt()`` within 3x of sorting the same number of floats, ``lower_bounds()`` on 1,000,000
jobs under a second. Kernels are compiled (or loaded from numba's cache) before timing.
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np

from asrpt_opt.model import Instance
from asrpt_opt.relaxation import lower_bounds, srpt
from asrpt_opt.relaxation.srpt import COMPILED_FROM, preemptive_wspt
from asrpt_opt.traces import philly_like

N = 1_000_000


@cache
def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    release = np.cumsum(rng.exponential(1.0, N))
    size = rng.exponential(0.9, N)
    warm = COMPILED_FROM + 1
    srpt(release[:warm], size[:warm])
    preemptive_wspt(release[:warm], size[:warm], np.ones(warm))
    return release, size


@cache
def sort_s() -> float:
    values = np.random.default_rng(1).uniform(0, 1, N)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        np.sort(values)
        best = min(best, time.perf_counter() - t0)
    return best


def test_srpt_against_sorting(benchmark):
    release, size = inputs()
    result = benchmark.pedantic(srpt, args=(release, size), rounds=3, iterations=1)
    ratio = benchmark.stats.stats.min / sort_s()
    benchmark.extra_info["ratio_to_np_sort"] = ratio
    print(f"\nsrpt, {N:,} jobs: {benchmark.stats.stats.min:.3f} s, {ratio:.1f}x np.sort")
    assert np.all(result.completion_s >= release + size - 1e-6)


@cache
def million() -> Instance:
    return philly_like(N, servers=(8,) * 128, load=0.9, seed=1)


def test_lower_bounds_one_million_jobs(benchmark):
    inst = million()
    inputs()  # kernels compiled
    result = benchmark.pedantic(lower_bounds, args=(inst,), rounds=3, iterations=1)
    ratio = benchmark.stats.stats.min / sort_s()
    benchmark.extra_info["ratio_to_np_sort"] = ratio
    print(f"\nlower_bounds, {N:,} jobs: {benchmark.stats.stats.min:.3f} s, {ratio:.1f}x np.sort")
    assert result.lower_bound_s > 0
