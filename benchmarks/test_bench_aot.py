"""Would ahead-of-time compilation pay? The compiled loop built by ``numba.pycc`` against
numba's cache (issue "every policy near the limit under bursts": "measure whether
ahead-of-time compilation or a smaller kernel set pays").

``pytest benchmarks/test_bench_aot.py -s`` builds :mod:`benchmarks.aot_probe`'s extension
module once (about a minute; skipped without a C compiler) and measures, in one run:

- **start-up**: fresh processes, from after numpy and the package's policies are imported
  to a loop that has run a two-job instance: importing the AOT module against what a
  compiled run pays today (``import numba`` and the cached kernel's load), interleaved,
  medians; the AOT process must not import numba;
- **the loop**: FIFO and SRTF on both burst inputs, the AOT module against the package's
  cached loop in one process, best of 3; the schedules must be identical.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

from asrpt_opt.model.io import load_instance
from benchmarks.test_bench_bursts import INPUTS, instance_file
from benchmarks.test_bench_startup import COMPILED_START, ROUNDS

#: Seconds from after the imports to the AOT module's loop having run two jobs, and whether
#: numba got imported.
AOT_START = (
    "import sys, time\n"
    "import numpy as np\n"
    "from asrpt_opt.policies import make_policy\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "t0 = time.perf_counter()\n"
    "import asrpt_aot_list_loop as aot\n"
    "two, one = np.ones(2), np.array([1.0, 2.0])\n"
    "aot.run(np.array([8]), np.zeros(2), np.arange(2), np.array([1, 8]), one, two, two, one,"
    " 2, True)\n"
    "print(time.perf_counter() - t0, 'numba' in sys.modules)\n"
)


@pytest.fixture(scope="module")
def aot(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("setuptools")
    from benchmarks import aot_probe

    folder = tmp_path_factory.mktemp("aot")
    try:
        aot_probe.build(folder)
    except Exception as exc:  # no C compiler, or a numba without pycc
        pytest.skip(f"numba.pycc could not build the probe: {exc!r}")
    sys.path.insert(0, str(folder))
    try:
        import asrpt_aot_list_loop as module  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(folder))
    return folder, module


def _start(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def test_aot_start_against_numbas_cache(benchmark, aot):
    folder, _ = aot
    aot_cmd = [sys.executable, "-c", AOT_START, str(folder)]
    jit_cmd = [sys.executable, "-c", COMPILED_START, "srtf", "lean"]
    _start(jit_cmd)  # compiles on a cold cache
    ahead: list[float] = []
    cached: list[float] = []

    def run() -> None:
        for _ in range(ROUNDS):
            seconds, numba_imported = _start(aot_cmd).split()
            assert numba_imported == "False"
            ahead.append(float(seconds))
            cached.append(float(_start(jit_cmd).split()[1]))

    benchmark.pedantic(run, rounds=1, iterations=1)
    aot_s, jit_s = statistics.median(ahead), statistics.median(cached)
    benchmark.extra_info.update(aot_s=aot_s, cached_s=jit_s)
    print(f"\nstart-up: AOT module {aot_s * 1000:.1f} ms, numba's cache {jit_s * 1000:.0f} ms")
    assert aot_s < jit_s


def _package_loop(arguments: tuple[Any, ...]) -> Any:
    # What run_compiled does with these arrays: the package's cached loop, called from Python.
    from asrpt_opt.policies import list_scheduler_kernel as kernel
    from asrpt_opt.sim.compiled.loop import run_loop
    from asrpt_opt.sim.compiled.state import new_state

    *arrays, rule, backfill = arguments
    state = new_state(*arrays, 0.0, True)
    return run_loop(state, kernel.new_state(state, rule, backfill, np.zeros(0)))


def _best(run: Any, arguments: tuple[Any, ...]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(3):
        t0 = time.perf_counter()
        out = run(*arguments)
        best = min(best, time.perf_counter() - t0)
    return best, out


@pytest.mark.parametrize("rule", ["fifo", "srtf"])
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_aot_loop_against_numbas_cache(benchmark, aot, name, rule):
    from benchmarks.aot_probe import arguments

    _, module = aot
    args = arguments(load_instance(instance_file(name)), rule)
    timings: dict[str, tuple[float, Any]] = {}

    def run() -> None:
        timings["cached"] = _best(lambda *a: _package_loop(a), args)
        timings["aot"] = _best(module.run, args)

    benchmark.pedantic(run, rounds=1, iterations=1)
    (jit_s, jit_out), (aot_s, aot_out) = timings["cached"], timings["aot"]
    assert jit_out[0] == aot_out[0]
    for ours, theirs in zip(jit_out[1:], aot_out[1:], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    benchmark.extra_info.update(aot_s=aot_s, cached_s=jit_s, ratio=aot_s / jit_s)
    print(f"\n{name} {rule}: AOT loop {aot_s:.3f} s, cached loop {jit_s:.3f} s: ", end="")
    print(f"{aot_s / jit_s:.2f}x")
