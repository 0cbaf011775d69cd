"""Trace import at scale: a Helios ``cluster_log.csv`` of a million rows in flat memory.

``pytest benchmarks/test_bench_import.py -s``; ``ASRPT_IMPORT_ROWS`` sets the row count
(default 1,000,000). The import runs as ``asrpt-opt import`` in a child process whose peak
resident memory is read from the kernel (``ru_maxrss``); the reference in the same run is the
child's memory for a 1,000-row file (interpreter and imports), so the figure reported is also
the memory the rows themselves cost.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ROWS = int(os.environ.get("ASRPT_IMPORT_ROWS", "1000000"))
LIMIT_MB = 500

_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
_HEADER += "duration,queue\n"

_CHILD = """
import resource, sys
from asrpt_opt.cli.main import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def write_helios(path: Path, rows: int, seed: int = 0) -> None:
    """A Helios-shaped CSV: a sixth CPU-only, widths 1-8, one submit every 0-30 s."""
    rng = random.Random(seed)
    t0 = datetime(2020, 4, 1)
    t = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(_HEADER)
        for i in range(rows):
            t += rng.randint(0, 30)
            gpus = rng.choice((0, 1, 1, 1, 2, 4, 8))
            stamp = (t0 + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")
            out.write(
                f"{i},u{rng.randint(0, 300)},vc{rng.randint(0, 20)},{gpus},{4 * gpus},1,"
                f"COMPLETED,{stamp},{stamp},{stamp},{rng.randint(1, 100000)},0\n"
            )


def import_peak_mb(csv: Path, out: Path) -> tuple[float, int]:
    """Peak resident MB of ``asrpt-opt import helios`` in a child, and the jobs it wrote."""
    cmd = [sys.executable, "-c", _CHILD, "import", "helios", str(csv), "-o", str(out)]
    cmd += ["--cluster", "1000x8", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    peak_kb = int(proc.stderr.strip().splitlines()[-1])
    return peak_kb / 1024, json.loads(proc.stdout)["jobs"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("helios")
    small, big = folder / "small.csv", folder / "big.csv"
    write_helios(small, 1000)
    write_helios(big, ROWS)
    return small, big


def test_import_helios_memory(benchmark, traces, tmp_path):
    small, big = traces
    base_mb, _ = import_peak_mb(small, tmp_path / "small.json")
    peak = {}

    def run() -> None:
        peak["mb"], peak["jobs"] = import_peak_mb(big, tmp_path / "big.json")

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(peak_mb=peak["mb"], baseline_mb=base_mb, rows=ROWS)
    print(
        f"\n{ROWS:,} Helios rows -> {peak['jobs']:,} jobs in {benchmark.stats.stats.min:.1f} s, "
        f"peak {peak['mb']:.0f} MB ({base_mb:.0f} MB for 1,000 rows)"
    )
    assert peak["jobs"] > ROWS // 2
    assert peak["mb"] < LIMIT_MB
