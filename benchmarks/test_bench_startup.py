"""Start-up: whole processes of ``asrpt-opt --help`` and ``validate`` against ``import numpy``.

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
