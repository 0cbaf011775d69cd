"""MaxWeight for multiserver jobs: hand-computed decisions of both of its branches."""

from __future__ import annotations

import pytest

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.policies.registry import simulate
from asrpt_opt.traces.synthetic import msj


def _completions(rows, engine, servers=(8,)):
    jobs = tuple(
        Job(id=f"j{k}", release_s=r, gpus=g, duration_s=d) for k, (r, g, d) in enumerate(rows)
    )
    inst = Instance(name="mw", cluster=Cluster(servers=servers), jobs=jobs)
    return [run.completion_s for run in simulate(inst, "maxweight", engine=engine).schedule.runs]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_the_heaviest_class_alone_fills_the_server(engine):
    # 8 GPUs: one 1-GPU job (weight 1 * 8 // 1 = 8) and four 2-GPU jobs (4 * 8 // 2 = 16,
    # and 4 x 2 = 8 GPUs fill the server): the four run 0-2, the 1-GPU job after them.
    rows = [(0, 1, 1.0)] + [(0, 2, 2.0)] * 4
    assert _completions(rows, engine) == [3.0, 2.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_otherwise_first_fit_by_class_weight(engine):
    # Index order c, d (4 GPUs, 3 s), a, b (1 GPU, 10 s), e (2 GPUs, 5 s). Weights: width 1
    # 2 * 8 = 16 (but 2 GPUs do not fill), width 4 2 * 2 = 4, width 2 1 * 4 = 4. The list
    # sorted by weight (stable): a, b, c, d, e; first fit serves a, b, c, e (d does not
    # fit). At 3 c ends and everything left fits: d runs 3-6.
    rows = [(0, 4, 3.0), (0, 4, 3.0), (0, 1, 10.0), (0, 1, 10.0), (0, 2, 5.0)]
    assert _completions(rows, engine) == [3.0, 6.0, 10.0, 10.0, 5.0]


def test_maxweight_is_stable_where_the_reference_finds_it():
    # Throughput-optimal: stable at load 0.9 on the multiserver-job workload (published mean
    # response time 3.6349 time units).
    result = simulate(msj(8000, load=0.9, seed=1), "maxweight")
    assert result.metrics.stability.verdict.value == "stable"
