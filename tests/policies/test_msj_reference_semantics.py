"""The multiserver-job policies against an independent loop written from the reference
simulator's rules (isaacg1/msj-simulator, ``serve`` and ``ordering``; docs/stability.md).

The loop below shares nothing with the package's simulator: at every arrival and completion
it sorts the queue (stably) by remaining area when the policy orders by area, picks the
served set by the policy's rule, and advances the served jobs to the next event. If our
simulator implements the same rules, every job completes at the same instant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from asrpt_opt import simulate
from asrpt_opt.traces.synthetic import msj

#: Completion below this much remaining service (seconds) counts as done, as in the reference.
EPS_S = 1e-6


def _server_filling(queue: list[list[float]], total: int) -> list[int]:
    covered, front = 0, 0
    for k, job in enumerate(queue):
        covered += int(job[1])
        front = k + 1
        if covered >= total:
            break
    chosen, used = [], 0
    for k in sorted(range(front), key=lambda k: -queue[k][1]):
        if used + queue[k][1] <= total:
            chosen.append(k)
            used += int(queue[k][1])
    return chosen


def _first_fit(queue: list[list[float]], total: int, *, stop: bool) -> list[int]:
    chosen, used = [], 0
    for k, job in enumerate(queue):
        if used + job[1] <= total:
            chosen.append(k)
            used += int(job[1])
        elif stop:
            break
    return chosen


RULES = {
    "serverfilling": (False, _server_filling),
    "serverfilling-srpt": (True, _server_filling),
    "firstfit-srpt": (True, lambda q, m: _first_fit(q, m, stop=False)),
    "greedy-srpt": (True, lambda q, m: _first_fit(q, m, stop=True)),
}


def reference_completions(release, duration, need, total: int, policy: str) -> np.ndarray:
    """Each job's completion time under ``policy``, by the reference's event loop."""
    by_area, pick = RULES[policy]
    queue: list[list[float]] = []  # [remaining service, need, job], in arrival order
    done = np.full(len(release), math.nan)
    now, nxt = 0.0, 0
    while nxt < len(release) or queue:
        if by_area:
            queue.sort(key=lambda job: job[0] * job[1])
        served = pick(queue, total)
        arrival = release[nxt] if nxt < len(release) else math.inf
        finish = now + min((queue[k][0] for k in served), default=math.inf)
        step = min(arrival, finish) - now
        for k in served:
            queue[k][0] -= step
        now += step
        if now < arrival:
            for k in sorted((k for k in served if queue[k][0] < EPS_S), reverse=True):
                done[int(queue.pop(k)[2])] = now
        else:
            queue.append([float(duration[nxt]), float(need[nxt]), float(nxt)])
            nxt += 1
    return done


@pytest.mark.parametrize("engine", ["python", "compiled"])
@pytest.mark.parametrize("policy", sorted(RULES))
@pytest.mark.parametrize(("load", "seed"), [(0.5, 0), (0.55, 1), (0.8, 2)])
def test_every_job_completes_when_the_reference_loop_says(policy, load, seed, engine):
    inst = msj(1500, load=load, seed=seed)
    release = np.array([j.release_s for j in inst.jobs])
    need = np.array([j.gpus for j in inst.jobs])
    duration = np.array([j.duration_s for j in inst.jobs])
    expected = reference_completions(release, duration, need, 8, policy)
    runs = simulate(inst, policy, engine=engine).schedule.runs
    got = np.array([run.completion_s for run in runs])
    order = {job.id: k for k, job in enumerate(inst.jobs)}
    assert [order[run.id] for run in runs] == list(range(len(runs)))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
