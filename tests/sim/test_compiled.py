"""The compiled core gives the Python event loop's schedules, and runs only what it knows."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.errors import UsageError
from asrpt_opt.model import Cluster, Instance, Job, instance_from_dict
from asrpt_opt.policies import (
    SRTF,
    PreferentialRoundRobin,
    TiresiasDLAS,
    TiresiasGittins,
    simulate,
)
from asrpt_opt.policies.registry import make_policy
from asrpt_opt.prediction import NoisyOraclePredictor
from asrpt_opt.sim.compiled import COMPILED_FROM, Kernel
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
    ("a-srpt", {"guide": "fill"}),
    ("a-srpt", {"guide": "fill", "adaptive": "additive", "finished_order": "virtual"}),
    ("a-srpt", {"guide": "fill", "adaptive": "none"}),
    ("serverfilling-srpt", {}),
    ("serverfilling-srpt", {"order": "time"}),
    ("serverfilling", {}),
    ("firstfit-srpt", {}),
    ("greedy-srpt", {}),
    ("msf", {}),
    ("msf", {"preemptive": False}),
    ("easy-backfill", {}),
    ("maxweight", {}),
    ("prr", {}),
    ("prr", {"trust": 1.0, "quantum_s": 150.0}),
    ("tiresias-2d-las", {}),
    ("tiresias-2d-las", {"queue_limits_gpu_s": (60, 400, 3000)}),
    ("tiresias-gittins", {}),
    ("gittins", {"delta_s": 200}),
    ("tiresias-gittins", {"service_sample_s": [30, 500, 500, 4000, 90000], "delta_s": 700}),
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
    if seed % 3 == 1:
        # Whole seconds, Tiresias' input: ties in time, attained service and index.
        inst = replace(
            inst,
            jobs=tuple(
                replace(j, release_s=float(int(j.release_s)), duration_s=float(int(j.duration_s)))
                for j in inst.jobs
            ),
        )
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


def _bursty_instance(seed: int) -> Instance:
    # Bursts of simultaneous arrivals on a few servers, whole-second durations (ties): the
    # released jobs alternate between fitting all at once and not.
    rng = np.random.default_rng(seed)
    n_bursts, per_burst = 4, 40
    release = np.repeat(np.arange(n_bursts) * 300.0, per_burst)
    widths = rng.choice([1, 2, 4, 8], size=release.size, p=[0.6, 0.2, 0.1, 0.1])
    duration = np.round(rng.lognormal(5.0, 1.2, release.size)) + 1.0
    jobs = tuple(
        Job(id=f"b{k}", release_s=float(r), gpus=int(g), duration_s=float(d))
        for k, (r, g, d) in enumerate(zip(release, widths, duration, strict=True))
    )
    return Instance(name=f"bursty-{seed}", cluster=Cluster(servers=(8, 8, 4, 8)), jobs=jobs)


def _big_bursts(seed: int) -> Instance:
    # PAI-shaped bursts (benchmarks/test_bench_bursts.py): hundreds of jobs wait while
    # dozens run, so the multiserver-job kernels read their ranking in growing parts.
    rng = np.random.default_rng(seed)
    release = np.repeat([0.0, 60.0], 100)
    widths = rng.choice([1, 2, 4, 8], size=release.size, p=[0.77, 0.11, 0.07, 0.05])
    duration = np.round(rng.lognormal(np.log(720.0), 1.6, release.size), 1) + 1.0
    jobs = tuple(
        Job(id=str(k), release_s=float(r), gpus=int(g), duration_s=float(d))
        for k, (r, g, d) in enumerate(zip(release, widths, duration, strict=True))
    )
    return Instance(name=f"big-bursts-{seed}", cluster=Cluster(servers=(8,) * 8), jobs=jobs)


@pytest.mark.parametrize(
    ("policy", "params"),
    [
        (p, k)
        for p, k in RULE_PARAMS
        if p in ("serverfilling-srpt", "firstfit-srpt", "greedy-srpt")
    ],
)
@pytest.mark.parametrize("seed", range(8))
def test_compiled_schedules_equal_pythons_on_big_bursts(policy, params, seed):
    _same(*_both(_big_bursts(seed), policy, **params))


@pytest.mark.parametrize(("policy", "params"), RULE_PARAMS)
@pytest.mark.parametrize("seed", range(2))
def test_compiled_schedules_equal_pythons_on_long_queues(policy, params, seed):
    # Hundreds of jobs finish while more wait behind them: Tiresias' queues and the ranked
    # rules' waiting jobs are compacted from the entries the started and finished jobs left.
    _same(*_both(_big_bursts(seed), policy, restore_overhead_s=0.5 * seed, **params))


@pytest.mark.parametrize(("policy", "params"), RULE_PARAMS)
@pytest.mark.parametrize("seed", range(2))
def test_compiled_schedules_equal_pythons_on_bursts(policy, params, seed):
    _same(*_both(_bursty_instance(seed), policy, restore_overhead_s=0.5 * seed, **params))


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


@pytest.fixture
def compiled_runs(monkeypatch):
    """The simulations that run in the compiled core, as (policy name, jobs), in order."""
    import asrpt_opt.sim.engine as engine

    calls: list[tuple[str, int]] = []
    real = engine.run_compiled

    def recording(*args):
        calls.append((args[0].policy.name, args[0].instance.n_jobs))
        return real(*args)

    monkeypatch.setattr(engine, "run_compiled", recording)
    return calls


def test_auto_compiles_from_the_threshold_on(monkeypatch, compiled_runs):
    import asrpt_opt.sim.compiled as compiled

    inst = _random_instance(0)
    assert inst.n_jobs < COMPILED_FROM
    simulate(inst, "fifo")
    assert compiled_runs == []  # below the threshold, auto stays in Python (no numba import)
    monkeypatch.setattr(compiled, "COMPILED_FROM", inst.n_jobs)
    auto = simulate(inst, "fifo")
    assert compiled_runs == [("fifo", inst.n_jobs)]
    assert auto.schedule == simulate(inst, "fifo", engine="python").schedule
    simulate(inst, "fifo", refit_every=3)  # a refitted predictor: Python, whatever the size
    assert compiled_runs == [("fifo", inst.n_jobs)]


def test_auto_compiles_gittins_from_its_own_lower_threshold(monkeypatch, compiled_runs):
    import asrpt_opt.sim.compiled as compiled

    assert compiled.compile_threshold(TiresiasGittins()) < COMPILED_FROM
    inst = _random_instance(2)
    monkeypatch.setattr(TiresiasGittins, "compiles_from", inst.n_jobs)
    simulate(inst, "fifo")
    assert compiled_runs == []  # fifo keeps the general threshold
    for name in ("tiresias-gittins", "gittins"):
        auto = simulate(inst, name)
        assert auto.schedule == simulate(inst, name, engine="python").schedule
    assert [name for name, _ in compiled_runs] == ["tiresias-gittins", "gittins"]


@pytest.mark.parametrize(
    "name", ["srtf", "a-srpt", "serverfilling-srpt", "prr", "msf", "easy-backfill"]
)
def test_auto_compiles_the_preemptive_policies_from_their_threshold(
    monkeypatch, compiled_runs, name
):
    inst = _random_instance(3)
    policy = type(make_policy(name))
    assert policy.compiles_from < COMPILED_FROM
    monkeypatch.setattr(policy, "compiles_from", inst.n_jobs + 1)
    simulate(inst, name)
    assert compiled_runs == []
    monkeypatch.setattr(policy, "compiles_from", inst.n_jobs)
    auto = simulate(inst, name)
    assert compiled_runs == [(auto.policy, inst.n_jobs)]
    assert auto.schedule == simulate(inst, name, engine="python").schedule


def test_compiled_refuses_what_it_cannot_run():
    inst = _random_instance(1)

    class MySRTF(SRTF):
        def waiting_key(self, job, view):
            return -super().waiting_key(job, view)

    assert MySRTF().kernel() is None  # a subclass may change any hook

    class MyPRR(PreferentialRoundRobin):
        pass

    assert MyPRR().kernel() is None
    with pytest.raises(UsageError, match="no compiled kernel"):
        simulate(inst, MySRTF(), engine="compiled")

    class MyTiresias(TiresiasDLAS):
        pass

    assert MyTiresias().kernel() is None
    with pytest.raises(UsageError, match="no compiled kernel"):
        simulate(inst, MyTiresias(), engine="compiled")
    with pytest.raises(UsageError, match="no compiled kernel"):
        simulate(inst, "fifo", engine="compiled", max_placement_slowdown=2.0)
    with pytest.raises(UsageError, match="refitted"):
        simulate(inst, "fifo", engine="compiled", refit_every=5)
    with pytest.raises(UsageError, match="abstract jobs"):
        simulate(instance_from_dict(DESIGN_EXAMPLE), "fifo", engine="compiled")
    with pytest.raises(UsageError, match="engine must be one of"):
        simulate(inst, "fifo", engine="fast")
    with pytest.raises(UsageError, match="must be callable"):
        Kernel(name="lottery", build=None)  # type: ignore[arg-type]
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
        "from asrpt_opt.policies import simulate;"
        "inst = philly_like(300, servers=(8, 8), load=0.9, seed=1);"
        "print(simulate(inst, 'srtf', engine='compiled').metrics.mean_jct_s)"
    )
    cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    assert "compiling the simulator's compiled loop for srtf" in cold.stderr
    assert "the simulator's compiled loop for srtf compiled in" in cold.stderr
    assert "compiled in" not in warm.stderr
    inst = philly_like(300, servers=(8, 8), load=0.9, seed=1)
    expected = simulate(inst, "srtf", engine="python").metrics.mean_jct_s
    assert float(cold.stdout) == float(warm.stdout) == expected


def test_a_compiled_run_loads_only_its_own_kernel_module():
    # Each kernel module's states have their own loop and cache index (loop_for): loading
    # the list policies' loop does not import the other kernel modules.
    code = (
        "import sys\n"
        "from asrpt_opt.policies import simulate\n"
        "from asrpt_opt.traces.synthetic import philly_like\n"
        "simulate(philly_like(30, servers=(8,), seed=1), 'srtf', engine='compiled')\n"
        "print(sorted(m for m in sys.modules if m.endswith('kernel')))\n"
    )
    for _ in range(2):  # the first may compile, which reads every kernel's registrations
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['asrpt_opt.policies.list_scheduler_kernel']"]


@pytest.mark.parametrize(
    "policy", ["srtf", "serverfilling-srpt", "prr", "tiresias-2d-las", "tiresias-gittins"]
)
def test_one_huge_server_allocates_nothing_per_gpu(policy):
    # Memory grows with jobs and servers: a server of 10**8 GPUs (800 MB per int64 array)
    # gives the Python loop's schedule, and what Python allocates around the core stays
    # small (tracemalloc sees numpy's arrays, not numba's own: the kernel sizes those by
    # jobs and servers, see asrpt_opt.sim.compiled.state.new_state).
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


def _whole_second_bursts(seed: int):
    # Whole-second releases and lengths on a few small servers, offered 0.3-2x their
    # capacity: jobs share releases and attained services, so Gittins indices and releases
    # tie and the order falls back on the queue's.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    servers = tuple(int(x) for x in rng.choice([1, 2, 4, 8], size=int(rng.integers(1, 8))))
    load = rng.uniform(0.3, 2.0)
    duration = rng.lognormal(5, 1.5, n) + 1
    gpus = np.minimum(rng.choice([1, 2, 4, 8], size=n, p=[0.6, 0.2, 0.1, 0.1]), sum(servers))
    release = np.cumsum(rng.exponential((duration * gpus).mean() / sum(servers) / load, n))
    jobs = tuple(
        Job(id=str(k), release_s=float(r), gpus=int(g), duration_s=float(d))
        for k, (r, g, d) in enumerate(
            zip(np.round(release), gpus, np.round(duration) + 1, strict=True)
        )
    )
    return Instance(name=f"bursts-{seed}", cluster=Cluster(servers=servers), jobs=jobs)


@pytest.mark.parametrize("seed", [52, 88, 135, 146])
def test_compiled_gittins_breaks_ties_as_python_does(seed):
    # Seeds at which (index, release) ties put in any order but the queue's change the
    # schedule.
    a, b = _both(_whole_second_bursts(seed), "tiresias-gittins")
    _same(a, b)


@pytest.mark.parametrize("seed", [80, 109, 133])
def test_tiresias_starts_waiting_jobs_queue_by_queue_when_all_fit(seed):
    # Low limits demote jobs, an overload leaves some waiting in lower queues, and then
    # every runnable job fits: Python's shortcut must start them in the walk's order (queue
    # by queue), as the core does. Seeds at which ignoring the queues changes a placement.
    limits = {"queue_limits_gpu_s": (60, 400, 3000)}
    a, b = _both(_whole_second_bursts(seed), "tiresias-2d-las", **limits)
    _same(a, b)


def test_compiled_gittins_learns_past_one_block_of_sizes():
    # Over 256 completed jobs: the learned sample splits into blocks (the core's own
    # structure), and the Gittins order must still be the Python policy's.
    inst = philly_like(700, servers=(8, 8, 4), load=1.1, seed=11, median_duration_s=900.0)
    a, b = _both(inst, "tiresias-gittins")
    _same(a, b)
    assert b.metrics.preemptions > 50


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 10**6), min_size=1, max_size=700),
    attained=st.lists(st.integers(0, 2 * 10**6), min_size=1, max_size=30),
    delta=st.integers(1, 10**5),
)
def test_core_gittins_index_equals_the_policys(sizes, attained, delta):
    from asrpt_opt.policies._gittins_sample import SizeSample
    from asrpt_opt.policies._gittins_sample_kernel import gittins_index, new_sample, sample_add

    sample = new_sample(len(sizes), delta)
    for size in sizes:
        sample_add(sample, size)
    expected = SizeSample(sizes, delta).indices(np.array(attained, dtype=np.int64))
    assert [gittins_index(*sample, a) for a in attained] == expected.tolist()


def test_core_gittins_index_equals_the_policys_over_many_blocks():
    # Thousands of sizes make dozens of blocks: the search for the sizes up to ``nxt``
    # starts in lo's block and often ends blocks later.
    from asrpt_opt.policies._gittins_sample import SizeSample
    from asrpt_opt.policies._gittins_sample_kernel import gittins_index, new_sample, sample_add

    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 10**5, 6000).tolist()
    attained = rng.integers(0, 11 * 10**4, 3000).tolist()
    for delta in (1, 50, 3250, 10**5):
        sample = new_sample(len(sizes), delta)
        for size in sizes:
            sample_add(sample, size)
        expected = SizeSample(sizes, delta).indices(np.array(attained, dtype=np.int64))
        assert [gittins_index(*sample, a) for a in attained] == expected.tolist()


def _sorted_queue(keys: list[tuple[float, int]]) -> list[int]:
    # sort_by_index on a queue of jobs 100, 101, ... with these (index, release) keys;
    # checks the keys moved along and the slots past the queue stayed.
    from asrpt_opt.policies.tiresias_kernel import sort_by_index

    m = len(keys)
    queue = np.arange(100, 100 + m + 3, dtype=np.int64)  # three slots past the queue
    index = np.array([k[0] for k in keys], dtype=np.float64)
    release = np.array([k[1] for k in keys], dtype=np.int64)
    sort_by_index(queue, m, index, release)
    order = [int(j) - 100 for j in queue[:m]]
    assert queue[m:].tolist() == [100 + m, 101 + m, 102 + m]
    assert index.tolist() == [keys[i][0] for i in order]
    assert release.tolist() == [keys[i][1] for i in order]
    return order


def _stable(keys: list[tuple[float, int]]) -> list[int]:
    # Higher index first, then the earlier release, then queue order (sorted() is stable).
    return sorted(range(len(keys)), key=lambda i: (-keys[i][0], keys[i][1]))


@settings(max_examples=80, deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.25, 3.0, 8.5]), st.integers(0, 3)), max_size=60
    )
)
def test_core_sorts_a_queue_by_index_then_release_then_queue_order(keys):
    assert _sorted_queue(keys) == _stable(keys)


@pytest.mark.parametrize("arrange", ["as drawn", "nearly sorted", "reversed"])
def test_core_sort_of_a_long_queue_is_stable_whichever_sort_finishes_it(arrange):
    # A reversed queue needs more moves than the insertion sort may make, so the merge
    # sort finishes it (after 8 moves a job); a nearly sorted one needs a few moves.
    rng = np.random.default_rng(3)
    keys = [
        (float(rng.choice([0.0, 0.5, 1.25, 3.0])), int(rng.integers(0, 4))) for _ in range(300)
    ]
    if arrange != "as drawn":
        keys = [keys[i] for i in _stable(keys)][:: -1 if arrange == "reversed" else 1]
    if arrange == "nearly sorted":
        keys[10], keys[250] = keys[250], keys[10]
    assert _sorted_queue(keys) == _stable(keys)


def test_kernels_refuse_limits_past_whole_64_bit_products():
    assert TiresiasDLAS(queue_limits_gpu_s=(10, 2**40)).kernel() is None
    assert TiresiasGittins(service_sample_s=[1, 2**40]).kernel() is None
    with pytest.raises(UsageError, match="positive and increasing"):
        TiresiasDLAS(queue_limits_gpu_s=(10, 5)).kernel()


@pytest.mark.parametrize("policy", ["tiresias-2d-las", "tiresias-gittins"])
def test_attained_service_past_64_bits_runs_in_python(policy, monkeypatch):
    # a holds 10**8 GPUs for 10**11 s before b arrives: 10**19 attained GPU-seconds, past
    # int64. Python demotes a and lets b in; the core, whose integers would wrap, stops, and
    # auto runs the instance in Python instead (compiled refuses, saying why).
    import asrpt_opt.sim.compiled as compiled
    from asrpt_opt.model import Cluster, Instance, Job

    jobs = (
        Job(id="a", release_s=0, gpus=10**8, duration_s=1e12),
        Job(id="b", release_s=1e11, gpus=1, duration_s=10),
    )
    inst = Instance(name="long", cluster=Cluster(servers=(10**8,)), jobs=jobs)
    expected = simulate(inst, policy, engine="python")
    assert expected.schedule.runs[1].completion_s == 1e11 + 10  # b preempts a at once
    with pytest.raises(UsageError, match="64-bit"):
        simulate(inst, policy, engine="compiled")
    monkeypatch.setattr(compiled, "COMPILED_FROM", 1)
    assert simulate(inst, policy).schedule == expected.schedule
