"""The policy is consulted only at events: releases, completions that happen, and wake-ups
whose reason still holds."""

from __future__ import annotations

import numpy as np
import pytest

from asrpt_opt.model import Cluster, Instance, Job
from asrpt_opt.policies import PRIMARY, make_policy, simulate

_TOL = 1e-6


class Recorder:
    """Wraps a policy and records, at each decision, the instant and what the policy saw."""

    def __init__(self, policy):
        self.policy = policy
        self.name = policy.name
        self.calls: list[dict] = []

    def reset(self, view, rng):
        self.policy.reset(view, rng)

    def on_arrival(self, job, view):
        self.policy.on_arrival(job, view)

    def on_completion(self, job, view):
        self.policy.on_completion(job, view)

    def decide(self, view):
        running = view.running_jobs().tolist()
        self.calls.append(
            {
                "t": view.now_s,
                "gpu_s": {j: view.attained_gpu_s(j) for j in running},
                "work": {j: view.attained_work(j) for j in running},
            }
        )
        decision = self.policy.decide(view)
        self.calls[-1]["wake"] = decision.wake_at_s
        return decision


def _random_instance(rng: np.random.Generator) -> Instance:
    servers = tuple(int(s) for s in rng.integers(1, 5, size=rng.integers(1, 3)))
    n = int(rng.integers(2, 8))
    jobs = []
    for i in range(n):
        gpus = int(rng.integers(1, sum(servers) + 1))
        jobs.append(
            Job(
                id=f"j{i}",
                release_s=float(rng.integers(0, 12)),
                gpus=gpus,
                duration_s=float(rng.integers(1, 10)),
                spread_slowdown=float(rng.choice([1.0, 1.5])),
            )
        )
    return Instance(name="events", cluster=Cluster(servers=servers), jobs=tuple(jobs))


def _check(inst: Instance, policy: str, overhead: float) -> Recorder:
    rec = Recorder(make_policy(policy))
    result = simulate(inst, rec, restore_overhead_s=overhead, seed=0)
    releases = {j.release_s for j in inst.jobs}
    completions = [r.completion_s for r in result.schedule.runs]
    thresholds = (3600.0, 36000.0)
    for call in rec.calls:
        t = call["t"]
        if t in releases or any(abs(t - c) <= _TOL * max(1.0, c) for c in completions):
            continue
        # Not a release or a completion: a wake-up, whose reason must hold now.
        assert policy == "2d-las", f"{policy} consulted at t={t}, which is no event"
        crossed = any(
            abs(s - th) <= _TOL * th for s in call["gpu_s"].values() for th in thresholds
        )
        assert crossed, f"2d-las woke at t={t} with no job at a queue threshold"
    return rec


def test_no_decision_at_a_cancelled_completion():
    # One server of 4 GPUs; a preempted job's old completion entry used to stop the clock.
    jobs = tuple(
        Job(id=f"j{i}", release_s=r, gpus=g, duration_s=d)
        for i, (r, g, d) in enumerate([(0, 3, 6), (5, 2, 1), (3, 2, 1)])
    )
    inst = Instance(name="cancelled", cluster=Cluster(servers=(4,)), jobs=jobs)
    rec = _check(inst, "a-srpt", 0.0)
    times = sorted({c["t"] for c in rec.calls})
    events = sorted(
        {0.0, 3.0, 5.0} | {r.completion_s for r in simulate(inst, "a-srpt").schedule.runs}
    )
    assert set(times) <= set(events)


@pytest.mark.parametrize("overhead", [0.0, 0.5])
def test_decisions_only_at_events_on_random_instances(overhead):
    rng = np.random.default_rng(2026)
    # PRR slices time into quanta: it is consulted at the boundaries it asks for (below).
    others = [p for p in PRIMARY if p not in ("a-srpt", "prr")]
    for k in range(500):
        inst = _random_instance(rng)
        rec = _check(inst, "a-srpt", overhead)
        # With exact (oracle) predictions A-SRPT has no overrun to watch for.
        assert all(c["wake"] is None for c in rec.calls)
        _check(inst, others[k % len(others)], overhead)


def test_asrpt_wakes_exactly_when_a_noisy_prediction_runs_out():
    from asrpt_opt.prediction import NoisyOraclePredictor

    rng = np.random.default_rng(7)
    woke = 0
    for _ in range(200):
        inst = _random_instance(rng)
        rec = Recorder(make_policy("a-srpt"))
        pred = NoisyOraclePredictor(mu=3.0, bias=0.5, seed=1)
        result = simulate(inst, rec, predictor=pred, restore_overhead_s=0.5)
        releases = {j.release_s for j in inst.jobs}
        completions = [r.completion_s for r in result.schedule.runs]
        predicted = result.predicted_work
        for call in rec.calls:
            t = call["t"]
            if t in releases or any(abs(t - c) <= 1e-9 * max(1.0, c) for c in completions):
                continue
            woke += 1
            # Some running job's attained work reached its (current) prediction; raised
            # predictions only grow, so it is at least the first prediction.
            assert any(w >= predicted[j] * (1 - 1e-9) for j, w in call["work"].items())
    assert woke > 0


def test_prr_is_consulted_at_events_and_at_the_quantum_ends_it_asks_for():
    rng = np.random.default_rng(11)
    for _ in range(100):
        inst = _random_instance(rng)
        rec = Recorder(make_policy("prr", quantum_s=1.5))
        result = simulate(inst, rec, restore_overhead_s=0.5)
        events = {j.release_s for j in inst.jobs} | {r.completion_s for r in result.schedule.runs}
        asked = {c["wake"] for c in rec.calls if c["wake"] is not None}
        for call in rec.calls:
            t = call["t"]
            assert any(abs(t - e) <= _TOL for e in events | asked), t
        # One decision per instant: a quantum's end is never asked for twice.
        starts = sorted(c["t"] for c in rec.calls)
        assert starts == sorted(set(starts))


class _Restless:
    """Runs nothing new and asks to be woken a nanosecond later, for ever."""

    name = "restless"
    preemptive = False

    def reset(self, view, rng):
        pass

    def on_arrival(self, job, view):
        pass

    def on_completion(self, job, view):
        pass

    def decide(self, view):
        from asrpt_opt.sim.view import Decision

        return Decision(wake_at_s=view.now_s + 1e-9)


def _five_jobs():
    jobs = tuple(Job(id=f"j{i}", release_s=0.0, gpus=2, duration_s=10.0 + i) for i in range(5))
    return Instance(name="five", cluster=Cluster(servers=(4, 4)), jobs=jobs)


def test_wake_ups_without_events_are_bounded_in_python():
    from asrpt_opt.errors import PolicyError
    from asrpt_opt.sim.view import IDLE_WAKES_BASE, IDLE_WAKES_PER_JOB

    inst = _five_jobs()
    rec = Recorder(_Restless())
    with pytest.raises(PolicyError, match=r"more than 15,000 wake-ups .* finer"):
        simulate(inst, rec, engine="python")
    assert len(rec.calls) == IDLE_WAKES_BASE + IDLE_WAKES_PER_JOB * 5 + 1  # + the release


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_quantum_far_below_the_time_scale_is_refused_not_run_for_ever(engine):
    from asrpt_opt.errors import PolicyError

    with pytest.raises(PolicyError, match=r"prr.*quantum_s"):
        simulate(_five_jobs(), make_policy("prr", quantum_s=1e-9), engine=engine)


def test_prr_with_its_default_quantum_is_far_from_the_wake_up_limit():
    rng = np.random.default_rng(5)
    for _ in range(20):
        inst = _random_instance(rng)
        rec = Recorder(make_policy("prr"))
        simulate(inst, rec)
        assert len(rec.calls) < 20 * len(inst.jobs)
