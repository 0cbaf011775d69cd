"""Ten million multiserver-job jobs at load 0.9 in chunks, whole process, time and memory.

``pytest benchmarks/test_bench_stream.py -s`` (about five minutes). Each policy runs as
``asrpt-opt load-sweep --family msj --loads 0.9 --jobs 10000000 --seeds 1`` in its own
process: drawing ``msj_columns(10_000_000, load=0.9, seed=0)``, the screen on the first 50,000
jobs, :func:`~asrpt_opt.sim.stream.simulate_stream` (the compiled loop in chunks cut where
the cluster empties, every chunk through the columnar validator) and the metrics. The goal
(issue "Every policy near the limit under bursts, and 10^7-job experiments in minutes") is
under 5 minutes and 2 GB for ``fifo``, ``serverfilling-srpt`` and ``a-srpt``. Seconds are
compared with ten times ``benchmarks/lean_fifo.py`` on a million of the same jobs, timed in
the same run (what transfers between machines); peak memory is the process's maximum
resident set.
"""

from __future__ import annotations

import subprocess
import sys
import time
from functools import cache

import pytest

from benchmarks.test_bench_msj import LEAN, instance_file

N_JOBS = 10_000_000
POLICIES = ("fifo", "serverfilling-srpt", "a-srpt")
# The child reports its own peak resident set (KiB on Linux) after the command.
_CHILD = (
    "import resource, sys\n"
    "from asrpt_opt.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "print('peak_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _run(cmd: list[str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - t0
    peak = next(line for line in done.stderr.splitlines() if line.startswith("peak_kib"))
    return seconds, int(peak.split()[1]) / 2**20


@cache
def lean_ten_million() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(LEAN), str(instance_file())], check=True, text=True,
                   capture_output=True)  # fmt: skip
    return 10 * (time.perf_counter() - t0)


@pytest.mark.parametrize("policy", POLICIES)
def test_ten_million_msj_jobs(benchmark, policy):
    cmd = [sys.executable, "-c", _CHILD, "load-sweep", "--family", "msj", "--loads", "0.9"]
    cmd += ["--policies", policy, "--jobs", str(N_JOBS), "--seeds", "1", "--executor", "serial"]
    cmd += ["-q", "--json"]
    seconds, peak_gib = benchmark.pedantic(_run, args=(cmd,), rounds=1, iterations=1)
    ratio = seconds / lean_ten_million()
    benchmark.extra_info.update(seconds=seconds, peak_gib=peak_gib, x_lean=ratio)
    print(f"\n{policy}: {seconds:.0f} s, peak {peak_gib:.2f} GiB, {ratio:.1f}x ten lean loops")
    assert peak_gib < 2.0
