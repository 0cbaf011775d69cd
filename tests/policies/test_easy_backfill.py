"""EASY backfilling: hand-computed schedules and its defining property."""

from __future__ import annotations

import pytest

from asrpt_opt.model.cluster import Cluster
from asrpt_opt.model.instance import Instance
from asrpt_opt.model.job import Job
from asrpt_opt.policies.registry import simulate
from asrpt_opt.traces.synthetic import philly_like


def _instance(rows, servers=(4,)):
    jobs = tuple(
        Job(id=f"j{k}", release_s=r, gpus=g, duration_s=d) for k, (r, g, d) in enumerate(rows)
    )
    return Instance(name="easy", cluster=Cluster(servers=servers), jobs=jobs)


def _completions(result):
    return [run.completion_s for run in result.schedule.runs]


# One 4-GPU server. A (2 GPUs, 10 s) runs from 0; B (4 GPUs) arrives at 1 and is reserved
# the shadow time 10 (when A ends), with no extra GPUs. C (2 GPUs, 9 s) at 2 would end at
# 11 > 10: EASY keeps it waiting; D (1 GPU, 3 s) at 3 ends at 6 <= 10 and backfills. B runs
# 10-15, C 15-24. Greedy FIFO backfill starts C at 2 and delays B to 13 (after D, 10-13).
ROWS = [(0, 2, 10.0), (1, 4, 5.0), (2, 2, 9.0), (3, 1, 3.0)]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_easy_backfills_only_what_does_not_delay_the_head(engine):
    result = simulate(_instance(ROWS), "easy-backfill", engine=engine)
    assert _completions(result) == [10.0, 15.0, 24.0, 6.0]
    assert _completions(simulate(_instance(ROWS), "fifo")) == [10.0, 18.0, 11.0, 13.0]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_job_may_use_the_extra_gpus_past_the_shadow_time(engine):
    # 8-GPU server: A (4, 10 s) at 0 and B (2, 20 s) at 0 start; C (6 GPUs) at 1 is blocked
    # with 2 free: shadow 10 (A ends, 2 + 4 = 6 free), extra 0. D (2 GPUs, 30 s) at 2 ends
    # at 32 > 10 and has no extra: waits. With C needing 4 GPUs instead, the shadow is 10
    # with 2 + 4 - 4 = 2 extra, and D (2 GPUs) starts at 2 on them.
    rows = [(0, 4, 10.0), (0, 2, 20.0), (1, 6, 5.0), (2, 2, 30.0)]
    blocked = simulate(_instance(rows, (8,)), "easy-backfill", engine=engine)
    assert _completions(blocked) == [10.0, 20.0, 15.0, 45.0]
    rows[2] = (1, 4, 5.0)
    rows.append((2, 2, 30.0))  # a second D cannot: the extra GPUs are used up
    extra = simulate(_instance(rows, (8,)), "easy-backfill", engine=engine)
    assert _completions(extra) == [10.0, 20.0, 15.0, 32.0, 45.0]


def test_easy_beats_strict_fcfs_under_overload():
    # Backfilling what does not delay the head can only help the head's followers here.
    inst = philly_like(400, servers=(8,), load=1.2, seed=5)
    easy = simulate(inst, "easy-backfill")
    strict = simulate(inst, "fifo", backfill=False)
    assert easy.metrics.mean_jct_s < strict.metrics.mean_jct_s
