"""QSSF and ServerFilling-SRPT on hand-computed schedules."""

from __future__ import annotations

import pytest

from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.policies import POLICIES, PRIMARY
from asrpt_opt.sim import simulate


def _instance(rows, servers=(4,)):
    jobs = tuple(Job(id=name, release_s=r, gpus=q, duration_s=p) for name, r, q, p in rows)
    return Instance(name="hand", cluster=Cluster(servers=servers), jobs=jobs)


def _completions(inst, policy):
    result = simulate(inst, policy)
    return {run.id: run.completion_s for run in result.schedule.runs}


def test_both_are_registered_and_compared():
    assert {"qssf", "serverfilling-srpt"} <= set(POLICIES)
    assert {"qssf", "serverfilling-srpt"} <= set(PRIMARY)


def test_serverfilling_serves_the_widest_of_the_shortest_prefix():
    # 4 GPUs. SRPT order A(1) B(2) C(3) D(4); the shortest prefix covering 4 GPUs is {A, B}
    # (widths 2 + 4), served widest first: B alone runs 0..2. Then the prefix is {A, C, D}
    # (2 + 1 + 1): all run from 2; A ends at 3, C at 5, D at 6.
    inst = _instance([("A", 0, 2, 1), ("B", 0, 4, 2), ("C", 0, 1, 3), ("D", 0, 1, 4)])
    assert _completions(inst, "serverfilling-srpt") == {"A": 3, "B": 2, "C": 5, "D": 6}
    # SRTF differs: A, C, D start (list order with backfill); at 1, C's remaining 2 s ties
    # B's 2 s, so B cannot take C's GPU and waits for C (3) and D (4).
    assert _completions(inst, "srtf") == {"A": 1, "B": 6, "C": 3, "D": 4}


def test_serverfilling_preempts_when_a_shorter_job_arrives():
    # X (4 GPUs, 10 s) runs from 0; Y (2 GPUs, 1 s) arrives at 2. The prefix {Y, X} covers
    # 4 GPUs; widest first serves X, which fills the cluster: X keeps running (ServerFilling
    # serves the widest of the prefix, not the shortest), Y starts at 10.
    inst = _instance([("X", 0, 4, 10), ("Y", 2, 2, 1)])
    assert _completions(inst, "serverfilling-srpt") == {"X": 10, "Y": 11}
    # With two 2-GPU jobs the prefix {Y, Z} is served and X is preempted.
    inst = _instance([("X", 0, 4, 10), ("Y", 2, 2, 1), ("Z", 2, 2, 1)])
    done = _completions(inst, "serverfilling-srpt")
    assert (done["Y"], done["Z"]) == (3, 3)
    assert done["X"] == pytest.approx(11)  # 2 s done, 8 s left from 3


def test_qssf_orders_by_predicted_gpu_time():
    # One 4-GPU server busy with W until 1. Waiting at 1: P (4 GPUs x 2 s = 8 GPU-s) and
    # Q (1 GPU x 5 s = 5 GPU-s). SJF starts P first (2 s < 5 s); QSSF starts Q first, and P
    # (needing all 4 GPUs) waits until Q ends at 6.
    inst = _instance([("W", 0, 4, 1), ("P", 0.5, 4, 2), ("Q", 0.5, 1, 5)])
    assert _completions(inst, "sjf") == {"W": 1, "P": 3, "Q": 8}
    assert _completions(inst, "qssf") == {"W": 1, "P": 8, "Q": 6}
