"""The compiled core gives the Python event loop's schedules, and runs only what it knows."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from asrpt_opt.errors import UsageError
from asrpt_opt.model import instance_from_dict
from asrpt_opt.policies import SRTF, PreferentialRoundRobin
from asrpt_opt.prediction import NoisyOraclePredictor
from asrpt_opt.sim import simulate
from asrpt_opt.sim.compiled import COMPILED_FROM, CoreRule
from asrpt_opt.traces.synthetic import philly_like
from tests.model.test_io import DESIGN_EXAMPLE

RULE_PARAMS = [
    ("fifo", {}),
    ("fifo", {"backfill": False}),
    ("sjf", {}),
    ("qssf", {}),
    ("srtf", {}),
    ("srpt", {"backfill": False}),
    ("srsf", {}),
    ("2d-las", {}),
    ("2d-las", {"thresholds_gpu_s": (40.0, 300.0)}),
    ("a-srpt", {}),
    ("a-srpt", {"adaptive": "additive", "finished_order": "virtual"}),
    ("a-srpt", {"adaptive": "none", "backfill": False}),
    ("serverfilling-srpt", {}),
    ("prr", {}),
    ("prr", {"trust": 1.0, "quantum_s": 150.0}),
]


def _random_instance(seed: int):
    rng = np.random.default_rng(seed)
    servers = tuple(int(x) for x in rng.choice([1, 2, 4, 8], size=int(rng.integers(1, 10))))
    load = float(rng.choice([0.5, 0.9, 1.3]))
    inst = philly_like(int(rng.integers(5, 120)), servers=servers, load=load, seed=seed)
    if seed % 2:
        # Jobs out of release order: ties by index and by arrival then differ.
        jobs = list(inst.jobs)
        rng.shuffle(jobs)
        inst = replace(inst, jobs=tuple(jobs))
    return inst


def _both(inst, policy, **kw):
    noisy = kw.pop("noisy", False)

    def run(engine):
        predictor = NoisyOraclePredictor(mu=3, seed=7) if noisy else None
        return simulate(inst, policy, engine=engine, predictor=predictor, **kw)

    return run("python"), run("compiled")


def _same(a, b):
    assert a.schedule == b.schedule  # every segment's times and GPUs, bit for bit
    np.testing.assert_array_equal(a.predicted_work, b.predicted_work)
    assert a.metrics == b.metrics


@pytest.mark.parametrize(("policy", "params"), RULE_PARAMS)
@pytest.mark.parametrize("seed", range(3))
def test_compiled_schedules_equal_pythons(policy, params, seed):
    inst = _random_instance(seed)
    overhead = 0.5 * (seed % 2)
    a, b = _both(inst, policy, restore_overhead_s=overhead, noisy=seed == 2, **params)
    _same(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 60))
def test_compiled_schedules_equal_pythons_many(seed):
    inst = _random_instance(seed)
    for policy, params in RULE_PARAMS:
        for overhead in (0.0, 0.7):
            _same(*_both(inst, policy, restore_overhead_s=overhead, noisy=seed % 3 == 0, **params))


def test_compiled_preempts_and_raises_predictions():
    # The comparison above must cover the paths that matter: preemptions, resumed jobs and
    # A-SRPT's raised predictions (an underestimating predictor) all happen here.
    inst = philly_like(150, servers=(4, 4), load=1.3, seed=3)
    a, b = _both(inst, "a-srpt", restore_overhead_s=0.5, noisy=True)
    _same(a, b)
    assert b.metrics.preemptions > 0
    assert np.any(b.predicted_work < [inst_job.duration_s for inst_job in inst.jobs])


def test_auto_compiles_from_the_threshold_on(monkeypatch):
    import asrpt_opt.sim.compiled as compiled
    import asrpt_opt.sim.engine as engine

    calls = []
    real = engine.run_compiled

    def recording(*args):
        calls.append(args[0].instance.n_jobs)
        return real(*args)

    monkeypatch.setattr(engine, "run_compiled", recording)
    inst = _random_instance(0)
    assert inst.n_jobs < COMPILED_FROM
    simulate(inst, "fifo")
    assert calls == []  # below the threshold, auto stays in Python (no numba import)
    monkeypatch.setattr(compiled, "COMPILED_FROM", inst.n_jobs)
    auto = simulate(inst, "fifo")
    assert calls == [inst.n_jobs]
    assert auto.schedule == simulate(inst, "fifo", engine="python").schedule
    simulate(inst, "fifo", refit_every=3)  # a refitted predictor: Python, whatever the size
    assert calls == [inst.n_jobs]


def test_compiled_refuses_what_it_cannot_run():
    inst = _random_instance(1)

    class MySRTF(SRTF):
        def waiting_key(self, job, view):
            return -super().waiting_key(job, view)

    assert MySRTF().core_rule() is None  # a subclass may change any hook

    class MyPRR(PreferentialRoundRobin):
        pass

    assert MyPRR().core_rule() is None
    with pytest.raises(UsageError, match="no compiled rule"):
        simulate(inst, MySRTF(), engine="compiled")
    with pytest.raises(UsageError, match="no compiled rule"):
        simulate(inst, "tiresias-2d-las", engine="compiled")
    with pytest.raises(UsageError, match="no compiled rule"):
        simulate(inst, "fifo", engine="compiled", max_placement_slowdown=2.0)
    with pytest.raises(UsageError, match="refitted"):
        simulate(inst, "fifo", engine="compiled", refit_every=5)
    with pytest.raises(UsageError, match="abstract jobs"):
        simulate(instance_from_dict(DESIGN_EXAMPLE), "fifo", engine="compiled")
    with pytest.raises(UsageError, match="engine must be one of"):
        simulate(inst, "fifo", engine="fast")
    with pytest.raises(UsageError, match="no rule"):
        CoreRule(rule="lottery")
    # A subclass that is not compiled still simulates, in Python.
    assert simulate(inst, MySRTF(), engine="auto").metrics.n_jobs == inst.n_jobs


@pytest.mark.slow
def test_cold_cache_compiles_once_with_a_notice(tmp_path):
    # An empty numba cache: the first compiled run says it is compiling, gives the same
    # answer, and a second process loads the cache silently.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    code = (
        "import logging, sys; logging.basicConfig(level=25, stream=sys.stderr);"
        "from asrpt_opt.traces.synthetic import philly_like;"
        "from asrpt_opt.sim import simulate;"
        "inst = philly_like(300, servers=(8, 8), load=0.9, seed=1);"
        "print(simulate(inst, 'srtf', engine='compiled').metrics.mean_jct_s)"
    )
    cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    assert "compiling the simulator's core" in cold.stderr
    assert "the simulator's core compiled in" in cold.stderr
    assert "compiled in" not in warm.stderr
    inst = philly_like(300, servers=(8, 8), load=0.9, seed=1)
    expected = simulate(inst, "srtf", engine="python").metrics.mean_jct_s
    assert float(cold.stdout) == float(warm.stdout) == expected


@pytest.mark.parametrize("policy", ["srtf", "serverfilling-srpt", "prr"])
def test_one_huge_server_allocates_nothing_per_gpu(policy):
    # Memory grows with jobs and servers: a server of 10**8 GPUs (800 MB per int64 array)
    # gives the Python loop's schedule, and what Python allocates around the core stays
    # small (tracemalloc sees numpy's arrays, not numba's own: the kernel sizes those by
    # jobs and servers, see _core.run_core).
    import tracemalloc

    from asrpt_opt.model import Cluster, Instance, Job

    jobs = tuple(
        Job(id=str(k), release_s=float(k), gpus=1 + k % 3, duration_s=5.0 + k % 4)
        for k in range(30)
    )
    inst = Instance(name="huge", cluster=Cluster(servers=(10**8,)), jobs=jobs)
    expected = simulate(inst, policy, engine="python").schedule
    simulate(inst, policy, engine="compiled")  # compiled and warm before measuring
    tracemalloc.start()
    try:
        got = simulate(inst, policy, engine="compiled").schedule
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected
    assert peak < 50_000_000
