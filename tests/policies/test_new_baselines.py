"""QSSF and the multiserver-job policies on hand-computed schedules."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.errors import UsageError
from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.policies import POLICIES, PRIMARY, simulate


def _instance(rows, servers=(4,)):
    jobs = tuple(Job(id=name, release_s=r, gpus=q, duration_s=p) for name, r, q, p in rows)
    return Instance(name="hand", cluster=Cluster(servers=servers), jobs=jobs)


def _completions(inst, policy):
    result = simulate(inst, policy)
    return {run.id: run.completion_s for run in result.schedule.runs}


def test_both_are_registered_and_compared():
    assert {"qssf", "serverfilling-srpt"} <= set(POLICIES)
    assert {"qssf", "serverfilling-srpt"} <= set(PRIMARY)


def _completions_with(inst, policy, **params):
    result = simulate(inst, policy, **params)
    return {run.id: run.completion_s for run in result.schedule.runs}


def test_serverfilling_serves_the_widest_of_the_shortest_prefix():
    # 4 GPUs. By remaining time A(1) B(2) C(3) D(4); the shortest prefix covering 4 GPUs is
    # {A, B} (widths 2 + 4), served widest first: B alone runs 0..2. Then the prefix is
    # {A, C, D} (2 + 1 + 1): all run from 2; A ends at 3, C at 5, D at 6.
    inst = _instance([("A", 0, 2, 1), ("B", 0, 4, 2), ("C", 0, 1, 3), ("D", 0, 1, 4)])
    by_time = _completions_with(inst, "serverfilling-srpt", order="time")
    assert by_time == {"A": 3, "B": 2, "C": 5, "D": 6}
    # By remaining area (the default): A 2, C 3, D 4, B 8. The prefix {A, C, D} covers the 4
    # GPUs and runs from 0; at 1 (A done) it is {C (area 2), D (3), B (8)}, widest first: B
    # alone runs 1..3, C and D are preempted and end at 5 and 6.
    assert _completions(inst, "serverfilling-srpt") == {"A": 1, "B": 3, "C": 5, "D": 6}
    # SRTF differs: A, C, D start (list order with backfill); at 1, C's remaining 2 s ties
    # B's 2 s, so B cannot take C's GPU and waits for C (3) and D (4).
    assert _completions(inst, "srtf") == {"A": 1, "B": 6, "C": 3, "D": 4}


def test_serverfilling_preempts_when_a_shorter_job_arrives():
    # X (4 GPUs, 10 s) runs from 0; Y (2 GPUs, 1 s) arrives at 2. The prefix {Y, X} covers
    # 4 GPUs; widest first serves X, which fills the cluster: X keeps running (ServerFilling
    # serves the widest of the prefix, not the shortest), Y starts at 10.
    inst = _instance([("X", 0, 4, 10), ("Y", 2, 2, 1)])
    assert _completions_with(inst, "serverfilling-srpt", order="time") == {"X": 10, "Y": 11}
    # With two 2-GPU jobs the prefix {Y, Z} is served and X is preempted.
    inst = _instance([("X", 0, 4, 10), ("Y", 2, 2, 1), ("Z", 2, 2, 1)])
    done = _completions_with(inst, "serverfilling-srpt", order="time")
    assert (done["Y"], done["Z"]) == (3, 3)
    assert done["X"] == pytest.approx(11)  # 2 s done, 8 s left from 3


def test_qssf_orders_by_predicted_gpu_time():
    # One 4-GPU server busy with W until 1. Waiting at 1: P (4 GPUs x 2 s = 8 GPU-s) and
    # Q (1 GPU x 5 s = 5 GPU-s). SJF starts P first (2 s < 5 s); QSSF starts Q first, and P
    # (needing all 4 GPUs) waits until Q ends at 6.
    inst = _instance([("W", 0, 4, 1), ("P", 0.5, 4, 2), ("Q", 0.5, 1, 5)])
    assert _completions(inst, "sjf") == {"W": 1, "P": 3, "Q": 8}
    assert _completions(inst, "qssf") == {"W": 1, "P": 8, "Q": 6}


class _Fixed:
    """Predicts the given work per job id (hand-set errors)."""

    def __init__(self, work):
        self.work = work

    def fit(self, history=()):
        return self

    def predict(self, jobs):
        return np.array([self.work[j.id] for j in jobs], dtype=float)


def _prr(inst, work=None, **params):
    predictor = _Fixed(work) if work is not None else None
    result = simulate(inst, "prr", predictor=predictor, **params)
    return {run.id: run.completion_s for run in result.schedule.runs}


def test_prr_is_registered_and_compared():
    assert "prr" in POLICIES
    assert "prr" in PRIMARY


def test_prr_alternates_round_robin_and_predicted_quanta():
    # One GPU, A (4 s) and B (1 s) at 0, quantum 1 s, trust 0.5: quantum 0 is round robin
    # (both unserved, A released first: A runs 0..1), quantum 1 predicted (B's 1 s left is
    # shortest: B runs 1..2), then A alone to 5. Sum 7 (SRPT: 6, round robin: 7).
    inst = _instance([("A", 0, 1, 4), ("B", 0, 1, 1)], servers=(1,))
    assert _prr(inst, quantum_s=1.0) == {"A": 5, "B": 2}
    # trust 1: always the predictions, which is SRPT here.
    assert _prr(inst, quantum_s=1.0, trust=1.0) == {"A": 5, "B": 1}


def test_prr_bounds_the_damage_of_a_wrong_prediction():
    # B is predicted at 100 s instead of 1 s. Pure prediction (trust 1) runs A first: B ends
    # at 5, sum 9. With trust 0.5, B gets the round-robin quantum at 2 (A has 2 s of
    # service, B none) and ends at 3: sum 8.
    inst = _instance([("A", 0, 1, 4), ("B", 0, 1, 1)], servers=(1,))
    wrong = {"A": 4.0, "B": 100.0}
    assert _prr(inst, wrong, quantum_s=1.0, trust=1.0) == {"A": 4, "B": 5}
    assert _prr(inst, wrong, quantum_s=1.0) == {"A": 5, "B": 3}


def test_prr_gangs_fill_the_cluster_in_order():
    # 4 GPUs; W (4 GPUs, 2 s) and N (1 GPU, 2 s) at 0, trust 1 (predictions): both are 2 s,
    # W released first runs alone (N cannot fit beside it), then N: W 2, N 4.
    inst = _instance([("W", 0, 4, 2), ("N", 0, 1, 2)])
    assert _prr(inst, quantum_s=1.0, trust=1.0) == {"W": 2, "N": 4}


def test_prr_rejects_bad_knobs():
    inst = _instance([("A", 0, 1, 1)])
    with pytest.raises(UsageError, match="trust"):
        simulate(inst, "prr", trust=0.0)
    with pytest.raises(UsageError, match="quantum_s"):
        simulate(inst, "prr", quantum_s=-1.0)


def test_a_quantum_ending_as_a_job_finishes_completes_it():
    # PRR's quantum ended at 70.6083... (float), when job j2 had done all its work but a
    # rounding error: it was preempted with ~1e-14 s left and "completed" at its next start,
    # 6 s after its last segment ended. Completions within rounding of an event happen there.
    from asrpt_opt.speed.base import PooledSpeed

    rows = [(2, 7, 20), (10, 5, 14), (10, 7, 20), (11, 1, 1), (17, 7, 19), (20, 7, 2)]
    inst = _instance([(f"j{i}", r, q, p) for i, (r, q, p) in enumerate(rows)], servers=(4, 4))
    # Validated inside: a completion must equal the end of its job's last segment.
    result = simulate(inst, "prr", speed=PooledSpeed())
    for run in result.schedule.runs:
        assert run.completion_s == run.segments[-1].end_s


@pytest.mark.parametrize("name", ["prr", "serverfilling-srpt"])
def test_the_everything_fits_shortcut_decides_as_the_general_rule(name):
    # When every released job fits, both policies skip the selection over all released jobs
    # and order only the waiting ones. A copy whose shortcut never applies (its GPU count is
    # inflated) must give the same schedules.
    from asrpt_opt.analysis.adversary import SearchSpace, _random_row, to_instance
    from asrpt_opt.policies import make_policy

    base = type(make_policy(name))

    class General(base):  # type: ignore[misc, valid-type]
        def on_arrival(self, job, view):
            super().on_arrival(job, view)
            self._active_gpus += 10**9

        def on_completion(self, job, view):
            super().on_completion(job, view)
            if not self._active:
                self._active_gpus = 0

    rng = np.random.default_rng(9)
    space = SearchSpace(servers=(4, 4, 8))
    for _ in range(60):
        inst = to_instance(
            [_random_row(space, rng) for _ in range(int(rng.integers(2, 10)))], space
        )
        fast = simulate(inst, name, restore_overhead_s=0.5)
        slow = simulate(inst, General(), restore_overhead_s=0.5)
        assert [r.segments for r in fast.schedule.runs] == [r.segments for r in slow.schedule.runs]


# 4 GPUs, all released at 0: A (2 GPUs, 3 s, area 6), B (4, 1 s, area 4), C (1, 4 s, area 4),
# D (1, 1 s, area 1). By area (ties to the lower index): D, B, C, A.
MSJ_ROWS = [("A", 0, 2, 3), ("B", 0, 4, 1), ("C", 0, 1, 4), ("D", 0, 1, 1)]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        # D, C, A fit (B skipped); at 1 C, A, B: C and A keep running; A ends at 3, C at 4,
        # then B runs 4..5.
        ("firstfit-srpt", {"A": 3, "B": 5, "C": 4, "D": 1}),
        # D runs alone (B, next, does not fit and nothing passes it); at 1 B runs alone; at 2
        # C and A.
        ("greedy-srpt", {"A": 5, "B": 2, "C": 6, "D": 1}),
        # Arrival order A, B, C, D: the prefix {A, B} covers the GPUs, widest first B alone;
        # at 1 {A, C, D} runs: D ends at 2, A at 4, C at 5.
        ("serverfilling", {"A": 4, "B": 1, "C": 5, "D": 2}),
        # By area the prefix is {D, B}, widest first B alone; then as above.
        ("serverfilling-srpt", {"A": 4, "B": 1, "C": 5, "D": 2}),
    ],
)
def test_multiserver_job_policies_by_hand(policy, expected):
    inst = _instance(MSJ_ROWS)
    for engine in ("python", "compiled"):
        assert _completions_with(inst, policy, engine=engine) == expected


def test_serverfilling_srpt_orders_by_area_or_time_only():
    with pytest.raises(UsageError, match="order must be one of"):
        simulate(_instance(MSJ_ROWS), "serverfilling-srpt", order="size")
    with pytest.raises(UsageError, match="serverfilling"):
        simulate(_instance(MSJ_ROWS), "serverfilling-srpt", order="arrival")


MSF_ROWS = [("A", 0, 1, 4.0), ("B", 0, 2, 2.0), ("C", 1, 4, 1.0), ("D", 1, 1, 1.0)]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_msf_serves_the_widest_first_and_preempts_narrower_jobs(engine):
    # 4 GPUs. At 0 B and A start. At 1 C (4 GPUs) ranks first: it preempts A and B (both
    # needed to make room) and runs to 2; D cannot preempt anyone of its width and waits. At
    # 2 B (1 s left), then A (lower index than D), then D start together.
    inst = _instance(MSF_ROWS)
    done = _completions_with(inst, "msf", engine=engine)
    assert done == {"A": 5, "B": 3, "C": 2, "D": 3}


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_msf_without_preemption_waits_for_room_and_backfills(engine):
    # C waits for 4 free GPUs (at 4, when A ends); D backfills the free GPU at 1.
    inst = _instance(MSF_ROWS)
    done = _completions_with(inst, "msf", preemptive=False, engine=engine)
    assert done == {"A": 4, "B": 2, "C": 5, "D": 2}
