"""Our baselines against the peers' own simulators on identical input (mean JCT, seconds).

The instance and the reference figures are in ``instances/baselines/`` (SOURCE.md).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asrpt_opt.cli import main
from asrpt_opt.model import Cluster, Instance, Job, load_instance
from asrpt_opt.policies import simulate
from asrpt_opt.policies._gittins_sample import read_sample
from tests.conftest import ROOT

PATH = ROOT / "instances" / "baselines" / "ee9e8c-v100-27x4.json"


@pytest.fixture(scope="module")
def trace():
    return load_instance(PATH)


@pytest.mark.parametrize(
    ("policy", "params", "reference"),
    [
        ("fifo", {}, 172_237.2135),  # Tiresias fjf, PAI FIFO
        ("fifo", {"backfill": False}, 228_740.9450),  # Tiresias fifo
        ("sjf", {}, 143_930.2705),  # PAI SJF
        ("srtf", {}, 156_851.9715),  # Tiresias shortest
        ("tiresias-2d-las", {}, 168_619.6665),  # Tiresias dlas-gpu
    ],
)
def test_mean_jct_equals_the_reference(trace, policy, params, reference):
    mean = simulate(trace, policy, **params).metrics.mean_jct_s
    assert mean == pytest.approx(reference, rel=1e-6)


def test_srsf_differs_from_tiresias_by_its_preemption_rule(trace):
    # Tiresias shortest-gpu: 144,957.8520 s. Ours keeps running jobs unless they are chosen as
    # victims for a higher-ranked job; Tiresias re-packs greedily at every event (docs).
    assert simulate(trace, "srsf").metrics.mean_jct_s == pytest.approx(144_957.2585, rel=1e-9)


def test_strict_fifo_from_the_command_line(capsys):
    status = main(
        ["simulate", str(PATH), "--policy", "fifo", "--param", "backfill=false", "--json"]
    )
    assert status == 0
    assert json.loads(capsys.readouterr().out)["mean_jct_s"] == pytest.approx(
        228_740.9450, rel=1e-6
    )


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_tiresias_gittins_with_its_own_sample_equals_the_reference(trace, engine):
    res = simulate(trace, "tiresias-gittins", service_sample_s="tiresias", engine=engine)
    assert res.metrics.mean_jct_s == pytest.approx(166_445.5845, rel=1e-6)
    assert len(read_sample("tiresias")) == 1001  # the header, then 1,001 sizes


def test_tiresias_checks_demotion_at_its_own_early_jump_times():
    # a (8 GPUs, 2,000 s) runs alone; b (8 GPUs, 100 s) arrives at 405 s. a reaches 3,250
    # GPU-seconds at 406.25 s, but the reference checks at 405 + (3250 - 405) // 8 = 760 s,
    # demotes a then, runs b from 760 to 860 s, and resumes a until 860 + 1,240 = 2,100 s.
    # The paper's 2D-LAS demotes a at 406.25 s and finishes b at 506.25 s.
    jobs = (
        Job(id="a", release_s=0, gpus=8, duration_s=2000),
        Job(id="b", release_s=405, gpus=8, duration_s=100),
    )
    inst = Instance(name="jump", cluster=Cluster(servers=(8,)), jobs=jobs)
    tiresias = simulate(inst, "tiresias-2d-las")
    paper = simulate(inst, "2d-las", thresholds_gpu_s=(3250.0, 7200.0))
    assert [r.completion_s for r in tiresias.schedule.runs] == [2100.0, 860.0]
    assert [r.completion_s for r in paper.schedule.runs] == [2100.0, 506.25]


def test_a_subclass_that_orders_its_queues_is_followed_when_every_job_fits():
    # Two 1-GPU jobs at once on two 1-GPU servers: both fit, and they start in queue order,
    # the first on server 0. A subclass that reverses its queues must see its order used
    # (the all-fit shortcut is for the reference's arrival order only).
    from asrpt_opt.policies import TiresiasDLAS

    class Reversed(TiresiasDLAS):
        def _order(self, queue, now):
            return queue[::-1]

    jobs = (
        Job(id="a", release_s=0, gpus=1, duration_s=10),
        Job(id="b", release_s=0, gpus=1, duration_s=20),
    )
    inst = Instance(name="two", cluster=Cluster(servers=(1, 1)), jobs=jobs)
    plain = simulate(inst, TiresiasDLAS()).schedule.runs
    reverse = simulate(inst, Reversed()).schedule.runs
    assert [r.segments[0].allocation for r in plain] == [((0, 1),), ((1, 1),)]
    assert [r.segments[0].allocation for r in reverse] == [((1, 1),), ((0, 1),)]


def test_gittins_keeps_its_queues_in_index_order_when_every_job_fits():
    # When every runnable job fits, no queue moves its waiting jobs behind the running ones,
    # so after each such decision every queue must be in the order the decision sorted it:
    # (higher index, earlier release). That order persists and breaks later ties.
    from asrpt_opt.policies import TiresiasGittins
    from asrpt_opt.policies._gittins_sample import whole_array
    from asrpt_opt.traces.synthetic import philly_like

    class Spy(TiresiasGittins):
        checked = 0
        reordered = 0

        def decide(self, view):
            decision = super().decide(view)
            if self._demand <= view.total_gpus and self._sample is not None:
                for queue in self._queues:
                    jobs = list(queue)
                    attained = whole_array([self._executed_now(j) * self._gpus[j] for j in jobs])
                    index = self._sample.indices(attained).tolist()
                    keys = [(-x, self._release[j]) for x, j in zip(index, jobs, strict=True)]
                    assert keys == sorted(keys)
                    self.checked += 1
                    self.reordered += jobs != sorted(jobs, key=self._arrived.__getitem__)
            return decision

    inst = philly_like(300, servers=(8,) * 6, load=0.6, seed=3, median_duration_s=600.0)
    spy = Spy(service_sample_s=[60, 300, 900, 2000, 5000, 20000], delta_s=200)
    simulate(inst, spy)
    assert spy.checked > 1000
    assert spy.reordered > 100  # queues the index took out of arrival order


def test_tiresias_gittins_orders_a_queue_by_the_index_of_attained_service():
    # Sample 100, 1000, 5000 s, quantum 100 s. Index of attained service a: the share of the
    # jobs still running at a that finish within a + 100, over their mean service up to then
    # (x 10^6). At a = 0: 1/3 over (100 + 2 x 100) // 3 = 100 -> 3333.3. At a = 150: 1/2 over
    # (1000 + 100) // 2 = 550 -> 909.0909. So at t = 150 the new job outranks the old one,
    # preempts it and finishes at 200; the old one finishes at 450. Plain 2D-LAS order (no
    # index) would keep the old job running to 400 and finish the new one at 450.
    from asrpt_opt.policies import TiresiasGittins

    jobs = (
        Job(id="old", release_s=0, gpus=1, duration_s=400),
        Job(id="new", release_s=150, gpus=1, duration_s=50),
    )
    inst = Instance(name="g", cluster=Cluster(servers=(1,)), jobs=jobs)
    gittins = simulate(inst, TiresiasGittins(service_sample_s=[100, 1000, 5000], delta_s=100))
    assert [r.completion_s for r in gittins.schedule.runs] == [450.0, 200.0]
    plain = simulate(inst, "tiresias-2d-las")
    assert [r.completion_s for r in plain.schedule.runs] == [400.0, 450.0]


def test_param_names_and_types_are_checked(capsys):
    assert main(["simulate", str(PATH), "--policy", "fifo", "--param", "nope=1"]) == 2
    assert "no policy run here has a parameter 'nope'" in capsys.readouterr().err
    assert main(["simulate", str(PATH), "--policy", "fifo", "--param", "backfill=3"]) == 2
    assert "backfill must be true or false, got 3" in capsys.readouterr().err
    assert main(["simulate", str(PATH), "--policy", "a-srpt", "--param", "fifo:backfill=1"]) == 2
    err = capsys.readouterr().err
    assert "not among the policies run" in err


def _reference_index(sample: list[int], delta: int, attained: int) -> float:
    # Tiresias' table (simulator/jobs.py), transcribed size by size in exact arithmetic:
    # Python 2 rounding, floored mean, index 0 past the largest size.
    data = sorted(sample)
    num, last = len(data), data[-1]
    if attained > last:
        return 0.0
    lo = next((k for k, v in enumerate(data) if v > attained), num)
    if lo == num:
        return 0.0
    a = data[lo] - 1
    idx = sum(1 for v in data if v <= a)
    nxt = a + delta
    idx_delta = num - 1 if nxt > last - 1 else sum(1 for v in data if v <= nxt)
    p = math.floor((idx_delta - idx) / (num - idx) * 1e5 + 0.5) / 1e5
    e = (sum(data[idx:idx_delta]) + delta * (num - idx_delta)) // (num - idx)
    return math.floor(p * 1_000_000 / e * 1e4 + 0.5) / 1e4


@settings(max_examples=200, deadline=None)
@given(
    first=st.lists(st.integers(1, 5000), min_size=1, max_size=30),
    added=st.lists(st.integers(1, 5000), max_size=30),
    attained=st.lists(st.integers(0, 6000), min_size=1, max_size=20),
    delta=st.integers(1, 4000),
)
def test_gittins_indices_equal_the_reference_table_as_sizes_are_learned(
    first, added, attained, delta
):
    from asrpt_opt.policies._gittins_sample import SizeSample

    sample = SizeSample(first, delta)
    sizes = list(first)
    for size in [None, *added]:
        if size is not None:
            sample.add(size)
            sizes.append(size)
        got = sample.indices(np.array(attained, dtype=np.int64)).tolist()
        assert got == [_reference_index(sizes, delta, a) for a in attained]


def test_gittins_indices_past_64_bit_sizes_equal_the_reference():
    # Sizes whose sum passes 64-bit integers (a 10**8-GPU job run for 10**11 s) switch the
    # sample to Python's integers instead of wrapping.
    from asrpt_opt.policies._gittins_sample import SizeSample

    sizes = [5, 3_000, 2**62, 10**19]
    sample = SizeSample(sizes[:2], 3250)
    for size in sizes[2:]:
        sample.add(size)
    attained = [0, 4, 2_999, 3_000, 2**62 - 1, 2**62, 10**19 - 1, 10**19, 10**20]
    got = sample.indices(np.array(attained, dtype=object)).tolist()
    assert got == [_reference_index(sizes, 3250, a) for a in attained]
    assert got[0] > 0
    assert got[-1] == 0.0


def test_gittins_indices_with_a_quantum_past_64_bits_equal_the_reference():
    from asrpt_opt.policies._gittins_sample import SizeSample

    sizes, delta = [7, 90, 90, 4_000], 10**30
    attained = [0, 7, 89, 90, 3_999, 4_000]
    got = SizeSample(sizes, delta).indices(np.array(attained, dtype=np.int64)).tolist()
    assert got == [_reference_index(sizes, delta, a) for a in attained]
