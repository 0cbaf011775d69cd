"""Graph placement inside the simulator: throughput on the DNN-mix workload.

``pytest benchmarks/test_bench_placement_loop.py --benchmark-columns=min,rounds -s``; set
``ASRPT_DNN_MIX_JOBS`` (default 100000) for smaller runs. Each placement method is timed in
the same run as A-SRPT with consolidation, the reference, and the ratio is reported.
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

import pytest

from asrpt_opt.model import Cluster, Instance
from asrpt_opt.policies import simulate
from asrpt_opt.traces.synthetic import dnn_mix

N_JOBS = int(os.environ.get("ASRPT_DNN_MIX_JOBS", "100000"))
CLUSTER = Cluster(servers=(8,) * 128, intra_server_gbps=300.0, inter_server_gbps=25.0)


@cache
def workload() -> Instance:
    inst = dnn_mix(N_JOBS, CLUSTER, load=0.7, seed=0)
    simulate(dnn_mix(200, CLUSTER, load=0.7, seed=1), "a-srpt")  # compile the kernels
    return inst


@cache
def reference_s() -> float:
    t0 = time.perf_counter()
    simulate(workload(), "a-srpt", placement="consolidate")
    return time.perf_counter() - t0


def _timed(benchmark: Any, inst: Instance, method: str) -> tuple[Any, float]:
    # One timed run of A-SRPT with ``method``, its figures recorded beside the benchmark's.
    result = benchmark.pedantic(
        simulate, args=(inst, "a-srpt"), kwargs={"placement": method}, rounds=1, iterations=1
    )
    seconds = benchmark.stats.stats.min
    benchmark.extra_info["jobs_per_s"] = N_JOBS / seconds
    benchmark.extra_info["ratio_to_consolidate"] = seconds / reference_s()
    return result, seconds


@pytest.mark.parametrize("method", ["mincut", "greedy"])
def test_asrpt_with_graph_placement(benchmark, method):
    result, seconds = _timed(benchmark, workload(), method)
    print(
        f"\n{method}: {N_JOBS / seconds:,.0f} jobs/s, "
        f"{seconds / reference_s():.2f}x A-SRPT with consolidate"
    )
    assert result.metrics.n_jobs == N_JOBS


@cache
def tiered_workload(oversubscription: float) -> Instance:
    # The same 1,024 GPUs in 8 pods of 4 racks of 4 servers, 25 GB/s inside a rack.
    cluster = Cluster.tiered(
        servers_per_rack=4,
        racks=32,
        racks_per_pod=4,
        rack_gbps=25.0,
        oversubscription=oversubscription,
    )
    return dnn_mix(N_JOBS, cluster, load=0.7, seed=0)


@pytest.mark.parametrize("oversubscription", [1.0, 3.0])
def test_asrpt_with_graph_placement_on_tiers(benchmark, oversubscription):
    result, seconds = _timed(benchmark, tiered_workload(oversubscription), "mincut")
    print(
        f"\nmincut on 3 tiers, {oversubscription:g}:1: {N_JOBS / seconds:,.0f} jobs/s, "
        f"{seconds / reference_s():.2f}x A-SRPT with consolidate on one tier, "
        f"stability {result.metrics.stability.verdict}"
    )
    assert result.metrics.n_jobs == N_JOBS
