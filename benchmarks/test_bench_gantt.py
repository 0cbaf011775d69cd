"""Drawing a schedule: the Gantt chart of 2,000 jobs on 16 x 8 GPUs, against simulating it.

``pytest benchmarks/test_bench_gantt.py -s``. The reference measured in the same run is the
simulation of the same schedule (FIFO, the bundled Gavel/Philly trace); the figure reported
is the time to draw and write a PNG, in seconds and as a multiple of the simulation.
"""

from __future__ import annotations

import time
from functools import cache

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from asrpt_opt.analysis.gantt import plot_gantt
from asrpt_opt.analysis.plots import save_figure
from asrpt_opt.model import Instance
from asrpt_opt.policies import simulate
from asrpt_opt.traces.gavel import gavel_instance

N_JOBS = 2000


@cache
def workload() -> Instance:
    return gavel_instance(n_jobs=N_JOBS, servers=(8,) * 16)


@cache
def simulate_s() -> float:
    t0 = time.perf_counter()
    simulate(workload(), "fifo")
    return time.perf_counter() - t0


@pytest.mark.parametrize("summary", [True, False], ids=["summary", "bars"])
def test_gantt_2000_jobs(benchmark, tmp_path, summary):
    inst = workload()
    schedule = simulate(inst, "fifo").schedule

    def draw() -> None:
        fig = plot_gantt(inst, schedule, summary=summary)
        save_figure(fig, tmp_path / "g.png")
        plt.close(fig)

    benchmark.pedantic(draw, rounds=3, iterations=1)
    seconds = benchmark.stats.stats.min
    benchmark.extra_info["ratio_to_simulation"] = seconds / simulate_s()
    print(
        f"\n{N_JOBS} jobs, {'summary' if summary else 'bars'}: {seconds:.2f} s to draw, "
        f"{seconds / simulate_s():.1f}x the simulation ({simulate_s():.2f} s)"
    )
    assert seconds < 2.0
