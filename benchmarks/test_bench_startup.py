"""Start-up: whole processes of ``asrpt-opt --help`` and ``validate`` against ``import numpy``,
and the compiled loop's start (``import numba`` and loading numba's cache).

``pytest benchmarks/test_bench_startup.py -s``. Each command runs as a fresh process, in
rounds that interleave it with ``python -c "import numpy"`` (the reference, measured in the
same run); the medians are compared. Goal: at most 2x the reference.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time

import pytest

ROUNDS = 9
REFERENCE = [sys.executable, "-c", "import numpy"]


def _once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


@pytest.mark.parametrize(
    "argv", [["--help"], ["validate", "tiny-abstract"]], ids=["help", "validate"]
)
def test_start_up_against_import_numpy(benchmark, argv):
    exe = shutil.which("asrpt-opt")
    cmd = [exe, *argv] if exe else [sys.executable, "-m", "asrpt_opt", *argv]
    ours: list[float] = []
    reference: list[float] = []

    def run() -> None:
        for _ in range(ROUNDS):
            reference.append(_once(REFERENCE))
            ours.append(_once(cmd))

    benchmark.pedantic(run, rounds=1, iterations=1)
    ratio = statistics.median(ours) / statistics.median(reference)
    benchmark.extra_info.update(
        ours_s=statistics.median(ours), numpy_s=statistics.median(reference), ratio=ratio
    )
    print(
        f"\nasrpt-opt {' '.join(argv)}: {statistics.median(ours) * 1000:.0f} ms, "
        f"import numpy {statistics.median(reference) * 1000:.0f} ms: {ratio:.2f}x"
    )
    assert ratio <= 2.0


#: Seconds from ``import numba`` to a policy's compiled loop loaded from numba's cache, in a
#: fresh process; the argument ``numba`` restores numba's own load (with its registry refresh).
COMPILED_START = (
    "import sys, time\n"
    "from asrpt_opt.policies import make_policy\n"
    "policy = make_policy(sys.argv[1])\n"
    "t0 = time.perf_counter()\n"
    "import numba\n"
    "t1 = time.perf_counter()\n"
    "if sys.argv[2] == 'numba':\n"
    "    from numba.core import caching\n"
    "    from asrpt_opt._numba import cache\n"
    "    cache._install()\n"
    "    caching.Cache.load_overload = cache._load_lean = cache._numba_load_overload\n"
    "from asrpt_opt.sim.compiled import warm_up\n"
    "warm_up(policy)\n"
    "print(t1 - t0, time.perf_counter() - t0)\n"
)


@pytest.mark.parametrize("policy", ["srtf", "serverfilling-srpt", "tiresias-2d-las"])
def test_compiled_start_against_import_numba(benchmark, policy):
    # Goal (issue "every policy near the limit under bursts"): 0.3 s, of which importing
    # numba alone (measured in the same processes) is about half.
    def start(load: str) -> tuple[float, float]:
        out = subprocess.run(
            [sys.executable, "-c", COMPILED_START, policy, load],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        numba_s, total_s = map(float, out.stdout.split())
        return numba_s, total_s

    start("lean")  # compiles on a cold cache, and checks the script runs
    lean: list[tuple[float, float]] = []
    numbas: list[tuple[float, float]] = []

    def run() -> None:
        for _ in range(ROUNDS):
            lean.append(start("lean"))
            numbas.append(start("numba"))

    benchmark.pedantic(run, rounds=1, iterations=1)
    ours = statistics.median(t for _, t in lean)
    numba_load = statistics.median(t for _, t in numbas)
    floor = statistics.median(n for n, _ in lean + numbas)
    benchmark.extra_info.update(lean_s=ours, numba_load_s=numba_load, import_numba_s=floor)
    print(
        f"\n{policy}: compiled start {ours:.3f} s, with numba's own load {numba_load:.3f} s, "
        f"of which import numba {floor:.3f} s"
    )
    assert ours < numba_load
