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


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_job_passed_for_its_spread_placement_is_tried_again_later(engine):
    # Servers (3, 3), all at 0. A (2 GPUs, 100 s) takes server 0 and B (2, 50 s) server 1,
    # leaving 1 + 1 free. H (6) is the head: shadow 100 (B frees 2 at 50, A 2 at 100),
    # extra 0. C (2, 60 s, twice as slow spread) could end at 60 at its best rate, but the
    # free GPUs are on two servers, where it would end at 120 > 100: passed over. D (1, 90 s)
    # ends at 90 and backfills. C must still wait afterwards: at 50 and 90 it cannot end by
    # 100 even on one server, H runs 100-110, and C then runs alone on server 0, 110-170.
    jobs = [
        Job(id="A", release_s=0.0, gpus=2, duration_s=100.0),
        Job(id="B", release_s=0.0, gpus=2, duration_s=50.0),
        Job(id="H", release_s=0.0, gpus=6, duration_s=10.0),
        Job(id="C", release_s=0.0, gpus=2, duration_s=60.0, spread_slowdown=2.0),
        Job(id="D", release_s=0.0, gpus=1, duration_s=90.0),
    ]
    inst = Instance(name="easy-spread", cluster=Cluster(servers=(3, 3)), jobs=tuple(jobs))
    result = simulate(inst, "easy-backfill", engine=engine)
    assert _completions(result) == [100.0, 50.0, 110.0, 170.0, 90.0]
    (segment,) = result.schedule.runs[3].segments
    assert segment.allocation == ((0, 2),)


def test_easy_beats_strict_fcfs_under_overload():
    # Backfilling what does not delay the head can only help the head's followers here.
    inst = philly_like(400, servers=(8,), load=1.2, seed=5)
    easy = simulate(inst, "easy-backfill")
    strict = simulate(inst, "fifo", backfill=False)
    assert easy.metrics.mean_jct_s < strict.metrics.mean_jct_s
