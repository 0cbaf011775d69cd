"""Predictor cost on a large history (figures in README).

Run: ``pytest benchmarks/test_bench_prediction.py --benchmark-columns=min,rounds``
"""

from __future__ import annotations

from asrpt_opt.prediction import RandomForestIterations
from asrpt_opt.traces import recurring_jobs


def test_random_forest_fit_and_predict_100k(benchmark):
    inst = recurring_jobs(110_000, servers=(8,) * 128, n_groups=2000, seed=0)
    history, queries = inst.jobs[:100_000], inst.jobs[100_000:]

    def run():
        rf = RandomForestIterations(random_state=0, n_jobs=2)  # the defaults, on both cores
        return rf.fit(history).predict(queries)

    out = benchmark.pedantic(run, rounds=1, iterations=1)
    assert out.shape == (10_000,)
