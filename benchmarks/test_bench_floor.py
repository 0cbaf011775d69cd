"""What a ``simulate --json`` process does besides simulating, against the lean loop.

``pytest benchmarks/test_bench_floor.py -s``. On both burst inputs of
``benchmarks/test_bench_bursts.py``, one process does what ``asrpt-opt simulate FILE --policy P
--json`` does, phase by phase, and times each phase: importing the command line, loading and
checking the instance, the simulation, the independent validator, the metrics recomputed
from the schedule, the lower bounds and the JSON text. The lean loop
(``benchmarks/lean_fifo.py``) runs on the same file in the same run. The phases other than
the simulation are the floor the toolkit's contract sets (every schedule validated, every
objective recomputed, a certified bound beside it); their sum against the lean loop's whole
process says how close to the lean loop any policy can come. Best of three processes.
"""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.test_bench_bursts import INPUTS, instance_file, lean
from benchmarks.test_bench_lean import _timed

#: The phases of one ``simulate --json`` process, in order.
PHASES = ("imports", "load", "run", "validate", "metrics", "bounds", "json")
#: One process, timed phase by phase: it mirrors ``asrpt_opt.cli.simulate.cmd_simulate`` and
#: times :func:`~asrpt_opt.sim.simulation.simulate`'s validator and metrics by wrapping them.
PHASED = """
import json, os, sys, time
t = [time.perf_counter()]
import asrpt_opt.cli.main, asrpt_opt.cli.simulate
from asrpt_opt.model.io import load_instance
from asrpt_opt.policies.registry import simulate
from asrpt_opt.relaxation.bounds import lower_bounds
from asrpt_opt.speed.default import default_speed
import asrpt_opt.sim.simulation as sim
t.append(time.perf_counter())
inst = load_instance(sys.argv[1])
t.append(time.perf_counter())
validate, metrics = sim.validate_schedule, sim.compute_metrics
def timed_validate(*args, **kwargs):
    t.append(time.perf_counter())
    validate(*args, **kwargs)
    t.append(time.perf_counter())
sim.validate_schedule = timed_validate
res = simulate(inst, sys.argv[2])
t.append(time.perf_counter())
lb = lower_bounds(inst, speed=default_speed(inst)).lower_bound_s
t.append(time.perf_counter())
text = res.to_json_text(lower_bound_s=lb, seed=None, placement=res.placement)
with open(os.devnull, "w", encoding="utf-8") as sink:
    sink.write(text)
t.append(time.perf_counter())
phases = [b - a for a, b in zip(t, t[1:])]
print(json.dumps({"phases": phases, "mean_jct_s": res.metrics.mean_jct_s}))
import gc
gc.freeze()  # as the console command leaves the rest to the exit
"""


def _phased(path: str, policy: str) -> tuple[float, dict[str, float], float]:
    # Best of three processes by wall time, with that process's phases and mean JCT.
    wall, out = _timed([sys.executable, "-c", PHASED, path, policy])
    doc = json.loads(out)
    return wall, dict(zip(PHASES, doc["phases"], strict=True)), doc["mean_jct_s"]


@pytest.mark.parametrize("policy", ["fifo", "srtf"])
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_what_a_process_does_besides_simulating(benchmark, name, policy):
    path = str(instance_file(name))
    result: dict[str, tuple[float, dict[str, float], float]] = {}

    def run() -> None:
        result["best"] = _phased(path, policy)

    benchmark.pedantic(run, rounds=1, iterations=1)
    wall, phases, mean_jct = result["best"]
    lean_s, lean_jct = lean(name)
    floor = wall - phases["run"]
    benchmark.extra_info.update(
        wall_s=wall, lean_s=lean_s, floor_s=floor, floor_ratio=floor / lean_s, **phases
    )
    shares = ", ".join(f"{k} {v:.3f}" for k, v in phases.items())
    print(
        f"\n{name} {policy}: {wall:.2f} s whole ({wall / lean_s:.1f}x the lean loop's "
        f"{lean_s:.2f} s); without the run {floor:.2f} s ({floor / lean_s:.1f}x); "
        f"interpreter start and exit {wall - sum(phases.values()):.3f}, {shares}"
    )
    assert all(v > 0 for v in phases.values())
    assert sum(phases.values()) < wall
    if policy == "fifo":  # the same schedule as the lean loop's, so the same work
        assert mean_jct == pytest.approx(lean_jct, rel=1e-12)
