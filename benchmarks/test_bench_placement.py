"""Placement: the exact ILP at scale and the heuristics against proven optima.

Run: ``pytest benchmarks/test_bench_placement.py --benchmark-columns=min,rounds -s``
(``ASRPT_PLACEMENT_CASES=500`` for the full random study; default 100 cases, about 6 min).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from asrpt_opt.model.dnn import load_model
from asrpt_opt.model.job import Parallelism
from asrpt_opt.model.workers import worker_graph
from asrpt_opt.placement import place
from benchmarks.placement_cases import random_case

LARGE = [
    ("resnet50", (32, 2, 1), [8, 4] * 8),
    ("resnet50", (64, 1, 1), [4] * 16),
    ("gpt3-6.7b", (4, 4, 4), [4] * 16),
    ("gpt2-1.5b", (16, 4, 1), [8] * 8 + [4] * 8),
]


@pytest.mark.parametrize(("model", "dims", "free"), LARGE)
def test_ilp_64_workers_on_16_servers(benchmark, model, dims, free):
    wg = worker_graph(load_model(model), Parallelism(dp=dims[0], pp=dims[1], tp=dims[2]))
    res = benchmark.pedantic(
        place,
        args=(wg, free),
        kwargs={"method": "ilp", "intra_gbps": 300, "inter_gbps": 12.5, "time_limit_s": 60},
        rounds=1,
        iterations=1,
    )
    benchmark.extra_info["proven_optimal"] = res.optimal
    heuristic = place(wg, free, method="mincut", intra_gbps=300, inter_gbps=12.5)
    assert res.cross_server_bytes <= heuristic.cross_server_bytes + 1e-6


def test_heuristics_against_proven_optima(benchmark):
    n = int(os.environ.get("ASRPT_PLACEMENT_CASES", "100"))

    def study():
        rows = []
        for seed in range(n):
            wg, free = random_case(seed)
            ilp = place(wg, free, method="ilp", intra_gbps=300, inter_gbps=12.5, time_limit_s=30)
            row = {"optimal": ilp.optimal, "cut": ilp.cross_server_bytes, "ilp_s": ilp.wall_s}
            for m in ("mincut", "greedy", "consolidate"):
                res = place(wg, free, method=m, intra_gbps=300, inter_gbps=12.5)
                row[m] = (res.cross_server_bytes, res.wall_s)
            rows.append(row)
        return rows

    rows = benchmark.pedantic(study, rounds=1, iterations=1)
    proven = [r for r in rows if r["optimal"]]
    for m in ("mincut", "greedy", "consolidate"):
        within = np.mean([r[m][0] <= 1.05 * r["cut"] + 1e-6 for r in proven])
        speedup = np.median([r["ilp_s"] / r[m][1] for r in proven])
        benchmark.extra_info[f"{m}_within_5pct"] = float(within)
        benchmark.extra_info[f"{m}_median_speedup"] = float(speedup)
        print(
            f"{m}: within 5% of the optimum on {within:.1%} of {len(proven)} proven cases, "
            f"median speed-up over the ILP {speedup:.0f}x"
        )
    assert len(proven) >= 0.8 * n
