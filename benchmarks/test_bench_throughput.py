"""Event-loop throughput at scale, compiled core against the Python loop (issue: speed).

``pytest benchmarks/test_bench_throughput.py -s``. The loop is timed with its schedule
records (``Simulator.run``), not the validator, metrics or instance generation; the core is
compiled before any timing. For each policy and offered load, 100,000 Philly-like jobs on
1,024 GPUs run compiled (``ASRPT_THROUGHPUT_JOBS`` changes the size) and 10,000 of them run
both compiled and in Python (best of three), which gives the speed-up measured in the same
run; the test asserts the two schedules are identical and the compiled loop at least 2x
faster (at load 0.7 building the records, the same work in both, is most of it).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from asrpt_opt.policies import PRIMARY
from asrpt_opt.policies.registry import make_policy
from asrpt_opt.prediction import OraclePredictor
from asrpt_opt.sim.compiled import warm_up
from asrpt_opt.sim.engine import Simulator
from asrpt_opt.sim.placer import Placer
from asrpt_opt.speed.default import default_speed
from benchmarks.conftest import philly

N_JOBS = int(os.environ.get("ASRPT_THROUGHPUT_JOBS", "100000"))


def _loop(inst, policy: str, engine: str) -> tuple[float, object]:
    speed = default_speed(inst)
    predictor = OraclePredictor()
    predictor.fit([])
    sim = Simulator(
        inst,
        make_policy(policy),
        placer=Placer(inst, "consolidate", speed),
        speed=speed,
        predictor=predictor,
        restore_overhead_s=0.0,
        rng=np.random.default_rng(0),
        engine=engine,
    )
    t0 = time.perf_counter()
    schedule = sim.run()
    return time.perf_counter() - t0, schedule


@pytest.mark.parametrize("load", [0.7, 0.9])
@pytest.mark.parametrize("policy", PRIMARY)
def test_loop_throughput(benchmark, policy, load):
    warm_up(make_policy(policy))
    inst = philly(N_JOBS, load=load)
    result: dict[str, float] = {}

    def run() -> None:
        result["s"] = _loop(inst, policy, "compiled")[0]

    benchmark.pedantic(run, rounds=1, iterations=1)
    small = philly(10_000, load=load)
    compiled = [_loop(small, policy, "compiled") for _ in range(3)]
    python = [_loop(small, policy, "python") for _ in range(3)]
    assert compiled[0][1] == python[0][1]
    compiled_s = min(s for s, _ in compiled)
    python_s = min(s for s, _ in python)
    rate = N_JOBS / result["s"]
    speedup = python_s / compiled_s
    benchmark.extra_info.update(jobs_per_s=rate, speedup_10k=speedup)
    print(f"\n{policy} load {load}: {rate:,.0f} jobs/s; 10,000 jobs {speedup:.1f}x Python", end="")
    assert speedup >= 2
