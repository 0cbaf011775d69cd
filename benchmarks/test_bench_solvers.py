"""Offline exact models at scale (figures recorded in README).

Run: ``pytest benchmarks/test_bench_solvers.py --benchmark-columns=min,mean,rounds``
"""

from __future__ import annotations

import pytest

from asrpt_opt.analysis.families import make_family_instance
from asrpt_opt.solvers import SolverParams, solve

PARAMS = SolverParams(time_limit_s=60)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("family", ["poisson", "bursty"])
def test_nonpreemptive_20_jobs_on_2x4(benchmark, family, seed):
    # 20 jobs, 2 servers of 4 GPUs, durations 1-10 (the target: median < 10 s).
    inst = make_family_instance(family, 20, seed)
    res = benchmark.pedantic(
        solve, args=(inst,), kwargs={"params": PARAMS}, rounds=1, iterations=1
    )
    assert res.status == "optimal"


@pytest.mark.parametrize("seed", range(3))
def test_unit_grid_preemptive_12_jobs_on_2x4(benchmark, seed):
    inst = make_family_instance("poisson", 12, seed)
    res = benchmark.pedantic(
        solve,
        args=(inst,),
        kwargs={"preemptive": True, "preemption": "grid", "params": PARAMS},
        rounds=1,
        iterations=1,
    )
    assert res.status == "optimal"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", ["poisson", "wide"])
def test_continuous_preemptive_9_jobs_on_2x4(benchmark, family, seed):
    # The exact continuous-time optimum (grid solve, then the event search).
    inst = make_family_instance(family, 9, seed)
    res = benchmark.pedantic(
        solve, args=(inst,), kwargs={"preemptive": True, "params": PARAMS}, rounds=1, iterations=1
    )
    assert res.status == "optimal"
    assert res.model()["time"] == "continuous"
