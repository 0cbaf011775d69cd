"""The simulator: hand-computed schedules, event semantics, and refusal of bad decisions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from asrpt_opt.errors import (
    InstanceError,
    ModelError,
    PolicyError,
    UnknownNameError,
    UsageError,
)
from asrpt_opt.model import instance_from_dict
from asrpt_opt.policies import POLICIES, simulate
from asrpt_opt.policies.list_scheduler import ListScheduler
from asrpt_opt.prediction import NoisyOraclePredictor
from asrpt_opt.sim import NO_DECISION, Decision, Start
from tests.conftest import make_instance
from tests.model.test_io import DESIGN_EXAMPLE


def completions(result):
    return [run.completion_s for run in result.schedule.runs]


def test_restore_overhead_delays_resumed_job():
    inst = make_instance([(0, 1, 6.0), (2, 1, 2.0)], servers=(1,))
    res = simulate(inst, "srtf", restore_overhead_s=1.0)
    assert completions(res) == [9.0, 4.0]
    a = res.schedule.runs[0].segments
    assert [(s.start_s, s.end_s) for s in a] == [(0.0, 2.0), (4.0, 9.0)]
    assert res.metrics.preemptions == 1


def test_spread_slowdown_applies_across_servers():
    inst = make_instance([(0, 4, 2.0, 1.0, 1.5)], servers=(2, 2))
    res = simulate(inst, "fifo")
    assert completions(res) == [3.0]
    assert res.schedule.runs[0].segments[0].allocation == ((0, 2), (1, 2))


def test_consolidation_best_fit():
    inst = make_instance([(0, 1, 10.0), (0, 2, 1.0), (0, 1, 1.0)], servers=(2, 2))
    res = simulate(inst, "fifo")
    allocs = [run.segments[0].allocation for run in res.schedule.runs]
    # j0 takes server 0; j1 needs a whole server (1); j2 best-fits the hole on server 0.
    assert allocs == [((0, 1),), ((1, 2),), ((0, 1),)]


def test_fifo_backfill_and_blocking():
    jobs = [(0, 1, 4.0), (1, 2, 1.0), (2, 1, 1.0)]
    inst = make_instance(jobs, servers=(2,))
    assert completions(simulate(inst, "fifo")) == [4.0, 5.0, 3.0]
    assert completions(simulate(inst, "fifo", backfill=False)) == [4.0, 5.0, 6.0]


def test_sjf_matches_nonpreemptive_optimum(known_answers):
    case = known_answers["1|r_j|sum C_j"]["instances"][0]
    inst = make_instance(list(zip(case["r"], [1] * 6, case["p"], strict=True)), servers=(1,))
    res = simulate(inst, "sjf")
    assert res.metrics.total_completion_s == 78.0 == case["opt_sum_C"]
    assert res.metrics.preemptions == 0


@pytest.mark.parametrize("policy", ["srtf", "a-srpt"])
def test_single_gpu_srpt_policies_are_optimal(known_answers, policy):
    # On one GPU, SRTF is SRPT and A-SRPT's virtual machine is the real one.
    for case in known_answers["1|r_j,pmtn|sum C_j"]["instances"]:
        inst = make_instance(
            list(zip(case["r"], [1] * len(case["r"]), case["p"], strict=True)), servers=(1,)
        )
        res = simulate(inst, policy)
        assert res.metrics.total_completion_s == pytest.approx(case["opt_sum_C"])


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
@pytest.mark.parametrize("klass", ["P|size_j,r_j|sum w_j C_j", "1|r_j|sum C_j"])
def test_nonpreemptive_policies_never_beat_known_optimum(known_answers, policy, klass):
    for case in known_answers[klass]["instances"]:
        n = len(case["r"])
        size = case.get("size", [1] * n)
        w = case.get("w", [1] * n)
        m = case.get("m", 1)
        inst = make_instance(list(zip(case["r"], size, case["p"], w, strict=True)), servers=(m,))
        value = simulate(inst, policy).metrics.total_weighted_completion_s
        assert value >= case.get("opt_sum_wC", case.get("opt_sum_C")) - 1e-9


def test_2d_las_demotes_at_threshold():
    inst = make_instance([(0, 1, 10.0), (1, 1, 3.0)], servers=(1,))
    res = simulate(inst, "2d-las", thresholds_gpu_s=(2.0,))
    a, b = res.schedule.runs
    assert [(s.start_s, s.end_s) for s in a.segments] == [(0.0, 2.0), (4.0, 12.0)]
    assert [(s.start_s, s.end_s) for s in b.segments] == [(2.0, 4.0), (12.0, 13.0)]


def test_2d_las_rejects_bad_thresholds():
    inst = make_instance([(0, 1, 1.0)], servers=(1,))
    with pytest.raises(ValueError, match="increasing"):
        simulate(inst, "2d-las", thresholds_gpu_s=(5.0, 1.0))


def test_asrpt_ranks_by_virtual_remaining_work():
    # M = 2. j0 (2 GPUs, 4 s) has virtual size 4; j1 (1 GPU, 6 s) virtual size 3 arrives at 1
    # when j0 has 3 left: a tie broken towards the lower index, so j0 keeps running.
    inst = make_instance([(0, 2, 4.0), (1, 1, 6.0)], servers=(2,))
    assert completions(simulate(inst, "a-srpt", guide="list")) == [4.0, 10.0]
    # If j1 is a little shorter, it ranks first: the list guide lets it preempt j0; the fill
    # guide (the default on one server) serves the prefix {j1, j0} widest first, so j0
    # (which fills the server) keeps running and j1 follows it.
    inst = make_instance([(0, 2, 4.0), (1, 1, 5.0)], servers=(2,))
    assert completions(simulate(inst, "a-srpt", guide="list")) == [9.0, 6.0]
    assert completions(simulate(inst, "a-srpt", guide="fill")) == [4.0, 9.0]
    assert completions(simulate(inst, "a-srpt")) == [4.0, 9.0]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_asrpt_fill_orders_jobs_wider_than_a_server_by_rank(engine):
    # Two 4-GPU servers (M = 8). Virtual sizes q * p / M: A 0.25, B 1, C 2. The prefix covering
    # 8 GPUs is {A, B}; B (8 GPUs) is wider than a server, so it counts as 4 and the rank
    # order stands: A starts, B does not fit, C backfills. At 0.5 A is done and B ranks first
    # (0.75 virtual left against C's 2): C is preempted after 0.5 s, B runs to 1.5, C resumes
    # and ends at 1.5 + 3.5 = 5. The paper's widest-first order would have run B first
    # (A: 1.5, B: 1, C: 5).
    inst = make_instance([(0, 4, 0.5), (0, 8, 1.0), (0, 4, 4.0)], servers=(4, 4))
    result = simulate(inst, "a-srpt", guide="fill", engine=engine)
    assert completions(result) == [0.5, 1.5, 5.0]


class Half:
    """Predicts half of every job's true length."""

    def fit(self, history):
        return self

    def predict(self, jobs):
        return np.array([j.duration_s / 2 for j in jobs])


@pytest.mark.parametrize("rule", ["double", "additive"])
def test_asrpt_raises_predictions_that_run_out(rule):
    inst = make_instance([(0, 1, 5.0), (0.5, 1, 1.0), (1, 1, 2.0)], servers=(1,))
    policy = POLICIES["a-srpt"](adaptive=rule)
    res = simulate(inst, policy, predictor=Half())
    assert res.predicted_work.tolist() == [2.5, 0.5, 1.0]
    # Every job ran past its prediction, so every estimate was raised.
    assert np.all(policy._pred > policy._first_pred)


def test_asrpt_without_adaptation_keeps_predictions():
    inst = make_instance([(0, 1, 5.0), (0.5, 1, 1.0)], servers=(1,))
    policy = POLICIES["a-srpt"](adaptive="none")
    simulate(inst, policy, predictor=Half())
    assert np.all(policy._pred == policy._first_pred)
    with pytest.raises(ValueError, match="adaptive"):
        simulate(inst, "a-srpt", adaptive="triple")
    with pytest.raises(ValueError, match="finished_order"):
        simulate(inst, "a-srpt", finished_order="fifo")


def test_asrpt_does_not_preempt_a_job_about_to_finish():
    inst = make_instance([(0, 1, 3.0), (2, 1, 0.5)], servers=(1,))
    assert completions(simulate(inst, "a-srpt")) == [3.5, 2.5]
    assert completions(simulate(inst, "a-srpt", restore_overhead_s=1.0)) == [3.0, 3.5]


def test_same_seed_same_json():
    inst = make_instance(
        [(i % 5, 1 + i % 3, 1.0 + (7 * i) % 5) for i in range(30)], servers=(2, 2)
    )
    for policy in POLICIES:
        pred = NoisyOraclePredictor(mu=3, seed=4)
        a = json.dumps(simulate(inst, policy, predictor=pred, seed=3).to_json())
        b = json.dumps(
            simulate(inst, policy, predictor=NoisyOraclePredictor(mu=3, seed=4), seed=3).to_json()
        )
        assert a == b


@pytest.mark.parametrize("policy", ["fifo", "srtf", "a-srpt"])
def test_json_text_is_the_json_of_the_result(policy):
    # The command line prints to_json_text, written without a dict per segment: it must be
    # the very text json.dumps gives for to_json, DNN segments' costs and odd ids included.
    inst = instance_from_dict(DESIGN_EXAMPLE)
    res = simulate(inst, policy, restore_overhead_s=0.25)
    assert any(run.get("segments") for run in res.to_json()["jobs"])
    expected = json.dumps({**res.to_json(), "lower_bound_s": 1.5}, separators=(",", ":"))
    assert res.to_json_text(lower_bound_s=1.5) == expected
    assert "iteration_time_s" in expected
    odd = make_instance([(0, 1, 2.5), (1, 2, 1.0), (0.5, 1, 3.0)], servers=(2,))
    odd = odd.__class__(
        name="odd",
        cluster=odd.cluster,
        jobs=tuple(
            j.__class__(id=i, release_s=j.release_s, gpus=j.gpus, duration_s=j.duration_s)
            for i, j in zip(['q"uote', "ünï\\", "tab\t"], odd.jobs, strict=True)
        ),
    )
    res = simulate(odd, policy)
    assert res.to_json_text() == json.dumps(res.to_json(), separators=(",", ":"))


def test_dnn_job_runs_at_its_modelled_speed():
    from asrpt_opt.model.dnn import load_model
    from asrpt_opt.model.workers import worker_graph

    inst = instance_from_dict(DESIGN_EXAMPLE)
    res = simulate(inst, "fifo")
    c = res.schedule.runs[2]
    job = inst.jobs[2]
    wg = worker_graph(load_model("resnet50"), job.parallelism)
    assert len(c.segments) == 1
    ((_server, count),) = c.segments[0].allocation
    assert count == 4  # consolidated on one server: all traffic intra-server
    tau = wg.iteration_time(np.zeros(4, dtype=np.int64), intra_gbps=300.0, inter_gbps=12.5)
    assert c.completion_s - c.segments[0].start_s == pytest.approx(5000 * tau)
    # A DNN job needs both bandwidths: the instance itself is refused, naming the field.
    with pytest.raises(InstanceError, match=r"cluster: jobs\[2\] is a DNN job.*intra_server_gbps"):
        instance_from_dict({**DESIGN_EXAMPLE, "cluster": {"servers": [4, 4]}})


class Scripted(ListScheduler):
    """A policy that replays a fixed answer at its first decision."""

    name = "scripted"

    def __init__(self, answer):
        super().__init__()
        self.answer = answer
        self.calls = 0

    def waiting_key(self, job, view):
        return 0.0

    def decide(self, view):
        self.calls += 1
        return self.answer if self.calls == 1 else super().decide(view)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (Decision(starts=(Start(0, ((0, 1),)),)), "needs exactly 2"),
        (Decision(starts=(Start(0, ((0, 3),)),)), "which has 2 free"),
        (Decision(starts=(Start(0, ((1, 1), (0, 1))),)), "increasing order"),
        (Decision(starts=(Start(0, ((7, 2),)),)), "server 7"),
        (Decision(starts=(Start(1, ((0, 2),)),)), "not waiting"),
        (Decision(starts=(Start(9, ((0, 2),)),)), "unknown job"),
        (Decision(starts=(Start(0, ((0, 2),)), Start(0, ((1, 2),)))), "not waiting"),
        (Decision(preempts=(0,)), "not running"),
        (Decision(wake_at_s=0.0), "not after now"),
        (Decision(starts=(Start(0, "ab"),)), "malformed"),  # type: ignore[arg-type]
    ],
)
def test_bad_decisions_are_refused(answer, words):
    inst = make_instance([(0, 2, 1.0), (5, 2, 1.0)], servers=(2, 2))
    with pytest.raises(PolicyError, match=words):
        simulate(inst, Scripted(answer))


def test_stalling_policy_is_detected():
    class Idle(Scripted):
        def decide(self, view):
            return NO_DECISION

    inst = make_instance([(0, 1, 1.0)], servers=(1,))
    with pytest.raises(PolicyError, match="left 1 jobs waiting"):
        simulate(inst, Idle(NO_DECISION))


def test_unknown_policy_and_misused_params():
    inst = make_instance([(0, 1, 1.0)], servers=(1,))
    with pytest.raises(UnknownNameError, match="known:"):
        simulate(inst, "lifo")
    with pytest.raises(UsageError):
        simulate(inst, POLICIES["fifo"](), backfill=False)
    with pytest.raises(ValueError, match="restore_overhead_s"):
        simulate(inst, "fifo", restore_overhead_s=-1)


def test_predictor_must_return_positive_values():
    class Zero:
        def fit(self, history):
            return self

        def predict(self, jobs):
            return np.zeros(len(jobs))

    inst = make_instance([(0, 1, 1.0)], servers=(1,))
    with pytest.raises(ModelError, match="finite positive"):
        simulate(inst, "sjf", predictor=Zero())
